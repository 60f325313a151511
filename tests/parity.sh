#!/bin/sh
# The parity check: a conversation run through replay and through openai (against the mock)
# must give the same normalized transcript and session logs.
set -u
cd "$(dirname "$0")/.."
if diff -u scenarios/parity-replay/expected/stdout.jsonl scenarios/parity-openai/expected/stdout.jsonl &&
	diff -ru scenarios/parity-replay/expected/sessions scenarios/parity-openai/expected/sessions; then
	echo "parity: replay and openai transcripts are identical"
else
	echo "parity: FAILED: replay and openai transcripts differ"
	exit 1
fi
