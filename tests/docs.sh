#!/bin/sh
# The generated docs are current: docs/tools.md (the profiles' tools) and docs/errors.md (the
# error-code table) are what `make docs` would write from this tree.
set -u
cd "$(dirname "$0")/.."
agent=${1:-bin/acp-agent}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
{ "$agent" --print-tools-markdown && echo && "$agent" --profile team --print-tools-markdown; } >"$tmp/tools.md"
sh tests/gen/errcodes_md.sh >"$tmp/errors.md"
for f in tools.md errors.md; do
	if ! cmp -s "$tmp/$f" "docs/$f"; then
		echo "docs: docs/$f is stale (run make docs):"
		diff -u "docs/$f" "$tmp/$f" | head -20
		status=1
	fi
done
[ $status -eq 0 ] && echo "docs: ok (docs/tools.md and docs/errors.md are current; $(grep -c '^| `ERR_' docs/errors.md) error codes)"
exit $status
