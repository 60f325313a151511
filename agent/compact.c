/*
 * Compaction (docs/contract.md §19): a summary request over the conversation, then context/compacted
 * {id, summary, through}; from then on a request sends the summary and what came after
 * through. Every attempt logs an event (compacted, or compaction_failed with its reason), so
 * a replay script's "compactions" position is the count of them. A summary request is not a
 * step: it logs no step/start and streams nothing to the client but the compaction updates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_int.h"
#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

size_t
agent_request_fixed(const char *system, const json_t *tools)
{
	return strlen(system) + json_dumpb(tools, NULL, 0, JSON_COMPACT);
}

/*
 * How many of the conversation's messages the summary covers. A threshold or overflow
 * compaction keeps the latest user message and what followed verbatim when that tail is at
 * most a quarter of the window (the model goes on with the request itself, not a summary of
 * it); otherwise, and for /compact, everything is summarised. 0: nothing to summarise.
 */
static size_t
agent_compact_cut(const struct agent *a, enum agent_compact_why why)
{
	const struct agent_conv *c = &a->conv;
	size_t n = json_array_size(c->msgs), first = c->through >= 0 ? 1 : 0;
	size_t tail = 0;

	if (n <= first)
		return 0;
	if (why == AGENT_COMPACT_COMMAND)
		return n;
	for (size_t i = n; i-- > first;) {
		const json_t *m = json_array_get(c->msgs, i);
		tail += c->meta[i].len;
		if ((long long)(tail / 4) > a->rt->context_window / 4)
			break;
		if (strcmp(json_string_value(json_object_get(m, "role")), "user") == 0)
			return i > first ? i : n;
	}
	return n;
}

/*
 * Where the summary request's messages start (after the summary before, at index first): the
 * summary request must fit the window too, so a conversation longer than the threshold loses its
 * oldest messages from it (a session that never compacted, or a huge tool result), and never
 * starts at a tool message, which would have lost its call.
 */
static size_t
agent_compact_from(const struct agent *a, size_t first, size_t cut)
{
	const struct agent_conv *c = &a->conv;
	double limit = a->rt->compact_at * (double)a->rt->context_window * 4.0;
	size_t fixed = strlen(AGENT_COMPACT_SYSTEM) + strlen(AGENT_COMPACT_INSTRUCTION) + 64;
	size_t budget = limit > (double)fixed ? (size_t)limit - fixed : 0, used = 0, from = first;

	if (a->rt->context_window <= 0)
		return first;
	for (size_t i = 0; i < cut; i++)
		used += c->meta[i].len;
	while (used > budget && from + 1 < cut) {
		used -= c->meta[from].len;
		from++;
	}
	while (from + 1 < cut &&
	    strcmp(json_string_value(json_object_get(json_array_get(c->msgs, from), "role")), "tool") == 0)
		from++;
	return from;
}

int
agent_compact_due(const struct agent *a, size_t fixed)
{
	const struct agent_rt *rt = a->rt;

	if (rt->context_window <= 0 || rt->compact_at <= 0)
		return 0;
	if (agent_conv_estimate(&a->conv, fixed) <= (long long)(rt->compact_at * (double)rt->context_window))
		return 0;
	return agent_compact_cut(a, AGENT_COMPACT_THRESHOLD) > 0;
}

static void
agent_compact_sink_text(void *arg, const char *s, size_t n)
{
	struct agent *a = arg;

	buf_append(&a->summary, s, n);
}

static void
agent_compact_sink_ignore(void *arg, const char *s, size_t n)
{
	(void)arg;
	(void)s;
	(void)n;
}

static void
agent_compact_sink_call(void *arg, const char *call_id, const char *name, const char *args)
{
	(void)arg;
	(void)call_id;
	(void)name;
	(void)args;		/* a summary request offers no tools */
}

/* Ends the attempt: clears the state, then tells agent.c. */
static void
agent_compact_end(struct agent *a, int ok, const char *error)
{
	enum agent_compact_why why = (enum agent_compact_why)a->compact_why;

	a->compact_why = AGENT_COMPACT_NONE;
	a->compact_req = NULL;
	buf_free(&a->summary);
	agent_compact_finished(a, why, ok, error);
}

static void
agent_compact_fail(struct agent *a, const char *reason)
{
	json_t *data = xjson_pack("{s:s, s:o}", "id", a->compact_id, "reason", xjson_text(reason,
	    strlen(reason)));

	log_info("agent %s: %s failed: %s", agent_id(a), a->compact_id, reason);
	if (agent_log_event(a, "context/compaction_failed", data) < 0) {
		agent_compact_end(a, -1, reason);
		return;
	}
	if (a->hooks.compaction)
		a->hooks.compaction(a->hooks.arg, a, a->compact_id, "failed", reason);
	agent_compact_end(a, 0, reason);
}

static void
agent_compact_sink_finish(void *arg, const char *finish, const json_t *usage)
{
	struct agent *a = arg;
	json_t *data;

	(void)finish;
	(void)usage;
	a->compact_req = NULL;
	if (a->summary.len == 0) {
		agent_compact_fail(a, "the model returned an empty summary");
		return;
	}
	data = xjson_pack("{s:s, s:o, s:I}", "id", a->compact_id, "summary", xjson_text(a->summary.data,
	    a->summary.len), "through", (json_int_t)a->compact_through);
	/* the task list as it is now, carried in the summary's message (docs/contract.md §26) */
	if (json_array_size(a->conv.plan) > 0)
		json_object_set(data, "plan", a->conv.plan);
	if (agent_log_event(a, "context/compacted", data) < 0) {
		agent_compact_end(a, -1, "the session log cannot be written");
		return;
	}
	/* The log's own text: a summary with bytes that are not UTF-8 was repaired there. */
	if (a->hooks.compaction) {
		const json_t *first = json_array_get(a->conv.msgs, 0);
		char *text = xstrdup(json_string_value(json_object_get(first, "content")) + strlen(AGENT_COMPACT_PREFIX));
		/* the summary alone, as the log holds it (a replay shows the same): without the task list */
		char *tasks = NULL;
		for (char *p = text; json_array_size(a->conv.plan) > 0 && (p = strstr(p, AGENT_COMPACT_TASKS)) != NULL; p++)
			tasks = p;
		if (tasks)
			*tasks = '\0';
		a->hooks.compaction(a->hooks.arg, a, a->compact_id, "completed", text);
		free(text);
	}
	if (a->hooks.usage)
		a->hooks.usage(a->hooks.arg, a, agent_conv_estimate(&a->conv, a->compact_fixed));
	agent_compact_end(a, 1, NULL);
}

static void
agent_compact_sink_error(void *arg, const char *code, const char *msg)
{
	struct agent *a = arg;

	(void)code;
	a->compact_req = NULL;
	agent_compact_fail(a, msg && *msg ? msg : "the summary request failed");
}

void
agent_compact_begin(struct agent *a, enum agent_compact_why why, size_t fixed)
{
	static const struct model_sink proto = { agent_compact_sink_text, agent_compact_sink_ignore,
		agent_compact_sink_call, agent_compact_sink_finish, agent_compact_sink_error, NULL };
	struct model_sink sink = proto;
	struct model_call call = { 0 };
	size_t cut = agent_compact_cut(a, why);
	json_t *messages = json_array(), *tools = json_array();
	char *key;

	a->compact_why = why;
	a->compact_fixed = fixed;
	snprintf(a->compact_id, sizeof(a->compact_id), "compaction-%u", a->conv.attempts + 1);
	/* Through the last event the summary covers: the one before the first message kept, or
	 * the last event of the log when everything is summarised. */
	if (cut < json_array_size(a->conv.msgs))
		a->compact_through = a->conv.meta[cut].seq - 1;
	else
		a->compact_through = (int64_t)sess_nev(a->sess) - 1;
	buf_init(&a->summary);
	size_t first = a->conv.through >= 0 ? 1 : 0, from = agent_compact_from(a, first, cut);
	if (first)
		json_array_append(messages, json_array_get(a->conv.msgs, 0));	/* the summary before */
	for (size_t i = from; i < cut; i++)
		json_array_append(messages, json_array_get(a->conv.msgs, i));
	json_array_append_new(messages, xjson_pack("{s:s, s:s}", "role", "user", "content",
	    AGENT_COMPACT_INSTRUCTION));
	if (a->hooks.compaction)
		a->hooks.compaction(a->hooks.arg, a, a->compact_id, "in_progress", NULL);
	sink.arg = a;
	key = agent_call_init(a, &call);
	call.system = AGENT_COMPACT_SYSTEM;
	call.messages = messages;
	call.tools = tools;
	call.summary = 1;
	call.script.position = a->conv.attempts;
	a->compact_req = a->rt->model->ops->start(a->rt->model, &call, &sink);
	free(key);
	json_decref(messages);
	json_decref(tools);
}

enum agent_compact_why
agent_compact_abort(struct agent *a)
{
	enum agent_compact_why why = (enum agent_compact_why)a->compact_why;
	json_t *data;

	if (why == AGENT_COMPACT_NONE)
		return why;
	if (a->compact_req)
		a->rt->model->ops->cancel(a->rt->model, a->compact_req);
	a->compact_req = NULL;
	a->compact_why = AGENT_COMPACT_NONE;
	buf_free(&a->summary);
	data = xjson_pack("{s:s, s:s}", "id", a->compact_id, "reason", "cancelled");
	if (agent_log_event(a, "context/compaction_failed", data) == 0 && a->hooks.compaction)
		a->hooks.compaction(a->hooks.arg, a, a->compact_id, "cancelled", NULL);
	return why;
}
