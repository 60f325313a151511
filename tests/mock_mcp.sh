#!/bin/sh
# tests/mock_mcp.c, the scripted MCP server, driven through pipes: initialize echoes the client's
# version, tools/list pages, calls (echo, text, verbatim result, JSON-RPC error, a delay a
# cancel drops, a hang, a crash with its exit code and stderr, list_changed, a request to the
# client), the start misbehaviours, crashLaunches, SIGTERM, and the log of what it received.
# Then the scenario runner's side: {{mcp:<name>}}, mcpLog steps, and a mock left running by
# the agent failing the scenario.  Usage: tests/mock_mcp.sh MOCK_MCP AGENT
# (the runner is the agent's own `scenario run`)
set -u
. "$(dirname "$0")/lib.sh"
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
mock=$(abs "$1")
agent=$(abs "$2")
tmp=$(mktemp -d /tmp/acp-mock-mcp-XXXXXX)
pid=
# Leftovers (a broken runner): a mock-mcp of ours still running, its script under $tmp.
cleanup() {
	[ -n "$pid" ] && kill -9 $pid 2>/dev/null
	for c in /proc/[0-9]*/cmdline; do
		{ tr '\0' ' ' < "$c"; } 2>/dev/null | grep -q "mock-mcp $tmp/" && { p=${c#/proc/}; kill -9 "${p%/cmdline}"; }
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() { echo "mock_mcp: FAILED: $*"; fails=$((fails + 1)); }
ok=0
# has FILE TEXT...: every TEXT (a fixed string) is in FILE.
has() {
	f=$1
	shift
	for t in "$@"; do
		grep -qF -- "$t" "$f" || { fail "$f lacks $t"; sed 's/^/    /' "$f" | head -20; return 1; }
	done
	ok=$((ok + 1))
}
lacks() {
	if grep -qF -- "$2" "$1"; then fail "$1 holds $2"; else ok=$((ok + 1)); fi
}

init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
inited='{"jsonrpc":"2.0","method":"notifications/initialized"}'
call() { echo "{\"jsonrpc\":\"2.0\",\"id\":$1,\"method\":\"tools/call\",\"params\":{\"name\":\"$2\",\"arguments\":${3:-{\}}}}"; }

# run NAME SCRIPT-JSON LINE...: the lines through a pipe; sets rc; NAME.out, NAME.err, NAME.log.
run() {
	name=$1
	printf '%s\n' "$2" > "$tmp/$name.json"
	shift 2
	printf '%s\n' "$@" | MOCK_MCP_LOG="$tmp/$name.log" timeout 10 "$mock" "$tmp/$name.json" \
		> "$tmp/$name.out" 2> "$tmp/$name.err"
	rc=$?
}

# --- handshake, paging, calls, log ---
run basic '{"pageSize": 2,
 "tools": [{"name": "echo", "description": "echoes", "inputSchema": {"type": "object"}},
	   {"name": "fail", "inputSchema": {"type": "object"}},
	   {"name": "rich", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}],
 "calls": {"fail": {"error": {"code": -32000, "message": "it broke"}},
	   "rich": [{"text": "first"}, {"result": {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}], "structuredContent": {"n": 1}, "isError": true}}]}}' \
	"$init" "$inited" \
	'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}' \
	'{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"cursor-2"}}' \
	'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"bogus"}}' \
	"$(call 5 echo '{"a":[1,"x"]}')" "$(call 6 fail)" "$(call 7 rich)" "$(call 8 rich)" "$(call 9 rich)" \
	"$(call 10 nosuch)" '{"jsonrpc":"2.0","id":11,"method":"ping"}' \
	'{"jsonrpc":"2.0","id":12,"method":"resources/list"}' 'not json'
[ $rc -eq 0 ] || fail "basic: exit $rc, not 0 at EOF"
has "$tmp/basic.out" \
	'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"mock-mcp","version":"1.0.0"}}}' \
	'{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"echo","description":"echoes","inputSchema":{"type":"object"}},{"name":"fail","inputSchema":{"type":"object"}}],"nextCursor":"cursor-2"}}' \
	'{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"rich","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]}}' \
	'{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"Invalid cursor"}}' \
	'{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"{\"a\":[1,\"x\"]}"}]}}' \
	'{"jsonrpc":"2.0","id":6,"error":{"code":-32000,"message":"it broke"}}' \
	'{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"first"}]}}' \
	'{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}],"structuredContent":{"n":1},"isError":true}}' \
	'{"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"image"' \
	'{"jsonrpc":"2.0","id":10,"error":{"code":-32602,"message":"Unknown tool: nosuch"}}' \
	'{"jsonrpc":"2.0","id":11,"result":{}}' \
	'{"jsonrpc":"2.0","id":12,"error":{"code":-32601,"message":"Method not found"}}' \
	'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'
[ "$(wc -l < "$tmp/basic.out")" -eq 13 ] || fail "basic: $(wc -l < "$tmp/basic.out") lines out, not 13"
has "$tmp/basic.log" '{"event":"start","launch":1,"pid":' "$init" "$inited" '"params":{"cursor":"cursor-2"}' \
	'{"event":"bad-line","line":"not json"}' '{"event":"stdin-eof"}' '{"event":"exit","code":0}'
[ "$(tail -1 "$tmp/basic.log")" = '{"event":"exit","code":0}' ] || fail "basic: the log does not end with the exit"

# --- the script's own initialize answer, capabilities without tools; a last line without its newline ---
printf '%s\n' '{"protocolVersion": "2024-11-05", "capabilities": {}, "serverInfo": {"name": "s", "version": "2"}, "instructions": "be nice"}' > "$tmp/version.json"
printf '%s' "$init" | "$mock" "$tmp/version.json" > "$tmp/version.out"
has "$tmp/version.out" '"result":{"protocolVersion":"2024-11-05","capabilities":{},"serverInfo":{"name":"s","version":"2"},"instructions":"be nice"}'

# --- start misbehaviours ---
run start '{"start": {"stderr": "warming up\n", "stdout": "Server starting...", "sleepMs": 50}}' "$init"
[ "$(head -1 "$tmp/start.out")" = "Server starting..." ] || fail "start: the first stdout line is not the raw one"
has "$tmp/start.out" '"id":1,"result":{"protocolVersion":"2025-06-18"'
has "$tmp/start.err" 'warming up'
run initerr '{"initialize": {"error": {"code": -32602, "message": "Unsupported protocol version", "data": {"supported": ["2099-01-01"]}}}}' "$init"
has "$tmp/initerr.out" '{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unsupported protocol version","data":{"supported":["2099-01-01"]}}}'
run initexit '{"initialize": {"stderr": "no config\n", "exit": 3}}' "$init" "$inited"
[ $rc -eq 3 ] || fail "initexit: exit $rc, not 3"
[ -s "$tmp/initexit.out" ] && fail "initexit: answered initialize"
has "$tmp/initexit.err" 'no config'
has "$tmp/initexit.log" "$init" '{"event":"exit","code":3}'
lacks "$tmp/initexit.log" 'notifications/initialized'
run inithang '{"initialize": {"hang": true}}' "$init" '{"jsonrpc":"2.0","id":2,"method":"ping"}'
[ $rc -eq 0 ] || fail "inithang: exit $rc"
has "$tmp/inithang.out" '"id":2,"result":{}'
lacks "$tmp/inithang.out" '"id":1'
run initlate '{"protocolVersion": "2025-03-26", "initialize": {"delayMs": 20}}' "$init"
lacks "$tmp/initlate.out" '"id":1'	# EOF came first: a delayed reply is not flushed at exit

# --- a crash mid-call: stderr text, then the exit code ---
run crash '{"tools": [{"name": "t", "inputSchema": {"type": "object"}}], "calls": {"t": [{"text": "fine"}, {"stderr": "segfault, sort of\n", "exit": 139}]}}' \
	"$init" "$inited" "$(call 2 t)" "$(call 3 t)" "$(call 4 t)"
[ $rc -eq 139 ] || fail "crash: exit $rc, not 139"
has "$tmp/crash.out" '"id":2,"result":{"content":[{"type":"text","text":"fine"}]}'
lacks "$tmp/crash.out" '"id":3'
has "$tmp/crash.err" 'segfault, sort of'
[ "$(tail -1 "$tmp/crash.log")" = '{"event":"exit","code":139}' ] || fail "crash: the log does not end with exit 139"
lacks "$tmp/crash.log" '"id":4'

# --- bad scripts exit 2 naming the problem ---
run badkey '{"tool": []}' "$init"
[ $rc -eq 2 ] && has "$tmp/badkey.err" 'the script: unknown key "tool"' || fail "badkey: exit $rc"
run badbeh '{"calls": {"t": [{"text": "a", "echo": true}]}}' "$init"
[ $rc -eq 2 ] && has "$tmp/badbeh.err" 'calls.t: more than one action' || fail "badbeh: exit $rc"
run badlist '{"calls": {"t": {"listChanged": "nope"}}}' "$init"
[ $rc -eq 2 ] && has "$tmp/badlist.err" 'listChanged names no list of toolLists' || fail "badlist: exit $rc"

# --- interactive: stdin stays open (a FIFO) ---
# live NAME SCRIPT-JSON [ENV=VALUE...]: starts the mock on NAME.in; fd 3 writes to it.
live() {
	name=$1
	printf '%s\n' "$2" > "$tmp/$name.json"
	shift 2
	mkfifo "$tmp/$name.in"
	env MOCK_MCP_LOG="$tmp/$name.log" "$@" "$mock" "$tmp/$name.json" < "$tmp/$name.in" \
		> "$tmp/$name.out" 2> "$tmp/$name.err" &
	pid=$!
	exec 3> "$tmp/$name.in"
}
send() { printf '%s\n' "$@" >&3; }
# finish: closes stdin, waits; sets rc.
finish() {
	exec 3>&-
	wait $pid 2>/dev/null
	rc=$?
	pid=
}

# A delayed reply is dropped by notifications/cancelled; stdin is read during the delay (the
# ping is answered first); the next delayed reply, due later, still comes.
live cancel '{"tools": [{"name": "slow", "inputSchema": {"type": "object"}}], "calls": {"slow": [{"delayMs": 400, "text": "A"}, {"delayMs": 500, "text": "B"}]}}'
send "$init" "$inited" "$(call 2 slow)" "$(call 3 slow)" '{"jsonrpc":"2.0","id":4,"method":"ping"}' \
	'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"timeout"}}'
wait_for "$tmp/cancel.out" '"id":3,' 10 || fail "cancel: the second delayed call was not answered"
finish
has "$tmp/cancel.out" '"id":3,"result":{"content":[{"type":"text","text":"B"}]}'
lacks "$tmp/cancel.out" '"id":2,'
[ "$(sed -n 2p "$tmp/cancel.out")" = '{"jsonrpc":"2.0","id":4,"result":{}}' ] || fail "cancel: the ping waited for the delay"
has "$tmp/cancel.log" '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"timeout"}}'

# answerCancelled: the late answer comes anyway; a hang is never answered, even then.
live late '{"answerCancelled": true, "tools": [{"name": "h", "inputSchema": {"type": "object"}}, {"name": "s", "inputSchema": {"type": "object"}}], "calls": {"h": {"hang": true}, "s": {"delayMs": 100}}}'
send "$init" "$(call 2 h)" "$(call 3 s '{"k":1}')" \
	'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}' \
	'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}'
wait_for "$tmp/late.out" '"id":3,' 10 || fail "late: the cancelled call was not answered under answerCancelled"
finish
has "$tmp/late.out" '"id":3,"result":{"content":[{"type":"text","text":"{\"k\":1}"}]}'
lacks "$tmp/late.out" '"id":2,'

# list_changed after the answer, then the new list; a request to the client (ping and an
# unknown one) answered into the call's text.
live change '{"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "toolLists": {"next": [{"name": "b", "inputSchema": {"type": "object"}}]},
 "calls": {"a": {"text": "switching", "listChanged": "next"}, "b": [{"request": {"method": "ping"}}, {"request": {"method": "sampling/createMessage", "params": {"x": 1}}}]}}'
send "$init" "$inited" "$(call 2 a)"
wait_for "$tmp/change.out" 'list_changed' 10 || fail "change: no list_changed"
send '{"jsonrpc":"2.0","id":3,"method":"tools/list"}' "$(call 4 b)"
wait_for "$tmp/change.out" '"id":"mock-1"' 10 || fail "change: no ping to the client"
send '{"jsonrpc":"2.0","id":"mock-1","result":{}}' "$(call 5 b)"
wait_for "$tmp/change.out" '"id":"mock-2"' 10 || fail "change: no second request to the client"
send '{"jsonrpc":"2.0","id":"mock-2","error":{"code":-32601,"message":"Method not found"}}'
wait_for "$tmp/change.out" '"id":5,' 10 || fail "change: the call waiting for the client was not answered"
finish
has "$tmp/change.out" '"id":2,"result":{"content":[{"type":"text","text":"switching"}]}}' \
	'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}' \
	'"id":3,"result":{"tools":[{"name":"b","inputSchema":{"type":"object"}}]}}' \
	'{"jsonrpc":"2.0","id":"mock-1","method":"ping"}' \
	'{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{\"result\":{}}"}]}}' \
	'{"jsonrpc":"2.0","id":"mock-2","method":"sampling/createMessage","params":{"x":1}}' \
	'"id":5,"result":{"content":[{"type":"text","text":"{\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}"}]}}'
[ "$(sed -n 2p "$tmp/change.out")" = '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"switching"}]}}' ] &&
	[ "$(sed -n 3p "$tmp/change.out")" = '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}' ] ||
	fail "change: list_changed did not follow the answer"

# SIGTERM ends the mock by that signal, logged; ignoreSigterm logs it and lives on (SIGKILL
# ends it); stayAfterEof outlives stdin.
live term '{}'
send "$init"
wait_for "$tmp/term.out" '"id":1' 10 || fail "term: no answer"
kill -TERM $pid
finish
[ $rc -eq 143 ] || fail "term: exit status $rc, not 143 (SIGTERM)"
has "$tmp/term.log" '{"event":"sigterm"}'
live stubborn '{"ignoreSigterm": true, "stayAfterEof": true}'
send "$init"
wait_for "$tmp/stubborn.out" '"id":1' 10 || fail "stubborn: no answer"
exec 3>&-
wait_for "$tmp/stubborn.log" 'stdin-eof' 10 || fail "stubborn: EOF not logged"
kill -TERM $pid
wait_for "$tmp/stubborn.log" '"sigterm","ignored":true' 10 || fail "stubborn: the ignored SIGTERM not logged"
kill -0 $pid 2>/dev/null || fail "stubborn: gone after an ignored SIGTERM and EOF"
kill -KILL $pid
wait $pid 2>/dev/null
rc=$?
pid=
[ $rc -eq 137 ] || fail "stubborn: exit status $rc, not 137 (SIGKILL)"
lacks "$tmp/stubborn.log" '"event":"exit"'

# crashLaunches: the first two launches exit 5 at notifications/initialized, the third lives;
# counted in MOCK_MCP_STATE.
mkdir "$tmp/state"
echo '{"crashLaunches": 2, "crashExit": 5}' > "$tmp/flaky.json"
for n in 1 2 3; do
	printf '%s\n' "$init" "$inited" '{"jsonrpc":"2.0","id":2,"method":"ping"}' |
		MOCK_MCP_STATE="$tmp/state" MOCK_MCP_LOG="$tmp/flaky.log" "$mock" "$tmp/flaky.json" > "$tmp/flaky.$n.out" 2>> "$tmp/flaky.err"
	rc=$?
	case $n in
	3) [ $rc -eq 0 ] && has "$tmp/flaky.3.out" '"id":2,"result":{}' || fail "flaky: launch 3 exit $rc" ;;
	*) [ $rc -eq 5 ] && lacks "$tmp/flaky.$n.out" '"id":2' || fail "flaky: launch $n exit $rc, not 5" ;;
	esac
done
has "$tmp/flaky.log" '{"event":"start","launch":3,'
[ "$(grep -c '"event":"exit","code":5' "$tmp/flaky.log")" -eq 2 ] || fail "flaky: not two crashes in the log"
[ "$(cat "$tmp/state/flaky.json.launches")" = 3 ] || fail "flaky: the counter is not 3"
has "$tmp/flaky.err" 'crashing at notifications/initialized'
# Counted beside the log when MOCK_MCP_STATE is unset; crashAt initialize crashes during the handshake.
echo '{"crashLaunches": 1, "crashAt": "initialize"}' > "$tmp/early.json"
printf '%s\n' "$init" | MOCK_MCP_LOG="$tmp/early.log" "$mock" "$tmp/early.json" > "$tmp/early.out" 2>/dev/null
rc=$?
[ $rc -eq 1 ] && [ ! -s "$tmp/early.out" ] && [ "$(cat "$tmp/early.log.launches")" = 1 ] || fail "early: exit $rc"
printf '%s\n' "$init" | "$mock" "$tmp/early.json" > /dev/null 2> "$tmp/early.err"
[ $? -eq 2 ] && has "$tmp/early.err" 'crashLaunches needs MOCK_MCP_STATE or a log' || fail "early: no log, no refusal"

# --- the scenario runner ---
sc=$tmp/scenarios
mkdir -p "$sc"
# scenario NAME SCENARIO-JSON [RECORDING-JSON]: a scenario with mcp/a.json (exits at EOF) and
# mcp/stay.json (outlives its stdin).
scenario() {
	mkdir -p "$sc/$1/mcp"
	echo '{"tools": []}' > "$sc/$1/mcp/a.json"
	echo '{"stayAfterEof": true}' > "$sc/$1/mcp/stay.json"
	printf '%s\n' "$2" > "$sc/$1/scenario.json"
	printf '%s\n' "${3:-$hirec}" > "$sc/$1/recording.json"
}
hirec='{"version":1,"scripts":[{"agent":"root","replies":[{"text":"hi"}]}]}'
hello='{"send": {"method": "initialize", "params": {"protocolVersion": 1}}}'
newsess='{"send": {"method": "session/new", "params": {"cwd": "{{cwd}}", "mcpServers": []}}}'
prompt='{"send": {"method": "session/prompt", "params": {"sessionId": "{{session:1}}", "prompt": [{"type": "text", "text": "go"}]}}}'
# The model starts mock-mcp itself through bash (cwd is <tmp>/work, the log <tmp>/mcp/<name>.log),
# in a session of its own (out of the reach of the tool's group kill), and waits for its start
# line: the runner's log steps and its check for mock-mcp processes left running work without
# MCP in the agent.
# bashrec SCENARIO SCRIPT: the recording that starts mcp/SCRIPT.json of that scenario.
bashrec() {
	echo "{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"tool_calls\":[{\"name\":\"bash\",\"arguments\":{\"command\":\"MOCK_MCP_LOG=../mcp/a.log setsid -f $mock $sc/$1/mcp/$2.json < /dev/null > /dev/null 2>&1; i=0; until grep -q start ../mcp/a.log || [ \$i -gt 1000 ]; do sleep 0.01; i=\$((i + 1)); done\",\"description\":\"start\"}}]},{\"text\":\"started\"}]}]}"
}
scenario subst "{\"mcp\": {\"a\": \"mcp/a.json\"}, \"steps\": [$hello, {\"send\": {\"method\": \"_test/nothing\", \"params\": {\"server\": \"{{mcp:a}}\", \"text\": \"{{mcp:a}} stays\"}}}]}"
scenario unknown-ref "{\"mcp\": {\"a\": \"mcp/a.json\", \"b\": \"mcp/a.json\"}, \"steps\": [$hello, {\"send\": {\"method\": \"x\", \"params\": {\"servers\": [\"{{mcp:zz}}\"]}}}]}"
scenario no-script "{\"mcp\": {\"a\": \"mcp/none.json\"}, \"steps\": [$hello]}"
scenario log-unknown "{\"mcp\": {\"a\": \"mcp/a.json\"}, \"steps\": [{\"mcpLog\": {\"server\": \"zz\", \"contains\": \"x\"}}]}"
scenario log-empty "{\"mcp\": {\"a\": \"mcp/a.json\"}, \"steps\": [{\"mcpLog\": {\"server\": \"a\", \"contains\": \"\"}}]}"
scenario log-timeout "{\"mcp\": {\"a\": \"mcp/a.json\"}, \"steps\": [{\"mcpLog\": {\"server\": \"a\", \"contains\": \"never\", \"timeoutMs\": 100}}]}"
launched="$hello, $newsess, $prompt, {\"mcpLog\": {\"server\": \"a\", \"contains\": \"{\\\"event\\\":\\\"start\\\"\"}}, {\"mcpLog\": {\"server\": \"a\", \"contains\": \"stdin-eof\", \"count\": 1}}"
scenario launched "{\"args\": [\"--permission-mode\", \"full-access\"], \"mcp\": {\"a\": \"mcp/a.json\"}, \"steps\": [$launched, {\"mcpLog\": {\"server\": \"a\", \"contains\": \"exit\", \"lacks\": \"sigterm\"}}]}" "$(bashrec launched a)"
scenario log-count "{\"args\": [\"--permission-mode\", \"full-access\"], \"mcp\": {\"a\": \"mcp/a.json\"}, \"steps\": [$launched, {\"mcpLog\": {\"server\": \"a\", \"contains\": \"stdin-eof\", \"count\": 2, \"timeoutMs\": 100}}]}" "$(bashrec log-count a)"
scenario log-lacks "{\"args\": [\"--permission-mode\", \"full-access\"], \"mcp\": {\"a\": \"mcp/a.json\"}, \"steps\": [$launched, {\"mcpLog\": {\"server\": \"a\", \"lacks\": \"stdin-eof\"}}]}" "$(bashrec log-lacks a)"
scenario orphan "{\"args\": [\"--permission-mode\", \"full-access\"], \"mcp\": {\"a\": \"mcp/stay.json\"}, \"steps\": [$launched]}" "$(bashrec orphan stay)"
mkdir "$tmp/run"
for n in subst unknown-ref no-script log-unknown log-empty log-timeout launched log-count log-lacks orphan; do
	SCENARIO_TMPDIR=$tmp/run "$agent" scenario run --mock-mcp "$mock" --update --traces "$tmp/traces" "$sc/$n" \
		> "$tmp/runner.$n.out" 2> "$tmp/runner.$n.err"
	echo $? > "$tmp/runner.$n.rc"
done
expect_pass() {
	[ "$(cat "$tmp/runner.$1.rc")" = 0 ] && ok=$((ok + 1)) || { fail "runner: $1 failed"; cat "$tmp/runner.$1.err"; }
}
expect_fail() {
	n=$1
	shift
	[ "$(cat "$tmp/runner.$n.rc")" = 1 ] || fail "runner: $n did not fail"
	has "$tmp/runner.$n.err" "FAIL $n: $*"
}
expect_pass subst
has "$tmp/traces/subst.trace" "\"params\":{\"server\":{\"name\":\"a\",\"command\":\"$mock\",\"args\":[\"$sc/subst/mcp/a.json\"],\"env\":[{\"name\":\"MOCK_MCP_LOG\",\"value\":\"$tmp/run/acp-scenario-subst-" \
	'/mcp/a.log"}]},"text":"{{mcp:a}} stays"}'
expect_fail unknown-ref '{{mcp:zz}}: the scenario'"'"'s "mcp" has no server "zz" (it has: a, b)'
[ -s "$tmp/traces/unknown-ref.trace" ] && fail "runner: unknown-ref started the agent"
expect_fail no-script "mcp server \"a\": $sc/no-script/mcp/none.json: No such file or directory"
expect_fail log-unknown 'mcpLog: the scenario'"'"'s "mcp" has no server "zz"'
expect_fail log-empty 'mcpLog a: the step needs a non-empty "contains" or a "lacks"'
expect_fail log-timeout "mcpLog a: \"never\" seen 0 time(s), not 1, within 100 ms (log: $tmp/run/acp-scenario-log-timeout-"
expect_pass launched
expect_fail log-count 'mcpLog a: "stdin-eof" seen 1 time(s), not 2, within 100 ms'
expect_fail log-lacks 'mcpLog a: "stdin-eof" is in the log'
expect_fail orphan 'mcp server "a": mock-mcp pid '
has "$tmp/runner.orphan.err" 'outlived the agent'
left=$(sed -n 's/.*mock-mcp pid \([0-9]*\) outlived.*/\1/p' "$tmp/runner.orphan.err")
# killed and gone (a zombie waiting for init has no cmdline)
[ -n "$left" ] && ! { tr '\0' ' ' < "/proc/$left/cmdline"; } 2>/dev/null | grep -q mock-mcp ||
	fail "runner: the orphan $left was not killed"
# Without --mock-mcp: mock-mcp beside the runner (the agent).
if [ -x "$(dirname "$agent")/mock-mcp" ]; then
	SCENARIO_TMPDIR=$tmp/run "$agent" scenario run --update --traces "$tmp/traces2" "$sc/subst" > /dev/null 2>&1 &&
		has "$tmp/traces2/subst.trace" "\"command\":\"$(cd "$(dirname "$agent")" && pwd -P)/mock-mcp\"" ||
		fail "runner: the default mock-mcp"
fi

[ $fails -eq 0 ] || { echo "mock_mcp: $fails failure(s) ($ok checks passed)"; exit 1; }
echo "mock_mcp: ok ($ok checks: handshake, paging, calls, cancel, list_changed, server requests, start misbehaviours, crashes, signals, the log; the runner's {{mcp:<name>}}, mcpLog and orphan check)"
