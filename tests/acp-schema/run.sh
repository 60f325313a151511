#!/bin/sh
# Validates the scenario traces in $1 against the official ACP v1 schema (npm package
# @agentclientprotocol/sdk). Skips, saying so, when npm is not installed.
set -eu
traces=$1
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
	echo "acp schema check: SKIPPED (node/npm not installed)"
	exit 0
fi
cache=${ACP_SCHEMA_CACHE:-$here/../../build/acp-schema}
mkdir -p "$cache"
cp "$here/package.json" "$here/validate.mjs" "$here/stabilized.mjs" "$cache/"
if [ ! -d "$cache/node_modules/@agentclientprotocol/sdk" ] || [ ! -d "$cache/node_modules/ajv" ]; then
	(cd "$cache" && npm install --silent --no-audit --no-fund >/dev/null 2>&1) || {
		echo "acp schema check: FAILED (npm install of @agentclientprotocol/sdk failed)"; exit 1; }
fi
exec node "$cache/validate.mjs" "$traces"
