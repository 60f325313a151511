#!/bin/sh
# docs/contract.md §21 --record DIR: a session against the mock OpenAI server (a subagent, an edit and a bash
# command each allowed through a permission ask, reasoning, usage, a compaction over the window
# and a /compact) is recorded; the directory then replays with no key and no mock, the replay's
# transcript and logs equal the live ones, a second replay passes, a second recording of the
# same session is byte-identical, the key is in no recorded file, and a replay whose workspace
# differs fails with a diff that shows where. The first prompt carries an image, which replays too. Bad input: a DIR that is not empty, a DIR that
# cannot be made. A SIGKILL leaves whole files.
# Usage: tests/record.sh AGENT MOCK
set -u
agent=$1 mock=$2
# The one place that names the runner.
run_scenario() { "$agent" scenario run "$@"; }
key=sk-test-not-a-real-key-42	# what the runner hands the agent with a mock (scenario/)
tmp=$(mktemp -d /tmp/acp-record-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
fail() { echo "record: FAILED: $*"; exit 1; }
ok=0
pass() { ok=$((ok + 1)); }

# One SSE chunk: ev DELTA [FINISH]
ev() { printf '{"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": %s, "finish_reason": %s}]}' "$1" "${2:-null}"; }
call() { ev "{\"tool_calls\": [{\"index\": 0, \"id\": \"$1\", \"type\": \"function\", \"function\": {\"name\": \"$2\", \"arguments\": \"$3\"}}]}" '"tool_calls"'; }
usage() { printf '{"id": "c", "choices": [], "usage": {"prompt_tokens": %d, "completion_tokens": %d, "total_tokens": 0}}' "$1" "$2"; }

# A state directory someone used before: an older root, and an older child of it with the label
# the live session's subagent gets. None of them belongs in a recording.
used_state() {
	mkdir -p "$1"
	old=00000000-0000-4000-8000-0000000000a0 child=00000000-0000-4000-8000-0000000000a1
	cat > "$1/$old.jsonl" <<EOF
{"type":"session","version":1,"id":"$old","createdAt":1789000001000,"cwd":"/work/project","delegationDepth":0}
{"seq":0,"time":1789000001001,"type":"session/created","data":{"mode":"default","model":"builtin"}}
EOF
	cat > "$1/$child.jsonl" <<EOF
{"type":"session","version":1,"id":"$child","createdAt":1789000001010,"cwd":"/work/project","delegationDepth":1,"parentSession":"$old","origin":"subagent"}
{"seq":0,"time":1789000001011,"type":"subagent/descriptor","data":{"version":2,"mode":"one-shot","provider":"in-process","label":"count words"}}
EOF
}

# The live session: played by the runner against the mock, recorded into $1.
live() {
	d=$tmp/live$2
	mkdir -p "$d/workspace"
	printf 'hello\n' > "$d/workspace/notes.txt"
	printf '{"version": 1, "scripts": []}\n' > "$d/recording.json"
	[ -z "${3:-}" ] || used_state "$d/state/sessions"
	cat > "$d/mock.json" <<EOF
{"responses": [
 {"events": [$(ev '{"reasoning_content": "Look first."}'), $(ev '{"content": "Reading."}'), $(call call_r1 read '{\"file_path\": \"notes.txt\"}')]},
 {"events": [$(call call_r2 edit '{\"file_path\": \"notes.txt\", \"old_string\": \"hello\", \"new_string\": \"hello world\"}')]},
 {"events": [$(call call_r3 bash '{\"command\": \"cat notes.txt\", \"description\": \"Show the note\"}')]},
 {"events": [$(call call_r4 subagent '{\"description\": \"count words\", \"prompt\": \"Count the words in notes.txt.\", \"run_in_background\": false}')]},
 {"events": [$(ev '{"content": "2 words."}' '"stop"'), $(usage 300 4)]},
 {"events": [$(ev '{"content": "All done."}' '"stop"'), $(usage 90000 40)]},
 {"events": [$(ev '{"content": "Note edited."}' '"stop"')]},
 {"events": [$(ev '{"content": "Still done."}' '"stop"'), $(usage 200 5)]},
 {"events": [$(ev '{"content": "Short note."}' '"stop"')]}
]}
EOF
	cat > "$d/scenario.json" <<EOF
{"args": ["--record", "$1"], "mock": "mock.json", "env": {"ACP_AGENT_CONTEXT_WINDOW": "100000"},
 "steps": [
  {"send": {"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}},
  {"send": {"method": "session/new", "params": {"cwd": "{{cwd}}", "mcpServers": []}}},
  {"answer": {"method": "session/request_permission", "match": "\"title\":\"Edit notes.txt\"", "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}},
  {"answer": {"method": "session/request_permission", "match": "cat notes.txt", "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}},
  {"send": {"method": "session/prompt", "params": {"sessionId": "{{session:1}}", "prompt": [{"type": "text", "text": "Edit the note in {{cwd}}."}, {"type": "image", "mimeType": "image/gif", "data": "R0lGODlhAQABAAAAADs="}]}}},
  {"waitIdle": true},
  {"send": {"method": "session/prompt", "params": {"sessionId": "{{session:1}}", "prompt": [{"type": "text", "text": "And now?"}]}}},
  {"send": {"method": "session/prompt", "params": {"sessionId": "{{session:1}}", "prompt": [{"type": "text", "text": "/compact"}]}}},
  {"waitIdle": true},
  {"eof": true}]}
EOF
	run_scenario --mock "$mock" --update "$d/" > "$tmp/live-$2.out" 2>&1 ||
		{ tail -n 20 "$tmp/live-$2.out"; fail "the live session ($2) failed"; }
}

# The scenario directories' names are as long as each other: the runner's temp cwd then is too,
# and so the system prompt that names it, whose size the estimates after a compaction count.
live "$tmp/reco1" 1
rec=$tmp/reco1
[ -s "$rec/recording.json" ] && [ -s "$rec/scenario.json" ] || fail "recording.json or scenario.json is missing"
[ "$(cat "$rec/workspace/notes.txt")" = hello ] || fail "workspace/notes.txt is not the note before the edit"
[ ! -e "$rec/expected" ] || fail "expected/ was written at exit (docs/contract.md §20.1: scenario run --update writes it)"
grep -q '"compactions": \[$' "$rec/recording.json" && grep -q '^  {"text": "Note edited."},$' "$rec/recording.json" &&
	grep -q '^  {"text": "Short note."}\]}' "$rec/recording.json" ||
	fail "the summaries (over the window, then /compact) are not under compactions"
grep -q '"env": {"ACP_AGENT_CONTEXT_WINDOW": "100000"}' "$rec/scenario.json" || fail "the window is not in env"
grep -q '"agent": "label:count words"' "$rec/recording.json" || fail "the subagent's script is missing"
grep -q '"usage": {"prompt_tokens": 90000, "completion_tokens": 40, "total_tokens": 0}' "$rec/recording.json" || fail "usage is not recorded"
grep -q '"reasoning": "Look first."' "$rec/recording.json" || fail "reasoning is not recorded"
grep -q '"answer": {"method": "session/request_permission", "match": "\\"toolCallId\\":' "$rec/scenario.json" ||
	fail "the permission answers are not answer steps"
# The image (docs/contract.md §27): recorded as the client sent it, sent to the model as a data URL.
grep -q '{"type": "image", "mimeType": "image/gif", "data": "R0lGODlhAQABAAAAADs="}' "$rec/scenario.json" ||
	fail "the prompt's image is not recorded as sent"
grep -q '"url":"data:image/gif;base64,R0lGODlhAQABAAAAADs="' "$tmp/live1/expected/requests.jsonl" ||
	fail "the live request carries no image_url"
grep -q '{{cwd}}' "$rec/scenario.json" && grep -q '{{session:1}}' "$rec/scenario.json" ||
	fail "cwd and session ids are not templated"
! grep -q "$tmp" "$rec/scenario.json" "$rec/recording.json" || fail "a temporary path is left untemplated"
pass
! grep -rq "$key" "$rec" || fail "the API key is in $(grep -rl "$key" "$rec")"
pass

# The replay: no key, no mock; the runner's --update writes expected/ once.
(unset ACP_AGENT_API_KEY; run_scenario --update "$rec/") > "$tmp/replay.out" 2>&1 ||
	{ tail -n 20 "$tmp/replay.out"; fail "the replay failed"; }
# The one difference allowed: the model option's description names the provider that answered
# (openai live, replay after).
provider_blind() { sed 's/"description":"Model \([^"]*\) ([a-z]*)"/"description":"Model \1"/' "$1"; }
provider_blind "$tmp/live1/expected/stdout.jsonl" > "$tmp/live.stdout"
provider_blind "$rec/expected/stdout.jsonl" > "$tmp/replay.stdout"
diff -u "$tmp/live.stdout" "$tmp/replay.stdout" > "$tmp/diff" ||
	{ head -n 30 "$tmp/diff"; fail "the replay's transcript differs from the live one"; }
diff -ru "$tmp/live1/expected/sessions" "$rec/expected/sessions" > "$tmp/diff" ||
	{ head -n 30 "$tmp/diff"; fail "the replay's session logs differ from the live ones"; }
pass
(unset ACP_AGENT_API_KEY; run_scenario "$rec/") > "$tmp/replay2.out" 2>&1 ||
	{ tail -n 20 "$tmp/replay2.out"; fail "a second replay does not pass"; }
pass

# The same session recorded again: the same directory, byte for byte (temp paths aside).
live "$tmp/reco2" 2
rm -rf "$rec/expected"
diff -ru "$rec" "$tmp/reco2" > "$tmp/diff" || { head -n 30 "$tmp/diff"; fail "two recordings of one session differ"; }
pass

# Recorded on a state directory with older sessions in it: the same recording (only this run's
# sessions have scripts), and it replays keyless.
live "$tmp/reco3" 3 used
grep -q '"replies": \[\]' "$tmp/reco3/recording.json" && fail "an older session got an empty script: $(head -c 300 "$tmp/reco3/recording.json")"
diff -u "$tmp/reco2/recording.json" "$tmp/reco3/recording.json" > "$tmp/diff" ||
	{ head -n 30 "$tmp/diff"; fail "a recording on a used state directory differs"; }
(unset ACP_AGENT_API_KEY; run_scenario --update "$tmp/reco3/") > "$tmp/replay3.out" 2>&1 ||
	{ tail -n 20 "$tmp/replay3.out"; fail "a recording made on a used state directory does not replay"; }
pass

# A workspace that differs at replay (as a bash command's output would): the run fails, and
# its diff shows the tool output that changed.
(unset ACP_AGENT_API_KEY; run_scenario --update "$tmp/reco2/") > /dev/null 2>&1 || fail "the second recording does not replay"
printf 'hello there\n' > "$tmp/reco2/workspace/notes.txt"
if (unset ACP_AGENT_API_KEY; SCENARIO_TMPDIR=$tmp run_scenario "$tmp/reco2/") > "$tmp/differ.out" 2>&1; then
	fail "a replay on another workspace passed"
fi
grep -q '^-.*hello world' "$tmp/differ.out" && grep -q 'output differs from' "$tmp/differ.out" ||
	{ tail -n 20 "$tmp/differ.out"; fail "the failed replay's diff does not show the changed output"; }
pass

# Bad input: exit 2 and one clear line.
mkdir -p "$tmp/full" && touch "$tmp/full/x"
"$agent" --record "$tmp/full" < /dev/null > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && [ "$(cat "$tmp/err")" = "acp-agent: --record $tmp/full is not empty (a recording goes into a new or empty directory) (see --help)" ] ||
	fail "a non-empty DIR: exit $rc, $(cat "$tmp/err")"
ACP_AGENT_RECORD=$tmp/full/x "$agent" < /dev/null > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "^acp-agent: ACP_AGENT_RECORD=$tmp/full/x exists and is not a directory" "$tmp/err" ||
	fail "ACP_AGENT_RECORD on a file: exit $rc, $(cat "$tmp/err")"
"$agent" --record "$tmp/full/x/sub" < /dev/null > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "^acp-agent: --record $tmp/full/x/sub: Not a directory" "$tmp/err" ||
	fail "a DIR under a file: exit $rc, $(cat "$tmp/err")"
"$agent" --record "$tmp/none/sub" --state-dir "$tmp/state" < /dev/null > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "^acp-agent: --record $tmp/none/sub: cannot create the directory: No such file or directory" "$tmp/err" ||
	fail "a DIR that cannot be made: exit $rc, $(cat "$tmp/err")"
pass

# Killed mid-session (any provider; builtin here): what happened so far is on disk, whole.
mkfifo "$tmp/in"
"$agent" --record "$tmp/killed" --state-dir "$tmp/kstate" --model builtin < "$tmp/in" > "$tmp/kout" 2>/dev/null &
pid=$!
exec 3> "$tmp/in"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}' \
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"$tmp\",\"mcpServers\":[]}}" >&3
i=0
until grep -q '"id":2,"result"' "$tmp/kout" 2>/dev/null || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
sid=$(sed -n 's/.*"id":2,"result":{"sessionId":"\([^"]*\)".*/\1/p' "$tmp/kout")
printf '{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"%s","prompt":[{"type":"text","text":"hi"}]}}\n' "$sid" >&3
i=0
until grep -q '"id":3,"result"' "$tmp/kout" 2>/dev/null || [ $i -ge 100 ]; do sleep 0.05; i=$((i + 1)); done
kill -9 $pid
wait $pid 2>/dev/null
exec 3>&-
grep -q '"sessionId": "{{session:1}}", "prompt": \[{"type": "text", "text": "hi"}\]' "$tmp/killed/scenario.json" ||
	fail "after a kill, scenario.json lacks the prompt: $(cat "$tmp/killed/scenario.json")"
! grep -q '"eof"' "$tmp/killed/scenario.json" || fail "a killed session's scenario ends with eof"
grep -q '"text": "No model is configured' "$tmp/killed/recording.json" ||
	fail "after a kill, recording.json lacks the builtin reply: $(cat "$tmp/killed/recording.json")"
left=$(find "$tmp/killed" -name '.acp-write-*' | head -1)
[ -z "$left" ] || fail "a temporary file was left in the recording: $left"
pass
echo "record: ok ($ok checks: a recorded session with a subagent, an edit, bash and two compactions replays keyless with the live transcript and logs; two recordings identical; one on a used state directory too; no key; bad DIRs; a kill leaves a whole recording)"
