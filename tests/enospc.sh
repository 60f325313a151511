#!/bin/sh
# ENOSPC on a real tiny filesystem (a 64 KiB tmpfs): the turn fails with session_log_io, the log is
# left without a partial line, and the process keeps serving. Skipped, saying so, where no tmpfs
# can be mounted.  Usage: tests/enospc.sh AGENT
set -u
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/acp-enospc-XXXXXX)
mnt="$tmp/fs"
mkdir -p "$mnt"
if ! mount -t tmpfs -o size=64k,mode=0755 tmpfs "$mnt" 2>/dev/null; then
	echo "enospc: SKIPPED (cannot mount a tmpfs here)"
	rm -rf "$tmp"
	exit 0
fi
trap 'umount "$mnt" 2>/dev/null; rm -rf "$tmp"' EXIT
big=$(head -c 90000 /dev/zero | tr '\0' 'x')
printf '{"version":1,"scripts":[{"agent":"root","replies":[{"text":"%s"},{"text":"small"}]}]}' "$big" > "$tmp/rec.json"
sid=00000000-0000-4000-8000-000000000001
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
	'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}' \
	"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"a big answer\"}]}}" \
	'{"jsonrpc":"2.0","id":4,"method":"session/list","params":{}}' |
	"$agent" --deterministic --model replay --recording "$tmp/rec.json" --state-dir "$mnt/state" > "$tmp/out" 2>"$tmp/err"
rc=$?
fail() { echo "enospc: FAILED: $*"; cat "$tmp/out" | cut -c1-300; cat "$tmp/err"; exit 1; }
[ $rc -eq 0 ] || fail "the agent exited with $rc"
grep '"id":3,' "$tmp/out" | grep -q '"kind":"session_log_io"' || fail "the turn did not fail with session_log_io"
grep -q '"id":4,"result"' "$tmp/out" || fail "the process stopped serving"
log="$mnt/state/sessions/$sid.jsonl"
[ -f "$log" ] || fail "the session was never published"
[ "$(tail -c 1 "$log" | od -An -c | tr -d ' ')" = '\n' ] || fail "the log ends with a partial line"
echo "enospc: ok (turn failed with session_log_io, log ends on a whole line, still serving)"
