#!/bin/sh
# The crash loop (seeded, reproducible): a subagent-heavy conversation is killed at a random point
# (SIGKILL after a random delay, or _exit right after the n-th event of a random type), restarted
# on the same state directory, and judged by state-check plus the /agents listing.
# With MOCK_MCP, CRASH_MCP_ITERATIONS more run a session with one or two mock-mcp stdio servers
# whose model calls their tools; after each kill no mock-mcp of the iteration may be left, running
# or a zombie, within 2 s (the servers die with the agent: PR_SET_PDEATHSIG; they ignore stdin EOF,
# one ignores SIGTERM), and the log is judged the same way.
# CRASH_WT_ITERATIONS more kill a background child in its own git worktree anywhere in its life
# (made, written, committed, removed) and check that a restart leaves nothing of it behind.
# CRASH_DELETE_ITERATIONS more cut a session/delete and check that the tree is whole or gone.
# Usage: tests/crash_loop.sh AGENT STATE_CHECK [MOCK_MCP]   (CRASH_SEED, CRASH_ITERATIONS,
# CRASH_WT_ITERATIONS, CRASH_DELETE_ITERATIONS, CRASH_MCP_ITERATIONS)
set -u
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
check=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
mock=
[ $# -ge 3 ] && mock=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
seed=${CRASH_SEED:-1}
iterations=${CRASH_ITERATIONS:-50}
mcp_iterations=${CRASH_MCP_ITERATIONS:-12}
tmp=$(mktemp -d /tmp/acp-crash-XXXXXX)
trap '[ -n "${CRASH_KEEP:-}" ] && echo "crash-loop: kept $tmp" || rm -rf "$tmp"' EXIT
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
kills=0; faults=0; survived=0; checked=0; failed=0; turns=0; notices=0; announced=0
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
		# Every other restart is a client that shows children as sessions (docs/contract.md §22).
		caps='{}'; [ $((i % 2)) -eq 1 ] && caps='{"subagents":{}}'
		printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,\"clientCapabilities\":$caps}}" \
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
		# Every child announced to the model is listed; a client that shows children hears of each
		# before anything carries its id (the first line naming it announces it), and what it got
		# is kept for the schema check below.
		for id in $(grep -o 'started subagent [0-9a-f-]*' "$dir/state/sessions/$root.jsonl" | sort -u | cut -d' ' -f3); do
			grep '"id":4' "$dir/out2" >/dev/null && grep "agent_message_chunk" "$dir/out2" | grep -q "$id" ||
				{ echo "crash-loop: iteration $i ($plan): /agents does not list $id"; failed=$((failed + 1)); }
			[ "$caps" = '{}' ] && continue
			grep -m1 "\"sessionId\":\"$id\"" "$dir/out2" | grep -q '"sessionUpdate":"subagent_update","sessionId":"'"$id"'","title"' ||
				{ echo "crash-loop: iteration $i ($plan): $id was named before it was announced"; failed=$((failed + 1)); }
		done
		if [ "$caps" != '{}' ]; then
			mkdir -p "$tmp/traces"
			sed 's/^/<< /' "$dir/out2" > "$tmp/traces/run$i.trace"
			announced=$((announced + $(grep -c '"sessionUpdate":"subagent_update","sessionId":"[^"]*","title"' "$dir/out2")))
		fi
	fi
	[ $failed -eq 0 ] && rm -rf "$dir"
	i=$((i + 1))
done
# The loads of the clients that show children, against the ACP schema with the 2026-11-20
# stabilizations (when make schema-check installed its validator; said either way).
valid="not schema-checked (no build/acp-schema)"
schema=$(cd "$(dirname "$0")/.." && pwd)/build/acp-schema
if [ -d "$tmp/traces" ] && [ -d "$schema/node_modules/ajv" ] && command -v node >/dev/null 2>&1; then
	cp "$(dirname "$0")/acp-schema/validate.mjs" "$(dirname "$0")/acp-schema/stabilized.mjs" "$schema/"
	if out=$(node "$schema/validate.mjs" "$tmp/traces" 2>&1); then
		valid="valid: $(echo "$out" | tail -n 1 | sed 's/^acp schema check: //; s/ (.*//')"
	else
		echo "$out" | tail -n 5; echo "crash-loop: the loads with children as sessions are not valid"; failed=$((failed + 1))
	fi
fi
echo "crash-loop: seed $seed, $iterations iterations: $kills SIGKILLs, $faults fault exits, $survived ran to the end; $checked restarts checked, $turns answered turns and $notices notices verified; $announced children announced on loads that show them, $valid; $failed lost or broken"

# --- isolated children: a worktree killed anywhere in its life ---
# A background child in its own worktree of a repository the loop makes writes a file; the agent
# is killed (SIGKILL after a random delay, or _exit after an event of the worktree's life) and
# restarted on the root. After the restart, nothing of the worktree may be left: no directory or
# claim under <state>/worktrees, git lists the repository's own worktree only, every acp-agent/
# branch left holds a commit (one without is deleted), and the user's tree is as it was.
wfailed=0; wkills=0; wfaults=0; wmade=0; wbranches=0; wchecked=0
if command -v git >/dev/null 2>&1; then
wtypes="subagent/descriptor worktree/created tool/result worktree/committed worktree/removed subagent/settled turn/end"
# odd iterations: a background child; even: a foreground one (one-shot: its parent's call waits)
for bg in true false; do
cat > "$tmp/wrec-$bg.json" <<REC
{"version": 1, "scripts": [
 {"agent": "root", "replies": [
  {"tool_calls": [{"name": "subagent", "arguments": {"description": "iso", "prompt": "Write new.txt.", "isolation": "worktree", "run_in_background": $bg}}]},
  {"text": "Started it."}, {"text": "noted 1"}, {"text": "noted 2"}, {"text": "noted 3"}, {"text": "noted 4"}]},
 {"agent": "label:iso", "replies": [
  {"tool_calls": [{"name": "write", "arguments": {"file_path": "new.txt", "content": "child\\n"}}]},
  {"text": "iso done"}, {"text": "again"}]}]}
REC
done
i=1
while [ $i -le "${CRASH_WT_ITERATIONS:-16}" ]; do
	plan=$(awk -v s=$((seed * 1000 + 800 + i)) -v types="$wtypes" 'BEGIN { srand(s); n = split(types, t, " ");
		r = rand(); printf "%s %d %s\n", (r < 0.4 ? "kill" : r < 0.8 ? "fault" : "made"), int(rand() * 400), t[int(rand() * n) + 1] }')
	set -- $plan
	mode=$1; delay=$2; ftype=$3
	dir="$tmp/wt$i"; repo="$dir/repo"; mkdir -p "$repo"
	rec="$tmp/wrec-$([ $((i % 2)) -eq 1 ] && echo true || echo false).json"
	(cd "$repo" && git init -q && echo base > README && git add README &&
		git -c user.name=u -c user.email=u@u commit -q -m base) || { echo "crash-loop: cannot make a repository"; exit 1; }
	rm -f "$dir/in"; mkfifo "$dir/in"
	# made: the exit comes between git's add and the child's first log line (the claim's case)
	case $mode in fault) env="exit-after-event:$ftype:1" ;; made) env=exit-after-worktree ;; *) env="" ;; esac
	ACP_AGENT_FAULTS=$env "$agent" --deterministic --model replay --recording "$rec" \
		--state-dir "$dir/state" < "$dir/in" > "$dir/out1" 2>"$dir/err1" &
	pid=$!
	exec 3>"$dir/in"
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"$repo\",\"mcpServers\":[]}}" \
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$root\",\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}}" \
		'{"jsonrpc":"2.0","id":4,"method":"_acp_agent/wait_idle","params":{"timeoutMs":20000}}' >&3 2>/dev/null
	# stdin stays open until the kill, the fault's exit or the run's idle: its EOF would be a
	# shutdown, which is not what this loop tests
	if [ "$mode" = kill ]; then
		sleep "0.$(printf '%03d' "$delay")"
		kill -9 $pid 2>/dev/null && wkills=$((wkills + 1))
	else
		t=0; while [ $t -lt 1000 ] && kill -0 $pid 2>/dev/null && ! grep -q '"id":4,"result"' "$dir/out1" 2>/dev/null; do
			sleep 0.02; t=$((t + 1)); done
	fi
	exec 3>&-
	{ wait $pid; } 2>/dev/null; rc=$?
	[ "$mode" != kill ] && [ $rc -eq 3 ] && wfaults=$((wfaults + 1))
	[ "$mode" = made ] && [ $rc -eq 3 ] && wmade=$((wmade + 1))
	if [ -f "$dir/state/sessions/$root.jsonl" ]; then
		# the restart's stdin, too, stays open until it is idle (the settlement and the notice's turn done)
		rm -f "$dir/in2"; mkfifo "$dir/in2"
		"$agent" --deterministic --model replay --recording "$rec" --state-dir "$dir/state" \
			< "$dir/in2" > "$dir/out2" 2>"$dir/err2" &
		pid=$!
		exec 3>"$dir/in2"
		printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
			"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$root\",\"cwd\":\"$repo\",\"mcpServers\":[]}}" \
			'{"jsonrpc":"2.0","id":3,"method":"_acp_agent/wait_idle","params":{"timeoutMs":20000}}' >&3 2>/dev/null
		t=0; while [ $t -lt 1000 ] && kill -0 $pid 2>/dev/null && ! grep -q '"id":3,"result"' "$dir/out2" 2>/dev/null; do
			sleep 0.02; t=$((t + 1)); done
		exec 3>&-
		{ wait $pid; } 2>/dev/null
		grep -q '"id":2,"result":{"modes"' "$dir/out2" || { echo "crash-loop: worktree iteration $i ($plan): the root did not load"; wfailed=$((wfailed + 1)); }
		if ! "$check" "$dir/state" $root "$dir/out1" > "$dir/check"; then
			echo "crash-loop: worktree iteration $i ($plan):"; cat "$dir/check"; wfailed=$((wfailed + 1))
		fi
	else
		# the root never published: a start-up alone must sweep what the kill left
		printf '' | "$agent" --deterministic --model replay --recording "$rec" --state-dir "$dir/state" \
			> "$dir/out2" 2>"$dir/err2"
	fi
	wchecked=$((wchecked + 1))
	left=$(ls -A "$dir/state/worktrees" 2>/dev/null)
	[ -z "$left" ] || { echo "crash-loop: worktree iteration $i ($plan): left in worktrees/: $left"; wfailed=$((wfailed + 1)); }
	n=$(cd "$repo" && git worktree list --porcelain | grep -c '^worktree ')
	[ "$n" = 1 ] || { echo "crash-loop: worktree iteration $i ($plan): git lists $n worktrees"; wfailed=$((wfailed + 1)); }
	for b in $(cd "$repo" && git for-each-ref --format='%(refname:short)' 'refs/heads/acp-agent/'); do
		c=$(cd "$repo" && git rev-list --count "HEAD..$b")
		[ "$c" -ge 1 ] && wbranches=$((wbranches + 1)) ||
			{ echo "crash-loop: worktree iteration $i ($plan): branch $b has no commit"; wfailed=$((wfailed + 1)); }
	done
	st=$(cd "$repo" && git status --porcelain)
	[ -z "$st" ] || { echo "crash-loop: worktree iteration $i ($plan): the user's tree changed: $st"; wfailed=$((wfailed + 1)); }
	[ $wfailed -eq 0 ] && rm -rf "$dir"
	i=$((i + 1))
done
echo "crash-loop: ${CRASH_WT_ITERATIONS:-16} iterations with an isolated child: $wkills SIGKILLs, $wfaults fault exits ($wmade between the worktree and the child's log); $wchecked restarts checked, $wbranches branches with the child's commit; $wfailed with a worktree, claim or empty branch left, or the user's tree changed"
else
	echo "crash-loop: no git: the isolated-child iterations did not run"
fi
failed=$((failed + wfailed))

# --- session/delete: killed anywhere in a deletion ---
# A root with a background child and an isolated one is deleted; the agent is SIGKILLed after a
# random delay or exits at exit-in-delete (the root's log gone, the rest not). After a restart
# (which finishes what a tombstone names), the tree is whole (the root listed, every log there) or
# gone (not listed; no log, tombstone, spill directory or worktree of it left), never half.
dfailed=0; dkills=0; dfaults=0; dwhole=0; dgone=0
if command -v git >/dev/null 2>&1; then
cat > "$tmp/drec.json" <<'REC'
{"version": 1, "scripts": [
 {"agent": "root", "replies": [
  {"tool_calls": [{"name": "bash", "arguments": {"command": "echo spill", "description": "Echo"}},
                  {"name": "subagent", "arguments": {"description": "plain", "prompt": "Hi."}},
                  {"name": "subagent", "arguments": {"description": "iso", "prompt": "Write.", "isolation": "worktree"}}]},
  {"text": "started"}, {"text": "noted 1"}, {"text": "noted 2"}, {"text": "noted 3"}]},
 {"agent": "label:plain", "replies": [{"text": "hi"}]},
 {"agent": "label:iso", "replies": [{"tool_calls": [{"name": "write", "arguments": {"file_path": "w.txt", "content": "w\n"}}]}, {"text": "wrote"}]}]}
REC
i=1
while [ $i -le "${CRASH_DELETE_ITERATIONS:-8}" ]; do
	plan=$(awk -v s=$((seed * 1000 + 900 + i)) 'BEGIN { srand(s); printf "%s %d\n", (rand() < 0.6 ? "kill" : "fault"), int(rand() * 60) }')
	set -- $plan
	mode=$1; delay=$2
	dir="$tmp/del$i"; repo="$dir/repo"; mkdir -p "$repo"
	(cd "$repo" && git init -q && echo base > README && git add README &&
		git -c user.name=u -c user.email=u@u commit -q -m base) || { echo "crash-loop: cannot make a repository"; exit 1; }
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"$repo\",\"mcpServers\":[]}}" \
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$root\",\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}}" \
		'{"jsonrpc":"2.0","id":4,"method":"_acp_agent/wait_idle","params":{"timeoutMs":20000}}' > "$dir/make.in"
	rm -f "$dir/in"; mkfifo "$dir/in"
	"$agent" --deterministic --permission-mode full-access --model replay --recording "$tmp/drec.json" \
		--state-dir "$dir/state" < "$dir/in" > "$dir/out0" 2>"$dir/err0" &
	pid=$!
	exec 3>"$dir/in"
	cat "$dir/make.in" >&3
	t=0; while [ $t -lt 1000 ] && ! grep -q '"id":4,"result"' "$dir/out0" 2>/dev/null; do sleep 0.02; t=$((t + 1)); done
	exec 3>&-
	wait $pid
	ids=$(ls "$dir/state/sessions" | sed -n 's/\.jsonl$//p')
	if [ "$mode" = fault ]; then env=exit-in-delete; else env=""; fi
	rm -f "$dir/in"; mkfifo "$dir/in"
	ACP_AGENT_FAULTS=$env "$agent" --deterministic --model replay --recording "$tmp/drec.json" \
		--state-dir "$dir/state" < "$dir/in" > "$dir/out1" 2>"$dir/err1" &
	pid=$!
	exec 3>"$dir/in"
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/delete\",\"params\":{\"sessionId\":\"$root\"}}" >&3
	if [ "$mode" = kill ]; then
		sleep "0.0$(printf '%02d' "$delay")"
		kill -9 $pid 2>/dev/null && dkills=$((dkills + 1))
	fi
	t=0; while [ $t -lt 500 ] && kill -0 $pid 2>/dev/null && ! grep -q '"id":2,' "$dir/out1" 2>/dev/null; do sleep 0.02; t=$((t + 1)); done
	exec 3>&-
	{ wait $pid; } 2>/dev/null; rc=$?
	[ "$mode" = fault ] && [ $rc -eq 3 ] && dfaults=$((dfaults + 1))
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
		'{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}' |
		"$agent" --deterministic --model replay --recording "$tmp/drec.json" --state-dir "$dir/state" > "$dir/out2" 2>"$dir/err2"
	if grep '"id":2,"result"' "$dir/out2" | grep -q "$root"; then
		dwhole=$((dwhole + 1))
		for id in $ids; do
			[ -f "$dir/state/sessions/$id.jsonl" ] || { echo "crash-loop: delete iteration $i ($plan): listed, but $id is gone"; dfailed=$((dfailed + 1)); }
		done
	else
		dgone=$((dgone + 1))
		left=$(cd "$dir/state" && for id in $ids; do ls -d "sessions/$id.jsonl" "spill/$id" "worktrees/$id" 2>/dev/null; done; ls -A sessions | grep deleting)
		[ -z "$left" ] || { echo "crash-loop: delete iteration $i ($plan): not listed, but left: $left"; dfailed=$((dfailed + 1)); }
		n=$(cd "$repo" && git worktree list --porcelain | grep -c '^worktree ')
		[ "$n" = 1 ] || { echo "crash-loop: delete iteration $i ($plan): git lists $n worktrees"; dfailed=$((dfailed + 1)); }
	fi
	[ $dfailed -eq 0 ] && rm -rf "$dir"
	i=$((i + 1))
done
echo "crash-loop: ${CRASH_DELETE_ITERATIONS:-8} deletions cut: $dkills SIGKILLs, $dfaults fault exits; $dwhole trees whole after the restart, $dgone gone; $dfailed half-deleted"
fi
failed=$((failed + dfailed))
[ -n "$mock" ] || { [ $failed -eq 0 ]; exit; }

# --- MCP servers: killed with the agent ---
# What is left of the mock-mcp processes of dir, one "<pid> <what>" line each: the live ones
# (pgrep -f on the iteration's own script paths) and the zombies (state Z in /proc, by the pids the
# mocks logged at launch) with their parent. A zombie of pid 1 is dead and init's to reap (some
# inits reap orphans only every second or two); a zombie of any other parent was not reaped by it.
mcp_left() {
	for s in "$1"/alpha.json "$1"/beta.json; do
		[ -f "$s" ] && pgrep -f "$s" | sed 's/$/ running/'
	done
	for p in $(cat "$1"/*.log 2>/dev/null | sed -n 's/^{"event":"start",.*"pid":\([0-9]*\)}$/\1/p'); do
		sed -n 's/^\([0-9]*\) (mock-mcp) Z \([0-9]*\) .*/\1 zombie of \2/p' "/proc/$p/stat" 2>/dev/null
	done
}
mtypes="mcp/server tool/call tool/result step/end"
mkills=0; mfaults=0; mrunning=0; mcalls=0; mended=0; minit=0; mchecked=0; mfailed=0
i=1
while [ $i -le $mcp_iterations ]; do
	plan=$(awk -v s=$((seed * 1000 + 500 + i)) -v types="$mtypes" 'BEGIN { srand(s); n = split(types, t, " ");
		printf "%s %d %d %s %d %d\n", (rand() < 0.7 ? "kill" : "fault"), int(rand() * 600), int(rand() * 2) + 1,
			t[int(rand() * n) + 1], int(rand() * 2) + 1, int(rand() * 100) + 50 }')
	set -- $plan
	mode=$1; delay=$2; nsrv=$3; ftype=$4; fn=$5; callms=$6
	dir="$tmp/mcp$i"; mkdir -p "$dir"
	rm -f "$dir/in"; mkfifo "$dir/in"
	# alpha echoes after callms; beta (the second server) answers later and ignores SIGTERM.
	printf '%s\n' "{\"tools\": [{\"name\": \"echo\", \"inputSchema\": {\"type\": \"object\"}}], \"calls\": {\"echo\": {\"delayMs\": $callms, \"echo\": true}}, \"log\": \"alpha.log\", \"stayAfterEof\": true}" > "$dir/alpha.json"
	servers="{\"name\":\"alpha\",\"command\":\"$mock\",\"args\":[\"$dir/alpha.json\"],\"env\":[]}"
	calls='{"name": "mcp__alpha__echo", "arguments": {"msg": "one"}}'
	if [ "$nsrv" = 2 ]; then
		printf '%s\n' "{\"tools\": [{\"name\": \"slow\"}], \"calls\": {\"slow\": {\"delayMs\": $((callms * 2)), \"text\": \"slow done\"}}, \"log\": \"beta.log\", \"stayAfterEof\": true, \"ignoreSigterm\": true}" > "$dir/beta.json"
		servers="$servers,{\"name\":\"beta\",\"command\":\"$mock\",\"args\":[\"$dir/beta.json\"],\"env\":[{\"name\":\"CRASH_ITERATION\",\"value\":\"$i\"}]}"
		calls="$calls, {\"name\": \"mcp__beta__slow\", \"arguments\": {}}"
	fi
	printf '%s\n' "{\"version\": 1, \"scripts\": [{\"agent\": \"root\", \"replies\": [{\"tool_calls\": [$calls]}, {\"tool_calls\": [{\"name\": \"mcp__alpha__echo\", \"arguments\": {\"msg\": \"two\"}}]}, {\"text\": \"echoed\"}]}]}" > "$dir/rec.json"
	if [ "$mode" = fault ]; then env="exit-after-event:$ftype:$fn"; else env=""; fi
	ACP_AGENT_FAULTS=$env "$agent" --deterministic --permission-mode full-access --model replay --recording "$dir/rec.json" \
		--state-dir "$dir/state" < "$dir/in" > "$dir/out1" 2>"$dir/err1" &
	pid=$!
	exec 3>"$dir/in"
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"/tmp\",\"mcpServers\":[$servers]}}" \
		"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$root\",\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}}" >&3 2>/dev/null
	# kill: SIGKILL after the delay; fault: the agent exits after that event (SIGKILL at 0.6 s if it
	# never comes).
	if [ "$mode" = kill ]; then
		sleep "0.$(printf '%03d' "$delay")"
	else
		t=0; while [ $t -lt 30 ] && kill -0 $pid 2>/dev/null; do sleep 0.02; t=$((t + 1)); done
	fi
	mrunning=$((mrunning + $(mcp_left "$dir" | grep -c running)))
	kill -9 $pid 2>/dev/null && mkills=$((mkills + 1))
	exec 3>&-
	{ wait $pid; } 2>/dev/null; rc=$?
	[ "$mode" = fault ] && [ $rc -eq 3 ] && mfaults=$((mfaults + 1))
	grep -q '"method":"tools/call"' "$dir"/*.log 2>/dev/null && mcalls=$((mcalls + 1))
	grep -q '"id":3,"result"' "$dir/out1" && mended=$((mended + 1))	# killed idle, the turn done
	t=0; while [ $t -lt 100 ] && [ -n "$(mcp_left "$dir" | grep -v ' zombie of 1$')" ]; do sleep 0.02; t=$((t + 1)); done
	left=$(mcp_left "$dir")
	minit=$((minit + $(echo "$left" | grep -c ' zombie of 1$')))
	left=$(echo "$left" | grep -v ' zombie of 1$')
	if [ -n "$left" ]; then
		echo "crash-loop: mcp iteration $i ($plan): mock-mcp left 2 s after the agent died: $left"
		for p in $(echo "$left" | cut -d' ' -f1); do kill -9 "$p" 2>/dev/null; done
		mfailed=$((mfailed + 1))
	fi
	if [ -f "$dir/state/sessions/$root.jsonl" ]; then
		printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
			"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/load\",\"params\":{\"sessionId\":\"$root\",\"cwd\":\"/tmp\",\"mcpServers\":[]}}" \
			'{"jsonrpc":"2.0","id":3,"method":"_acp_agent/wait_idle","params":{"timeoutMs":5000}}' |
			"$agent" --deterministic --model replay --recording "$dir/rec.json" --state-dir "$dir/state" > "$dir/out2" 2>"$dir/err2"
		mchecked=$((mchecked + 1))
		grep -q '"id":2,"result":{"modes"' "$dir/out2" || { echo "crash-loop: mcp iteration $i ($plan): the root did not load"; mfailed=$((mfailed + 1)); }
		if ! "$check" "$dir/state" $root "$dir/out1" > "$dir/check"; then
			echo "crash-loop: mcp iteration $i ($plan):"; cat "$dir/check"; mfailed=$((mfailed + 1))
		fi
	fi
	[ $mfailed -eq 0 ] && rm -rf "$dir"
	i=$((i + 1))
done
echo "crash-loop: $mcp_iterations iterations with MCP servers: $mkills SIGKILLs, $mfaults fault exits, $mrunning servers running at the kill, $mcalls with a tools/call sent, $mended after the turn, $minit dead ones init had not reaped yet; $mchecked restarts checked; $mfailed with servers left or logs broken"
[ $failed -eq 0 ] && [ $mfailed -eq 0 ]
