#!/bin/sh
# Image prompts (docs/contract.md §27) where a scenario cannot reach: a 20 MiB image whose store
# (off the loop) is met by a cancel, a close or the end of stdin (each prompt answered exactly
# once, the session usable after a cancel, the agent exits 0); 20 MiB + 1 refused from its length
# with nothing stored; a large image with a bad character, and one whose bytes lie about its type
# (both checked on the worker, where the line's buffer went), refused with nothing stored; a
# session loaded after its image's blob went (a text block says so).
# Usage: tests/images.sh AGENT
set -u
. "$(dirname "$0")/lib.sh"
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d /tmp/acp-images-XXXXXX)
pa=
trap 'kill -9 $pa 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "images: FAILED: $*"; for f in "$tmp"/*.out "$tmp"/*.err; do echo "--- $f"; cut -c1-300 "$f" | tail -n 20; done; exit 1; }
req() { printf '{"jsonrpc":"2.0","id":%s,"method":"%s","params":%s}\n' "$1" "$2" "$3"; }
sid=00000000-0000-4000-8000-000000000001
ok=0

# image_line ID BYTES: a session/prompt line with a PNG of BYTES bytes (the signature, then noise).
image_line() {
	{ printf '\211PNG\r\n\032\n'; head -c $(($2 - 8)) /dev/urandom; } > "$tmp/img"
	{ printf '{"jsonrpc":"2.0","id":%s,"method":"session/prompt","params":{"sessionId":"%s","prompt":[' "$1" "$sid"
	  printf '{"type":"text","text":"what is it?"},{"type":"image","mimeType":"image/png","data":"'
	  base64 -w0 "$tmp/img"
	  printf '"}]}}\n'; } > "$tmp/line"
}
image_line 3 $((20 * 1024 * 1024))

# start NAME: an agent on its own state directory, reading the fifo NAME.in (fd 3).
start() {
	rm -f "$tmp/$1.in"
	mkfifo "$tmp/$1.in"
	"$agent" --deterministic --model builtin --state-dir "$tmp/$1" < "$tmp/$1.in" > "$tmp/$1.out" 2> "$tmp/$1.err" &
	pa=$!
	exec 3> "$tmp/$1.in"
	{ req 1 initialize '{"protocolVersion":1}'; req 2 session/new "{\"cwd\":\"$tmp\",\"mcpServers\":[]}"; } >&3
	wait_for "$tmp/$1.out" '"id":2,"result"' 30 || fail "$1: no session"
}
# finish NAME: stdin ends; the agent must exit 0.
finish() {
	exec 3>&-
	wait $pa || fail "$1: the agent exited $?"
	pa=
}
# once NAME ID: request ID was answered exactly once, cancelled or end_turn.
once() {
	n=$(grep -c "\"id\":$2,\"result\":{\"stopReason\":\"\(cancelled\|end_turn\)\"}" "$tmp/$1.out")
	[ "$n" -eq 1 ] || fail "$1: request $2 answered $n times (want one, cancelled or end_turn)"
	[ "$(grep -c "\"id\":$2," "$tmp/$1.out")" -eq 1 ] || fail "$1: request $2 has more than one answer"
}

# A cancel right behind the prompt: answered once; the next prompt runs.
start cancel
{ cat "$tmp/line"; printf '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"%s"}}\n' "$sid"; } >&3
wait_for "$tmp/cancel.out" '"id":3,' 60 || fail "cancel: the image prompt was not answered"
req 4 session/prompt "{\"sessionId\":\"$sid\",\"prompt\":[{\"type\":\"text\",\"text\":\"after\"}]}" >&3
wait_for "$tmp/cancel.out" '"id":4,' 30 || fail "cancel: the next prompt was not answered"
grep -q '"id":4,"result":{"stopReason":"end_turn"}' "$tmp/cancel.out" || fail "cancel: the next prompt did not run"
finish cancel
once cancel 3
ok=$((ok + 1))

# A close right behind it: both answered, once each.
start close
{ cat "$tmp/line"; req 4 session/close "{\"sessionId\":\"$sid\"}"; } >&3
wait_for "$tmp/close.out" '"id":4,' 60 || fail "close: session/close was not answered"
wait_for "$tmp/close.out" '"id":3,' 30 || fail "close: the image prompt was not answered"
finish close
once close 3
ok=$((ok + 1))

# The end of stdin right behind it: answered, and the agent exits 0.
start eof
cat "$tmp/line" >&3
finish eof
once eof 3
ok=$((ok + 1))

# 20 MiB + 1: refused from its length; nothing stored.
image_line 3 $((20 * 1024 * 1024 + 1))
start big
cat "$tmp/line" >&3
wait_for "$tmp/big.out" '"id":3,' 60 || fail "big: not answered"
grep -q '"id":3,"error":{"code":-32602,.*prompt\[1\].data: the image is larger than 20 MiB (20971521 bytes)' "$tmp/big.out" ||
	fail "big: not refused as too large"
finish big
[ ! -e "$tmp/big/blobs" ] || fail "big: something was stored"
ok=$((ok + 1))

# A large image with a bad character (decoded where it lies in the line, on the worker) and one
# whose bytes lie about its type: each refused with its place, nothing stored.
image_line 3 $((2 * 1024 * 1024))
sed 's/"data":"\(.\{1000\}\)./"data":"\1*/' "$tmp/line" > "$tmp/bad-line"
{ printf '\377\330\377'; head -c $((2 * 1024 * 1024)) /dev/urandom; } > "$tmp/jpg"
{ printf '{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"%s","prompt":[' "$sid"
  printf '{"type":"image","mimeType":"image/png","data":"'; base64 -w0 "$tmp/jpg"; printf '"}]}}\n'; } > "$tmp/lie-line"
start bad
cat "$tmp/bad-line" >&3
wait_for "$tmp/bad.out" '"id":3,' 60 || fail "bad: not answered"
grep -q '"id":3,"error":{"code":-32602,.*prompt\[1\].data: not valid base64 (at character 1000)' "$tmp/bad.out" ||
	fail "bad: not refused at its character"
cat "$tmp/lie-line" >&3
wait_for "$tmp/bad.out" '"id":4,' 60 || fail "bad: the lying image was not answered"
grep -q '"id":4,"error":{"code":-32602,.*prompt\[0\].data: the bytes are not image/png data' "$tmp/bad.out" ||
	fail "bad: the lying image was not refused"
finish bad
[ ! -e "$tmp/bad/blobs" ] || [ -z "$(ls "$tmp/bad/blobs")" ] || fail "bad: something was stored"
ok=$((ok + 1))

# A load after the blob went: the image shows as a text block saying why.
image_line 3 1000
start gone
cat "$tmp/line" >&3
wait_for "$tmp/gone.out" '"id":3,"result"' 30 || fail "gone: the prompt did not end"
finish gone
blob=$(ls "$tmp/gone/blobs")
[ -n "$blob" ] && [ "$(stat -c %a "$tmp/gone/blobs/$blob")" = 600 ] || fail "gone: no blob, or not 0600"
[ "$blob" = "$(sha256sum "$tmp/img" | cut -d' ' -f1)" ] || fail "gone: the blob is not named by its digest"
rm "$tmp/gone/blobs/$blob"
mv "$tmp/gone.out" "$tmp/gone-first.out"
rm -f "$tmp/gone.in" && mkfifo "$tmp/gone.in"
"$agent" --deterministic --model builtin --state-dir "$tmp/gone" < "$tmp/gone.in" > "$tmp/gone.out" 2> "$tmp/gone.err" &
pa=$!
exec 3> "$tmp/gone.in"
{ req 1 initialize '{"protocolVersion":1}'; req 2 session/load "{\"sessionId\":\"$sid\",\"cwd\":\"$tmp\",\"mcpServers\":[]}"; } >&3
wait_for "$tmp/gone.out" '"id":2,' 30 || fail "gone: the load was not answered"
finish gone
grep -q "\"user_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"\[image not available: image blob $blob cannot be opened: No such file or directory\]\"" "$tmp/gone.out" ||
	fail "gone: the replay does not say the image is not available"
grep -q "warn.*image blob $blob cannot be opened" "$tmp/gone.err" || fail "gone: no warning"
ok=$((ok + 1))

echo "images: ok ($ok checks: a 20 MiB image prompt met by a cancel, a close and EOF while it is stored; 20 MiB + 1 refused, nothing stored; a large image with a bad character and one that lies about its type refused by the worker, nothing stored; a load after the blob went)"
