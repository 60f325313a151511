#!/bin/sh
# Runs a command N times in a row with two CPU hogs beside it (a busy 2-core machine); stops at
# the first failure. Every test that waits must wait for an event: this is how to find those
# that wait for a time instead. Not in make test (it is the probe, not a test).
# Usage: tests/hogs.sh N COMMAND [ARG...]
#   e.g. tests/hogs.sh 3 make --no-print-directory check-unit scenarios
set -u
n=$1
shift
sh -c 'while :; do :; done' & h1=$!
sh -c 'while :; do :; done' & h2=$!
trap 'kill $h1 $h2 2>/dev/null' EXIT INT TERM
i=1
while [ "$i" -le "$n" ]; do
	"$@" || { echo "hogs: run $i of $n failed: $*"; exit 1; }
	i=$((i + 1))
done
echo "hogs: $n of $n runs passed beside two CPU hogs: $*"
