#!/bin/sh
# session/load must not cut a turn another process wrote (docs/decisions.md, "Field fixes"): B loads a large log that A
# holds; while B would be reading it, A answers a prompt and exits. The lease is taken before the
# log is read, so B is refused (session_busy) instead of truncating A's new turn away; A's answer
# is on disk afterwards and B can load it then.  Usage: tests/load_race.sh AGENT
set -u
. "$(dirname "$0")/lib.sh"
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/acp-race-XXXXXX)
pa=; pb=
trap 'kill -9 $pa $pb 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "load-race: FAILED: $*"; echo "--- A:"; tail -n 3 "$tmp/a.out" | cut -c1-300; echo "--- B:"; tail -n 3 "$tmp/b.out" | cut -c1-300; exit 1; }
sid=00000000-0000-4000-8000-0000000000c1
mkdir -p "$tmp/state/sessions"
# About 60 MB of finished turns (no step/start: the replay position stays 0): long enough to read that A's turn fits in the window.
big_log "$sid" 6000 > "$tmp/state/sessions/$sid.jsonl"
printf '{"version":1,"scripts":[{"agent":"root","replies":[{"text":"the late answer"}]}]}' > "$tmp/rec.json"
mkfifo "$tmp/a.in" "$tmp/b.in"
"$agent" --model replay --recording "$tmp/rec.json" --state-dir "$tmp/state" < "$tmp/a.in" > "$tmp/a.out" 2>"$tmp/a.err" & pa=$!
exec 3>"$tmp/a.in"
"$agent" --model replay --recording "$tmp/rec.json" --state-dir "$tmp/state" < "$tmp/b.in" > "$tmp/b.out" 2>"$tmp/b.err" 3>&- & pb=$!
exec 4>"$tmp/b.in"
load() { echo "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$sid\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}"; }
echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' >&3
echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' >&4
load 2 >&3
wait_for "$tmp/a.out" '"id":2,' 60 || fail "A's load got no answer"
grep -q '"id":2,"result":{"modes"' "$tmp/a.out" || fail "A could not load the session"
# B starts reading now; A writes a turn and lets go while B would still be reading.
load 2 >&4
echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"one more\"}]}}" >&3
wait_for "$tmp/a.out" '"id":3,"result"' 60 || fail "A's prompt did not finish"
exec 3>&-
wait $pa || fail "A did not exit cleanly"
pa=
wait_for "$tmp/b.out" '"id":2,' 60 || fail "B's load got no answer"
grep -q 'the late answer' "$tmp/state/sessions/$sid.jsonl" || fail "A's acknowledged turn was cut from the log"
grep '"id":2,' "$tmp/b.out" | grep -q '"kind":"session_busy"' || fail "B loaded a session A held"
load 3 >&4
wait_for "$tmp/b.out" '"id":3,' 60 || fail "B's second load got no answer"
grep -q '"id":3,"result":{"modes"' "$tmp/b.out" || fail "B could not load the session once A let go"
grep -q 'the late answer' "$tmp/b.out" || fail "B's replay lacks A's last turn"
exec 4>&-
wait $pb || fail "B did not exit cleanly"
pb=
echo "load-race: ok (a load waits for the lease before reading: the holder's last turn survives)"
