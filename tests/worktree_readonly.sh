#!/bin/sh
# docs/contract.md §24 on a repository that cannot be written: a tmpfs remounted read-only holds
# it. An isolated child's call is refused with ISOLATION_FAILED and git's own line; nothing is
# left under <state-dir>/worktrees (no directory, no claim) and the repository is as it was.
# Root only (the mount); skipped, saying so, elsewhere.  Usage: tests/worktree_readonly.sh AGENT
set -u
here=$(cd "$(dirname "$0")" && pwd)
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/acp-wtro-XXXXXX)
mnt="$tmp/fs"
mkdir -p "$mnt"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=4m,mode=0755 tmpfs "$mnt" 2>/dev/null; then
	echo "worktree-readonly: SKIPPED (needs root and a tmpfs mount)"
	rm -rf "$tmp"
	exit 0
fi
trap 'umount "$mnt" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
fail() { echo "worktree-readonly: FAILED: $*"; tail -n 5 "$tmp/err"; exit 1; }
repo="$mnt/repo"
mkdir -p "$repo" && cd "$repo" && git init -q && echo base > README && git add README &&
	git -c user.name=u -c user.email=u@u commit -q -m base && cd "$tmp" || fail "cannot make the repository"
before=$(cd "$repo" && find . -type f | sort | xargs cksum | cksum)
mount -o remount,ro "$mnt" || fail "cannot remount read-only"
printf '%s' '{"version":1,"scripts":[{"agent":"root","replies":[{"tool_calls":[{"name":"subagent","arguments":{"description":"w","prompt":"p","isolation":"worktree"}}]},{"expect":"Error: fatal: ","text":"refused"}]}]}' > "$tmp/rec.json"
sid=00000000-0000-4000-8000-000000000001
# stdin stays open until the turn ends: its EOF would cancel the pending call
mkfifo "$tmp/in"
"$agent" --deterministic --model replay --recording "$tmp/rec.json" --state-dir "$tmp/state" < "$tmp/in" > "$tmp/out" 2>"$tmp/err" &
pid=$!
exec 3>"$tmp/in"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"$repo\",\"mcpServers\":[]}}" \
	"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}}" >&3
. "$here/lib.sh"
wait_for "$tmp/out" '"id":3,' 60 || fail "the prompt was not answered"
exec 3>&-
wait $pid || fail "the agent failed"
grep -q '"id":3,"result":{"stopReason":"end_turn"' "$tmp/out" || fail "the turn did not end (the model saw no git error)"
result=$(grep -o '"type":"tool/result".\{0,600\}' "$tmp/state/sessions/$sid.jsonl" | head -1)
case $result in
*'"code":"ISOLATION_FAILED"'*) ;;
*) fail "not ISOLATION_FAILED: $result" ;;
esac
line=$(echo "$result" | grep -o '"text":"Error: fatal: [^"]*')
[ -n "$line" ] || fail "the error does not carry git's line: $result"
left=$(ls -A "$tmp/state/worktrees" 2>/dev/null)
[ -z "$left" ] || fail "left under worktrees/: $left"
[ "$(cd "$repo" && find . -type f | sort | xargs cksum | cksum)" = "$before" ] || fail "the repository changed"
echo "worktree-readonly: ok (ISOLATION_FAILED with git's reason: ${line#\"text\":\"Error: }; nothing left, the repository untouched)"
