/* The one mapping from session events to ACP session updates. */
#include "acp/updates.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "base/xjson.h"
#include "session/id.h"
#include "base/xmalloc.h"

json_t *
acp_update_chunk(int reasoning, const char *msg_id, const char *text, size_t len)
{
	json_t *t = xjson_text(text, len);

	return xjson_pack("{s:s, s:{s:s, s:o}, s:s}", "sessionUpdate",
	    reasoning ? "agent_thought_chunk" : "agent_message_chunk", "content", "type", "text",
	    "text", t, "messageId", msg_id);
}

char *
acp_tool_title(const struct toolbox *tb, const char *name, const json_t *args)
{
	const struct tool *t = toolbox_find(tb, name);

	if (t && t->title)
		return t->title(t, args);
	return xstrdup(name);
}

static const char *
acp_tool_kind(const struct toolbox *tb, const char *name)
{
	const struct tool *t = toolbox_find(tb, name);

	return t && t->kind ? t->kind : "other";
}

/* rawInput: the parsed arguments, or the raw text when they are not JSON. */
static json_t *
acp_raw_input(const char *raw)
{
	json_t *j = raw ? json_loads(raw, 0, NULL) : NULL;

	if (j)
		return j;
	return json_string(raw ? raw : "");
}

char *
acp_tool_call_id(long long turn, long long step, const char *call_id)
{
	return xasprintf("call-%lld-%lld-%s", turn, step, call_id);
}

/* The runtime's id of the call an event (tool/call, tool/result) is about. */
static char *
acp_event_call_id(const json_t *data)
{
	return acp_tool_call_id(json_integer_value(json_object_get(data, "turn")),
	    json_integer_value(json_object_get(data, "step")),
	    json_string_value(json_object_get(data, "callId")));
}

/* Takes tcid (owned). */
static json_t *
acp_tool_call_update(char *tcid, const char *name, const char *raw_args, const struct toolbox *tb)
{
	json_t *input = acp_raw_input(raw_args);
	char *title = acp_tool_title(tb, name, json_is_object(input) ? input : NULL);
	json_t *u = json_object();

	json_object_set_new(u, "sessionUpdate", json_string("tool_call"));
	json_object_set_new(u, "toolCallId", json_string(tcid));
	json_object_set_new(u, "title", json_string(title));
	json_object_set_new(u, "kind", json_string(acp_tool_kind(tb, name)));
	json_object_set_new(u, "status", json_string("in_progress"));
	json_object_set_new(u, "rawInput", input);
	free(title);
	free(tcid);
	return u;
}

/* A tool that comes and goes (MCP) logged its title with the call: the replay shows the same. */
static void
acp_logged_title(json_t *u, const json_t *title)
{
	if (json_is_string(title))
		json_object_set(u, "title", (json_t *)title);
}

#define ACP_READ_SHOWN 4096	/* bytes of a read's text its completed update shows */

/* Fills status, content and rawOutput of a tool update from a tool/result's data. */
static void
acp_tool_result_fields(json_t *u, const json_t *data)
{
	const json_t *first = json_array_get(json_object_get(data, "content"), 0);
	const json_t *out = json_object_get(data, "output");
	const json_t *error = json_object_get(data, "error");
	const char *name = json_string_value(json_object_get(data, "name"));
	int is_error = json_is_true(json_object_get(data, "isError"));

	const json_t *diff = json_object_get(out, "diff");
	const char *text = json_string_value(json_object_get(first, "text"));
	size_t len = json_string_length(json_object_get(first, "text"));

	json_object_set_new(u, "status", json_string(is_error ? "failed" : "completed"));
	if (!is_error && json_is_object(diff)) {
		/* write and edit end on their diff, for the editor's review (SPEC §16.5). */
		json_object_set_new(u, "content", json_pack("[O]", diff));
	} else {
		/* read shows at most 4 KiB of what the model got. */
		if (name && strcmp(name, "read") == 0 && len > ACP_READ_SHOWN)
			len = utf8_boundary(text, len, ACP_READ_SHOWN);
		json_object_set_new(u, "content", xjson_pack("[{s:s, s:{s:s, s:o}}]", "type", "content",
		    "content", "type", "text", "text", xjson_text(text ? text : "", len)));
	}
	/* rawOutput is an object: older clients drop an update whose rawOutput is an array, so
	 * list_agents' listing goes inside {"agents": [...]} (SPEC §20), from old logs too. */
	if (json_is_array(out) && name && strcmp(name, "list_agents") == 0)
		json_object_set_new(u, "rawOutput", xjson_pack("{s:O}", "agents", out));
	else if (out)
		json_object_set(u, "rawOutput", (json_t *)out);
	else if (is_error && error)
		json_object_set_new(u, "rawOutput", xjson_pack("{s:O}", "error", error));
}

/* _meta.acpAgent.agentId on updates about a delegation (SPEC §3.4). */
static void
acp_set_agent_meta(json_t *u, const char *agent_id)
{
	if (agent_id && sess_id_valid(agent_id))
		json_object_set_new(u, "_meta",
		    xjson_pack("{s:{s:s}}", "acpAgent", "agentId", agent_id));
}

/* The agent a call's arguments name (send_message, interrupt_agent), or NULL. */
static const char *
acp_args_agent(const json_t *input)
{
	return json_string_value(json_object_get(input, "agent_id"));
}

json_t *
acp_update_progress(const char *tool_call_id, const char *child_id, const char *text)
{
	json_t *u = xjson_pack("{s:s, s:s, s:s, s:[{s:s, s:{s:s, s:o}}]}", "sessionUpdate",
	    "tool_call_update", "toolCallId", tool_call_id, "status", "in_progress", "content",
	    "type",
	    "content", "content", "type", "text", "text", xjson_text(text, strlen(text)));

	acp_set_agent_meta(u, child_id);
	return u;
}

json_t *
acp_update_live(const json_t *ev, const struct toolbox *tb)
{
	const char *type = json_string_value(json_object_get(ev, "type"));
	const json_t *data = json_object_get(ev, "data");

	if (strcmp(type, "tool/call") == 0) {
		json_t *u = acp_tool_call_update(acp_event_call_id(data),
		    json_string_value(json_object_get(data, "name")),
		    json_string_value(json_object_get(data, "arguments")), tb);
		acp_logged_title(u, json_object_get(data, "title"));
		acp_set_agent_meta(u, acp_args_agent(json_object_get(u, "rawInput")));
		return u;
	}
	if (strcmp(type, "tool/result") == 0) {
		char *tcid = acp_event_call_id(data);
		json_t *u = json_object();
		json_object_set_new(u, "sessionUpdate", json_string("tool_call_update"));
		json_object_set_new(u, "toolCallId", json_string(tcid));
		free(tcid);
		acp_tool_result_fields(u, data);
		acp_set_agent_meta(u, json_string_value(json_object_get(data, "agentId")));
		return u;
	}
	return NULL;
}

/* What acp_replay_step below looks at. */
const char *const acp_replay_types[] = { "user/message", "assistant/message", "tool/call", "tool/result",
	"context/compacted", NULL };

void
acp_replay_init(struct acp_replay *r, acp_replay_pull_fn *pull, void *arg, const struct toolbox *tb)
{
	r->pull = pull;
	r->arg = arg;
	r->tb = tb;
	r->ev = NULL;
	r->done = 0;
	r->blk = 0;
	r->calls = json_object();
	r->titles = json_object();
	r->compaction = 0;
}

json_t *
acp_update_compaction(const char *id, const char *status, const char *summary, const char *error)
{
	json_t *u = xjson_pack("{s:s, s:s, s:s}", "sessionUpdate", "compaction_update", "compactionId", id,
	    "status", status);

	if (summary)
		json_object_set_new(u, "summary", xjson_pack("[{s:s, s:o}]", "type", "text", "text",
		    xjson_text(summary, strlen(summary))));
	if (error)
		json_object_set_new(u, "error", xjson_text(error, strlen(error)));
	return u;
}

json_t *
acp_update_usage(long long used, long long size)
{
	return xjson_pack("{s:s, s:I, s:I}", "sessionUpdate", "usage_update", "used", (json_int_t)used,
	    "size", (json_int_t)size);
}

/* The event being replayed (borrowed), pulled when needed; NULL once the events are done. */
static const json_t *
acp_replay_current(struct acp_replay *r)
{
	if (r->ev == NULL && !r->done) {
		r->ev = r->pull(r->arg);
		r->blk = 0;
		if (r->ev == NULL)
			r->done = 1;
	}
	return r->ev;
}

int
acp_replay_done(struct acp_replay *r)
{
	return acp_replay_current(r) == NULL;
}

/* The update for one block of a replayed user message (NULL when it cannot be made). */
static json_t *
acp_replay_user_block(const json_t *data, const json_t *blk)
{
	return xjson_pack("{s:s, s:O, s:O}", "sessionUpdate", "user_message_chunk", "content", blk,
	    "messageId", json_object_get(data, "id"));
}

/* The update for one block of an assistant message (text, reasoning), or NULL; notes tool calls. */
static json_t *
acp_replay_assistant_block(struct acp_replay *r, const json_t *data, const json_t *blk)
{
	const char *type = json_string_value(json_object_get(blk, "type"));

	if (strcmp(type, "text") == 0 || strcmp(type, "reasoning") == 0) {
		const char *text = json_string_value(json_object_get(blk, "text"));
		return acp_update_chunk(strcmp(type, "reasoning") == 0,
		    json_string_value(json_object_get(data, "id")), text, strlen(text));
	}
	if (strcmp(type, "tool-call") == 0)
		json_object_set(r->calls, json_string_value(json_object_get(blk, "callId")),
		    (json_t *)blk);
	return NULL;
}

static json_t *
acp_replay_tool_result(struct acp_replay *r, const json_t *data)
{
	const char *cid = json_string_value(json_object_get(data, "callId"));
	json_t *blk = json_object_get(r->calls, cid);
	json_t *u = acp_tool_call_update(acp_event_call_id(data),
		    json_string_value(json_object_get(data, "name")),
	    json_string_value(json_object_get(blk, "arguments")), r->tb);

	acp_logged_title(u, json_object_get(r->titles, cid));
	acp_tool_result_fields(u, data);
	acp_set_agent_meta(u, json_string_value(json_object_get(data, "agentId")));
	if (cid) {	/* a result ends its call: what the replay holds stays small */
		json_object_del(r->calls, cid);
		json_object_del(r->titles, cid);
	}
	return u;
}

/*
 * The next update, or NULL once the events are done. r->blk walks the content blocks of the
 * current event, so a message with many blocks is cut between blocks like any other.
 */
static json_t *
acp_replay_step(struct acp_replay *r)
{
	const json_t *ev;

	while ((ev = acp_replay_current(r)) != NULL) {
		const char *type = json_string_value(json_object_get(ev, "type"));
		const json_t *data = json_object_get(ev, "data");
		const json_t *content = json_object_get(data, "content");
		json_t *u = NULL;

		if (strcmp(type, "user/message") == 0) {
			const char *kind = json_string_value(json_object_get(json_object_get(data, "source"),
			    "kind"));
			/* Injected messages (notices, relays) were never shown: not replayed. */
			if (kind && strcmp(kind, "user") == 0 && r->blk < json_array_size(content)) {
				u = acp_replay_user_block(data, json_array_get(content, r->blk++));
				if (u)
					return u;
				continue;	/* a block it cannot show: the next one */
			}
		} else if (strcmp(type, "assistant/message") == 0) {
			while (u == NULL && r->blk < json_array_size(content))
				u = acp_replay_assistant_block(r, data, json_array_get(content, r->blk++));
			if (u)
				return u;
		} else if (strcmp(type, "tool/call") == 0 && json_object_get(data, "title")) {
			json_object_set(r->titles, json_string_value(json_object_get(data, "callId")),
			    json_object_get(data, "title"));
		} else if (strcmp(type, "tool/result") == 0 && r->blk == 0) {
			r->blk = 1;
			return acp_replay_tool_result(r, data);
		} else if (strcmp(type, "context/compacted") == 0 && r->compaction && r->blk == 0) {
			/* In place, as one completed update (SPEC §20.1). */
			r->blk = 1;
			return acp_update_compaction(json_string_value(json_object_get(data, "id")), "completed",
			    json_string_value(json_object_get(data, "summary")), NULL);
		}
		json_decref(r->ev);
		r->ev = NULL;
	}
	return NULL;
}

size_t
acp_replay_next(struct acp_replay *r, size_t max, json_t *out)
{
	size_t n = 0;
	json_t *u;

	while (n < max && (u = acp_replay_step(r)) != NULL) {
		json_array_append_new(out, u);
		n++;
	}
	return n;
}

void
acp_replay_free(struct acp_replay *r)
{
	json_decref(r->ev);
	json_decref(r->calls);
	json_decref(r->titles);
	r->ev = r->calls = r->titles = NULL;
}

json_t *
acp_replay_array_pull(void *arg)
{
	struct acp_replay_array *a = arg;
	json_t *ev = a->next < a->end ? json_array_get(a->events, a->next) : NULL;

	if (ev)
		a->next++;
	return json_incref(ev);
}

json_t *
acp_update_replay(const json_t *events, const struct toolbox *tb)
{
	struct acp_replay r;
	struct acp_replay_array src = { events, 0, json_array_size(events) };
	json_t *out = json_array();

	acp_replay_init(&r, acp_replay_array_pull, &src, tb);
	while (acp_replay_next(&r, SIZE_MAX, out) > 0)
		;
	acp_replay_free(&r);
	return out;
}
