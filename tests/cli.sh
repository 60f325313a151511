#!/bin/sh
# The command line (docs/contract.md §2, §20): --help and -h name every option and every environment variable
# the sources read, with its default; each bad setting gets one line on stderr that names what was
# wrong, and exit 2; a signal during start-up still ends the process in order.
# Usage: tests/cli.sh AGENT   (run from the top of the tree: it greps the sources)
set -u
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/acp-cli-XXXXXX)
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fails=0
fail() { echo "cli: FAILED: $*"; fails=$((fails + 1)); }
ok=0
pass() { ok=$((ok + 1)); }

# Only what each check sets: none of the caller's ACP_AGENT_* settings.
for v in $(env | sed -n 's/^\(ACP_AGENT_[A-Z_]*\)=.*/\1/p'); do
	unset "$v"
done

# run NAME [VAR=VALUE...] ARGS...: runs the agent on an empty stdin; sets rc and err.
run() {
	name=$1
	shift
	envs=
	while [ $# -gt 0 ]; do
		case $1 in
		-*) break ;;
		*=*) envs="$envs $1"; shift ;;
		*) break ;;
		esac
	done
	# shellcheck disable=SC2086 # envs: VAR=VALUE words without blanks
	timeout 10 env $envs "$agent" "$@" < /dev/null > "$tmp/$name.out" 2> "$tmp/$name.err"
	rc=$?
	err=$(cat "$tmp/$name.err")
}

# refused NAME NEEDLE [VAR=VALUE...] ARGS...: exit 2 and exactly one stderr line holding NEEDLE
# (a fixed string).
refused() {
	name=$1 needle=$2
	shift 2
	run "$name" "$@" --state-dir "$tmp/state"
	if [ $rc -ne 2 ]; then
		fail "$name: exit $rc, not 2 (stderr: $err)"
	elif [ "$(wc -l < "$tmp/$name.err")" -ne 1 ]; then
		fail "$name: not one line on stderr: $err"
	elif ! grep -qF -- "$needle" "$tmp/$name.err"; then
		fail "$name: \"$err\" lacks \"$needle\""
	else
		pass
	fi
}

# --help: exit 0, on stdout, the same for -h.
run help --help
[ $rc -eq 0 ] || fail "--help: exit $rc"
run h -h
[ $rc -eq 0 ] || fail "-h: exit $rc"
cmp -s "$tmp/help.out" "$tmp/h.out" || fail "-h does not print what --help prints"
if [ ! -s "$tmp/help.out" ] || [ -s "$tmp/help.err" ]; then
	fail "--help: the text must go to stdout only"
fi

# Every long option of acp/main.c, and every variable any source reads, is in the help.
opts=$(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", [a-z_]*_argument,.*/\1/p' acp/main.c)
[ -n "$opts" ] || fail "found no options in acp/main.c"
for o in $opts; do
	grep -q -- "--$o\\b" "$tmp/help.out" || fail "--help does not mention --$o"
done
# Names read with getenv (or main.c's main_env wrappers), and any literal that is a whole name.
src="acp/*.c agent/*.c base/*.c session/*.c tools/*.c mcp/*.c"
# shellcheck disable=SC2086 # src: globs
vars=$({ grep -ho '\(getenv\|main_env[a-z_]*\)("[A-Za-z_][A-Za-z0-9_]*"' $src | sed 's/.*("\(.*\)"/\1/'
	grep -ho '"ACP_AGENT_[A-Z0-9_][A-Z0-9_]*"' $src | tr -d '"'; } | sort -u)
[ -n "$vars" ] || fail "found no environment variables in the sources"
for v in $vars; do
	grep -q "\\b$v\\b" "$tmp/help.out" || fail "--help does not mention $v"
done
# Each ACP_AGENT_* variable's first line carries its default after the name.
for v in $(echo "$vars" | grep '^ACP_AGENT_'); do
	grep -m1 "^[^ ]*\\( [A-Z]*\\)\\?[[:space:]]*$v\\b" "$tmp/help.out" | sed "s/.*$v//" | grep -q '[^[:space:]]' ||
		fail "--help gives no default for $v"
done
pass

# Messages that name what was wrong.
refused missing-rec "cannot open recording $tmp/absent.json: No such file or directory" \
	--model replay --recording "$tmp/absent.json"
grep -q 'line -1' "$tmp/missing-rec.err" && fail "missing-rec: says (line -1): $err"
mkfifo "$tmp/fifo"
refused fifo-rec "recording $tmp/fifo: not a regular file" --model replay --recording "$tmp/fifo"
refused dir-rec "recording $tmp: not a regular file" --model replay --recording "$tmp"
printf '{"version":1,' > "$tmp/torn.json"
refused torn-rec "recording $tmp/torn.json: " --model replay --recording "$tmp/torn.json"
grep -q 'line -1' "$tmp/torn-rec.err" && fail "torn-rec: says (line -1): $err"
refused model-opt '--model: "foo" is not builtin, replay or openai' --model foo
refused model-env 'ACP_AGENT_MODEL_PROVIDER: "foo" is not builtin' ACP_AGENT_MODEL_PROVIDER=foo
grep -q -- '--model' "$tmp/model-env.err" && fail "model-env: blames --model: $err"
refused replay-env 'ACP_AGENT_MODEL_PROVIDER=replay needs' ACP_AGENT_MODEL_PROVIDER=replay
refused sync-env 'ACP_AGENT_SYNC: "later" is not none, turn or always' ACP_AGENT_SYNC=later
refused sync-opt '--sync: "later" is not none, turn or always' --sync later
refused profile-env 'ACP_AGENT_PROFILE: "solo" is not default or team' ACP_AGENT_PROFILE=solo
refused log-env 'ACP_AGENT_LOG: "loud" is not error, warn, info or debug' ACP_AGENT_LOG=loud
refused ms-env 'ACP_AGENT_IDLE_TIMEOUT_MS: "soon" is not a positive' ACP_AGENT_IDLE_TIMEOUT_MS=soon
refused key-env '--model openai needs ACP_AGENT_API_KEY' ACP_AGENT_API_KEY= --model openai
refused max-depth '--max-depth: "-1" is not a non-negative integer' --max-depth -1
refused unknown 'unknown or incomplete option "--frobnicate"' --frobnicate

# --recording without replay: a warning, and the agent still serves.
printf '{"version":1,"scripts":[]}' > "$tmp/rec.json"
run stray-rec --state-dir "$tmp/state" --model builtin --recording "$tmp/rec.json"
if [ $rc -ne 0 ]; then
	fail "stray-rec: exit $rc, not 0 (stderr: $err)"
elif ! grep -q 'warn.*--recording.*ignored' "$tmp/stray-rec.err"; then
	fail "stray-rec: no warning that --recording is ignored: $err"
else
	pass
fi
run stray-rec-env ACP_AGENT_RECORDING="$tmp/rec.json" --state-dir "$tmp/state" --model builtin
grep -q 'warn.*ACP_AGENT_RECORDING.*ignored' "$tmp/stray-rec-env.err" ||
	fail "stray-rec-env: no warning naming ACP_AGENT_RECORDING: $err"

# A signal during start-up (here while a 14 MB recording is parsed) is not fatal: once the loop
# is up the process shuts down in order and exits 0. (QUIT and INT are ignored in a background
# job of sh, and an ignored SIGQUIT stays ignored: acp-sigquit covers QUIT.)
yes '{"text":"x"},' | head -n 1000000 | tr -d '\n' > "$tmp/body"
{ printf '{"version":1,"scripts":[{"agent":"root","replies":['; cat "$tmp/body"
  printf '{"text":"y"}]}]}'; } > "$tmp/big.json"
rm -f "$tmp/body"
mkfifo "$tmp/in"
# reap: waits for the agent started as $pid (stdin on fd 3), its status in rc.
reap() {
	wait $pid
	rc=$?
	pid=
	exec 3>&-
}
for sig in HUP TERM; do
	"$agent" --log-level info --model replay --recording "$tmp/big.json" --state-dir "$tmp/state-$sig" \
		< "$tmp/in" > /dev/null 2> "$tmp/sig.err" &
	pid=$!
	exec 3> "$tmp/in"
	# Wait (up to 2 s) for the handler to be installed: SigCgt's bit for SIGHUP (1) is set.
	i=0
	while [ $i -lt 200 ]; do
		cgt=$(sed -n 's/^SigCgt:[[:space:]]*//p' /proc/$pid/status 2>/dev/null)
		case "$cgt" in *[13579bdf]) break ;; esac
		i=$((i + 1))
		sleep 0.01
	done
	kill -s $sig $pid
	reap
	if [ $rc -ne 0 ]; then
		fail "SIG$sig during start-up: exit $rc, not 0"
	elif ! grep -q 'signal.*during start-up' "$tmp/sig.err"; then
		fail "SIG$sig did not arrive during start-up (make the recording bigger?): $(cat "$tmp/sig.err")"
	else
		pass
	fi
done

# A repeated stop signal during the shutdown (a launcher that signals the whole process group,
# a second Ctrl-C) does not cut it short: the pending prompt is still answered and the exit is 0.
printf '{"version":1,"scripts":[{"agent":"root","replies":[{"hang":true}]}]}' > "$tmp/hang.json"
for round in 1 2 3 4 5 6; do
	"$agent" --deterministic --model replay --recording "$tmp/hang.json" --state-dir "$tmp/state-twice-$round" \
		< "$tmp/in" > "$tmp/twice.out" 2> "$tmp/twice.err" &
	pid=$!
	exec 3> "$tmp/in"
	echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' >&3
	echo '{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}' >&3
	echo '{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"00000000-0000-4000-8000-000000000001","prompt":[{"type":"text","text":"x"}]}}' >&3
	i=0
	while ! grep -q '"sessionUpdate":"available_commands_update"' "$tmp/twice.out" 2>/dev/null && [ $i -lt 200 ]; do
		i=$((i + 1))
		sleep 0.01
	done
	sleep 0.05
	kill -TERM $pid
	sleep "0.00$round"
	kill -TERM $pid 2>/dev/null
	reap
	if [ $rc -ne 0 ]; then
		fail "two SIGTERMs $round ms apart: exit $rc, not 0"
		break
	elif ! grep -q '"id":3,"result":{"stopReason":"cancelled"}' "$tmp/twice.out"; then
		fail "two SIGTERMs $round ms apart: the pending prompt was not answered cancelled"
		break
	fi
done
[ $round -eq 6 ] && [ $rc -eq 0 ] && pass

if [ $fails -ne 0 ]; then
	echo "cli: $fails FAILED, $ok ok"
	exit 1
fi
echo "cli: ok ($ok checks: --help/-h cover $(echo "$opts" | wc -w) options and $(echo "$vars" | wc -w) variables; messages; start-up signals; a repeated SIGTERM)"
