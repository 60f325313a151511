/* Every fixed string the chat shows a person (docs/contract.md §21), in one place. */
#ifndef CHAT_TEXTS_H
#define CHAT_TEXTS_H

#define CHAT_USAGE \
	"usage: acp-agent chat [--session ID | --list] [agent options]\n" \
	"A terminal client: runs the agent as a child and speaks ACP to it. A line typed is a\n" \
	"prompt (the agent's slash commands too: /agents, /send, /interrupt, /compact); the\n" \
	"chat's own are /image <path>, /model [<id>], /mode [<id>] and /help. On a terminal a\n" \
	"line is edited as in a shell (history in <state-dir>/chat_history, a paste is one\n" \
	"prompt, a line ending in \\ goes on on the next); a permission ask reads one key: a\n" \
	"allow, A always, r reject, R reject always (A and R when offered). Ctrl-C cancels the\n" \
	"turn, Ctrl-D exits. Colour only on a terminal; otherwise plain lines, and an ask is\n" \
	"answered by a line.\n" \
	"\n" \
	"--session ID   resume that session (its conversation is shown first)\n" \
	"--list         the sessions of the state directory, newest first, and exit\n" \
	"agent options  passed to the agent (acp-agent --help): --model, --state-dir,\n" \
	"               --permission-mode, ...\n"

#define CHAT_HELP \
	"chat commands:\n" \
	"  /image <path>  attach an image (PNG, JPEG, GIF, WebP) to the next prompt\n" \
	"  /model [<id>]  show or set the session's model\n" \
	"  /mode [<id>]   show or set the permission mode\n" \
	"  /help          this, then the agent's commands\n" \
	"  a line ending in \\ goes on on the next; Ctrl-C cancels a turn (or drops the line); Ctrl-D exits\n"
#define CHAT_IMAGE_ATTACHED "(image attached: %s, %s, %zu bytes; it goes with your next prompt)\n"
#define CHAT_IMAGE_ERROR "error: /image %s: %s\n"
#define CHAT_IMAGE_USAGE "usage: /image <path>\n"
#define CHAT_IMAGES_SENT "(with %zu image%s)\n"
#define CHAT_MODEL_NOW "(model: %s)\n"
#define CHAT_OPTION_NOW "(%s: %s; one of: %s)\n"	/* /model or /mode alone: the option, its value, its choices */
#define CHAT_LIST_LINE "%s  %s  %s  %s"	/* --list: id, last activity, folder, title */
#define CHAT_LIST_UNTITLED "(no prompt yet)"
#define CHAT_LIST_NONE "(no sessions in %s)\n"
#define CHAT_PROMPT "> "
#define CHAT_PROMPT_MORE "... "	/* the line before ended with '\': this one goes on with it */
#define CHAT_SESSION_LINE "session %s (Ctrl-C cancels a turn, Ctrl-D exits)\n"
#define CHAT_BANNER_LINE "model %s, mode %s%s%s\n"	/* then ", in <folder>" for a new session */
#define CHAT_RESUME_LINE "resume with: acp-agent chat%s --session %s\n"	/* the options, each " <arg>" */
#define CHAT_THINKING "thinking: "
#define CHAT_CANCELLING "(cancelling the turn)\n"
#define CHAT_CANCELLED "(cancelled)\n"
#define CHAT_STOPPED "(turn ended: %s)\n"
#define CHAT_ERROR "error: %s\n"
#define CHAT_ASK_HEAD "permission: %s\n"
#define CHAT_ASK_AGAIN "answer with one of the keys shown: %s\n"
#define CHAT_ASK_ANSWER "answered: %s\n"
#define CHAT_ASK_WITHDRAWN "(the agent withdrew the question)\n"
#define CHAT_MORE_LINE "... (1 more line)\n"
#define CHAT_MORE_LINES "... (%zu more lines)\n"
#define CHAT_COMMANDS "commands:"
#define CHAT_MODE "(mode: %s)\n"
#define CHAT_COMPACTING "(compacting the conversation)\n"
#define CHAT_COMPACTED "(conversation compacted)\n"
#define CHAT_COMPACT_FAILED "(compaction failed: %s)\n"
#define CHAT_COMPACT_CANCELLED "(compaction cancelled)\n"
#define CHAT_PLAN "plan:\n"
#define CHAT_PLAN_CLEARED "plan: cleared\n"
/* A child's lines and states (chat/children.c): its label in front. */
#define CHAT_CHILD_LINE "  [%s] "
#define CHAT_CHILD_RUNNING "[%s] working\n"
#define CHAT_CHILD_ASKING "[%s] waits for your answer\n"
#define CHAT_CHILD_DONE "[%s] done\n"
#define CHAT_CHILD_STOPPED "[%s] stopped: %s\n"
/* A message between agents, shown once (its incoming view): sender, recipient; then its lines. */
#define CHAT_CHILD_MESSAGE "[%s -> %s] "
#define CHAT_ROOT_LABEL "agent"
#define CHAT_ASK_CHILD_HEAD "permission for [%s]: %s\n"

/* Tool call statuses as a person reads them. */
#define CHAT_ST_PENDING "waiting"
#define CHAT_ST_RUNNING "running"
#define CHAT_ST_DONE "done"
#define CHAT_ST_FAILED "failed"

/* On stderr, "acp-agent chat: " first. */
#define CHAT_E_PREFIX "acp-agent chat: "
#define CHAT_E_SESSION_ARG "--session needs a session id (see acp-agent chat --help)"
#define CHAT_E_NOT_CHAT "%s is not an option of chat (see acp-agent chat --help)"
#define CHAT_E_SPAWN "cannot start the agent: %s"
#define CHAT_E_CWD "cannot read the current directory: %s"
#define CHAT_E_LOAD "cannot resume session %s: %s"
#define CHAT_E_NEW "cannot start a session: %s"
#define CHAT_E_INIT "the agent refused initialize: %s"
#define CHAT_E_NO_EDIT "%s; lines are read without editing"
#define CHAT_E_AGENT_GONE "the agent exited (%s)"

#endif
