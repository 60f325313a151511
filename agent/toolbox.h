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
};

struct tool {
	const char *name;
	const char *description;
	const char *schema;		/* JSON Schema of the parameters, as text */
	const char *kind;		/* ACP tool kind: "other", "search", ... */
	int concurrency_safe;
	/* Returns an owned human-readable title for the call; args may be NULL. */
	char *(*title)(const struct tool *t, const json_t *args);
	/* args: borrowed; fills out when returning TOOL_DONE. */
	int (*run)(struct tool_inv *inv, const json_t *args, struct tool_result *out);
	void *svc;			/* the service the tool adapts (borrowed) */
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
 * Parses a call's raw arguments and checks them against the schema. Returns a
 * new reference, or NULL with e (code INVALID_ARGUMENT, message naming the field).
 */
json_t *toolbox_check_args(const struct toolbox *tb, const struct tool *t, const char *raw,
    struct err *e);
/* Checks value against a JSON Schema subset (type, properties, required, enum, bounds). */
int toolbox_schema_check(const json_t *schema, const json_t *value, const char *path, struct err *e);

void tool_result_set(struct tool_result *r, const char *text, json_t *output);	/* steals output */
void tool_result_error(struct tool_result *r, enum err_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tool_result_clear(struct tool_result *r);
/* A pending tool finishes; the result is moved into the invocation. */
void tool_inv_complete(struct tool_inv *inv, struct tool_result *r);

#endif
