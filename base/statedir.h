/* Where state lives when --state-dir and ACP_AGENT_STATE_DIR are not given (docs/contract.md §12). */
#ifndef BASE_STATEDIR_H
#define BASE_STATEDIR_H

/* $XDG_STATE_HOME/acp-agent (an absolute XDG_STATE_HOME), else $HOME/.local/state/acp-agent
 * (/tmp without a HOME); owned. */
char *statedir_default(void);

#endif
