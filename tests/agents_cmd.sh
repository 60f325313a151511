#!/bin/sh
# `acp-agent agents [--cwd DIR]` (docs/contract.md §23.1): the agent types a session in DIR sees,
# from the four sources in precedence order and the built-ins, with Claude Code's own files (the
# fixtures in tests/fixtures/claude-agents are written in its format) read as they are; every bad
# file skipped with one warning naming it and its reason, the rest still listed.
# Usage: tests/agents_cmd.sh AGENT
set -u
agent=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/acp-agents-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "agents-cmd: FAILED: $*"; exit 1; }
has() { grep -qF -- "$2" "$1" || fail "$3: no \"$2\" in $(cat "$1")"; }

ws=$tmp/ws home=$tmp/home cfg=$tmp/cfg
mkdir -p "$ws/.acp-agent/agents" "$ws/.claude/agents" "$home/.claude/agents" "$cfg/acp-agent/agents"
cp "$here"/fixtures/claude-agents/*.md "$ws/.claude/agents/"
printf -- '---\nname: test-runner\ndescription: the workspace'"'"'s own, first\n---\nRun them.\n' > "$ws/.acp-agent/agents/runner.md"
printf -- '---\ndescription: my explorer\n---\n' > "$cfg/acp-agent/agents/explore.md"
printf -- '---\ndescription: from home\n---\n' > "$home/.claude/agents/helper.md"
# bad input: each skipped with its reason, nothing else lost
b=$ws/.acp-agent/agents
printf '\377\376 not UTF-8\n' > "$b/latin.md"
truncate -s 1G "$b/huge.md"			# sparse: read whole it would take seconds and a GB
mkdir "$b/dir.md"
ln -s loop.md "$b/loop.md"
printf -- '---\ndescription: a\nname: A B\n---\n' > "$b/spaces.md"
printf -- '---\ndescription: |\n  more\n---\n' > "$b/block.md"
printf -- '---\ndescription: bad model\nmodel: "gpt\\tx"\ntools: Read, NoSuchTool\n---\n' > "$b/odd.md"
# a name that would drive the terminal: shown escaped
printf -- '---\nname: painter\ndescription: paints\n---\n' > "$b/$(printf 'paint\033[31mer')".md
printf -- '---\ndescription: one\nmaxTurns: 3\nmax_steps: 300\n---\n' > "$b/twice.md"

HOME=$home XDG_CONFIG_HOME=$cfg timeout 20 "$agent" agents --cwd "$ws" > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "exit $rc ($(cat "$tmp/err"))"
o=$tmp/out e=$tmp/err
# the types, by name: the workspace's test-runner wins over Claude Code's file of that name
[ "$(cut -f1 "$o" | grep -v '^skipped ' | tr '\n' ' ')" = "doc-writer explore general helper odd painter test-runner " ] ||
	fail "the types listed: $(cut -f1 "$o" | tr '\n' ' ')"
has "$o" "doc-writer	$ws/.claude/agents/doc-writer.md	Writes and updates documentation for the code it is pointed at." types
has "$o" "test-runner	$ws/.acp-agent/agents/runner.md	the workspace's own, first" types
has "$o" "explore	$cfg/acp-agent/agents/explore.md	my explorer" types
has "$o" "general	built-in	General-purpose agent for multi-step tasks" types
has "$o" "helper	$home/.claude/agents/helper.md	from home" types
has "$o" "skipped $ws/.claude/agents/test-runner.md: the name test-runner is already defined by $ws/.acp-agent/agents/runner.md" skipped
has "$o" "skipped $b/latin.md: not UTF-8 text" skipped
has "$o" "skipped $b/huge.md: larger than 128 KiB" skipped
has "$o" "skipped $b/dir.md: not a regular file" skipped
has "$o" "skipped $b/loop.md: cannot be opened: Too many levels of symbolic links" skipped
has "$o" "skipped $b/spaces.md: the name \"a b\" is not [a-z0-9][a-z0-9_-]{0,63}" skipped
has "$o" "skipped $b/block.md: line 2: block scalars (| or >) are not supported" skipped
has "$o" "skipped $b/twice.md: the key max_steps is given twice, in two spellings" skipped
has "$o" 'paint\x1b[31mer.md	paints' escaped
! grep -q "$(printf '\033')" "$o" || fail "an escape byte reached the output"
[ "$(grep -c '^skipped ' "$o")" -eq 8 ] || fail "$(grep -c '^skipped ' "$o") files skipped, not 8"
# one warning per skipped file (8) and one per ignored part (odd.md: 2), no more
[ "$(grep -c 'warn: agent type .*: ' "$e")" -eq 10 ] || fail "warnings: $(cat "$e")"
has "$e" "agent type $b/odd.md: tool \"NoSuchTool\" is not a tool here: ignored" warnings
has "$e" "agent type $b/odd.md: the model is not a model id: the parent's is used" warnings
has "$e" "agent type $b/huge.md: larger than 128 KiB" warnings
# no agents directory, an unreadable one: the built-ins, exit 0
mkdir "$tmp/empty"
HOME=$tmp/nohome timeout 10 "$agent" agents --cwd "$tmp/empty" > "$o" 2> "$e" || fail "empty: exit $?"
[ "$(cut -f1 "$o" | tr '\n' ' ')" = "explore general " ] || fail "empty: $(cat "$o")"
mkdir -p "$tmp/locked/.claude/agents"
chmod 000 "$tmp/locked/.claude/agents"
if [ "$(id -u)" != 0 ]; then
	HOME=$tmp/nohome timeout 10 "$agent" agents --cwd "$tmp/locked" > "$o" 2> "$e" || fail "locked: exit $?"
	[ "$(cut -f1 "$o" | tr '\n' ' ')" = "explore general " ] || fail "locked: $(cat "$o")"
fi
chmod 755 "$tmp/locked/.claude/agents"
# bad usage
timeout 10 "$agent" agents --bogus > "$o" 2> "$e"; rc=$?
[ $rc -eq 2 ] || fail "--bogus: exit $rc"
has "$e" 'acp-agent agents: unexpected argument "--bogus"' usage
timeout 10 "$agent" agents --cwd "$tmp/none" > "$o" 2> "$e"; rc=$?
[ $rc -eq 1 ] || fail "a missing DIR: exit $rc"
has "$e" "acp-agent agents: $tmp/none: No such file or directory" usage
echo "agents-cmd: ok (4 sources and the built-ins in precedence order, Claude Code's files as they are; 8 bad files skipped with their reasons, a 1 GB one unread; an escape in a name shown escaped; bad usage)"
