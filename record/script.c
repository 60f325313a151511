/*
 * scenario.json as the session goes (docs/contract.md §10.2, §20.1): each client request is a send step
 * (its id kept, so the replay's answers carry the same ids), each notification a notify step;
 * a request whose response had not come before the client's next message gets "await": false,
 * and when its response comes before a later message, a waitFor of that response goes before
 * it. The client's answers to the agent's requests become answer / answerError steps placed
 * before the last step sent ahead of the request, so the runner has them when it is asked.
 */
#include "record/internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

/* The flat steps: each step's pre steps, then the step. New reference. */
static json_t *
script_flat(const struct record *r)
{
	json_t *out = json_array(), *s, *p;
	size_t i, k;

	json_array_foreach(r->steps, i, s) {
		json_array_foreach(json_object_get(s, "pre"), k, p) json_array_append(out, p);
		json_array_append(out, json_object_get(s, "step"));
	}
	return out;
}

int
record_write_scenario(struct record *r)
{
	json_t *steps = script_flat(r), *st;
	char *args = json_dumps(r->args, 0), *env = json_dumps(r->env, 0);
	struct buf b;
	size_t i;
	int rc;

	buf_init(&b);
	buf_printf(&b, "{\"args\": %s,\n \"env\": %s,\n \"steps\": [", args, env);
	json_array_foreach(steps, i, st) {
		char *t = json_dumps(st, 0);
		buf_printf(&b, "%s\n  %s", i ? "," : "", t);
		free(t);
	}
	buf_puts(&b, "]}\n");
	rc = record_write(r, "scenario.json", b.data, b.len, 0644);
	buf_free(&b);
	free(args);
	free(env);
	json_decref(steps);
	return rc;
}

/* The index of the entry of list whose "id" equals id, or -1. */
static long
script_find(const json_t *list, const json_t *id)
{
	size_t i;
	json_t *x;

	json_array_foreach(list, i, x) if (json_equal(json_object_get(x, "id"), id)) return (long)i;
	return -1;
}

/* Appends a step (steals step) with the waitFor steps due before it. */
static void
script_add(struct record *r, json_t *step)
{
	json_array_append_new(r->steps, xjson_pack("{s:o, s:o}", "pre", json_copy(r->ready), "step", step));
	json_array_clear(r->ready);
}

/* The client's next message: what it sent before without waiting for the answer did not wait. */
static void
script_unwait(struct record *r)
{
	size_t i;
	json_t *w;

	json_array_foreach(r->waiting, i, w) {
		json_t *entry = json_array_get(r->steps, (size_t)json_integer_value(json_object_get(w, "step")));
		json_object_set_new(json_object_get(entry, "step"), "await", json_false());
		json_array_append(r->loose, w);
	}
	json_array_clear(r->waiting);
}

/* MCP header and env values never reach the file (docs/contract.md §20.1). */
static void
script_redact(json_t *params)
{
	size_t i, k;
	json_t *srv, *pair;
	static const char *const lists[] = { "headers", "env" };

	json_array_foreach(json_object_get(params, "mcpServers"), i, srv) {
		for (size_t l = 0; l < 2; l++)
			json_array_foreach(json_object_get(srv, lists[l]), k, pair)
				if (json_is_object(pair) && json_object_get(pair, "value"))
					json_object_set_new(pair, "value", json_string(RECORD_REDACTED));
	}
}

/* A message from the client: a request or notification is a step. */
static void
script_message(struct record *r, json_t *msg)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *id = json_object_get(msg, "id"), *params = json_object_get(msg, "params");
	int request = id != NULL;

	script_unwait(r);
	if (strcmp(method, "session/new") == 0 || strcmp(method, "session/load") == 0 ||
	    strcmp(method, "session/resume") == 0)
		script_redact(params);
	if (r->cwd == NULL && strcmp(method, "session/new") == 0 && json_is_string(json_object_get(params, "cwd")))
		r->cwd = xstrdup(json_string_value(json_object_get(params, "cwd")));
	json_t *m = record_templ(r, msg);
	script_add(r, xjson_pack("{s:o}", request ? "send" : "notify", m));
	if (request)
		json_array_append_new(r->waiting, xjson_pack("{s:O, s:s, s:I}", "id", id, "method", method,
		    "step", (json_int_t)json_array_size(r->steps) - 1));
}

/* The client answered one of the agent's requests: an answer step before the one it followed. */
static void
script_answer(struct record *r, const json_t *msg)
{
	long i = script_find(r->asks, json_object_get(msg, "id"));
	json_t *ask, *a, *err = json_object_get(msg, "error");

	if (i < 0)
		return;		/* not one of ours, or timed out: the agent ignores it too */
	ask = json_array_get(r->asks, (size_t)i);
	a = xjson_pack("{s:O}", "method", json_object_get(ask, "method"));
	if (json_object_get(ask, "match"))
		json_object_set(a, "match", json_object_get(ask, "match"));
	if (err)
		json_object_set_new(a, "error", record_templ(r, err));
	else
		json_object_set_new(a, "result", record_templ(r, json_object_get(msg, "result")));
	json_t *entry = json_array_get(r->steps, (size_t)json_integer_value(json_object_get(ask, "step")));
	json_array_append_new(json_object_get(entry, "pre"), xjson_pack("{s:o}", err ? "answerError" : "answer", a));
	json_array_remove(r->asks, (size_t)i);
}

void
record_client_line(struct record *r, const char *line, size_t len)
{
	json_t *msg = json_loadb(line, len, JSON_ALLOW_NUL, NULL);

	if (r->eof)
		goto out;
	if (!json_is_object(msg) || (json_object_get(msg, "method") && !json_is_string(json_object_get(msg, "method")))) {
		/* Not a message: the bytes as they came (bad input replays as bad input). */
		size_t n;
		char *t = record_templ_str(r, line, len, &n);
		script_unwait(r);
		script_add(r, xjson_pack("{s:o}", "sendRaw", xjson_text(t, n)));
		free(t);
	} else if (json_object_get(msg, "method")) {
		script_message(r, msg);
	} else {
		script_answer(r, msg);
	}
	record_write_scenario(r);
out:
	json_decref(msg);
}

/*
 * The match of an answer: a substring of the request's compact params that names the call and
 * survives the replay (no UUID but those templated): the tool call id, else its title; the path
 * for fs requests. NULL: any request of the method. Owned.
 */
static char *
script_match(const struct record *r, const char *method, const json_t *params)
{
	json_t *p = record_templ(r, params), *tc = json_object_get(p, "toolCall");
	const json_t *cands[2] = { NULL, NULL };
	const char *keys[2] = { NULL, NULL };
	char *all = json_dumps(p, JSON_COMPACT), *match = NULL;

	if (strcmp(method, "session/request_permission") == 0) {
		cands[0] = json_object_get(tc, "toolCallId"), keys[0] = "toolCallId";
		cands[1] = json_object_get(tc, "title"), keys[1] = "title";
	} else if (strncmp(method, "fs/", 3) == 0) {
		cands[0] = json_object_get(p, "path"), keys[0] = "path";
	}
	for (size_t i = 0; i < 2 && match == NULL; i++) {
		if (!json_is_string(cands[i]))
			continue;
		char *v = json_dumps(cands[i], JSON_ENCODE_ANY);
		char *m = xasprintf("\"%s\":%s", keys[i], v);
		free(v);
		if (!record_has_uuid(m) && all && strstr(all, m))
			match = m;
		else
			free(m);
	}
	free(all);
	json_decref(p);
	return match;
}

/* The response to the client's request w: a new session's id is {{session:N}} from now on. */
static void
script_responded(struct record *r, const json_t *w, const json_t *msg)
{
	const json_t *sid = json_object_get(json_object_get(msg, "result"), "sessionId");

	if (strcmp(json_string_value(json_object_get(w, "method")), "session/new") == 0 && json_is_string(sid))
		json_array_append(r->sessions, (json_t *)sid);
}

void
record_agent_msg(struct record *r, const json_t *msg)
{
	const json_t *id = json_object_get(msg, "id");
	const char *method = json_string_value(json_object_get(msg, "method"));
	long i;

	if (id == NULL || r->eof)
		return;
	if (method) {
		/* One of the agent's requests: the client's answer is placed before the last step. */
		if (json_array_size(r->steps) == 0)
			return;
		char *match = script_match(r, method, json_object_get(msg, "params"));
		json_t *ask = xjson_pack("{s:O, s:s, s:I}", "id", id, "method", method, "step",
		    (json_int_t)json_array_size(r->steps) - 1);
		if (match)
			json_object_set_new(ask, "match", json_string(match));
		free(match);
		json_array_append_new(r->asks, ask);
		return;
	}
	if ((i = script_find(r->waiting, id)) >= 0) {
		script_responded(r, json_array_get(r->waiting, (size_t)i), msg);
		json_array_remove(r->waiting, (size_t)i);
	} else if ((i = script_find(r->loose, id)) >= 0) {
		script_responded(r, json_array_get(r->loose, (size_t)i), msg);
		/* Answered after the client moved on: the next step waits for it, as the client did. */
		char *jid = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
		char *needle = xasprintf("\"id\":%s,\"%s\"", jid, json_object_get(msg, "error") ? "error" : "result");
		json_array_append_new(r->ready, xjson_pack("{s:s}", "waitFor", needle));
		free(needle);
		free(jid);
		json_array_remove(r->loose, (size_t)i);
	}
}

void
record_eof(struct record *r, int idle)
{
	json_t *last;
	const char *method;

	if (r->eof)
		return;
	/* What is still unanswered at EOF was not waited for. */
	script_unwait(r);
	last = json_array_get(r->steps, json_array_size(r->steps) - 1);
	method = json_string_value(json_object_get(json_object_get(json_object_get(last, "step"), "send"), "method"));
	if (idle && (method == NULL || strcmp(method, "_acp_agent/wait_idle") != 0))
		script_add(r, json_pack("{s:b}", "waitIdle", 1));
	script_add(r, json_pack("{s:b}", "eof", 1));
	r->eof = 1;
	record_write_scenario(r);
}
