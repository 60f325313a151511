# Shared by the shell tests: sourced, never run.

# wait_for FILE PATTERN [SECONDS]: waits (20 s unless told) for a line of FILE matching PATTERN.
wait_for() {
	_ticks=$(( ${3:-20} * 20 ))
	_i=0
	while ! grep -q "$2" "$1" 2>/dev/null; do
		_i=$((_i + 1)); [ $_i -gt $_ticks ] && return 1
		sleep 0.05
	done
}

# big_log SID TURNS: a session log of TURNS finished turns, each a user message and four assistant
# messages of 2,000 bytes (about 10 KB a turn), no step/start (a replay position of 0).
big_log() {
	awk -v sid="$1" -v turns="$2" 'BEGIN {
		printf "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":1,\"cwd\":\"/tmp\",\"delegationDepth\":0}\n", sid
		pad = sprintf("%2000s", ""); gsub(/ /, "x", pad)
		seq = 0
		for (t = 1; t <= turns; t++) {
			printf "{\"seq\":%d,\"time\":%d,\"type\":\"turn/start\",\"data\":{\"turn\":%d}}\n", seq, seq + 10, t; seq++
			printf "{\"seq\":%d,\"time\":%d,\"type\":\"user/message\",\"data\":{\"id\":\"m%d\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"source\":{\"kind\":\"user\"}}}\n", seq, seq + 10, t, pad; seq++
			for (k = 0; k < 4; k++) {
				printf "{\"seq\":%d,\"time\":%d,\"type\":\"assistant/message\",\"data\":{\"turn\":%d,\"step\":1,\"id\":\"a%d\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"finish\":\"stop\"}}\n", seq, seq + 10, t, k, pad; seq++
			}
			printf "{\"seq\":%d,\"time\":%d,\"type\":\"turn/end\",\"data\":{\"turn\":%d,\"reason\":{\"kind\":\"completed\"}}}\n", seq, seq + 10, t; seq++
		}
	}'
}
