/*
 * What the turn machine (agent.c) and compaction (compact.c) share; not an API: agent/ only.
 */
#ifndef AGENT_AGENT_INT_H
#define AGENT_AGENT_INT_H

#include <stddef.h>

#include <jansson.h>

#include "agent/agent_def.h"
#include "agent/agent.h"
#include "model/model.h"

enum agent_compact_why {
	AGENT_COMPACT_NONE,
	AGENT_COMPACT_THRESHOLD,	/* before a request whose estimate is over the threshold */
	AGENT_COMPACT_OVERFLOW,		/* the provider rejected a request for its length */
	AGENT_COMPACT_COMMAND,		/* /compact, outside a turn */
};

/* ---- agent.c ---- */

/* Appends an event (steals data); -1 when the log failed (the caller stops). */
int agent_log_event(struct agent *a, const char *type, json_t *data);
/* Fills what every request of a carries (ids, model, the replay script); returns the owned
 * script key, which must outlive the call. */
char *agent_call_init(struct agent *a, struct model_call *call);
/* A compaction ended: ok 1 (logged), 0 (failed: error), -1 (the log failed). */
void agent_compact_finished(struct agent *a, enum agent_compact_why why, int ok, const char *error);

/* ---- compact.c ---- */

/* Whether a request of a with fixed bytes of system prompt and tools should compact first. */
int agent_compact_due(const struct agent *a, size_t fixed);
/* Starts the summary request; the end comes through agent_compact_finished. */
void agent_compact_begin(struct agent *a, enum agent_compact_why why, size_t fixed);
/* Cancels a compaction in flight (logs it failed, "cancelled"); returns its why, or NONE. */
enum agent_compact_why agent_compact_abort(struct agent *a);
/* The compact JSON size of a request's fixed part: the system prompt and the tools. */
size_t agent_request_fixed(const char *system, const json_t *tools);

#endif
