/* The one mapping from session events to ACP session updates. */
#include "acp/updates.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jenc.h"
#include "base/jsonbuild.h"
#include "base/jsonraw.h"
#include "base/utf8.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "session/evtype.h"
#include "session/id.h"

json_t *
acp_update_chunk(int reasoning, const char *msg_id, const char *text, size_t len)
{
	json_t *t = xjson_text(text, len);

	return xjson_pack("{s:s, s:{s:s, s:o}, s:s}", "sessionUpdate",
	    reasoning ? ACP_UPDATE_THOUGHT_CHUNK : ACP_UPDATE_AGENT_CHUNK, "content", "type", "text",
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
	/* the fast builder for what its check takes; jansson decides the rest */
	json_t *j = raw ? json_build(raw, strlen(raw), 0) : NULL;

	if (j == NULL && raw)
		j = json_loads(raw, 0, NULL);

	if (j)
		return j;
	return json_string(raw ? raw : "");
}

/* Writes v in decimal at the end of buf (room for 21 bytes); returns the start. */
static char *
acp_decimal(char *end, long long v)
{
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	do
		*--end = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--end = '-';
	return end;
}

char *
acp_tool_call_id(long long turn, long long step, const char *call_id)
{
	/* "call-%lld-%lld-%s", without printf: a replay makes one per tool call */
	char t[24], s[24], *ts = acp_decimal(t + sizeof(t), turn), *ss = acp_decimal(s + sizeof(s), step);
	struct buf b;

	buf_init(&b);
	buf_reserve(&b, 5 + sizeof(t) + sizeof(s) + strlen(call_id) + 2);
	buf_puts(&b, "call-");
	buf_append(&b, ts, (size_t)(t + sizeof(t) - ts));
	buf_puts(&b, "-");
	buf_append(&b, ss, (size_t)(s + sizeof(s) - ss));
	buf_puts(&b, "-");
	buf_puts(&b, call_id);
	return buf_steal(&b);
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

	json_object_set_new(u, "sessionUpdate", json_string(ACP_UPDATE_TOOL_CALL));
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

/* Fills status, content and rawOutput of a tool update from a tool/result's data; how much of
 * the text and how an array output shows are the tool's (struct tool's shown_max, raw_key). */
static void
acp_tool_result_fields(json_t *u, const json_t *data, const struct toolbox *tb)
{
	const json_t *first = json_array_get(json_object_get(data, "content"), 0);
	const json_t *out = json_object_get(data, "output");
	const json_t *error = json_object_get(data, "error");
	const char *name = json_string_value(json_object_get(data, "name"));
	const struct tool *t = name ? toolbox_find(tb, name) : NULL;
	int is_error = json_is_true(json_object_get(data, "isError"));

	const json_t *diff = json_object_get(out, "diff");
	const char *text = json_string_value(json_object_get(first, "text"));
	size_t len = json_string_length(json_object_get(first, "text"));

	json_object_set_new(u, "status", json_string(is_error ? "failed" : "completed"));
	if (!is_error && json_is_object(diff)) {
		/* write and edit end on their diff, for the editor's review (docs/contract.md §16.5). */
		json_object_set_new(u, "content", json_pack("[O]", diff));
	} else {
		if (t && t->shown_max && len > t->shown_max)
			len = utf8_boundary(text, len, t->shown_max);
		json_object_set_new(u, "content", xjson_pack("[{s:s, s:{s:s, s:o}}]", "type", "content",
		    "content", "type", "text", "text", xjson_text(text ? text : "", len)));
	}
	/* rawOutput is an object: older clients drop an update whose rawOutput is an array, so
	 * list_agents' listing goes inside {"agents": [...]} (docs/contract.md §20), from old logs too. */
	if (json_is_array(out) && t && t->raw_key)
		json_object_set_new(u, "rawOutput", xjson_pack("{s:O}", t->raw_key, out));
	else if (out)
		json_object_set(u, "rawOutput", (json_t *)out);
	else if (is_error && error)
		json_object_set_new(u, "rawOutput", xjson_pack("{s:O}", "error", error));
}

/* _meta.acpAgent.agentId on updates about a delegation (docs/contract.md §3.4). */
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
acp_update_notice(const char *severity, const char *title, const char *description)
{
	json_t *u = xjson_pack("{s:s, s:s, s:o}", "sessionUpdate", ACP_UPDATE_NOTICE, "severity", severity, "title",
	    xjson_text(title, strlen(title)));

	if (description && *description)
		json_object_set_new(u, "description", xjson_text(description, strlen(description)));
	return u;
}

json_t *
acp_update_progress(const char *tool_call_id, const char *child_id, const char *text, const json_t *lead)
{
	json_t *content = lead ? json_deep_copy(lead) : json_array();
	json_t *u = xjson_pack("{s:s, s:s, s:s, s:o}", "sessionUpdate", "tool_call_update", "toolCallId",
	    tool_call_id, "status", "in_progress", "content", content);

	json_array_append_new(content, xjson_pack("{s:s, s:{s:s, s:o}}", "type", "content", "content", "type",
	    "text", "text", xjson_text(text, strlen(text))));

	acp_set_agent_meta(u, child_id);
	return u;
}

json_t *
acp_update_live(const json_t *ev, const struct toolbox *tb)
{
	enum sess_ev et = sess_ev_of(json_string_value(json_object_get(ev, "type")));
	const json_t *data = json_object_get(ev, "data");

	if (et == SESS_EV_TOOL_CALL) {
		json_t *u = acp_tool_call_update(acp_event_call_id(data),
		    json_string_value(json_object_get(data, "name")),
		    json_string_value(json_object_get(data, "arguments")), tb);
		acp_logged_title(u, json_object_get(data, "title"));
		acp_set_agent_meta(u, acp_args_agent(json_object_get(u, "rawInput")));
		return u;
	}
	if (et == SESS_EV_TOOL_RESULT) {
		char *tcid = acp_event_call_id(data);
		json_t *u = json_object();
		json_object_set_new(u, "sessionUpdate", json_string("tool_call_update"));
		json_object_set_new(u, "toolCallId", json_string(tcid));
		free(tcid);
		acp_tool_result_fields(u, data, tb);
		acp_set_agent_meta(u, json_string_value(json_object_get(data, "agentId")));
		return u;
	}
	return NULL;
}

/* What acp_replay_step below looks at. */
const char *const acp_replay_types[] = { "user/message", "assistant/message", "tool/call", "tool/result",
	"context/compacted", NULL };

void
acp_replay_init(struct acp_replay *r, acp_replay_pull_fn *pull, acp_replay_tree_fn *tree, void *arg,
    const struct toolbox *tb)
{
	memset(r, 0, sizeof(*r));
	r->pull = pull;
	r->tree = tree;
	r->arg = arg;
	r->tb = tb;
	r->calls = json_object();
	r->titles = json_object();
	buf_init(&r->out);
	buf_init(&r->tmp);
	json_tape_init(&r->tape);
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

/* The update for one block of a replayed user message (NULL when it cannot be made). */
static json_t *
acp_replay_user_block(const json_t *data, const json_t *blk)
{
	return xjson_pack("{s:s, s:O, s:O}", "sessionUpdate", ACP_UPDATE_USER_CHUNK, "content", blk,
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
	acp_tool_result_fields(u, data, r->tb);
	acp_set_agent_meta(u, json_string_value(json_object_get(data, "agentId")));
	if (cid) {	/* a result ends its call: what the replay holds stays small */
		json_object_del(r->calls, cid);
		json_object_del(r->titles, cid);
	}
	return u;
}

/*
 * The next update of the event r->ev, or NULL once it has shown all it shows (r->ev is then let
 * go). r->blk walks its content blocks, so a message with many blocks is cut between blocks like
 * any other.
 */
static json_t *
acp_replay_step_tree(struct acp_replay *r)
{
	const json_t *ev = r->ev;
	enum sess_ev et = sess_ev_of(json_string_value(json_object_get(ev, "type")));
	const json_t *data = json_object_get(ev, "data");
	const json_t *content = json_object_get(data, "content");
	json_t *u = NULL;

	if (et == SESS_EV_USER_MESSAGE) {
		const char *kind = json_string_value(json_object_get(json_object_get(data, "source"), "kind"));
		/* Injected messages (notices, relays) were never shown: not replayed. */
		if (kind && strcmp(kind, "user") == 0 && r->blk < json_array_size(content))
			return acp_replay_user_block(data, json_array_get(content, r->blk++));
	} else if (et == SESS_EV_ASSISTANT_MESSAGE) {
		while (u == NULL && r->blk < json_array_size(content))
			u = acp_replay_assistant_block(r, data, json_array_get(content, r->blk++));
		if (u)
			return u;
	} else if (et == SESS_EV_TOOL_CALL && json_object_get(data, "title")) {
		json_object_set(r->titles, json_string_value(json_object_get(data, "callId")),
		    json_object_get(data, "title"));
	} else if (et == SESS_EV_TOOL_RESULT && r->blk == 0) {
		r->blk = 1;
		return acp_replay_tool_result(r, data);
	} else if (et == SESS_EV_COMPACTED && r->compaction && r->blk == 0) {
		/* In place, as one completed update (docs/contract.md §20.1). */
		r->blk = 1;
		return acp_update_compaction(json_string_value(json_object_get(data, "id")), "completed",
		    json_string_value(json_object_get(data, "summary")), NULL);
	}
	json_decref(r->ev);
	r->ev = NULL;
	return NULL;
}

/*
 * The same mapping from an event's line, without its tree (docs/decisions.md, "Loading at scan speed": a session/load replays
 * hundreds of MB). Each update is written as the bytes jenc writes for the tree the functions
 * above build, and check_updates holds the two equal on every scenario log. A line these cannot
 * be sure of (an unusual shape, an escaped key or name, a real, \u0000) is said no to before
 * anything changes, and goes the tree's way.
 */
/* Ends one update in r->out. */
static void
acp_raw_end(struct acp_replay *r)
{
	if (r->nends == r->cap_ends) {
		r->cap_ends = r->cap_ends ? r->cap_ends * 2 : 16;
		r->ends = xrealloc(r->ends, r->cap_ends * sizeof(*r->ends));
	}
	r->ends[r->nends++] = r->out.len;
}

/* A string's value as a C string in r->tmp (from off): its start, or NULL when it is not a
 * string or holds \u0000. */
static const char *
acp_raw_cstr(struct acp_replay *r, const struct json_span *v, size_t *off)
{
	*off = r->tmp.len;
	if (v == NULL || json_raw_decode(v, &r->tmp) < 0)
		return NULL;
	buf_append(&r->tmp, "", 1);
	return r->tmp.data + *off;
}

/* A line being rendered: its tape, the members of the object last looked into, and whether a
 * look-up met something it cannot be sure of. */
struct acp_raw {
	struct acp_replay *r;
	const struct json_tape *tp;
	int unsure;
	size_t obj;		/* the object m holds (0: none yet) */
	int nm;
	struct json_tape_member m[JSON_TAPE_MAX_MEMBERS];
};

/* The token of key's value in the object at token o, or 0 (none; or unsure, noted). A value is
 * never token 0 (the line itself): o 0 is a value that was not there, and so is key's. The line's
 * own members are found with ACP_RAW_LINE. */
#define ACP_RAW_LINE ((size_t)-1)
static size_t
acp_raw_at(struct acp_raw *x, size_t o, const char *key)
{
	size_t kl = strlen(key);

	if (o == 0)
		return 0;
	if (o != x->obj) {	/* one walk per object: its look-ups go through its members */
		x->obj = o;
		x->nm = json_tape_members(x->tp, o == ACP_RAW_LINE ? 0 : o, x->m, JSON_TAPE_MAX_MEMBERS);
	}
	if (x->nm < 0) {
		x->unsure = 1;
		return 0;
	}
	for (int i = 0; i < x->nm; i++)
		if (x->m[i].klen == kl && memcmp(x->m[i].key, key, kl) == 0)
			return x->m[i].at;
	return 0;
}

/* The same as a span in *v, or NULL. */
static const struct json_span *
acp_raw_get(struct acp_raw *x, size_t o, const char *key, struct json_span *v)
{
	size_t at = acp_raw_at(x, o, key);

	if (at == 0)
		return NULL;
	*v = json_tape_span(x->tp, at);
	return v;
}

/* The array at token a: its first item, or 0 when it is not an array (unsure) or empty. */
static size_t
acp_raw_items(struct acp_raw *x, size_t a)
{
	if (a == 0 || *x->tp->t[a].s != '[') {
		x->unsure = 1;
		return 0;
	}
	return a + 1 < x->tp->t[a].end ? a + 1 : 0;
}

/* The item after item i of the array at token a, or 0. */
static size_t
acp_raw_item_next(struct acp_raw *x, size_t a, size_t i)
{
	return x->tp->t[i].end < x->tp->t[a].end ? x->tp->t[i].end : 0;
}

/* One chunk update, {"sessionUpdate":kind,"content":<pre><v><post>,"messageId":<id>}, as the
 * tree functions build it (acp_update_chunk, acp_replay_user_block); -1 when v or id cannot be
 * copied (r->out is then cut back by the caller's decline). */
static int
acp_raw_chunk(struct acp_replay *r, const char *kind, const char *pre, const struct json_span *v, const char *post,
    const struct json_span *id)
{
	buf_puts(&r->out, "{\"sessionUpdate\":\"");
	buf_puts(&r->out, kind);
	buf_puts(&r->out, "\",\"content\":");
	buf_puts(&r->out, pre);
	if (json_raw_copy(&r->out, v) < 0)
		return -1;
	buf_puts(&r->out, post);
	buf_puts(&r->out, ",\"messageId\":");
	if (json_raw_copy(&r->out, id) < 0)
		return -1;
	buf_puts(&r->out, "}");
	acp_raw_end(r);
	return 0;
}

static int
acp_raw_user(struct acp_raw *x, size_t d)
{
	struct acp_replay *r = x->r;
	struct json_span id, kind, blk;
	size_t src = acp_raw_at(x, d, "source"), content = acp_raw_at(x, d, "content");
	int k;

	if (src == 0)
		return x->unsure ? -1 : 0;	/* no source: not the user's */
	if (acp_raw_get(x, src, "kind", &kind) == NULL)
		return x->unsure ? -1 : 0;
	if ((k = json_raw_is(&kind, "user")) <= 0)
		return k;	/* injected (a notice, a relay): never shown */
	if (content == 0 || acp_raw_get(x, d, "id", &id) == NULL || x->unsure)
		return -1;
	for (size_t i = acp_raw_items(x, content); i; i = acp_raw_item_next(x, content, i)) {
		blk = json_tape_span(x->tp, i);
		if (acp_raw_chunk(r, ACP_UPDATE_USER_CHUNK, "", &blk, "", &id) < 0)
			return -1;
	}
	return x->unsure ? -1 : 0;
}

static int
acp_raw_assistant(struct acp_raw *x, size_t d, json_t *calls)
{
	struct acp_replay *r = x->r;
	struct json_span id, type, text, args, callid;
	size_t content = acp_raw_at(x, d, "content");
	const struct json_span *idp = acp_raw_get(x, d, "id", &id);
	int reasoning;

	if (content == 0)
		return x->unsure ? -1 : 0;
	for (size_t i = acp_raw_items(x, content); i; i = acp_raw_item_next(x, content, i)) {
		if (acp_raw_get(x, i, "type", &type) == NULL || (reasoning = json_raw_is(&type, "reasoning")) < 0)
			return -1;
		if (reasoning || json_raw_is(&type, "text") == 1) {
			if (acp_raw_get(x, i, "text", &text) == NULL || text.s[0] != '"' || idp == NULL || id.s[0] != '"')
				return -1;
			if (acp_raw_chunk(r, reasoning ? ACP_UPDATE_THOUGHT_CHUNK : ACP_UPDATE_AGENT_CHUNK,
			    "{\"type\":\"text\",\"text\":", &text, "}", &id) < 0)
				return -1;
		} else if (json_raw_is(&type, "tool-call") == 1) {
			/* what acp_replay_tool_result reads of it: the arguments, when they are a string */
			size_t coff, aoff;
			const char *cid = acp_raw_cstr(r, acp_raw_get(x, i, "callId", &callid), &coff);
			json_t *note;
			if (cid == NULL)
				return -1;
			note = json_object();
			if (acp_raw_get(x, i, "arguments", &args) && args.s[0] == '"') {
				if (acp_raw_cstr(r, &args, &aoff) == NULL) {
					json_decref(note);
					return -1;
				}
				json_object_set_new(note, "arguments", json_stringn_nocheck(r->tmp.data + aoff,
				    r->tmp.len - 1 - aoff));
			}
			json_object_set_new(calls, r->tmp.data + coff, note);
			r->tmp.len = 0;
		}
		if (x->unsure)
			return -1;
	}
	return x->unsure ? -1 : 0;
}

static int
acp_raw_result(struct acp_raw *x, size_t d)
{
	struct acp_replay *r = x->r;
	struct json_span turn, step, out, error, agent, iserr, name, callid, diff, text;
	const struct json_span *outp = acp_raw_get(x, d, "output", &out), *errp = acp_raw_get(x, d, "error", &error);
	const struct json_span *agentp = acp_raw_get(x, d, "agentId", &agent);
	size_t content = acp_raw_at(x, d, "content"), first;
	long long tn = 0, sn = 0;
	size_t noff, coff, aoff;
	const char *nm = acp_raw_cstr(r, acp_raw_get(x, d, "name", &name), &noff);
	const char *cid = acp_raw_cstr(r, acp_raw_get(x, d, "callId", &callid), &coff);
	int is_error = acp_raw_get(x, d, "isError", &iserr) && iserr.n == 4 && memcmp(iserr.s, "true", 4) == 0, k;
	json_t *input, *logged;
	char *tcid, *title;

	if (nm == NULL || cid == NULL || x->unsure || (acp_raw_get(x, d, "turn", &turn) && !json_raw_int(&turn, &tn)) ||
	    (acp_raw_get(x, d, "step", &step) && !json_raw_int(&step, &sn)))
		return -1;
	nm = r->tmp.data + noff;	/* r->tmp may have moved */
	cid = r->tmp.data + coff;
	const struct tool *tool = toolbox_find(r->tb, nm);	/* how its result shows */
	input = acp_raw_input(json_string_value(json_object_get(json_object_get(r->calls, cid), "arguments")));
	logged = json_object_get(r->titles, cid);
	title = acp_tool_title(r->tb, nm, json_is_object(input) ? input : NULL);
	tcid = acp_tool_call_id(tn, sn, cid);
	buf_puts(&r->out, "{\"sessionUpdate\":\"" ACP_UPDATE_TOOL_CALL "\",\"toolCallId\":");
	k = jenc_string(&r->out, tcid, strlen(tcid));
	buf_puts(&r->out, ",\"title\":");
	/* a title that is not UTF-8 is left out of the tree's update, and a logged one then goes last */
	k |= utf8_valid(title, strlen(title)) ? 0 : -1;
	k |= json_is_string(logged) ? jenc_append(&r->out, logged) : jenc_string(&r->out, title, strlen(title));
	free(tcid);
	free(title);
	buf_puts(&r->out, ",\"kind\":");
	jenc_string(&r->out, acp_tool_kind(r->tb, nm), strlen(acp_tool_kind(r->tb, nm)));
	buf_puts(&r->out, is_error ? ",\"status\":\"failed\",\"rawInput\":" : ",\"status\":\"completed\",\"rawInput\":");
	k |= jenc_append(&r->out, input);
	json_decref(input);
	if (k < 0)
		return -1;
	/* content: write and edit end on their diff; the others on their text (read: 4 KiB of it) */
	buf_puts(&r->out, ",\"content\":[");
	if (!is_error && outp && out.s[0] == '{' && acp_raw_get(x, acp_raw_at(x, d, "output"), "diff", &diff) &&
	    diff.s[0] == '{') {
		if (json_raw_copy(&r->out, &diff) < 0)
			return -1;
	} else {
		if (x->unsure || content == 0 || (first = acp_raw_items(x, content)) == 0 ||
		    acp_raw_get(x, first, "text", &text) == NULL || text.s[0] != '"')
			return -1;
		buf_puts(&r->out, "{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":");
		if (tool && tool->shown_max && text.n - 2 > tool->shown_max) {
			const char *t = acp_raw_cstr(r, &text, &aoff);
			size_t len = r->tmp.len - 1 - aoff;
			if (t == NULL)
				return -1;
			if (len > tool->shown_max)
				len = utf8_boundary(t, len, tool->shown_max);
			jenc_string(&r->out, t, len);
			cid = r->tmp.data + coff;
		} else if (json_raw_copy(&r->out, &text) < 0) {
			return -1;
		}
		buf_puts(&r->out, "}}");
	}
	buf_puts(&r->out, "]");
	/* rawOutput: as it was logged; list_agents' listing inside {"agents": [...]} (docs/contract.md §20) */
	if (outp && out.s[0] == '[' && tool && tool->raw_key) {
		buf_puts(&r->out, ",\"rawOutput\":{");
		jenc_string(&r->out, tool->raw_key, strlen(tool->raw_key));
		buf_puts(&r->out, ":");
		if (json_raw_copy(&r->out, &out) < 0)
			return -1;
		buf_puts(&r->out, "}");
	} else if (outp) {
		buf_puts(&r->out, ",\"rawOutput\":");
		if (json_raw_copy(&r->out, &out) < 0)
			return -1;
	} else if (is_error && errp) {
		buf_puts(&r->out, ",\"rawOutput\":{\"error\":");
		if (json_raw_copy(&r->out, &error) < 0)
			return -1;
		buf_puts(&r->out, "}");
	}
	if (agentp && agent.s[0] == '"') {
		const char *aid = acp_raw_cstr(r, &agent, &aoff);
		if (aid == NULL)
			return -1;
		if (sess_id_valid(aid)) {
			buf_puts(&r->out, ",\"_meta\":{\"acpAgent\":{\"agentId\":");
			jenc_string(&r->out, aid, strlen(aid));
			buf_puts(&r->out, "}}");
		}
		cid = r->tmp.data + coff;
	}
	if (x->unsure)
		return -1;
	buf_puts(&r->out, "}");
	acp_raw_end(r);
	/* a result ends its call: what the replay holds stays small */
	json_object_del(r->calls, cid);
	json_object_del(r->titles, cid);
	return 0;
}

/* Renders every update of the event whose line is s[0..n) into r->out; -1 when the tree must
 * (r->calls and r->titles are then as they were). */
static int
acp_replay_render(struct acp_replay *r, const char *s, size_t n)
{
	struct acp_raw x = { .r = r, .tp = &r->tape };
	struct json_span type;
	size_t d;
	json_t *calls;
	int k;

	r->out.len = r->tmp.len = 0;
	r->nends = r->next = 0;
	/* The line was checked when the session was loaded; what is copied out is checked again as
	 * it is copied (json_raw_copy), so the client never gets a broken message from it. */
	if (json_tape_build(&r->tape, s, n) < 0 || acp_raw_get(&x, ACP_RAW_LINE, "type", &type) == NULL ||
	    (d = acp_raw_at(&x, ACP_RAW_LINE, "data")) == 0 || *r->tape.t[d].s != '{' || x.unsure)
		return -1;
	if (json_raw_is(&type, "user/message") == 1)
		k = acp_raw_user(&x, d);
	else if (json_raw_is(&type, "tool/result") == 1)
		k = acp_raw_result(&x, d);
	else if (json_raw_is(&type, "tool/call") == 1)
		k = acp_raw_at(&x, d, "title") || x.unsure ? -1 : 0;	/* a logged title: the tree notes it */
	else if (json_raw_is(&type, "assistant/message") == 1) {
		calls = json_object();
		if ((k = acp_raw_assistant(&x, d, calls)) == 0)
			json_object_update(r->calls, calls);
		json_decref(calls);
	} else
		k = -1;		/* a compaction, or a type this does not know: the tree's */
	if (k < 0)
		r->nends = r->next = 0;
	return k;
}

/* Makes sure the current event has something left to show, pulling events as needed; 0 once
 * they are done. */
static int
acp_replay_fill(struct acp_replay *r)
{
	const char *line;
	size_t len;
	json_t *ev;

	while (r->ev == NULL && r->next == r->nends && !r->done) {
		r->blk = 0;
		r->nends = r->next = 0;
		line = r->pull(r->arg, &len, &ev);
		if (line) {
			if (acp_replay_render(r, line, len) == 0)
				continue;
			/* The tree functions trust the payload's shape: checked again (a lying line ends
			 * the replay, it never reaches them). */
			if ((ev = r->tree(r->arg, line, len)) == NULL) {
				r->done = 1;
				break;
			}
		} else if (ev == NULL) {
			r->done = 1;
			break;
		}
		r->ev = ev;
	}
	return r->ev != NULL || r->next < r->nends;
}

int
acp_replay_next_any(struct acp_replay *r, json_t **tree, const char **s, size_t *n)
{
	*tree = NULL;
	while (acp_replay_fill(r)) {
		if (r->next < r->nends) {
			size_t a = r->next ? r->ends[r->next - 1] : 0;
			*s = r->out.data + a;
			*n = r->ends[r->next++] - a;
			return 1;
		}
		if ((*tree = acp_replay_step_tree(r)) != NULL)
			return 1;
	}
	return 0;
}

int
acp_replay_done(struct acp_replay *r)
{
	return !acp_replay_fill(r);
}

size_t
acp_replay_next(struct acp_replay *r, size_t max, json_t *out)
{
	size_t n = 0, len;
	const char *s;
	json_t *u;

	while (n < max && acp_replay_next_any(r, &u, &s, &len)) {
		if (u == NULL && (u = json_loadb(s, len, 0, NULL)) == NULL)
			continue;	/* cannot be: the bytes are jenc's */
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
	buf_free(&r->out);
	buf_free(&r->tmp);
	json_tape_free(&r->tape);
	free(r->ends);
	r->ends = NULL;
	r->nends = r->next = r->cap_ends = 0;
}

const char *
acp_replay_array_pull(void *arg, size_t *len, json_t **ev)
{
	struct acp_replay_array *a = arg;

	*len = 0;
	*ev = a->next < a->end ? json_incref(json_array_get(a->events, a->next)) : NULL;
	if (*ev)
		a->next++;
	return NULL;
}

json_t *
acp_update_replay(const json_t *events, const struct toolbox *tb)
{
	struct acp_replay r;
	struct acp_replay_array src = { events, 0, json_array_size(events) };
	json_t *out = json_array();

	acp_replay_init(&r, acp_replay_array_pull, NULL, &src, tb);
	while (acp_replay_next(&r, SIZE_MAX, out) > 0)
		;
	acp_replay_free(&r);
	return out;
}
