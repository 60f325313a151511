#!/bin/sh
# session/delete (docs/contract.md §27) where a scenario cannot reach: a tree with a live isolated
# child (its worktree removed, its branch kept) and a spill directory; a session another process
# holds (session_busy, nothing removed); a process killed in the middle of a deletion (the next
# start finishes it: nothing of the tree is left, and nothing is listed half).
# Usage: tests/session_delete.sh AGENT
set -u
. "$(dirname "$0")/lib.sh"
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
command -v git >/dev/null 2>&1 || { echo "session-delete: SKIPPED (git is not installed)"; exit 0; }
tmp=$(mktemp -d /tmp/acp-delete-XXXXXX)
pa= pb=
trap 'kill -9 $pa $pb 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "session-delete: FAILED: $*"; for f in "$tmp"/*.out "$tmp"/*.err; do echo "--- $f"; cut -c1-300 "$f"; done; exit 1; }
req() { printf '{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}\n' "$1" "$2" "$3"; }
repo="$tmp/repo"
mkdir -p "$repo" && (cd "$repo" && git init -q && echo base > README && git add README &&
	git -c user.name=u -c user.email=u@u commit -q -m base) || fail "cannot make a repository"
# A root that runs a command (its spill directory) and starts an isolated child that hangs.
cat > "$tmp/rec.json" <<'REC'
{"version": 1, "scripts": [
 {"agent": "root", "replies": [
  {"tool_calls": [{"name": "bash", "arguments": {"command": "echo spilled", "description": "Echo"}}]},
  {"tool_calls": [{"name": "subagent", "arguments": {"description": "iso", "prompt": "Wait.", "isolation": "worktree"}}]},
  {"text": "started"}]},
 {"agent": "label:iso", "replies": [{"hang": true}]},
 {"agent": "root", "replies": [{"text": "second root"}]}]}
REC
mkfifo "$tmp/a.in" "$tmp/b.in"
"$agent" --deterministic --permission-mode full-access --model replay --recording "$tmp/rec.json" \
	--state-dir "$tmp/state" < "$tmp/a.in" > "$tmp/a.out" 2>"$tmp/a.err" & pa=$!
exec 3>"$tmp/a.in"
root=00000000-0000-4000-8000-000000000001
{ req 1 initialize '{"protocolVersion":1}'
  req 2 session/new "{\"cwd\":\"$repo\",\"mcpServers\":[]}"
  req 3 session/prompt "{\"sessionId\":\"$root\",\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}"; } >&3
wait_for "$tmp/a.out" '"id":3,"result"' 30 || fail "the first turn did not end"
child=$(sed -n 's/.*started subagent \([0-9a-f-]*\).*/\1/p' "$tmp/a.out" | head -n 1)
[ -n "$child" ] || fail "no child"
[ -d "$tmp/state/worktrees/$child" ] || fail "the child's worktree is not there"
[ -d "$tmp/state/spill/$root" ] || fail "the root's spill directory is not there"
branch=$(cd "$repo" && git branch --list 'acp-agent/*' | tr -d ' *+')
[ -n "$branch" ] || fail "the child's branch is not there"

# Another process cannot delete what this one holds: session_busy, nothing removed.
"$agent" --deterministic --model replay --recording "$tmp/rec.json" --state-dir "$tmp/state" \
	< "$tmp/b.in" > "$tmp/b.out" 2>"$tmp/b.err" & pb=$!
exec 4>"$tmp/b.in"
{ req 1 initialize '{"protocolVersion":1}'; req 2 session/delete "{\"sessionId\":\"$root\"}"; } >&4
wait_for "$tmp/b.out" '"id":2,' || fail "the other process's delete got no answer"
grep '"id":2,' "$tmp/b.out" | grep -q '"kind":"session_busy"' || fail "another process deleted a held session"
[ -f "$tmp/state/sessions/$root.jsonl" ] && [ -f "$tmp/state/sessions/$child.jsonl" ] ||
	fail "a busy delete removed something"
exec 4>&-
wait $pb; pb=

# The holder deletes it: the live child stopped, its worktree gone, its branch kept, the spill gone.
req 4 session/delete "{\"sessionId\":\"$root\"}" >&3
wait_for "$tmp/a.out" '"id":4,' 30 || fail "the delete got no answer"
grep -q '"id":4,"result":{}' "$tmp/a.out" || fail "the delete failed: $(grep '"id":4,' "$tmp/a.out")"
for p in "sessions/$root.jsonl" "sessions/$child.jsonl" "worktrees/$child" "spill/$root" "sessions/.$root.deleting"; do
	[ ! -e "$tmp/state/$p" ] || fail "$p is still there"
done
[ "$(cd "$repo" && git branch --list 'acp-agent/*' | tr -d ' *+')" = "$branch" ] || fail "the branch was not kept"
[ "$(cd "$repo" && git worktree list --porcelain | grep -c '^worktree ')" = 1 ] || fail "git still lists the worktree"
req 5 session/list '{}' >&3
wait_for "$tmp/a.out" '"id":5,' || fail "no list"
grep -q '"id":5,"result":{"sessions":\[\]}' "$tmp/a.out" || fail "the deleted session is still listed"
exec 3>&-
wait $pa || fail "the agent did not exit cleanly"; pa=

# Killed in the middle (exit-in-delete: the root's log is gone, the rest not yet): the listing
# shows nothing of it at once, and the next start finishes the deletion.
rm -rf "$tmp/state"
printf '%s\n' '{"version": 1, "scripts": [{"agent": "root", "replies": [{"tool_calls": [{"name": "subagent", "arguments": {"description": "kid", "prompt": "Hi."}}]}, {"text": "ok"}, {"text": "noted"}]}, {"agent": "label:kid", "replies": [{"text": "hi"}]}]}' > "$tmp/rec2.json"
{ req 1 initialize '{"protocolVersion":1}'
  req 2 session/new '{"cwd":"/tmp","mcpServers":[]}'
  req 3 session/prompt "{\"sessionId\":\"$root\",\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}"
  req 4 _acp_agent/wait_idle '{"timeoutMs":20000}'; } > "$tmp/c.in"
"$agent" --deterministic --model replay --recording "$tmp/rec2.json" --state-dir "$tmp/state" < "$tmp/c.in" > "$tmp/c.out" 2>"$tmp/c.err" ||
	fail "the tree was not made"
kid=$(sed -n 's/.*started subagent \([0-9a-f-]*\).*/\1/p' "$tmp/c.out" | head -n 1)
[ -f "$tmp/state/sessions/$kid.jsonl" ] || fail "no child log"
{ req 1 initialize '{"protocolVersion":1}'; req 2 session/delete "{\"sessionId\":\"$root\"}"; } > "$tmp/d.in"
ACP_AGENT_FAULTS=exit-in-delete "$agent" --deterministic --model replay --recording "$tmp/rec2.json" \
	--state-dir "$tmp/state" < "$tmp/d.in" > "$tmp/d.out" 2>"$tmp/d.err"
[ $? -eq 3 ] || fail "the fault did not stop the deletion"
[ -f "$tmp/state/sessions/.$root.deleting" ] && [ ! -e "$tmp/state/sessions/$root.jsonl" ] &&
	[ -f "$tmp/state/sessions/$kid.jsonl" ] || fail "not cut where the fault says"
{ req 1 initialize '{"protocolVersion":1}'; req 2 session/list '{}'; } > "$tmp/e.in"
"$agent" --deterministic --model replay --recording "$tmp/rec2.json" --state-dir "$tmp/state" < "$tmp/e.in" > "$tmp/e.out" 2>"$tmp/e.err" ||
	fail "the restart failed"
grep -q '"id":2,"result":{"sessions":\[\]}' "$tmp/e.out" || fail "the half-deleted session is listed"
grep -q "an earlier deletion did not finish; finishing it" "$tmp/e.err" || fail "the restart did not say it finished the deletion"
for p in "sessions/$kid.jsonl" "sessions/.$root.deleting"; do
	[ ! -e "$tmp/state/$p" ] || fail "$p is still there after the restart"
done
# Cut before the root's log went (the tombstone written, the log still there): the next start
# unlinks it before anything lists it, then finishes.
rm -rf "$tmp/state"
"$agent" --deterministic --model replay --recording "$tmp/rec2.json" --state-dir "$tmp/state" < "$tmp/c.in" > "$tmp/c.out" 2>"$tmp/c.err" ||
	fail "the second tree was not made"
kid=$(sed -n 's/.*started subagent \([0-9a-f-]*\).*/\1/p' "$tmp/c.out" | head -n 1)
printf '%s\n%s\n' "$root" "$kid" > "$tmp/state/sessions/.$root.deleting"
"$agent" --deterministic --model replay --recording "$tmp/rec2.json" --state-dir "$tmp/state" < "$tmp/e.in" > "$tmp/f.out" 2>"$tmp/f.err" ||
	fail "the restart failed"
grep -q '"id":2,"result":{"sessions":\[\]}' "$tmp/f.out" || fail "a tree with a tombstone is listed"
for p in "sessions/$root.jsonl" "sessions/$kid.jsonl" "sessions/.$root.deleting"; do
	[ ! -e "$tmp/state/$p" ] || fail "$p is still there after the restart (tombstone before the unlink)"
done
echo "session-delete: ok (a live isolated child stopped, its worktree removed and its branch kept, the spill gone; session_busy from another process, nothing removed; killed after the root's log went, or before: nothing listed, the next start finished it)"
