#!/bin/sh
# make bench: builds and runs every benchmark; each prints its figures.
set -eu
cd "$(dirname "$0")/.."
for b in build/release/bin/bench_*; do
	[ -x "$b" ] && "$b"
done
