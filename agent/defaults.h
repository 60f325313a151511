/*
 * The runtime's defaults, in one place: agent_rt_init starts from them and `acp-agent --help`
 * prints these very numbers (acp/main.c). The provider's defaults follow (docs/contract.md §2).
 */
#ifndef AGENT_DEFAULTS_H
#define AGENT_DEFAULTS_H

#define AGENT_DEFAULT_MAX_DEPTH 3		/* deepest delegation */
#define AGENT_DEFAULT_MAX_ACTIVE 8		/* resident continuable children per root */
#define AGENT_DEFAULT_MAX_STEPS 50		/* model requests per turn */
#define AGENT_DEFAULT_CONTEXT_WINDOW 128000	/* the model's window, in tokens */
#define AGENT_DEFAULT_COMPACT_AT 0.8		/* compact above this share of the window */

#define AGENT_DEFAULT_BASE_URL "https://api.deepseek.com"
#define AGENT_DEFAULT_MODEL "deepseek-chat"
#define AGENT_DEFAULT_CONNECT_MS 10000
#define AGENT_DEFAULT_IDLE_MS 120000
#define AGENT_DEFAULT_RETRY_MS 500

#endif
