#!/bin/sh
# `acp-agent chat` in a real terminal (tmux; docs/contract.md §21): the line editor's keys (arrows,
# Ctrl-A, Ctrl-E, Ctrl-K, Ctrl-U, history with Up, kept across chats in the state directory,
# 0600), a bracketed paste and a line ended by '\' (each one prompt), Ctrl-C dropping the line
# being typed, output streaming in above a line being typed (the line intact, last on the
# screen), a permission ask that stays the last thing on the screen while a child's output
# arrives, escape sequences in a file and in the model's text shown and never acted on, the
# chat's own commands (/help, /image attached and logged, /model, /mode), a plan drawn as a list,
# chat --list, Ctrl-D.
# Each step waits for what the screen shows; a bound only turns a hang into a failure.
# Usage: tests/chat_tty.sh AGENT MOCK
set -u
agent=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mock=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
command -v tmux >/dev/null 2>&1 || { echo "chat-tty: SKIPPED (tmux is not installed)"; exit 0; }
tmp=$(mktemp -d /tmp/acp-chat-tty-XXXXXX)
nsock=0
sock=acp-chat-tty-$$-0
T() { tmux -L "$sock" "$@"; }
mpid=
trap 'T kill-server 2>/dev/null; [ -n "$mpid" ] && kill $mpid 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
for v in $(env | sed -n 's/^\(ACP_AGENT_[A-Z_]*\)=.*/\1/p'); do
	unset "$v"
done
ok=0
fail() { echo "chat-tty: FAILED: $*"; echo "--- screen:"; T capture-pane -p -t c 2>/dev/null | grep -v '^$' | tail -n 25; exit 1; }
screen() { T capture-pane -p -t c; }
# wait_screen PATTERN [SECONDS]: the screen shows PATTERN (a grep -E pattern).
wait_screen() {
	i=0
	while ! screen | grep -qE -- "$1"; do
		i=$((i + 1)); [ $i -gt $((${2:-20} * 20)) ] && fail "the screen never showed /$1/"
		sleep 0.05
	done
}
# last_line: the last line of the screen that is not empty.
last_line() { screen | grep -v '^ *$' | tail -n 1; }
keys() { T send-keys -t c "$@"; }
# chat NAME ARGS...: a chat in the workspace, on its own state directory, in a new tmux session.
chat() {
	name=$1; shift
	T kill-server 2>/dev/null
	nsock=$((nsock + 1)); sock=acp-chat-tty-$$-$nsock	# a fresh server: no race with the old one's exit
	# the pane stays after the chat exits, so its last screen can be read (set before it starts)
	printf 'set -g remain-on-exit on\n' > "$tmp/tmux.conf"
	T -f "$tmp/tmux.conf" new-session -d -s c -x 100 -y 40 \
		"cd '$tmp/ws' && exec ${wrap:-} '$agent' chat --state-dir '$tmp/$name' $* 2> '$tmp/$name.err'" ||
		fail "tmux could not start"
	wait_screen 'Ctrl-D exits'
	wait_screen '^> ?$'
}
# user_messages NAME: the person's prompts logged in the chat's state directory, one per line.
user_messages() {
	cat "$tmp/$1"/sessions/*.jsonl | grep '"type":"user/message"' | grep '"kind":"user"' |
		sed 's/.*"content":\[{"type":"text","text":"\([^"]*\)".*/\1/'
}
mkdir -p "$tmp/ws"

# ---- the keys, history, paste, continuation, Ctrl-C, /commands (builtin model) ----
chat keys --model builtin
keys 'hello world'; wait_screen '^> hello world$'
keys Left Left Left Left Left 'X'; wait_screen '^> hello Xworld$'
keys C-a 'A' C-e 'E'; wait_screen '^> Ahello XworldE$'
keys Enter; wait_screen 'No model is configured'; wait_screen '^> ?$'
keys 'drop me' C-a C-k 'kept'; wait_screen '^> kept$'
keys C-u 'typed again' Enter; wait_screen '^> typed again$'; wait_screen '^> ?$'
keys Up; wait_screen '^> typed again$'
keys Up; wait_screen '^> Ahello XworldE$'
keys Down Enter; wait_screen '^> ?$'
# Ctrl-C while idle drops the line being typed
keys 'not this'; wait_screen '^> not this$'
keys C-c; wait_screen '^> ?$'
[ "$(last_line)" = '> ' ] || [ "$(last_line)" = '>' ] || fail "Ctrl-C did not leave an empty prompt last: $(last_line)"
# Ctrl-C on a line that wraps: none of its rows is left
keys "$(printf 'w%.0s' $(seq 1 150))"; wait_screen '^w+$'
keys C-c; wait_screen '^> ?$'
screen | grep -q 'wwwww' && fail "Ctrl-C left rows of a wrapped line"
# the history's position starts again at its end after each line
keys 'one' Enter; wait_screen '^> ?$'; keys 'two' Enter; wait_screen '^> ?$'
keys Up Up; wait_screen '^> one$'; keys Enter; wait_screen '^> ?$'
keys 'four' Enter; wait_screen '^> ?$'
keys Up; wait_screen '^> four$'; keys C-u
# what is not ASCII is typed as it is
keys 'café 日本' Enter; wait_screen '^> ?$'
# a bracketed paste of two lines is one prompt (not sent until Enter)
printf 'pasted one\npasted two\n\n\n' > "$tmp/paste"	# blank lines at its end do not send it
T load-buffer "$tmp/paste"
T paste-buffer -p -t c
wait_screen '^pasted two$'
[ "$(last_line)" = 'pasted two' ] || fail "the paste was sent without Enter: $(last_line)"
keys Enter; wait_screen '^> ?$'
# a line ended by a backslash goes on on the next
keys 'first half \' Enter; wait_screen '^\.\.\. ?$'
keys 'second half' Enter; wait_screen '^> ?$'
# the chat's own commands
printf '\211PNG\r\n\032\n0123456789' > "$tmp/ws/shot.png"
keys '/image shot.png' Enter; wait_screen 'image attached: shot.png, image/png, 18 bytes'
keys '/image missing.png' Enter; wait_screen 'error: /image missing.png: No such file or directory'
keys 'what is this' Enter; wait_screen '\(with 1 image\)'; wait_screen '^> ?$'
keys '/help' Enter; wait_screen '^chat commands:$'; wait_screen '^/compact: '
keys '/model' Enter; wait_screen '\(model: builtin; one of: builtin\)'
keys '/mode read-only' Enter; wait_screen '\(mode: read-only\)'
keys '/model nope' Enter; wait_screen 'not one of the model option.s values'
keys C-d; wait_screen 'resume with: acp-agent chat'
msgs=$(user_messages keys)
for want in 'Ahello XworldE' 'typed again' 'one' 'four' 'café 日本' 'pasted one\npasted two' 'first half \nsecond half' 'what is this'; do
	printf '%s\n' "$msgs" | grep -qxF -- "$want" || fail "no prompt \"$want\" in the log: $msgs"
done
[ "$(printf '%s\n' "$msgs" | grep -cxF 'typed again')" -eq 2 ] || fail "Up and Enter did not send the prompt again"
[ "$(printf '%s\n' "$msgs" | grep -cxF 'one')" -eq 2 ] || fail "Up Up and Enter did not send 'one' again"
grep -q '"type":"image","mimeType":"image/png","blob":"[0-9a-f]\{64\}","bytes":18' "$tmp"/keys/sessions/*.jsonl ||
	fail "the attached image is not in the log"
[ "$(stat -c %a "$tmp/keys/chat_history")" = 600 ] || fail "the history is not 0600"
ok=$((ok + 1))

# the history is kept across chats
chat keys --model builtin
keys Up; wait_screen '^> /model nope$'
keys C-u C-d; wait_screen 'resume with'
ok=$((ok + 1))

# chat --list: the sessions, newest first, with their titles
"$agent" chat --list --state-dir "$tmp/keys" > "$tmp/list.out" 2>&1 || fail "chat --list failed: $(cat "$tmp/list.out")"
[ "$(wc -l < "$tmp/list.out")" -eq 2 ] || fail "chat --list: not two sessions: $(cat "$tmp/list.out")"
head -n 1 "$tmp/list.out" | grep -q '  (no prompt yet)$' || fail "chat --list: the newest (no prompt) is not first"
tail -n 1 "$tmp/list.out" | grep -q "  $tmp/ws  Ahello XworldE$" || fail "chat --list: no title: $(cat "$tmp/list.out")"
ok=$((ok + 1))

# ---- output while typing; an ask kept last; escape sequences (the mock model) ----
ev() { printf '{"choices": [{"index": 0, "delta": %s, "finish_reason": %s}]}' "$1" "${2:-null}"; }
call() { printf '{"index": %d, "id": "%s", "type": "function", "function": {"name": "%s", "arguments": "%s"}}' "$1" "$2" "$3" "$4"; }
printf 'a file with \033[41mred\033[0m and a bell \007 in it\n' > "$tmp/ws/hostile.txt"
cat > "$tmp/mock.json" <<EOF
{"responses": [
 {"per_event": true, "delay_ms": 2500, "events": [$(ev '{"content": "one two "}'), $(ev '{"content": "three\nfour "}'), $(ev '{"content": "five six."}' '"stop"')]},
 {"events": [$(ev '{"content": "Escapes: \u001b[42mgreen\u001b[0m \u001b]0;title\u0007 \u001b[2J done."}' '"stop"')]},
 {"events": [$(ev "{\"tool_calls\": [$(call 0 c1 read '{\"file_path\": \"hostile.txt\"}')]}" '"tool_calls"')]},
 {"events": [$(ev '{"content": "Read it."}' '"stop"')]},
 {"events": [$(ev "{\"tool_calls\": [$(call 0 c4 todo_write '{\"todos\": [{\"content\": \"Read the file\", \"status\": \"completed\"}, {\"content\": \"Describe it\", \"status\": \"in_progress\"}]}')]}" '"tool_calls"')]},
 {"events": [$(ev '{"content": "Planned."}' '"stop"')]},
 {"events": [$(ev "{\"tool_calls\": [$(call 0 c2 subagent '{\"description\": \"helper\", \"prompt\": \"Say hi.\", \"run_in_background\": true}'), $(call 1 c3 bash '{\"command\": \"echo asked\", \"description\": \"Echo asked\"}')]}" '"tool_calls"')]},
 {"wait_file": "$tmp/go-child", "events": [$(ev '{"content": "child says hi"}' '"stop"')]},
 {"events": [$(ev '{"content": "All done."}' '"stop"')]},
 {"events": [$(ev '{"content": "Noted."}' '"stop"')]},
 {"events": [$(ev '{"content": "Noted."}' '"stop"')]}
]}
EOF
"$mock" --script "$tmp/mock.json" --log "$tmp/mock.log" --port-file "$tmp/port" & mpid=$!
i=0; while [ ! -s "$tmp/port" ]; do i=$((i + 1)); [ $i -gt 400 ] && fail "the mock did not start"; sleep 0.05; done
export ACP_AGENT_API_KEY=test-key ACP_AGENT_BASE_URL="http://127.0.0.1:$(cat "$tmp/port")/v1"
chat live
# the first answer streams (2.5 s between its pieces) while a line is typed: the output goes
# above, the line stays last
keys 'go' Enter; wait_screen '^one two'
keys Escape	# a lone Esc: dropped, it does not hold the output back
wait_screen '^four'
keys 'typing ahead'; wait_screen '^> typing ahead$'
wait_screen '^four five six\.$'
[ "$(last_line)" = '> typing ahead' ] || fail "the line being typed is not last under the output: $(last_line)"
screen | grep -q '^one two three$' || fail "the streamed text is not whole above the line"
# Enter sends it once the turn is over: the escapes answer
keys Enter; wait_screen 'Escapes:'; wait_screen '^> ?$'
screen | grep -qF 'Escapes: ^[[42mgreen^[[0m ^[]0;title^G ^[[2J done.' || fail "the model's escapes are not shown as text"
T capture-pane -e -p -t c | grep -q "$(printf '\033')\[42m" && fail "the model's text set a green background"
# a file with escapes, read by a tool
keys 'read it' Enter; wait_screen 'Read it\.'; wait_screen '^> ?$'
screen | grep -qF 'a file with ^[[41mred^[[0m and a bell ^G in it' || fail "the file's escapes are not shown as text"
T capture-pane -e -p -t c | grep -q "$(printf '\033')\[41m" && fail "the file set a red background"
# a plan, drawn as a list
keys 'plan it' Enter; wait_screen 'Planned\.'; wait_screen '^> ?$'
screen | grep -q '^plan:$' && screen | grep -qF '[x] Read the file' && screen | grep -qF '[>] Describe it' ||
	fail "the plan is not drawn as a list"
# an ask, then a child's output: the ask stays at the bottom
keys 'ask me' Enter; wait_screen 'permission: '
touch "$tmp/go-child"; wait_screen 'child says hi'
screen | grep -v '^ *$' | tail -n 3 | grep -q 'permission: ' || fail "the ask is not the last thing on the screen"
last_line | grep -qF '[a] ' || fail "the ask's keys are not the last line: $(last_line)"
keys Up; sleep 0.3	# an arrow is no answer (its "A" would be "always"); nothing to wait for
screen | grep -q 'answered: ' && fail "an arrow key answered the ask"
keys a; wait_screen 'answered: Allow$'; wait_screen 'All done\.'; wait_screen '^> ?$'
keys C-d; wait_screen 'resume with'
ok=$((ok + 1))

# the terminal goes away with no SIGHUP (the chat in a session of its own, the pane killed): it
# reads the end of its input and ends, it does not spin
wrap='setsid -w' chat hangup --model builtin
pid=
for f in /proc/[0-9]*/cmdline; do	# /proc, not pgrep, which a minimal system lacks
	{ tr '\0' ' ' < "$f"; } 2>/dev/null | grep -q "^[^ ]* chat --state-dir $tmp/hangup " && pid=${f#/proc/} && pid=${pid%/cmdline}
done
[ -n "$pid" ] || fail "no chat process"
T kill-server
i=0
while kill -0 "$pid" 2>/dev/null; do
	i=$((i + 1)); [ $i -gt 200 ] && { kill -9 "$pid"; fail "the chat ran on after its terminal went"; }
	sleep 0.05
done
ok=$((ok + 1))

echo "chat-tty: ok ($ok checks in tmux: editing keys, a wrapped line dropped whole, UTF-8 typed, history (its position, across chats, 0600), a paste and a continued line as one prompt each, Ctrl-C dropping a line, /help /image /model /mode, chat --list, a plan drawn as a list, output streaming above a typed line (a lone Esc holds nothing), an ask kept last under a child's output (an arrow no answer), escapes from the model and a file shown as text, a terminal that goes away)"
