/*
 * The steps of scenario.json (docs/contract.md §10.2, §20.1) and their templates: {{cwd}}, {{state}},
 * {{session:N}}, {{subagent:N}} and {{mcp:<name>}}.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/xjson.h"
#include "base/xmalloc.h"
#include "scenario/internal.h"

#define SCENARIO_STEP_BURST_MS 120000
#define SCENARIO_STEP_IDLE_MS 10000	/* waitIdle's timeoutMs */

/* The n-th child (from 1) the agent announced so far: the n-th distinct sessionId of its
 * subagent_update updates (docs/contract.md §22.1), into out (37 bytes); 0 when there is none. */
static int
scenario_subagent_id(struct scenario_run *r, long n, char *out, size_t size)
{
	json_t *seen = json_object();
	int found = 0;
	size_t i;
	json_t *line;

	json_array_foreach(r->lines, i, line) {
		const char *text = json_string_value(line);
		if (text == NULL || strstr(text, "\"sessionUpdate\":\"subagent_update\"") == NULL)
			continue;
		json_t *msg = json_loads(text, 0, NULL);
		const char *id = json_string_value(json_object_get(json_object_get(json_object_get(msg, "params"),
		    "update"), "sessionId"));
		if (id && json_object_get(seen, id) == NULL) {
			json_object_set_new(seen, id, json_true());
			if ((long)json_object_size(seen) == n) {
				snprintf(out, size, "%s", id);
				found = 1;
			}
		}
		json_decref(msg);
		if (found)
			break;
	}
	json_decref(seen);
	return found;
}

/* s with {{cwd}}, {{state}}, {{session:N}} and {{subagent:N}} replaced; owned. */
char *
scenario_subst(struct scenario_run *r, const char *s)
{
	struct buf b;

	buf_init(&b);
	while (*s) {
		if (strncmp(s, "{{cwd}}", 7) == 0) {
			buf_puts(&b, r->cwd);
			s += 7;
		} else if (strncmp(s, "{{state}}", 9) == 0) {
			buf_puts(&b, r->state);
			s += 9;
		} else if (strncmp(s, "{{subagent:", 11) == 0 && strstr(s, "}}")) {
			char id[64];
			buf_puts(&b, scenario_subagent_id(r, strtol(s + 11, NULL, 10), id, sizeof(id)) ? id :
			    "<no-such-subagent>");
			s = strstr(s, "}}") + 2;
		} else if (strncmp(s, "{{session:", 10) == 0 && strstr(s, "}}")) {
			long n = strtol(s + 10, NULL, 10);
			const char *id = json_string_value(json_array_get(r->sessions, (size_t)(n - 1)));
			buf_puts(&b, id ? id : "<no-such-session>");
			s = strstr(s, "}}") + 2;
		} else {
			buf_append(&b, s, 1);
			s++;
		}
	}
	return buf_steal(&b);
}

static json_t *
scenario_step_subst_string(void *arg, const json_t *v)
{
	struct scenario_run *r = arg;
	json_t *srv;

	if ((srv = scenario_mcp_subst(r, json_string_value(v))))
		return srv;
	if (json_string_length(v) == strlen(json_string_value(v))) {
		char *s = scenario_subst(r, json_string_value(v));
		json_t *o = json_string(s);
		free(s);
		return o;
	}
	return json_incref((json_t *)v);
}

/* v with every template replaced; a new reference. */
static json_t *
scenario_step_subst_json(struct scenario_run *r, json_t *v)
{
	return xjson_map_strings(v, scenario_step_subst_string, r);
}

/* Waits for the response with this id (any response when NULL) among the lines from index
 * from on; returns it as a new reference, or NULL (the scenario failed). */
static json_t *
scenario_step_wait_response(struct scenario_run *r, const json_t *id, size_t from)
{
	long deadline = scenario_now_ms() + SCENARIO_WAIT_MS;
	size_t i = from;

	for (;;) {
		for (; i < json_array_size(r->lines); i++) {
			json_t *m = json_loads(json_string_value(json_array_get(r->lines, i)), 0, NULL);
			int hit = m && !json_object_get(m, "method") && json_object_get(m, "id") &&
			    (id == NULL || json_equal(json_object_get(m, "id"), id));
			if (hit)
				return m;
			json_decref(m);
		}
		if (r->failure[0])
			return NULL;
		if (scenario_now_ms() > deadline) {
			scenario_fail(r, "timed out waiting for a response");
			return NULL;
		}
		if (scenario_proc_read(r, 100) < 0) {
			scenario_fail(r, "the agent closed stdout while a response was awaited");
			return NULL;
		}
	}
}

/* Sends msg (templates replaced; jsonrpc and, unless notify, an id added) and, unless notify
 * or nowait, waits for its response. msg: borrowed. */
static int
scenario_step_send(struct scenario_run *r, json_t *msg, int notify, int nowait)
{
	json_t *m, *resp;
	size_t from = json_array_size(r->lines);
	char *line;
	int rc = 0;

	if (!json_is_object(msg))
		return scenario_fail(r, "a send or notify step needs a message object");
	m = scenario_step_subst_json(r, msg);
	if (!json_object_get(m, "jsonrpc"))
		json_object_set_new(m, "jsonrpc", json_string("2.0"));
	if (!notify && !json_object_get(m, "id"))
		json_object_set_new(m, "id", json_integer(++r->next_id));
	scenario_pretty_client(r, m);
	line = json_dumps(m, JSON_COMPACT);
	size_t len = strlen(line);
	line = xrealloc(line, len + 2);
	memcpy(line + len, "\n", 2);
	rc = scenario_proc_write(r, line, len + 1);
	free(line);
	if (rc == 0 && !notify && !nowait) {
		resp = scenario_step_wait_response(r, json_object_get(m, "id"), from);
		if (resp == NULL) {
			rc = -1;
		} else {
			const char *method = json_string_value(json_object_get(m, "method"));
			json_t *sid = json_object_get(json_object_get(resp, "result"), "sessionId");
			if (method && strcmp(method, "session/new") == 0 && json_is_string(sid))
				json_array_append(r->sessions, sid);
			json_decref(resp);
		}
	}
	json_decref(m);
	return rc;
}

static int
scenario_step_raw(struct scenario_run *r, const char *data, size_t len, int wait)
{
	size_t from = json_array_size(r->lines);
	int rc = scenario_proc_write(r, data, len);
	json_t *resp;

	if (rc == 0 && wait) {
		resp = scenario_step_wait_response(r, NULL, from);
		if (resp == NULL)
			return -1;
		json_decref(resp);
	}
	return rc;
}

static int
scenario_step_wait_for(struct scenario_run *r, const char *needle)
{
	long deadline = scenario_now_ms() + SCENARIO_WAIT_MS;
	char *n;

	if (needle == NULL)
		return scenario_fail(r, "waitFor needs a string");
	n = scenario_subst(r, needle);
	for (;;) {
		for (; r->wait_cursor < json_array_size(r->lines); r->wait_cursor++) {
			if (strstr(json_string_value(json_array_get(r->lines, r->wait_cursor)), n)) {
				r->wait_cursor++;
				free(n);
				return 0;
			}
		}
		if (scenario_now_ms() > deadline || scenario_proc_read(r, 100) < 0) {
			scenario_fail(r, "waitFor \"%s\": not seen", n);
			free(n);
			return -1;
		}
	}
}

static long
scenario_step_hwm_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/*
 * {"burst": {"count": N, "method": M, "stallMs": S, "maxRssMb": R}}: N requests in one stream
 * while the runner stops reading for S ms; every response must come back, in order, and the
 * agent's peak RSS must stay under R MB. The responses stay out of the snapshot.
 */
static int
scenario_step_burst(struct scenario_run *r, const json_t *spec)
{
	long n = (long)json_integer_value(json_object_get(spec, "count"));
	const char *method = json_string_value(json_object_get(spec, "method"));
	long stall = (long)json_integer_value(json_object_get(spec, "stallMs"));
	long max_rss = (long)json_integer_value(json_object_get(spec, "maxRssMb"));
	struct buf out, in;
	size_t off = 0;
	long next = 1, deadline = scenario_now_ms() + SCENARIO_STEP_BURST_MS, resume = scenario_now_ms() + stall;
	int flags = fcntl(r->to_agent, F_GETFL);

	buf_init(&out);
	buf_init(&in);
	for (long i = 1; i <= n; i++)
		buf_printf(&out, "{\"jsonrpc\":\"2.0\",\"id\":\"b%ld\",\"method\":\"%s\",\"params\":{}}\n", i,
		    method ? method : "authenticate");
	fcntl(r->to_agent, F_SETFL, flags | O_NONBLOCK);
	while (next <= n && scenario_now_ms() < deadline) {
		struct pollfd p[2] = { { r->to_agent, POLLOUT, 0 }, { r->from_agent, POLLIN, 0 } };
		int reading = scenario_now_ms() >= resume;
		poll(p, 2, 20);
		if (off < out.len && (p[0].revents & POLLOUT)) {
			ssize_t w = write(r->to_agent, out.data + off, out.len - off);
			if (w > 0)
				off += (size_t)w;
		}
		if (!reading || !(p[1].revents & (POLLIN | POLLHUP)))
			continue;
		char chunk[65536];
		ssize_t got = read(r->from_agent, chunk, sizeof(chunk));
		if (got <= 0)
			break;
		buf_append(&in, chunk, (size_t)got);
		char *nl;
		while ((nl = memchr(in.data, '\n', in.len)) != NULL) {
			char want[48];
			snprintf(want, sizeof(want), "\"id\":\"b%ld\"", next);
			*nl = '\0';
			if (strstr(in.data, "\"id\":\"b")) {
				if (strstr(in.data, want) == NULL) {
					scenario_fail(r, "burst: response %ld out of order: %.80s", next, in.data);
					goto out;
				}
				next++;
			}
			buf_consume(&in, (size_t)(nl - in.data) + 1);
		}
	}
	if (next <= n)
		scenario_fail(r, "burst: only %ld of %ld responses came back", next - 1, n);
	long hwm = scenario_step_hwm_kb(r->pid);
	fprintf(stderr, "[burst: %ld requests answered in order; agent peak RSS %ld kB]\n", next - 1, hwm);
	/* Sanitizer and valgrind builds say nothing about the real footprint. */
	if (max_rss && hwm > max_rss * 1024 && !getenv("SCENARIO_NO_RSS_LIMIT"))
		scenario_fail(r, "burst: agent peak RSS %ld kB over %ld MB", hwm, max_rss);
out:
	fcntl(r->to_agent, F_SETFL, flags);
	buf_free(&out);
	buf_free(&in);
	return r->failure[0] ? -1 : 0;
}

static int
scenario_step_hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

static int
scenario_step_send_hex(struct scenario_run *r, const char *h, int wait)
{
	struct buf b;
	int rc;

	buf_init(&b);
	for (; h[0] && h[1]; h += 2) {
		while (*h == ' ')
			h++;
		char byte = (char)(scenario_step_hexval(h[0]) * 16 + scenario_step_hexval(h[1]));
		buf_append(&b, &byte, 1);
	}
	rc = scenario_step_raw(r, b.data, b.len, wait);
	buf_free(&b);
	return rc;
}

/* {"answer": {...}} / {"answerError": {...}}: registered before it is needed; used once, in
 * order (docs/contract.md §20.1). */
static int
scenario_step_answer(struct scenario_run *r, json_t *spec)
{
	json_t *a = scenario_step_subst_json(r, spec);

	if (!json_is_string(json_object_get(a, "method"))) {
		json_decref(a);
		return scenario_fail(r, "an answer step needs a method");
	}
	json_object_set_new(a, "used", json_false());
	json_array_append_new(r->answers, a);
	return 0;
}

static int
scenario_step_kill(struct scenario_run *r, const char *name, int expect)
{
	static const struct { const char *name; int sig; } sigs[] = {
		{ "TERM", SIGTERM }, { "INT", SIGINT }, { "HUP", SIGHUP }, { "QUIT", SIGQUIT },
	};

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (strcmp(name, sigs[i].name) == 0)
			return scenario_proc_stop(r, expect, sigs[i].sig);
	return scenario_fail(r, "kill: \"%s\" is not TERM, INT, HUP or QUIT", name);
}

/* Plays one step. step: borrowed. */
int
scenario_step_run(struct scenario_run *r, json_t *step)
{
	json_t *v;
	int expect = (int)json_integer_value(json_object_get(step, "expectExit"));
	int wait_response = json_is_true(json_object_get(step, "waitResponse"));

	if ((v = json_object_get(step, "send"))) {
		/* "await": false (docs/contract.md §20.1), or the older "noWait": true, sends without waiting */
		int nowait = json_is_false(json_object_get(step, "await")) ||
		    json_is_true(json_object_get(step, "noWait"));
		return scenario_step_send(r, v, 0, nowait);
	}
	if ((v = json_object_get(step, "answer")) || (v = json_object_get(step, "answerError")))
		return scenario_step_answer(r, v);
	if ((v = json_object_get(step, "notify")))
		return scenario_step_send(r, v, 1, 0);
	if ((v = json_object_get(step, "sendRaw"))) {
		if (!json_is_string(v))
			return scenario_fail(r, "sendRaw needs a string");
		char *s = scenario_subst(r, json_string_value(v));
		size_t len = strlen(s);
		s = xrealloc(s, len + 2);
		memcpy(s + len, "\n", 2);
		int rc = scenario_step_raw(r, s, len + 1, wait_response);
		free(s);
		return rc;
	}
	if ((v = json_object_get(step, "sendHex"))) {
		if (!json_is_string(v))
			return scenario_fail(r, "sendHex needs a string");
		return scenario_step_send_hex(r, json_string_value(v), wait_response);
	}
	if ((v = json_object_get(step, "burst")))
		return scenario_step_burst(r, v);
	if ((v = json_object_get(step, "mcpLog")))
		return scenario_mcp_log_step(r, v);
	if ((v = json_object_get(step, "waitFor")))
		return scenario_step_wait_for(r, json_string_value(v));
	if (json_object_get(step, "waitIdle")) {
		json_t *m = json_pack("{s:s, s:{s:i}}", "method", "_acp_agent/wait_idle", "params",
		    "timeoutMs", SCENARIO_STEP_IDLE_MS);
		int rc = scenario_step_send(r, m, 0, 0);
		json_decref(m);
		return rc;
	}
	if (json_object_get(step, "restart")) {
		if (r->pid > 0 && scenario_proc_stop(r, expect, 0) < 0)
			return -1;
		if (json_is_object(json_object_get(step, "env")))
			json_object_update(r->env_extra, json_object_get(step, "env"));
		return scenario_proc_start(r);
	}
	if (json_object_get(step, "eof"))
		return scenario_proc_stop(r, expect, 0);
	if ((v = json_object_get(step, "kill")))
		return scenario_step_kill(r, json_string_value(v) ? json_string_value(v) : "TERM", expect);
	if ((v = json_object_get(step, "sleepMs"))) {
		long until = scenario_now_ms() + (long)json_integer_value(v);
		while (scenario_now_ms() < until)
			scenario_proc_read(r, 10);
		return 0;
	}
	char *text = json_dumps(step, JSON_COMPACT | JSON_ENCODE_ANY);
	scenario_fail(r, "unknown step %.300s", text ? text : "?");
	free(text);
	return -1;
}
