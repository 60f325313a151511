/* One MCP server: the lifecycle, the handshake, the tool list, calls, restarts. */
#include "mcp/client.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/version.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "mcp/http.h"
#include "mcp/stdio.h"
#include "mcp/transport.h"

#define MCP_PROTOCOL "2025-11-25"
#define MCP_MAX_PAGES 20
#define MCP_MAX_TOOLS 128
#define MCP_MAX_SCHEMA ((size_t)32 * 1024)

static const char *const mcp_versions[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL };

enum pend_kind { PEND_INIT, PEND_LIST, PEND_CALL, PEND_STALE };

struct mcp_call {
	struct mcp_client *c;
	long id;
	enum pend_kind kind;
	mcp_call_fn *fn;		/* PEND_CALL only */
	void *arg;
	ev_timer tm;			/* PEND_CALL: the call's limit */
	struct mcp_call *prev, *next;
	int ending;			/* in mcp_pend_fail_all's batch: off the client's list */
	int cancelled;			/* ... and cancelled meanwhile: its fn does not run */
};

/* A transport and whose it is: a dropped one's reports are ignored until its gone frees it. */
struct mcp_bind {
	struct mcp_client *c;		/* NULL once dropped */
	struct mcp_client *owner;	/* the client that keeps it on its dropped list */
	struct mcp_transport *tp;
	struct mcp_bind *next;		/* on the owner's dropped list */
};

struct mcp_client {
	struct ev_loop *loop;
	struct mcp_config cfg;
	char *cwd;
	struct mcp_limits lim;
	struct mcp_client_cb cb;
	enum mcp_state state;
	char *reason;
	struct mcp_transport *tp;	/* the live one (cur->tp), or NULL */
	struct mcp_bind *cur;
	struct mcp_bind *dropped;	/* closing; freed when they are gone */
	char version[16];		/* negotiated */
	long next_id;
	struct mcp_call *pending;	/* requests in flight: the handshake's, the list's, calls */
	ev_timer init_tm;		/* the startup limit of initialize */
	ev_timer restart_tm;
	double backoff;
	int tries;			/* restarts of this outage */
	int first;			/* the first start has not reached ready or failed */
	/* the tool list: the ready one, and the one being read */
	struct mcp_tool *tools, *next_tools;
	size_t ntools, nnext;
	int pages, listing, relist;
	int full;			/* next_tools has 128: the rest is left out (warned once) */
	int stopping;
	void (*stopped)(void *arg);
	void *stopped_arg;
};

const char *
mcp_state_name(enum mcp_state s)
{
	static const char *const names[] = { "starting", "ready", "failed", "exited", "stopped" };

	return names[s];
}

void
mcp_limits_default(struct mcp_limits *l)
{
	l->startup_ms = 30000;
	l->call_ms = 60000;
	l->backoff_first = 0.5;
	l->backoff_max = 30.;
	l->max_tries = 10;
	l->open = NULL;
	l->open_arg = NULL;
}

/* 1 when the JSON string s holds a NUL (C text would cut it there: "tr\u0000ue" would run tr). */
static int
mcp_has_nul(const json_t *s)
{
	return json_is_string(s) && strlen(json_string_value(s)) != json_string_length(s);
}

/* [{name, value}] with string members only; a new reference, or NULL with e. */
static json_t *
mcp_pairs(const json_t *v, const char *field, struct err *e)
{
	size_t i;
	const json_t *p;

	if (v == NULL)
		return json_array();
	if (!json_is_array(v)) {
		err_set(e, ERR_INVALID_PARAMS, "mcpServers: %s: expected an array", field);
		return NULL;
	}
	json_array_foreach(v, i, p) {
		const json_t *n = json_object_get(p, "name"), *val = json_object_get(p, "value");
		if (!json_is_string(n) || !json_is_string(val) || json_string_value(n)[0] == '\0') {
			err_set(e, ERR_INVALID_PARAMS, "mcpServers: %s[%zu]: expected {name, value} strings",
			    field, i);
			return NULL;
		}
		if (mcp_has_nul(n) || mcp_has_nul(val)) {
			err_set(e, ERR_INVALID_PARAMS, "mcpServers: %s[%zu]: must not contain \\u0000", field, i);
			return NULL;
		}
	}
	return json_deep_copy(v);
}

int
mcp_config_parse(const json_t *server, struct mcp_config *cfg, struct err *e)
{
	const char *type = json_string_value(json_object_get(server, "type"));
	const json_t *name = json_object_get(server, "name");

	memset(cfg, 0, sizeof(*cfg));
	if (!json_is_object(server))
		return err_set(e, ERR_INVALID_PARAMS, "mcpServers: expected objects");
	/* Empty as C text: "\u0000x" is the name "" to everything after this. */
	if (!json_is_string(name) || json_string_value(name)[0] == '\0')
		return err_set(e, ERR_INVALID_PARAMS, "mcpServers: name: expected a non-empty string");
	if (mcp_has_nul(name))
		return err_set(e, ERR_INVALID_PARAMS, "mcpServers: name: must not contain \\u0000");
	if (json_object_get(server, "type") != NULL && type == NULL)
		return err_set(e, ERR_INVALID_PARAMS, "mcpServers: type: expected a string");
	cfg->name = xstrdup(json_string_value(name));
	if (type != NULL && strcmp(type, "sse") == 0) {
		mcp_config_free(cfg);
		return err_set(e, ERR_MCP_START_FAILED, "the sse transport is not supported");
	}
	if (type != NULL && strcmp(type, "http") == 0) {
		const json_t *url = json_object_get(server, "url");
		cfg->http = 1;
		if (!json_is_string(url) || (strncmp(json_string_value(url), "http://", 7) != 0 &&
		    strncmp(json_string_value(url), "https://", 8) != 0)) {
			mcp_config_free(cfg);
			return err_set(e, ERR_INVALID_PARAMS, "mcpServers: url: expected an http(s) URL");
		}
		if (mcp_has_nul(url)) {
			mcp_config_free(cfg);
			return err_set(e, ERR_INVALID_PARAMS, "mcpServers: url: must not contain \\u0000");
		}
		cfg->url = xstrdup(json_string_value(url));
		if ((cfg->headers = mcp_pairs(json_object_get(server, "headers"), "headers", e)) == NULL) {
			mcp_config_free(cfg);
			return -1;
		}
		return 0;
	}
	if (type != NULL && strcmp(type, "stdio") != 0) {
		err_set(e, ERR_INVALID_PARAMS, "mcpServers: type: unknown transport \"%s\"", type);
		mcp_config_free(cfg);
		return -1;
	}
	const json_t *cmd = json_object_get(server, "command"), *args = json_object_get(server, "args");
	if (!json_is_string(cmd) || json_string_value(cmd)[0] == '\0') {
		mcp_config_free(cfg);
		return err_set(e, ERR_INVALID_PARAMS, "mcpServers: command: expected a non-empty string");
	}
	if (mcp_has_nul(cmd)) {
		mcp_config_free(cfg);
		return err_set(e, ERR_INVALID_PARAMS, "mcpServers: command: must not contain \\u0000");
	}
	if (args != NULL) {
		size_t i;
		const json_t *a;
		int ok = json_is_array(args), nul = 0;
		json_array_foreach(args, i, a) {
			ok &= json_is_string(a);
			nul |= mcp_has_nul(a);
		}
		if (!ok || nul) {
			mcp_config_free(cfg);
			return err_set(e, ERR_INVALID_PARAMS, nul ? "mcpServers: args: must not contain \\u0000" :
			    "mcpServers: args: expected an array of strings");
		}
	}
	cfg->command = xstrdup(json_string_value(cmd));
	cfg->args = args != NULL ? json_deep_copy(args) : json_array();
	if ((cfg->env = mcp_pairs(json_object_get(server, "env"), "env", e)) == NULL) {
		mcp_config_free(cfg);
		return -1;
	}
	return 0;
}

void
mcp_config_free(struct mcp_config *cfg)
{
	free(cfg->name);
	free(cfg->command);
	free(cfg->url);
	json_decref(cfg->args);
	json_decref(cfg->env);
	json_decref(cfg->headers);
	memset(cfg, 0, sizeof(*cfg));
}

static void
mcp_config_copy(struct mcp_config *to, const struct mcp_config *from)
{
	to->name = xstrdup(from->name);
	to->http = from->http;
	to->command = from->command ? xstrdup(from->command) : NULL;
	to->url = from->url ? xstrdup(from->url) : NULL;
	to->args = json_deep_copy(from->args);
	to->env = json_deep_copy(from->env);
	to->headers = json_deep_copy(from->headers);
}

static void
mcp_tools_free(struct mcp_tool *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(t[i].name);
		free(t[i].description);
		free(t[i].schema);
	}
	free(t);
}

static void
mcp_report(struct mcp_client *c)
{
	if (!c->stopping && c->cb.state)
		c->cb.state(c->cb.arg, c);
}

static void
mcp_set_reason(struct mcp_client *c, const char *reason)
{
	free(c->reason);
	c->reason = xstrdup(reason != NULL ? reason : "");
}

/* "<code>: <message>" of a JSON-RPC error object, into buf. */
static const char *
mcp_error_text(const json_t *error, char *buf, size_t size)
{
	const char *msg = json_string_value(json_object_get(error, "message"));

	snprintf(buf, size, "%lld: %s", (long long)json_integer_value(json_object_get(error, "code")),
	    msg != NULL ? msg : "");
	return buf;
}

/* --- requests in flight --- */

static struct mcp_call *
mcp_pend_add(struct mcp_client *c, enum pend_kind kind)
{
	struct mcp_call *p = xcalloc(1, sizeof(*p));

	p->c = c;
	p->id = ++c->next_id;
	p->kind = kind;
	ev_init(&p->tm, NULL);
	p->next = c->pending;
	if (c->pending)
		c->pending->prev = p;
	c->pending = p;
	return p;
}

static void
mcp_pend_drop(struct mcp_call *p)
{
	struct mcp_client *c = p->c;

	if (p->prev)
		p->prev->next = p->next;
	else
		c->pending = p->next;
	if (p->next)
		p->next->prev = p->prev;
	ev_timer_stop(c->loop, &p->tm);
	free(p);
}

static struct mcp_call *
mcp_pend_find(struct mcp_client *c, long id)
{
	for (struct mcp_call *p = c->pending; p; p = p->next)
		if (p->id == id)
			return p;
	return NULL;
}

static void
mcp_send(struct mcp_client *c, json_t *msg)
{
	if (c->tp)
		c->tp->ops->send(c->tp, msg);
	json_decref(msg);
}

static void
mcp_request(struct mcp_client *c, struct mcp_call *p, const char *method, json_t *params)
{
	mcp_send(c, xjson_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", (json_int_t)p->id,
	    "method", method, "params", params));
}

/* Ends a call with e: fn runs, the call is freed. */
static void
mcp_call_fail(struct mcp_call *p, const struct err *e)
{
	mcp_call_fn *fn = p->fn;
	void *arg = p->arg;

	mcp_pend_drop(p);
	fn(arg, NULL, e);
}

/*
 * Every request in flight ends: calls fail with code and text, the others are dropped. The batch
 * is taken off the client first: a callback may send new requests (not ended here), or cancel a
 * call of the batch still to come (mcp_call_cancel marks it: its fn does not run).
 */
static void
mcp_pend_fail_all(struct mcp_client *c, enum err_code code, const char *text)
{
	struct mcp_call *list = c->pending, *p;
	struct err e;

	c->pending = NULL;
	for (p = list; p; p = p->next)
		p->ending = 1;
	while ((p = list) != NULL) {
		list = p->next;
		ev_timer_stop(c->loop, &p->tm);
		if (p->kind != PEND_CALL || p->cancelled) {
			free(p);
			continue;
		}
		mcp_call_fn *fn = p->fn;
		void *arg = p->arg;
		free(p);
		err_clear(&e);
		err_set(&e, code, "%s", text);
		fn(arg, NULL, &e);
	}
}

/* --- the lifecycle --- */

static void mcp_attempt(struct mcp_client *c);
static void mcp_list_page(struct mcp_client *c, const char *cursor);

/*
 * The transport is no longer wanted: it closes in order on the dropped list, its reports ignored,
 * and its gone frees it. Safe from inside its own callbacks.
 */
static void
mcp_drop_transport(struct mcp_client *c)
{
	struct mcp_bind *b = c->cur;

	ev_timer_stop(c->loop, &c->init_tm);
	if (b == NULL)
		return;
	c->cur = NULL;
	c->tp = NULL;
	b->c = NULL;
	b->next = c->dropped;
	c->dropped = b;
	b->tp->ops->close(b->tp);
}

/* The next start, after the backoff; now: at once (the server ended the session: MCP's rule is
 * to initialize again), counted as a try all the same so a server that always does stops. */
static void
mcp_schedule_restart(struct mcp_client *c, int now)
{
	if (c->tries >= c->lim.max_tries) {
		char why[160];
		snprintf(why, sizeof(why), "%s; gave up after %d restarts", c->reason, c->tries);
		mcp_set_reason(c, why);
		c->state = MCP_FAILED;
		mcp_report(c);
		return;
	}
	ev_timer_set(&c->restart_tm, now ? 0. : c->backoff, 0.);
	ev_timer_start(c->loop, &c->restart_tm);
	if (!now)
		c->backoff = c->backoff * 2 > c->lim.backoff_max ? c->lim.backoff_max : c->backoff * 2;
	c->tries++;
}

/*
 * The handshake or the first listing failed: the first start fails, a restart tries again.
 * expired: the server ended the session it had just begun; a new one is begun at once, even
 * in the first start.
 */
static void
mcp_start_failed(struct mcp_client *c, const char *why, int expired)
{
	log_warn("mcp %s: %s", c->cfg.name, why);
	mcp_set_reason(c, why);
	mcp_drop_transport(c);
	mcp_pend_fail_all(c, ERR_MCP_NOT_READY, why);
	if (c->first && !(expired && c->tries < c->lim.max_tries)) {
		c->first = 0;
		c->state = MCP_FAILED;
		mcp_report(c);
	} else {
		mcp_schedule_restart(c, expired);
	}
}

/* A listing starts: what one before left half read is dropped; its own 20 pages and 128 tools. */
static void
mcp_list_begin(struct mcp_client *c)
{
	mcp_tools_free(c->next_tools, c->nnext);
	c->next_tools = NULL;
	c->nnext = 0;
	c->pages = 0;
	c->full = 0;
}

static void
mcp_list_page(struct mcp_client *c, const char *cursor)
{
	/* Every page is under the startup limit too: a server that never lists is failed. */
	ev_timer_stop(c->loop, &c->init_tm);
	ev_timer_set(&c->init_tm, (double)c->lim.startup_ms / 1000., 0.);
	ev_timer_start(c->loop, &c->init_tm);
	c->pages++;
	mcp_request(c, mcp_pend_add(c, PEND_LIST), "tools/list",
	    cursor ? xjson_pack("{s:s}", "cursor", cursor) : json_object());
}

static void
mcp_ready(struct mcp_client *c)
{
	ev_timer_stop(c->loop, &c->init_tm);
	mcp_tools_free(c->tools, c->ntools);
	c->tools = c->next_tools;
	c->ntools = c->nnext;
	c->next_tools = NULL;
	c->nnext = 0;
	c->listing = 0;
	c->first = 0;
	c->tries = 0;
	c->backoff = c->lim.backoff_first;
	c->state = MCP_READY;
	mcp_set_reason(c, "");
	mcp_report(c);
	if (c->relist) {
		c->relist = 0;
		c->listing = 1;
		mcp_list_begin(c);
		mcp_list_page(c, NULL);
	}
}

/* One tool of a page into next_tools; a tool left out is logged. */
static void
mcp_list_take(struct mcp_client *c, const json_t *t)
{
	const char *name = json_string_value(json_object_get(t, "name"));
	const char *desc = json_string_value(json_object_get(t, "description"));
	const char *task = json_string_value(json_object_get(json_object_get(t, "execution"), "taskSupport"));
	json_t *schema = json_object_get(t, "inputSchema");
	json_t *copy;
	char *text;

	if (name == NULL || name[0] == '\0') {
		log_warn("mcp %s: a tool without a name, left out", c->cfg.name);
		return;
	}
	if (task != NULL && strcmp(task, "required") == 0) {
		log_info("mcp %s: tool %s needs tasks, left out", c->cfg.name, name);
		return;
	}
	if (c->nnext == MCP_MAX_TOOLS) {
		if (!c->full)
			log_warn("mcp %s: more than %d tools; %s and the rest are left out", c->cfg.name,
			    MCP_MAX_TOOLS, name);
		c->full = 1;
		return;
	}
	copy = json_is_object(schema) ? json_deep_copy(schema) : json_object();
	json_object_set_new(copy, "type", json_string("object"));
	text = json_dumps(copy, JSON_COMPACT);
	json_decref(copy);
	if (text == NULL || strlen(text) > MCP_MAX_SCHEMA) {
		log_warn("mcp %s: tool %s: input schema over 32 KiB, left out", c->cfg.name, name);
		free(text);
		return;
	}
	for (size_t i = 0; i < c->nnext; i++)
		if (strcmp(c->next_tools[i].name, name) == 0) {
			log_warn("mcp %s: tool %s listed twice; the first is kept", c->cfg.name, name);
			free(text);
			return;
		}
	c->next_tools = xrealloc(c->next_tools, (c->nnext + 1) * sizeof(*c->next_tools));
	c->next_tools[c->nnext].name = xstrdup(name);
	c->next_tools[c->nnext].description = xstrdup(desc != NULL ? desc : "");
	c->next_tools[c->nnext].schema = text;
	c->nnext++;
}

static void
mcp_on_list(struct mcp_client *c, const json_t *result, const json_t *error)
{
	const char *cursor;
	size_t i;
	const json_t *t;

	if (error != NULL || !json_is_array(json_object_get(result, "tools"))) {
		char why[256], et[200];
		if (error != NULL)
			snprintf(why, sizeof(why), "tools/list failed: %s", mcp_error_text(error, et, sizeof(et)));
		else
			snprintf(why, sizeof(why), "tools/list answered no tools array");
		mcp_tools_free(c->next_tools, c->nnext);
		c->next_tools = NULL;
		c->nnext = 0;
		c->listing = 0;
		if (c->state == MCP_READY) {
			log_warn("mcp %s: %s; the old list stays", c->cfg.name, why);
			if (c->relist) {	/* a list_changed came meanwhile: that one is read */
				c->relist = 0;
				c->listing = 1;
				mcp_list_begin(c);
				mcp_list_page(c, NULL);
			}
			return;
		}
		mcp_start_failed(c, why, 0);
		return;
	}
	json_array_foreach(json_object_get(result, "tools"), i, t) mcp_list_take(c, t);
	cursor = json_string_value(json_object_get(result, "nextCursor"));
	if (cursor != NULL && c->pages < MCP_MAX_PAGES) {
		mcp_list_page(c, cursor);
		return;
	}
	if (cursor != NULL)
		log_warn("mcp %s: more than %d pages of tools; the rest are left out", c->cfg.name, MCP_MAX_PAGES);
	mcp_ready(c);
}

static void
mcp_relist(struct mcp_client *c)
{
	if (c->listing) {	/* the list being read may be stale, the first one too: again once read */
		c->relist = 1;
		return;
	}
	if (c->state != MCP_READY)
		return;
	c->listing = 1;
	mcp_list_begin(c);
	mcp_list_page(c, NULL);
}

static void
mcp_on_init(struct mcp_client *c, const json_t *result, const json_t *error)
{
	const char *v = json_string_value(json_object_get(result, "protocolVersion"));
	char why[256], et[200];
	size_t i;

	ev_timer_stop(c->loop, &c->init_tm);
	if (error != NULL) {
		snprintf(why, sizeof(why), "initialize failed: %s", mcp_error_text(error, et, sizeof(et)));
		mcp_start_failed(c, why, 0);
		return;
	}
	for (i = 0; v != NULL && mcp_versions[i] != NULL; i++)
		if (strcmp(v, mcp_versions[i]) == 0)
			break;
	if (v == NULL || mcp_versions[i] == NULL) {
		snprintf(why, sizeof(why), "unsupported protocol version \"%.40s\"", v != NULL ? v : "(none)");
		mcp_start_failed(c, why, 0);
		return;
	}
	snprintf(c->version, sizeof(c->version), "%s", v);
	c->tp->ops->set_version(c->tp, c->version);
	mcp_send(c, xjson_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized"));
	mcp_list_begin(c);	/* a re-list the last transport left half read is dropped */
	c->relist = 0;
	if (json_object_get(json_object_get(result, "capabilities"), "tools") == NULL) {
		mcp_ready(c);	/* no tools capability: nothing to list */
		return;
	}
	c->listing = 1;
	mcp_list_page(c, NULL);
}

static void
mcp_on_response(struct mcp_client *c, const json_t *msg)
{
	const json_t *id = json_object_get(msg, "id");
	const json_t *result = json_object_get(msg, "result"), *error = json_object_get(msg, "error");
	struct mcp_call *p;
	struct err e;

	if (!json_is_integer(id) || (p = mcp_pend_find(c, (long)json_integer_value(id))) == NULL) {
		log_debug("mcp %s: a response to no request of ours, dropped", c->cfg.name);
		return;
	}
	if (error != NULL && !json_is_object(error))
		error = NULL;
	if (p->kind == PEND_STALE) {	/* a re-list given up on: its answer comes too late */
		mcp_pend_drop(p);
		return;
	}
	if (p->kind == PEND_INIT) {
		mcp_pend_drop(p);
		mcp_on_init(c, result, error);
		return;
	}
	if (p->kind == PEND_LIST) {
		mcp_pend_drop(p);
		mcp_on_list(c, result, error);
		return;
	}
	err_clear(&e);
	if (error != NULL) {
		char et[sizeof(e.msg)];
		err_set(&e, ERR_MCP_PROTOCOL_ERROR, "%s", mcp_error_text(error, et, sizeof(et)));
		mcp_call_fail(p, &e);
		return;
	}
	if (!json_is_object(result)) {
		err_set(&e, ERR_MCP_PROTOCOL_ERROR, "the server answered no result object");
		mcp_call_fail(p, &e);
		return;
	}
	mcp_call_fn *fn = p->fn;
	void *arg = p->arg;
	mcp_pend_drop(p);
	fn(arg, result, NULL);
}

static void
mcp_on_message(void *arg, const json_t *msg)
{
	struct mcp_client *c = ((struct mcp_bind *)arg)->c;
	const char *method = json_string_value(json_object_get(msg, "method"));
	const json_t *id = json_object_get(msg, "id");

	if (c == NULL)
		return;		/* a dropped transport */
	if (method == NULL) {
		mcp_on_response(c, msg);
		return;
	}
	if (id != NULL) {	/* a request of the server's */
		if (strcmp(method, "ping") == 0)
			mcp_send(c, xjson_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id, "result"));
		else
			mcp_send(c, xjson_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
			    "code", -32601, "message", "Method not found"));
		return;
	}
	if (strcmp(method, "notifications/tools/list_changed") == 0)
		mcp_relist(c);
	else
		log_debug("mcp %s: notification %s", c->cfg.name, method);
}

/* The reason for an exit, with the last line of its stderr when there is one. */
static void
mcp_exit_reason(struct mcp_client *c, const char *how, struct buf *out)
{
	struct buf tail;
	size_t end, start;

	buf_init(&tail);
	c->tp->ops->stderr_tail(c->tp, &tail);
	buf_puts(out, how);
	end = tail.len;
	while (end > 0 && (tail.data[end - 1] == '\n' || tail.data[end - 1] == '\r'))
		end--;
	start = end;
	while (start > 0 && tail.data[start - 1] != '\n')
		start--;
	if (end > start)
		buf_printf(out, ": %.*s", (int)(end - start > 200 ? 200 : end - start), tail.data + start);
	buf_free(&tail);
}

/* A stop is over: the client frees itself and tells its owner. */
static void
mcp_stop_finish(struct mcp_client *c)
{
	void (*stopped)(void *) = c->stopped;
	void *arg = c->stopped_arg;

	mcp_client_free(c);
	if (stopped)
		stopped(arg);
}

/* A dropped transport is gone: off its owner's list, freed; the last one ends a stop waiting
 * for it (a stop does not cut the ladder of a transport closing after a failed start). */
static void
mcp_bind_reap(struct mcp_bind *b)
{
	struct mcp_client *c = b->owner;
	struct mcp_bind **pp = &c->dropped;

	while (*pp != b)
		pp = &(*pp)->next;
	*pp = b->next;
	b->tp->ops->free(b->tp);
	free(b);
	if (c->stopping && c->tp == NULL && c->dropped == NULL)
		mcp_stop_finish(c);
}

static void
mcp_on_gone(void *arg, const char *how, int expired)
{
	struct mcp_bind *b = arg;
	struct mcp_client *c = b->c;
	enum mcp_state was;
	struct buf reason, tail, text;

	if (c == NULL) {
		mcp_bind_reap(b);
		return;
	}
	was = c->state;
	buf_init(&reason);
	buf_init(&tail);
	buf_init(&text);
	mcp_exit_reason(c, how, &reason);
	c->tp->ops->stderr_tail(c->tp, &tail);
	c->tp->ops->free(c->tp);
	c->tp = NULL;
	c->cur = NULL;
	free(b);
	ev_timer_stop(c->loop, &c->init_tm);
	if (c->stopping) {
		mcp_pend_fail_all(c, ERR_MCP_SERVER_EXITED, "MCP server stopped");
		if (c->dropped == NULL)
			mcp_stop_finish(c);
		goto out;
	}
	buf_printf(&text, "MCP server \"%s\" %s", c->cfg.name, how);
	if (tail.len > 0) {
		/* The end of the tail is what explains a crash: keep what fits an error's message. */
		size_t room = sizeof(((struct err *)0)->msg) - text.len - 2, from = 0;
		if (tail.len > room) {
			from = tail.len - room;
			while (from < tail.len && ((unsigned char)tail.data[from] & 0xc0) == 0x80)
				from++;
		}
		buf_printf(&text, "\n%.*s", (int)(tail.len - from), tail.data + from);
	}
	mcp_pend_fail_all(c, ERR_MCP_SERVER_EXITED, text.data);
	if (was == MCP_READY) {
		log_warn("mcp %s: %s", c->cfg.name, reason.data);
		mcp_set_reason(c, reason.data);
		c->state = MCP_EXITED;
		mcp_report(c);
		c->tries = 0;
		c->backoff = c->lim.backoff_first;
		if (c->state == MCP_EXITED && !c->stopping)
			mcp_schedule_restart(c, expired);
	} else if (was == MCP_STARTING) {
		mcp_start_failed(c, reason.data, expired);
	}
out:
	buf_free(&reason);
	buf_free(&tail);
	buf_free(&text);
}

static void
mcp_init_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mcp_client *c = (struct mcp_client *)((char *)w - offsetof(struct mcp_client, init_tm));
	char why[96];

	(void)loop;
	(void)revents;
	if (c->state == MCP_READY) {	/* a re-list unanswered: the old list stays */
		log_warn("mcp %s: no answer to tools/list within %g s; the old list stays", c->cfg.name,
		    (double)c->lim.startup_ms / 1000.);
		for (struct mcp_call *p = c->pending; p != NULL; p = p->next)
			if (p->kind == PEND_LIST)
				p->kind = PEND_STALE;	/* its late answer is dropped */
		mcp_list_begin(c);
		c->listing = 0;
		mcp_report(c);	/* held requests go */
		return;
	}
	/* initialize is never cancelled (docs/contract.md §20.1): the server is failed, its process closed. */
	snprintf(why, sizeof(why), "no answer to %s within %g s", c->version[0] ? "tools/list" : "initialize",
	    (double)c->lim.startup_ms / 1000.);
	mcp_start_failed(c, why, 0);
}

static void
mcp_restart_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mcp_client *c = (struct mcp_client *)((char *)w - offsetof(struct mcp_client, restart_tm));

	(void)loop;
	(void)revents;
	if (c->stopping) {	/* a stop with no transport: finished from the loop */
		mcp_stop_finish(c);
		return;
	}
	log_info("mcp %s: restarting (try %d of %d)", c->cfg.name, c->tries, c->lim.max_tries);
	mcp_attempt(c);
	if (c->state == MCP_STARTING)
		mcp_report(c);
}

/* One start: the transport, then initialize. */
static void
mcp_attempt(struct mcp_client *c)
{
	struct mcp_bind *b = xcalloc(1, sizeof(*b));
	struct mcp_transport_cb cb = { mcp_on_message, mcp_on_gone, b };
	struct err e;

	b->c = b->owner = c;
	err_clear(&e);
	c->state = MCP_STARTING;
	c->version[0] = '\0';
	if (c->lim.open)
		c->tp = c->lim.open(c->lim.open_arg, &c->cfg, &cb, &e);
	else if (c->cfg.http)
		c->tp = mcp_http_new(c->loop, c->cfg.name, c->cfg.url, c->cfg.headers, &cb, &e);
	else
		c->tp = mcp_stdio_new(c->loop, c->cfg.name, c->cfg.command, c->cfg.args, c->cfg.env, c->cwd,
		    &cb, &e);
	if (c->tp == NULL) {
		free(b);
		mcp_start_failed(c, e.msg, 0);
		return;
	}
	b->tp = c->tp;
	c->cur = b;
	mcp_request(c, mcp_pend_add(c, PEND_INIT), "initialize",
	    xjson_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", MCP_PROTOCOL, "capabilities",
		"clientInfo", "name", "acp-agent", "version", ACP_AGENT_VERSION));
	ev_timer_set(&c->init_tm, (double)c->lim.startup_ms / 1000., 0.);
	ev_timer_start(c->loop, &c->init_tm);
}

struct mcp_client *
mcp_client_new(struct ev_loop *loop, const struct mcp_config *cfg, const char *cwd,
    const struct mcp_limits *lim, const struct mcp_client_cb *cb)
{
	struct mcp_client *c = xcalloc(1, sizeof(*c));

	c->loop = loop;
	mcp_config_copy(&c->cfg, cfg);
	c->cwd = xstrdup(cwd);
	c->lim = *lim;
	c->cb = *cb;
	c->state = MCP_STARTING;
	c->reason = xstrdup("");
	c->backoff = lim->backoff_first;
	c->first = 1;
	ev_init(&c->init_tm, mcp_init_timeout);
	ev_init(&c->restart_tm, mcp_restart_cb);
	return c;
}

void
mcp_client_start(struct mcp_client *c)
{
	log_debug("mcp %s: starting", c->cfg.name);
	mcp_attempt(c);
	if (c->state == MCP_STARTING)
		mcp_report(c);
}

void
mcp_client_stop(struct mcp_client *c, void (*stopped)(void *arg), void *arg)
{
	c->stopping = 1;
	c->stopped = stopped;
	c->stopped_arg = arg;
	ev_timer_stop(c->loop, &c->init_tm);
	ev_timer_stop(c->loop, &c->restart_tm);
	mcp_pend_fail_all(c, ERR_MCP_SERVER_EXITED, "MCP server stopped");
	if (c->tp == NULL && c->dropped == NULL) {	/* finished from the loop: the caller may be inside a report */
		ev_timer_set(&c->restart_tm, 0., 0.);
		ev_timer_start(c->loop, &c->restart_tm);
		return;
	}
	if (c->tp)
		c->tp->ops->close(c->tp);	/* the dropped ones are closing already */
}

int
mcp_client_idle(const struct mcp_client *c)
{
	return c->tp == NULL && c->dropped == NULL;
}

void
mcp_client_free(struct mcp_client *c)
{
	if (c == NULL)
		return;
	ev_timer_stop(c->loop, &c->init_tm);
	ev_timer_stop(c->loop, &c->restart_tm);
	for (struct mcp_call *p = c->pending, *next; p != NULL; p = next) {
		next = p->next;
		ev_timer_stop(c->loop, &p->tm);
		free(p);
	}
	c->pending = NULL;
	if (c->tp)
		c->tp->ops->free(c->tp);
	free(c->cur);
	while (c->dropped) {
		struct mcp_bind *b = c->dropped;
		c->dropped = b->next;
		b->tp->ops->free(b->tp);
		free(b);
	}
	mcp_tools_free(c->tools, c->ntools);
	mcp_tools_free(c->next_tools, c->nnext);
	mcp_config_free(&c->cfg);
	free(c->cwd);
	free(c->reason);
	free(c);
}

const char *
mcp_client_name(const struct mcp_client *c)
{
	return c->cfg.name;
}

enum mcp_state
mcp_client_state(const struct mcp_client *c)
{
	return c->state;
}

const char *
mcp_client_reason(const struct mcp_client *c)
{
	return c->reason;
}

const struct mcp_tool *
mcp_client_tools(const struct mcp_client *c, size_t *n)
{
	*n = c->state == MCP_READY ? c->ntools : 0;
	return c->tools;
}

int
mcp_client_starting(const struct mcp_client *c)
{
	return !c->stopping && (c->state == MCP_STARTING || c->state == MCP_EXITED);
}

int
mcp_client_listing(const struct mcp_client *c)
{
	return c->state == MCP_READY && c->listing;
}

/* --- calls --- */

static void
mcp_call_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mcp_call *p = (struct mcp_call *)((char *)w - offsetof(struct mcp_call, tm));
	struct mcp_client *c = p->c;
	struct err e;

	(void)loop;
	(void)revents;
	mcp_send(c, xjson_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method",
	    "notifications/cancelled", "params", "requestId", (json_int_t)p->id, "reason", "timed out"));
	err_clear(&e);
	err_set(&e, ERR_MCP_TIMEOUT, "MCP server \"%s\" did not answer within %g s", c->cfg.name,
	    (double)c->lim.call_ms / 1000.);
	mcp_call_fail(p, &e);
}

struct mcp_call *
mcp_client_call(struct mcp_client *c, const char *tool, const json_t *args, mcp_call_fn *fn, void *arg,
    struct err *e)
{
	struct mcp_call *p;

	if (c->state != MCP_READY || c->tp == NULL) {
		err_set(e, ERR_MCP_NOT_READY, "MCP server \"%s\" is %s%s%s", c->cfg.name,
		    mcp_state_name(c->state), c->reason[0] ? ": " : "", c->reason);
		return NULL;
	}
	p = mcp_pend_add(c, PEND_CALL);
	p->fn = fn;
	p->arg = arg;
	ev_timer_init(&p->tm, mcp_call_timeout, (double)c->lim.call_ms / 1000., 0.);
	ev_timer_start(c->loop, &p->tm);
	mcp_request(c, p, "tools/call", xjson_pack("{s:s, s:O}", "name", tool, "arguments", args));
	return p;
}

void
mcp_call_cancel(struct mcp_call *p, const char *reason)
{
	struct mcp_client *c = p->c;

	mcp_send(c, xjson_pack("{s:s, s:s, s:{s:I, s:s}}", "jsonrpc", "2.0", "method",
	    "notifications/cancelled", "params", "requestId", (json_int_t)p->id, "reason", reason));
	if (p->ending)
		p->cancelled = 1;	/* mcp_pend_fail_all frees it */
	else
		mcp_pend_drop(p);
}
