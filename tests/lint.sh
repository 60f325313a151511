#!/bin/sh
# make lint: layering (lower layers never include higher ones), stdout discipline,
# cppcheck and clang-tidy. Exits non-zero on the first class of problems found.
set -u
cd "$(dirname "$0")/.."
status=0

# Layer order: base < session < agent < tools < acp, and model/ (the providers) beside session/:
# above base/, below agent/, and neither of the two includes the other. A file may include its
# own folder and the layers below it.
layer_of() {
	case "$1" in
	base/*) echo 0 ;; session/* | model/*) echo 1 ;; agent/*) echo 2 ;; tools/*) echo 3 ;; acp/*) echo 4 ;;
	*) echo 9 ;;
	esac
}
for f in base/*.[ch] session/*.[ch] model/*.[ch] agent/*.[ch] tools/*.[ch] acp/*.[ch]; do
	mine=$(layer_of "$f")
	for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
		theirs=$(layer_of "$inc")
		if [ "$theirs" -gt "$mine" ]; then
			echo "lint: layering: $f includes $inc (a higher layer)"
			status=1
		elif [ "$theirs" -eq "$mine" ] && [ "${inc%%/*}" != "${f%%/*}" ]; then
			echo "lint: layering: $f includes $inc (a side layer: model/ and session/ know only base/)"
			status=1
		fi
	done
done
# tools/ talks to agent/ services only: it never includes session/ internals directly.
if grep -n '#include "session/' tools/*.[ch] 2>/dev/null; then
	echo "lint: layering: tools/ includes session/ directly"
	status=1
fi

# Only acp/wq.c writes the protocol stream; nothing prints to stdout elsewhere.
if grep -nE '\b(printf|puts|putchar)\(|\bstdout\b' base/*.c session/*.c model/*.c agent/*.c tools/*.c acp/*.c |
	grep -vE '^acp/(wq|main)\.c:' ; then
	echo "lint: stdout is written outside acp/wq.c (and acp/main.c's --help/--version)"
	status=1
fi

if command -v cppcheck >/dev/null 2>&1; then
	cppcheck --quiet --enable=warning,performance,portability --std=c11 --library=posix \
		--inline-suppr --error-exitcode=1 --suppress=missingIncludeSystem --suppress=readdirCalled -I. \
		--include=tests/cppcheck-jansson.h \
		base session model agent tools acp || status=1
else
	echo "lint: cppcheck not installed: skipped"
fi

if command -v clang-tidy >/dev/null 2>&1; then
	flags="-std=c11 -D_GNU_SOURCE -I. $(pkg-config --cflags jansson libcurl 2>/dev/null)"
	out=$(clang-tidy --quiet -checks='-*,bugprone-*,clang-analyzer-*,-bugprone-easily-swappable-parameters,-bugprone-reserved-identifier,-bugprone-assignment-in-if-condition,-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling,-bugprone-narrowing-conversions,-clang-analyzer-unix.Malloc,-clang-analyzer-valist.Uninitialized,-bugprone-sizeof-expression' \
		--warnings-as-errors='*' base/*.c session/*.c model/*.c agent/*.c tools/*.c acp/*.c -- $flags 2>&1)
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "$out" | grep -E 'warning|error' | head -40
		status=1
	fi
else
	echo "lint: clang-tidy not installed: skipped"
fi

if command -v scan-build >/dev/null 2>&1; then
	rm -rf build/scan
	scan-build --status-bugs -o build/scan-report make -s VARIANT=scan build/scan/bin/acp-agent >build/scan.log 2>&1 ||
		{ grep -E "warning:|error:|Error [0-9]|bugs? found" build/scan.log | head -20; status=1; }
else
	echo "lint: scan-build not installed: skipped"
fi

[ $status -eq 0 ] && echo "lint: ok"
exit $status
