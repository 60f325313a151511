#!/bin/sh
# `acp-agent chat` (docs/contract.md §21) end to end with the replay model. On a pseudo-terminal (util-linux
# script): a prompt and its streamed answer, a permission ask answered by one key (no Enter), Ctrl-C
# cancelling a turn that hangs (the chat goes on: a line typed ahead is sent next), Ctrl-D exiting 0 with the agent reaped; then
# the same session loaded by a plain ACP client holds the whole conversation, and `chat --session`
# shows it. Piped (no terminal): plain lines without escapes, answers read as lines (a wrong one is
# asked again), a diff, a slash command. Bad usage: exit 2 and one clear line; an unknown session:
# a clear line and exit 1.
# Usage: tests/chat.sh AGENT
set -u
. "$(dirname "$0")/lib.sh"
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/acp-chat-XXXXXX)
spid=
trap '[ -n "$spid" ] && kill -9 $spid 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
fails=0
fail() { echo "chat: FAILED: $*"; fails=$((fails + 1)); }
for v in $(env | sed -n 's/^\(ACP_AGENT_[A-Z_]*\)=.*/\1/p'); do
	unset "$v"
done
has() { grep -qF -- "$2" "$1" || fail "$3: no \"$2\" in $(basename "$1"): $(tr -d '\033' < "$1" | tail -n 5)"; }
hasnt() { ! grep -qF -- "$2" "$1" || fail "$3: \"$2\" in $(basename "$1")"; }
# agent_alive STATE: a process still runs with that state directory (the chat's child); /proc,
# not pgrep, which a minimal system lacks.
agent_alive() {
	for f in /proc/[0-9]*/cmdline; do
		{ tr '\0' ' ' < "$f"; } 2>/dev/null | grep -qF -- "--state-dir $1 " && return 0
	done
	return 1
}

# ---- on a terminal ----
cat > "$tmp/rec-tty.json" <<'JSON'
{"version": 1, "scripts": [{"agent": "root", "replies": [
  {"reasoning": "A greeting.", "text": "Hello from the replay model: this answer streams in chunks of sixteen bytes."},
  {"tool_calls": [{"name": "bash", "arguments": {"command": "echo chat-ok", "description": "Say chat-ok"}}]},
  {"expect": "chat-ok", "text": "The command printed chat-ok."},
  {"text": "Working on it", "hang": true},
  {"expect": "later", "text": "Typed ahead, answered after the cancel."}]}]}
JSON
mkdir -p "$tmp/ws" "$tmp/tty"
mkfifo "$tmp/keys"
# The command runs in the workspace (the session's cwd); the fifo stays open on fd 3 until the end.
(cd "$tmp/ws" && exec script -qfec "exec '$agent' chat --model replay --recording '$tmp/rec-tty.json' --deterministic --state-dir '$tmp/tty'" "$tmp/screen" < "$tmp/keys" > /dev/null 2> "$tmp/script.err") &
spid=$!
exec 3> "$tmp/keys"
step() {	# step WAIT_FOR SEND: waits for the screen to show WAIT_FOR, then types SEND
	if wait_for "$tmp/screen" "$1" 10; then
		printf "$2" >&3
	else
		fail "tty: the screen never showed \"$1\": $(tr -d '\033' < "$tmp/screen" | tail -n 4)"
	fi
}
step "Ctrl-D exits" 'hi\r'
# Ctrl-C while idle: ignored, the chat goes on. Idle is when the input prompt is drawn again (the
# answer's last chunk shows before the turn's end comes in: a Ctrl-C then would cancel the turn).
wait_for "$tmp/screen" "chunks of sixteen bytes." 10 || fail "tty: no answer"
i=0
while [ "$(grep -o '> ' "$tmp/screen" | wc -l)" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
printf '\003' >&3
sleep 0.3
step "chunks of sixteen bytes." 'run it\r'
step "Always reject" 'a'			# one key, no Enter
step "printed chat-ok" 'wait\r'
step "Working on it" 'later\r'			# typed ahead: it waits for the turn
step "later" '\003'				# Ctrl-C: the turn hangs until cancelled
step "answered after the cancel" '\004'	# Ctrl-D
i=0
while kill -0 $spid 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 $spid 2>/dev/null; then
	fail "tty: the chat did not exit after Ctrl-D"
	kill $spid	# script: the chat gets SIGHUP, ends and reaps its agent
	wait $spid
	sleep 0.5
else
	wait $spid
	rc=$?
	[ $rc -eq 0 ] || fail "tty: exit $rc after Ctrl-D, not 0 ($(cat "$tmp/script.err"))"
fi
spid=
exec 3>&-
agent_alive "$tmp/tty" && fail "tty: the agent still runs after the chat exited"
s="$tmp/screen"
has "$s" "Hello from the replay model: this answer streams in chunks of sixteen bytes." tty
has "$s" "$(printf '\033[2mthinking: ')" "tty (thoughts dimmed)"
has "$s" 'permission: Say chat-ok' tty
has "$s" '$ ' tty
has "$s" '[A] Always allow "echo chat-ok' tty
has "$s" 'answered: Allow' tty
has "$s" "$(printf '\033[32m[done]')" "tty (status in colour)"
has "$s" 'The command printed chat-ok.' tty
has "$s" '(cancelling the turn)' tty
has "$s" '(cancelled)' tty
[ "$(grep -c 'cancelling the turn' "$s")" -eq 1 ] || fail "tty: Ctrl-C while idle did something"
has "$s" "> $(printf '\033[1m')later" "tty (a line typed ahead is shown when it is sent)"
has "$s" "resume with: acp-agent chat --model replay --recording $tmp/rec-tty.json --deterministic --state-dir $tmp/tty --session" tty
sid=$(sed -n 's/.*session \([0-9a-f-]*\) (Ctrl-C.*/\1/p' "$s" | head -n 1)
[ -n "$sid" ] || fail "tty: no session line"

# The same session in a plain ACP client: its replay is the whole conversation.
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}' \
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$sid\",\"mcpServers\":[]}}" |
	timeout 10 "$agent" --model replay --recording "$tmp/rec-tty.json" --deterministic --state-dir "$tmp/tty" > "$tmp/load.out" 2> /dev/null
l="$tmp/load.out"
has "$l" '"id":2,"result"' load
for text in '"text":"hi"' '"text":"run it"' '"text":"wait"' '"text":"A greeting."' \
    '"title":"Say chat-ok","kind":"execute","status":"completed"' '"text":"The command printed chat-ok."' \
    '"text":"Working on it"' '"text":"later"' '"text":"Typed ahead, answered after the cancel."'; do
	has "$l" "$text" load
done
[ "$(grep -c user_message_chunk "$l")" -eq 4 ] || fail "load: not 4 prompts replayed"
# ... and the printed hint, run as it is from another directory, shows it, then ends at EOF with 0.
hint=$(sed -n 's/.*resume with: acp-agent //p' "$s" | sed 's/\x1b\[[0-9;]*m//g' | tr -d '\r' | tail -n 1)
[ -n "$hint" ] || fail "tty: no resume hint"
(cd / && eval "timeout 10 '$agent' $hint" < /dev/null > "$tmp/resume.out" 2> "$tmp/resume.err")
rc=$?
[ $rc -eq 0 ] || fail "resume: exit $rc ($(cat "$tmp/resume.err"))"
has "$tmp/resume.out" '> run it' resume
has "$tmp/resume.out" '[done] Say chat-ok' resume
has "$tmp/resume.out" "session $sid" resume

# ---- piped: plain lines, answers as lines ----
cat > "$tmp/rec-plain.json" <<'JSON'
{"version": 1, "scripts": [{"agent": "root", "replies": [
  {"tool_calls": [{"name": "read", "arguments": {"file_path": "notes.txt"}}]},
  {"tool_calls": [{"name": "edit", "arguments": {"file_path": "notes.txt", "old_string": "two", "new_string": "TWO"}}]},
  {"expect": "edited notes.txt", "text": "Edited notes.txt."}]}]}
JSON
mkdir -p "$tmp/plain-ws"
printf 'one\ntwo\nthree\n' > "$tmp/plain-ws/notes.txt"
(cd "$tmp/plain-ws" && printf 'shout line two\nx\nA\n/agents\n' |
	timeout 10 "$agent" chat --model replay --recording "$tmp/rec-plain.json" --deterministic \
	--state-dir "$tmp/plain" > "$tmp/plain.out" 2> "$tmp/plain.err")
rc=$?
p="$tmp/plain.out"
[ $rc -eq 0 ] || fail "plain: exit $rc ($(cat "$tmp/plain.err"))"
hasnt "$p" "$(printf '\033')" plain
has "$p" "model replay, mode default, in $(cd "$tmp/plain-ws" && pwd -P)" "plain (the banner)"
has "$p" '> shout line two' plain
has "$p" '[done] Read notes.txt' plain
has "$p" 'permission: Edit notes.txt' plain
has "$p" '  -two' plain
has "$p" '  +TWO' plain
has "$p" 'answer with one of the keys shown: a, A, r or R' plain
has "$p" 'answered: Allow all edits in this workspace' plain
has "$p" 'Edited notes.txt.' plain
has "$p" '> /agents' plain
has "$p" '(no subagents)' plain
[ "$(cat "$tmp/plain-ws/notes.txt")" = "$(printf 'one\nTWO\nthree')" ] || fail "plain: notes.txt not edited"

# ---- children: the chat shows each child's work under its label, and whose ask it is ----
cat > "$tmp/rec-kids.json" <<'JSON'
{"version": 1, "scripts": [
  {"agent": "root", "replies": [
    {"tool_calls": [{"name": "subagent", "arguments": {"description": "List files", "prompt": "List the workspace with ls.", "run_in_background": false}}]},
    {"expect": "listed", "text": "The helper reported back."}]},
  {"agent": "label:List files", "replies": [
    {"reasoning": "Use ls.", "tool_calls": [{"name": "bash", "arguments": {"command": "ls", "description": "List the workspace"}}]},
    {"text": "listed the files\nand more"}]}]}
JSON
mkdir -p "$tmp/kids-ws"
touch "$tmp/kids-ws/a.txt"
(cd "$tmp/kids-ws" && printf 'Have a helper list the files.\na\n' |
	timeout 10 "$agent" chat --model replay --recording "$tmp/rec-kids.json" --deterministic \
	--state-dir "$tmp/kids" > "$tmp/kids.out" 2> "$tmp/kids.err")
rc=$?
k="$tmp/kids.out"
[ $rc -eq 0 ] || fail "kids: exit $rc ($(cat "$tmp/kids.err"))"
has "$k" '[List files] working' kids
has "$k" '  [List files] thinking: Use ls.' kids
has "$k" '[List files] waits for your answer' kids
has "$k" 'permission for [List files]: List the workspace' kids
has "$k" '  [List files] [done] List the workspace' kids
has "$k" '  [List files]   a.txt' kids
has "$k" '  [List files] listed the files' kids
has "$k" '  [List files] and more' kids
has "$k" '[List files] done' kids
has "$k" 'The helper reported back.' kids
hasnt "$k" 'Use ls.The' kids
# its first prompt, shown once: on the child's session, from the root agent
has "$k" '[agent -> List files] List the workspace with ls.' kids
[ "$(grep -c 'List the workspace with ls' "$k")" -eq 1 ] || fail "kids: the first prompt is not shown once"

# ---- bad usage ----
# refused NAME NEEDLE CODE ARGS...: exit CODE and NEEDLE (a fixed string) on stderr.
refused() {
	name=$1 needle=$2 code=$3
	shift 3
	timeout 10 "$agent" chat "$@" < /dev/null > "$tmp/$name.out" 2> "$tmp/$name.err"
	rc=$?
	[ $rc -eq "$code" ] || fail "$name: exit $rc, not $code ($(cat "$tmp/$name.err"))"
	grep -qF -- "$needle" "$tmp/$name.err" || fail "$name: \"$(cat "$tmp/$name.err")\" lacks \"$needle\""
}
refused positional 'unexpected argument "stray"' 2 stray --state-dir "$tmp/bad"
refused option 'unknown or incomplete option "--bogus"' 2 --bogus --state-dir "$tmp/bad"
refused no-id 'acp-agent chat: --session needs a session id' 2 --session
refused version 'acp-agent chat: --version is not an option of chat' 2 --version
refused unknown-session 'acp-agent chat: cannot resume session 00000000-0000-4000-8000-00000000dead: ' 1 \
	--session 00000000-0000-4000-8000-00000000dead --state-dir "$tmp/tty"
grep -qF 'unknown session' "$tmp/unknown-session.err" || fail "unknown-session: does not say unknown session"
"$agent" chat --help > "$tmp/help.out" 2>&1 || fail "chat --help: non-zero"
has "$tmp/help.out" '--session ID' help
"$agent" --help > "$tmp/help.out" 2>&1
has "$tmp/help.out" 'acp-agent chat [--session ID]' help

[ $fails -eq 0 ] || exit 1
echo "chat: ok (a terminal: prompt, streamed answer, a key for the ask, Ctrl-C cancels, a line typed ahead goes next, Ctrl-D exits 0, the agent reaped; load and --session show the conversation; piped: plain lines, answers as lines, a diff, /agents; a child's lines and ask under its label; bad usage exits 2, an unknown session 1)"
