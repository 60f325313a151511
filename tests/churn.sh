#!/bin/sh
# Lifetimes (docs/decisions.md, "Architecture and the workspace"): one process opens and closes N sessions (default 1,000): each is
# session/new, a prompt answered by the replay model, session/close, then session/load of the
# stored session and session/close again. Released agents and closed ACP sessions are freed, so
# the resident set after session 1,000 is within 10% of the one after session 200.
# Usage: tests/churn.sh AGENT [N]
#   CHURN_WRAP="valgrind --leak-check=full ..." runs the agent under it (no RSS check then).
set -u
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
n=${2:-1000}
mark=$((n / 5))
tmp=$(mktemp -d /tmp/acp-churn-XXXXXX)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "churn: FAILED: $*"; echo "--- driver:"; tail -n 3 "$tmp/drv" | cut -c1-200; echo "--- err:"; tail -n 5 "$tmp/err" | cut -c1-300; exit 1; }
mkdir -p "$tmp/state"
# One root script per new session: the Nth root takes the Nth script.
awk -v n="$n" 'BEGIN { printf "{\"version\":1,\"scripts\":["
	for (i = 1; i <= n; i++) printf "%s{\"agent\":\"root\",\"replies\":[{\"text\":\"answer %d\"}]}", (i > 1 ? "," : ""), i
	print "]}" }' > "$tmp/rec.json"
mkfifo "$tmp/in" "$tmp/out"
${CHURN_WRAP:-} "$agent" --model replay --recording "$tmp/rec.json" --state-dir "$tmp/state" \
    < "$tmp/in" > "$tmp/out" 2> "$tmp/err" & pid=$!
# The driver answers each response with the next request; it reads the agent's RSS at the marks.
# mawk reads a pipe in blocks unless told to read it line by line.
drive=awk
awk -W interactive 'BEGIN { }' </dev/null >/dev/null 2>&1 && drive="awk -W interactive"
$drive -v n="$n" -v mark="$mark" -v pid="$pid" -v in_fifo="$tmp/in" -v cwd="$tmp" '
function send(s) { print s > in_fifo; fflush(in_fifo) }
function rss(   line, v) {
	v = ""
	while ((getline line < ("/proc/" pid "/status")) > 0)
		if (line ~ /^VmRSS:/) { split(line, f, " "); v = f[2] }
	close("/proc/" pid "/status")
	return v
}
function req(id, method, params) { send("{\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"" method "\",\"params\":" params "}") }
function sidp() { return "{\"sessionId\":\"" sid "\"" }
function next_session() {
	i++
	if (i > n) { close(in_fifo); done = 1; return }
	req(10 * i + 1, "session/new", "{\"cwd\":\"" cwd "\",\"mcpServers\":[]}")
}
BEGIN { send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}") }
/"method":"session\/update"/ { next }
/"error":/ { print "error response: " substr($0, 1, 200); exit 1 }
!/"result":/ { next }
{
	if (!match($0, /"id":[0-9]+,/)) next
	id = substr($0, RSTART + 5, RLENGTH - 6) + 0
	if (id == 1) { next_session(); next }
	step = id % 10
	if (step == 1) {
		match($0, /"sessionId":"[^"]*"/)
		sid = substr($0, RSTART + 13, RLENGTH - 14)
		req(id + 1, "session/prompt", sidp() ",\"prompt\":[{\"type\":\"text\",\"text\":\"hello\"}]}")
	} else if (step == 2) {
		if ($0 !~ /"stopReason":"end_turn"/) { print "prompt: " substr($0, 1, 200); exit 1 }
		req(id + 1, "session/close", sidp() "}")
	} else if (step == 3) {
		req(id + 1, "session/load", sidp() ",\"cwd\":\"" cwd "\",\"mcpServers\":[]}")
	} else if (step == 4) {
		req(id + 1, "session/close", sidp() "}")
	} else if (step == 5) {
		if (i == mark) print "rss " i " " rss()
		if (i == n) print "rss " i " " rss()
		next_session()
	}
}
END { if (!done) { print "stopped after session " i; exit 1 } }
' "$tmp/out" > "$tmp/drv" || fail "the driver stopped"
wait $pid; status=$?; pid=
[ $status -eq 0 ] || fail "the agent exited $status"
set -- $(awk '$1 == "rss" { printf "%s ", $3 }' "$tmp/drv")
[ $# -eq 2 ] && [ -n "$1" ] && [ -n "$2" ] || fail "no RSS readings"
echo "churn: $n sessions; RSS after $mark: $1 kB, after $n: $2 kB"
if [ -z "${CHURN_WRAP:-}" ] && [ $(($2 * 10)) -gt $(($1 * 11)) ]; then
	fail "RSS grew more than 10% from session $mark to $n ($1 -> $2 kB)"
fi
echo "churn: ok"
