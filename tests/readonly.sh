#!/bin/sh
# A read-only state directory (docs/decisions.md, "Field fixes"): history stays readable. session/load replays a
# session it cannot write, session/list lists it, and a prompt to it fails with session_log_io
# naming the read-only file; nothing on disk changes. Uses a tmpfs remounted read-only (root), else
# file modes; skipped, saying so, where neither can make a file unwritable.  Usage: tests/readonly.sh AGENT
set -u
. "$(dirname "$0")/lib.sh"
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/acp-readonly-XXXXXX)
mnt="$tmp/fs"
mkdir -p "$mnt"
mounted=0
if [ "$(id -u)" = 0 ]; then
	if mount -t tmpfs -o size=1m,mode=0755 tmpfs "$mnt" 2>/dev/null; then
		mounted=1
	else
		echo "readonly: SKIPPED (root, and no tmpfs can be mounted to make a file unwritable)"
		rm -rf "$tmp"
		exit 0
	fi
fi
trap '[ $mounted = 1 ] && umount "$mnt" 2>/dev/null; chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "readonly: FAILED: $*"; grep -o '"id":[0-9]*,.\{0,300\}\|Error: [^"]*' "$tmp/out" | tail -n 6; tail -n 3 "$tmp/err"; exit 1; }
printf '{"version":1,"scripts":[{"agent":"root","replies":[{"text":"written before"},{"text":"never"}]}]}' > "$tmp/rec.json"
sid=00000000-0000-4000-8000-000000000001
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
printf '%s\n' "$init" '{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}' \
	"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"first\"}]}}" |
	"$agent" --deterministic --model replay --recording "$tmp/rec.json" --state-dir "$mnt/state" > "$tmp/out" 2>"$tmp/err" ||
	fail "the writing run failed"
grep -q '"id":3,"result"' "$tmp/out" || fail "the first prompt did not finish"
log="$mnt/state/sessions/$sid.jsonl"
before=$(cksum < "$log")
if [ $mounted = 1 ]; then
	mount -o remount,ro "$mnt" || fail "cannot remount read-only"
else
	chmod -R a-w "$mnt/state"
fi
printf '%s\n' "$init" \
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$sid\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}" \
	"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"second\"}]}}" \
	'{"jsonrpc":"2.0","id":4,"method":"session/list","params":{}}' \
	"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/resume\",\"params\":{\"sessionId\":\"$sid\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}" |
	"$agent" --deterministic --model replay --recording "$tmp/rec.json" --state-dir "$mnt/state" > "$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "the agent exited with $rc"
grep -q '"id":2,"result":{"modes"' "$tmp/out" || fail "load of a read-only session failed"
grep -q '"text":"written before"' "$tmp/out" || fail "the replay lacks the stored answer"
grep '"id":3,' "$tmp/out" | grep -q '"kind":"session_log_io"' || fail "the prompt did not fail with session_log_io"
grep '"id":3,' "$tmp/out" | grep -q "read-only: $log" || fail "the error does not name the read-only file"
grep '"id":4,"result"' "$tmp/out" | grep -q "$sid" || fail "the session is not listed"
grep -q '"id":5,' "$tmp/out" || fail "resume got no answer"
[ "$(cksum < "$log")" = "$before" ] || fail "the read-only log changed"

# Viewers of a read-only log share it: a second process loads it while the first holds it.
mkfifo "$tmp/view"
"$agent" --model replay --recording "$tmp/rec.json" --state-dir "$mnt/state" < "$tmp/view" > "$tmp/view.out" 2>/dev/null &
viewer=$!
exec 4>"$tmp/view"
echo "$init" >&4
echo "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$sid\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}" >&4
i=0
while ! grep -q '"id":2,' "$tmp/view.out" 2>/dev/null && [ $i -lt 400 ]; do i=$((i + 1)); sleep 0.05; done
printf '%s\n' "$init" \
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$sid\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}" |
	"$agent" --model replay --recording "$tmp/rec.json" --state-dir "$mnt/state" > "$tmp/out" 2>"$tmp/err"
exec 4>&-
wait $viewer
grep -q '"id":2,"result":{"modes"' "$tmp/view.out" || fail "the first viewer could not load the read-only session"
grep -q '"id":2,"result":{"modes"' "$tmp/out" || fail "a second viewer of a read-only session was refused"
rm -f "$tmp/view"

# A child whose log cannot be written: send_message fails SESSION_LOG_IO before anything is
# delivered (it used to say "message delivered" and lose the message, the parent waiting forever).
if [ $mounted = 1 ]; then
	mount -o remount,rw "$mnt" || fail "cannot remount read-write"
else
	chmod -R u+w "$mnt/state"
fi
cat > "$tmp/rec2.json" <<'JSON'
{"version":1,"scripts":[
 {"agent":"root","replies":[{"text":"one"}]},
 {"agent":"root","replies":[
  {"tool_calls":[{"name":"subagent","arguments":{"description":"remember","prompt":"Remember 7."}}]},
  {"text":"Started."},
  {"expect":"finished","text":"It remembered."},
  {"expect":"after the restart","tool_calls":[{"name":"send_message","arguments":{"agent_id":"{{agent:remember}}","message":"Which number?"}}]},
  {"expect":"cannot be written: session","text":"Its log cannot be written."}]},
 {"agent":"label:remember","replies":[{"text":"Remembered 7."},{"text":"never asked"}]}]}
JSON
mkfifo "$tmp/in"
run_fifo() {	# runs the agent on the fifo; the caller writes to fd 3
	# the output starts empty before the agent runs: its redirection happens in the background
	# child, and a wait_for could otherwise read the last run's lines
	: > "$tmp/out"
	"$agent" --deterministic --model replay --recording "$tmp/rec2.json" --state-dir "$mnt/state" \
		< "$tmp/in" > "$tmp/out" 2>"$tmp/err" &
	pid=$!
	exec 3>"$tmp/in"
}
finish() { exec 3>&-; wait $pid || fail "the agent exited with $?"; pid=; }
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; [ -n "${child_log:-}" ] && umount "$child_log" 2>/dev/null; [ $mounted = 1 ] && umount "$mnt" 2>/dev/null; chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
run_fifo
echo "$init" >&3
echo '{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}' >&3
wait_for "$tmp/out" '"id":2,"result"' || fail "no second session"
root=$(sed -n 's/.*"id":2,"result":{"sessionId":"\([0-9a-f-]*\)".*/\1/p' "$tmp/out")
echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$root\",\"prompt\":[{\"type\":\"text\",\"text\":\"Start a helper.\"}]}}" >&3
echo '{"jsonrpc":"2.0","id":4,"method":"_acp_agent/wait_idle","params":{}}' >&3
wait_for "$tmp/out" '"id":4,"result":{"idle":true}' || fail "the helper did not finish"
finish
child=
for f in "$mnt/state/sessions"/*.jsonl; do
	grep -q "\"parentSession\":\"$root\"" "$f" && child=$f
done
[ -n "$child" ] || fail "no child log"
child_before=$(cksum < "$child")
if [ $mounted = 1 ]; then
	mount --bind "$child" "$child" && child_log=$child && mount -o remount,ro,bind "$child" ||
		fail "cannot bind-mount the child's log read-only"
else
	chmod a-w "$child"
fi
run_fifo
echo "$init" >&3
echo "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$root\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}" >&3
echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$root\",\"prompt\":[{\"type\":\"text\",\"text\":\"Ask it after the restart.\"}]}}" >&3
wait_for "$tmp/out" '"id":3,' || fail "the prompt to the parent got no answer"
finish
grep '"id":3,' "$tmp/out" | grep -q '"stopReason":"end_turn"' || fail "the parent's turn did not end normally" # its recording expects the failure in the tool result
grep -q 'SESSION_LOG_IO' "$tmp/out" || fail "send_message did not fail with SESSION_LOG_IO"
grep -q 'message delivered' "$tmp/out" && fail "send_message said the message was delivered"
[ "$(cksum < "$child")" = "$child_before" ] || fail "the read-only child log changed"
echo "readonly: ok (load replays, prompt fails naming the read-only file, list and resume answer, log untouched, two viewers share it; send_message to a read-only child fails SESSION_LOG_IO)"
