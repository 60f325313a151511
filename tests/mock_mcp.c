/*
 * A scripted MCP server for the tests (docs/contract.md §18, §20.1): MCP 2025-11-25's stdio transport, one
 * JSON-RPC 2.0 message per line on stdin and stdout. One poll() loop: replies that wait (a delay,
 * a hang, a request to the client) are pending while stdin is still read, so a
 * notifications/cancelled, a ping or another call is seen at any time; a cancelled reply is
 * dropped (the spec's SHOULD) unless "answerCancelled".
 *
 *   mock-mcp SCRIPT.json
 *
 * The script (every key optional; an unknown key, or a behaviour key out of place, exits 2):
 *   "protocolVersion": "2025-06-18"   initialize's answer; default: the client's own version
 *   "serverInfo": {...}               default {"name": "mock-mcp", "version": "1.0.0"}
 *   "capabilities": {...}             default {"tools": {"listChanged": true}}; {} drops tools
 *   "instructions": "..."             added to initialize's answer
 *   "start": {"stderr": "text", "stdout": "a line", "sleepMs": N}
 *                                     at launch, in this order: text to stderr, one raw line
 *                                     (not JSON) to stdout, then N ms before reading anything
 *   "initialize": BEHAVIOUR           how initialize is answered (default: the answer above)
 *   "tools": [TOOL, ...]              the tool list, sent verbatim (name, description,
 *                                     inputSchema, execution: {taskSupport}, anything)
 *   "toolLists": {"<list>": [TOOL, ...]}   other lists, for "listChanged"
 *   "pageSize": N                     tools/list pages of N tools, nextCursor "cursor-<offset>";
 *                                     the client sends params {cursor}; a bad cursor is -32602
 *   "calls": {"<tool>": [BEHAVIOUR, ...]}  successive tools/call of that tool use these in order,
 *                                     the last repeats (one BEHAVIOUR alone is a list of one).
 *                                     A tool with an entry is answered by it, listed or not;
 *                                     a listed tool with none echoes; an unknown tool is
 *                                     -32602 "Unknown tool: <name>"
 *   "crashLaunches": N, "crashAt": "<method>", "crashExit": C
 *                                     the first N launches exit C (default 1) when the first
 *                                     message with that method arrives, before handling it
 *                                     (default "notifications/initialized": right after the
 *                                     handshake; "initialize": during it). Launches are counted
 *                                     in $MOCK_MCP_STATE/<script file>.launches, else in
 *                                     <log>.launches; with neither, crashLaunches exits 2
 *   "log": "file"                     as MOCK_MCP_LOG (which wins); relative to the script
 *   "ignoreSigterm": true             SIGTERM is logged and ignored (the client must SIGKILL)
 *   "stayAfterEof": true              stdin EOF is logged; the mock lives on until a signal
 *   "answerCancelled": true           a cancelled request is answered anyway (a late answer)
 *   "listFailures": [N, ...]          the N-th tools/list (from 1) of a launch is answered -32603
 *
 * BEHAVIOUR is an object: an optional "delayMs": N first (the reply waits N ms), an optional
 * "stderr": "text" (written when the action runs), then one action:
 *   "result": {...}                   answered verbatim (a CallToolResult: content blocks of any
 *                                     type, structuredContent, isError; for initialize, its result)
 *   "text": "..."                     {"content": [{"type": "text", "text": "..."}]}
 *   "echo": true                      one text block: the call's arguments as compact JSON
 *   "error": {"code": C, "message": "...", "data": ...}   a JSON-RPC error
 *   "hang": true                      never answered
 *   "exit": C                         the mock exits C without answering (a crash mid-call)
 *   "request": {"method": "ping", "params": {...}}   sent to the client (id "mock-<n>"); the
 *                                     call is answered with one text block: the client's answer
 *                                     as compact JSON without jsonrpc and id ({"result":{}})
 * and none of them is the method's usual answer (initialize's answer; echo for a call).
 * "listChanged": "<list>" then switches to toolLists[<list>] and sends
 * notifications/tools/list_changed after the answer ("listChangedFirst": true: before it, so a
 * client has the notification before the call's end: a scenario's next step sees the new list).
 * "listChangedBurst": N sends N list_changed after the answer, the list unchanged (a flood).
 *
 * Answered without the script: ping ({}), unknown requests (-32601 "Method not found"), a line
 * that is not JSON (-32700, id null); notifications and answers nobody waits for are only logged.
 *
 * The log (MOCK_MCP_LOG, appended, one compact JSON line each): {"event":"start","launch":N,
 * "pid":P} at launch (launch 0 when there is nowhere to count), every message received as it
 * came, {"event":"bad-line","line":"..."} for a line that is not JSON, {"event":"stdin-eof"},
 * {"event":"sigterm"} (with "ignored": true under ignoreSigterm), and {"event":"exit","code":C}
 * when the mock exits by itself (EOF, "exit", crashLaunches). A SIGTERM not ignored ends the
 * mock by that signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/xmalloc.h"

enum { KIND_INIT, KIND_CALL };

/* A reply not sent yet: waiting for its time (due), forever (hang), or for the client's answer. */
struct pending {
	json_t *id;		/* the request's id: owned */
	long due;		/* monotonic ms; -1: no timer */
	const json_t *beh;	/* borrowed from the script */
	json_t *args;		/* the call's arguments: owned, may be NULL */
	int kind;
	long srv;		/* > 0: waits for the answer to request mock-<srv> */
	struct pending *next;
};

struct mock {
	json_t *script;
	const char *path;
	int logfd;		/* -1: no log */
	const json_t *tools;	/* the current list: borrowed from the script */
	json_t *used;		/* {tool: calls so far} */
	json_t *client_version;	/* initialize's protocolVersion: owned, may be NULL */
	struct pending *pending;
	long next_srv;
	const char *crash_at;	/* this launch crashes at this method; NULL: it does not */
	long lists;		/* tools/list requests so far */
	struct buf in;
	sigset_t waitmask;	/* the mask inside ppoll: SIGTERM let through */
};

static volatile sig_atomic_t got_term;

static void
term_cb(int sig)
{
	(void)sig;
	got_term = 1;
}

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
write_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(fd, s, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

/* One line to the log, in one write. msg: borrowed. */
static void
mock_log(struct mock *m, const json_t *msg)
{
	char *s;

	if (m->logfd < 0)
		return;
	if (msg == NULL || (s = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY)) == NULL)
		return;
	size_t len = strlen(s);
	s = xrealloc(s, len + 2);
	memcpy(s + len, "\n", 2);
	write_all(m->logfd, s, len + 1);
	free(s);
}

/* Steals ev. */
static void
mock_log_new(struct mock *m, json_t *ev)
{
	mock_log(m, ev);
	json_decref(ev);
}

static void __attribute__((noreturn))
mock_exit(struct mock *m, int code)
{
	mock_log_new(m, json_pack("{s:s, s:i}", "event", "exit", "code", code));
	_exit(code);
}

/* Steals msg. A client that closed our stdout is gone: the mock ends. */
static void
mock_send(struct mock *m, json_t *msg)
{
	char *s;
	size_t len;
	json_t *full = json_pack("{s:s}", "jsonrpc", "2.0");

	json_object_update(full, msg);
	json_decref(msg);
	s = json_dumps(full, JSON_COMPACT);
	json_decref(full);
	len = strlen(s);
	s = xrealloc(s, len + 2);
	memcpy(s + len, "\n", 2);
	len++;
	for (size_t done = 0; done < len;) {
		ssize_t n = write(1, s + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(s);
			mock_exit(m, 0);
		}
		done += (size_t)n;
	}
	free(s);
}

/* id: borrowed; result: stolen. */
static void
send_result(struct mock *m, const json_t *id, json_t *result)
{
	mock_send(m, json_pack("{s:O, s:o}", "id", id, "result", result));
}

/* id: borrowed; err: stolen. */
static void
send_error(struct mock *m, const json_t *id, json_t *err)
{
	mock_send(m, json_pack("{s:O, s:o}", "id", id ? id : json_null(), "error", err));
}

static void
send_error_text(struct mock *m, const json_t *id, int code, const char *message)
{
	send_error(m, id, json_pack("{s:i, s:s}", "code", code, "message", message));
}

/* ---- the script ---- */

static void __attribute__((noreturn, format(printf, 2, 3)))
script_fail(const char *path, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mock-mcp: %s: ", path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static int
key_in(const char *key, const char *const *keys)
{
	for (; *keys; keys++)
		if (strcmp(key, *keys) == 0)
			return 1;
	return 0;
}

static void
check_keys(const char *path, const json_t *obj, const char *what, const char *const *keys)
{
	const char *k;
	json_t *v;

	if (!json_is_object(obj))
		script_fail(path, "%s is not an object", what);
	json_object_foreach((json_t *)obj, k, v) {
		if (!key_in(k, keys))
			script_fail(path, "%s: unknown key \"%s\"", what, k);
	}
}

static void
check_behaviour(const char *path, const json_t *script, const json_t *b, const char *what)
{
	static const char *const keys[] = { "delayMs", "stderr", "result", "text", "echo", "error",
		"hang", "exit", "request", "listChanged", "listChangedFirst", "listChangedBurst", NULL };
	static const char *const actions[] = { "result", "text", "echo", "error", "hang", "exit",
		"request", NULL };
	const char *list;
	int n = 0;

	check_keys(path, b, what, keys);
	for (const char *const *a = actions; *a; a++)
		n += json_object_get(b, *a) != NULL;
	if (n > 1)
		script_fail(path, "%s: more than one action", what);
	if (json_object_get(b, "error") && !json_is_integer(json_object_get(json_object_get(b, "error"), "code")))
		script_fail(path, "%s: error needs an integer code", what);
	if (json_object_get(b, "request") &&
	    !json_is_string(json_object_get(json_object_get(b, "request"), "method")))
		script_fail(path, "%s: request needs a method", what);
	list = json_string_value(json_object_get(b, "listChanged"));
	if (json_object_get(b, "listChanged") &&
	    (list == NULL || !json_is_array(json_object_get(json_object_get(script, "toolLists"), list))))
		script_fail(path, "%s: listChanged names no list of toolLists", what);
}

static void
check_script(const char *path, const json_t *s)
{
	static const char *const keys[] = { "protocolVersion", "serverInfo", "capabilities",
		"instructions", "start", "initialize", "tools", "toolLists", "pageSize", "calls",
		"crashLaunches", "crashAt", "crashExit", "log", "ignoreSigterm", "stayAfterEof",
		"answerCancelled", "listFailures", NULL };
	static const char *const start_keys[] = { "stderr", "stdout", "sleepMs", NULL };
	const char *k;
	json_t *v, *b;
	size_t i;

	check_keys(path, s, "the script", keys);
	if (json_object_get(s, "start"))
		check_keys(path, json_object_get(s, "start"), "start", start_keys);
	if (json_object_get(s, "initialize"))
		check_behaviour(path, s, json_object_get(s, "initialize"), "initialize");
	if (json_object_get(s, "tools") && !json_is_array(json_object_get(s, "tools")))
		script_fail(path, "tools is not an array");
	json_object_foreach(json_object_get(s, "toolLists"), k, v) {
		if (!json_is_array(v))
			script_fail(path, "toolLists.%s is not an array", k);
	}
	json_object_foreach(json_object_get(s, "calls"), k, v) {
		char what[300];
		snprintf(what, sizeof(what), "calls.%s", k);
		if (json_is_object(v))
			check_behaviour(path, s, v, what);
		else if (!json_is_array(v) || json_array_size(v) == 0)
			script_fail(path, "%s is neither a behaviour nor a list of them", what);
		json_array_foreach(v, i, b) check_behaviour(path, s, b, what);
	}
}

/* The n-th behaviour (from 0) of a calls entry; the last repeats. Borrowed. */
static const json_t *
behaviour_at(const json_t *entry, size_t n)
{
	size_t len;

	if (json_is_object(entry))
		return entry;
	len = json_array_size(entry);
	return json_array_get(entry, n < len ? n : len - 1);
}

/* ---- answers ---- */

static json_t *
init_result(struct mock *m)
{
	json_t *s = m->script, *r = json_object(), *v;

	if ((v = json_object_get(s, "protocolVersion")) || (v = m->client_version))
		json_object_set(r, "protocolVersion", v);
	else
		json_object_set_new(r, "protocolVersion", json_string("2025-11-25"));
	v = json_object_get(s, "capabilities");
	json_object_set_new(r, "capabilities", v ? json_incref(v) : json_pack("{s:{s:b}}", "tools", "listChanged", 1));
	v = json_object_get(s, "serverInfo");
	json_object_set_new(r, "serverInfo", v ? json_incref(v) : json_pack("{s:s, s:s}", "name", "mock-mcp", "version", "1.0.0"));
	if ((v = json_object_get(s, "instructions")))
		json_object_set(r, "instructions", v);
	return r;
}

/* A CallToolResult of one text block; returns a new reference. */
static json_t *
text_result(const char *text)
{
	return json_pack("{s:[{s:s, s:s}]}", "content", "type", "text", "text", text);
}

static json_t *
echo_result(const json_t *args)
{
	char *s = json_dumps(args ? args : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
	json_t *r = text_result(s);

	free(s);
	return r;
}

static void
pending_add(struct mock *m, const json_t *id, long due, const json_t *beh, const json_t *args, int kind,
    long srv)
{
	struct pending *p = xcalloc(1, sizeof(*p));

	p->id = json_deep_copy(id);
	p->due = due;
	p->beh = beh;
	p->args = args ? json_deep_copy(args) : NULL;
	p->kind = kind;
	p->srv = srv;
	p->next = m->pending;
	m->pending = p;
}

static void
pending_free(struct pending *p)
{
	json_decref(p->id);
	json_decref(p->args);
	free(p);
}

/*
 * Runs a behaviour for the request id (borrowed). delayed: its delayMs has passed. A behaviour
 * that waits becomes a pending reply.
 */
static void
behave(struct mock *m, const json_t *id, const json_t *beh, const json_t *args, int kind, int delayed)
{
	json_t *v;
	const char *text, *list;

	if (!delayed && json_integer_value(json_object_get(beh, "delayMs")) > 0) {
		pending_add(m, id, now_ms() + (long)json_integer_value(json_object_get(beh, "delayMs")), beh,
		    args, kind, 0);
		return;
	}
	if ((text = json_string_value(json_object_get(beh, "stderr"))))
		write_all(2, text, strlen(text));
	if (json_is_true(json_object_get(beh, "hang"))) {
		pending_add(m, id, -1, beh, args, kind, 0);
		return;
	}
	if ((v = json_object_get(beh, "exit")))
		mock_exit(m, (int)json_integer_value(v));
	if ((v = json_object_get(beh, "request"))) {
		char rid[32];
		snprintf(rid, sizeof(rid), "mock-%ld", ++m->next_srv);
		json_t *req = json_pack("{s:s, s:O}", "id", rid, "method", json_object_get(v, "method"));
		if (json_object_get(v, "params"))
			json_object_set(req, "params", json_object_get(v, "params"));
		pending_add(m, id, -1, beh, args, kind, m->next_srv);
		mock_send(m, req);
		return;
	}
	int first = json_is_true(json_object_get(beh, "listChangedFirst"));

	if (first && (list = json_string_value(json_object_get(beh, "listChanged")))) {
		m->tools = json_object_get(json_object_get(m->script, "toolLists"), list);
		mock_send(m, json_pack("{s:s}", "method", "notifications/tools/list_changed"));
	}
	if ((v = json_object_get(beh, "error")))
		send_error(m, id, json_deep_copy(v));
	else if ((v = json_object_get(beh, "result")))
		send_result(m, id, json_deep_copy(v));
	else if ((text = json_string_value(json_object_get(beh, "text"))))
		send_result(m, id, text_result(text));
	else if (kind == KIND_INIT)
		send_result(m, id, init_result(m));
	else
		send_result(m, id, echo_result(args));
	if (!first && (list = json_string_value(json_object_get(beh, "listChanged")))) {
		m->tools = json_object_get(json_object_get(m->script, "toolLists"), list);
		mock_send(m, json_pack("{s:s}", "method", "notifications/tools/list_changed"));
	}
	/* a flood: that many list_changed at once, the list unchanged */
	for (json_int_t k = json_integer_value(json_object_get(beh, "listChangedBurst")); k > 0; k--)
		mock_send(m, json_pack("{s:s}", "method", "notifications/tools/list_changed"));
}

static void
tools_list(struct mock *m, const json_t *id, const json_t *params)
{
	size_t total = json_array_size(m->tools), from = 0, page = (size_t)json_integer_value(json_object_get(m->script, "pageSize"));
	const json_t *cursor = json_object_get(params, "cursor");
	json_t *res, *tools, *fail;
	size_t k;

	m->lists++;
	json_array_foreach(json_object_get(m->script, "listFailures"), k, fail)
		if (json_integer_value(fail) == m->lists) {
			send_error_text(m, id, -32603, "tools/list failed, as listFailures says");
			return;
		}

	if (cursor && !json_is_null(cursor)) {
		const char *c = json_string_value(cursor);
		char *end = NULL;
		unsigned long off = c && strncmp(c, "cursor-", 7) == 0 ? strtoul(c + 7, &end, 10) : ULONG_MAX;
		if (off == ULONG_MAX || *end || off > total) {
			send_error_text(m, id, -32602, "Invalid cursor");
			return;
		}
		from = off;
	}
	if (page == 0)
		page = total ? total : 1;
	tools = json_array();
	for (size_t i = from; i < total && i < from + page; i++)
		json_array_append(tools, json_array_get(m->tools, i));
	res = json_pack("{s:o}", "tools", tools);
	if (from + page < total) {
		char next[48];
		snprintf(next, sizeof(next), "cursor-%zu", from + page);
		json_object_set_new(res, "nextCursor", json_string(next));
	}
	send_result(m, id, res);
}

static int
tool_listed(const struct mock *m, const char *name)
{
	size_t i;
	json_t *t;

	json_array_foreach(m->tools, i, t) {
		if (json_is_string(json_object_get(t, "name")) && strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
			return 1;
	}
	return 0;
}

static void
tools_call(struct mock *m, const json_t *id, const json_t *params)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	const json_t *entry, *args = json_object_get(params, "arguments");

	if (name == NULL) {
		send_error_text(m, id, -32602, "tools/call needs a name");
		return;
	}
	entry = json_object_get(json_object_get(m->script, "calls"), name);
	if (entry == NULL && !tool_listed(m, name)) {
		char *msg = xasprintf("Unknown tool: %s", name);
		send_error_text(m, id, -32602, msg);
		free(msg);
		return;
	}
	if (entry == NULL) {
		json_t *echo = json_pack("{s:b}", "echo", 1);	/* answered at once: nothing keeps it */
		behave(m, id, echo, args, KIND_CALL, 0);
		json_decref(echo);
		return;
	}
	size_t n = (size_t)json_integer_value(json_object_get(m->used, name));
	json_object_set_new(m->used, name, json_integer((json_int_t)n + 1));
	behave(m, id, behaviour_at(entry, n), args, KIND_CALL, 0);
}

/* The client answered request mock-<n>: the call waiting for it gets that answer as text. */
static void
client_answer(struct mock *m, json_t *msg)
{
	const char *rid = json_string_value(json_object_get(msg, "id"));
	long srv = rid && strncmp(rid, "mock-", 5) == 0 ? strtol(rid + 5, NULL, 10) : 0;

	for (struct pending **pp = &m->pending; *pp; pp = &(*pp)->next) {
		struct pending *p = *pp;
		if (srv == 0 || p->srv != srv)
			continue;
		*pp = p->next;
		json_t *copy = json_deep_copy(msg);
		json_object_del(copy, "jsonrpc");
		json_object_del(copy, "id");
		char *text = json_dumps(copy, JSON_COMPACT);
		json_decref(copy);
		json_t *beh = json_pack("{s:s}", "text", text);
		if (json_object_get(p->beh, "listChanged"))
			json_object_set(beh, "listChanged", json_object_get(p->beh, "listChanged"));
		behave(m, p->id, beh, NULL, p->kind, 1);
		json_decref(beh);
		free(text);
		pending_free(p);
		return;
	}
}

static void
cancelled(struct mock *m, const json_t *params)
{
	const json_t *rid = json_object_get(params, "requestId");

	if (json_is_true(json_object_get(m->script, "answerCancelled")) || rid == NULL)
		return;
	for (struct pending **pp = &m->pending; *pp; pp = &(*pp)->next) {
		if (json_equal((*pp)->id, rid)) {
			struct pending *p = *pp;
			*pp = p->next;
			pending_free(p);
			return;
		}
	}
}

static void
handle_line(struct mock *m, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *msg = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);
	const char *method;
	const json_t *id, *params;

	if (!json_is_object(msg)) {
		json_t *text = json_stringn(line, len);
		mock_log_new(m, json_pack("{s:s, s:o}", "event", "bad-line", "line",
		    text ? text : json_string("<invalid utf-8>")));
		send_error_text(m, NULL, -32700, "Parse error");
		json_decref(msg);
		return;
	}
	mock_log(m, msg);
	method = json_string_value(json_object_get(msg, "method"));
	id = json_object_get(msg, "id");
	params = json_object_get(msg, "params");
	if (m->crash_at && method && strcmp(method, m->crash_at) == 0) {
		fprintf(stderr, "mock-mcp: crashing at %s, as crashLaunches says\n", method);
		json_t *c = json_object_get(m->script, "crashExit");
		mock_exit(m, c ? (int)json_integer_value(c) : 1);
	}
	if (method == NULL) {
		if (id)
			client_answer(m, msg);
	} else if (strcmp(method, "notifications/cancelled") == 0) {
		cancelled(m, params);
	} else if (id == NULL) {
		/* notifications/initialized and the rest: logged above, nothing to do */
	} else if (strcmp(method, "initialize") == 0) {
		json_decref(m->client_version);
		m->client_version = json_incref(json_object_get(params, "protocolVersion"));
		const json_t *beh = json_object_get(m->script, "initialize");
		json_t *none = beh ? NULL : json_object();
		behave(m, id, beh ? beh : none, NULL, KIND_INIT, 0);
		json_decref(none);
	} else if (strcmp(method, "ping") == 0) {
		send_result(m, id, json_object());
	} else if (strcmp(method, "tools/list") == 0) {
		tools_list(m, id, params);
	} else if (strcmp(method, "tools/call") == 0) {
		tools_call(m, id, params);
	} else {
		send_error_text(m, id, -32601, "Method not found");
	}
	json_decref(msg);
}

static void
on_term(struct mock *m)
{
	got_term = 0;
	if (json_is_true(json_object_get(m->script, "ignoreSigterm"))) {
		mock_log_new(m, json_pack("{s:s, s:b}", "event", "sigterm", "ignored", 1));
		return;
	}
	mock_log_new(m, json_pack("{s:s}", "event", "sigterm"));
	signal(SIGTERM, SIG_DFL);
	raise(SIGTERM);		/* pending while blocked: delivered by the unblock */
	sigprocmask(SIG_SETMASK, &m->waitmask, NULL);
	_exit(143);
}

/*
 * Waits up to ms (-1: forever) for stdin (when fd >= 0) or SIGTERM; returns poll's revents.
 * A SIGTERM sent with input ready (a client closing stdin and signalling at once) stays
 * pending through ppoll; it is taken here, before the input.
 */
static int
wait_input(struct mock *m, int fd, long ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 }, zero = { 0, 0 };
	int n = ppoll(fd >= 0 ? &p : NULL, fd >= 0 ? 1 : 0, ms < 0 ? NULL : &ts, &m->waitmask);
	sigset_t term;

	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	if (sigtimedwait(&term, NULL, &zero) == SIGTERM)
		got_term = 1;
	if (got_term)
		on_term(m);
	return n > 0 ? p.revents : 0;
}

/* Counts this launch in the state file; returns its number, 0 when there is nowhere to count. */
static int
count_launch(const char *script_path, const char *log)
{
	const char *dir = getenv("MOCK_MCP_STATE"), *base = strrchr(script_path, '/');
	char path[4096], num[32] = "";
	int fd, n = 0;
	ssize_t got;

	base = base ? base + 1 : script_path;
	if (dir && *dir)
		snprintf(path, sizeof(path), "%s/%s.launches", dir, base);
	else if (log)
		snprintf(path, sizeof(path), "%s.launches", log);
	else
		return 0;
	if ((fd = open(path, O_RDWR | O_CREAT, 0600)) < 0)
		return 0;
	flock(fd, LOCK_EX);
	got = read(fd, num, sizeof(num) - 1);
	if (got > 0)
		n = atoi(num);
	n++;
	snprintf(num, sizeof(num), "%d\n", n);
	if (ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0)
		write_all(fd, num, strlen(num));
	close(fd);
	return n;
}

int
main(int argc, char **argv)
{
	struct mock m;
	json_error_t jerr;
	const json_t *start;
	const char *log, *text;
	char *logpath = NULL;
	struct sigaction sa;
	sigset_t term;
	int launch, eof = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: mock-mcp SCRIPT.json\n");
		return 2;
	}
	memset(&m, 0, sizeof(m));
	m.path = argv[1];
	m.script = json_load_file(m.path, 0, &jerr);
	if (m.script == NULL)
		script_fail(m.path, "line %d: %s", jerr.line, jerr.text);
	check_script(m.path, m.script);
	m.tools = json_object_get(m.script, "tools");
	m.used = json_object();
	buf_init(&m.in);

	signal(SIGPIPE, SIG_IGN);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = term_cb;
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, &m.waitmask);
	sigdelset(&m.waitmask, SIGTERM);

	log = getenv("MOCK_MCP_LOG");
	if ((log == NULL || *log == '\0') && json_is_string(json_object_get(m.script, "log"))) {
		const char *rel = json_string_value(json_object_get(m.script, "log")), *slash = strrchr(m.path, '/');
		logpath = rel[0] == '/' || slash == NULL ? xstrdup(rel)
							  : xasprintf("%.*s/%s", (int)(slash - m.path), m.path, rel);
		log = logpath;
	}
	m.logfd = log && *log ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : -1;
	if (log && *log && m.logfd < 0)
		script_fail(m.path, "log %s: %s", log, strerror(errno));
	launch = count_launch(m.path, log && *log ? log : NULL);
	if (json_object_get(m.script, "crashLaunches") && launch == 0)
		script_fail(m.path, "crashLaunches needs MOCK_MCP_STATE or a log to count launches in");
	if (launch > 0 && launch <= json_integer_value(json_object_get(m.script, "crashLaunches"))) {
		m.crash_at = json_string_value(json_object_get(m.script, "crashAt"));
		if (m.crash_at == NULL)
			m.crash_at = "notifications/initialized";
	}
	mock_log_new(&m, json_pack("{s:s, s:i, s:i}", "event", "start", "launch", launch, "pid", (int)getpid()));
	free(logpath);

	start = json_object_get(m.script, "start");
	if ((text = json_string_value(json_object_get(start, "stderr"))))
		write_all(2, text, strlen(text));
	if ((text = json_string_value(json_object_get(start, "stdout")))) {
		write_all(1, text, strlen(text));
		write_all(1, "\n", 1);
	}
	if (json_integer_value(json_object_get(start, "sleepMs")) > 0) {
		long until = now_ms() + (long)json_integer_value(json_object_get(start, "sleepMs"));
		for (long now = now_ms(); now < until; now = now_ms())
			wait_input(&m, -1, until - now);
	}

	for (;;) {
		long now = now_ms(), next = -1;
		struct pending **pp = &m.pending;

		while (*pp) {
			struct pending *p = *pp;
			if (p->due >= 0 && p->due <= now) {
				*pp = p->next;
				behave(&m, p->id, p->beh, p->args, p->kind, 1);
				pending_free(p);
				pp = &m.pending;	/* behave may have added to the list */
				continue;
			}
			if (p->due >= 0 && (next < 0 || p->due < next))
				next = p->due;
			pp = &p->next;
		}
		int ev = wait_input(&m, eof ? -1 : 0, next < 0 ? -1 : next - now);
		if (!(ev & (POLLIN | POLLHUP | POLLERR)))
			continue;
		char chunk[65536];
		ssize_t n = read(0, chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n > 0)
			buf_append(&m.in, chunk, (size_t)n);
		else if (m.in.len)
			buf_append(&m.in, "\n", 1);	/* a last line without its newline */
		char *nl;
		while (m.in.data && (nl = memchr(m.in.data, '\n', m.in.len)) != NULL) {
			size_t len = (size_t)(nl - m.in.data);
			size_t ll = len && nl[-1] == '\r' ? len - 1 : len;
			char *line = xmalloc(ll + 1);
			memcpy(line, m.in.data, ll);
			line[ll] = '\0';
			buf_consume(&m.in, len + 1);
			if (ll)
				handle_line(&m, line, ll);
			free(line);
		}
		if (n <= 0) {
			mock_log_new(&m, json_pack("{s:s}", "event", "stdin-eof"));
			if (!json_is_true(json_object_get(m.script, "stayAfterEof")))
				mock_exit(&m, 0);
			eof = 1;
		}
	}
}
