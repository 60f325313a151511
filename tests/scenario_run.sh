#!/bin/sh
# `acp-agent scenario run` as a user meets it (docs/contract.md §21): a new scenario fails until --update
# writes its expected/, then passes; a mismatch exits 1 with a readable unified diff and the
# "N passed, N failed" line; --junit writes XML of the common JUnit shape (checked with
# python3's XML parser where python3 is present), markup and control bytes escaped; the step
# templates; docs/scenarios.md's first scenario plays; bad usage exits 2 with one line; and
# `make install DESTDIR=...` installs a binary that runs it.
# Usage: tests/scenario_run.sh AGENT   (from the top of the tree)
set -u
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/acp-scenario-run-XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
export SCENARIO_TMPDIR="$tmp/run"
mkdir "$tmp/run"
fails=0 ok=0
fail() { echo "scenario_run: FAILED: $*"; fails=$((fails + 1)); }
pass() { ok=$((ok + 1)); }
# run NAME ARGS...: the runner's stdout, stderr and exit status in $tmp/NAME.{out,err,rc}.
run() {
	n=$1
	shift
	"$agent" scenario run "$@" > "$tmp/$n.out" 2> "$tmp/$n.err"
	echo $? > "$tmp/$n.rc"
}
rc() { cat "$tmp/$1.rc"; }
# has FILE TEXT: TEXT (a fixed string) is in FILE.
has() { grep -qF -- "$2" "$1" || fail "$(basename "$1") lacks: $2 ($(head -c 400 "$1"))"; }

# A new scenario: a text with markup characters in it, so the diff and the XML carry them.
sc=$tmp/sc
mkdir -p "$sc/hello"
cat > "$sc/hello/scenario.json" <<'EOF'
{"args": ["--tools", "none"], "steps": [
  {"send": {"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}},
  {"send": {"method": "session/new", "params": {"cwd": "{{cwd}}", "mcpServers": []}}},
  {"send": {"method": "session/prompt", "params": {"sessionId": "{{session:1}}", "prompt": [{"type": "text", "text": "Hi."}]}}},
  {"send": {"method": "_test/templates", "params": {"state": "{{state}}", "cwd": "{{cwd}}", "id": "{{session:1}}"}}},
  {"eof": true}]}
EOF
cat > "$sc/hello/recording.json" <<'EOF'
{"version": 1, "scripts": [{"agent": "root", "replies": [{"text": "<b>Tom & \"Jerry\"</b> ]]>"}]}]}
EOF

run new "$sc/hello"
[ "$(rc new)" = 1 ] && pass || fail "a scenario without expected/ exited $(rc new), not 1"
has "$tmp/new.err" "FAIL hello: no $sc/hello/expected yet: run with --update to write it"
has "$tmp/new.out" "0 passed, 1 failed"
run update --update "$sc/hello/"
[ "$(rc update)" = 0 ] && pass || fail "--update exited $(rc update): $(cat "$tmp/update.err")"
[ -s "$sc/hello/expected/stdout.jsonl" ] && [ -s "$sc/hello/expected/sessions/1.jsonl" ] && pass ||
	fail "--update wrote no expected/stdout.jsonl and sessions/1.jsonl"
has "$sc/hello/expected/stdout.jsonl" '"sessionId":"<ID-1>"'
run again --traces "$tmp/traces" "$sc/hello"
[ "$(rc again)" = 0 ] && pass || fail "the updated scenario failed: $(cat "$tmp/again.err")"
grep -q "\"params\":{\"state\":\"$tmp/run/acp-scenario-hello-[A-Za-z0-9]*/state\",\"cwd\":\"$tmp/run/acp-scenario-hello-[A-Za-z0-9]*/work\",\"id\":\"00000000-0000-4000-8000-000000000001\"}" \
	"$tmp/traces/hello.trace" && pass || fail "templates: $(grep _test/templates "$tmp/traces/hello.trace")"
[ "$(cat "$tmp/again.out")" = "1 passed, 0 failed" ] && pass || fail "stdout of a pass: $(cat "$tmp/again.out")"

# A mismatch: expected/ says something else, with a control byte and a byte that is not UTF-8.
cp -R "$sc/hello" "$sc/broken"
sed -i 's/Tom \& /Tim \& /' "$sc/broken/expected/stdout.jsonl"
printf '{"extra":"bell \001 and \377"}\n' >> "$sc/broken/expected/stdout.jsonl"
run mixed --junit "$tmp/results.xml" "$sc/hello" "$sc/broken"
[ "$(rc mixed)" = 1 ] && pass || fail "a failing scenario exited $(rc mixed), not 1"
[ "$(tail -n 1 "$tmp/mixed.out")" = "1 passed, 1 failed" ] && pass || fail "last line: $(tail -n 1 "$tmp/mixed.out")"
has "$tmp/mixed.err" "FAIL broken: output differs from $sc/broken/expected (actual kept in $tmp/run/acp-scenario-broken-"
has "$tmp/mixed.out" "--- $sc/broken/expected/stdout.jsonl"
has "$tmp/mixed.out" "+++ $tmp/run/acp-scenario-broken-"
grep -q '^@@ ' "$tmp/mixed.out" && pass || fail "the diff has no hunk header"
grep -q '^-.*Tim & ' "$tmp/mixed.out" && grep -q '^+.*Tom & ' "$tmp/mixed.out" && pass ||
	fail "the diff does not show the changed text: $(cat "$tmp/mixed.out")"
grep -q '^-{"extra":"bell' "$tmp/mixed.out" && pass || fail "the diff does not show the extra line"
if command -v python3 > /dev/null 2>&1; then
	python3 - "$tmp/results.xml" "$sc" <<'EOF' || fail "the JUnit XML: see above"
import sys, xml.etree.ElementTree as ET
path, sc = sys.argv[1], sys.argv[2]
root = ET.parse(path).getroot()
def need(el, *attrs):
    for a in attrs:
        if a not in el.attrib:
            sys.exit("<%s> lacks %s" % (el.tag, a))
def num(el, a, kind=int):
    try:
        return kind(el.attrib[a])
    except ValueError:
        sys.exit("<%s %s=%r> is not a number" % (el.tag, a, el.attrib[a]))
assert root.tag == "testsuites", root.tag
need(root, "tests", "failures", "time")
suites = root.findall("testsuite")
assert len(suites) == 1, suites
s = suites[0]
need(s, "name", "tests", "failures", "errors", "time", "timestamp", "hostname")
assert num(s, "tests") == 2 and num(s, "failures") == 1 and num(s, "errors") == 0, s.attrib
assert num(root, "tests") == 2 and num(root, "failures") == 1, root.attrib
assert num(s, "time", float) >= 0
cases = s.findall("testcase")
assert [c.attrib.get("name") for c in cases] == ["hello", "broken"], [c.attrib for c in cases]
for c in cases:
    need(c, "name", "classname", "time")
    assert c.attrib["classname"] == "sc", c.attrib
    num(c, "time", float)
assert cases[0].find("failure") is None
f = cases[1].find("failure")
assert f is not None, "the failing case has no <failure>"
need(f, "message", "type")
assert f.attrib["message"].startswith("output differs from " + sc + "/broken/expected"), f.attrib
text = f.text or ""
for want in ("--- " + sc + "/broken/expected/stdout.jsonl", '<b>Tom & \\"Jerry\\"', '"</b> ]]>"', "Tim & ",
             "bell \\x01 and \ufffd"):
    assert want in text, "the failure text lacks %r" % want
EOF
	pass
	grep -q 'Tom &amp; ' "$tmp/results.xml" && pass || fail "the XML does not escape &"
else
	echo "scenario_run: python3 not found: the JUnit file is checked for well-formedness by grep only"
	grep -q '^<testsuites name="acp-agent scenario run" tests="2" failures="1"' "$tmp/results.xml" && pass ||
		fail "results.xml: $(head -c 300 "$tmp/results.xml")"
fi

# docs/scenarios.md's first scenario, as a reader would play it: its first JSON block is
# recording.json, its second scenario.json; --update, then a plain run passes.
mkdir "$sc/first"
awk '/^## /{ on = ($0 == "## A first scenario") } on && /^```/{ n++; next }
	on && n == 1 { print > rec } on && n == 3 { print > script }' \
	rec="$sc/first/recording.json" script="$sc/first/scenario.json" docs/scenarios.md
if [ -s "$sc/first/recording.json" ] && [ -s "$sc/first/scenario.json" ]; then
	run first-update --update "$sc/first"
	run first "$sc/first"
	[ "$(rc first-update)" = 0 ] && [ "$(rc first)" = 0 ] && pass ||
		fail "docs/scenarios.md's first scenario: $(cat "$tmp/first-update.err" "$tmp/first.err")"
	grep -q '"text":"There are 42 files."' "$sc/first/expected/sessions/2.jsonl" && pass ||
		fail "docs/scenarios.md's first scenario: the helper did not answer"
else
	fail "docs/scenarios.md has no \"A first scenario\" with two JSON blocks"
fi

# Directories that are no scenario: each fails, naming what is missing; the others still run.
mkdir "$tmp/empty"
run notsc "$tmp/empty" "$tmp/absent" "$sc/hello"
[ "$(rc notsc)" = 1 ] && pass || fail "non-scenarios exited $(rc notsc), not 1"
has "$tmp/notsc.err" "FAIL empty: $tmp/empty/scenario.json: No such file or directory"
has "$tmp/notsc.err" "FAIL absent: $tmp/absent: No such file or directory"
has "$tmp/notsc.out" "1 passed, 2 failed"

# The agent's HOME and XDG_CONFIG_HOME are fresh directories of the run, the scenario's home/
# copied in; nothing of the user's own HOME reaches it. "mask" hides output that changes by itself.
mkdir -p "$sc/home/home" "$tmp/userhome"
echo "from the scenario" > "$sc/home/home/marker"
echo "the user's own" > "$tmp/userhome/user-file"
cat > "$sc/home/scenario.json" <<'EOF'
{"args": ["--permission-mode", "full-access"], "mask": ["[0-9]{12,}", "at[0-9:]+"], "steps": [
  {"send": {"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}},
  {"send": {"method": "session/new", "params": {"cwd": "{{cwd}}", "mcpServers": []}}},
  {"send": {"method": "session/prompt", "params": {"sessionId": "{{session:1}}", "prompt": [{"type": "text", "text": "Look around."}]}}},
  {"eof": true}]}
EOF
cat > "$sc/home/recording.json" <<'EOF'
{"version": 1, "scripts": [{"agent": "root", "replies": [
  {"tool_calls": [{"name": "bash", "arguments": {"command": "cat ~/marker; echo \"config=$XDG_CONFIG_HOME\"; ls -A \"$XDG_CONFIG_HOME\" | wc -l; ls ~/user-file 2>&1 | sed 's/.*user-file.*/no user-file/'; date +%s%N; date +at%T", "description": "Look"}}]},
  {"text": "Done."}]}]}
EOF
HOME=$tmp/userhome run home-update --update "$sc/home"
HOME=$tmp/userhome run home "$sc/home"
[ "$(rc home-update)" = 0 ] && [ "$(rc home)" = 0 ] && pass ||
	fail "the home/mask scenario: $(cat "$tmp/home-update.err" "$tmp/home.err" "$tmp/home.out")"
has "$sc/home/expected/stdout.jsonl" 'from the scenario\nconfig={{tmp}}/home/.config\n0\nno user-file\n<masked>\n<masked>\n'
! grep -q "the user's own" "$sc/home/expected/stdout.jsonl" && pass || fail "the user's HOME reached the replay"
printf '{"args": [], "mask": ["(unclosed"], "steps": []}\n' > "$sc/home/scenario.json"
run badmask "$sc/home"
[ "$(rc badmask)" = 1 ] && pass || fail "a bad mask exited $(rc badmask)"
has "$tmp/badmask.err" 'FAIL home: scenario.json: mask 1 ((unclosed): '

# state/ is copied, not linked out: a state/sessions that is a link to a directory is refused
# (the agent would write there), before the agent starts.
mkdir -p "$sc/linked/state" "$tmp/outside"
cp "$sc/hello/scenario.json" "$sc/hello/recording.json" "$sc/linked/"
ln -s "$tmp/outside" "$sc/linked/state/sessions"
run linked "$sc/linked"
[ "$(rc linked)" = 1 ] && [ -z "$(ls -A "$tmp/outside")" ] && pass || fail "a linked state/sessions: exit $(rc linked), $(ls -A "$tmp/outside")"
has "$tmp/linked.err" "FAIL linked: $sc/linked/state/sessions is a symbolic link to a directory ($tmp/outside)"

# A run that goes another way at a step (a workspace file changed, so a recorded edit no longer
# applies and its ask never comes): the cause, the diff up to the failure, actual/ kept.
mkdir -p "$sc/edit/workspace"
echo hello > "$sc/edit/workspace/notes.txt"
cat > "$sc/edit/scenario.json" <<'EOF'
{"args": [], "steps": [
  {"send": {"method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}},
  {"send": {"method": "session/new", "params": {"cwd": "{{cwd}}", "mcpServers": []}}},
  {"answer": {"method": "session/request_permission", "match": "\"title\":\"Edit notes.txt\"", "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}}},
  {"send": {"method": "session/prompt", "params": {"sessionId": "{{session:1}}", "prompt": [{"type": "text", "text": "Edit."}]}}},
  {"eof": true}]}
EOF
cat > "$sc/edit/recording.json" <<'EOF'
{"version": 1, "scripts": [{"agent": "root", "replies": [
  {"tool_calls": [{"name": "read", "arguments": {"file_path": "notes.txt"}}]},
  {"tool_calls": [{"name": "edit", "arguments": {"file_path": "notes.txt", "old_string": "hello", "new_string": "hello world"}}]},
  {"text": "Edited."}]}]}
EOF
run edit-update --update "$sc/edit"
[ "$(rc edit-update)" = 0 ] && pass || fail "the edit scenario: $(cat "$tmp/edit-update.err")"
run edit-pretty --pretty "$sc/edit"
! grep -q '(null)' "$tmp/edit-pretty.out" && pass || fail "--pretty printed (null): $(cat "$tmp/edit-pretty.out")"
has "$tmp/edit-pretty.out" "(the agent advertises its slash commands: /agents, /send, /interrupt, /mode, /compact, /help)"
echo goodbye > "$sc/edit/workspace/notes.txt"
run edit "$sc/edit"
[ "$(rc edit)" = 1 ] && pass || fail "a run that went another way exited $(rc edit)"
has "$tmp/edit.err" 'FAIL edit: the answer for session/request_permission (match "\"title\":\"Edit notes.txt\"") was never used: no such request came'
has "$tmp/edit.err" "(actual kept in $tmp/run/acp-scenario-edit-"
has "$tmp/edit.out" "edit: what happened up to the failure, against $sc/edit/expected:"
grep -q '^+.*"status":"failed"' "$tmp/edit.out" && pass || fail "the diff does not show the failed edit: $(cat "$tmp/edit.out")"
kept=$(sed -n 's/.*(actual kept in \([^;)]*\).*/\1/p' "$tmp/edit.err")
[ -s "$kept/stdout.jsonl" ] && pass || fail "actual/ was not kept: $kept"

# Bad usage: one line on stderr, exit 2.
usage() {
	want=$1
	shift
	"$agent" "$@" > "$tmp/usage.out" 2> "$tmp/usage.err"
	r=$?
	[ $r = 2 ] && [ "$(wc -l < "$tmp/usage.err")" = 1 ] && grep -qF -- "$want" "$tmp/usage.err" && pass ||
		fail "acp-agent $*: exit $r, stderr: $(cat "$tmp/usage.err") (want: $want)"
}
usage 'acp-agent scenario: missing subcommand (the subcommand is run)' scenario
usage 'acp-agent scenario: unknown subcommand "play"' scenario play x
usage 'acp-agent scenario: run needs at least one scenario directory' scenario run --update
usage 'acp-agent scenario: unknown or incomplete option "--frob"' scenario run --frob "$sc/hello"
usage "acp-agent scenario: --junit $tmp/no/such/dir.xml: No such file or directory" scenario run --junit "$tmp/no/such/dir.xml" "$sc/hello"
usage 'acp-agent: unexpected argument "chatter"' chatter
"$agent" --help | grep -q '^scenario run ' && pass || fail "acp-agent --help does not list scenario run"
"$agent" scenario --help > "$tmp/help.out" && pass || fail "acp-agent scenario --help exited non-zero"
# Every long option of scenario/main.c and every variable scenario/ reads is in its help (the
# agent's own ACP_AGENT_* aside: acp-agent --help has those).
sopts=$(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", [a-z_]*_argument,.*/\1/p' scenario/main.c)
svars=$(grep -ho 'getenv("[A-Z_]*"' scenario/*.c | sed 's/getenv("\(.*\)"/\1/' | grep -v '^ACP_AGENT_' | sort -u)
[ -n "$sopts" ] && [ -n "$svars" ] || fail "found no options or variables in scenario/"
for w in $sopts; do grep -q -- "--$w\b" "$tmp/help.out" || fail "scenario --help does not mention --$w"; done
for w in $svars; do grep -q "\\b$w\\b" "$tmp/help.out" || fail "scenario --help does not mention $w"; done

# make install puts the one binary under DESTDIR/PREFIX; the installed copy runs scenarios.
if make --no-print-directory -s install DESTDIR="$tmp/root" PREFIX=/opt/acp > "$tmp/install.out" 2>&1; then
	[ -x "$tmp/root/opt/acp/bin/acp-agent" ] && pass || fail "make install: no $tmp/root/opt/acp/bin/acp-agent"
	[ -f "$tmp/root/opt/acp/share/doc/acp-agent/scenarios.md" ] && pass || fail "make install: no share/doc/acp-agent/scenarios.md"
	"$tmp/root/opt/acp/bin/acp-agent" scenario run "$sc/hello" > "$tmp/installed.out" 2>&1 &&
		grep -q '^1 passed, 0 failed$' "$tmp/installed.out" && pass ||
		fail "the installed acp-agent scenario run: $(cat "$tmp/installed.out")"
else
	fail "make install DESTDIR=$tmp/root: $(cat "$tmp/install.out")"
fi

[ $fails -eq 0 ] || { echo "scenario_run: $fails failure(s) ($ok checks passed)"; exit 1; }
echo "scenario_run: ok ($ok checks: --update writes a new scenario's expected/, a mismatch's diff and exit 1, JUnit XML, the templates, docs/scenarios.md's example, a fresh HOME and home/, masks, state/ links, a failure at a step with its diff, non-scenarios, usage errors, make install)"
