/*
 * The OpenAI-compatible chat-completions provider (docs/contract.md §7.3). libcurl's multi
 * socket interface is driven by libev: curl tells us which sockets to watch and
 * when to wake it; nothing blocks the loop. Text and reasoning deltas are
 * relayed as they arrive; the finish (or the error) goes through the run queue,
 * outside curl's callbacks. 429 and 5xx are retried (at most max_tries requests
 * in all) with exponential backoff and jitter, honouring Retry-After.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/curl_dl.h"
#include "base/curl_ev.h"

#include "model/body.h"
#include "model/model.h"
#include "base/sse.h"
#include "model/sse_delta.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/utf8.h"
#include "base/xmalloc.h"

#define OA_ERRBODY_MAX 65536
#define OA_MIB ((size_t)1024 * 1024)
#define OA_RETRY_MAX_MS 60000L	/* no wait between two tries is longer */
#define CURLAPI curl_dl()

struct oa {
	struct model *m;
	struct ev_loop *loop;
	struct curl_ev cev;	/* the multi handle on the loop, once ready */
	int ready;		/* libcurl is loaded and cev made: at the first request */
	char *url;
	char *auth;		/* "Authorization: Bearer <key>": never logged */
	char *model;
	struct openai_config cfg;
};

struct oa_call {
	char *id, *name;
	struct buf args;
};

struct model_req {
	struct oa *oa;
	struct model_sink sink;
	CURL *easy;
	struct curl_slist *headers;
	char *body;		/* the body without images, or NULL */
	struct body stream;	/* the body with images (streamed is set) */
	int streamed;
	int tries;
	ev_timer retry;
	ev_timer idle;
	long status;
	long retry_after_ms;
	struct buf errbody;
	struct sse sse;
	int done_seen;
	char finish[16];
	json_t *usage;
	struct oa_call *calls;
	size_t ncalls;
	int failed;		/* errmsg/errcode hold the failure */
	char errcode[40];
	char errmsg[600];
	int delivering;		/* the outcome is queued on the run queue */
	struct buf pend;	/* deltas of one network read, relayed together */
	struct buf fast_text, fast_reasoning;	/* the fast path's scratch */
	struct sse_delta fast;			/* and what it learnt of this stream */
	int pend_reasoning;
	int cancelled;
};

/* ---- outcome ---- */

static void
oa_req_free(struct model_req *r)
{
	ev_timer_stop(r->oa->loop, &r->retry);
	ev_timer_stop(r->oa->loop, &r->idle);
	if (r->easy) {
		CURLAPI->multi_remove_handle(r->oa->cev.multi, r->easy);
		CURLAPI->easy_cleanup(r->easy);
		r->easy = NULL;
	}
	if (r->headers)
		CURLAPI->slist_free_all(r->headers);	/* (none when libcurl never loaded) */
	free(r->body);
	if (r->streamed)
		body_free(&r->stream);
	buf_free(&r->errbody);
	buf_free(&r->pend);
	buf_free(&r->fast_text);
	buf_free(&r->fast_reasoning);
	sse_delta_free(&r->fast);
	sse_free(&r->sse);
	json_decref(r->usage);
	for (size_t i = 0; i < r->ncalls; i++) {
		free(r->calls[i].id);
		free(r->calls[i].name);
		buf_free(&r->calls[i].args);
	}
	free(r->calls);
	free(r);
}

static void
oa_deliver(void *arg)
{
	struct model_req *r = arg;

	if (!r->cancelled) {
		if (r->failed) {
			r->sink.error(r->sink.arg, r->errcode, r->errmsg);
		} else {
			for (size_t i = 0; i < r->ncalls; i++)
				r->sink.tool_call(r->sink.arg, r->calls[i].id, r->calls[i].name ? r->calls[i].name : "",
				    r->calls[i].args.len ? r->calls[i].args.data : "{}");
			r->sink.finish(r->sink.arg, r->finish[0] ? r->finish : (r->ncalls ? "tool_calls" : "stop"),
			    r->usage);
		}
	}
	oa_req_free(r);
}

static void
oa_fail(struct model_req *r, enum err_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
oa_fail(struct model_req *r, enum err_code code, const char *fmt, ...)
{
	va_list ap;

	if (r->failed)
		return;
	r->failed = 1;
	snprintf(r->errcode, sizeof(r->errcode), "%s", err_tool(code));
	va_start(ap, fmt);
	vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
	va_end(ap);
}

/* Ends the transfer (if any) and queues the outcome. */
static void
oa_finish(struct model_req *r)
{
	ev_timer_stop(r->oa->loop, &r->idle);
	if (r->easy) {
		CURLAPI->multi_remove_handle(r->oa->cev.multi, r->easy);
		CURLAPI->easy_cleanup(r->easy);
		r->easy = NULL;
	}
	r->delivering = 1;
	runq_push(r->oa->m->runq, oa_deliver, r);
}

/* ---- stream parsing ---- */

static struct oa_call *
oa_call_at(struct model_req *r, size_t index)
{
	if (index >= 1024)
		return NULL;
	if (index >= r->ncalls) {
		r->calls = xrealloc(r->calls, (index + 1) * sizeof(*r->calls));
		memset(r->calls + r->ncalls, 0, (index + 1 - r->ncalls) * sizeof(*r->calls));
		r->ncalls = index + 1;
	}
	return &r->calls[index];
}

static const char *
oa_finish_kind(const char *f)
{
	if (strcmp(f, "tool_calls") == 0 || strcmp(f, "function_call") == 0)
		return "tool_calls";
	if (strcmp(f, "length") == 0)
		return "length";
	if (strcmp(f, "content_filter") == 0)
		return "refusal";
	return "stop";
}

/* Relays the deltas gathered from one read: one update instead of one per SSE event. */
static void
oa_flush(struct model_req *r)
{
	if (r->pend.len == 0)
		return;
	(r->pend_reasoning ? r->sink.reasoning : r->sink.text)(r->sink.arg, r->pend.data, r->pend.len);
	buf_consume(&r->pend, r->pend.len);
}

static void
oa_relay(struct model_req *r, int reasoning, const json_t *s)
{
	if (!json_is_string(s) || json_string_length(s) == 0)
		return;
	if (r->pend.len && r->pend_reasoning != reasoning)
		oa_flush(r);
	r->pend_reasoning = reasoning;
	buf_append(&r->pend, json_string_value(s), json_string_length(s));
}

static void
oa_relay_bytes(struct model_req *r, int reasoning, struct buf *b)
{
	if (b->len == 0)
		return;
	if (r->pend.len && r->pend_reasoning != reasoning)
		oa_flush(r);
	r->pend_reasoning = reasoning;
	buf_append(&r->pend, b->data, b->len);
	buf_consume(b, b->len);
}

static int
oa_on_event(void *arg, const char *data, size_t len)
{
	struct model_req *r = arg;
	json_t *j, *choice, *delta, *calls;
	json_error_t jerr;
	size_t i;
	json_t *c;

	if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
		r->done_seen = 1;
		return 0;
	}
	/* Most events are one text delta: decoded without a JSON tree (model/sse_delta.c). */
	if (sse_delta_fast(&r->fast, data, len, &r->fast_text, &r->fast_reasoning)) {
		oa_relay_bytes(r, 1, &r->fast_reasoning);
		oa_relay_bytes(r, 0, &r->fast_text);
		return 0;
	}
	j = json_loadb(data, len, 0, &jerr);
	if (j == NULL && !utf8_valid(data, len)) {
		size_t n;
		char *fixed = utf8_repair(data, len, &n);
		j = json_loadb(fixed, n, 0, &jerr);
		free(fixed);
	}
	if (!json_is_object(j)) {
		oa_fail(r, ERR_MODEL_STREAM, "malformed data line in the model stream (%s): %.80s",
		    j ? "not an object" : jerr.text, data);
		json_decref(j);
		return -1;
	}
	if (json_is_object(json_object_get(j, "usage"))) {
		json_decref(r->usage);
		r->usage = json_incref(json_object_get(j, "usage"));
	}
	if (json_is_object(json_object_get(j, "error"))) {
		const char *m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
		oa_fail(r, ERR_MODEL_ERROR, "the model server reported an error: %s", m ? m : "(no message)");
		json_decref(j);
		return -1;
	}
	choice = json_array_get(json_object_get(j, "choices"), 0);
	delta = json_object_get(choice, "delta");
	oa_relay(r, 1, json_object_get(delta, "reasoning_content"));
	oa_relay(r, 0, json_object_get(delta, "content"));
	calls = json_object_get(delta, "tool_calls");
	json_array_foreach(calls, i, c) {
		json_t *idx = json_object_get(c, "index"), *fn = json_object_get(c, "function");
		struct oa_call *oc = oa_call_at(r, json_is_integer(idx) ? (size_t)json_integer_value(idx) : i);
		if (oc == NULL)
			continue;
		if (json_is_string(json_object_get(c, "id")) && oc->id == NULL)
			oc->id = xstrdup(json_string_value(json_object_get(c, "id")));
		if (json_is_string(json_object_get(fn, "name")) && oc->name == NULL)
			oc->name = xstrdup(json_string_value(json_object_get(fn, "name")));
		if (json_is_string(json_object_get(fn, "arguments")))
			buf_append(&oc->args, json_string_value(json_object_get(fn, "arguments")),
			    json_string_length(json_object_get(fn, "arguments")));
	}
	if (json_is_string(json_object_get(choice, "finish_reason")))
		snprintf(r->finish, sizeof(r->finish), "%s",
		    oa_finish_kind(json_string_value(json_object_get(choice, "finish_reason"))));
	json_decref(j);
	return 0;
}

/* ---- curl callbacks ---- */

static size_t
oa_write_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct model_req *r = arg;
	size_t len = size * nmemb;

	ev_timer_again(r->oa->loop, &r->idle);
	if (r->status == 0)
		CURLAPI->easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	if (r->status != 200) {
		if (r->errbody.len < OA_ERRBODY_MAX)
			buf_append(&r->errbody, data, len);
		return len;
	}
	int rc = sse_feed(&r->sse, data, len);
	oa_flush(r);
	if (rc < 0) {
		if (r->sse.too_long)
			oa_fail(r, ERR_MODEL_STREAM, "the model stream sent %s longer than %zu MiB",
			    strcmp(r->sse.too_long, "line") == 0 ? "a line" : "an event", r->sse.max / OA_MIB);
		return 0;	/* aborts the transfer: the failure is recorded */
	}
	return len;
}

static size_t
oa_header_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct model_req *r = arg;
	size_t len = size * nmemb;

	if (len > 12 && strncasecmp(data, "retry-after:", 12) == 0) {
		double secs = strtod(data + 12, NULL);
		if (secs > 0 && secs < 3600)
			r->retry_after_ms = (long)(secs * 1000);
	}
	return len;
}

static void oa_submit(struct model_req *r);

static void
oa_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct model_req *r = w->data;

	(void)loop;
	(void)revents;
	oa_submit(r);
}

static void
oa_idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct model_req *r = w->data;

	(void)loop;
	(void)revents;
	oa_fail(r, ERR_MODEL_TIMEOUT, "the model server sent nothing for %ld ms", r->oa->cfg.idle_timeout_ms);
	oa_finish(r);
}

static const char *
oa_error_message(struct model_req *r, char *buf, size_t size)
{
	json_t *j = json_loadb(r->errbody.data ? r->errbody.data : "", r->errbody.len, 0, NULL);
	const char *m = json_string_value(json_object_get(json_object_get(j, "error"), "message"));

	if (m == NULL)
		m = json_string_value(json_object_get(j, "message"));
	if (m)
		snprintf(buf, size, "%s", m);
	else if (r->errbody.len)
		snprintf(buf, size, "%.200s", r->errbody.data);
	else
		snprintf(buf, size, "(empty body)");
	json_decref(j);
	return buf;
}

/*
 * The wait before retry number tries (1, 2, ...): base (clamped to 1..OA_RETRY_MAX_MS) doubled for
 * each earlier retry, plus a jitter below base from seed (>= 0), at most OA_RETRY_MAX_MS. Doubling
 * stops at the cap, so no setting of ACP_AGENT_RETRY_BASE_MS can overflow it.
 */
static long
oa_backoff_ms(long base, int tries, long seed)
{
	long d = base < 1 ? 1 : base > OA_RETRY_MAX_MS ? OA_RETRY_MAX_MS : base;
	long jitter = (seed < 0 ? 0 : seed) % (d + 1);

	for (int i = 1; i < tries && d < OA_RETRY_MAX_MS; i++)
		d *= 2;
	d += jitter;
	return d > OA_RETRY_MAX_MS ? OA_RETRY_MAX_MS : d;
}

/* A finished transfer: success, a retry, or a failure. */
static void
oa_done(struct model_req *r, CURLcode rc)
{
	char msg[400];

	CURLAPI->easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	CURLAPI->multi_remove_handle(r->oa->cev.multi, r->easy);
	CURLAPI->easy_cleanup(r->easy);
	r->easy = NULL;
	ev_timer_stop(r->oa->loop, &r->idle);
	if (r->failed) {
		oa_finish(r);
		return;
	}
	if (rc != CURLE_OK && r->status == 0) {
		oa_fail(r, rc == CURLE_OPERATION_TIMEDOUT ? ERR_MODEL_TIMEOUT : ERR_MODEL_CONNECTION,
		    "cannot reach the model server at %s: %s", r->oa->url, CURLAPI->easy_strerror(rc));
	} else if (r->status == 401 || r->status == 403) {
		oa_fail(r, ERR_MODEL_AUTH, "the model server rejected the API key (HTTP %ld); check "
		    "ACP_AGENT_API_KEY", r->status);
	} else if (r->status == 429 || r->status >= 500) {
		if (r->tries < r->oa->cfg.max_tries) {
			long delay = r->retry_after_ms;
			if (delay <= 0) {
				struct timespec ts;
				clock_gettime(CLOCK_MONOTONIC, &ts);
				delay = oa_backoff_ms(r->oa->cfg.backoff_ms, r->tries, ts.tv_nsec);
			}
			log_info("openai: HTTP %ld; retry %d of %d in %ld ms", r->status, r->tries,
			    r->oa->cfg.max_tries - 1, delay);
			ev_timer_set(&r->retry, (double)delay / 1000.0, 0.);
			ev_timer_start(r->oa->loop, &r->retry);
			return;
		}
		oa_fail(r, ERR_MODEL_HTTP, "the model server answered HTTP %ld after %d tries: %s", r->status,
		    r->tries, oa_error_message(r, msg, sizeof(msg)));
	} else if (r->status == 400 && model_context_overflow(oa_error_message(r, msg, sizeof(msg)))) {
		/* The agent compacts once and retries (docs/contract.md §19). */
		oa_fail(r, ERR_MODEL_CONTEXT_LENGTH, "the model server answered HTTP 400: %s", msg);
	} else if (r->status != 200) {
		oa_fail(r, ERR_MODEL_HTTP, "the model server answered HTTP %ld: %s", r->status,
		    oa_error_message(r, msg, sizeof(msg)));
	} else if (rc != CURLE_OK) {
		oa_fail(r, ERR_MODEL_CONNECTION, "the model stream broke: %s", CURLAPI->easy_strerror(rc));
	} else {
		/* A last event without its blank line still counts; a parse failure is recorded. */
		sse_finish(&r->sse);
		oa_flush(r);
		if (!r->done_seen && r->finish[0] == '\0')
			oa_fail(r, ERR_MODEL_STREAM, "the model stream ended before [DONE]");
	}
	oa_finish(r);
}

static void
oa_check_info(void *arg)
{
	struct oa *oa = arg;
	CURLMsg *msg;
	int left;

	while ((msg = CURLAPI->multi_info_read(oa->cev.multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		struct model_req *r;
		CURLcode rc = msg->data.result;
		CURLAPI->easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		oa_done(r, rc);
	}
}

/* ---- requests ---- */

/* The next bytes of a body with images (model/body.h); a blob that fails aborts the request. */
static size_t
oa_read_cb(char *dst, size_t size, size_t nitems, void *arg)
{
	struct model_req *r = arg;
	long n = body_read(&r->stream, dst, size * nitems);

	if (n < 0) {
		oa_fail(r, ERR_MODEL_REQUEST, "%s", r->stream.error);
		return CURL_READFUNC_ABORT;
	}
	if (n > 0)
		ev_timer_again(r->oa->loop, &r->idle);	/* a slow upload is not a silent server */
	return (size_t)n;
}

static int
oa_seek_cb(void *arg, curl_off_t offset, int origin)
{
	struct model_req *r = arg;

	if (offset == 0 && origin == SEEK_SET && body_rewind(&r->stream) == 0)
		return CURL_SEEKFUNC_OK;
	return CURL_SEEKFUNC_CANTSEEK;
}

static void
oa_submit(struct model_req *r)
{
	struct oa *oa = r->oa;
	CURL *e;

	if (r->streamed && body_rewind(&r->stream) < 0) {
		oa_fail(r, ERR_MODEL_REQUEST, "an image blob cannot be read again: %s", strerror(errno));
		oa_finish(r);
		return;
	}
	e = CURLAPI->easy_init();
	r->tries++;
	r->status = 0;
	r->retry_after_ms = 0;
	buf_consume(&r->errbody, r->errbody.len);
	r->easy = e;
	CURLAPI->easy_setopt(e, CURLOPT_URL, oa->url);
	if (r->streamed) {
		CURLAPI->easy_setopt(e, CURLOPT_POST, 1L);
		CURLAPI->easy_setopt(e, CURLOPT_READFUNCTION, oa_read_cb);
		CURLAPI->easy_setopt(e, CURLOPT_READDATA, r);
		CURLAPI->easy_setopt(e, CURLOPT_SEEKFUNCTION, oa_seek_cb);
		CURLAPI->easy_setopt(e, CURLOPT_SEEKDATA, r);
		CURLAPI->easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->stream.total);
	} else {
		CURLAPI->easy_setopt(e, CURLOPT_POSTFIELDS, r->body);
	}
	CURLAPI->easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
	CURLAPI->easy_setopt(e, CURLOPT_WRITEFUNCTION, oa_write_cb);
	CURLAPI->easy_setopt(e, CURLOPT_WRITEDATA, r);
	CURLAPI->easy_setopt(e, CURLOPT_HEADERFUNCTION, oa_header_cb);
	CURLAPI->easy_setopt(e, CURLOPT_HEADERDATA, r);
	CURLAPI->easy_setopt(e, CURLOPT_PRIVATE, (char *)r);
	CURLAPI->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	CURLAPI->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, oa->cfg.connect_timeout_ms);
	/* A cancelled transfer must close its connection, so the server sees it go. */
	CURLAPI->easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
	CURLAPI->easy_setopt(e, CURLOPT_USERAGENT, "acp-agent");
	ev_timer_set(&r->idle, 0., (double)oa->cfg.idle_timeout_ms / 1000.0);
	ev_timer_again(oa->loop, &r->idle);
	CURLAPI->multi_add_handle(oa->cev.multi, e);
}

/*
 * The chat messages of a call (system first); returns new ref, or NULL when one cannot be built
 * (a system prompt that is not UTF-8): the request then fails, it is never sent without it.
 */
static json_t *
oa_messages(const struct model_call *call)
{
	json_t *out = json_array();
	json_t *sys = json_pack("{s:s, s:s}", "role", "system", "content", call->system ? call->system : "");
	size_t i;
	json_t *m;

	if (json_array_append_new(out, sys) < 0) {
		json_decref(out);
		return NULL;
	}
	json_array_foreach(call->messages, i, m) {
		json_t *copy = json_deep_copy(m);
		/* Reasoning stays on our side: providers reject it as input. */
		json_object_del(copy, "reasoning_content");
		json_array_append_new(out, copy);
	}
	return out;
}

/* The tools as functions (description and parameters optional); new ref, or NULL for a nameless one. */
static json_t *
oa_tools(const json_t *tools)
{
	json_t *out = json_array();
	size_t i;
	json_t *t;

	json_array_foreach(tools, i, t) {
		json_t *fn = json_pack("{s:s, s:{s:O, s:O*, s:O*}}", "type", "function", "function", "name",
		    json_object_get(t, "name"), "description", json_object_get(t, "description"), "parameters",
		    json_object_get(t, "parameters"));
		if (json_array_append_new(out, fn) < 0) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

/*
 * libcurl and the multi handle, made the first time a request needs them: a start-up with
 * --model openai loads no HTTP library before it answers initialize (docs/performance.md, "Start-up": libcurl brings 5
 * shared libraries and 1.2 ms). 0, or -1 with e (libcurl is not installed).
 */
static int
oa_ready(struct oa *oa, struct err *e)
{
	if (oa->ready)
		return 0;
	if (curl_dl_load(e) == NULL)
		return -1;
	if (curl_ev_init(&oa->cev, oa->loop, oa_check_info, oa) < 0)
		return err_set(e, ERR_MODEL_CONNECTION, "libcurl cannot make a multi handle");
	oa->ready = 1;
	return 0;
}

static struct model_req *
oa_start(struct model *m, const struct model_call *call, const struct model_sink *sink)
{
	struct oa *oa = m->impl;
	struct model_req *r = xcalloc(1, sizeof(*r));
	struct err e;
	/* oa->model is checked UTF-8 at creation, a session's model is a JSON string: the body fails
	 * only with its messages or tools. */
	const char *model = call->model ? call->model : oa->model;
	json_t *body = json_pack("{s:s, s:b, s:o, s:{s:b}}", "model", model, "stream", 1, "messages",
	    oa_messages(call), "stream_options", "include_usage", 1);
	char nonce[17];
	size_t nimages = 0;

	if (body && json_array_size(call->tools) &&
	    json_object_set_new(body, "tools", oa_tools(call->tools)) < 0) {
		json_decref(body);
		body = NULL;
	}
	if (body) {
		body_nonce(nonce);
		nimages = body_mark_images(json_object_get(body, "messages"), nonce);
	}
	r->oa = oa;
	r->sink = *sink;
	r->body = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);

	buf_init(&r->errbody);
	buf_init(&r->pend);
	buf_init(&r->fast_text);
	buf_init(&r->fast_reasoning);
	sse_delta_init(&r->fast);
	sse_init(&r->sse, SSE_LINE_MAX, oa_on_event, r);
	ev_timer_init(&r->retry, oa_retry_cb, 0., 0.);
	r->retry.data = r;
	ev_init(&r->idle, oa_idle_cb);
	r->idle.data = r;
	err_clear(&e);
	if (r->body && nimages > 0) {
		/* The images stream from the blob store into the marked places (model/body.h). */
		char *text = r->body;
		r->body = NULL;
		r->streamed = 1;
		if (body_make(&r->stream, text, strlen(text), call->messages, nonce, call->state_dir, &e) < 0) {
			oa_fail(r, ERR_MODEL_REQUEST, "%s", e.msg);
			oa_finish(r);
			return r;
		}
	}
	if (r->body == NULL && !r->streamed) {
		/* Failed through the run queue, like any outcome: start never calls back re-entrantly. */
		oa_fail(r, ERR_MODEL_REQUEST, "the request to the model could not be built (a system prompt that is "
		    "not UTF-8, or a tool without a name)");
		oa_finish(r);
		return r;
	}
	err_clear(&e);
	if (oa_ready(oa, &e) < 0) {
		oa_fail(r, ERR_MODEL_CONNECTION, "%s", e.msg);	/* libcurl is not installed */
		oa_finish(r);
		return r;
	}
	r->headers = CURLAPI->slist_append(NULL, oa->auth);
	r->headers = CURLAPI->slist_append(r->headers, "Content-Type: application/json");
	r->headers = CURLAPI->slist_append(r->headers, "Accept: text/event-stream");
	if (r->streamed)	/* no wait for a "100 Continue" before a large body */
		r->headers = CURLAPI->slist_append(r->headers, "Expect:");
	oa_submit(r);
	return r;
}

static void
oa_cancel(struct model *m, struct model_req *r)
{
	(void)m;
	if (r->delivering) {
		r->cancelled = 1;	/* the queued delivery frees it */
		return;
	}
	oa_req_free(r);		/* removes the transfer at once: the connection closes */
}

static void
oa_report(struct model *m)
{
	(void)m;
}

static void
oa_free(struct model *m)
{
	struct oa *oa = m->impl;

	if (oa->ready)
		curl_ev_free(&oa->cev);
	free(oa->url);
	free(oa->auth);
	free(oa->model);
	free(oa);
	free(m);
}

static const struct model_ops oa_ops = { "openai", oa_start, oa_cancel, oa_report, oa_free };

struct model *
model_openai_new(struct runq *q, struct ev_loop *loop, const struct openai_config *cfg, struct err *e)
{
	struct model *m;
	struct oa *oa;
	size_t blen;

	if (cfg->api_key == NULL || *cfg->api_key == '\0') {
		err_set(e, ERR_USAGE, "--model openai needs ACP_AGENT_API_KEY");
		return NULL;
	}
	if (strncmp(cfg->base_url, "http://", 7) != 0 && strncmp(cfg->base_url, "https://", 8) != 0) {
		err_set(e, ERR_USAGE, "ACP_AGENT_BASE_URL must start with http:// or https://");
		return NULL;
	}
	/* The name goes into every request body as a JSON string. */
	if (cfg->model == NULL || !utf8_valid(cfg->model, strlen(cfg->model))) {
		err_set(e, ERR_USAGE, "ACP_AGENT_MODEL must be valid UTF-8");
		return NULL;
	}
	m = xcalloc(1, sizeof(*m));
	oa = xcalloc(1, sizeof(*oa));
	m->ops = &oa_ops;
	m->runq = q;
	m->impl = oa;
	oa->m = m;
	oa->loop = loop;
	oa->cfg = *cfg;
	if (cfg->backoff_ms > OA_RETRY_MAX_MS)
		log_warn("openai: ACP_AGENT_RETRY_BASE_MS is %ld; a retry waits at most %ld ms", cfg->backoff_ms,
		    OA_RETRY_MAX_MS);
	blen = strlen(cfg->base_url);
	while (blen && cfg->base_url[blen - 1] == '/')
		blen--;
	oa->url = xasprintf("%.*s/chat/completions", (int)blen, cfg->base_url);
	oa->auth = xasprintf("Authorization: Bearer %s", cfg->api_key);
	oa->model = xstrdup(cfg->model);
	m->id = oa->model;
	return m;
}
