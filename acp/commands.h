/* Slash commands (SPEC §3.6): a person steers subagents by hand, without the model. */
#ifndef ACP_COMMANDS_H
#define ACP_COMMANDS_H

#include <jansson.h>

#include "agent/agent.h"

/* The available_commands_update payload; returns new ref. */
json_t *acp_commands_update(void);
/* The command text when prompt is a slash command this agent knows, else NULL (borrowed). */
const char *acp_commands_match(const json_t *prompt);
/* Runs a matched command as root; returns the owned text to show. */
char *acp_commands_run(struct agent *root, const char *text);

#endif
