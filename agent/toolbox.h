/*
 * The tool interface the runtime calls (tools/ implements it) and an agent's
 * tool set. A tool's run either completes at once (TOOL_DONE, result filled)
 * or returns TOOL_PENDING and later calls tool_inv_complete exactly once,
 * unless the invocation is cancelled first.
 */
#ifndef AGENT_TOOLBOX_H
#define AGENT_TOOLBOX_H

#include <stddef.h>

#include <jansson.h>

#include "agent/permit.h"
#include "base/err.h"

#define TOOL_DONE 0
#define TOOL_PENDING 1

struct agent;
struct tool_inv;

/* A tool's outcome. text and output are owned by whoever holds the struct. */
struct tool_result {
	char *text;			/* rendered text the model sees */
	json_t *output;			/* structured result (ACP rawOutput), may be NULL */
	enum err_code error_code;	/* ERR_NONE on success; else text is "Error: <message>" */
	char agent_id[40];		/* the child a delegation call is about, or "" */
	/* A child the call made that is shown only as a link, to an editor that shows children as
	 * sessions (a teammate: its call's other updates stay as they were), or "". */
	char linked[40];
};

/*
 * What the permission policy needs of a call, and what an ask shows (docs/contract.md §17.3). The runtime
 * fills verdict from the mode and the tool's class; prepare fills the rest (all owned by the
 * plan; the runtime frees them).
 */
struct tool_plan {
	enum permit_verdict verdict;	/* in: the mode's word for this class; REFUSE: prepare refuses */
	char *command;			/* bash: the command, for the "exec:" rule */
	char *mcp_tool;			/* an MCP tool: "server:tool", for the "mcp:" rule */
	json_t *locations;		/* ACP locations, or NULL */
	json_t *content;		/* ACP content shown from the first update and while asking (a diff,
					 * bash's command), and before a running call's output; or NULL */
};

struct tool {
	const char *name;
	const char *description;
	const char *schema;		/* JSON Schema of the parameters, as text */
	const char *kind;		/* ACP tool kind: "other", "search", ... */
	const char *result_doc;		/* what its result text looks like, for docs/tools.md; may be NULL */
	/* How an editor is shown its result (acp/updates.c names no tool): at most shown_max bytes
	 * of its text (0: all of it); an array output as rawOutput {raw_key: [...]} (older clients
	 * drop an update whose rawOutput is an array; NULL: as it is). */
	size_t shown_max;
	const char *raw_key;
	/* Its result's agentId is the agent the call made: an editor that shows children as
	 * sessions gets a link to it (docs/contract.md §22.1). */
	int links_agent;
	/* The argument naming the workspace file it reads or writes, or NULL: a success gives the
	 * agent the instructions of the directories above that file (docs/contract.md §25). */
	const char *file_arg;
	/* It starts agents of a type: its description is followed by the types the caller's
	 * workspace has (docs/contract.md §23.2). */
	int lists_types;
	int concurrency_safe;
	/* Returns an owned human-readable title for the call; args may be NULL. */
	char *(*title)(const struct tool *t, const json_t *args);
	/* args: borrowed; fills out when returning TOOL_DONE. */
	int (*run)(struct tool_inv *inv, const json_t *args, struct tool_result *out);
	void *svc;			/* the service the tool adapts (borrowed) */
	enum permit_class cls;		/* what the call does (docs/contract.md §17.1); agent tools read */
	/*
	 * Optional, for tools the policy judges: after the argument check and before the call is
	 * announced, the checks that come before an ask, in docs/contract.md §20.1's order (confinement, then
	 * the mode: plan->verdict REFUSE means refuse with tool_result_read_only, then observation
	 * and the diff). 0 to go on, or -1 with out filled: the call fails and nothing runs. run is
	 * still called after an allow and checks again (the file may change while the user thinks).
	 */
	int (*prepare)(struct tool_inv *inv, const json_t *args, struct tool_plan *plan, struct tool_result *out);
	/*
	 * A tool that can go away (an extension's toolbox: MCP): delta +1 when an invocation
	 * starts pointing at it, -1 when it stops. NULL for the profile's tools, which outlive
	 * every agent.
	 */
	void (*hold)(const struct tool *t, int delta);
};

/* One call in flight; owned by the agent that dispatched it. */
struct tool_inv {
	struct agent *agent;
	const struct tool *tool;
	char *call_id;
	json_t *args;			/* owned, parsed arguments */
	void *state;			/* the tool's own, for pending calls */
	void (*cancel)(struct tool_inv *inv);	/* set by a pending tool */
	int done;
	struct tool_result result;
	void (*on_done)(struct tool_inv *inv);	/* the agent's completion hook */
	/* the permission ask (agent/ask.c) */
	struct tool_plan plan;
	int asking;			/* an ask is out: announced pending, runs after an allow */
	long ask_id;			/* the client request, while asking */
	int asked;			/* it was asked (the client shows its status) */
};

/* An agent's tool set: borrowed tool descriptions plus their parsed schemas. */
struct toolbox {
	const struct tool **tools;
	size_t n;
	json_t *schemas;		/* owned: name -> parsed schema */
};

void toolbox_init(struct toolbox *tb);
void toolbox_add(struct toolbox *tb, const struct tool *t);	/* t: borrowed, must outlive tb */
void toolbox_free(struct toolbox *tb);
const struct tool *toolbox_find(const struct toolbox *tb, const char *name);
/* The tools as [{name, description, parameters}] for a model; returns new ref. */
json_t *toolbox_describe(const struct toolbox *tb);
/*
 * Parses a call's raw arguments and checks them against the schema (tb's parsed one, or t's
 * text when tb does not hold t). Returns a new reference, or NULL with e (code
 * INVALID_ARGUMENT, message naming the field).
 */
json_t *toolbox_check_args(const struct toolbox *tb, const struct tool *t, const char *raw,
    struct err *e);
/* Checks value against a JSON Schema subset (type, properties, required, enum, bounds). */
int toolbox_schema_check(const json_t *schema, const json_t *value, const char *path, struct err *e);

void tool_result_set(struct tool_result *r, const char *text, json_t *output);	/* steals output */
void tool_result_error(struct tool_result *r, enum err_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tool_result_clear(struct tool_result *r);
/* PERMISSION_MODE_READ_ONLY "<tool> is not allowed in read-only mode". */
void tool_result_read_only(struct tool_result *r, const struct tool *t);
void tool_plan_clear(struct tool_plan *p);
/* A pending tool finishes; the result is moved into the invocation. */
void tool_inv_complete(struct tool_inv *inv, struct tool_result *r);

#endif
