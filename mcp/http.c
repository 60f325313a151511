/*
 * Streamable HTTP (mcp/http.h). Every curl callback only records: messages go to an inbox that is
 * delivered after curl returns (libcurl refuses calls from inside its callbacks, and an owner may
 * send, close or free from a message). One transfer per POST, the GET stream, a resume or the
 * DELETE; a transfer waiting to start (a restart, a resume) holds an ev_timer.
 */
#include "mcp/http.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/curl_dl.h"
#include "base/curl_ev.h"
#include "base/log.h"
#include "base/sse.h"
#include "base/utf8.h"
#include "base/version.h"
#include "base/xmalloc.h"

#define CURLAPI curl_dl()
#define MCP_HTTP_ERRBODY_MAX 65536
#define MCP_HTTP_BACKOFF_MIN_MS 500L
#define MCP_HTTP_BACKOFF_MAX_MS 30000L
#define MCP_HTTP_RESTART_MIN_MS 100L	/* the shortest wait before a restart or a resume, whatever retry: says */
#define MCP_HTTP_SESSION_MAX 1024
#define MCP_HTTP_REDIRECTS_MAX 5
#define MCP_HTTP_MIB ((size_t)1024 * 1024)

enum mcp_http_kind { MCP_HTTP_POST, MCP_HTTP_STREAM, MCP_HTTP_RESUME, MCP_HTTP_DELETE };

struct mcp_http;

/*
 * One HTTP exchange. A POST waits on the queue (qnext) until it starts; every other transfer, and a
 * POST once started, is on t->live (prev/next) until it ends, waiting or not.
 */
struct mcp_http_xfer {
	struct mcp_http *t;
	enum mcp_http_kind kind;
	struct mcp_http_xfer *prev, *next, *qnext;
	CURL *easy;		/* NULL until started */
	ev_timer wait;		/* a delayed start */
	struct curl_slist *hdrs;
	char *body;		/* POST: the message */
	char *what;		/* for logs: the method, "response", "GET stream", ... */
	json_t *id;		/* a request's id (POST, RESUME); NULL otherwise */
	json_t *cancels;	/* notifications/cancelled: the requestId it cancels */
	int barrier;		/* the messages after it wait for its reply */
	int counted;		/* a POST in flight: one of t->nposts */
	int is_init, is_initialized;
	long status;		/* of the last status line */
	int sse_type;		/* that response is text/event-stream (else its body is JSON, or no body) */
	int redirects;		/* same-origin redirects followed */
	char *session;		/* its MCP-Session-Id */
	int session_bad;
	struct buf raw;		/* a JSON body, or the start of an error body */
	struct sse sse;
	int too_large;
	int events;		/* SSE events that carried data */
	int tries;		/* RESUME: attempts without an event */
	long retry_ms;		/* RESUME: the retry: of the streams before it, -1 for none */
	char *last_id;		/* RESUME, MCP_HTTP_STREAM: Last-Event-ID to send */
};

struct mcp_http {
	struct mcp_transport base;	/* first: the ops cast back */
	struct ev_loop *loop;
	char *name, *url;
	char **hdr;		/* "Name: value" (or "Name;" for an empty value): never logged */
	size_t nhdr;
	struct curl_ev cev;	/* the multi handle on the loop */
	ev_timer kick;		/* delivery outside curl and outside close */
	struct mcp_http_xfer *live;
	struct mcp_http_xfer *qhead, *qtail;	/* POSTs waiting for the barrier or a free slot */
	struct mcp_http_xfer *barrier;
	int nposts;
	struct mcp_http_xfer *stream;	/* the GET stream (live or waiting), NULL while none */
	int stream_none;	/* 405: never again */
	int stream_opened;	/* notifications/initialized was accepted */
	int stream_worked;	/* a GET stream was answered with events once */
	long stream_backoff_ms;
	long stream_retry_ms;	/* the GET stream's last retry:, -1 for none */
	char *stream_last_id;
	json_t *inbox;		/* messages to deliver, in arrival order */
	json_t *outstanding;	/* ids of requests sent and not answered */
	char *session, *version;
	int closing;		/* close was called: only gone is left to report */
	int dead;		/* gone is decided: nothing is sent any more */
	int expired;		/* ... because the server ended the session (HTTP 404) */
	char *gone_reason;
	int gone_reported;
	int delivering, doomed;	/* free inside a callback waits for it to return */
};

static void mcp_http_after(struct mcp_http *t);
static void mcp_http_start(struct mcp_http *t, struct mcp_http_xfer *x);
static void mcp_http_done(struct mcp_http *t, struct mcp_http_xfer *x, CURLcode rc);

/* ---- small helpers ---- */

static int
mcp_http_visible(const char *s, size_t n, int space_ok)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < (space_ok ? 0x20 : 0x21) || (unsigned char)s[i] > 0x7e)
			return 0;
	return 1;
}

static int
mcp_http_is_response(const json_t *m)
{
	return json_object_get(m, "method") == NULL && json_object_get(m, "id") &&
	    (json_object_get(m, "result") || json_object_get(m, "error"));
}

/* Takes id off the outstanding list; 1 when it was there. */
static int
mcp_http_answered(struct mcp_http *t, const json_t *id)
{
	size_t i;
	json_t *v;

	json_array_foreach(t->outstanding, i, v) {
		if (json_equal(v, id)) {
			json_array_remove(t->outstanding, i);
			return 1;
		}
	}
	return 0;
}

static int
mcp_http_is_outstanding(const struct mcp_http *t, const json_t *id)
{
	size_t i;
	json_t *v;

	json_array_foreach(t->outstanding, i, v)
		if (json_equal(v, id))
			return 1;
	return 0;
}

/* Decides gone; the transfers are aborted and reason reported (after the inbox) from mcp_http_after. */
static void
mcp_http_gone(struct mcp_http *t, const char *reason)
{
	if (t->dead)
		return;
	t->dead = 1;
	t->gone_reason = xstrdup(reason);
	log_debug("[mcp:%s] http: gone: %s", t->name, reason);
}

/* The server ended the session (HTTP 404 for its MCP-Session-Id): gone, and a new one wanted. */
static void
mcp_http_expired(struct mcp_http *t)
{
	if (!t->dead)
		t->expired = 1;
	mcp_http_gone(t, "session expired");
}

static void
mcp_http_kick(struct mcp_http *t)
{
	if (!ev_is_active(&t->kick)) {
		ev_timer_set(&t->kick, 0., 0.);
		ev_timer_start(t->loop, &t->kick);
	}
}

/* ---- what arrives ---- */

/* One message from the server (borrowed); x: the transfer it came on. */
static void
mcp_http_take(struct mcp_http *t, struct mcp_http_xfer *x, json_t *m)
{
	if (!json_is_object(m)) {
		log_debug("[mcp:%s] http: %s: a message that is not an object, skipped", t->name, x->what);
		return;
	}
	if (mcp_http_is_response(m)) {
		const json_t *id = json_object_get(m, "id");
		if (x->is_init && x->id && json_equal(id, x->id)) {
			/* The session starts with this reply: its id goes on every request after it. */
			if (x->session_bad) {
				mcp_http_gone(t, "the server sent an invalid MCP-Session-Id");
				return;
			}
			if (x->session) {
				free(t->session);
				t->session = xstrdup(x->session);
			}
		}
		if (x->barrier && x->id && json_equal(id, x->id) && t->barrier == x)
			t->barrier = NULL;
		mcp_http_answered(t, id);
	}
	json_array_append(t->inbox, m);
}

/* A JSON text: an object, or a batch (an array) of them. -1 when it is not JSON. */
static int
mcp_http_take_text(struct mcp_http *t, struct mcp_http_xfer *x, const char *data, size_t len)
{
	json_error_t jerr;
	json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	size_t i;
	json_t *v;

	if (j == NULL && !utf8_valid(data, len)) {
		/* A server's stray invalid byte costs a U+FFFD, not the message (as model streams do). */
		size_t n;
		char *fixed = utf8_repair(data, len, &n);
		j = json_loadb(fixed, n, JSON_REJECT_DUPLICATES, &jerr);
		free(fixed);
	}
	if (j == NULL) {
		log_debug("[mcp:%s] http: %s: not JSON (%s), skipped", t->name, x->what, jerr.text);
		return -1;
	}
	if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			mcp_http_take(t, x, v);
	} else {
		mcp_http_take(t, x, j);
	}
	json_decref(j);
	return 0;
}

static int
mcp_http_on_event(void *arg, const char *data, size_t len)
{
	struct mcp_http_xfer *x = arg;

	if (len == 0)
		return 0;	/* a priming event: an id and no message */
	x->events++;
	mcp_http_take_text(x->t, x, data, len);
	return 0;
}

/* ---- curl callbacks: they only record ---- */

static size_t
mcp_http_header_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct mcp_http_xfer *x = arg;
	size_t len = size * nmemb, n = len;
	const char *colon, *v;

	while (n && (data[n - 1] == '\n' || data[n - 1] == '\r'))
		n--;
	if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) {
		/* A new response (an interim one, a redirect, the final one): its headers start afresh. */
		const char *sp = memchr(data, ' ', n);
		x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
		x->sse_type = 0;
		free(x->session);
		x->session = NULL;
		x->session_bad = 0;
		return len;
	}
	colon = memchr(data, ':', n);
	if (colon == NULL)
		return len;
	v = colon + 1;
	while (v < data + n && (*v == ' ' || *v == '\t'))
		v++;
	size_t vlen = (size_t)(data + n - v), nlen = (size_t)(colon - data);
	while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;
	if (nlen == 12 && strncasecmp(data, "content-type", 12) == 0) {
		x->sse_type = vlen >= 17 && strncasecmp(v, "text/event-stream", 17) == 0;
	} else if (nlen == 14 && strncasecmp(data, "mcp-session-id", 14) == 0) {
		free(x->session);
		x->session = NULL;
		/* Visible ASCII only (MCP's rule): anything else could not go back as a header. */
		x->session_bad = vlen == 0 || vlen > MCP_HTTP_SESSION_MAX || !mcp_http_visible(v, vlen, 0);
		if (!x->session_bad)
			x->session = xstrndup(v, vlen);
	}
	return len;
}

static size_t
mcp_http_write_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct mcp_http_xfer *x = arg;
	size_t len = size * nmemb;
	int ok = x->status >= 200 && x->status < 300;

	if (ok && x->sse_type && x->kind != MCP_HTTP_DELETE) {
		if (sse_feed(&x->sse, data, len) < 0) {
			x->too_large = x->sse.too_long != NULL;
			return 0;	/* aborts the transfer */
		}
		return len;
	}
	if (!ok || x->kind != MCP_HTTP_POST) {
		/* An error body is kept for its message; the rest of it, and any other body, is dropped. */
		size_t room = x->raw.len < MCP_HTTP_ERRBODY_MAX ? MCP_HTTP_ERRBODY_MAX - x->raw.len : 0;
		buf_append(&x->raw, data, len < room ? len : room);
		return len;
	}
	if (len > MCP_HTTP_BODY_MAX - x->raw.len) {
		x->too_large = 1;
		return 0;
	}
	buf_append(&x->raw, data, len);
	return len;
}

/* ---- failures ---- */

/* The server's JSON-RPC error in an error body, if it sent one; new ref or NULL. */
static json_t *
mcp_http_error_data(const struct mcp_http_xfer *x)
{
	json_t *j = x->raw.len ? json_loadb(x->raw.data, x->raw.len, 0, NULL) : NULL;
	json_t *err = json_incref(json_object_get(j, "error"));

	json_decref(j);
	if (!json_is_object(err)) {
		json_decref(err);
		return NULL;
	}
	return err;
}

/*
 * A POST (or a resume) that gives no response: the initialize request's ends the transport; a
 * request still waiting gets an error response; anything else is only logged.
 */
/* A request after initialize reached nobody: the transport is gone ("connection lost: ..."). */
static void
mcp_http_lost(struct mcp_http *t, struct mcp_http_xfer *x, CURLcode rc)
{
	char reason[200];

	snprintf(reason, sizeof(reason), "connection lost: %s", CURLAPI->easy_strerror(rc));
	log_debug("[mcp:%s] http: %s: %s", t->name, x->what, reason);
	mcp_http_gone(t, reason);
}

static void
mcp_http_fail(struct mcp_http *t, struct mcp_http_xfer *x, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
mcp_http_fail(struct mcp_http *t, struct mcp_http_xfer *x, const char *fmt, ...)
{
	char text[300];
	va_list ap;
	json_t *err;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	log_debug("[mcp:%s] http: %s: %s", t->name, x->what, text);
	json_t *data = mcp_http_error_data(x);
	if (x->is_init) {
		/* The reason the user reads: the server's own words help ("HTTP 401: invalid token"). */
		const char *m = json_string_value(json_object_get(data, "message"));
		char reason[sizeof(text) + 210];
		int mlen = m ? (int)utf8_boundary(m, strlen(m), 200) : 0;
		snprintf(reason, sizeof(reason), "%s%s%.*s", text, m ? ": " : "", mlen, m ? m : "");
		json_decref(data);
		mcp_http_gone(t, reason);
		return;
	}
	if (x->id == NULL || !mcp_http_answered(t, x->id)) {
		json_decref(data);
		return;
	}
	err = json_pack("{s:i, s:s}", "code", -32603, "message", text);
	if (data)
		json_object_set_new(err, "data", data);
	json_array_append_new(t->inbox, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", x->id, "error", err));
}

/* ---- transfers ---- */

static void
mcp_http_link(struct mcp_http *t, struct mcp_http_xfer *x)
{
	x->prev = NULL;
	x->next = t->live;
	if (t->live)
		t->live->prev = x;
	t->live = x;
}

static struct mcp_http_xfer *
mcp_http_xfer_new(struct mcp_http *t, enum mcp_http_kind kind, const char *what)
{
	struct mcp_http_xfer *x = xcalloc(1, sizeof(*x));

	x->t = t;
	x->kind = kind;
	x->what = xstrdup(what);
	buf_init(&x->raw);
	sse_init(&x->sse, SSE_LINE_MAX, mcp_http_on_event, x);
	ev_init(&x->wait, NULL);
	x->retry_ms = -1;
	if (kind != MCP_HTTP_POST)
		mcp_http_link(t, x);
	return x;
}

static void
mcp_http_unlink(struct mcp_http *t, struct mcp_http_xfer *x)
{
	if (t->live == x)
		t->live = x->next;
	else if (x->prev)
		x->prev->next = x->next;
	if (x->next)
		x->next->prev = x->prev;
	x->prev = x->next = NULL;
}

/* Ends x at once (aborting its transfer) and frees it. */
static void
mcp_http_xfer_free(struct mcp_http_xfer *x)
{
	struct mcp_http *t = x->t;

	ev_timer_stop(t->loop, &x->wait);
	if (x->easy) {
		CURLAPI->multi_remove_handle(t->cev.multi, x->easy);
		CURLAPI->easy_cleanup(x->easy);
	}
	mcp_http_unlink(t, x);
	if (x->counted)
		t->nposts--;
	if (t->barrier == x)
		t->barrier = NULL;
	if (t->stream == x)
		t->stream = NULL;
	CURLAPI->slist_free_all(x->hdrs);
	free(x->body);
	free(x->what);
	free(x->session);
	free(x->last_id);
	json_decref(x->id);
	json_decref(x->cancels);
	buf_free(&x->raw);
	sse_free(&x->sse);
	free(x);
}

static void
mcp_http_add_header(struct mcp_http_xfer *x, const char *name, const char *value)
{
	char *line = xasprintf("%s: %s", name, value);

	x->hdrs = CURLAPI->slist_append(x->hdrs, line);
	free(line);
}

static void
mcp_http_start(struct mcp_http *t, struct mcp_http_xfer *x)
{
	CURL *e = CURLAPI->easy_init();

	x->easy = e;
	if (e == NULL) {
		/* As good as a refused connection, and reported from the loop like one. */
		mcp_http_done(t, x, CURLE_FAILED_INIT);
		mcp_http_kick(t);
		return;
	}
	switch (x->kind) {
	case MCP_HTTP_POST:
		x->hdrs = CURLAPI->slist_append(x->hdrs, "Accept: application/json, text/event-stream");
		x->hdrs = CURLAPI->slist_append(x->hdrs, "Content-Type: application/json");
		x->hdrs = CURLAPI->slist_append(x->hdrs, "Expect:");	/* no 100-continue round trip */
		CURLAPI->easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
		CURLAPI->easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(x->body));
		if (x->barrier && !x->is_init)
			CURLAPI->easy_setopt(e, CURLOPT_TIMEOUT_MS, MCP_HTTP_NOTIFY_MS);
		break;
	case MCP_HTTP_STREAM:
	case MCP_HTTP_RESUME:
		x->hdrs = CURLAPI->slist_append(x->hdrs, "Accept: text/event-stream");
		if (x->last_id)
			mcp_http_add_header(x, "Last-Event-ID", x->last_id);
		CURLAPI->easy_setopt(e, CURLOPT_HTTPGET, 1L);
		break;
	case MCP_HTTP_DELETE:
		CURLAPI->easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
		CURLAPI->easy_setopt(e, CURLOPT_TIMEOUT_MS, MCP_HTTP_CLOSE_MS);
		break;
	}
	if (t->session)
		mcp_http_add_header(x, "MCP-Session-Id", t->session);
	if (t->version)
		mcp_http_add_header(x, "MCP-Protocol-Version", t->version);
	for (size_t i = 0; i < t->nhdr; i++)
		x->hdrs = CURLAPI->slist_append(x->hdrs, t->hdr[i]);
	CURLAPI->easy_setopt(e, CURLOPT_URL, t->url);
	CURLAPI->easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
	CURLAPI->easy_setopt(e, CURLOPT_WRITEFUNCTION, mcp_http_write_cb);
	CURLAPI->easy_setopt(e, CURLOPT_WRITEDATA, x);
	CURLAPI->easy_setopt(e, CURLOPT_HEADERFUNCTION, mcp_http_header_cb);
	CURLAPI->easy_setopt(e, CURLOPT_HEADERDATA, x);
	CURLAPI->easy_setopt(e, CURLOPT_PRIVATE, (char *)x);
	CURLAPI->easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	CURLAPI->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, MCP_HTTP_CONNECT_MS);
	CURLAPI->easy_setopt(e, CURLOPT_USERAGENT, "acp-agent/" ACP_AGENT_VERSION);
	CURLAPI->easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	/* Redirects are followed here, same origin only (mcp_http_redirect): the headers stay home. */
	CURLAPI->easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	CURLAPI->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (CURLAPI->multi_add_handle(t->cev.multi, e) != CURLM_OK) {
		CURLAPI->easy_cleanup(e);
		x->easy = NULL;
		mcp_http_done(t, x, CURLE_FAILED_INIT);
		mcp_http_kick(t);
	}
}

static void
mcp_http_wait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mcp_http_xfer *x = w->data;
	struct mcp_http *t = x->t;

	(void)loop;
	(void)revents;
	mcp_http_start(t, x);
	mcp_http_after(t);
}

/* Starts x after ms (at least MCP_HTTP_RESTART_MIN_MS). */
static void
mcp_http_start_later(struct mcp_http *t, struct mcp_http_xfer *x, long ms)
{
	if (ms < MCP_HTTP_RESTART_MIN_MS)
		ms = MCP_HTTP_RESTART_MIN_MS;
	ev_timer_init(&x->wait, mcp_http_wait_cb, (double)ms / 1000.0, 0.);
	x->wait.data = x;
	ev_timer_start(t->loop, &x->wait);
}

/* Starts queued POSTs while no barrier holds them and a slot is free. */
static void
mcp_http_pump(struct mcp_http *t)
{
	while (t->qhead && t->barrier == NULL && !t->dead && !t->closing && t->nposts < MCP_HTTP_MAX_POSTS) {
		struct mcp_http_xfer *x = t->qhead;
		t->qhead = x->qnext;
		if (t->qhead == NULL)
			t->qtail = NULL;
		x->qnext = NULL;
		mcp_http_link(t, x);
		x->counted = 1;
		t->nposts++;
		if (x->barrier)
			t->barrier = x;
		mcp_http_start(t, x);
	}
}

/* Opens the GET stream now (ms < 0) or after ms. */
static void
mcp_http_stream_open(struct mcp_http *t, long ms)
{
	struct mcp_http_xfer *x;

	if (t->stream || t->stream_none || t->dead || t->closing)
		return;
	x = mcp_http_xfer_new(t, MCP_HTTP_STREAM, "GET stream");
	if (t->stream_last_id)
		x->last_id = xstrdup(t->stream_last_id);
	t->stream = x;
	if (ms >= 0)
		mcp_http_start_later(t, x, ms);
	else
		mcp_http_start(t, x);
}

static long
mcp_http_status(const struct mcp_http_xfer *x)
{
	long status = 0;

	if (x->easy)
		CURLAPI->easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	return status ? status : x->status;
}

/* The event id to resume x's stream from, if it has one that can go in a header; borrowed. */
static const char *
mcp_http_resume_id(const struct mcp_http_xfer *x)
{
	const char *id = x->sse.has_id ? x->sse.id.data : x->last_id;

	return id && mcp_http_visible(id, strlen(id), 1) ? id : NULL;
}

/* A resume of x's stream (a POST's or an earlier resume's) for its request, after the retry. */
static void
mcp_http_resume(struct mcp_http *t, struct mcp_http_xfer *x, int tries)
{
	struct mcp_http_xfer *r;
	/* The server's retry: holds for the streams after it too, as in EventSource. */
	long ms = x->sse.retry_ms >= 0 ? x->sse.retry_ms : x->retry_ms;

	if (tries > MCP_HTTP_RESUME_MAX) {
		mcp_http_fail(t, x, "no response after resuming the stream %d times", MCP_HTTP_RESUME_MAX);
		return;
	}
	if (ms < 0) {
		ms = MCP_HTTP_BACKOFF_MIN_MS;
		for (int i = 1; i < tries && ms < MCP_HTTP_BACKOFF_MAX_MS; i++)
			ms *= 2;
	}
	r = mcp_http_xfer_new(t, MCP_HTTP_RESUME, x->what);
	r->id = json_incref(x->id);
	r->last_id = xstrdup(mcp_http_resume_id(x));
	r->tries = tries;
	r->retry_ms = x->sse.retry_ms >= 0 ? x->sse.retry_ms : x->retry_ms;
	log_debug("[mcp:%s] http: %s: the stream ended before the response; resuming in %ld ms", t->name,
	    x->what, ms);
	mcp_http_start_later(t, r, ms);
}

/* The stream of a request ended (rc: curl's outcome): resumed when it can be, else failed. */
static void
mcp_http_stream_ended(struct mcp_http *t, struct mcp_http_xfer *x, CURLcode rc, long status)
{
	if (x->id == NULL || !mcp_http_is_outstanding(t, x->id))
		return;
	/* The initialize reply is not resumed: the session it starts is not known to a GET yet. */
	if (x->sse_type && mcp_http_resume_id(x) && !x->is_init) {
		mcp_http_resume(t, x, x->events ? 1 : x->tries + 1);
		return;
	}
	if (rc != CURLE_OK)
		mcp_http_fail(t, x, "the reply broke: %s", CURLAPI->easy_strerror(rc));
	else
		mcp_http_fail(t, x, "no response in the reply (HTTP %ld)", status);
}

static void
mcp_http_post_done(struct mcp_http *t, struct mcp_http_xfer *x, CURLcode rc)
{
	long status = mcp_http_status(x);

	if (t->barrier == x)
		t->barrier = NULL;
	if (x->too_large) {
		mcp_http_fail(t, x, "the reply is longer than %zu MiB", MCP_HTTP_BODY_MAX / MCP_HTTP_MIB);
		return;
	}
	if (rc != CURLE_OK && status == 0) {
		/* A request that got no answer at all (refused, reset, nothing returned): the server
		 * is not there, for this request and the next; the owner restarts, as for a process
		 * that exited. A notification or a response that got none (a busy server that takes
		 * its time, say) is only logged, as before. */
		if (!x->is_init && x->id && mcp_http_is_outstanding(t, x->id))
			mcp_http_lost(t, x, rc);
		else
			mcp_http_fail(t, x, "connection failed: %s", CURLAPI->easy_strerror(rc));
		return;
	}
	if (status == 404 && t->session && !x->is_init) {
		log_debug("[mcp:%s] http: %s: HTTP 404 for the session", t->name, x->what);
		mcp_http_expired(t);
		return;
	}
	if (status < 200 || status > 299) {
		mcp_http_fail(t, x, "HTTP %ld", status);
		return;
	}
	if (x->sse_type) {
		if (rc == CURLE_OK)
			sse_finish(&x->sse);
	} else if (x->raw.len) {
		int bad = mcp_http_take_text(t, x, x->raw.data, x->raw.len) < 0;
		if (bad && x->id && mcp_http_is_outstanding(t, x->id)) {
			mcp_http_fail(t, x, "the reply is not JSON (HTTP %ld)", status);
			return;
		}
	}
	if (t->dead)
		return;		/* a bad session id */
	mcp_http_stream_ended(t, x, rc, status);
	if (x->is_initialized && !t->stream_opened) {
		t->stream_opened = 1;
		mcp_http_stream_open(t, -1);
	}
}

static void
mcp_http_resume_done(struct mcp_http *t, struct mcp_http_xfer *x, CURLcode rc)
{
	long status = mcp_http_status(x);

	if (x->id == NULL || !mcp_http_is_outstanding(t, x->id))
		return;
	if (status == 404 && t->session) {
		mcp_http_expired(t);
		return;
	}
	if (status != 0 && (status < 200 || status > 299)) {
		mcp_http_fail(t, x, "HTTP %ld", status);
		return;
	}
	if (x->sse_type && rc == CURLE_OK)
		sse_finish(&x->sse);
	if (!mcp_http_is_outstanding(t, x->id))
		return;
	if (x->too_large) {
		mcp_http_fail(t, x, "the reply is longer than %zu MiB", MCP_HTTP_BODY_MAX / MCP_HTTP_MIB);
		return;
	}
	/* Still waiting: resume again (from the newest id) while the tries last. */
	if (mcp_http_resume_id(x) == NULL) {
		mcp_http_fail(t, x, "no response in the resumed stream");
		return;
	}
	mcp_http_resume(t, x, x->events ? 1 : x->tries + 1);
}

static void
mcp_http_stream_done(struct mcp_http *t, struct mcp_http_xfer *x, CURLcode rc)
{
	long status = mcp_http_status(x), ms;
	int opened = status >= 200 && status <= 299 && x->sse_type;

	t->stream = NULL;
	/* A 404 once the stream was open is the session's end; before, a server without the GET
	 * route (many answer 404, not 405) */
	if (status == 404 && t->session && t->stream_worked) {
		log_debug("[mcp:%s] http: GET stream: HTTP 404 for the session", t->name);
		mcp_http_expired(t);
		return;
	}
	if (status == 405 || status == 404) {
		log_debug("[mcp:%s] http: no GET stream (HTTP %ld)", t->name, status);
		t->stream_none = 1;
		return;
	}
	if (x->sse_type && rc == CURLE_OK)
		sse_finish(&x->sse);
	if (x->sse.has_id && mcp_http_visible(x->sse.id.data, x->sse.id.len, 1)) {
		free(t->stream_last_id);
		t->stream_last_id = xstrdup(x->sse.id.data);
	}
	if (x->sse.retry_ms >= 0)
		t->stream_retry_ms = x->sse.retry_ms;
	if (opened) {
		t->stream_worked = 1;
		t->stream_backoff_ms = MCP_HTTP_BACKOFF_MIN_MS;
		ms = t->stream_retry_ms >= 0 ? t->stream_retry_ms : MCP_HTTP_BACKOFF_MIN_MS;
	} else {
		ms = t->stream_backoff_ms;
		if (t->stream_retry_ms > ms)
			ms = t->stream_retry_ms;
		t->stream_backoff_ms = t->stream_backoff_ms * 2 > MCP_HTTP_BACKOFF_MAX_MS ? MCP_HTTP_BACKOFF_MAX_MS :
		    t->stream_backoff_ms * 2;
	}
	if (rc != CURLE_OK && status == 0)
		log_debug("[mcp:%s] http: GET stream: connection failed: %s; again in %ld ms", t->name,
		    CURLAPI->easy_strerror(rc), ms);
	else
		log_debug("[mcp:%s] http: GET stream ended (HTTP %ld); again in %ld ms", t->name, status, ms);
	mcp_http_stream_open(t, ms);
}

/* The scheme, host and port of a URL: its length up to the path. */
static size_t
mcp_http_origin_len(const char *url)
{
	const char *p = strstr(url, "://");

	p = p ? p + 3 : url;
	return (size_t)(p - url) + strcspn(p, "/?#");
}

/*
 * A 3xx to the same origin (a server mounted at /mcp/ answers /mcp so): the endpoint moves there
 * and x goes again, a POST as a POST. Another origin is not followed: the ACP headers would go
 * with it. 1 when x was restarted.
 */
static int
mcp_http_redirect(struct mcp_http *t, struct mcp_http_xfer *x, CURLcode rc)
{
	long status = mcp_http_status(x);
	char *loc = NULL;
	size_t n = mcp_http_origin_len(t->url);

	if (rc != CURLE_OK || status < 301 || status > 308 || status == 304 || status == 305 || status == 306 ||
	    x->kind == MCP_HTTP_DELETE || x->redirects >= MCP_HTTP_REDIRECTS_MAX)
		return 0;
	CURLAPI->easy_getinfo(x->easy, CURLINFO_REDIRECT_URL, &loc);
	if (loc == NULL || !mcp_http_visible(loc, strlen(loc), 0) || mcp_http_origin_len(loc) != n ||
	    strncasecmp(loc, t->url, n) != 0) {
		log_debug("[mcp:%s] http: %s: HTTP %ld to another origin, not followed", t->name, x->what, status);
		return 0;
	}
	free(t->url);
	t->url = xstrdup(loc);
	log_debug("[mcp:%s] http: %s: HTTP %ld; the endpoint moves to its new path", t->name, x->what, status);
	CURLAPI->multi_remove_handle(t->cev.multi, x->easy);
	CURLAPI->easy_cleanup(x->easy);
	x->easy = NULL;
	CURLAPI->slist_free_all(x->hdrs);
	x->hdrs = NULL;
	buf_consume(&x->raw, x->raw.len);
	x->redirects++;
	x->status = 0;
	mcp_http_start(t, x);
	return 1;
}

/*
 * Once its cancel has gone (or failed), a request's transfers end: its caller has given up, and
 * a stream the server keeps open would hold a connection for nothing. Nothing is reported for it.
 */
static void
mcp_http_drop(struct mcp_http *t, const json_t *id)
{
	struct mcp_http_xfer *x = t->live;

	mcp_http_answered(t, id);
	while (x) {
		struct mcp_http_xfer *next = x->next;	/* freeing x touches no other transfer */
		if (x->id && x->kind != MCP_HTTP_DELETE && json_equal(x->id, id)) {
			log_debug("[mcp:%s] http: %s: cancelled; its transfer ends", t->name, x->what);
			mcp_http_xfer_free(x);
		}
		x = next;
	}
}

static void
mcp_http_done(struct mcp_http *t, struct mcp_http_xfer *x, CURLcode rc)
{
	if (!t->dead && !t->closing && mcp_http_redirect(t, x, rc))
		return;
	if (!t->dead && !t->closing) {
		switch (x->kind) {
		case MCP_HTTP_POST:
			mcp_http_post_done(t, x, rc);
			break;
		case MCP_HTTP_RESUME:
			mcp_http_resume_done(t, x, rc);
			break;
		case MCP_HTTP_STREAM:
			mcp_http_stream_done(t, x, rc);
			break;
		case MCP_HTTP_DELETE:
			break;
		}
	}
	if (x->kind == MCP_HTTP_DELETE) {
		log_debug("[mcp:%s] http: DELETE: HTTP %ld", t->name, mcp_http_status(x));
		mcp_http_gone(t, "closed");
	}
	if (x->cancels && !t->dead && !t->closing)
		mcp_http_drop(t, x->cancels);
	mcp_http_xfer_free(x);
}

static void
mcp_http_check_info(struct mcp_http *t)
{
	CURLMsg *msg;
	int left;

	while ((msg = CURLAPI->multi_info_read(t->cev.multi, &left)) != NULL) {
		struct mcp_http_xfer *x;
		if (msg->msg != CURLMSG_DONE)
			continue;
		CURLcode rc = msg->data.result;
		CURLAPI->easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		mcp_http_done(t, x, rc);
	}
}

/* Every transfer, live, waiting or queued, ends now. */
static void
mcp_http_abort_all(struct mcp_http *t)
{
	while (t->live) {
		struct mcp_http_xfer *x = t->live;
		t->live = x->next;		/* unlinked here: the list is t's whatever x->t says */
		if (t->live)
			t->live->prev = NULL;
		x->prev = x->next = NULL;
		mcp_http_xfer_free(x);
	}
	while (t->qhead) {
		struct mcp_http_xfer *x = t->qhead;
		t->qhead = x->qnext;
		mcp_http_xfer_free(x);
	}
	t->qtail = NULL;
}

static void mcp_http_destroy(struct mcp_http *t);

/* Hands the inbox over, then gone once it is decided. The owner may send, close or free meanwhile. */
static void
mcp_http_deliver(struct mcp_http *t)
{
	t->delivering = 1;
	while (!t->doomed && !t->closing && json_array_size(t->inbox)) {
		json_t *m = json_incref(json_array_get(t->inbox, 0));
		json_array_remove(t->inbox, 0);
		t->base.cb.message(t->base.cb.arg, m);
		json_decref(m);
	}
	if (t->closing || t->doomed)
		json_array_clear(t->inbox);
	if (!t->doomed && t->gone_reason && !t->gone_reported) {
		t->gone_reported = 1;
		t->base.cb.gone(t->base.cb.arg, t->gone_reason, t->expired);
	}
	t->delivering = 0;
	if (t->doomed)
		mcp_http_destroy(t);
}

/* After curl has run: finished transfers, then what they let start, then the owner's callbacks. */
static void
mcp_http_after_cb(void *arg)
{
	mcp_http_after(arg);
}

static void
mcp_http_after(struct mcp_http *t)
{
	mcp_http_check_info(t);
	if (t->dead)
		mcp_http_abort_all(t);
	else
		mcp_http_pump(t);
	mcp_http_deliver(t);
}

static void
mcp_http_kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	mcp_http_after(w->data);
}

/* ---- ops ---- */

static void
mcp_http_send(struct mcp_transport *tt, const json_t *msg)
{
	struct mcp_http *t = (struct mcp_http *)tt;
	const char *method = json_string_value(json_object_get(msg, "method"));
	const json_t *id = json_object_get(msg, "id");
	char *body;
	struct mcp_http_xfer *x;

	if (t->dead || t->closing) {
		log_debug("[mcp:%s] http: %s dropped: the transport is closed", t->name,
		    method ? method : "a response");
		return;
	}
	body = json_dumps(msg, JSON_COMPACT);
	if (body == NULL) {
		log_warn("[mcp:%s] http: a message that cannot be encoded was dropped", t->name);
		return;
	}
	x = mcp_http_xfer_new(t, MCP_HTTP_POST, method ? method : "response");
	x->body = body;
	if (method && id && !json_is_null(id)) {
		x->id = json_deep_copy(id);
		json_array_append(t->outstanding, x->id);
		x->is_init = strcmp(method, "initialize") == 0;
		x->barrier = x->is_init;
	} else {
		x->barrier = 1;
		x->is_initialized = method && strcmp(method, "notifications/initialized") == 0;
		if (method && strcmp(method, "notifications/cancelled") == 0)
			x->cancels = json_deep_copy(json_object_get(json_object_get(msg, "params"), "requestId"));
	}
	if (t->qtail)
		t->qtail->qnext = x;
	else
		t->qhead = x;
	t->qtail = x;
	mcp_http_pump(t);
}

static void
mcp_http_set_version(struct mcp_transport *tt, const char *version)
{
	struct mcp_http *t = (struct mcp_http *)tt;

	if (version == NULL) {
		free(t->version);
		t->version = NULL;
		return;
	}
	if (!mcp_http_visible(version, strlen(version), 0) || strlen(version) > 64) {
		log_debug("[mcp:%s] http: a protocol version that cannot be a header, not sent", t->name);
		return;
	}
	free(t->version);
	t->version = xstrdup(version);
}

static void
mcp_http_close(struct mcp_transport *tt)
{
	struct mcp_http *t = (struct mcp_http *)tt;
	struct mcp_http_xfer *x;

	if (t->closing || t->dead)
		return;
	t->closing = 1;
	mcp_http_abort_all(t);
	if (t->session == NULL) {
		mcp_http_gone(t, "closed");
		mcp_http_kick(t);
		return;
	}
	x = mcp_http_xfer_new(t, MCP_HTTP_DELETE, "DELETE");
	mcp_http_start(t, x);
}

static void
mcp_http_stderr_tail(const struct mcp_transport *tt, struct buf *out)
{
	(void)tt;
	buf_append(out, "", 0);		/* no stderr over HTTP */
}

static void
mcp_http_destroy(struct mcp_http *t)
{
	mcp_http_abort_all(t);
	curl_ev_free(&t->cev);
	ev_timer_stop(t->loop, &t->kick);
	for (size_t i = 0; i < t->nhdr; i++)
		free(t->hdr[i]);
	free(t->hdr);
	json_decref(t->inbox);
	json_decref(t->outstanding);
	free(t->name);
	free(t->url);
	free(t->session);
	free(t->version);
	free(t->stream_last_id);
	free(t->gone_reason);
	free(t);
}

static void
mcp_http_free(struct mcp_transport *tt)
{
	struct mcp_http *t = (struct mcp_http *)tt;

	if (t->delivering) {
		t->doomed = 1;	/* mcp_http_deliver frees it once the callback returns */
		return;
	}
	mcp_http_destroy(t);
}

static const struct mcp_transport_ops mcp_http_ops = {
	mcp_http_send, mcp_http_set_version, mcp_http_close, mcp_http_stderr_tail, mcp_http_free
};

/* ---- construction ---- */

static int
mcp_http_token(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && strchr("!#$%&'*+-.^_`|~", *s) == NULL)
			return 0;
	return 1;
}

/* Headers the transport sets itself: an ACP header of the same name would contradict it. */
static int
mcp_http_reserved(const char *name)
{
	static const char *const own[] = { "Accept", "Content-Type", "Content-Length", "MCP-Session-Id",
		"MCP-Protocol-Version", "Last-Event-ID", "Expect", "Host", "Transfer-Encoding" };

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (strcasecmp(name, own[i]) == 0)
			return 1;
	return 0;
}

static int
mcp_http_headers(struct mcp_http *t, const json_t *headers, struct err *e)
{
	size_t i;
	json_t *h;

	if (headers == NULL || json_is_null(headers))
		return 0;
	if (!json_is_array(headers))
		return err_set(e, ERR_INVALID_PARAMS, "headers must be an array of {name, value}");
	t->hdr = xcalloc(json_array_size(headers) + 1, sizeof(*t->hdr));
	json_array_foreach(headers, i, h) {
		const char *name = json_string_value(json_object_get(h, "name"));
		const json_t *value = json_object_get(h, "value");
		const char *v = json_string_value(value);
		if (name == NULL || v == NULL)
			return err_set(e, ERR_INVALID_PARAMS, "headers[%zu] must be {name, value} with strings", i);
		if (!mcp_http_token(name))
			return err_set(e, ERR_INVALID_PARAMS, "headers[%zu] has an invalid name", i);
		if (strlen(v) != json_string_length(value) || strpbrk(v, "\r\n"))
			return err_set(e, ERR_INVALID_PARAMS, "the value of header %s has a line break or a NUL", name);
		if (mcp_http_reserved(name)) {
			log_warn("[mcp:%s] http: header %s is the transport's own; ignored", t->name, name);
			continue;
		}
		/* curl drops a header given as "Name:"; "Name;" sends it empty. */
		t->hdr[t->nhdr++] = *v ? xasprintf("%s: %s", name, v) : xasprintf("%s;", name);
	}
	return 0;
}

struct mcp_transport *
mcp_http_new(struct ev_loop *loop, const char *name, const char *url, const json_t *headers,
    const struct mcp_transport_cb *cb, struct err *e)
{
	struct mcp_http *t;

	if (url == NULL || (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0))
		return err_set(e, ERR_INVALID_PARAMS, "the url must start with http:// or https://"), NULL;
	if (!mcp_http_visible(url, strlen(url), 0))
		return err_set(e, ERR_INVALID_PARAMS, "the url has a space or a control character"), NULL;
	if (curl_dl_load(e) == NULL)
		return NULL;
	t = xcalloc(1, sizeof(*t));
	t->base.ops = &mcp_http_ops;
	t->base.cb = *cb;
	t->loop = loop;
	t->name = xstrdup(name ? name : "");
	if (mcp_http_headers(t, headers, e) < 0) {
		for (size_t i = 0; i < t->nhdr; i++)
			free(t->hdr[i]);
		free(t->hdr);
		free(t->name);
		free(t);
		return NULL;
	}
	t->url = xstrdup(url);
	t->inbox = json_array();
	t->outstanding = json_array();
	t->stream_backoff_ms = MCP_HTTP_BACKOFF_MIN_MS;
	t->stream_retry_ms = -1;
	if (curl_ev_init(&t->cev, loop, mcp_http_after_cb, t) < 0) {
		err_set(e, ERR_MCP_START_FAILED, "libcurl cannot make a multi handle");
		mcp_http_destroy(t);
		return NULL;
	}
	ev_timer_init(&t->kick, mcp_http_kick_cb, 0., 0.);
	t->kick.data = t;
	return &t->base;
}
