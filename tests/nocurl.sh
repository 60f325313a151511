#!/bin/sh
# --model openai on a machine without libcurl (an LD_PRELOAD shim makes dlopen of it fail): the
# agent starts and answers initialize and session/new (libcurl is loaded at the first request,
# docs/performance.md, "Start-up"); the first prompt fails with the loader's reason; the process goes on and exits 0.
# Usage: tests/nocurl.sh AGENT SHIM
set -u
. "$(dirname "$0")/lib.sh"
agent=$1 shim=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
tmp=$(mktemp -d /tmp/acp-nocurl-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "nocurl: FAILED: $*"; cut -c1-300 "$tmp/out"; exit 1; }
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}' \
	'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}' > "$tmp/in1"
sid=
{ cat "$tmp/in1"; sleep 1
  sid=$(grep -o '"sessionId":"[^"]*"' "$tmp/out" | head -n 1 | cut -d'"' -f4)
  echo "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"hi\"}]}}"
  sleep 1; } |
	LD_PRELOAD=$shim ACP_AGENT_API_KEY=sk-test-not-a-real-key-42 ACP_AGENT_BASE_URL=http://127.0.0.1:9/v1 \
	"$agent" --model openai --state-dir "$tmp/state" > "$tmp/out" 2> "$tmp/err"
status=$?
[ $status -eq 0 ] || fail "exit status $status; $(tail -n 2 "$tmp/err")"
grep -q '"id":1,"result"' "$tmp/out" || fail "no initialize answer"
grep -q '"id":2,"result"' "$tmp/out" || fail "no session/new answer"
# docs/contract.md §7.3: a turn error, -32603 "turn failed: ..."
grep '"id":3,' "$tmp/out" | grep -q '"error":{"code":-32603,.*"details":"turn failed: HTTP (the openai provider, MCP over HTTP) needs libcurl (libcurl4)' ||
	fail "the prompt did not fail with a turn error naming libcurl"
echo "nocurl: ok (--model openai without libcurl: initialize and session/new answered, the first prompt fails naming libcurl4, exit 0)"
