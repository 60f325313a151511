#!/bin/sh
# A grep that would never end by itself can always be stopped (docs/decisions.md, "How a search
# is stopped"): the model greps '^(a*)(a*)(a*)\3\2\1$' over one line of 301 a's (regexec
# backtracks for ever), and once the search burns CPU, each of session/cancel, session/close,
# stdin EOF and SIGTERM must end it: cancel answers the prompt with stopReason "cancelled", close
# answers, EOF and SIGTERM end the agent within 2 s, and the search process is gone every time.
# A last run greps a 64 MiB file with no newline: the result arrives, with the long-line note.
# Usage: tests/grep_hostile.sh AGENT
set -u
. "$(dirname "$0")/lib.sh"
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/acp-grep-hostile-XXXXXX)
pid=
trap 'exec 3>&- 2>/dev/null; [ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "grep_hostile: FAILED: $*"; tail -5 "$tmp/$how/err" 2>/dev/null; exit 1; }
now_ms() { date +%s%3N; }
# The CPU ticks the agent and its children (the search process) have used so far.
ticks() {
	for p in $1 $(pgrep -P "$1"); do
		awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null
	done | awk '{ s += $1 } END { print s + 0 }'
}
# burning PID: waits (20 s at most) until the agent and its children have used 0.2 s of CPU more
# than at the prompt: the search is under way, the regexec running.
burning() {
	_i=0
	while [ "$(ticks "$1")" -lt $((base + 20)) ]; do
		_i=$((_i + 1)); [ $_i -gt 400 ] && return 1
		sleep 0.05
	done
}
# exits_within PID TICKS: the process is gone within TICKS x 50 ms.
exits_within() {
	_i=0
	while kill -0 "$1" 2>/dev/null; do
		_i=$((_i + 1)); [ $_i -gt "$2" ] && return 1
		sleep 0.05
	done
}

printf '%0301d\n' 0 | tr 0 a > "$tmp/line.txt"
cat > "$tmp/rec.json" <<'EOF'
{"version":1,"scripts":[{"agent":"root","replies":[
 {"tool_calls":[{"name":"grep","arguments":{"pattern":"^(a*)(a*)(a*)\\3\\2\\1$","path":"line.txt"}}]},
 {"text":"done"}]}]}
EOF
# start HOW [RECORDING]: an agent in $tmp/HOW/work, initialized, a session open ($sid), a prompt
# sent (id 3).
start() {
	how=$1
	mkdir -p "$tmp/$how/work"
	cp "$tmp/line.txt" "$tmp/$how/work/"
	mkfifo "$tmp/$how/in"
	(cd "$tmp/$how/work" && exec "$agent" --deterministic --model replay --recording "${2:-$tmp/rec.json}" \
		--state-dir "$tmp/$how/state" < "$tmp/$how/in" > "$tmp/$how/out" 2>"$tmp/$how/err") &
	pid=$!
	exec 3>"$tmp/$how/in"
	echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' >&3
	echo "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"$tmp/$how/work\",\"mcpServers\":[]}}" >&3
	wait_for "$tmp/$how/out" '"id":2,"result"' || fail "$how: no session"
	sid=$(sed -n 's/.*"id":2,"result":{"sessionId":"\([^"]*\)".*/\1/p' "$tmp/$how/out")
	base=$(ticks $pid)
	echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}}" >&3
}

report=
for how in cancel close eof sigterm; do
	start $how
	burning $pid || fail "$how: the search never started burning"
	kids=$(pgrep -P $pid)
	t0=$(now_ms)
	case $how in
	cancel)
		echo "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":\"$sid\"}}" >&3
		wait_for "$tmp/$how/out" '"id":3,"result"' 10 || fail "cancel: the prompt was not answered"
		grep -q '"id":3,"result":{"stopReason":"cancelled"' "$tmp/$how/out" ||
			fail "cancel: $(grep '"id":3,' "$tmp/$how/out")"
		report="$report cancel answered in $(($(now_ms) - t0)) ms;"
		exec 3>&-
		wait $pid ;;
	close)
		echo "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"session/close\",\"params\":{\"sessionId\":\"$sid\"}}" >&3
		wait_for "$tmp/$how/out" '"id":4,' 10 || fail "close: no answer"
		report="$report close answered in $(($(now_ms) - t0)) ms;"
		exec 3>&-
		wait $pid ;;
	eof)
		exec 3>&-
		exits_within $pid 40 || fail "eof: the agent still runs 2 s after stdin closed"
		report="$report EOF exit in $(($(now_ms) - t0)) ms;" ;;
	sigterm)
		kill -TERM $pid
		exits_within $pid 40 || fail "sigterm: the agent still runs 2 s after SIGTERM"
		report="$report SIGTERM exit in $(($(now_ms) - t0)) ms;"
		exec 3>&- ;;
	esac
	pid=
	for k in $kids; do
		exits_within "$k" 40 || fail "$how: the search process $k outlived the agent"
	done
done

# A 64 MiB line: the result comes, its first MiB searched, and the note says so.
how=long
cat > "$tmp/rec-long.json" <<'EOF'
{"version":1,"scripts":[{"agent":"root","replies":[
 {"tool_calls":[{"name":"grep","arguments":{"pattern":"needle","path":"big.txt"}}]},
 {"text":"done"}]}]}
EOF
mkdir -p "$tmp/$how/work"
{ printf 'needle'; head -c 67108864 /dev/zero | tr '\0' x; } > "$tmp/$how/work/big.txt"
start $how "$tmp/rec-long.json"
wait_for "$tmp/$how/out" '"id":3,"result"' 30 || fail "long: the prompt was not answered"
grep -q 'searched in its first 1 MiB only; the first: big.txt:1' "$tmp/$how/out" || fail "long: no long-line note"
grep -q '1: needle' "$tmp/$how/out" || fail "long: the hit in the first MiB is missing"
exec 3>&-
wait $pid
pid=
echo "grep_hostile: ok (a backtracking grep stopped by cancel, close, EOF and SIGTERM:$report a 64 MiB line searched, noted)"
