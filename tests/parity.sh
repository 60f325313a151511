#!/bin/sh
# The parity check: a conversation run through replay and through openai (against the mock)
# must give the same normalized transcript and session logs. The one line allowed to differ is
# what names the model: session/created's, and the model select of configOptions ("replay", or
# the server's model).
set -u
cd "$(dirname "$0")/.."
tmp=$(mktemp -d /tmp/acp-parity-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for side in replay openai; do
	mkdir -p "$tmp/$side"
	for f in scenarios/parity-$side/expected/sessions/*.jsonl; do
		sed 's/^\({"seq":0,"time":"<time>","type":"session\/created","data":{"mode":"[a-z-]*","model":\)"[^"]*"/\1"<model>"/' \
			"$f" > "$tmp/$side/$(basename "$f")"
	done
done
for side in replay openai; do
	sed 's/"id":"model","name":"Model","category":"model","type":"select","currentValue":"[^"]*","options":\[{"value":"[^"]*","name":"[^"]*","description":"[^"]*"}\]/"id":"model",<model select>/' \
		scenarios/parity-$side/expected/stdout.jsonl > "$tmp/$side.stdout"
done
if diff -u "$tmp/replay.stdout" "$tmp/openai.stdout" &&
	diff -ru "$tmp/replay" "$tmp/openai"; then
	echo "parity: replay and openai transcripts are identical"
else
	echo "parity: FAILED: replay and openai transcripts differ"
	exit 1
fi
