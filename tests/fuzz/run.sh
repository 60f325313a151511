#!/bin/sh
# make fuzz-smoke: runs each libFuzzer target for FUZZ_SECONDS (60) on a corpus seeded from the
# scenarios; a crash fails the run and leaves its input in build/fuzz/.
set -eu
cd "$(dirname "$0")/../.."
secs=${FUZZ_SECONDS:-60}
out=build/fuzz
status=0
seed() {	# name, then files to copy into its corpus
	name=$1; shift
	mkdir -p "$out/corpus-$name"
	for f in "$@"; do [ -f "$f" ] && cp "$f" "$out/corpus-$name/$(echo "$f" | tr / _)"; done
	true
}
seed line scenarios/*/scenario.json
# Client lines of every recorded trace (make scenarios writes them), one file per trace.
for tr in build/release/traces/*.trace; do
	[ -f "$tr" ] && sed -n 's/^>> //p' "$tr" > "$out/corpus-line/$(basename "$tr").lines"
done
seed inspect scenarios/*/expected/sessions/*.jsonl scenarios/*/state/sessions/*.jsonl
# The consumers load the file as one session: the snapshots with their tokens made real again.
mkdir -p "$out/corpus-consumers"
for f in scenarios/*/expected/sessions/*.jsonl scenarios/*/state/sessions/*.jsonl; do
	[ -f "$f" ] && sed -E 's/<ID-([0-9])>/00000000-0000-4000-8000-00000000000\1/g; s/<ID-([0-9]{2})>/00000000-0000-4000-8000-0000000000\1/g; s/"<time>"/1/g' \
		"$f" > "$out/corpus-consumers/$(echo "$f" | tr / _)"
done
seed replay scenarios/*/recording.json
seed toolargs tests/fuzz/seeds/toolargs/*
seed delta tests/fuzz/seeds/delta/*
# MCP server scripts (fuzz_mcp.c's line encoding): the handshake, pages, calls, restarts.
seed mcp tests/fuzz/seeds/mcp/*
seed frontmatter tests/fixtures/claude-agents/*.md
seed compose tests/fuzz/seeds/compose/*
# One event line per file: every line of the committed logs.
mkdir -p "$out/corpus-scan"
cat scenarios/*/expected/sessions/*.jsonl 2>/dev/null | head -400 | split -l 1 - "$out/corpus-scan/line-"
# And pairs of consecutive lines: the second is matched against the shape of the first.
cat scenarios/*/expected/sessions/*.jsonl 2>/dev/null | head -400 | awk 'NR > 1 { print prev > ("'"$out"'/corpus-scan/pair-" NR); print $0 >> ("'"$out"'/corpus-scan/pair-" NR); close("'"$out"'/corpus-scan/pair-" NR) } { prev = $0 }'
mkdir -p "$out/corpus-path"
for t in line inspect replay toolargs delta scan consumers path mcp frontmatter compose; do
	echo "fuzz: $t for ${secs}s"
	dict=; [ -f "tests/fuzz/$t.dict" ] && dict="-dict=$(pwd)/tests/fuzz/$t.dict"
	if ! (cd "$out" && ASAN_OPTIONS=detect_leaks=1 ./fuzz_$t -max_total_time="$secs" -print_final_stats=1 \
		-rss_limit_mb=4096 $dict "corpus-$t" 2>"fuzz-$t.log"); then
		echo "fuzz: $t FAILED (see $out/fuzz-$t.log and the crash-* input there)"
		status=1
	fi
	grep -E "stat::number_of_executed_units|stat::peak_rss_mb|cov:" "$out/fuzz-$t.log" | tail -3 || true
done
exit $status
