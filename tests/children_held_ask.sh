#!/bin/sh
# docs/contract.md §22.4 with §22.2: while a root's session/load replay is out, a child's
# permission ask waits with what the replay holds and follows the load's answer: the request
# never passes the replay (the client would meet a request for a tool call it has not been shown).
# The replay is kept open by a client that stops reading (a 4 MiB turn fills the pipe and the
# agent's read-ahead limit after its first update); the child's model answer waits for a file the
# test creates once the agent says the replay began, so the ask is made while the replay is
# paused. No timing is assumed: the test waits for the child's call in its log, then reads.
# Then the same with the child cancelled while its ask is held: the request is withdrawn where it
# waits, so neither it nor its $/cancel_request ever reaches the client. And a background child
# made before the load that speaks while the replay is stalled: its replayed history stops where
# its file was when the replay began, so its text is shown once (live, after the answer).
# Usage: tests/children_held_ask.sh AGENT MOCK
set -u
agent=$1 mock=$2
tmp=$(mktemp -d /tmp/acp-held-XXXXXX)
pid= mpid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	[ -n "$mpid" ] && kill "$mpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT
fail() { echo "children-held-ask: FAILED: $*"; exit 1; }
root=00000000-0000-4000-8000-000000000001

# Turn 1: 2 MiB of reasoning and as much text (two updates on load: the replay pauses between,
# the first being more than the 1 MiB pipe and the 512 KiB the replay lets wait). Turn 2: a
# foreground child whose first answer (a command: it asks) waits for $tmp/go. The model's requests
# come one at a time, so the script's order is theirs (a window big enough that the 4 MiB turn
# asks for no compaction). Each case runs a mock of its own. script BG writes the script; with BG
# 1 the child runs in the background and the next two answers (the root's and the child's, in
# whichever order they ask) are both a text that waits for $tmp/go.
script() {
awk -v go="$tmp/go" -v bg="$1" 'BEGIN {
	y = "yyyyyyyyyyyyyyyy"; y = y y y y y y y y y y y y y y y y; y = y y y y y y y y y y y y y y y y
	printf "{\"responses\":[{\"events\":["
	for (k = 0; k < 1024; k++)
		printf "%s\"{\\\"choices\\\":[{\\\"index\\\":0,\\\"delta\\\":{\\\"%s\\\":\\\"%s\\\"}}]}\"", k ? "," : "", k < 512 ? "reasoning_content" : "content", y
	printf ",{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}]}"
	printf ",{\"events\":[\"{\\\"choices\\\":[{\\\"index\\\":0,\\\"delta\\\":{\\\"tool_calls\\\":[{\\\"index\\\":0,\\\"id\\\":\\\"s1\\\",\\\"type\\\":\\\"function\\\",\\\"function\\\":{\\\"name\\\":\\\"subagent\\\",\\\"arguments\\\":\\\"{\\\\\\\"description\\\\\\\":\\\\\\\"runner\\\\\\\",\\\\\\\"prompt\\\\\\\":\\\\\\\"run true\\\\\\\",\\\\\\\"run_in_background\\\\\\\":%s}\\\"}}]}}]}\"", bg ? "true" : "false"
	printf ",{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}]}"
	for (w = 0; w < 2 && bg; w++)
		printf ",{\"wait_file\":\"%s\",\"events\":[{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"said after the load began\"}}]},{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}]}", go
	for (w = 0; w < 1 - bg; w++) {
		printf ",{\"wait_file\":\"%s\",\"events\":[\"{\\\"choices\\\":[{\\\"index\\\":0,\\\"delta\\\":{\\\"tool_calls\\\":[{\\\"index\\\":0,\\\"id\\\":\\\"b1\\\",\\\"type\\\":\\\"function\\\",\\\"function\\\":{\\\"name\\\":\\\"bash\\\",\\\"arguments\\\":\\\"{\\\\\\\"command\\\\\\\":\\\\\\\"true\\\\\\\",\\\\\\\"description\\\\\\\":\\\\\\\"run true\\\\\\\"}\\\"}}]}}]}\"", go
		printf ",{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}]}"
	}
	for (s = 0; s < 4; s++)
		printf ",{\"events\":[{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]},{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}]}"
	printf "]}\n"
}' > "$tmp/script.json"
}

# read_until N: reads the agent's lines into $tmp/got up to the answer to request N
read_until() {
	while IFS= read -r line <&4; do
		printf '%s\n' "$line" >> "$tmp/got"
		case $line in *"\"id\":$1,\"result\""*) return 0 ;; esac
	done
	return 1
}
child_log() {
	for f in "$tmp"/state/sessions/*.jsonl; do
		[ "$f" = "$tmp/state/sessions/$root.jsonl" ] || { [ -f "$f" ] && echo "$f"; }
	done
}

# run CASE: held (the ask follows the load's answer), withdrawn (the child is cancelled first) or
# background (a child made before the load: its replayed history stops where it was then)
run() {
	rm -rf "$tmp/state" "$tmp/got" "$tmp/go" "$tmp/port" "$tmp/in" "$tmp/out"
	script "$([ "$1" = background ] && echo 1 || echo 0)"
	"$mock" --script "$tmp/script.json" --port-file "$tmp/port" 2>/dev/null &
	mpid=$!
	i=0
	while [ ! -s "$tmp/port" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
	[ -s "$tmp/port" ] || fail "$1: the mock model did not start"
	mkfifo "$tmp/in" "$tmp/out"
	ACP_AGENT_API_KEY=test ACP_AGENT_CONTEXT_WINDOW=100000000 ACP_AGENT_BASE_URL="http://127.0.0.1:$(cat "$tmp/port")" \
		"$agent" --model openai --deterministic --sync none --log-level info --state-dir "$tmp/state" < "$tmp/in" > "$tmp/out" 2>"$tmp/err" &
	pid=$!
	exec 3>"$tmp/in"
	exec 4<"$tmp/out"
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"subagents":{}}}}' \
		'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}' \
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$root\",\"prompt\":[{\"type\":\"text\",\"text\":\"say a lot\"}]}}" >&3
	read_until 3 || fail "$1: the first turn was not answered ($(tail -n 3 "$tmp/err"))"
	# Turn 2 starts the child; the load's replay then stalls on the unread 4 MiB.
	load="{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$root\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}"
	printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$root\",\"prompt\":[{\"type\":\"text\",\"text\":\"delegate\"}]}}" >&3
	[ "$1" = background ] || printf '%s\n' "$load" >&3
	i=0
	while [ -z "$(child_log)" ] && [ $i -lt ${WAIT_ROUNDS:-3000} ]; do sleep 0.05; i=$((i + 1)); done
	[ -n "$(child_log)" ] || fail "$1: the child was never made"
	if [ "$1" = background ]; then
		# the call that made it is in the root's log before the load: the replay shows the child
		i=0
		while ! grep -q '"type":"tool/result"' "$tmp/state/sessions/$root.jsonl" && [ $i -lt ${WAIT_ROUNDS:-3000} ]; do sleep 0.05; i=$((i + 1)); done
		printf '%s\n' "$load" >&3
	fi
	# the replay has begun (the agent says so at info level) before the child goes on
	i=0
	while ! grep -q "replay of $root begins" "$tmp/err" && [ $i -lt ${WAIT_ROUNDS:-3000} ]; do sleep 0.05; i=$((i + 1)); done
	grep -q "replay of $root begins" "$tmp/err" || fail "$1: the load's replay never began"
	child=$(basename "$(child_log)" .jsonl)
	touch "$tmp/go"
	# the call is logged, then asked in the same pass of the loop: the ask is made (and held); a
	# background child's text is logged after it streamed (held)
	want='"type":"tool/call"'
	[ "$1" = background ] && want='"type":"assistant/message"'
	i=0
	while ! grep -q "$want" "$(child_log)" && [ $i -lt ${WAIT_ROUNDS:-3000} ]; do sleep 0.05; i=$((i + 1)); done
	grep -q "$want" "$(child_log)" || fail "$1: the child never answered"
	if [ "$1" = withdrawn ]; then
		printf '%s\n' "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"$child\"}}" >&3
		i=0
		while ! grep -q '"type":"tool/result"' "$(child_log)" && [ $i -lt ${WAIT_ROUNDS:-3000} ]; do sleep 0.05; i=$((i + 1)); done
		grep -q '"type":"tool/result"' "$(child_log)" || fail "$1: the cancelled call never ended"
	fi
	# Now read: the replay goes on and the load is answered.
	read_until 5 || fail "$1: the load was never answered ($(tail -n 3 "$tmp/err"))"
	if [ "$1" = background ]; then
		:
	elif [ "$1" = held ]; then
		grep -q '"method":"session/request_permission"' "$tmp/got" ||
			timeout 10 sh -c 'while IFS= read -r line; do printf "%s\n" "$line"; case $line in *session/request_permission*) exit 0 ;; esac; done' <&4 >> "$tmp/got" ||
			fail "$1: the child's ask never came"
	else
		read_until 4 || fail "$1: the delegating turn was never answered"
	fi
	exec 3>&-
	cat <&4 >> "$tmp/got"
	exec 4<&-
	wait "$pid"; rc=$?; pid=
	kill "$mpid" 2>/dev/null; wait "$mpid" 2>/dev/null; mpid=
	[ $rc -eq 0 ] || fail "$1: the agent exited $rc ($(tail -n 3 "$tmp/err"))"
}

run held
load_at=$(grep -n '"id":5,"result"' "$tmp/got" | head -1 | cut -d: -f1)
ask_at=$(grep -n '"method":"session/request_permission"' "$tmp/got" | head -1 | cut -d: -f1)
[ -n "$ask_at" ] && [ -n "$load_at" ] || fail "held: no ask or no load answer"
[ "$ask_at" -gt "$load_at" ] || fail "held: the child's ask (line $ask_at) passed the load's replay (answered at line $load_at)"
grep '"method":"session/request_permission"' "$tmp/got" | grep -q "\"sessionId\":\"$child\"" ||
	fail "held: the ask is not on the child's session"
n=$(grep -c '"method":"session/request_permission"' "$tmp/got")
[ "$n" -eq 1 ] || fail "held: $n asks, not one"

run withdrawn
! grep -q '"method":"session/request_permission"' "$tmp/got" || fail "withdrawn: the cancelled ask still went out"
! grep -q '"\$/cancel_request"' "$tmp/got" || fail "withdrawn: a cancel went out for a request the client never got"
grep "\"sessionId\":\"$root\"" "$tmp/got" | grep '"subagent_update"' | grep -q '"stopReason":"cancelled"' ||
	fail "withdrawn: the child's turn did not end cancelled"
run background
said="\"sessionId\":\"$child\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"said after the load began\"}"
n=$(grep -c "$said" "$tmp/got")
[ "$n" -eq 1 ] || fail "background: the child's text was shown $n times, not once (replayed and live)"
load_at=$(grep -n '"id":5,"result"' "$tmp/got" | head -1 | cut -d: -f1)
said_at=$(grep -n "$said" "$tmp/got" | cut -d: -f1)
[ "$said_at" -gt "$load_at" ] || fail "background: the child's text, said after the load began, was replayed"
grep -q "\"sessionId\":\"$child\",\"update\":{\"sessionUpdate\":\"session_message\",\"messageId\":\"msg-1\"" "$tmp/got" ||
	fail "background: the child's history before the load was not replayed"
echo "children-held-ask: ok (a child's ask made while its root's load replay was stalled went out after the load's answer, once, on the child's session; cancelled while held, neither it nor a cancel went out; a live child made before the load: its history replayed up to then, its later text once, live)"
