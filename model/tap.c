/*
 * The recording tap (docs/contract.md §21): a provider that wraps another, passes every request and every
 * callback through, and hands each finished reply, in the replay provider's form (§7.2), to the
 * recorder. It knows nothing of files: the recorder decides where a reply goes.
 */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "base/buf.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

struct tap {
	struct model *inner;	/* owned */
	model_tap_fn *fn;
	void *arg;
};

struct model_req {
	struct model *m;		/* the tap */
	struct model_req *inner;	/* the inner provider's request */
	struct model_sink sink;		/* the agent's */
	struct model_script_ref ref;	/* ref.key owned; resolve_* unused */
	char *agent_id, *parent_id;	/* owned; parent_id NULL for a root */
	int summary;
	struct buf text, reasoning;
	json_t *calls;			/* owned: [{id?, name, arguments}] */
};

static void
tap_req_free(struct model_req *r)
{
	free((char *)r->ref.key);
	free(r->agent_id);
	free(r->parent_id);
	buf_free(&r->text);
	buf_free(&r->reasoning);
	json_decref(r->calls);
	free(r);
}

/* The reply so far: text, reasoning and calls; new reference. */
static json_t *
tap_reply(const struct model_req *r, int with_calls)
{
	json_t *reply = json_object();

	if (r->reasoning.len)
		json_object_set_new(reply, "reasoning", xjson_text(r->reasoning.data, r->reasoning.len));
	if (r->text.len)
		json_object_set_new(reply, "text", xjson_text(r->text.data, r->text.len));
	if (with_calls && json_array_size(r->calls))
		json_object_set(reply, "tool_calls", r->calls);
	return reply;
}

static void
tap_emit(struct model_req *r, json_t *reply)
{
	struct tap *t = r->m->impl;
	struct model_tap_reply rep = { &r->ref, r->agent_id, r->parent_id, r->summary, reply };

	t->fn(t->arg, &rep);
	json_decref(reply);
}

static void
tap_text(void *arg, const char *s, size_t n)
{
	struct model_req *r = arg;

	buf_append(&r->text, s, n);
	r->sink.text(r->sink.arg, s, n);
}

static void
tap_reasoning(void *arg, const char *s, size_t n)
{
	struct model_req *r = arg;

	buf_append(&r->reasoning, s, n);
	r->sink.reasoning(r->sink.arg, s, n);
}

/* Arguments as an object when that object prints back to the very text, else the text. */
static json_t *
tap_arguments(const char *args)
{
	json_t *obj = args ? json_loads(args, JSON_REJECT_DUPLICATES, NULL) : NULL;

	if (json_is_object(obj)) {
		char *back = json_dumps(obj, JSON_COMPACT);
		int same = back && strcmp(back, args) == 0;
		free(back);
		if (same)
			return obj;
	}
	json_decref(obj);
	return args ? xjson_text(args, strlen(args)) : json_object();
}

static void
tap_tool_call(void *arg, const char *call_id, const char *name, const char *args)
{
	struct model_req *r = arg;
	json_t *c = json_object();

	if (call_id && *call_id)
		json_object_set_new(c, "id", json_string(call_id));
	json_object_set_new(c, "name", json_string(name ? name : ""));
	json_object_set_new(c, "arguments", tap_arguments(args));
	json_array_append_new(r->calls, c);
	r->sink.tool_call(r->sink.arg, call_id, name, args);
}

static void
tap_finish(void *arg, const char *finish, const json_t *usage)
{
	struct model_req *r = arg;
	json_t *reply = tap_reply(r, 1);
	const json_t *p = json_object_get(usage, "prompt_tokens"), *c = json_object_get(usage, "completion_tokens");
	const char *def = json_array_size(r->calls) ? "tool_calls" : "stop";

	if (finish && strcmp(finish, def) != 0)
		json_object_set_new(reply, "finish", json_string(finish));
	/* Whole, as the agent logs it; replay needs the two counts. */
	if (json_is_integer(p) && json_is_integer(c) && json_integer_value(p) >= 0 && json_integer_value(c) >= 0)
		json_object_set_new(reply, "usage", json_deep_copy(usage));
	/* Recorded before the agent hears of it: what it does next may crash or be killed. */
	tap_emit(r, reply);
	r->sink.finish(r->sink.arg, finish, usage);
	tap_req_free(r);
}

static void
tap_error(void *arg, const char *code, const char *msg)
{
	struct model_req *r = arg;
	json_t *err = xjson_pack("{s:o}", "message", xjson_text(msg ? msg : "", msg ? strlen(msg) : 0));

	if (code)
		json_object_set_new(err, "code", json_string(code));
	tap_emit(r, xjson_pack("{s:o}", "error", err));
	r->sink.error(r->sink.arg, code, msg);
	tap_req_free(r);
}

static struct model_req *
tap_start(struct model *m, const struct model_call *call, const struct model_sink *sink)
{
	static const struct model_sink proto = { tap_text, tap_reasoning, tap_tool_call, tap_finish, tap_error,
		NULL };
	struct tap *t = m->impl;
	struct model_req *r = xcalloc(1, sizeof(*r));
	struct model_sink mine = proto;

	r->m = m;
	r->sink = *sink;
	r->ref.key = xstrdup(call->script.key ? call->script.key : "root");
	r->ref.ordinal = call->script.ordinal;
	r->ref.position = call->script.position;
	r->agent_id = xstrdup(call->agent_id ? call->agent_id : "");
	r->parent_id = call->parent_id ? xstrdup(call->parent_id) : NULL;
	r->summary = call->summary;
	buf_init(&r->text);
	buf_init(&r->reasoning);
	r->calls = json_array();
	mine.arg = r;
	r->inner = t->inner->ops->start(t->inner, call, &mine);
	if (r->inner == NULL) {
		tap_req_free(r);
		return NULL;
	}
	return r;
}

/* A request cancelled before its end replays as what streamed, then a hang until cancelled. */
static void
tap_cancel(struct model *m, struct model_req *r)
{
	struct tap *t = m->impl;
	json_t *reply = tap_reply(r, 0);

	json_object_set_new(reply, "hang", json_true());
	tap_emit(r, reply);
	t->inner->ops->cancel(t->inner, r->inner);
	tap_req_free(r);
}

static void
tap_report(struct model *m)
{
	struct tap *t = m->impl;

	t->inner->ops->report(t->inner);
}

static void
tap_free(struct model *m)
{
	struct tap *t = m->impl;

	model_free(t->inner);
	free(t);
	free(m);
}

static const struct model_ops tap_ops = {
	"tap", tap_start, tap_cancel, tap_report, tap_free,
};

struct model *
model_tap_new(struct model *inner, model_tap_fn *fn, void *arg)
{
	struct model *m = xcalloc(1, sizeof(*m));
	struct tap *t = xcalloc(1, sizeof(*t));

	t->inner = inner;
	t->fn = fn;
	t->arg = arg;
	m->ops = &tap_ops;
	m->runq = inner->runq;
	m->impl = t;
	m->id = model_id(inner);
	m->provider = model_provider(inner);
	return m;
}
