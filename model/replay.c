/*
 * The keyless recorded provider (docs/contract.md §7.2). A recording holds scripts; each
 * agent takes the script its key and ordinal select and, per request, the
 * reply at its position (the number of requests already in its log), so a
 * restarted process continues every agent where it left off.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/model.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/utf8.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

#define REPLAY_CHUNK 16
#define REPLAY_SLICE (64u << 10)	/* bytes streamed per run-queue task */

struct replay_script {
	char *key;		/* "root" or "label:<label>" */
	json_t *replies;	/* owned array */
	json_t *compactions;	/* owned array: the summary replies (docs/contract.md §19); may be empty */
	size_t used;		/* highest position consumed + 1 */
	size_t used_compactions;
};

struct replay {
	struct replay_script *scripts;
	size_t n;
	char *model;		/* owned: the recording's "model" (the provider's id), or NULL */
};

struct model_req {
	struct model_sink sink;
	struct runq *runq;	/* borrowed: where the next slice of its stream goes */
	json_t *reply;		/* owned */
	json_t *calls;		/* owned: [{id?, name, arguments text}] after placeholders */
	int cancelled;
	int hang;		/* never finishes; freed by its cancel */
	int streaming;		/* a hang whose text is still queued: the task frees it if cancelled */
	int part;		/* streamed so far: 0 reasoning, 1 text, 2 both out */
	size_t off;		/* ... and bytes of that part */
};

/* Texts may hold U+0000 (docs/contract.md §3.2 lets clients send it too); names and codes may not. */
static int
replay_has_nul(const json_t *v)
{
	return json_is_string(v) && strlen(json_string_value(v)) != json_string_length(v);
}

static int
replay_check_reply(const json_t *r, const char *where, struct err *e)
{
	static const char *const keys[] = { "text", "reasoning", "tool_calls", "finish", "error",
		"hang", "expect", "usage" };
	const char *k;
	json_t *v;

	if (!json_is_object(r))
		return err_set(e, ERR_INVALID_RECORDING, "%s: a reply must be an object", where);
	json_object_foreach((json_t *)r, k, v) {
		size_t i;
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (strcmp(k, keys[i]) == 0)
				break;
		if (i == sizeof(keys) / sizeof(keys[0]))
			return err_set(e, ERR_INVALID_RECORDING, "%s: unknown field \"%s\"", where, k);
	}
	if ((v = json_object_get(r, "text")) && !json_is_string(v))
		return err_set(e, ERR_INVALID_RECORDING, "%s: \"text\" must be a string", where);
	if ((v = json_object_get(r, "reasoning")) && !json_is_string(v))
		return err_set(e, ERR_INVALID_RECORDING, "%s: \"reasoning\" must be a string", where);
	if ((v = json_object_get(r, "expect")) && !json_is_string(v))
		return err_set(e, ERR_INVALID_RECORDING, "%s: \"expect\" must be a string", where);
	if ((v = json_object_get(r, "hang")) && !json_is_boolean(v))
		return err_set(e, ERR_INVALID_RECORDING, "%s: \"hang\" must be a boolean", where);
	if ((v = json_object_get(r, "usage"))) {
		const json_t *p = json_object_get(v, "prompt_tokens"), *c = json_object_get(v, "completion_tokens");
		if (!json_is_object(v) || !json_is_integer(p) || !json_is_integer(c) ||
		    json_integer_value(p) < 0 || json_integer_value(c) < 0)
			return err_set(e, ERR_INVALID_RECORDING, "%s: \"usage\" needs integers "
			    "\"prompt_tokens\" and \"completion_tokens\" from 0", where);
	}
	if ((v = json_object_get(r, "finish"))) {
		const char *f = json_string_value(v);
		if (!f || replay_has_nul(v) ||
		    (strcmp(f, "stop") != 0 && strcmp(f, "tool_calls") != 0 &&
			      strcmp(f, "length") != 0 && strcmp(f, "refusal") != 0))
			return err_set(e, ERR_INVALID_RECORDING,
			    "%s: \"finish\" must be stop, tool_calls, length or refusal", where);
	}
	if ((v = json_object_get(r, "error"))) {
		if (!json_is_object(v) || !json_is_string(json_object_get(v, "message")))
			return err_set(e, ERR_INVALID_RECORDING, "%s: \"error\" needs a string \"message\"", where);
		if (json_object_get(v, "code") && !json_is_string(json_object_get(v, "code")))
			return err_set(e, ERR_INVALID_RECORDING, "%s: \"error.code\" must be a string", where);
		/* Both reach the agent as C strings. */
		if (replay_has_nul(json_object_get(v, "message")) ||
		    replay_has_nul(json_object_get(v, "code")))
			return err_set(e, ERR_INVALID_RECORDING, "%s: \"error\" must not contain \\u0000",
			    where);
	}
	if ((v = json_object_get(r, "tool_calls"))) {
		size_t i;
		json_t *c;
		if (!json_is_array(v))
			return err_set(e, ERR_INVALID_RECORDING, "%s: \"tool_calls\" must be an array", where);
		json_array_foreach(v, i, c) {
			if (!json_is_string(json_object_get(c, "name")))
				return err_set(e, ERR_INVALID_RECORDING, "%s: tool_calls[%zu] needs a string \"name\"",
				    where, i);
			if (replay_has_nul(json_object_get(c, "name")))
				return err_set(e, ERR_INVALID_RECORDING,
				    "%s: tool_calls[%zu].name must not contain \\u0000", where, i);
			json_t *a = json_object_get(c, "arguments"), *id = json_object_get(c, "id");
			if (id && (!json_is_string(id) || replay_has_nul(id)))
				return err_set(e, ERR_INVALID_RECORDING,
				    "%s: tool_calls[%zu].id must be a string without \\u0000", where, i);
			if (a && !json_is_object(a) && !json_is_string(a))
				return err_set(e, ERR_INVALID_RECORDING,
				    "%s: tool_calls[%zu].arguments must be an object or a string", where, i);
		}
	}
	return 0;
}

static int
replay_parse(struct replay *rp, const json_t *root, struct err *e)
{
	const json_t *scripts = json_object_get(root, "scripts");
	size_t i;
	json_t *s;

	if (!json_is_object(root))
		return err_set(e, ERR_INVALID_RECORDING, "the recording must be a JSON object");
	if (json_integer_value(json_object_get(root, "version")) != 1)
		return err_set(e, ERR_INVALID_RECORDING, "the recording needs \"version\": 1");
	if (!json_is_array(scripts))
		return err_set(e, ERR_INVALID_RECORDING, "the recording needs a \"scripts\" array");
	if (json_object_get(root, "model")) {
		const json_t *model = json_object_get(root, "model");
		if (!json_is_string(model) || json_string_length(model) == 0 || replay_has_nul(model))
			return err_set(e, ERR_INVALID_RECORDING, "\"model\" must be a non-empty string");
		rp->model = xstrdup(json_string_value(model));
	}
	rp->scripts = xcalloc(json_array_size(scripts) + 1, sizeof(*rp->scripts));
	json_array_foreach(scripts, i, s) {
		const char *agent = json_string_value(json_object_get(s, "agent"));
		json_t *replies = json_object_get(s, "replies");
		char where[96];
		if (!agent || replay_has_nul(json_object_get(s, "agent")) ||
		    (strcmp(agent, "root") != 0 && strncmp(agent, "label:", 6) != 0))
			return err_set(e, ERR_INVALID_RECORDING,
			    "scripts[%zu]: \"agent\" must be \"root\" or \"label:<label>\"", i);
		json_t *compactions = json_object_get(s, "compactions");
		if (!json_is_array(replies))
			return err_set(e, ERR_INVALID_RECORDING, "scripts[%zu]: \"replies\" must be an array", i);
		if (compactions && !json_is_array(compactions))
			return err_set(e, ERR_INVALID_RECORDING, "scripts[%zu]: \"compactions\" must be an array",
			    i);
		for (size_t k = 0; k < json_array_size(replies); k++) {
			snprintf(where, sizeof(where), "scripts[%zu].replies[%zu]", i, k);
			if (replay_check_reply(json_array_get(replies, k), where, e) < 0)
				return -1;
		}
		for (size_t k = 0; k < json_array_size(compactions); k++) {
			const json_t *r = json_array_get(compactions, k);
			snprintf(where, sizeof(where), "scripts[%zu].compactions[%zu]", i, k);
			if (replay_check_reply(r, where, e) < 0)
				return -1;
			if (json_object_get(r, "tool_calls"))
				return err_set(e, ERR_INVALID_RECORDING, "%s: a summary reply has no \"tool_calls\"",
				    where);
		}
		rp->scripts[rp->n].key = xstrdup(agent);
		rp->scripts[rp->n].replies = json_incref(replies);
		rp->scripts[rp->n].compactions = compactions ? json_incref(compactions) : json_array();
		rp->n++;
	}
	return 0;
}

/*
 * Streams the reply's reasoning, then its text (U+0000 included), in chunks of at most
 * REPLAY_CHUNK bytes, from where the last slice stopped; at most REPLAY_SLICE bytes a call, so a
 * long reply is one run-queue task per slice and the loop reads stdin (a cancel, a list)
 * between them. 1 once both are out, 0 while more remains.
 */
static int
replay_stream(struct model_req *r)
{
	static const char *const parts[] = { "reasoning", "text" };
	size_t budget = REPLAY_SLICE;

	for (; r->part < 2; r->part++, r->off = 0) {
		const json_t *v = json_object_get(r->reply, parts[r->part]);
		void (*fn)(void *, const char *, size_t) = r->part == 0 ? r->sink.reasoning : r->sink.text;
		const char *s = json_string_value(v);
		size_t len = json_string_length(v);

		while (s && r->off < len) {
			size_t n;
			if (budget == 0)
				return 0;
			n = utf8_boundary(s + r->off, len - r->off, REPLAY_CHUNK);
			fn(r->sink.arg, s + r->off, n);
			r->off += n;
			budget = n < budget ? budget - n : 0;
		}
	}
	return 1;
}

static void replay_req_free(struct model_req *r);

/* A hang's text and reasoning, then nothing: the request stays open until cancelled. */
static void
replay_stream_then_hang(void *arg)
{
	struct model_req *r = arg;

	if (r->cancelled) {
		replay_req_free(r);
		return;
	}
	if (!replay_stream(r)) {
		runq_push(r->runq, replay_stream_then_hang, r);
		return;
	}
	r->streaming = 0;
}

static void
replay_req_free(struct model_req *r)
{
	json_decref(r->reply);
	json_decref(r->calls);
	free(r);
}

static void
replay_deliver(void *arg)
{
	struct model_req *r = arg;
	const json_t *reply = r->reply;
	const json_t *err = json_object_get(reply, "error");
	const char *finish = json_string_value(json_object_get(reply, "finish"));
	size_t i;
	json_t *c;

	if (r->cancelled)
		goto out;
	if (err) {
		const char *code = json_string_value(json_object_get(err, "code"));
		r->sink.error(r->sink.arg, code ? code : err_tool(ERR_MODEL_ERROR),
		    json_string_value(json_object_get(err, "message")));
		goto out;
	}
	if (!replay_stream(r)) {
		runq_push(r->runq, replay_deliver, r);	/* the rest in the next slice */
		return;
	}
	json_array_foreach(r->calls, i, c)
		r->sink.tool_call(r->sink.arg, json_string_value(json_object_get(c, "id")),
		    json_string_value(json_object_get(c, "name")),
		    json_string_value(json_object_get(c, "arguments")));
	if (finish == NULL)
		finish = json_array_size(r->calls) ? "tool_calls" : "stop";
	r->sink.finish(r->sink.arg, finish, json_object_get(reply, "usage"));
out:
	replay_req_free(r);
}

/* Appends s[0..len) to b with {{agent:<label>}}, {{parent}} and {{self}} replaced. */
static void
replay_fill(struct buf *b, const char *s, size_t len, const struct model_call *call)
{
	const char *end = s + len;

	while (s < end) {
		const char *open = memmem(s, (size_t)(end - s), "{{", 2);
		const char *close = open ? memmem(open, (size_t)(end - open), "}}", 2) : NULL;
		if (!open || !close) {
			buf_append(b, s, (size_t)(end - s));
			break;
		}
		buf_append(b, s, (size_t)(open - s));
		char *name = xstrndup(open + 2, (size_t)(close - open - 2));
		char *val = NULL;
		if (strcmp(name, "self") == 0)
			val = xstrdup(call->agent_id);
		else if (strcmp(name, "cwd") == 0 && call->cwd)
			val = xstrdup(call->cwd);
		else if (strcmp(name, "parent") == 0 && call->parent_id)
			val = xstrdup(call->parent_id);
		else if (strncmp(name, "agent:", 6) == 0 && call->script.resolve_child)
			val = call->script.resolve_child(call->script.resolve_arg, name + 6);
		if (val)
			buf_puts(b, val);
		else
			buf_append(b, open, (size_t)(close + 2 - open));	/* left as written */
		free(val);
		free(name);
		s = close + 2;
	}
}

static json_t *
replay_fill_string(void *arg, const json_t *v)
{
	const struct model_call *call = arg;
	struct buf b;

	buf_init(&b);
	replay_fill(&b, json_string_value(v), json_string_length(v), call);
	json_t *out = json_stringn(b.data ? b.data : "", b.len);
	buf_free(&b);
	return out ? out : json_incref((json_t *)v);
}

static json_t *
replay_fill_json(const json_t *v, const struct model_call *call)
{
	return xjson_map_strings(v, replay_fill_string, (void *)call);
}

/*
 * A recorded session's text names its workspace {{cwd}} (docs/contract.md §21): text and reasoning get the
 * session's. Returns reply with them filled (new reference).
 */
static json_t *
replay_fill_cwd(const json_t *reply, const struct model_call *call)
{
	static const char *const keys[] = { "text", "reasoning" };
	json_t *out = NULL;

	for (size_t i = 0; i < 2; i++) {
		const json_t *v = json_object_get(reply, keys[i]);
		const char *s = json_string_value(v), *p;
		struct buf b;
		if (s == NULL || call->cwd == NULL ||
		    memmem(s, json_string_length(v), "{{cwd}}", 7) == NULL)
			continue;
		if (out == NULL)
			out = json_copy((json_t *)reply);
		buf_init(&b);
		for (size_t off = 0, len = json_string_length(v); off < len;) {
			p = memmem(s + off, len - off, "{{cwd}}", 7);
			if (p == NULL) {
				buf_append(&b, s + off, len - off);
				break;
			}
			buf_append(&b, s + off, (size_t)(p - (s + off)));
			buf_puts(&b, call->cwd);
			off = (size_t)(p - s) + 7;
		}
		json_object_set_new(out, keys[i], json_stringn(b.data ? b.data : "", b.len));
		buf_free(&b);
	}
	return out ? out : json_incref((json_t *)reply);
}

/* Whether the text of the last message holds the string needle (NUL bytes included). */
static int
replay_expect_ok(const json_t *messages, const json_t *needle)
{
	const json_t *last = json_array_get(messages, json_array_size(messages) - 1);
	const json_t *text = json_object_get(last, "content");

	if (!json_is_string(text))
		return 0;
	return memmem(json_string_value(text), json_string_length(text), json_string_value(needle),
	    json_string_length(needle)) != NULL;
}

/* Fails a request through the queue, so start never calls back re-entrantly. */
static struct model_req *
replay_fail(struct model *m, const struct model_sink *sink, enum err_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static struct model_req *
replay_fail(struct model *m, const struct model_sink *sink, enum err_code code, const char *fmt, ...)
{
	struct model_req *r = xcalloc(1, sizeof(*r));
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->sink = *sink;
	r->runq = m->runq;
	r->reply = xjson_pack("{s:{s:o, s:s}}", "error", "message", xjson_text(msg, strlen(msg)), "code", err_tool(code));
	r->calls = json_array();
	runq_push(m->runq, replay_deliver, r);
	return r;
}

static struct model_req *
replay_start(struct model *m, const struct model_call *call, const struct model_sink *sink)
{
	const struct model_script_ref *ref = &call->script;
	struct replay *rp = m->impl;
	struct replay_script *sc = NULL;
	size_t seen = 0;
	const json_t *reply, *calls, *expect;
	struct model_req *r;
	size_t i;
	json_t *c;

	for (i = 0; i < rp->n; i++)
		if (strcmp(rp->scripts[i].key, ref->key) == 0 && seen++ == ref->ordinal) {
			sc = &rp->scripts[i];
			break;
		}
	if (sc == NULL)
		return replay_fail(m, sink, ERR_REPLAY_EXHAUSTED,
		    "replay: no script for agent \"%s\" #%zu (REPLAY_EXHAUSTED)", ref->key,
		    ref->ordinal + 1);
	if (call->summary) {
		/* A summary request takes the script's next compaction reply; replies stay put. */
		if (ref->position >= json_array_size(sc->compactions))
			return replay_fail(m, sink, ERR_REPLAY_EXHAUSTED,
			    "replay: script \"%s\" #%zu has no compaction reply left for summary request "
			    "%zu (REPLAY_EXHAUSTED)", ref->key, ref->ordinal + 1, ref->position + 1);
		if (sc->used_compactions < ref->position + 1)
			sc->used_compactions = ref->position + 1;
		reply = json_array_get(sc->compactions, ref->position);
	} else {
		if (ref->position >= json_array_size(sc->replies))
			return replay_fail(m, sink, ERR_REPLAY_EXHAUSTED,
			    "replay: script \"%s\" #%zu has no reply left for request %zu (REPLAY_EXHAUSTED)",
			    ref->key, ref->ordinal + 1, ref->position + 1);
		if (sc->used < ref->position + 1)
			sc->used = ref->position + 1;
		reply = json_array_get(sc->replies, ref->position);
	}
	expect = json_object_get(reply, "expect");
	if (expect && !replay_expect_ok(call->messages, expect))
		return replay_fail(m, sink, ERR_REPLAY_MISMATCH,
		    "replay: request %zu of \"%s\" expected the last message to contain \"%s\" "
		    "(REPLAY_MISMATCH)", ref->position + 1, ref->key, json_string_value(expect));
	r = xcalloc(1, sizeof(*r));
	r->sink = *sink;
	r->runq = m->runq;
	r->reply = replay_fill_cwd(reply, call);
	r->calls = json_array();
	calls = json_object_get(reply, "tool_calls");
	json_array_foreach(calls, i, c) {
		json_t *args = json_object_get(c, "arguments");
		char *text;
		if (json_is_string(args)) {
			struct buf b;
			buf_init(&b);
			replay_fill(&b, json_string_value(args), json_string_length(args), call);
			text = buf_steal(&b);	/* JSON text: a raw U+0000 is not valid there */
		} else {
			json_t *filled = args ? replay_fill_json(args, call) : json_object();
			text = json_dumps(filled, JSON_COMPACT);
			json_decref(filled);
		}
		json_array_append_new(r->calls, xjson_pack("{s:O, s:s}", "name", json_object_get(c, "name"),
		    "arguments", text));
		if (json_object_get(c, "id"))
			json_object_set(json_array_get(r->calls, i), "id", json_object_get(c, "id"));
		free(text);
	}
	if (json_is_true(json_object_get(reply, "hang"))) {
		/* Never answers until cancelled; its text and reasoning, if any, stream first, so a
		 * script can wait for them and know the request is in flight. */
		r->hang = 1;
		if (json_object_get(reply, "text") || json_object_get(reply, "reasoning")) {
			r->streaming = 1;
			runq_push(m->runq, replay_stream_then_hang, r);
		}
	} else {
		runq_push(m->runq, replay_deliver, r);
	}
	return r;
}

static void
replay_cancel(struct model *m, struct model_req *r)
{
	(void)m;
	if (r->hang && !r->streaming) {
		replay_req_free(r);
		return;
	}
	r->cancelled = 1;	/* the queued delivery frees it */
}

static void
replay_report(struct model *m)
{
	struct replay *rp = m->impl;

	for (size_t i = 0; i < rp->n; i++) {
		size_t total = json_array_size(rp->scripts[i].replies);
		size_t ctotal = json_array_size(rp->scripts[i].compactions);
		if (rp->scripts[i].used < total)
			log_warn("replay: script %zu (\"%s\"): %zu of %zu replies unused", i + 1,
			    rp->scripts[i].key, total - rp->scripts[i].used, total);
		if (rp->scripts[i].used_compactions < ctotal)
			log_warn("replay: script %zu (\"%s\"): %zu of %zu compaction replies unused", i + 1,
			    rp->scripts[i].key, ctotal - rp->scripts[i].used_compactions, ctotal);
	}
}

static void
replay_free(struct model *m)
{
	struct replay *rp = m->impl;

	for (size_t i = 0; i < rp->n; i++) {
		free(rp->scripts[i].key);
		json_decref(rp->scripts[i].replies);
		json_decref(rp->scripts[i].compactions);
	}
	free(rp->scripts);
	free(rp->model);
	free(rp);
	free(m);
}

static const struct model_ops replay_ops = {
	"replay", replay_start, replay_cancel, replay_report, replay_free,
};

/* Builds the provider from a parsed recording; root: borrowed. */
static struct model *
model_replay_from_json(struct runq *q, const json_t *root, const char *name, struct err *e)
{
	struct replay *rp = xcalloc(1, sizeof(*rp));
	struct model *m = xcalloc(1, sizeof(*m));

	m->impl = rp;
	if (replay_parse(rp, root, e) < 0) {
		char msg[sizeof(e->msg)];
		snprintf(msg, sizeof(msg), "%s", e->msg);
		snprintf(e->msg, sizeof(e->msg), "recording %.200s: %.290s", name, msg);
		replay_free(m);
		return NULL;
	}
	m->ops = &replay_ops;
	m->runq = q;
	m->id = rp->model;	/* a recorded session names the model it ran on (docs/contract.md §21) */
	return m;
}

/*
 * O_NONBLOCK: opening a FIFO for reading would wait for a writer and block start-up; it is
 * refused with the other files that are not regular (a directory, a device).
 */
struct model *
model_replay_new(struct runq *q, const char *path, struct err *e)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	json_error_t jerr;
	struct stat st;
	json_t *root;
	struct model *m;
	FILE *f;

	if (fd < 0) {
		err_set(e, ERR_INVALID_RECORDING, "cannot open recording %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		err_set(e, ERR_INVALID_RECORDING, "recording %s: not a regular file", path);
		close(fd);
		return NULL;
	}
	/* Through stdio: json_loadfd reads one byte per read(2). */
	if ((f = fdopen(fd, "r")) == NULL) {
		err_set(e, ERR_INVALID_RECORDING, "cannot read recording %s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	root = json_loadf(f, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	fclose(f);
	if (root == NULL) {
		err_set(e, ERR_INVALID_RECORDING, "recording %s: %s (line %d)", path, jerr.text, jerr.line);
		return NULL;
	}
	m = model_replay_from_json(q, root, path, e);
	json_decref(root);
	return m;
}

struct model *
model_replay_new_buf(struct runq *q, const char *data, size_t len, struct err *e)
{
	json_error_t jerr;
	json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	struct model *m;

	if (root == NULL) {
		err_set(e, ERR_INVALID_RECORDING, "recording: %s (line %d)", jerr.text, jerr.line);
		return NULL;
	}
	m = model_replay_from_json(q, root, "(buffer)", e);
	json_decref(root);
	return m;
}
