#!/bin/sh
# docs/contract.md §3.1 and §22 together: a client that shows children as sessions stops reading
# while 8 background children each stream 2 MB. The agent must keep its write queue's limits: once
# more than 8 MiB wait for the client it reads no further request (a mode change sent then is not in
# the log until the client reads again, and its answer follows what was queued); and when the
# client reads again nothing is lost or reordered (each child's text arrives whole, on its own
# session). No timing is assumed: the stall lasts until every child's log holds its whole answer.
# Usage: tests/children_slow_reader.sh AGENT MOCK
set -u
agent=$1 mock=$2
tmp=$(mktemp -d /tmp/acp-slow-XXXXXX)
pid= mpid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	[ -n "$mpid" ] && kill "$mpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT
fail() { echo "children-slow-reader: FAILED: $*"; exit 1; }
kids=8
mb=2
root=00000000-0000-4000-8000-000000000001

# The model: the root starts the children; every answer after that (the root's next step and each
# child's, in whatever order they ask) streams mb MB in 256-byte deltas; the notices get "ok".
call=$(cat <<'EV'
"{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":IDX,\"id\":\"kIDX\",\"type\":\"function\",\"function\":{\"name\":\"subagent\",\"arguments\":\"{\\\"description\\\":\\\"kid IDX\\\",\\\"prompt\\\":\\\"stream\\\",\\\"run_in_background\\\":true}\"}}]}}]}"
EV
)
{
	printf '{"responses":[{"events":['
	i=0
	while [ $i -lt $kids ]; do
		[ $i -gt 0 ] && printf ','
		printf '%s\n' "$call" | sed "s/IDX/$i/g" | tr -d '\n'
		i=$((i + 1))
	done
	printf ',{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}]}'
	awk -v kids=$kids -v mb=$mb 'BEGIN {
		y = "yyyyyyyyyyyyyyyy"; y = y y y y y y y y y y y y y y y y
		ev = "\"{\\\"choices\\\":[{\\\"index\\\":0,\\\"delta\\\":{\\\"content\\\":\\\"" y "\\\"}}]}\""
		n = mb * 1048576 / 256
		for (s = 0; s <= kids; s++) {
			printf ",{\"events\":["
			for (k = 0; k < n; k++)
				printf "%s%s", k ? "," : "", ev
			printf ",{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}]}"
		}
		for (s = 0; s < 2 * kids; s++)
			printf ",{\"events\":[{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]},{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}]}"
		printf "]}\n"
	}'
} > "$tmp/script.json"
"$mock" --script "$tmp/script.json" --port-file "$tmp/port" 2>/dev/null &
mpid=$!
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done
[ -s "$tmp/port" ] || fail "the mock model did not start"

mkfifo "$tmp/in" "$tmp/out"
ACP_AGENT_API_KEY=test ACP_AGENT_BASE_URL="http://127.0.0.1:$(cat "$tmp/port")" \
	"$agent" --model openai --deterministic --sync none --state-dir "$tmp/state" < "$tmp/in" > "$tmp/out" 2>"$tmp/err" &
pid=$!
exec 3>"$tmp/in"
exec 4<"$tmp/out"	# opened, not read: the pipe fills and the agent's queue grows
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"subagents":{}}}}' \
	'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}' \
	"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$root\",\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}}" >&3
# The stall ends when every child has logged its whole answer (the log does not wait for the client).
done_kids() {
	n=0
	for f in "$tmp"/state/sessions/*.jsonl; do
		[ "$f" = "$tmp/state/sessions/$root.jsonl" ] && continue
		[ -f "$f" ] && grep -q '"type":"turn/end"' "$f" && n=$((n + 1))
	done
	echo $n
}
i=0
while [ "$(done_kids)" -lt $kids ] && [ $i -lt ${WAIT_ROUNDS:-3000} ]; do sleep 0.05; i=$((i + 1)); done
[ "$(done_kids)" -eq $kids ] || fail "only $(done_kids) of $kids children finished while the client stalled"
# Sent while more than 8 MiB wait: the agent must not read it yet. Had it read it, the mode change
# would be in the root's log at once (the log does not wait for the client); the half second only
# gives a reading agent time to show it, so a slow machine can miss a regression but never fail.
printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"session/set_mode\",\"params\":{\"sessionId\":\"$root\",\"modeId\":\"read-only\"}}" >&3
sleep 0.5
! grep -q '"type":"session/mode"' "$tmp/state/sessions/$root.jsonl" ||
	fail "the agent read a request while more than 8 MiB waited for the client"
exec 3>&-
cat <&4 > "$tmp/got"
exec 4<&-
wait "$pid"; rc=$?; pid=
[ $rc -eq 0 ] || fail "the agent exited $rc ($(tail -n 3 "$tmp/err"))"

before=$(awk '/"id":99,/ { print total; exit } { total += length($0) + 1 }' "$tmp/got")
[ -n "$before" ] || fail "the request sent during the stall was never answered"
[ "$before" -ge $((8 * 1048576)) ] ||
	fail "the request sent during the stall was answered after only $before bytes (over 8 MiB were queued)"
grep '"id":99,' "$tmp/got" | grep -q '"result"' || fail "the mode change sent during the stall failed"
grep -q '"type":"session/mode"' "$tmp/state/sessions/$root.jsonl" || fail "the mode change sent during the stall is not in the log"
# Each child's text whole, on its own session; none of it on the root's.
awk -v kids=$kids -v want=$((mb * 1048576)) -v root=$root '
	/"sessionUpdate":"agent_message_chunk"/ {
		match($0, /"params":\{"sessionId":"[^"]*"/); sid = substr($0, RSTART + 23, RLENGTH - 24)
		match($0, /"text":"y*"/); n = RLENGTH - 9
		if (n > 0) got[sid] += n
	}
	END {
		bad = 0; full = 0
		for (s in got) if (s != root) { if (got[s] == want) full++; else { printf "child %s: %d bytes of %d\n", s, got[s], want; bad = 1 } }
		if (full != kids) { printf "%d of %d children arrived whole\n", full, kids; bad = 1 }
		exit bad
	}' "$tmp/got" > "$tmp/check" || fail "$(cat "$tmp/check")"
echo "children-slow-reader: ok ($kids children x $mb MB to a client that stalled: the request sent then answered after $((before / 1048576)) MiB, every child's text whole on its own session)"
