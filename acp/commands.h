/* Slash commands (SPEC §3.6, §17.5): a person steers subagents and sets the mode, without the model. */
#ifndef ACP_COMMANDS_H
#define ACP_COMMANDS_H

#include <jansson.h>

#include "agent/agent.h"
#include "tools/toolsets.h"

/* The available_commands_update payload; returns new ref. */
json_t *acp_commands_update(void);
/* What an unknown /word answers (SPEC §20), without the model: the word's length, then the text. */
#define ACP_COMMANDS_UNKNOWN "unknown command %.*s; try /agents, /send, /interrupt, /mode, /compact"

/* The command text when prompt is one text block starting with a /word (a known command, or an
 * unknown one that gets ACP_COMMANDS_UNKNOWN), else NULL (borrowed). */
const char *acp_commands_match(const json_t *prompt);
struct acp_session;
/* Runs a matched command as the session's root, with its profile's tools; returns the owned text. */
char *acp_commands_run(struct acp_session *as, const char *text);

#endif
