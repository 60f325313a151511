#!/bin/sh
# A read-only state directory (SPEC §11, issue 11): history stays readable. session/load replays a
# session it cannot write, session/list lists it, and a prompt to it fails with session_log_io
# naming the read-only file; nothing on disk changes. Uses a tmpfs remounted read-only (root), else
# file modes; skipped, saying so, where neither can make a file unwritable.  Usage: tests/readonly.sh AGENT
set -u
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
fail() { echo "readonly: FAILED: $*"; cut -c1-300 "$tmp/out"; cat "$tmp/err"; exit 1; }
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
grep -q '"id":2,"result":{}' "$tmp/out" || fail "load of a read-only session failed"
grep -q '"text":"written before"' "$tmp/out" || fail "the replay lacks the stored answer"
grep '"id":3,' "$tmp/out" | grep -q '"kind":"session_log_io"' || fail "the prompt did not fail with session_log_io"
grep '"id":3,' "$tmp/out" | grep -q "read-only: $log" || fail "the error does not name the read-only file"
grep '"id":4,"result"' "$tmp/out" | grep -q "$sid" || fail "the session is not listed"
grep -q '"id":5,' "$tmp/out" || fail "resume got no answer"
[ "$(cksum < "$log")" = "$before" ] || fail "the read-only log changed"
echo "readonly: ok (load replays, prompt fails naming the read-only file, list and resume answer, log untouched)"
