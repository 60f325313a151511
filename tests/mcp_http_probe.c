/*
 * mcp-http-probe: mcp/http.c alone against a real MCP server over Streamable HTTP, for
 * tests/mcp_http_everything.sh. It plays the protocol's few steps by hand (mcp/client.c does
 * them for the agent): initialize, notifications/initialized, tools/list, tools/call echo, a
 * tools/call whose progress notifications come on its SSE reply before the result, then close;
 * server requests get {} for ping and -32601 otherwise.
 *   mcp-http-probe URL          (MCP_PROBE_DEBUG=1: the transport's debug lines on stderr)
 * Prints one line per step; exit 0 when every step passed, 1 on a failure, 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#include <jansson.h>

#include "base/err.h"
#include "base/log.h"
#include "mcp/http.h"

#define PROBE_ECHO "hello from acp-agent over Streamable HTTP"

struct probe {
	struct ev_loop *loop;
	struct mcp_transport *t;
	json_int_t want;	/* the response id awaited */
	json_t *reply;		/* it, once it came */
	int notes;		/* notifications seen */
	int progress;		/* notifications/progress among them */
	char gone[256];
	int is_gone;
	ev_timer guard;
};

static void
probe_message(void *arg, const json_t *m)
{
	struct probe *p = arg;
	const char *method = json_string_value(json_object_get(m, "method"));
	const json_t *id = json_object_get(m, "id");

	if (method && id) {
		/* A request from the server: ping gets {}, anything else "method not found". */
		json_t *ans = strcmp(method, "ping") == 0 ?
		    json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id, "result") :
		    json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error", "code", -32601,
			"message", "method not found");
		printf("mcp-http-probe: server request %s answered\n", method);
		p->t->ops->send(p->t, ans);
		json_decref(ans);
		return;
	}
	if (method) {
		p->notes++;
		p->progress += strcmp(method, "notifications/progress") == 0;
		return;
	}
	if (json_is_integer(id) && json_integer_value(id) == p->want && p->reply == NULL) {
		p->reply = json_deep_copy(m);
		ev_break(p->loop, EVBREAK_ALL);
	}
}

static void
probe_gone(void *arg, const char *reason)
{
	struct probe *p = arg;

	snprintf(p->gone, sizeof(p->gone), "%s", reason);
	p->is_gone = 1;
	ev_break(p->loop, EVBREAK_ALL);
}

static void
probe_guard_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

/* Sends a request (id, method, params: stolen) and waits for its response; new ref or NULL. */
static json_t *
probe_call(struct probe *p, json_int_t id, const char *method, json_t *params)
{
	json_t *req = json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", id, "method", method, "params",
	    params ? params : json_object());
	json_t *reply;

	p->want = id;
	p->reply = NULL;
	p->t->ops->send(p->t, req);
	json_decref(req);
	ev_timer_set(&p->guard, 15., 0.);
	ev_timer_start(p->loop, &p->guard);
	ev_run(p->loop, 0);
	ev_timer_stop(p->loop, &p->guard);
	reply = p->reply;
	p->reply = NULL;
	if (reply == NULL)
		printf("mcp-http-probe: FAILED: %s: %s\n", method, p->is_gone ? p->gone : "no response in 15 s");
	else if (json_object_get(reply, "error")) {
		char *s = json_dumps(json_object_get(reply, "error"), JSON_COMPACT);
		printf("mcp-http-probe: FAILED: %s: error %s\n", method, s);
		free(s);
		json_decref(reply);
		reply = NULL;
	}
	return reply;
}

/* Runs the loop for secs (what arrives meanwhile is handled). */
static void
probe_idle(struct probe *p, double secs)
{
	ev_timer_set(&p->guard, secs, 0.);
	ev_timer_start(p->loop, &p->guard);
	ev_run(p->loop, 0);
	ev_timer_stop(p->loop, &p->guard);
}

static int
probe_run(struct probe *p)
{
	json_t *r, *tools, *tool, *content;
	const char *version, *text;
	size_t i;
	int has_echo = 0;

	r = probe_call(p, 1, "initialize", json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", "2025-11-25",
	    "capabilities", "clientInfo", "name", "acp-agent-probe", "version", "0"));
	if (r == NULL)
		return 1;
	version = json_string_value(json_object_get(json_object_get(r, "result"), "protocolVersion"));
	printf("mcp-http-probe: initialize: protocolVersion %s, server %s\n", version ? version : "(none)",
	    json_string_value(json_object_get(json_object_get(json_object_get(r, "result"), "serverInfo"), "name")));
	if (version == NULL) {
		json_decref(r);
		return 1;
	}
	p->t->ops->set_version(p->t, version);
	json_decref(r);

	json_t *note = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", "notifications/initialized");
	p->t->ops->send(p->t, note);
	json_decref(note);
	probe_idle(p, 0.3);	/* the GET stream opens */

	r = probe_call(p, 2, "tools/list", NULL);
	if (r == NULL)
		return 1;
	tools = json_object_get(json_object_get(r, "result"), "tools");
	json_array_foreach(tools, i, tool) {
		const char *name = json_string_value(json_object_get(tool, "name"));
		has_echo |= name && strcmp(name, "echo") == 0;
	}
	printf("mcp-http-probe: tools/list: %zu tools%s\n", json_array_size(tools),
	    has_echo ? ", echo among them" : "");
	json_decref(r);
	if (!has_echo) {
		printf("mcp-http-probe: FAILED: no echo tool\n");
		return 1;
	}

	r = probe_call(p, 3, "tools/call", json_pack("{s:s, s:{s:s}}", "name", "echo", "arguments", "message",
	    PROBE_ECHO));
	if (r == NULL)
		return 1;
	content = json_array_get(json_object_get(json_object_get(r, "result"), "content"), 0);
	text = json_string_value(json_object_get(content, "text"));
	printf("mcp-http-probe: tools/call echo: %s\n", text ? text : "(no text)");
	if (text == NULL || strstr(text, PROBE_ECHO) == NULL) {
		json_decref(r);
		printf("mcp-http-probe: FAILED: the echo did not come back\n");
		return 1;
	}
	json_decref(r);

	/* Three progress notifications on the reply's stream, each before the result. */
	r = probe_call(p, 4, "tools/call", json_pack("{s:s, s:{s:f, s:i}, s:{s:s}}", "name",
	    "trigger-long-running-operation", "arguments", "duration", 0.3, "steps", 3, "_meta", "progressToken",
	    "p4"));
	if (r == NULL)
		return 1;
	printf("mcp-http-probe: tools/call trigger-long-running-operation: %d progress notifications first\n",
	    p->progress);
	json_decref(r);
	if (p->progress != 3) {
		printf("mcp-http-probe: FAILED: 3 progress notifications were due\n");
		return 1;
	}

	p->t->ops->close(p->t);
	ev_timer_set(&p->guard, 5., 0.);
	ev_timer_start(p->loop, &p->guard);
	ev_run(p->loop, 0);
	ev_timer_stop(p->loop, &p->guard);
	printf("mcp-http-probe: close: %s\n", p->is_gone ? p->gone : "(no gone in 5 s)");
	if (!p->is_gone || strcmp(p->gone, "closed") != 0)
		return 1;
	printf("mcp-http-probe: ok (%d notifications on the way)\n", p->notes);
	return 0;
}

int
main(int argc, char **argv)
{
	struct probe p = { 0 };
	struct mcp_transport_cb cb = { probe_message, probe_gone, &p };
	json_t *headers;
	struct err e;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: mcp-http-probe URL\n");
		return 2;
	}
	if (getenv("MCP_PROBE_DEBUG"))
		log_set_level(LOG_DEBUG);
	p.loop = ev_default_loop(0);
	ev_init(&p.guard, probe_guard_cb);
	/* An ACP header the server ignores: it goes on every request, its value never in a log. */
	headers = json_pack("[{s:s, s:s}]", "name", "X-Acp-Probe", "value", "probe-value");
	err_clear(&e);
	p.t = mcp_http_new(p.loop, "everything", argv[1], headers, &cb, &e);
	json_decref(headers);
	if (p.t == NULL) {
		printf("mcp-http-probe: FAILED: %s\n", e.msg);
		return 1;
	}
	rc = probe_run(&p);
	p.t->ops->free(p.t);
	return rc;
}
