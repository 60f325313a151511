#!/bin/sh
# mcp/http.c against the reference MCP server (@modelcontextprotocol/server-everything) in
# Streamable HTTP mode, through tests/mcp_http_probe.c: initialize, notifications/initialized,
# tools/list, tools/call echo, close (DELETE). The package is installed into build/npm-mcp/ on
# first use; without npm, or when the install fails (offline), the test is skipped with a line.
# Not in make test (it needs the network once).
#   Usage: sh tests/mcp_http_everything.sh [PROBE]   (default build/release/bin/mcp-http-probe,
#   built when missing)
set -u
probe=${1:-build/release/bin/mcp-http-probe}
dir=build/npm-mcp
pkg=$dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js
skip() { echo "mcp_http_everything: skipped ($*)"; exit 0; }

command -v npm >/dev/null 2>&1 || skip "no npm"
command -v node >/dev/null 2>&1 || skip "no node"
if [ ! -x "$probe" ]; then
	${MAKE:-make} --no-print-directory "$probe" >/dev/null || { echo "mcp_http_everything: FAILED: cannot build $probe"; exit 1; }
fi
if [ ! -f "$pkg" ]; then
	mkdir -p "$dir"
	npm install --prefix "$dir" --no-audit --no-fund --no-save @modelcontextprotocol/server-everything \
		>"$dir/install.log" 2>&1 || skip "npm install failed, offline? see $dir/install.log"
	[ -f "$pkg" ] || skip "npm install left no $pkg"
fi

# A free port, from the kernel.
port=$(node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
log=$dir/server.log
PORT=$port node "$pkg" streamableHttp >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT INT TERM
i=0
until grep -q "listening on port $port" "$log" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 $pid 2>/dev/null; then
		echo "mcp_http_everything: FAILED: the server did not start; $log says:"
		tail -5 "$log"
		exit 1
	fi
	sleep 0.1
done

out=$("$probe" "http://127.0.0.1:$port/mcp" 2>&1)
rc=$?
echo "$out" | sed 's/^/  /'
# The probe's ACP header went out on every request and its value into no log of ours.
if echo "$out" | grep -q "probe-value"; then
	echo "mcp_http_everything: FAILED: a header value was printed"
	rc=1
fi
grep -q "Received session termination request" "$log" || { echo "mcp_http_everything: FAILED: no DELETE reached the server"; rc=1; }
grep -q "Establishing new SSE stream" "$log" || { echo "mcp_http_everything: FAILED: no GET stream reached the server"; rc=1; }
if [ $rc -eq 0 ]; then
	echo "mcp_http_everything: ok"
else
	echo "mcp_http_everything: FAILED (server log: $log)"
fi
exit $rc
