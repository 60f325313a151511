#!/bin/sh
# Two agents on one state directory (docs/contract.md §5.3): both read and list; only the lease holder writes a
# session, the other gets session_busy for it; killing the holder releases the lease.
# Usage: tests/two_process.sh AGENT
set -u
. "$(dirname "$0")/lib.sh"
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/acp-two-XXXXXX)
trap 'kill -9 $pa $pb 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "two-process: FAILED: $*"; echo "--- A:"; cat "$tmp/a.out"; echo "--- B:"; cat "$tmp/b.out"; exit 1; }
printf '{"version":1,"scripts":[{"agent":"root","replies":[{"text":"held by A"},{"hang":true}]},{"agent":"root","replies":[{"text":"B"}]}]}' > "$tmp/rec.json"
mkfifo "$tmp/a.in" "$tmp/b.in"
"$agent" --model replay --recording "$tmp/rec.json" --state-dir "$tmp/state" < "$tmp/a.in" > "$tmp/a.out" 2>"$tmp/a.err" & pa=$!
exec 3>"$tmp/a.in"
"$agent" --model replay --recording "$tmp/rec.json" --state-dir "$tmp/state" < "$tmp/b.in" > "$tmp/b.out" 2>"$tmp/b.err" & pb=$!
exec 4>"$tmp/b.in"

echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' >&3
echo '{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}' >&3
wait_for "$tmp/a.out" '"id":2,"result"' || fail "A did not create a session"
sid=$(sed -n 's/.*"id":2,"result":{"sessionId":"\([0-9a-f-]*\)".*/\1/p' "$tmp/a.out")
echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"one\"}]}}" >&3
wait_for "$tmp/a.out" '"id":3,"result"' || fail "A's prompt did not finish"

echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' >&4
echo '{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}' >&4
wait_for "$tmp/b.out" '"id":2,"result"' || fail "B did not list"
grep '"id":2,"result"' "$tmp/b.out" | grep -q "$sid" || fail "B does not list A's session"
echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$sid\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}" >&4
wait_for "$tmp/b.out" '"id":3,' || fail "B's load got no answer"
grep '"id":3,' "$tmp/b.out" | grep -q '"kind":"session_busy"' || fail "B could load a session A holds"
size_before=$(wc -c < "$tmp/state/sessions/$sid.jsonl")

kill -9 $pa
wait $pa 2>/dev/null
echo "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$sid\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}" >&4
wait_for "$tmp/b.out" '"id":4,' || fail "B's second load got no answer"
grep '"id":4,' "$tmp/b.out" | grep -q '"result":{"modes"' || fail "the lease was not released when A died"
grep -q '"text":"held by A"' "$tmp/b.out" || fail "B's replay lacks A's answer"
exec 4>&-
wait $pb || fail "B did not exit cleanly"
[ "$size_before" -le "$(wc -c < "$tmp/state/sessions/$sid.jsonl")" ] || fail "the log shrank"
echo "two-process: ok (list shared, load refused with session_busy while held, granted after kill -9)"
