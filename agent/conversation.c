/* The conversation a model is sent: folded from the session's events as they are appended. */
#include "agent/agent_def.h"
#include "agent/conv.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jenc.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "session/event.h"
#include "session/store.h"


static const char *
agent_str(const json_t *v)
{
	return json_is_string(v) ? json_string_value(v) : "";
}

char *
agent_blocks_text(const json_t *content, size_t *len)
{
	struct buf b;
	size_t i;
	json_t *blk;

	buf_init(&b);
	json_array_foreach(content, i, blk) {
		const char *type = json_string_value(json_object_get(blk, "type"));
		const json_t *text = NULL;
		if (type && strcmp(type, "text") == 0) {
			text = json_object_get(blk, "text");
		} else if (type && strcmp(type, "resource") == 0) {
			json_t *res = json_object_get(blk, "resource");
			text = json_object_get(res, "text");
			if (b.len)
				buf_puts(&b, "\n");
			buf_printf(&b, "[resource %s]", agent_str(json_object_get(res, "uri")));
		} else if (type && strcmp(type, "resource_link") == 0) {
			if (b.len)
				buf_puts(&b, "\n");
			buf_printf(&b, "[link %s]", agent_str(json_object_get(blk, "uri")));
			continue;
		}
		if (!json_is_string(text))
			continue;
		if (b.len)
			buf_puts(&b, "\n");
		buf_append(&b, json_string_value(text), json_string_length(text));
	}
	if (len)
		*len = b.len;
	return buf_steal(&b);
}

static json_t *
agent_conv_assistant(const json_t *data)
{
	json_t *msg = xjson_pack("{s:s}", "role", "assistant");
	json_t *calls;
	const json_t *content = json_object_get(data, "content"), *only = json_array_get(content, 0);
	struct buf text, reasoning;
	size_t i;
	json_t *blk;

	/* One text block, as most answers are: the message shares the event's string. */
	const json_t *t = json_object_get(only, "text");
	if (json_array_size(content) == 1 && json_is_string(t) &&
	    strcmp(agent_str(json_object_get(only, "type")), "text") == 0 &&
	    strlen(json_string_value(t)) == json_string_length(t)) {
		json_object_set(msg, "content", (json_t *)t);
		return msg;
	}
	calls = json_array();
	buf_init(&text);
	buf_init(&reasoning);
	json_array_foreach(json_object_get(data, "content"), i, blk) {
		const char *type = json_string_value(json_object_get(blk, "type"));
		if (type == NULL)
			continue;
		if (strcmp(type, "text") == 0)
			buf_puts(&text, json_string_value(json_object_get(blk, "text")));
		else if (strcmp(type, "reasoning") == 0)
			buf_puts(&reasoning, json_string_value(json_object_get(blk, "text")));
		else if (strcmp(type, "tool-call") == 0)
			json_array_append_new(calls, xjson_pack("{s:O, s:s, s:{s:O, s:O}}", "id",
			    json_object_get(blk, "callId"), "type", "function", "function", "name",
			    json_object_get(blk, "name"), "arguments", json_object_get(blk, "arguments")));
	}
	json_object_set_new(msg, "content", json_string(text.len ? text.data : ""));
	if (reasoning.len)
		json_object_set_new(msg, "reasoning_content", json_string(reasoning.data));
	if (json_array_size(calls))
		json_object_set(msg, "tool_calls", calls);
	json_decref(calls);
	buf_free(&text);
	buf_free(&reasoning);
	return msg;
}

void
agent_conv_init(struct agent_conv *c)
{
	memset(c, 0, sizeof(*c));
	c->msgs = json_array();
	c->through = -1;
	c->usage = -1;
}

void
agent_conv_free(struct agent_conv *c)
{
	json_decref(c->msgs);
	json_decref(c->plan);
	free(c->meta);
	memset(c, 0, sizeof(*c));
}

/* Appends msg (stolen) that came from event seq. */
static void
agent_conv_push(struct agent_conv *c, json_t *msg, int64_t seq)
{
	size_t n = json_array_size(c->msgs), len;
	struct agent_conv_meta *m;
	struct buf b;

	/* Its size as the request encodes it (base/jenc.h: json_dumps' bytes, much faster). */
	buf_init(&b);
	len = (jenc_append(&b, msg) == 0 ? b.len : json_dumpb(msg, NULL, 0, JSON_COMPACT)) + 1;
	buf_free(&b);

	if (n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->meta = xrealloc(c->meta, c->cap * sizeof(*c->meta));
	}
	m = c->meta;
	m[n].seq = seq;
	m[n].len = len;
	json_array_append_new(c->msgs, msg);
	c->bytes += len;
	if (c->usage >= 0)
		c->bytes_since += len;
}

json_t *
agent_conv_summary_message(const char *summary, const json_t *plan)
{
	struct buf b;
	json_t *msg, *entry;
	size_t i;

	buf_init(&b);
	buf_puts(&b, AGENT_COMPACT_PREFIX);
	buf_puts(&b, summary);
	if (json_array_size(plan) > 0)
		buf_puts(&b, AGENT_COMPACT_TASKS);
	json_array_foreach(plan, i, entry)
		buf_printf(&b, "- [%s] %s\n", agent_str(json_object_get(entry, "status")),
		    agent_str(json_object_get(entry, "content")));
	msg = xjson_pack("{s:s, s:o}", "role", "user", "content", xjson_text(b.data, b.len));
	buf_free(&b);
	return msg;
}

/* A user message's images as the model is sent them ([{mimeType, blob, bytes}]; docs/contract.md
 * §27), or NULL when it has none; new ref. */
static json_t *
agent_conv_images(const json_t *content)
{
	json_t *out = NULL, *blk;
	size_t i;

	json_array_foreach(content, i, blk) {
		if (strcmp(agent_str(json_object_get(blk, "type")), "image") != 0)
			continue;
		if (out == NULL)
			out = json_array();
		json_array_append_new(out, xjson_pack("{s:O, s:O, s:O}", "mimeType", json_object_get(blk, "mimeType"),
		    "blob", json_object_get(blk, "blob"), "bytes", json_object_get(blk, "bytes")));
	}
	return out;
}

/* The messages an event adds (user, assistant, tool), or NULL; new ref. */
static json_t *
agent_conv_message(enum sess_ev et, const json_t *data)
{
	if (et == SESS_EV_USER_MESSAGE) {
		const json_t *content = json_object_get(data, "content"), *only = json_array_get(content, 0);
		const char *bt = json_string_value(json_object_get(only, "type"));
		size_t len;
		if (json_array_size(content) == 1 && bt && strcmp(bt, "text") == 0)	/* shares the string */
			return xjson_pack("{s:s, s:O}", "role", "user", "content", json_object_get(only, "text"));
		char *text = agent_blocks_text(json_object_get(data, "content"), &len);
		json_t *msg = xjson_pack("{s:s, s:s%}", "role", "user", "content", text, len);
		json_t *images = agent_conv_images(content);
		free(text);
		if (images)
			json_object_set_new(msg, "images", images);
		return msg;
	}
	if (et == SESS_EV_ASSISTANT_MESSAGE)
		return agent_conv_assistant(data);
	if (et == SESS_EV_TOOL_RESULT) {
		json_t *first = json_array_get(json_object_get(data, "content"), 0);
		return xjson_pack("{s:s, s:O, s:O}", "role", "tool", "tool_call_id",
		    json_object_get(data, "callId"), "content", json_object_get(first, "text"));
	}
	return NULL;
}

/* The tokens an assistant message's usage reports (prompt + completion), or -1. */
static long long
agent_conv_usage(const json_t *data)
{
	const json_t *u = json_object_get(data, "usage");
	const json_t *p = json_object_get(u, "prompt_tokens"), *k = json_object_get(u, "completion_tokens");

	if (!json_is_integer(p) || !json_is_integer(k) || json_integer_value(p) < 0 ||
	    json_integer_value(k) < 0 || json_integer_value(p) > (1LL << 40) || json_integer_value(k) > (1LL << 40))
		return -1;
	return json_integer_value(p) + json_integer_value(k);
}

/* A message event folds in; its usage, when it reports one, restarts the count since. */
static void
agent_conv_take(struct agent_conv *c, enum sess_ev et, const json_t *data, int64_t seq)
{
	json_t *msg = agent_conv_message(et, data);
	long long used;

	if (msg == NULL)
		return;
	agent_conv_push(c, msg, seq);
	if (et == SESS_EV_ASSISTANT_MESSAGE && (used = agent_conv_usage(data)) >= 0) {
		c->usage = used;
		c->bytes_since = 0;
	}
}

/* The task list becomes entries (borrowed; not an array: none). */
static void
agent_conv_set_plan(struct agent_conv *c, const json_t *entries)
{
	json_decref(c->plan);
	c->plan = json_is_array(entries) ? json_incref((json_t *)entries) : NULL;
}

int64_t
agent_conv_through(const json_t *data, int64_t seq)
{
	int64_t t = json_integer_value(json_object_get(data, "through"));

	return t < seq ? t : seq - 1;
}

void
agent_conv_fold(struct agent_conv *c, const json_t *ev)
{
	enum sess_ev et = sess_ev_of(json_string_value(json_object_get(ev, "type")));
	const json_t *data = json_object_get(ev, "data");
	int64_t seq = json_integer_value(json_object_get(ev, "seq"));

	if (et == SESS_EV_COMPACTION_FAILED) {
		c->attempts++;
	} else if (et == SESS_EV_COMPACTED) {
		int64_t through = agent_conv_through(data, seq);
		struct agent_conv_meta *m = c->meta;
		json_t *old = c->msgs;
		size_t n = json_array_size(old), k = 0;
		c->attempts++;
		c->through = through;
		c->usage = -1;
		c->bytes_since = 0;
		c->bytes = 0;
		c->msgs = json_array();
		/* The summary first, then the messages after through, in order. */
		agent_conv_set_plan(c, json_object_get(data, "plan"));
		json_t *sum = agent_conv_summary_message(json_string_value(json_object_get(data, "summary")), c->plan);
		size_t slen = json_dumpb(sum, NULL, 0, JSON_COMPACT) + 1;
		for (size_t i = 0; i < n; i++)
			if (m[i].seq > through)
				k++;
		struct agent_conv_meta *keep = xcalloc(k + 1, sizeof(*keep));
		size_t j = 1;
		keep[0].seq = through;
		keep[0].len = slen;
		json_array_append_new(c->msgs, sum);
		c->bytes = slen;
		for (size_t i = 0; i < n; i++)
			if (m[i].seq > through) {
				keep[j++] = m[i];
				json_array_append(c->msgs, json_array_get(old, i));
				c->bytes += m[i].len;
			}
		json_decref(old);
		free(c->meta);
		c->meta = keep;
		c->cap = k + 1;
	} else if (et == SESS_EV_PLAN_UPDATED) {
		agent_conv_set_plan(c, json_object_get(data, "entries"));
	} else if (et != SESS_EV_NONE) {
		agent_conv_take(c, et, data, seq);
	}
}

void
agent_conv_rebuild(struct agent_conv *c, const json_t *events)
{
	size_t n = json_array_size(events), from = 0, at = n;
	unsigned attempts = 0;

	agent_conv_free(c);
	agent_conv_init(c);
	/* Backwards to the latest compaction, counting every attempt on the way. */
	for (size_t i = n; i-- > 0;) {
		enum sess_ev et = sess_ev_of(json_string_value(json_object_get(json_array_get(events, i), "type")));
		if (et == SESS_EV_COMPACTED || et == SESS_EV_COMPACTION_FAILED) {
			attempts++;
			if (at == n && et == SESS_EV_COMPACTED)
				at = i;
		}
	}
	if (at < n) {
		const json_t *data = json_object_get(json_array_get(events, at), "data");
		int64_t through = agent_conv_through(data, (int64_t)at);
		agent_conv_set_plan(c, json_object_get(data, "plan"));
		agent_conv_push(c, agent_conv_summary_message(json_string_value(json_object_get(data,
		    "summary")), c->plan), through);
		c->through = through;
		from = through < 0 ? 0 : (size_t)through + 1;
	}
	for (size_t i = from; i < n; i++) {
		const json_t *ev = json_array_get(events, i);
		enum sess_ev et = sess_ev_of(json_string_value(json_object_get(ev, "type")));
		if (i == at) {
			c->usage = -1;		/* no usage reported since the compaction yet */
			c->bytes_since = 0;
			continue;
		}
		if (et == SESS_EV_PLAN_UPDATED && at < n && i < at)
			continue;	/* before the compaction: its plan is newer (a fold of the file agrees) */
		if (et == SESS_EV_PLAN_UPDATED)
			agent_conv_set_plan(c, json_object_get(json_object_get(ev, "data"), "entries"));
		else if (et != SESS_EV_NONE && et != SESS_EV_COMPACTED && et != SESS_EV_COMPACTION_FAILED)
			agent_conv_take(c, et, json_object_get(ev, "data"), (int64_t)i);
	}
	c->attempts = attempts;
}

long long
agent_conv_estimate(const struct agent_conv *c, size_t fixed)
{
	if (c->usage >= 0)
		return c->usage + (long long)(c->bytes_since / 4);
	return (long long)((fixed + c->bytes + 3) / 4);
}

/* Where a conversation is rebuilt from: a live session, or one a worker is loading. */
struct agent_conv_src {
	size_t n;
	int (*type_at)(const void *src, size_t i);
	json_t *(*event)(const void *src, size_t i);			/* new ref, or NULL */
	struct sess_cursor *(*cursor)(const void *src, size_t from, size_t to);
	const void *src;
};

/* c (empty) from src: the latest compaction found by the type codes; returns the cursor over the
 * events from its through on, which agent_conv_fold_cursor folds as they were appended
 * (agent_conv_fold agrees with agent_conv_rebuild). */
static struct sess_cursor *
agent_conv_begin(struct agent_conv *c, const struct agent_conv_src *src)
{
	int compacted = SESS_EV_COMPACTED;
	int failed = SESS_EV_COMPACTION_FAILED;
	size_t n = src->n, at = n, from = 0;
	unsigned attempts = 0;
	json_t *ev;

	for (size_t i = n; i-- > 0;) {
		int t = src->type_at(src->src, i);
		if (t == compacted || t == failed) {
			attempts++;
			if (at == n && t == compacted)
				at = i;
		}
	}
	if (at < n && (ev = src->event(src->src, at)) != NULL) {
		int64_t through = agent_conv_through(json_object_get(ev, "data"), (int64_t)at);
		from = through < 0 ? 0 : (size_t)through + 1;
		json_decref(ev);
	}
	/* The fold counts the attempts from on itself (agent_conv_fold). */
	for (size_t i = from; i < n; i++) {
		int t = src->type_at(src->src, i);
		if (t == compacted || t == failed)
			attempts--;
	}
	c->attempts = attempts;
	return src->cursor(src->src, from, n);
}

/* The events a fold checks cancel between. */
#define AGENT_CONV_SLICE 256

int
agent_conv_fold_cursor(struct agent_conv *c, struct sess_cursor *cur, const atomic_int *cancel)
{
	json_t *ev;
	unsigned k = 0;

	while ((ev = sess_cursor_next(cur)) != NULL) {
		agent_conv_fold(c, ev);
		json_decref(ev);
		if (cancel && ++k % AGENT_CONV_SLICE == 0 && atomic_load_explicit(cancel, memory_order_relaxed))
			return -1;
	}
	return 0;
}

static int
agent_sess_type_at(const void *s, size_t i)
{
	return sess_type_at(s, i);
}

static json_t *
agent_sess_event(const void *s, size_t i)
{
	return sess_event_get((struct sess *)s, i);	/* reads, never changes it */
}

static struct sess_cursor *
agent_sess_cursor(const void *s, size_t from, size_t to)
{
	return sess_cursor_new((struct sess *)s, from, to);
}

void
agent_conv_from_sess(struct agent_conv *c, struct sess *s)
{
	struct agent_conv_src src = { sess_nev(s), agent_sess_type_at, agent_sess_event, agent_sess_cursor, s };
	struct sess_cursor *cur = agent_conv_begin(c, &src);

	agent_conv_fold_cursor(c, cur, NULL);
	sess_cursor_free(cur);
}

static int
agent_loading_type_at(const void *ld, size_t i)
{
	return sess_loading_type_at(ld, i);
}

static json_t *
agent_loading_event(const void *ld, size_t i)
{
	return sess_loading_event(ld, i);
}

static struct sess_cursor *
agent_loading_cursor(const void *ld, size_t from, size_t to)
{
	return sess_loading_cursor(ld, from, to);
}

struct sess_cursor *
agent_conv_begin_loading(struct agent_conv *c, const struct sess_loading *ld, size_t *n)
{
	struct agent_conv_src src = { sess_loading_nevents(ld), agent_loading_type_at, agent_loading_event,
		agent_loading_cursor, ld };

	*n = src.n;
	return agent_conv_begin(c, &src);
}
