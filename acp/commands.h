/* Slash commands (docs/contract.md §3.6, §17.5): a person steers subagents and sets the mode, without the model. */
#ifndef ACP_COMMANDS_H
#define ACP_COMMANDS_H

#include <jansson.h>

#include "agent/agent.h"
#include "tools/toolsets.h"

/* The available_commands_update payload; returns new ref. */
json_t *acp_commands_update(void);
/* What an unknown /word answers (docs/contract.md §20), without the model: the word's length, then the text. */
#define ACP_COMMANDS_UNKNOWN "unknown command %.*s; try /agents, /send, /interrupt, /mode, /compact"

/* /compact's lines (docs/contract.md §19): the thought while compacting (a client without
 * session.compaction), and the answers. ACP_COMPACT_FAILED takes the reason. */
#define ACP_COMPACTING "Compacting the conversation\xe2\x80\xa6"
/* The notices a root's start may give (docs/contract.md §27): the file's path, then the reason. */
#define ACP_NOTICE_INSTRUCTIONS_CUT "Instructions file \"%s\" cut at 32 KiB"
#define ACP_NOTICE_INSTRUCTIONS_CUT_WHY "the rest of it, and the instructions files after it, were left out"
#define ACP_NOTICE_TYPE_SKIPPED "Agent type file \"%s\" skipped"
#define ACP_COMPACT_DONE "The conversation was compacted: the model goes on from its summary."
#define ACP_COMPACT_FAILED "Compaction failed: %s"
#define ACP_COMPACT_NOTHING "There is nothing to compact yet."
#define ACP_COMPACT_BUSY "The session is busy; try /compact when its turn ends."
/* Whether a matched command text is /compact. */
int acp_commands_is_compact(const char *text);

/* The command text when prompt is one text block starting with a /word (a known command, or an
 * unknown one that gets ACP_COMMANDS_UNKNOWN), else NULL (borrowed). */
const char *acp_commands_match(const json_t *prompt);
struct acp_session;
/* Runs a matched command as the session's root, with its profile's tools; returns the owned text. */
char *acp_commands_run(struct acp_session *as, const char *text);

#endif
