/*
 * The extension seam. The runtime (agent.c) knows no profile: what delegation, the Team and the
 * workspace add to an agent comes in as extensions, a NULL-terminated list the server takes from
 * its profile (tools/toolsets.c assembles them). Each extension may add tools and hook the
 * runtime; a hook may be NULL. Hooks run in list order, from the run queue's tasks, never
 * re-entrantly. An extension keeps per-agent state with agent_state()/agent_state_set().
 */
#ifndef AGENT_EXT_H
#define AGENT_EXT_H

#include "base/buf.h"

struct agent;
struct tool;

struct agent_ext {
	const char *name;
	const struct tool *const *tools;	/* NULL-terminated, borrowed; added in order */
	/* Appends its sections to the system prompt (each begins with "\n\n"). */
	void (*prompt)(const struct agent *a, struct buf *b);
	void (*turn_start)(struct agent *a);	/* status is AGENT_RUNNING */
	void (*turn_end)(struct agent *a);	/* status is AGENT_IDLE, before the owner hears */
	void (*release)(struct agent *a);	/* released; its session is still there */
	void (*recover)(struct agent *a);	/* a root came back: session/load or session/resume */
};

#endif
