#!/bin/sh
# Drives the whole agent against MCP servers nobody here wrote, from npm, over stdio (docs/contract.md §18):
# @modelcontextprotocol/server-everything and @modelcontextprotocol/server-filesystem (pointed at
# the session's temp workspace), and server-everything again over Streamable HTTP (§20.1: started
# by the driver on a free port, with an ACP header whose secret value must show up nowhere; the
# HTTP exchanges are pinned), through the newest @agentclientprotocol/sdk as the editor. The
# replay recording tests/clients/mcp-recording.json makes the model call their tools; what the
# model saw, the ACP updates, the permission asks, the files on disk, the schema of every line the
# agent wrote, and that no server process outlives the agent are checked. See tests/clients/mcp.mjs.
# The packages are installed once into build/mcp-servers (again only when the pins below change);
# the servers run on the system's node (their engines ask for 18 or newer; the SDK is pinned too,
# so the server side of the protocol does not move under the test). Skipped, saying so, without npm,
# without a node that new, or without the registry. MCP_SERVERS_KEEP=1 keeps the traces.
# Usage: tests/mcp_servers.sh AGENT
set -eu
if [ $# -ne 1 ]; then
	echo "usage: tests/mcp_servers.sh AGENT" >&2
	exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$1" ]; then
	echo "mcp_servers: FAILED (no agent binary at $1)"
	exit 1
fi
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cache=$root/build/mcp-servers
mods=$cache/node_modules/@modelcontextprotocol
pkgs="@modelcontextprotocol/server-everything@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/sdk@1.32.2 sdk-new@npm:@agentclientprotocol/sdk@2.4.0 ajv@8.17.1"

if ! node=$(command -v node) || [ "$("$node" -p 'process.versions.node.split(".")[0] >= 18' 2>/dev/null)" != true ]; then
	echo "mcp_servers: SKIPPED (no node 18 or newer)"
	exit 0
fi
if [ ! -f "$mods/server-everything/dist/index.js" ] || [ "$(cat "$cache/installed" 2>/dev/null)" != "$pkgs" ]; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "mcp_servers: SKIPPED (npm not installed)"
		exit 0
	fi
	if ! npm ping --fetch-timeout=20000 --fetch-retries=1 >/dev/null 2>&1; then
		echo "mcp_servers: SKIPPED (the npm registry is unreachable)"
		exit 0
	fi
	rm -rf "$cache/node_modules" "$cache/package.json" "$cache/package-lock.json" "$cache/installed"
	mkdir -p "$cache"
	# shellcheck disable=SC2086 # $pkgs is a list of words
	if ! npm install --prefix "$cache" --no-audit --no-fund --save-exact $pkgs >"$cache/install.log" 2>&1 ||
	    [ ! -f "$mods/server-everything/dist/index.js" ] || [ ! -f "$mods/server-filesystem/dist/index.js" ]; then
		echo "mcp_servers: FAILED (npm install into build/mcp-servers failed; see build/mcp-servers/install.log)"
		exit 1
	fi
	printf '%s\n' "$pkgs" >"$cache/installed"
fi

# The driver runs from inside build/mcp-servers so that it resolves its node_modules.
rm -rf "$cache/run"
mkdir -p "$cache/run" "$cache/tmp"
cp "$root"/tests/clients/mcp.mjs "$root"/tests/clients/lib.mjs "$root"/tests/clients/tap.mjs "$root"/tests/clients/mcp-tap.mjs \
	"$root"/tests/clients/mcp-http-tap.mjs "$root"/tests/clients/schema.mjs "$root"/tests/acp-schema/stabilized.mjs "$root"/tests/clients/mcp-recording.json "$cache/run/"
work=$(mktemp -d "$cache/tmp/run-XXXXXX")
# Leftovers of a broken agent or driver: a server of this run (a server script with the workspace
# as its cwd, or web/ for the one the driver starts over HTTP), killed by its pid.
cleanup() {
	for c in /proc/[0-9]*/cmdline; do
		p=${c#/proc/}
		p=${p%/cmdline}
		{ tr '\0' ' ' <"$c"; } 2>/dev/null | grep -qF -- "$mods/server-" || continue
		case "$(readlink "/proc/$p/cwd" 2>/dev/null)" in
		"$work/cwd" | "$work/web") kill -9 "$p" 2>/dev/null ;;
		esac
	done
	if [ "${MCP_SERVERS_KEEP:-}" = 1 ]; then
		echo "mcp_servers: traces kept in $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
# The driver prints "FAIL <what>" per failure, then "OK <summary>".
rc=0
CLIENTS_AGENT=$agent CLIENTS_WORK=$work CLIENTS_RECORDING=$cache/run/mcp-recording.json MCP_SERVERS=$mods \
	"$node" "$cache/run/mcp.mjs" >"$work/driver.out" 2>"$work/driver.err" || rc=$?
sed -n 's/^FAIL /mcp_servers: FAIL /p' "$work/driver.out"
summary=$(sed -n 's/^OK //p' "$work/driver.out")
if [ $rc -ne 0 ] || [ -z "$summary" ] || grep -q '^FAIL ' "$work/driver.out" || [ -s "$work/driver.err" ]; then
	[ -s "$work/driver.err" ] && sed 's/^/mcp_servers: driver stderr: /' "$work/driver.err" | head -5
	echo "mcp_servers: FAILED ($(grep -c '^FAIL ' "$work/driver.out") problems; driver exit $rc; MCP_SERVERS_KEEP=1 keeps the traces)"
	exit 1
fi
echo "mcp_servers: ok ($summary)"
