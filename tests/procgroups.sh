#!/bin/sh
# Every process group the bash tool starts is gone after the agent's stdin closes, after SIGTERM,
# after SIGHUP, and after session/close (docs/contract.md §16.3): a background job (`sleep`) and a foreground
# command that left a grandchild behind (`sleep 300 & sleep 300`) each write their group id to a
# file first. With MOCK_MCP, a kill -9 of the agent too: its guardian kills them all, and an MCP
# server's child.  Usage: tests/procgroups.sh AGENT [MOCK_MCP]
set -u
. "$(dirname "$0")/lib.sh"
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mock=
[ $# -ge 2 ] && mock=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
tmp=$(mktemp -d /tmp/acp-procgroups-XXXXXX)
pid=
trap 'kill -9 $pid 2>/dev/null; for f in "$tmp"/*/work/pg.*; do [ -f "$f" ] && kill -9 -"$(cat "$f")" 2>/dev/null; done; rm -rf "$tmp"' EXIT
fail() { echo "procgroups: FAILED: $*"; ps -eo pid,pgid,ppid,stat,cmd | awk -v a="${job:-x}" -v b="${fg:-x}" '$2 == a || $2 == b'; tail -5 "$tmp/$how/err" 2>/dev/null; exit 1; }
# The model starts a background job, then a foreground command that never ends by itself.
cat > "$tmp/rec.json" <<'EOF'
{"version":1,"scripts":[{"agent":"root","replies":[
 {"tool_calls":[{"name":"bash","arguments":{"command":"echo $$ > pg.job; exec sleep 300","description":"job","run_in_background":true}}]},
 {"tool_calls":[{"name":"bash","arguments":{"command":"echo $$ > pg.fg; sleep 300 & sleep 300","description":"hang"}}]},
 {"text":"never reached"}]}]}
EOF
gone() { ! kill -0 -"$1" 2>/dev/null; }
checks=0
# start HOW [SERVERS]: an agent in $tmp/HOW/work (the mcpServers SERVERS, default none), a
# session open ($sid), "go" prompted, and its job and foreground command running.
start() {
	how=$1
	mkdir -p "$tmp/$how/work"
	mkfifo "$tmp/$how/in"
	(cd "$tmp/$how/work" && exec "$agent" --deterministic --permission-mode full-access --model replay \
		--recording "$tmp/rec.json" --state-dir "$tmp/$how/state" < "$tmp/$how/in" > "$tmp/$how/out" \
		2>"$tmp/$how/err") &
	pid=$!
	exec 3>"$tmp/$how/in"
	echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' >&3
	echo "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"$tmp/$how/work\",\"mcpServers\":[${2:-}]}}" >&3
	wait_for "$tmp/$how/out" '"id":2,"result"' || fail "$how: no session"
	sid=$(sed -n 's/.*"id":2,"result":{"sessionId":"\([^"]*\)".*/\1/p' "$tmp/$how/out")
	echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}}" >&3
	wait_for "$tmp/$how/work/pg.fg" . || fail "$how: the foreground command did not start"
	wait_for "$tmp/$how/work/pg.job" . || fail "$how: the job did not start"
}
for how in eof sigterm sighup close; do
	start $how
	job=$(cat "$tmp/$how/work/pg.job"); fg=$(cat "$tmp/$how/work/pg.fg")
	kill -0 -"$job" 2>/dev/null && kill -0 -"$fg" 2>/dev/null || fail "$how: the groups are not running"
	case $how in
	eof) exec 3>&- ;;
	sigterm) kill -TERM $pid ;;
	sighup) kill -HUP $pid ;;
	close) echo "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"session/close\",\"params\":{\"sessionId\":\"$sid\"}}" >&3
		wait_for "$tmp/$how/out" '"id":4,' || fail "close: no answer"
		i=0; while ! { gone "$job" && gone "$fg"; } && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
		gone "$job" || fail "close: the job's group $job outlived session/close"
		gone "$fg" || fail "close: the command's group $fg outlived session/close"
		exec 3>&- ;;
	esac
	wait $pid
	pid=
	gone "$job" || fail "$how: the job's group $job outlived the agent"
	gone "$fg" || fail "$how: the command's group $fg (and its grandchild) outlived the agent"
	checks=$((checks + 1))
done

# kill -9 of the agent: nothing can run in it, so its guardian (base/guard.h) kills every group it
# had started: the job, the command and its grandchild, and an MCP server's own child.
if [ -n "$mock" ]; then
	printf '{"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}\n' > "$tmp/mcp.json"
	start kill9 "{\"name\":\"m\",\"command\":\"sh\",\"args\":[\"-c\",\"sleep 300 & echo \$\$ > pg.mcp; exec $mock $tmp/mcp.json\"],\"env\":[]}"
	wait_for "$tmp/$how/work/pg.mcp" . || fail "$how: the MCP server did not start"
	job=$(cat "$tmp/$how/work/pg.job"); fg=$(cat "$tmp/$how/work/pg.fg"); mcp=$(cat "$tmp/$how/work/pg.mcp")
	kill -0 -"$job" 2>/dev/null && kill -0 -"$fg" 2>/dev/null && kill -0 -"$mcp" 2>/dev/null ||
		fail "$how: the groups are not running"
	kill -9 $pid
	wait $pid 2>/dev/null
	pid=
	exec 3>&-
	# the guardian acts when it reads the end of its pipe: wait for that event's effect
	i=0; while ! { gone "$job" && gone "$fg" && gone "$mcp"; } && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	gone "$job" || fail "kill -9: the job's group $job outlived the agent"
	gone "$fg" || fail "kill -9: the command's group $fg (its grandchild) outlived the agent"
	gone "$mcp" || fail "kill -9: the MCP server's group $mcp (its child) outlived the agent"
	checks=$((checks + 1))
fi
echo "procgroups: ok (a job and a command with a grandchild gone after stdin EOF, SIGTERM, SIGHUP, session/close${mock:+ and kill -9 (an MCP server's child too)}: $checks runs)"
