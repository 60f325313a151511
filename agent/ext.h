/*
 * The extension seam. The runtime (agent.c) knows no profile: what delegation, the Team and the
 * workspace add to an agent comes in as extensions, a NULL-terminated list the server takes from
 * its profile (tools/toolsets.c assembles them). Each extension may add tools and hook the
 * runtime; a hook may be NULL. Hooks run in list order, from the run queue's tasks, never
 * re-entrantly. An extension keeps per-agent state with agent_state()/agent_state_set().
 */
#ifndef AGENT_EXT_H
#define AGENT_EXT_H

#include <jansson.h>

#include "base/buf.h"
#include "base/err.h"

struct agent;
struct tool;
struct toolbox;

struct agent_ext {
	const char *name;
	const struct tool *const *tools;	/* NULL-terminated, borrowed; added in order */
	/* Appends its sections to the system prompt (each begins with "\n\n"). */
	void (*prompt)(const struct agent *a, struct buf *b);
	/* The tool its section presents: an agent whose composition lacks it is not given the
	 * section (NULL: shown while the agent has any of its tools, or always when it has none). */
	const char *prompt_for;
	void (*turn_start)(struct agent *a);	/* status is AGENT_RUNNING */
	void (*turn_end)(struct agent *a);	/* status is AGENT_IDLE, before the owner hears */
	void (*release)(struct agent *a);	/* released; its session is still there */
	void (*recover)(struct agent *a);	/* a root came back: session/load or session/resume */
	/* a's worktree is about to be committed and removed (docs/contract.md §24): what runs in it
	 * stops first */
	void (*worktree_leaving)(struct agent *a);
	/*
	 * Tools that come and go (MCP, docs/contract.md §18): the extension's tool set for a now, or NULL;
	 * borrowed, read at each step. Its tools have a hold hook (agent/toolbox.h): the runtime
	 * holds a tool while an invocation points at it. Described after the profile's tools.
	 */
	const struct toolbox *(*toolbox)(struct agent *a);
	/*
	 * Before each model request (first: the turn's first): 1 holds the request until the
	 * extension calls agent_request_release(a); 0 lets it go. Cancelling the turn drops a held
	 * request.
	 */
	int (*hold_request)(struct agent *a, int first);
	/*
	 * The ACP session parameters of a root (session/new, load, resume: params borrowed), before
	 * the root exists (a == NULL: check only) and again once it does. -1 with e refuses the
	 * request (e.g. INVALID_PARAMS); the check runs first, so a refusal leaves nothing behind.
	 */
	int (*session_params)(struct agent *a, const json_t *params, struct err *e);
};

#endif
