#!/bin/sh
# A compaction interrupted at any point (docs/decisions.md, "Long conversations"): a conversation against a model with a small
# window (tests/mock_openai.c's window mode) compacts every few turns; the agent is killed (SIGKILL
# after a random delay, or _exit right after the n-th event of a compaction's types), restarted,
# and the session loaded and prompted twice more. Every request the model gets, before and after
# the crash, must show a whole conversation: its "Turn N" prompts in order with none missing and
# none twice, from Turn 1, or from the turn after the one its summary reaches: the old
# conversation or the compacted one, never a mix.
# Usage: tests/crash_compact.sh AGENT MOCK   (CRASH_SEED, CRASH_COMPACT_ITERATIONS)
set -u
. "$(dirname "$0")/lib.sh"
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mock=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
seed=${CRASH_SEED:-1}
iterations=${CRASH_COMPACT_ITERATIONS:-24}
tmp=$(mktemp -d /tmp/acp-crashc-XXXXXX)
pid=
mockpid=
trap 'kill -9 $pid $mockpid 2>/dev/null; rm -rf "$tmp"' EXIT
trap '' PIPE
fail() { echo "crash-compact: FAILED: $*"; exit 1; }
root=00000000-0000-4000-8000-000000000001
window=2500
pad=$(printf '%0100d' 0 | sed 's/0/word /g')
printf '{"window": {"maxBytes": %d, "text": "Noted; a short answer."}, "responses": []}\n' $((window * 4)) > "$tmp/mock.json"
"$mock" --script "$tmp/mock.json" --log "$tmp/req.log" --port-file "$tmp/port" & mockpid=$!
wait_for "$tmp/port" . 10 || fail "the mock did not start"
ACP_AGENT_BASE_URL="http://127.0.0.1:$(cat "$tmp/port")/v1"
ACP_AGENT_API_KEY=sk-test-not-a-real-key-42 ACP_AGENT_MODEL=mock-model ACP_AGENT_CONTEXT_WINDOW=$window
ACP_AGENT_RETRY_BASE_MS=5
export ACP_AGENT_BASE_URL ACP_AGENT_API_KEY ACP_AGENT_MODEL ACP_AGENT_CONTEXT_WINDOW ACP_AGENT_RETRY_BASE_MS

# start DIR FAULTS: an agent on DIR/state reading DIR/in on fd 3, writing DIR/out
start() {
	rm -f "$1/in"; mkfifo "$1/in"
	ACP_AGENT_FAULTS=$2 "$agent" --deterministic --model openai --tools none --state-dir "$1/state" \
		< "$1/in" > "$1/out" 2>>"$1/err" & pid=$!
	exec 3>"$1/in"
}
# ask DIR ID LINE: sends LINE; waits for the answer to ID while the agent lives (1: it died)
ask() {
	printf '%s\n' "$3" >&3 2>/dev/null
	while ! grep -q "\"id\":$2," "$1/out" 2>/dev/null; do
		kill -0 $pid 2>/dev/null || return 1
		sleep 0.02
	done
}
prompt() { echo "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$root\",\"prompt\":[{\"type\":\"text\",\"text\":\"Turn $2: $pad\"}]}}"; }
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'

kills=0 faults=0 compactions=0 requests=0 restored=0
types="context/compacted turn/start user/message assistant/message turn/end"
i=1
while [ $i -le $iterations ]; do
	set -- $(awk -v s=$((seed * 1000 + i)) -v types="$types" 'BEGIN { srand(s); n = split(types, t, " ");
		printf "%s %d %s %d\n", (rand() < 0.4 ? "kill" : "fault"), int(rand() * 400), t[int(rand() * n) + 1], int(rand() * 3) + 1 }')
	mode=$1 delay=$2 ftype=$3 fn=$4
	# a turn's own events come many times a compaction: later ones reach into the compactions
	[ "$ftype" = context/compacted ] || fn=$((fn * 3))
	dir="$tmp/run$i"; mkdir -p "$dir"
	from=$(($(wc -l < "$tmp/req.log") + 1))
	if [ "$mode" = fault ]; then start "$dir" "exit-after-event:$ftype:$fn"; else start "$dir" ""; fi
	killer=
	if [ "$mode" = kill ]; then
		( sleep "$(awk -v d="$delay" 'BEGIN { printf "%.3f", d / 1000 }')"; kill -9 $pid 2>/dev/null ) & killer=$!
	fi
	alive=1
	ask "$dir" 1 "$init" || alive=0
	[ $alive -eq 1 ] && { ask "$dir" 2 '{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}' || alive=0; }
	n=1
	while [ $alive -eq 1 ] && [ $n -le 10 ]; do
		ask "$dir" $((n + 2)) "$(prompt $((n + 2)) $n)" || alive=0
		n=$((n + 1))
	done
	kill -9 $pid 2>/dev/null
	exec 3>&-
	{ wait $pid; } 2>/dev/null; rc=$?
	[ "$mode" = fault ] && [ $rc -eq 3 ] && faults=$((faults + 1))
	[ "$mode" = kill ] && [ $rc -eq 137 ] && kills=$((kills + 1))
	[ -n "$killer" ] && { kill $killer 2>/dev/null; wait $killer 2>/dev/null; }
	log="$dir/state/sessions/$root.jsonl"
	if [ -f "$log" ]; then
		# Restart: load, then the turns after the last one the log holds.
		last=$(grep '"type":"user/message"' "$log" | grep -o '"text":"Turn [0-9]*' | sed 's/.*Turn //' | tail -n 1)
		last=${last:-0}
		mv "$dir/out" "$dir/out1"
		start "$dir" ""
		ask "$dir" 1 "$init" || fail "run $i: no initialize after the crash"
		ask "$dir" 2 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$root\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}" ||
			fail "run $i: the load died"
		grep -q '"id":2,"result"' "$dir/out" || fail "run $i ($mode $delay $ftype:$fn): the load failed: $(grep '"id":2,' "$dir/out" | cut -c1-300)"
		for k in 1 2; do
			ask "$dir" $((k + 2)) "$(prompt $((k + 2)) $((last + k)))" || fail "run $i: the agent died after the crash"
			grep "\"id\":$((k + 2))," "$dir/out" | grep -q '"stopReason":"end_turn"' ||
				fail "run $i ($mode $delay $ftype:$fn): Turn $((last + k)) after the crash: $(grep "\"id\":$((k + 2))," "$dir/out" | cut -c1-300)"
		done
		exec 3>&-
		{ wait $pid; } 2>/dev/null || fail "run $i: exit status $? after the crash"
		restored=$((restored + 1))
	fi
	# The judge: every request of this run shows a whole conversation (see the top).
	verdict=$(tail -n +"$from" "$tmp/req.log" | awk '
		/"labels"/ {
			l = $0; sub(/.*"labels":"/, "", l); sub(/".*/, "", l)
			s = $0; sub(/.*"summary":/, "", s); sub(/[,}].*/, "", s)
			n = split(l, a, ",")
			want = (s >= 0 ? s + 1 : 1)
			for (j = 1; j <= n; j++) {
				if (a[j] != want) { printf "request %d: turns %s after a summary through %s\n", NR, l, s; bad = 1; exit }
				want++
			}
			if ($0 ~ /"kind":"summary"/) c++
			r++
		}
		END { if (!bad) printf "ok %d %d\n", r, c }')
	case $verdict in
	ok*) set -- $verdict; requests=$((requests + $2)); compactions=$((compactions + $3)) ;;
	*) fail "run $i ($mode $delay $ftype:$fn): $verdict" ;;
	esac
	i=$((i + 1))
done
[ $compactions -gt 0 ] || fail "no compaction happened"
[ $faults -gt 0 ] || fail "no fault exit happened"
echo "crash-compact: $iterations runs ($kills SIGKILLs, $faults fault exits, $restored loads after the crash): $requests requests, $compactions summaries, each a whole conversation, old or compacted"
