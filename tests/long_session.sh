#!/bin/sh
# docs/contract.md §19 end to end: a 200-turn conversation against a model with an 8k-token window never
# fails, and no request outgrows the window. The model is tests/mock_openai.c's window mode: a
# body over the window is HTTP 400 "maximum context length", a summary request gets a summary,
# any other request a reply with usage. The conversation is driven by the scenario runner
# (`acp-agent scenario run`). Usage: tests/long_session.sh AGENT MOCK
set -u
agent=$1 mock=$2
tmp=$(mktemp -d /tmp/acp-long-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
turns=200
window=8000
fail() { echo "long-session: FAILED: $*"; exit 1; }
d=$tmp/long
mkdir -p "$d"
# Each prompt is about 1 KB: the whole conversation is some 50 windows long.
pad=$(printf '%0200d' 0 | sed 's/0/word /g')
{
	printf '{"args": ["--tools", "none"], "mock": "mock.json", "mergeChunks": true,\n'
	printf ' "env": {"ACP_AGENT_CONTEXT_WINDOW": "%d"},\n "steps": [\n' $window
	printf '  {"send": {"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}},\n'
	printf '  {"send": {"method": "session/new", "params": {"cwd": "{{cwd}}", "mcpServers": []}}},\n'
	i=1
	while [ $i -le $turns ]; do
		printf '  {"send": {"method": "session/prompt", "params": {"sessionId": "{{session:1}}", "prompt": [{"type": "text", "text": "Turn %d: %s"}]}}},\n' $i "$pad"
		i=$((i + 1))
	done
	printf '  {"eof": true}]}\n'
} > "$d/scenario.json"
printf '{"window": {"maxBytes": %d, "text": "Noted; this reply stands for a long answer about the turn."}, "responses": []}\n' \
	$((window * 4)) > "$d/mock.json"
printf '{"version": 1, "scripts": []}\n' > "$d/recording.json"
"$agent" scenario run --mock "$mock" --update "$d/" > "$tmp/run.out" 2>&1 || { tail -n 20 "$tmp/run.out"; fail "the runner failed"; }
out=$d/expected/stdout.jsonl req=$d/expected/requests.jsonl
ends=$(grep -c '"stopReason":"end_turn"' "$out")
[ "$ends" -eq $turns ] || fail "$ends of $turns prompts ended end_turn; $(grep -m1 '"error"' "$out" | cut -c1-300)"
! grep -q '"error":{' "$out" || fail "an error reached the client: $(grep -m1 '"error":{' "$out" | cut -c1-300)"
summaries=$(grep -c '"kind":"summary"' "$req")
overflows=$(grep -c '"kind":"overflow"' "$req")
[ "$summaries" -gt 0 ] || fail "the conversation was never compacted"
max=$(grep '"kind":"turn"' "$req" | sed 's/.*"bytes":\([0-9]*\).*/\1/' | sort -n | tail -n 1)
[ "$max" -le $((window * 4)) ] || fail "a request of $max bytes outgrew the window"
n=$(grep -c '"kind":"turn"' "$req")
echo "long-session: $turns turns with an ${window}-token window: $n requests, $summaries compactions, $overflows overflows, largest request $max bytes"
