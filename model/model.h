/*
 * Model providers (docs/contract.md §7.1). start never calls back before it returns: a
 * provider delivers through the run queue or its own watchers. After cancel
 * no callback arrives and the request handle is gone.
 */
#ifndef MODEL_MODEL_H
#define MODEL_MODEL_H

#include <stddef.h>

#include <jansson.h>

#include "base/err.h"
#include "base/runq.h"

struct model;
struct model_req;

/* The agent's side of one request. Strings are borrowed for the call. */
struct model_sink {
	void (*text)(void *arg, const char *s, size_t n);
	void (*reasoning)(void *arg, const char *s, size_t n);
	/* call_id may be NULL (the agent numbers it); args: the raw JSON text. */
	void (*tool_call)(void *arg, const char *call_id, const char *name, const char *args);
	/* finish: stop, tool_calls, length or refusal. usage: borrowed, may be NULL. */
	void (*finish)(void *arg, const char *finish, const json_t *usage);
	void (*error)(void *arg, const char *code, const char *msg);
	void *arg;
};

/*
 * What a provider that scripts its replies per agent needs (the replay provider): which script,
 * which reply in it, and how to name a child in a reply. The agent fills it on every request;
 * every other provider ignores it.
 */
struct model_script_ref {
	const char *key;		/* "root" or "label:<label>" */
	size_t ordinal;			/* rank among the agents with that key */
	size_t position;		/* model requests this agent made before; for a summary
					 * request, the summary attempts it made before */
	/* Resolves {{agent:<label>}}: the caller's most recent child with label; owned or NULL. */
	char *(*resolve_child)(void *arg, const char *label);
	void *resolve_arg;
};

/* What the agent asks. Everything is borrowed for the duration of start. */
struct model_call {
	const char *agent_id;
	const char *parent_id;		/* NULL for a root */
	const char *system;
	const json_t *messages;		/* [{role, content, ...}] chat messages */
	const json_t *tools;		/* [{name, description, parameters}] */
	const char *model;		/* the session's model (session/model), NULL: the provider's */
	const char *cwd;		/* the session's workspace: replay fills {{cwd}} with it */
	/* Where a user message's "images" are stored: <state_dir>/blobs/<blob> (docs/contract.md §27). */
	const char *state_dir;
	/* A summary request (docs/contract.md §19): messages end with the summary instruction; no tools. The
	 * replay provider answers it from the script's "compactions", builtin summarises itself. */
	int summary;
	struct model_script_ref script;	/* for a scripted provider only */
};

struct model_ops {
	const char *name;
	struct model_req *(*start)(struct model *m, const struct model_call *call,
	    const struct model_sink *sink);
	void (*cancel)(struct model *m, struct model_req *r);
	void (*report)(struct model *m);	/* at exit: what went unused */
	void (*free)(struct model *m);
};

struct model {
	const struct model_ops *ops;
	struct runq *runq;		/* borrowed */
	void *impl;
	const char *id;			/* the model as sessions name it (ACP_AGENT_MODEL); NULL: ops->name */
	const char *provider;		/* the provider a wrapper (tap) passes on; NULL: ops->name */
};

/* Whether an HTTP 400's message says the request outgrew the context window: it contains
 * "context" and "length" or "maximum", in any case (docs/contract.md §19). */
int model_context_overflow(const char *msg);

/* builtin's deterministic summary of messages but the last (the instruction): one line per
 * message, "<role>: " and its first 200 characters. Returns owned. */
char *model_builtin_summary(const json_t *messages);

/* The model a new session records in its session/created event (docs/contract.md §20). */
const char *model_id(const struct model *m);
/* The provider behind it: "openai", "replay" or "builtin" (a model option's description). */
const char *model_provider(const struct model *m);

/* The openai provider's settings; strings borrowed for the call to model_openai_new. */
struct openai_config {
	const char *base_url;		/* requests go to <base_url>/chat/completions */
	const char *api_key;		/* never logged */
	const char *model;
	long connect_timeout_ms;
	long idle_timeout_ms;		/* no byte for this long fails the request */
	int max_tries;			/* requests in all for 429 / 5xx */
	long backoff_ms;		/* first retry delay; doubles, plus jitter */
};

/*
 * A reply as the recorder sees it (docs/contract.md §21): the reply of one request in §7.2's form (text,
 * reasoning, tool_calls with the provider's ids, finish when not the default, usage, or error;
 * a request cancelled before its end is {"hang": true} with what streamed). Everything is
 * borrowed for the call.
 */
struct model_tap_reply {
	const struct model_script_ref *ref;	/* the agent's script, ordinal and position */
	const char *agent_id, *parent_id;	/* who asked; parent_id NULL for a root */
	int summary;				/* a compaction's summary request */
	const json_t *reply;
};
typedef void model_tap_fn(void *arg, const struct model_tap_reply *rep);

/* Wraps inner (steals it): every request goes to inner, and each reply also goes to fn once. */
struct model *model_tap_new(struct model *inner, model_tap_fn *fn, void *arg);

/* Returns an owned model or NULL with e (a malformed recording, ...). */
struct model *model_replay_new(struct runq *q, const char *path, struct err *e);
struct model *model_replay_new_buf(struct runq *q, const char *data, size_t len, struct err *e);
struct model *model_builtin_new(struct runq *q);
struct model *model_openai_new(struct runq *q, struct ev_loop *loop, const struct openai_config *cfg,
    struct err *e);
void model_free(struct model *m);

/* The builtin provider's fixed answer (docs/contract.md §7.4). */
#define MODEL_BUILTIN_TEXT                                                                          \
	"No model is configured, so this agent cannot answer prompts yet. To use a model, set "     \
	"ACP_AGENT_API_KEY (and optionally ACP_AGENT_BASE_URL and ACP_AGENT_MODEL) for an "        \
	"OpenAI-compatible provider, then restart the agent. Slash commands work without a model: " \
	"/agents lists the subagents, /send <id> <text> messages one, /interrupt <id> stops one, "  \
	"/mode <id> sets the permission mode, /compact summarises the conversation, /help lists "   \
	"them all."

#endif
