#!/bin/sh
# make lint: layering (lower layers never include higher ones), stdout discipline,
# cppcheck and clang-tidy. Exits non-zero on the first class of problems found.
set -u
cd "$(dirname "$0")/.."
status=0
floors="base session model workspace mcp scenario chat record agent tools acp"
# The C files of the floors (a floor may have none yet).
srcs=$(for d in $floors; do ls "$d"/*.c 2>/dev/null; done)

# Layer order: base < session < agent < tools < acp, and model/ (the providers), workspace/
# (files, search, processes), mcp/, scenario/ (the scenario runner, a client of the agent
# process), record/ (the recorder) and chat/ (the terminal client, which speaks ACP to a child agent and knows nothing of
# its insides) beside session/: above base/, below agent/, and none of them includes another. A
# file may include its own folder and the layers below it.
layer_of() {
	case "$1" in
	base/*) echo 0 ;; session/* | model/* | workspace/* | mcp/* | scenario/* | chat/* | record/*) echo 1 ;; agent/*) echo 2 ;; tools/*) echo 3 ;; acp/*) echo 4 ;;
	*) echo 9 ;;
	esac
}
for f in $(for d in $floors; do ls "$d"/*.[ch] 2>/dev/null; done); do
	mine=$(layer_of "$f")
	for inc in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
		theirs=$(layer_of "$inc")
		if [ "$theirs" -gt "$mine" ]; then
			echo "lint: layering: $f includes $inc (a higher layer)"
			status=1
		elif [ "$theirs" -eq "$mine" ] && [ "${inc%%/*}" != "${f%%/*}" ]; then
			echo "lint: layering: $f includes $inc (a side layer: model/, workspace/, mcp/, scenario/, chat/, record/ and session/ know only base/)"
			status=1
		fi
	done
done
# tools/ talks to agent/ services only: it never includes session/ internals directly.
if grep -n '#include "session/' tools/*.[ch] 2>/dev/null; then
	echo "lint: layering: tools/ includes session/ directly"
	status=1
fi
# struct agent is opaque outside agent/: only agent/, the tests and the benchmarks look inside.
if grep -ln '#include "agent/agent_def.h"' $srcs 2>/dev/null | grep -v '^agent/'; then
	echo "lint: layering: a file outside agent/ includes agent/agent_def.h (use agent.h's accessors)"
	status=1
fi
# struct sess likewise outside session/.
if grep -ln '#include "session/store_def.h"' $srcs 2>/dev/null | grep -v '^session/'; then
	echo "lint: layering: a file outside session/ includes session/store_def.h (use store.h's accessors)"
	status=1
fi
# ... and never appends to a session: its events go through the runtime (agent_append).
if grep -nE '\bsess_append(_[a-z]+)?\(' tools/*.[ch] 2>/dev/null; then
	echo "lint: layering: tools/ appends to a session (use agent_append)"
	status=1
fi

# The extension seam (agent/ext.h): the runtime and the protocol know no profile. The runtime's
# files never include an extension's header, acp/ never includes one, and nothing outside tests
# detects a profile by looking a tool up by name.
runtime="agent/agent.c agent/agent.h agent/agent_int.h agent/compact.c agent/conv.h agent/conversation.c agent/prompt.c agent/toolbox.c agent/toolbox.h agent/ext.h"
if grep -nE '#include "agent/(subagent|team)' $runtime acp/*.[ch] 2>/dev/null; then
	echo "lint: seam: the runtime or acp/ includes an extension's header (use agent/ext.h)"
	status=1
fi
if grep -nE 'toolbox_find\([^,]*, *"' $srcs; then
	echo "lint: seam: a profile detected by a tool name"
	status=1
fi

# Only base/wq.c writes the protocol stream; nothing prints to stdout elsewhere. scenario/ is
# `acp-agent scenario run`, which serves no protocol: its stdout is the report. The chat is
# another process whose stdout is a person's screen: chat/term.c writes it, chat/chat.c prints
# its --help, chat/edit.c hands it to libedit, which draws the line being typed.
if grep -nE '\b(printf|puts|putchar)\(|\bstdout\b' $srcs |
	grep -vE '^(base/wq|acp/main|chat/term|chat/chat|chat/edit)\.c:|^scenario/' ; then
	echo "lint: stdout is written outside base/wq.c (and acp/main.c's --help/--version, scenario/'s report, the chat's screen)"
	status=1
fi

if command -v cppcheck >/dev/null 2>&1; then
	cppcheck --quiet --enable=warning,performance,portability --std=c11 --library=posix \
		--inline-suppr --error-exitcode=1 --suppress=missingIncludeSystem --suppress=readdirCalled -I. \
		--include=tests/cppcheck-jansson.h \
		$floors || status=1
else
	echo "lint: cppcheck not installed: skipped"
fi

if command -v clang-tidy >/dev/null 2>&1; then
	flags="-std=c11 -D_GNU_SOURCE -I. $(pkg-config --cflags jansson libcurl 2>/dev/null)"
	checks='-*,bugprone-*,clang-analyzer-*,-bugprone-easily-swappable-parameters,-bugprone-reserved-identifier,-bugprone-assignment-in-if-condition,-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling,-bugprone-narrowing-conversions,-clang-analyzer-unix.Malloc,-clang-analyzer-valist.Uninitialized,-bugprone-sizeof-expression'
	# JOBS clang-tidy processes at once (2: the gate's cores), ten files each
	out=$(printf '%s\n' $srcs | xargs -P "${JOBS:-2}" -n 10 sh -c \
		'clang-tidy --quiet -checks="$0" --warnings-as-errors="*" "$@" -- '"$flags" "$checks" 2>&1)
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "$out" | grep -E 'warning|error' | grep -v 'warnings\? generated' | head -40
		status=1
	fi
else
	echo "lint: clang-tidy not installed: skipped"
fi

if command -v scan-build >/dev/null 2>&1; then
	rm -rf build/scan
	mkdir -p build
	scan-build --status-bugs -o build/scan-report make -s -j"${JOBS:-2}" VARIANT=scan build/scan/bin/acp-agent >build/scan.log 2>&1 ||
		{ grep -E "warning:|error:|Error [0-9]|bugs? found" build/scan.log | head -20; status=1; }
else
	echo "lint: scan-build not installed: skipped"
fi

[ $status -eq 0 ] && echo "lint: ok"
exit $status
