#!/bin/sh
# The crash loop (seeded, reproducible): a subagent-heavy conversation is killed at a random point
# (SIGKILL after a random delay, or _exit right after the n-th event of a random type), restarted
# on the same state directory, and judged by state-check plus the /agents listing.
# Usage: tests/crash_loop.sh AGENT STATE_CHECK   (CRASH_SEED, CRASH_ITERATIONS)
set -u
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
check=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
seed=${CRASH_SEED:-1}
iterations=${CRASH_ITERATIONS:-50}
tmp=$(mktemp -d /tmp/acp-crash-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=00000000-0000-4000-8000-000000000001
cat > "$tmp/rec.json" <<'REC'
{"version": 1, "scripts": [
 {"agent": "root", "replies": [
  {"tool_calls": [{"name": "subagent", "arguments": {"description": "alpha", "prompt": "Answer."}},
                  {"name": "subagent", "arguments": {"description": "beta", "prompt": "List, then answer."}},
                  {"name": "subagent", "arguments": {"description": "gamma", "prompt": "Wait, answer.", "run_in_background": false}}]},
  {"text": "Started two, waited for one."},
  {"text": "noted 1"}, {"text": "noted 2"}, {"text": "noted 3"}, {"text": "noted 4"}, {"text": "noted 5"},
  {"text": "noted 6"}, {"text": "noted 7"}, {"text": "noted 8"}, {"text": "noted 9"}, {"text": "noted 10"}]},
 {"agent": "label:alpha", "replies": [{"text": "alpha done"}, {"text": "again"}]},
 {"agent": "label:beta", "replies": [{"tool_calls": [{"name": "list_agents", "arguments": {}}]}, {"text": "beta done"}, {"text": "again"}]},
 {"agent": "label:gamma", "replies": [{"text": "gamma done"}, {"text": "again"}]}]}
REC
types="turn/start user/message step/start assistant/message tool/call tool/result step/end turn/end subagent/descriptor subagent/settled"
kills=0; faults=0; survived=0; checked=0; failed=0; turns=0; notices=0
i=1
while [ $i -le $iterations ]; do
	plan=$(awk -v s=$((seed * 1000 + i)) -v types="$types" 'BEGIN { srand(s); n = split(types, t, " ");
		printf "%s %d %s %d\n", (rand() < 0.5 ? "kill" : "fault"), int(rand() * 25), t[int(rand() * n) + 1], int(rand() * 4) + 1 }')
	set -- $plan
	mode=$1; delay=$2; ftype=$3; fn=$4
	dir="$tmp/run$i"; mkdir -p "$dir"
	rm -f "$dir/in"; mkfifo "$dir/in"
	if [ "$mode" = fault ]; then env="exit-after-event:$ftype:$fn"; else env=""; fi
	ACP_AGENT_FAULTS=$env "$agent" --deterministic --model replay --recording "$tmp/rec.json" \
		--state-dir "$dir/state" < "$dir/in" > "$dir/out1" 2>"$dir/err1" &
	pid=$!
	exec 3>"$dir/in"
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
		'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}' \
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$root\",\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}}" \
		'{"jsonrpc":"2.0","id":4,"method":"_acp_agent/wait_idle","params":{"timeoutMs":5000}}' >&3 2>/dev/null
	if [ "$mode" = kill ]; then
		sleep "0.0$(printf '%02d' "$delay")"
		kill -9 $pid 2>/dev/null && kills=$((kills + 1))
	fi
	exec 3>&-
	{ wait $pid; } 2>/dev/null; rc=$?
	[ "$mode" = fault ] && [ $rc -eq 3 ] && faults=$((faults + 1))
	[ $rc -eq 0 ] && survived=$((survived + 1))
	if [ -f "$dir/state/sessions/$root.jsonl" ]; then
		printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
			"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$root\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}" \
			'{"jsonrpc":"2.0","id":3,"method":"_acp_agent/wait_idle","params":{"timeoutMs":5000}}' \
			"{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$root\",\"prompt\":[{\"type\":\"text\",\"text\":\"/agents\"}]}}" |
			"$agent" --deterministic --model replay --recording "$tmp/rec.json" --state-dir "$dir/state" > "$dir/out2" 2>"$dir/err2"
		checked=$((checked + 1))
		grep -q '"id":2,"result":{"modes"' "$dir/out2" || { echo "crash-loop: iteration $i ($plan): the root did not load"; failed=$((failed + 1)); }
		if ! "$check" "$dir/state" $root "$dir/out1" > "$dir/check"; then
			echo "crash-loop: iteration $i ($plan):"; cat "$dir/check"; failed=$((failed + 1))
		fi
		set -- $(sed -n 's/.* \([0-9]*\) answered turns, .* \([0-9]*\) notices, .*/\1 \2/p' "$dir/check")
		turns=$((turns + ${1:-0})); notices=$((notices + ${2:-0}))
		# Every child announced to the model is listed.
		for id in $(grep -o 'started subagent [0-9a-f-]*' "$dir/state/sessions/$root.jsonl" | sort -u | cut -d' ' -f3); do
			grep '"id":4' "$dir/out2" >/dev/null && grep "agent_message_chunk" "$dir/out2" | grep -q "$id" ||
				{ echo "crash-loop: iteration $i ($plan): /agents does not list $id"; failed=$((failed + 1)); }
		done
	fi
	[ $failed -eq 0 ] && rm -rf "$dir"
	i=$((i + 1))
done
echo "crash-loop: seed $seed, $iterations iterations: $kills SIGKILLs, $faults fault exits, $survived ran to the end; $checked restarts checked, $turns answered turns and $notices notices verified; $failed lost or broken"
[ $failed -eq 0 ]
