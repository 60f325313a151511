#!/bin/sh
# make bench: every benchmark prints "name: value unit" lines and, where a reference exists, a
# ratio measured in the same run. Never part of make test. Peers are installed from npm into
# build/bench-peers (skipped, saying so, when npm or the registry is not there).
set -u
cd "$(dirname "$0")/.."
b=build/release/bin
echo "bench: $(date -u +%Y-%m-%dT%H:%MZ) on $(nproc) cores, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

ours=$($b/bench_proc acp-agent bin/acp-agent --state-dir "$(mktemp -d)")
echo "$ours"
ms() { echo "$1" | sed -n 's/^startup\[[^]]*\]: \([0-9.]*\) ms.*/\1/p'; }
kb() { echo "$1" | sed -n 's/^peak_rss\[[^]]*\]: \([0-9]*\) kB.*/\1/p'; }
peers=build/bench-peers
if command -v npm >/dev/null 2>&1 && [ ! -d "$peers/node_modules/@zed-industries/claude-agent-acp" ]; then
	mkdir -p "$peers"
	(cd "$peers" && timeout 600 npm install --no-audit --no-fund --silent \
		@zed-industries/codex-acp-linux-x64 @zed-industries/claude-agent-acp >/dev/null 2>&1) ||
		echo "bench: peer install failed; peers skipped"
fi
for peer in codex-acp:$peers/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp \
	claude-agent-acp:$peers/node_modules/.bin/claude-agent-acp; do
	name=${peer%%:*}; cmd=${peer#*:}
	if [ ! -x "$cmd" ]; then
		echo "startup[$name]: SKIPPED (not installed)"
		continue
	fi
	out=$(HOME=$(mktemp -d) $b/bench_proc "$name" "$cmd")
	echo "$out"
	awk -v a="$(ms "$ours")" -v p="$(ms "$out")" -v ra="$(kb "$ours")" -v rp="$(kb "$out")" -v n="$name" \
		'BEGIN { if (a > 0 && p > 0) printf "ratio[startup %s / acp-agent]: %.1fx\nratio[peak_rss %s / acp-agent]: %.1fx\n", n, p / a, n, rp / ra }'
done
$b/bench_list | grep -v revalidation
$b/bench_index bin/acp-agent 100000 2>/dev/null
$b/bench_append
$b/bench_inspect
$b/bench_load bin/acp-agent
$b/bench_fs
$b/bench_search
$b/bench_agent bin/acp-agent $b/mock-openai
$b/bench_bash
$b/bench_ask bin/acp-agent
$b/bench_plan bin/acp-agent
$b/bench_image bin/acp-agent $b/mock-openai
$b/bench_step bin/acp-agent
$b/bench_types bin/acp-agent
$b/bench_worktree bin/acp-agent
$b/bench_mcp bin/acp-agent $b/mock-mcp
