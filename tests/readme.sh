#!/bin/sh
# The README's "By hand" section, run as a reader would: its command line, then its lines pasted,
# then Ctrl-D; twice, as a reader who comes back. Each prompt must get a stopReason.
# Usage: tests/readme.sh [AGENT]   (from the top of the tree; AGENT replaces the README's
# bin/acp-agent, which is the default)
set -u
agent=${1:-bin/acp-agent}
tmp=$(mktemp -d /tmp/acp-readme-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "readme: FAILED: $*"; exit 1; }

# The section's first fenced block is the command, its second the lines to paste.
awk '/^## /{ on = ($0 == "## By hand") } on && /^```/{ n++; next } on && n == 1 { print > cmd }
	on && n == 3 { print > lines }' cmd="$tmp/cmd" lines="$tmp/lines" README.md
if [ ! -s "$tmp/cmd" ] || [ ! -s "$tmp/lines" ]; then
	fail "README.md has no \"By hand\" command and lines"
fi
[ "$(wc -l < "$tmp/cmd")" -eq 1 ] || fail "the by-hand command is not one line"
cmd=$(cat "$tmp/cmd")
case $cmd in
bin/acp-agent\ *) ;;
*) fail "the by-hand command does not start bin/acp-agent: $cmd" ;;
esac
[ -x "$agent" ] || fail "$agent does not exist (make leaves it; see \"The two commands\")"
cmd="$agent${cmd#bin/acp-agent}"
prompts=$(grep -c '"method":"session/prompt"' "$tmp/lines")
[ "$prompts" -ge 1 ] || fail "the by-hand lines send no prompt"

for round in 1 2; do
	# TMPDIR: a mktemp in the command makes its directory in ours, so nothing is left behind.
	TMPDIR=$tmp timeout 20 sh -c "$cmd" < "$tmp/lines" > "$tmp/out.$round" 2> "$tmp/err.$round"
	rc=$?
	[ $rc -eq 0 ] || fail "round $round: exit $rc: $(cat "$tmp/err.$round")"
	if grep -q '"error":' "$tmp/out.$round"; then
		fail "round $round: an error answer: $(grep '"error":' "$tmp/out.$round")"
	fi
	got=$(grep -c '"result":{"stopReason":"' "$tmp/out.$round")
	[ "$got" -eq "$prompts" ] || fail "round $round: $got of $prompts prompts got a stopReason"
done
echo "readme: ok (the by-hand lines, pasted twice: $prompts prompt(s) answered each time)"
