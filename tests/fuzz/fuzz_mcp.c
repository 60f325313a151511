/*
 * The MCP client (mcp/client.c) against a scripted fake transport (mcp_limits.open): the input is
 * lines, each one thing the server or the world does, with the client's invariants checked as it
 * goes (no crash, no leak, every call ends once, the handshake's order, sound tool lists).
 *
 * A line that parses as a JSON object is a message from the server to the newest live transport:
 *   with "jsonrpc", "id" or "method"   delivered verbatim (server requests, notifications, answers
 *                                      to any id)
 *   with "error"                       {"id": <the client's last request>, "error": <its error>}
 *   with "result"                      {"id": <the last request>, "result": <its result>}
 *   anything else                      {"id": <the last request>, "result": <the object>}
 * so `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}}}` answers initialize, a
 * `{"tools":[...],"nextCursor":"c"}` a tools/list page and `{"content":[...]}` a tools/call. Every
 * such object (and its "result") is also rendered by mcp_result_text. One with "command", "url",
 * "type", "args", "env" or "headers" is an McpServer instead: mcp_config_parse, and when it
 * passes, the config of the next client.
 * Any other line is a word and its argument:
 *   call [TOOL]        mcp_client_call (TOOL, else the first listed tool, else "t")
 *   cancel             mcp_call_cancel of the newest call in flight
 *   exit [HOW]         the newest transport not gone reports gone (default "exited with status 1")
 *   expire             the newest transport not gone reports its session ended (HTTP 404)
 *   closed             every transport the client closed reports gone, the oldest first
 *                      ("killed by SIGTERM")
 *   old JSON           a message (as above) to the newest closed transport (ignored or drained)
 *   stderr TEXT        a line of the newest transport's stderr (the tail: its last 4 KiB)
 *   failopen           the next open fails
 *   stop               mcp_client_stop (its transports then report gone when told, or at the end)
 *   free               mcp_client_free
 *   new                the client ends (free, or its stop finished) and a new one starts
 *   limits S C B T     the next client's startup, call and backoff limits (0: at the next loop
 *                      run; anything else: a day, never within one input) and max_tries T
 *   mode FLAGS         c: a call's end makes a new call, x: a call's end cancels another,
 *                      s: a ready report makes a call, S: the next state report stops the client
 * The first line that is neither an McpServer, limits, mode nor failopen starts the first client.
 * Between lines the loop runs once with EVRUN_NOWAIT: timers of 0 fire there, others never.
 * FUZZ_MCP_TRACE=1 prints what the client sends and reports (to read a crash or a seed).
 *
 * Checked (abort on a breach; ASan and its leak check on top): a transport's first message is
 * initialize, tools/list and tools/call only after notifications/initialized, request ids rise,
 * nothing is sent on a transport after its gone, close comes once; the negotiated version is one
 * we accept; a page with nextCursor is followed by the request for that cursor (up to 20 pages a
 * listing, a deferred re-list too); a list_changed re-lists at once when ready and idle, or once
 * the listing in flight is read; a ready list has at most 128 named, distinct tools whose schemas
 * are objects of type "object" and whose public names are clean; every call ends once (result or
 * one of the four error codes), never after its cancel or after the outage/stop that ended it; a
 * timeout or cancel sent notifications/cancelled for that id; no state report after stop, and
 * stopped runs once; a refused call is MCP_NOT_READY; mcp_result_text gives UTF-8 text or a
 * "malformed tools/call result: " MCP_PROTOCOL_ERROR; a refused McpServer leaves cfg zeroed, an
 * accepted one has a non-empty name and command; at the end every transport is freed and no
 * watcher of the client's is left on the loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#include <jansson.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/utf8.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "mcp/client.h"
#include "mcp/names.h"
#include "mcp/result.h"
#include "mcp/transport.h"

#define FZ_CALLS 8		/* calls in flight at most */
#define FZ_NEVER 86400000L	/* a limit of a day: never reached within one input */
#define FZ_TAIL 4096

#define FZ_CHECK(x) do { if (!(x)) fz_fail(__LINE__, #x); } while (0)

enum { FZ_FN_CALL = 1, FZ_FN_CANCEL = 2, FZ_STATE_CALL = 4 };

struct fz;

/* The fake transport: what the client did to it. */
struct fz_tp {
	struct mcp_transport t;		/* first: the client's pointer is ours */
	struct fz *fz;
	struct fz_tp *next;		/* fz->tps, newest first */
	int closed, gone;
	int sent, inited;		/* messages sent; notifications/initialized seen */
	struct buf tail;		/* its stderr */
};

struct fz_call {
	struct fz *fz;
	struct mcp_call *h;
	long id;
	int live;
};

struct fz {
	struct ev_loop *loop;
	struct mcp_client *c;
	int made, stopping, stopped;
	struct mcp_config cfg;		/* the next client's */
	struct mcp_limits lim;
	struct fz_tp *tps;		/* every transport not yet freed */
	int fail_open;
	long last_id, max_id;		/* the client's last request, its highest id */
	char last_method[32];
	int last_answered;		/* a reply with last_id was delivered */
	int pages;			/* tools/list requests of the listing the last one belongs to */
	char cursor[64];		/* the last tools/list's cursor ("" for none) */
	int relist_due;			/* a list_changed came during a listing: it lists again */
	long cancel_id;			/* the last notifications/cancelled */
	char cancel_reason[32];
	struct fz_call calls[FZ_CALLS];
	unsigned mode;
	int stop_next;
	long seq;
	int in_gone;			/* inside a gone report: the client has no transport to send on */
	int trace;			/* FUZZ_MCP_TRACE set: what happens, on stderr */
};

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void __attribute__((noreturn))
fz_fail(int line, const char *what)
{
	fprintf(stderr, "fuzz_mcp.c:%d: check failed: %s\n", line, what);
	abort();
}

static void
fz_log_sink(void *arg, const char *line, size_t len)
{
	(void)arg;
	(void)line;
	(void)len;
}

/* --- the fake transport --- */

static int
fz_version_ok(const char *v)
{
	static const char *const ok[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcmp(v, ok[i]) == 0)
			return 1;
	return 0;
}

static void
fz_send(struct mcp_transport *t, const json_t *msg)
{
	struct fz_tp *tp = (struct fz_tp *)t;
	struct fz *fz = tp->fz;
	const char *method = json_string_value(json_object_get(msg, "method"));
	const json_t *id = json_object_get(msg, "id");

	if (fz->trace) {
		char *text = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
		fprintf(stderr, "  sent%s: %s\n", tp->closed ? " (closed)" : "", text);
		free(text);
	}
	FZ_CHECK(!tp->gone);
	FZ_CHECK(json_is_object(msg));
	FZ_CHECK(strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") == 0);
	if (method == NULL) {	/* the answer to a request of the server's */
		FZ_CHECK(id != NULL);
		FZ_CHECK((json_object_get(msg, "result") != NULL) != (json_object_get(msg, "error") != NULL));
		return;
	}
	FZ_CHECK(tp->sent++ > 0 || strcmp(method, "initialize") == 0);
	if (id != NULL) {
		FZ_CHECK(json_is_integer(id) && json_integer_value(id) > fz->max_id);
		fz->max_id = fz->last_id = (long)json_integer_value(id);
		fz->last_answered = 0;
		snprintf(fz->last_method, sizeof(fz->last_method), "%s", method);
		if (strcmp(method, "tools/list") == 0) {
			const char *cur = json_string_value(json_object_get(json_object_get(msg, "params"), "cursor"));
			fz->pages = cur ? fz->pages + 1 : 1;
			fz->relist_due = cur ? fz->relist_due : 0;
			snprintf(fz->cursor, sizeof(fz->cursor), "%s", cur ? cur : "");
		}
		if (strcmp(method, "initialize") == 0) {
			FZ_CHECK(tp->sent == 1);
			fz->relist_due = 0;	/* a new transport lists afresh */
		}
		else
			FZ_CHECK(tp->inited && (strcmp(method, "tools/list") == 0 || strcmp(method, "tools/call") == 0));
		return;
	}
	if (strcmp(method, "notifications/initialized") == 0) {
		FZ_CHECK(!tp->inited);
		tp->inited = 1;
	} else {
		const json_t *p = json_object_get(msg, "params");
		FZ_CHECK(strcmp(method, "notifications/cancelled") == 0);
		FZ_CHECK(json_is_integer(json_object_get(p, "requestId")));
		fz->cancel_id = (long)json_integer_value(json_object_get(p, "requestId"));
		snprintf(fz->cancel_reason, sizeof(fz->cancel_reason), "%s",
		    json_string_value(json_object_get(p, "reason")));
	}
}

static void
fz_set_version(struct mcp_transport *t, const char *version)
{
	struct fz_tp *tp = (struct fz_tp *)t;

	FZ_CHECK(!tp->gone && !tp->inited && fz_version_ok(version));
}

static void
fz_close(struct mcp_transport *t)
{
	struct fz_tp *tp = (struct fz_tp *)t;

	FZ_CHECK(!tp->closed && !tp->gone);
	tp->closed = 1;
}

static void
fz_stderr_tail(const struct mcp_transport *t, struct buf *out)
{
	const struct fz_tp *tp = (const struct fz_tp *)t;

	buf_append(out, tp->tail.data ? tp->tail.data : "", tp->tail.len);
}

static void
fz_tp_free(struct mcp_transport *t)
{
	struct fz_tp *tp = (struct fz_tp *)t, **pp = &tp->fz->tps;

	while (*pp != tp)
		pp = &(*pp)->next;
	*pp = tp->next;
	buf_free(&tp->tail);
	free(tp);
}

static const struct mcp_transport_ops fz_ops = {
	fz_send, fz_set_version, fz_close, fz_stderr_tail, fz_tp_free,
};

static struct mcp_transport *
fz_open(void *arg, const struct mcp_config *cfg, const struct mcp_transport_cb *cb, struct err *e)
{
	struct fz *fz = arg;
	struct fz_tp *tp;

	FZ_CHECK(fz->c != NULL && !fz->stopping && strcmp(cfg->name, mcp_client_name(fz->c)) == 0);
	if (fz->fail_open) {
		fz->fail_open = 0;
		err_set(e, ERR_MCP_START_FAILED, "cannot run %s: fuzzed", cfg->http ? cfg->url : cfg->command);
		return NULL;
	}
	tp = xcalloc(1, sizeof(*tp));
	tp->t.ops = &fz_ops;
	tp->t.cb = *cb;
	tp->fz = fz;
	buf_init(&tp->tail);
	tp->next = fz->tps;
	fz->tps = tp;
	return &tp->t;
}

/* The newest (or the oldest) transport not gone, and closed or not as asked (-1: either). */
static struct fz_tp *
fz_tp_pick(struct fz *fz, int closed, int oldest)
{
	struct fz_tp *found = NULL;

	for (struct fz_tp *tp = fz->tps; tp; tp = tp->next)
		if (!tp->gone && (closed < 0 || tp->closed == closed)) {
			found = tp;
			if (!oldest)
				break;
		}
	return found;
}

/* tp reports gone (expired: the session ended); the client may free it inside. */
static void
fz_tp_gone(struct fz_tp *tp, const char *how, int expired)
{
	struct mcp_transport_cb cb = tp->t.cb;
	struct fz *fz = tp->fz;

	tp->gone = 1;
	fz->in_gone++;
	cb.gone(cb.arg, how, expired);
	fz->in_gone--;
}

static void
fz_tp_gone_closed(struct fz *fz)
{
	struct fz_tp *tp;

	while ((tp = fz_tp_pick(fz, 1, 1)) != NULL)
		fz_tp_gone(tp, "killed by SIGTERM", 0);
}

/* --- what the client reports --- */

/* A tools/call result as the model would see it. */
static void
fz_render(const json_t *result)
{
	struct err e;
	int is_error = 7;
	char *text;

	err_clear(&e);
	text = mcp_result_text(result, &is_error, &e);
	if (text == NULL) {
		FZ_CHECK(e.code == ERR_MCP_PROTOCOL_ERROR && is_error == 0);
		FZ_CHECK(strncmp(e.msg, "malformed tools/call result: ", 29) == 0);
		return;
	}
	FZ_CHECK(is_error == 0 || is_error == 1);
	FZ_CHECK(utf8_valid(text, strlen(text)));
	free(text);
}

static int
fz_live_calls(const struct fz *fz)
{
	int n = 0;

	for (int i = 0; i < FZ_CALLS; i++)
		n += fz->calls[i].live;
	return n;
}

static void
fz_forget_calls(struct fz *fz)
{
	for (int i = 0; i < FZ_CALLS; i++)
		fz->calls[i].live = 0;
}

static void fz_call(struct fz *fz, const char *tool);
static void fz_stop(struct fz *fz);

static void
fz_cancel(struct fz *fz)
{
	for (int i = FZ_CALLS - 1; i >= 0; i--) {
		struct fz_call *k = &fz->calls[i];
		if (!k->live)
			continue;
		k->live = 0;
		mcp_call_cancel(k->h, "fuzz");
		FZ_CHECK(fz->in_gone || (fz->cancel_id == k->id && strcmp(fz->cancel_reason, "fuzz") == 0));
		return;
	}
}

static void
fz_call_done(void *arg, const json_t *result, const struct err *e)
{
	struct fz_call *k = arg;
	struct fz *fz = k->fz;

	if (fz->trace)
		fprintf(stderr, "  call %ld ended: %s\n", k->id, result ? "a result" : e ? e->msg : "?");
	FZ_CHECK(k->live);
	k->live = 0;
	FZ_CHECK((result == NULL) != (e == NULL));
	if (result != NULL) {
		FZ_CHECK(json_is_object(result));
		fz_render(result);
	} else {
		FZ_CHECK(e->code == ERR_MCP_PROTOCOL_ERROR || e->code == ERR_MCP_TIMEOUT ||
		    e->code == ERR_MCP_SERVER_EXITED || e->code == ERR_MCP_NOT_READY);
		FZ_CHECK(e->msg[0] != '\0');
		if (e->code == ERR_MCP_TIMEOUT)
			FZ_CHECK(fz->cancel_id == k->id && strcmp(fz->cancel_reason, "timed out") == 0);
	}
	if (fz->mode & FZ_FN_CANCEL)
		fz_cancel(fz);
	if ((fz->mode & FZ_FN_CALL) && !fz->stopping)
		fz_call(fz, NULL);
}

/* A ready list: at most 128 tools, named, unique, each schema a compact object of type "object". */
static void
fz_check_tools(struct mcp_client *c)
{
	size_t n;
	const struct mcp_tool *t = mcp_client_tools(c, &n);
	char pub[MCP_NAME_MAX + 1];

	FZ_CHECK(n <= 128);
	for (size_t i = 0; i < n; i++) {
		json_t *schema = json_loads(t[i].schema, 0, NULL);
		FZ_CHECK(t[i].name[0] != '\0' && t[i].description != NULL);
		FZ_CHECK(strlen(t[i].schema) <= 32 * 1024);
		FZ_CHECK(json_is_object(schema));
		FZ_CHECK(strcmp(json_string_value(json_object_get(schema, "type")), "object") == 0);
		json_decref(schema);
		for (size_t j = 0; j < i; j++)
			FZ_CHECK(strcmp(t[i].name, t[j].name) != 0);
		mcp_public_name(mcp_client_name(c), t[i].name, pub);
		FZ_CHECK(strlen(pub) <= MCP_NAME_MAX && strspn(pub, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == strlen(pub));
	}
}

static void
fz_on_state(void *arg, struct mcp_client *c)
{
	struct fz *fz = arg;
	enum mcp_state st = mcp_client_state(c);

	if (fz->trace) {
		size_t n;
		mcp_client_tools(c, &n);
		fprintf(stderr, "  state %s (%s), %zu tools\n", mcp_state_name(st), mcp_client_reason(c), n);
	}
	FZ_CHECK(c == fz->c && !fz->stopping);	/* no report after stop */
	FZ_CHECK(st <= MCP_STOPPED && mcp_state_name(st) != NULL && mcp_client_reason(c) != NULL);
	FZ_CHECK(!mcp_client_listing(c) || st == MCP_READY);
	FZ_CHECK(mcp_client_starting(c) == (st == MCP_STARTING || st == MCP_EXITED));
	if (st == MCP_READY)
		fz_check_tools(c);
	else
		FZ_CHECK(fz_live_calls(fz) == 0);	/* an outage ends every call first */
	if (st == MCP_READY && (fz->mode & FZ_STATE_CALL))
		fz_call(fz, NULL);
	if (fz->stop_next) {
		fz->stop_next = 0;
		fz_stop(fz);
	}
}

static void
fz_stopped(void *arg)
{
	struct fz *fz = arg;

	FZ_CHECK(fz->stopping && !fz->stopped);
	FZ_CHECK(fz_live_calls(fz) == 0);
	fz->stopped = 1;
	fz->c = NULL;
}

/* --- what the driver does --- */

static void
fz_call(struct fz *fz, const char *tool)
{
	struct fz_call *k = NULL;
	size_t n;
	const struct mcp_tool *t;
	struct err e;
	json_t *args;

	if (fz->c == NULL || fz->stopping)
		return;
	for (int i = 0; i < FZ_CALLS && k == NULL; i++)
		if (!fz->calls[i].live)
			k = &fz->calls[i];
	if (k == NULL)
		return;
	t = mcp_client_tools(fz->c, &n);
	if (tool == NULL || tool[0] == '\0' || !utf8_valid(tool, strlen(tool)))
		tool = n > 0 ? t[0].name : "t";	/* a raw name is a server's JSON string: UTF-8 */
	args = xjson_pack("{s:I}", "n", (json_int_t)++fz->seq);
	err_clear(&e);
	k->fz = fz;
	k->h = mcp_client_call(fz->c, tool, args, fz_call_done, k, &e);
	json_decref(args);
	if (k->h == NULL) {
		FZ_CHECK(e.code == ERR_MCP_NOT_READY && strncmp(e.msg, "MCP server \"", 12) == 0);
		return;
	}
	FZ_CHECK(mcp_client_state(fz->c) == MCP_READY && strcmp(fz->last_method, "tools/call") == 0);
	k->id = fz->last_id;
	k->live = 1;
}

static void
fz_stop(struct fz *fz)
{
	if (fz->c == NULL || fz->stopping)
		return;
	fz->stopping = 1;
	mcp_client_stop(fz->c, fz_stopped, fz);
	FZ_CHECK(fz_live_calls(fz) == 0);	/* every call ended by the stop */
}

static void
fz_make(struct fz *fz)
{
	struct mcp_client_cb cb = { fz_on_state, fz };

	fz->made = 1;
	fz->stopping = fz->stopped = 0;
	fz->max_id = fz->last_id = 0;
	fz->last_method[0] = '\0';
	fz->relist_due = 0;
	fz->c = mcp_client_new(fz->loop, &fz->cfg, "/tmp", &fz->lim, &cb);
	FZ_CHECK(strcmp(mcp_client_name(fz->c), fz->cfg.name) == 0);
	mcp_client_start(fz->c);
}

/* The client ends: freed, or its stop finished (its transports gone, the loop run). */
static void
fz_end(struct fz *fz)
{
	if (fz->c != NULL && !fz->stopping) {
		mcp_client_free(fz->c);
		fz->c = NULL;
		fz_forget_calls(fz);
		FZ_CHECK(fz->tps == NULL);	/* every transport freed with it, dropped ones too */
		return;
	}
	for (int i = 0; i < 8 && fz->c != NULL; i++) {
		fz_tp_gone_closed(fz);
		ev_run(fz->loop, EVRUN_NOWAIT);
	}
	FZ_CHECK(fz->c == NULL);
}

/* An ACP McpServer: parsed, and the next client's config when it passes. */
static int
fz_server(struct fz *fz, const json_t *obj)
{
	static const char *const keys[] = { "command", "url", "type", "args", "env", "headers" };
	struct mcp_config cfg;
	struct err e;
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (json_object_get(obj, keys[i]) != NULL)
			break;
	if (i == sizeof(keys) / sizeof(keys[0]))
		return 0;
	err_clear(&e);
	if (mcp_config_parse(obj, &cfg, &e) != 0) {
		FZ_CHECK(e.code == ERR_INVALID_PARAMS || e.code == ERR_MCP_START_FAILED);
		FZ_CHECK(cfg.name == NULL && cfg.command == NULL && cfg.url == NULL && cfg.args == NULL &&
		    cfg.env == NULL && cfg.headers == NULL);
		return 1;
	}
	FZ_CHECK(cfg.name != NULL && mcp_name_valid_server(cfg.name, &e) == 0);
	FZ_CHECK(cfg.http ? cfg.url != NULL && cfg.headers != NULL : cfg.command != NULL &&
	    cfg.command[0] != '\0' && cfg.args != NULL && cfg.env != NULL);
	mcp_config_free(&fz->cfg);
	fz->cfg = cfg;
	return 1;
}

/* A server message (the encoding above) to tp, or to the newest live transport. */
static void
fz_message(struct fz *fz, const json_t *obj, struct fz_tp *tp)
{
	const json_t *result, *id;
	const char *next, *method;
	json_t *msg;
	int page, answer, changed, listing = 0;

	if (tp == NULL && (tp = fz_tp_pick(fz, 0, 0)) == NULL)
		return;
	if (json_object_get(obj, "jsonrpc") || json_object_get(obj, "id") || json_object_get(obj, "method"))
		msg = json_incref((json_t *)obj);
	else if (json_object_get(obj, "error"))
		msg = xjson_pack("{s:s, s:I, s:O}", "jsonrpc", "2.0", "id", (json_int_t)fz->last_id, "error",
		    json_object_get(obj, "error"));
	else
		msg = xjson_pack("{s:s, s:I, s:O}", "jsonrpc", "2.0", "id", (json_int_t)fz->last_id, "result",
		    json_object_get(obj, "result") ? json_object_get(obj, "result") : obj);
	id = json_object_get(msg, "id");
	result = json_object_get(msg, "result");
	next = json_string_value(json_object_get(result, "nextCursor"));
	/* A page of the live listing with a nextCursor: the next page is asked for (at most 20). */
	page = json_is_integer(id) && json_integer_value(id) == fz->last_id && !fz->last_answered &&
	    json_object_get(msg, "method") == NULL && json_object_get(msg, "error") == NULL &&
	    strcmp(fz->last_method, "tools/list") == 0 && json_is_array(json_object_get(result, "tools")) &&
	    next != NULL && strlen(next) < sizeof(fz->cursor) && !tp->closed && !fz->stopping;
	if (page && fz->pages >= 20)
		page = 0;
	answer = json_is_integer(id) && json_integer_value(id) == fz->last_id && !fz->last_answered &&
	    json_object_get(msg, "method") == NULL;
	/* A listing that fails ends what it was for; a list_changed while one is read waits for it. */
	if (answer && strcmp(fz->last_method, "tools/list") == 0 && (json_object_get(msg, "error") ||
	    !json_is_array(json_object_get(result, "tools"))))
		fz->relist_due = 0;
	method = json_string_value(json_object_get(msg, "method"));
	changed = id == NULL && method != NULL && strcmp(method, "notifications/tools/list_changed") == 0 &&
	    !tp->closed && !fz->stopping && fz->c;
	if (changed)
		listing = mcp_client_listing(fz->c) || (strcmp(fz->last_method, "tools/list") == 0 &&
		    !fz->last_answered);
	if (answer)
		fz->last_answered = 1;
	tp->t.cb.message(tp->t.cb.arg, msg);
	if (page)
		FZ_CHECK(strcmp(fz->last_method, "tools/list") == 0 && !fz->last_answered &&
		    strcmp(fz->cursor, next) == 0);
	if (changed && listing)
		fz->relist_due = 1;
	else if (changed && mcp_client_state(fz->c) == MCP_READY)	/* at once */
		FZ_CHECK(strcmp(fz->last_method, "tools/list") == 0 && !fz->last_answered && fz->cursor[0] == '\0');
	if (fz->relist_due && fz->c && !fz->stopping && mcp_client_state(fz->c) == MCP_READY)
		FZ_CHECK(mcp_client_listing(fz->c));	/* the listing read, the next one is under way */
	json_decref(msg);
}

static json_t *
fz_json(const char *s, size_t n)
{
	json_t *v = json_loadb(s, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);

	if (v != NULL && !json_is_object(v)) {
		json_decref(v);
		v = NULL;
	}
	return v;
}

static void
fz_limits(struct fz *fz, const char *arg)
{
	long v[4] = { 1, 1, 0, 2 };

	if (sscanf(arg, "%ld %ld %ld %ld", &v[0], &v[1], &v[2], &v[3]) < 1)
		return;
	fz->lim.startup_ms = v[0] ? FZ_NEVER : 0;
	fz->lim.call_ms = v[1] ? FZ_NEVER : 0;
	fz->lim.backoff_first = fz->lim.backoff_max = v[2] ? (double)FZ_NEVER / 1000. : 0.;
	fz->lim.max_tries = v[3] < 0 ? 0 : v[3] > 12 ? 12 : (int)v[3];
}

static void
fz_mode(struct fz *fz, const char *arg)
{
	fz->mode = 0;
	fz->mode |= strchr(arg, 'c') ? FZ_FN_CALL : 0;
	fz->mode |= strchr(arg, 'x') ? FZ_FN_CANCEL : 0;
	fz->mode |= strchr(arg, 's') ? FZ_STATE_CALL : 0;
	fz->stop_next = strchr(arg, 'S') != NULL;
}

static void
fz_stderr(struct fz *fz, const char *text)
{
	struct fz_tp *tp = fz_tp_pick(fz, -1, 0);

	if (tp == NULL)
		return;
	buf_puts(&tp->tail, text);
	buf_puts(&tp->tail, "\n");
	if (tp->tail.len > FZ_TAIL)
		buf_consume(&tp->tail, tp->tail.len - FZ_TAIL);
}

/* One line of the input (NUL-terminated at n; it may hold NULs of its own). */
static void
fz_line(struct fz *fz, char *s, size_t n)
{
	json_t *obj = fz_json(s, n);
	char *arg = strchr(s, ' ');
	const char *word = s;

	if (fz->trace)
		fprintf(stderr, "> %s\n", s);

	if (obj != NULL) {
		fz_render(obj);
		if (json_object_get(obj, "result"))
			fz_render(json_object_get(obj, "result"));
		if (!fz_server(fz, obj)) {
			if (!fz->made)
				fz_make(fz);
			fz_message(fz, obj, NULL);
		}
		json_decref(obj);
		return;
	}
	if (arg != NULL)
		*arg++ = '\0';
	else
		arg = s + strlen(s);
	if (strcmp(word, "limits") == 0) {
		fz_limits(fz, arg);
		return;
	}
	if (strcmp(word, "mode") == 0) {
		fz_mode(fz, arg);
		return;
	}
	if (strcmp(word, "failopen") == 0) {
		fz->fail_open = 1;
		return;
	}
	if (!fz->made)
		fz_make(fz);
	if (strcmp(word, "call") == 0) {
		fz_call(fz, arg);
	} else if (strcmp(word, "cancel") == 0) {
		fz_cancel(fz);
	} else if (strcmp(word, "exit") == 0) {
		struct fz_tp *tp = fz_tp_pick(fz, -1, 0);
		if (tp)
			fz_tp_gone(tp, arg[0] ? arg : "exited with status 1", 0);
	} else if (strcmp(word, "expire") == 0) {
		struct fz_tp *tp = fz_tp_pick(fz, -1, 0);
		if (tp)
			fz_tp_gone(tp, "session expired", 1);
	} else if (strcmp(word, "closed") == 0) {
		fz_tp_gone_closed(fz);
	} else if (strcmp(word, "old") == 0) {
		struct fz_tp *tp = fz_tp_pick(fz, 1, 0);
		json_t *m = fz_json(arg, n - (size_t)(arg - s));
		if (tp && m)
			fz_message(fz, m, tp);
		json_decref(m);
	} else if (strcmp(word, "stderr") == 0) {
		fz_stderr(fz, arg);
	} else if (strcmp(word, "stop") == 0) {
		fz_stop(fz);
	} else if (strcmp(word, "free") == 0) {
		if (fz->c != NULL && !fz->stopping)
			fz_end(fz);
	} else if (strcmp(word, "new") == 0) {
		fz_end(fz);
		fz_make(fz);
	}
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static struct ev_loop *loop;
	struct fz fz;
	struct err e;
	json_t *dflt;
	char *text = xmalloc(size + 1), *p, *end;

	if (loop == NULL) {
		loop = ev_loop_new(EVFLAG_AUTO);
		log_set_level(LOG_DEBUG);	/* every log line is formatted, none is written */
		log_set_sink(fz_log_sink, NULL);
	}
	memset(&fz, 0, sizeof(fz));
	fz.loop = loop;
	fz.trace = getenv("FUZZ_MCP_TRACE") != NULL;
	mcp_limits_default(&fz.lim);
	fz.lim.startup_ms = fz.lim.call_ms = FZ_NEVER;
	fz.lim.backoff_first = fz.lim.backoff_max = 0.;
	fz.lim.max_tries = 2;
	fz.lim.open = fz_open;
	fz.lim.open_arg = &fz;
	dflt = xjson_pack("{s:s, s:s}", "name", "fz", "command", "fake");
	err_clear(&e);
	FZ_CHECK(mcp_config_parse(dflt, &fz.cfg, &e) == 0);
	json_decref(dflt);

	memcpy(text, data, size);
	text[size] = '\0';
	for (p = text; p < text + size; p = end + 1) {
		end = memchr(p, '\n', (size_t)(text + size - p));
		if (end == NULL)
			end = text + size;
		*end = '\0';
		fz_line(&fz, p, (size_t)(end - p));
		ev_run(loop, EVRUN_NOWAIT);
	}

	fz.mode = 0;	/* a call's end must not start another now */
	fz.stop_next = 0;
	fz_end(&fz);
	FZ_CHECK(fz.tps == NULL);
	FZ_CHECK(!ev_run(loop, EVRUN_NOWAIT));	/* no watcher of the client's left */
	mcp_config_free(&fz.cfg);
	free(text);
	return 0;
}
