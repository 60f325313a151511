#!/bin/sh
# session/list through the persistent corpus index (docs/contract.md §3.3, §5.6), the real binary without
# --deterministic (the index is built by a worker; requests that need it wait for it, even past
# EOF): 120 stored roots and a child, paged with nextCursor, give every root once, newest first;
# deleting or corrupting index.v1 changes no answer; bad cursors are -32602; an "o:<n>" offset
# cursor of earlier versions still works.  Usage: tests/list_index.sh AGENT
set -u
agent=$1
tmp=$(mktemp -d /tmp/acp-listidx-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "list_index: FAILED: $*"; exit 1; }
state=$tmp/state
mkdir -p "$state/sessions"
awk -v dir="$state/sessions" 'BEGIN {
	for (i = 1; i <= 120; i++) {
		id = sprintf("00000000-0000-4000-8000-%012d", i); f = dir "/" id ".jsonl"
		printf "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":%d,\"cwd\":\"/w\",\"delegationDepth\":0}\n", id, i > f
		printf "{\"seq\":0,\"time\":%d,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"n%d\"}],\"source\":{\"kind\":\"user\"}}}\n", 1000 + (i * 37) % 121, i > f
		close(f)
		printf "%d %s\n", 1000 + (i * 37) % 121, id > (dir "/../expected.unsorted")
	}
	id = "00000000-0000-4000-8000-0000000000c1"; f = dir "/" id ".jsonl"
	printf "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":5,\"cwd\":\"/w\",\"delegationDepth\":1,\"parentSession\":\"00000000-0000-4000-8000-000000000001\",\"origin\":\"subagent\"}\n", id > f
}'
sort -rn "$state/expected.unsorted" | cut -d' ' -f2 > "$tmp/expected"
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'

# One process per call: initialize, the list request, EOF (the list waits for the index).
call() {
	printf '%s\n%s\n' "$init" "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/list\",\"params\":$1}" |
		"$agent" --model builtin --state-dir "$state" 2>>"$tmp/err" | grep '"id":2,'
}

# Every page from the first, ids in order, into $1.
walk() {
	: > "$1"
	params='{}'
	while :; do
		out=$(call "$params") || fail "no answer to session/list $params"
		echo "$out" | grep -o '"sessionId":"[^"]*"' | cut -d'"' -f4 >> "$1"
		cur=$(echo "$out" | sed -n 's/.*"nextCursor":"\([^"]*\)".*/\1/p')
		[ -n "$cur" ] || break
		params="{\"cursor\":\"$cur\"}"
	done
}

walk "$tmp/got1"
cmp -s "$tmp/got1" "$tmp/expected" || fail "the pages are not every root once, newest first"
[ -f "$state/index.v1" ] || fail "no index file was written"
walk "$tmp/got2"
cmp -s "$tmp/got2" "$tmp/expected" || fail "the answers changed once the index file was used"
rm "$state/index.v1"
walk "$tmp/got3"
cmp -s "$tmp/got3" "$tmp/expected" || fail "the answers changed without the index file"
head -c 100 "$state/index.v1" > "$tmp/cut" && cp "$tmp/cut" "$state/index.v1"
: > "$tmp/err"
walk "$tmp/got4"
cmp -s "$tmp/got4" "$tmp/expected" || fail "the answers changed with a torn index file"
grep -q 'the index file was ignored' "$tmp/err" || fail "a torn index file was not reported"
for bad in '"bogus"' '"k:"' '"k:12:nope"' '"k:x:00000000-0000-4000-8000-000000000001"' '"o:"' '"o:-1"' '"o:1x"' '7'; do
	call "{\"cursor\":$bad}" | grep -q '"code":-32602' || fail "cursor $bad was not refused with -32602"
done
first=$(call '{"cursor":"o:50"}' | grep -o '"sessionId":"[^"]*"' | head -n 1 | cut -d'"' -f4)
[ "$first" = "$(sed -n 51p "$tmp/expected")" ] || fail "an o:50 cursor does not start at the 51st root"
echo "list_index: ok (120 roots paged in order with the index file, without it and with a torn one; 8 bad cursors refused; o:<n> still works)"
