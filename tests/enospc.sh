#!/bin/sh
# ENOSPC on a real tiny filesystem (a 64 KiB tmpfs): the turn fails with session_log_io carrying
# the cause, the log is left without a partial line, the process keeps serving, and the next prompt
# works once there is room again, without a reload. Skipped, saying so, where no tmpfs
# can be mounted.  Usage: tests/enospc.sh AGENT
set -u
. "$(dirname "$0")/lib.sh"
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/acp-enospc-XXXXXX)
mnt="$tmp/fs"
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=64k,mode=0755 tmpfs "$mnt" 2>/dev/null; then
	echo "enospc: SKIPPED (cannot mount a tmpfs here)"
	rm -rf "$tmp"
	exit 0
fi
trap 'kill -9 $pid 2>/dev/null; umount "$mnt" "$tmp/ino" 2>/dev/null; rm -rf "$tmp"' EXIT
pid=
big=$(head -c 90000 /dev/zero | tr '\0' 'x')
printf '{"version":1,"scripts":[{"agent":"root","replies":[{"text":"%s"},{"text":"small"}]}]}' "$big" > "$tmp/rec.json"
sid=00000000-0000-4000-8000-000000000001
mkfifo "$tmp/in"
"$agent" --deterministic --model replay --recording "$tmp/rec.json" --state-dir "$mnt/state" < "$tmp/in" > "$tmp/out" 2>"$tmp/err" &
pid=$!
exec 3>"$tmp/in"
prompt() { echo "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"$2\"}]}}" >&3; }
echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' >&3
echo '{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}' >&3
prompt 3 "a big answer"
wait_for "$tmp/out" '"id":3,' || true
echo '{"jsonrpc":"2.0","id":4,"method":"session/list","params":{}}' >&3
prompt 5 "now a small one"
wait_for "$tmp/out" '"id":5,' || true
exec 3>&-
wait $pid
rc=$?
fail() { echo "enospc: FAILED: $*"; grep '"id":' "$tmp/out" | cut -c1-300; tail -n 5 "$tmp/err"; exit 1; }
[ $rc -eq 0 ] || fail "the agent exited with $rc"
grep '"id":3,' "$tmp/out" | grep -q '"kind":"session_log_io"' || fail "the turn did not fail with session_log_io"
grep '"id":3,' "$tmp/out" | grep -q 'No space left on device' || fail "the error does not carry the cause"
grep -q '"id":4,"result"' "$tmp/out" || fail "the process stopped serving"
# The failed write was cut back to a whole line: once there is room the session goes on, no reload.
grep -q '"id":5,"result":{"stopReason":"end_turn"}' "$tmp/out" || fail "the next prompt did not work without a reload"
log="$mnt/state/sessions/$sid.jsonl"
[ -f "$log" ] || fail "the session was never published"
[ "$(tail -c 1 "$log" | od -An -c | tr -d ' ')" = '\n' ] || fail "the log ends with a partial line"
grep -q '"text":"small"' "$log" || fail "the next turn is not in the log"

# No inodes left: session/new fails naming the cause, and the session it could not create is
# nowhere (not listed, no file), while the process keeps serving.
mkdir "$tmp/ino"
mount -t tmpfs -o size=1m,nr_inodes=8,mode=0755 tmpfs "$tmp/ino" || fail "cannot mount the inode-starved tmpfs"
mkdir -p "$tmp/ino/state/sessions"
i=0
while touch "$tmp/ino/fill$i" 2>/dev/null; do i=$((i + 1)); done
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
	'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}' \
	'{"jsonrpc":"2.0","id":3,"method":"session/list","params":{}}' |
	"$agent" --model builtin --state-dir "$tmp/ino/state" > "$tmp/ino.out" 2> "$tmp/ino.err" || fail "the agent failed with no inodes"
grep '"id":2,' "$tmp/ino.out" | grep -q '"kind":"session_log_io".*No space left on device' ||
	fail "session/new with no inodes: $(grep '"id":2,' "$tmp/ino.out")"
grep -q '"id":3,"result":{"sessions":\[\]}' "$tmp/ino.out" ||
	fail "a session whose creation failed is listed: $(grep '"id":3,' "$tmp/ino.out")"
[ -z "$(ls "$tmp/ino/state/sessions")" ] || fail "a failed creation left $(ls -a "$tmp/ino/state/sessions")"
umount "$tmp/ino"
echo "enospc: ok (turn failed with session_log_io and its cause, log ends on a whole line, the next prompt works without a reload; a session/new with no inodes fails and is not listed)"
