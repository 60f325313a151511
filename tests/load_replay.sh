#!/bin/sh
# A long session/load replay is sent in slices (docs/decisions.md, "Field fixes"): requests are served between
# slices (a session/list is answered before the load's response), a prompt to the session waits
# until after the replay, and stdin EOF, SIGTERM or session/close stop the replay at once.
# Usage: tests/load_replay.sh AGENT
set -u
. "$(dirname "$0")/lib.sh"
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/acp-replay-XXXXXX)
pid=
reader=
trap 'kill -9 $pid $reader 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "load-replay: FAILED: $*"; echo "--- out (ids):"; grep -n '"id":' "$tmp/out" | cut -c1-200 | tail -n 5; echo "--- err:"; tail -n 3 "$tmp/err" | cut -c1-300; exit 1; }
# exited_within TENTHS: the agent ended within that many tenths of a second; its status in $status
exited_within() {
	i=0
	while kill -0 $pid 2>/dev/null; do
		i=$((i + 1)); [ $i -gt "$1" ] && return 1
		sleep 0.1
	done
	wait $pid; status=$?; pid=
	return 0
}
line_of() { grep -n "$1" "$tmp/out" | head -n 1 | cut -d: -f1; }	# PATTERN: first line number, or empty
sid=00000000-0000-4000-8000-0000000000d1
turns=3000
updates=$((turns * 5))
mkdir -p "$tmp/state/sessions"
# About 30 MB of finished turns, five updates each: a replay that takes a good part of a second.
big_log "$sid" $turns > "$tmp/log.jsonl"
printf '{"version":1,"scripts":[{"agent":"root","replies":[{"text":"after the replay"}]}]}' > "$tmp/rec.json"
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
load() { echo "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$sid\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}"; }
# start [stall]: a fresh copy of the log and an agent reading the fifo on fd 3. With stall, the
# client stops reading after its first 30 reads (at most 2 MB) until `release` (a replay is far faster than this
# script: without it, one could be over before the script acts on it).
start() {
	cp "$tmp/log.jsonl" "$tmp/state/sessions/$sid.jsonl"
	rm -f "$tmp/in" "$tmp/out" "$tmp/pipe" "$tmp/go"
	mkfifo "$tmp/in"
	if [ "${1:-}" = stall ]; then
		mkfifo "$tmp/pipe"
		{ dd bs=65536 count=30 status=none; while [ ! -e "$tmp/go" ]; do sleep 0.05; done; cat; } < "$tmp/pipe" > "$tmp/out" & reader=$!
		"$agent" --model replay --recording "$tmp/rec.json" --state-dir "$tmp/state" < "$tmp/in" > "$tmp/pipe" 2>"$tmp/err" & pid=$!
	else
		"$agent" --model replay --recording "$tmp/rec.json" --state-dir "$tmp/state" < "$tmp/in" > "$tmp/out" 2>"$tmp/err" & pid=$!
	fi
	exec 3>"$tmp/in"
	echo "$init" >&3
	wait_for "$tmp/out" '"id":1,"result"' 60 || fail "no initialize answer"
}
# release: a stalled client reads again, to the end
release() { touch "$tmp/go"; }

# 1. A list and a prompt sent right behind the load: the list is answered during the replay, the
# prompt waits for the load's response; the replay is whole, then {}, then the commands.
start
{ load 2; echo '{"jsonrpc":"2.0","id":3,"method":"session/list","params":{}}'
  echo "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"more\"}]}}"; } >&3
wait_for "$tmp/out" '"id":4,' 60 || fail "the prompt got no answer"
l2=$(line_of '"id":2,"result":{"modes"'); l3=$(line_of '"id":3,"result"'); l4=$(line_of '"id":4,"result"')
[ -n "$l2" ] || fail "the load was not answered {}"
[ -n "$l3" ] || fail "the list was not answered"
[ -n "$l4" ] || fail "the prompt did not succeed"
[ "$l3" -lt "$l2" ] || fail "session/list waited for the whole replay (list at line $l3, load at $l2)"
[ "$l2" -lt "$l4" ] || fail "the prompt was answered before the load"
n=$(head -n "$l2" "$tmp/out" | grep -c '"sessionUpdate":"\(user\|agent\)_message_chunk"')
[ "$n" -eq "$updates" ] || fail "$n replayed updates before the response, expected $updates"
sed -n "$((l2 + 1))p" "$tmp/out" | grep -q '"available_commands_update"' || fail "the commands update does not follow the load's response"
la=$(line_of 'after the replay')
[ -n "$la" ] && [ "$la" -gt "$l2" ] || fail "the prompt's answer is missing or came before the load's response"
# The load read off the loop carried the conversation over: its 30 MB are over the default window,
# so the prompt tried to compact them first (the recording has no summary: the attempt fails).
grep -q '"type":"context/compaction_failed"' "$tmp/state/sessions/$sid.jsonl" ||
	fail "the prompt after the load did not see the loaded conversation (no compaction attempt)"
exec 3>&-
exited_within 50 || fail "no exit after stdin EOF"
[ "$status" -eq 0 ] || fail "exit status $status"

# 2. stdin EOF during the replay: the replay stops, the process exits 0 promptly.
start stall
load 2 >&3
wait_for "$tmp/out" '"sessionUpdate"' 60 || fail "the replay did not start"
exec 3>&-
release
exited_within 30 || fail "still running 3 s after stdin EOF during a replay"
[ "$status" -eq 0 ] || fail "exit status $status after stdin EOF"
! grep -q '"id":2,' "$tmp/out" || fail "stdin EOF did not stop the replay (the load was answered)"

# 3. SIGTERM during the replay: the same.
start stall
load 2 >&3
wait_for "$tmp/out" '"sessionUpdate"' 60 || fail "the replay did not start"
kill -TERM $pid
release
exited_within 30 || fail "still running 3 s after SIGTERM during a replay"
exec 3>&-
[ "$status" -eq 0 ] || fail "exit status $status after SIGTERM"
! grep -q '"id":2,' "$tmp/out" || fail "SIGTERM did not stop the replay (the load was answered)"

# 4. session/close during the replay stops it: the load fails before the close is answered.
start
{ load 2; echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/close\",\"params\":{\"sessionId\":\"$sid\"}}"; } >&3
wait_for "$tmp/out" '"id":3,' 60 || fail "the close got no answer"
l2=$(line_of '"id":2,"error"'); l3=$(line_of '"id":3,"result":{}')
[ -n "$l2" ] && [ -n "$l3" ] && [ "$l2" -lt "$l3" ] || fail "the load was not failed before the close's answer"
n=$(head -n "$l2" "$tmp/out" | grep -c '"sessionUpdate"')
[ "$n" -lt "$updates" ] || fail "the whole replay was sent before the close"
exec 3>&-
exited_within 50 || fail "no exit after stdin EOF"
[ "$status" -eq 0 ] || fail "exit status $status"
# 4b. session/close once the session is live and replaying, while its conversation is still
# rebuilt off the loop (docs/decisions.md, "Loading at scan speed"): the rebuild stops, the load fails before the close's answer, and
# the process goes on (a list is answered, EOF ends it with 0).
start stall
load 2 >&3
wait_for "$tmp/out" '"sessionUpdate"' 60 || fail "the replay did not start"
{ echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/close\",\"params\":{\"sessionId\":\"$sid\"}}"
  echo '{"jsonrpc":"2.0","id":4,"method":"session/list","params":{}}'; } >&3
release
wait_for "$tmp/out" '"id":4,' 60 || fail "no list after a close during the replay"
l2=$(line_of '"id":2,"error"'); l3=$(line_of '"id":3,"result":{}')
[ -n "$l2" ] && [ -n "$l3" ] && [ "$l2" -lt "$l3" ] || fail "a live load was not failed before the close's answer"
exec 3>&-
exited_within 50 || fail "no exit after stdin EOF"
[ "$status" -eq 0 ] || fail "exit status $status"
# The file is read off the loop (docs/decisions.md, "Loading at scan speed"; a 30 MB log is above the 512 KiB threshold): what names
# the session while it is read waits for it, a close cancels it, EOF stops it.
resume() { echo "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"session/resume\",\"params\":{\"sessionId\":\"$sid\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}"; }
# 5. A second load of the same session while the first is read: each gets the whole replay (the two
# replays interleave, as two loads of a live session do, so either may end first).
start
{ load 2; load 3; } >&3
wait_for "$tmp/out" '"id":3,' 60 || fail "the second load got no answer"
wait_for "$tmp/out" '"id":2,' 60 || fail "the first load got no answer"
l2=$(line_of '"id":2,"result":{"modes"'); l3=$(line_of '"id":3,"result":{"modes"')
[ -n "$l2" ] && [ -n "$l3" ] || fail "the two loads were not both answered"
[ "$l2" -lt "$l3" ] && { first=$l2; last=$l3; } || { first=$l3; last=$l2; }
n=$(head -n "$first" "$tmp/out" | grep -c '"sessionUpdate":"\(user\|agent\)_message_chunk"')
[ "$n" -ge "$updates" ] || fail "$n updates before the first answer, expected $updates or more"
n=$(head -n "$last" "$tmp/out" | grep -c '"sessionUpdate":"\(user\|agent\)_message_chunk"')
[ "$n" -eq $((updates * 2)) ] || fail "$n updates before the second answer, expected $((updates * 2))"
[ "$(grep -c '"id":[23],' "$tmp/out")" -eq 2 ] || fail "a load was answered more than once"
exec 3>&-
exited_within 50 || fail "no exit after stdin EOF"

# 6. session/resume of a big session with a prompt right behind it: the resume answers first.
start
{ resume 2; echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"more\"}]}}"; } >&3
wait_for "$tmp/out" '"id":3,' 60 || fail "the prompt after a resume got no answer"
l2=$(line_of '"id":2,"result":{"modes"'); l3=$(line_of '"id":3,"result"')
[ -n "$l2" ] && [ -n "$l3" ] && [ "$l2" -lt "$l3" ] || fail "resume then prompt: not answered in order"
! grep -q '"sessionUpdate":"user_message_chunk"' "$tmp/out" || fail "a resume replayed the conversation"
exec 3>&-
exited_within 50 || fail "no exit after stdin EOF"

# resumed_then_prompt: a fresh agent resumes the session; once that is answered, a prompt (id 3)
resumed_then_prompt() {
	start
	resume 2 >&3
	wait_for "$tmp/out" '"id":2,' 60 || fail "the resume got no answer"
	echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"more\"}]}}" >&3
}

# 6b. A prompt sent once the resume is answered: the session is live, its conversation still being
# rebuilt off the loop (30 MB: a few hundred ms); the prompt waits for it, and sees all of it (over
# the window: it tries to compact first).
resumed_then_prompt
wait_for "$tmp/out" '"id":3,' 60 || fail "the prompt after the resume's answer got no answer"
grep -q '"type":"context/compaction_failed"' "$tmp/state/sessions/$sid.jsonl" ||
	fail "a prompt after the resume's answer did not see the whole conversation (no compaction attempt)"
exec 3>&-
exited_within 50 || fail "no exit after stdin EOF"

# 6c. The same prompt, then stdin EOF at once (while the conversation is still rebuilt): the
# prompt is answered all the same (cancelled), and the process exits 0.
resumed_then_prompt
exec 3>&-
exited_within 50 || fail "no exit after stdin EOF with a prompt waiting for the conversation"
[ "$status" -eq 0 ] || fail "exit status $status"
grep -q '"id":3,"result":{"stopReason"' "$tmp/out" || fail "a prompt waiting for the conversation was not answered at EOF"

# 7. stdin EOF while the file is read: the read stops, the load is not answered, exit 0 at once.
start
load 2 >&3
exec 3>&-
exited_within 30 || fail "still running 3 s after stdin EOF during a load"
[ "$status" -eq 0 ] || fail "exit status $status after stdin EOF during a load"
! grep -q '"id":2,' "$tmp/out" || fail "a load was answered after stdin EOF"

# 8. A big log with a bad line in its middle: -32603 session_corrupt, once; the file is left as it
# was; the process goes on (a list is answered).
start
awk 'NR == 5000 { print "{not json"; next } { print }' "$tmp/log.jsonl" > "$tmp/state/sessions/$sid.jsonl"
cp "$tmp/state/sessions/$sid.jsonl" "$tmp/corrupt.jsonl"
{ load 2; echo '{"jsonrpc":"2.0","id":3,"method":"session/list","params":{}}'; } >&3
wait_for "$tmp/out" '"id":2,' 60 || fail "a corrupt big log got no answer"
grep -q '"id":2,"error":{"code":-32603.*"kind":"session_corrupt"' "$tmp/out" || fail "a corrupt big log was not session_corrupt"
wait_for "$tmp/out" '"id":3,"result"' 60 || fail "no list after a corrupt load"
[ "$(grep -c '"id":2,' "$tmp/out")" -eq 1 ] || fail "the corrupt load was answered more than once"
cmp -s "$tmp/corrupt.jsonl" "$tmp/state/sessions/$sid.jsonl" || fail "a corrupt log was changed"
exec 3>&-
exited_within 50 || fail "no exit after stdin EOF"

# 9. A big log whose last turn is open and whose last line is torn: the repair is durable as it is
# inline (docs/contract.md §5.5): the torn bytes cut, the closers appended, the replay whole.
start
head -n -1 "$tmp/log.jsonl" > "$tmp/state/sessions/$sid.jsonl"
printf '{"seq":99999,"time":1,"type":"turn/e' >> "$tmp/state/sessions/$sid.jsonl"
load 2 >&3
wait_for "$tmp/out" '"id":2,' 60 || fail "a torn big log got no answer"
grep -q '"id":2,"result"' "$tmp/out" || fail "a torn big log was not loaded"
tail -n 1 "$tmp/state/sessions/$sid.jsonl" | grep -q '"type":"turn/end".*"kind":"interrupted"' ||
	fail "the open turn was not closed on disk"
! grep -q 'turn/e$' "$tmp/state/sessions/$sid.jsonl" || fail "the torn bytes were not cut"
exec 3>&-
exited_within 50 || fail "no exit after stdin EOF"

# 10. A client that does not read during the replay: the replay pauses once 512 KiB wait for the
# client (a slice more at most; acp/session.c ACP_REPLAY_AHEAD) instead of queueing all of itself,
# and goes on when the client reads.
cp "$tmp/log.jsonl" "$tmp/state/sessions/$sid.jsonl"
rm -f "$tmp/in" "$tmp/outp"
mkfifo "$tmp/in" "$tmp/outp"
exec 4<>"$tmp/outp"	# held open, not read: the pipe fills
"$agent" --model replay --recording "$tmp/rec.json" --state-dir "$tmp/state" --log-level info < "$tmp/in" > "$tmp/outp" 2>"$tmp/err" 4<&- & pid=$!
exec 3>"$tmp/in"
{ echo "$init"; load 2; } >&3
sleep 3
cat <&4 3>&- > "$tmp/out" & reader=$!	# without the agent's stdin: EOF stays ours
wait_for "$tmp/out" '"id":2,' 60 || { kill $reader; fail "the stalled load got no answer once read"; }
exec 3>&-
exited_within 50 || fail "no exit after stdin EOF"
kill $reader 2>/dev/null; exec 4<&-
line=$(grep 'replayed [0-9]* bytes' "$tmp/err")
replayed=$(echo "$line" | sed 's/.*replayed \([0-9]*\) bytes.*/\1/'); peak=$(echo "$line" | sed 's/.*at most \([0-9]*\) were.*/\1/')
[ -n "$replayed" ] && [ -n "$peak" ] || fail "no replay figures in the log"
[ "$replayed" -gt 25000000 ] || fail "the replay was $replayed bytes, expected over 25 MB"
[ "$peak" -lt $((1024 * 1024)) ] || fail "$peak bytes were queued at once for a client that did not read (replay $replayed)"
n=$(grep -c '"sessionUpdate":"\(user\|agent\)_message_chunk"' "$tmp/out")
[ "$n" -eq "$updates" ] || fail "$n replayed updates after the stall, expected $updates"
# 11. Under --record, the lines that waited behind a load read off the loop are recorded once, as
# they were read (they were dispatched again from the load's queue: a replay sent them twice).
cp "$tmp/log.jsonl" "$tmp/state/sessions/$sid.jsonl"
rm -f "$tmp/in" "$tmp/out"
rm -rf "$tmp/recorded"
mkfifo "$tmp/in"
"$agent" --model replay --recording "$tmp/rec.json" --state-dir "$tmp/state" --record "$tmp/recorded" < "$tmp/in" > "$tmp/out" 2>"$tmp/err" & pid=$!
exec 3>"$tmp/in"
echo "$init" >&3
wait_for "$tmp/out" '"id":1,"result"' 60 || fail "no initialize answer (--record)"
{ load 2; echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"recorded once\"}]}}"; } >&3
wait_for "$tmp/out" '"id":3,' 60 || fail "the prompt behind the load got no answer (--record)"
exec 3>&-
exited_within 50 || fail "no exit after stdin EOF (--record)"
n=$(cat "$tmp"/recorded/*.json | grep -o 'recorded once' | wc -l)
[ "$n" -eq 1 ] || fail "the prompt that waited behind the load is in the recording $n times"
echo "load-replay: ok (requests served during a long replay; a prompt waits for it; EOF, SIGTERM and close stop it, a close while the conversation is rebuilt too; read off the loop: a second load, resume, a prompt after it waits for the conversation and is answered at EOF, EOF, corrupt and torn logs; a stalled client queues at most $peak of $replayed bytes; under --record, what waited is recorded once)"
