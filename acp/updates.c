/* The one mapping from session events to ACP session updates. */
#include "acp/updates.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/images.h"
#include "base/base64.h"
#include "base/blob.h"
#include "base/jenc.h"
#include "base/jsonbuild.h"
#include "base/jsonraw.h"
#include "base/log.h"
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

/* _meta.acpAgent.agentId on updates about a delegation (docs/contract.md §3.4). */
static void
acp_set_agent_meta(json_t *u, const char *agent_id)
{
	if (agent_id && sess_id_valid(agent_id))
		json_object_set_new(u, "_meta",
		    xjson_pack("{s:{s:s}}", "acpAgent", "agentId", agent_id));
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

/* What the replay shows something of (the others show nothing). */
const char *const acp_replay_types[] = { "user/message", "assistant/message", "tool/call", "tool/result",
	"context/compacted", "message/view", "plan/updated", NULL };

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
	buf_init(&r->canon);
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

/*
 * The one renderer (docs/decisions.md, "One update renderer"): every update about an event, live
 * or replayed, is written from the event's bytes through a tape of its tokens (base/jsonraw.h),
 * as the bytes jenc writes for the update. A replayed line is rendered as it lies in the log (a
 * session/load replays hundreds of MB without a tree per line); where the tape cannot be sure of
 * a look-up (an escaped or repeated key, an object of too many members, a shape not expected) it
 * says no before anything is kept, the line is checked again as a load checks it (r->tree), and
 * its canonical bytes (jenc of the checked tree) are rendered instead: on those every look-up is
 * sure. A live event, or a source of trees, is rendered from its canonical bytes at once. A value
 * the tape cannot copy byte for byte (a real, -0, a long integer, \u0000) is copied through
 * jansson; a string that holds \u0000 ends there where a C string is needed (a name, an id).
 * check_updates holds the two ways in equal on every scenario log.
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

/* v (a whole value) appended to out as jenc would append jansson's tree of it; -1 (out as it
 * was) when it is no JSON value (a line changed behind the replay). */
static int
acp_raw_value(struct buf *out, const struct json_span *v)
{
	json_t *j;
	size_t len = out->len;
	int k;

	if (v == NULL)
		return -1;
	if (json_raw_copy(out, v) == 0)
		return 0;
	if ((j = json_loadb(v->s, v->n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL)) == NULL)
		return -1;
	k = jenc_append(out, j);
	json_decref(j);
	if (k < 0)
		out->len = len;
	return k;
}

/* A string's value in r->tmp (from *off, *len bytes, a NUL after them): its start, or NULL when
 * it is not a string. Callers that need a C string (a name, an id) read up to the first NUL, as
 * json_string_value's readers do. */
static const char *
acp_raw_strn(struct acp_replay *r, const struct json_span *v, size_t *off, size_t *len)
{
	*off = r->tmp.len;
	if (v == NULL || v->n < 2 || v->s[0] != '"')
		return NULL;
	if (json_raw_decode(v, &r->tmp) < 0) {	/* \u0000: through jansson */
		json_t *j = json_loadb(v->s, v->n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (!json_is_string(j)) {
			json_decref(j);
			return NULL;
		}
		buf_append(&r->tmp, json_string_value(j), json_string_length(j));
		json_decref(j);
	}
	*len = r->tmp.len - *off;
	buf_append(&r->tmp, "", 1);
	return r->tmp.data + *off;
}

static const char *
acp_raw_cstr(struct acp_replay *r, const struct json_span *v, size_t *off)
{
	size_t len;

	return acp_raw_strn(r, v, off, &len);
}

/* An integer's value, as json_integer_value reads it (0 for anything else). */
static long long
acp_raw_intv(const struct json_span *v)
{
	long long x = 0;
	json_t *j;

	if (v == NULL || json_raw_int(v, &x))
		return x;
	j = json_loadb(v->s, v->n, JSON_DECODE_ANY, NULL);
	x = json_integer_value(j);
	json_decref(j);
	return x;
}

/* A line being rendered: its tape, the members of the object last looked into, and whether a
 * look-up met something it cannot be sure of. */
struct acp_raw {
	struct acp_replay *r;
	const struct json_tape *tp;
	int canonical;		/* jenc's bytes of a checked tree: every look-up is sure */
	int unsure;
	size_t obj;		/* the object m holds (0: none yet) */
	int nm;
	struct json_tape_member m[JSON_TAPE_MAX_MEMBERS];
};

/* Something not as expected: on a line as it lies, not sure (the check decides); on canonical
 * bytes, the tree's answer (nothing there). */
static void
acp_raw_doubt(struct acp_raw *x)
{
	if (!x->canonical)
		x->unsure = 1;
}

/* The token of key's value in the object at token o, or 0 (none; or unsure, noted). A value is
 * never token 0 (the line itself): o 0 is a value that was not there, and so is key's. The line's
 * own members are found with ACP_RAW_LINE. */
#define ACP_RAW_LINE ((size_t)-1)
static size_t
acp_raw_at(struct acp_raw *x, size_t o, const char *key)
{
	const struct json_tape *tp = x->tp;
	size_t kl = strlen(key), b = o == ACP_RAW_LINE ? 0 : o;

	if (o == 0)
		return 0;
	if (x->canonical) {
		/* jenc writes every key that is plain as it is, once: the first of its bytes is it */
		if (*tp->t[b].s != '{')
			return 0;
		for (size_t k = b + 1; k + 1 < tp->t[b].end; k = tp->t[k + 1].end)
			if (tp->t[k].n == kl + 2 && memcmp(tp->t[k].s + 1, key, kl) == 0)
				return k + 1;
		return 0;
	}
	if (o != x->obj) {	/* one walk per object: its look-ups go through its members */
		x->obj = o;
		x->nm = json_tape_members(tp, b, x->m, JSON_TAPE_MAX_MEMBERS);
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

/* 1 when v is the string s, 0 when it is not (on a line as it lies: -1 when the bytes cannot
 * say, an escape; canonical bytes hold none where s could be). */
static int
acp_raw_eq(struct acp_raw *x, const struct json_span *v, const char *s)
{
	int k = v ? json_raw_is(v, s) : 0;

	if (k < 0 && x->canonical)
		return 0;
	if (k < 0)
		acp_raw_doubt(x);	/* an escape, or no string: the check decides */
	return k;
}

/* The array at token a: its first item, or 0 when it is not an array (doubt) or empty. */
static size_t
acp_raw_items(struct acp_raw *x, size_t a)
{
	if (a == 0 || *x->tp->t[a].s != '[') {
		acp_raw_doubt(x);
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

/* One chunk update, {"sessionUpdate":kind,"content":<pre><v><post>,"messageId":<id>}; -1 when v
 * or id cannot be copied. */
static int
acp_raw_chunk(struct acp_replay *r, const char *kind, const char *pre, const struct json_span *v, const char *post,
    const struct json_span *id)
{
	buf_puts(&r->out, "{\"sessionUpdate\":\"");
	buf_puts(&r->out, kind);
	buf_puts(&r->out, "\",\"content\":");
	buf_puts(&r->out, pre);
	if (acp_raw_value(&r->out, v) < 0)
		return -1;
	buf_puts(&r->out, post);
	buf_puts(&r->out, ",\"messageId\":");
	if (acp_raw_value(&r->out, id) < 0)
		return -1;
	buf_puts(&r->out, "}");
	acp_raw_end(r);
	return 0;
}

/* An image block as the client sent it, {type, mimeType, data}: its blob read back and encoded
 * (docs/contract.md §27); a blob that is gone or changed shows as a text block saying so. */
static int
acp_raw_image(struct acp_raw *x, size_t blk, const struct json_span *id)
{
	struct acp_replay *r = x->r;
	struct json_span mime, name, bytes;
	size_t off, len;
	const char *blob = acp_raw_cstr(r, acp_raw_get(x, blk, "blob", &name), &off);
	long long n = acp_raw_intv(acp_raw_get(x, blk, "bytes", &bytes));
	unsigned char *data = NULL;
	struct err e;
	char *dir;

	if (blob == NULL || acp_raw_get(x, blk, "mimeType", &mime) == NULL || mime.s[0] != '"') {
		acp_raw_doubt(x);
		return 0;
	}
	err_clear(&e);
	dir = xasprintf("%s/blobs", r->state_dir ? r->state_dir : ".");
	if (n <= 0)
		err_set(&e, ERR_INTERNAL, "image blob %s has no bytes", blob);
	else
		data = blob_read(dir, blob, (size_t)n, &e);
	free(dir);
	if (data == NULL) {
		char *text = xasprintf(ACP_IMAGE_GONE, e.msg);
		json_t *t = json_string(text);
		log_warn("acp: %s", e.msg);
		buf_puts(&r->out, "{\"sessionUpdate\":\"" ACP_UPDATE_USER_CHUNK "\",\"content\":{\"type\":\"text\",\"text\":");
		jenc_append(&r->out, t);
		json_decref(t);
		free(text);
	} else {
		buf_puts(&r->out, "{\"sessionUpdate\":\"" ACP_UPDATE_USER_CHUNK "\",\"content\":{\"type\":\"image\",\"mimeType\":");
		if (acp_raw_value(&r->out, &mime) < 0) {
			free(data);
			return -1;
		}
		buf_puts(&r->out, ",\"data\":\"");
		len = BASE64_ENCODED_LEN((size_t)n);
		buf_reserve(&r->out, len);
		r->out.len += base64_encode(data, (size_t)n, r->out.data + r->out.len);
		buf_puts(&r->out, "\"");
		free(data);
	}
	buf_puts(&r->out, "},\"messageId\":");
	if (acp_raw_value(&r->out, id) < 0)
		return -1;
	buf_puts(&r->out, "}");
	acp_raw_end(r);
	return 0;
}

/* A user message: each block as a user_message_chunk, when the person wrote it (injected
 * messages, notices and relays, were never shown). */
static int
acp_raw_user(struct acp_raw *x, size_t d)
{
	struct acp_replay *r = x->r;
	struct json_span id, kind, blk;
	size_t src = acp_raw_at(x, d, "source"), content = acp_raw_at(x, d, "content");
	int k;

	if (src == 0 || acp_raw_get(x, src, "kind", &kind) == NULL)
		return x->unsure ? -1 : 0;	/* no source: not the user's */
	if ((k = acp_raw_eq(x, &kind, "user")) <= 0)
		return k;
	if (content == 0 || acp_raw_get(x, d, "id", &id) == NULL) {
		acp_raw_doubt(x);
		return x->unsure ? -1 : 0;
	}
	for (size_t i = acp_raw_items(x, content); i; i = acp_raw_item_next(x, content, i)) {
		struct json_span type;
		int image = acp_raw_get(x, i, "type", &type) ? acp_raw_eq(x, &type, "image") : 0;
		if (image < 0)
			return -1;
		if (image) {
			if (acp_raw_image(x, i, &id) < 0)
				return -1;
			continue;
		}
		blk = json_tape_span(x->tp, i);
		if (acp_raw_chunk(r, ACP_UPDATE_USER_CHUNK, "", &blk, "", &id) < 0)
			return -1;
	}
	return x->unsure ? -1 : 0;
}

/* An assistant message: text and reasoning as chunks; its tool calls' arguments are kept in
 * calls for their results. */
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
	for (size_t i = acp_raw_items(x, content); i && !x->unsure; i = acp_raw_item_next(x, content, i)) {
		if (acp_raw_get(x, i, "type", &type) == NULL || type.s[0] != '"') {
			acp_raw_doubt(x);
			continue;
		}
		if ((reasoning = acp_raw_eq(x, &type, "reasoning")) < 0)
			return -1;
		if (reasoning || acp_raw_eq(x, &type, "text") == 1) {
			if (acp_raw_get(x, i, "text", &text) == NULL || text.s[0] != '"' || idp == NULL || id.s[0] != '"') {
				acp_raw_doubt(x);
				continue;
			}
			if (acp_raw_chunk(r, reasoning ? ACP_UPDATE_THOUGHT_CHUNK : ACP_UPDATE_AGENT_CHUNK,
			    "{\"type\":\"text\",\"text\":", &text, "}", &id) < 0)
				return -1;
		} else if (acp_raw_eq(x, &type, "tool-call") == 1) {
			/* what the call's result reads of it: the arguments, when they are a string */
			size_t coff, aoff;
			const char *cid = acp_raw_cstr(r, acp_raw_get(x, i, "callId", &callid), &coff);
			json_t *note;
			if (cid == NULL) {
				acp_raw_doubt(x);
				continue;
			}
			note = json_object();
			if (acp_raw_get(x, i, "arguments", &args) && args.s[0] == '"' &&
			    acp_raw_cstr(r, &args, &aoff) != NULL)
				json_object_set_new(note, "arguments",
				    json_stringn_nocheck(r->tmp.data + aoff, strlen(r->tmp.data + aoff)));
			json_object_set_new(calls, r->tmp.data + coff, note);
			r->tmp.len = 0;
		}
	}
	return x->unsure ? -1 : 0;
}

/* A tool call that logged its title (a tool that comes and goes, MCP): kept for its result. */
static int
acp_raw_call(struct acp_raw *x, size_t d, json_t *titles)
{
	struct acp_replay *r = x->r;
	struct json_span title, callid;
	size_t coff, toff, tlen;
	const char *cid, *t;

	if (acp_raw_get(x, d, "title", &title) == NULL)
		return x->unsure ? -1 : 0;
	cid = acp_raw_cstr(r, acp_raw_get(x, d, "callId", &callid), &coff);
	t = acp_raw_strn(r, &title, &toff, &tlen);
	if (cid == NULL || t == NULL)
		acp_raw_doubt(x);
	if (x->unsure)
		return -1;
	if (cid && t)
		json_object_set_new(titles, r->tmp.data + coff, json_stringn_nocheck(r->tmp.data + toff, tlen));
	r->tmp.len = 0;
	return 0;
}

/* The head of a tool_call update: its id, title, kind, status and rawInput, from the call's
 * arguments (raw, may be NULL) and the title it logged (may be NULL). A title that is not UTF-8
 * is left out, and a logged one then follows rawInput (*late). -1 when it cannot be written. */
static int
acp_raw_call_head(struct acp_replay *r, const char *tcid, const char *name, const char *raw, const json_t *logged,
    const char *status, int *late, json_t **input)
{
	char *title;
	int k;

	*input = acp_raw_input(raw);
	title = acp_tool_title(r->tb, name, json_is_object(*input) ? *input : NULL);
	buf_puts(&r->out, "{\"sessionUpdate\":\"" ACP_UPDATE_TOOL_CALL "\",\"toolCallId\":");
	k = jenc_string(&r->out, tcid, strlen(tcid));
	*late = !utf8_valid(title, strlen(title)) && json_is_string(logged);
	if (utf8_valid(title, strlen(title))) {
		buf_puts(&r->out, ",\"title\":");
		k |= json_is_string(logged) ? jenc_append(&r->out, logged) : jenc_string(&r->out, title, strlen(title));
	}
	free(title);
	buf_puts(&r->out, ",\"kind\":");
	k |= jenc_string(&r->out, acp_tool_kind(r->tb, name), strlen(acp_tool_kind(r->tb, name)));
	buf_puts(&r->out, ",\"status\":\"");
	buf_puts(&r->out, status);
	buf_puts(&r->out, "\",\"rawInput\":");
	k |= jenc_append(&r->out, *input);
	if (*late) {
		buf_puts(&r->out, ",\"title\":");
		k |= jenc_append(&r->out, logged);
	}
	return k < 0 ? -1 : 0;
}

/* ,"_meta":{"acpAgent":{"agentId":id}} on updates about a delegation (docs/contract.md §3.4). */
static int
acp_raw_agent_meta(struct acp_replay *r, const char *aid)
{
	if (aid == NULL || !sess_id_valid(aid))
		return 0;
	buf_puts(&r->out, ",\"_meta\":{\"acpAgent\":{\"agentId\":");
	jenc_string(&r->out, aid, strlen(aid));
	buf_puts(&r->out, "}}");
	return 0;
}

/* The fields of a result: content (write and edit end on their diff, the others on their text,
 * as much as the tool shows), rawOutput (as logged; an array inside {raw_key: ...}, for older
 * clients), _meta. */
static int
acp_raw_result_fields(struct acp_raw *x, size_t d, const struct tool *tool, int is_error)
{
	struct acp_replay *r = x->r;
	struct json_span out, error, agent, diff, text;
	const struct json_span *outp = acp_raw_get(x, d, "output", &out), *errp = acp_raw_get(x, d, "error", &error);
	const struct json_span *agentp = acp_raw_get(x, d, "agentId", &agent);
	size_t content = acp_raw_at(x, d, "content"), first = 0, aoff;
	struct json_span link;
	/* the child a call made: its agentId, or a link of its own (a teammate's: no _meta) */
	const struct json_span *linkp = agentp ? &agent : acp_raw_get(x, d, "linkedSessionId", &link);

	buf_puts(&r->out, ",\"content\":[");
	/* the call that made a child links it, first (docs/contract.md §22.1) */
	if (r->subagents && tool && tool->links_agent && linkp && linkp->s[0] == '"') {
		const char *aid = acp_raw_cstr(r, linkp, &aoff);
		if (aid && sess_id_valid(aid)) {
			snprintf(r->linked, sizeof(r->linked), "%s", aid);
			buf_puts(&r->out, "{\"type\":\"session\",\"sessionId\":");
			jenc_string(&r->out, aid, strlen(aid));
			buf_puts(&r->out, "},");
		}
	}
	if (!is_error && outp && out.s[0] == '{' && acp_raw_get(x, acp_raw_at(x, d, "output"), "diff", &diff) &&
	    diff.s[0] == '{') {
		if (acp_raw_value(&r->out, &diff) < 0)
			return -1;
	} else {
		const struct json_span *tx = NULL;
		if (content && (first = acp_raw_items(x, content)) != 0)
			tx = acp_raw_get(x, first, "text", &text);
		if (tx == NULL || text.s[0] != '"') {
			acp_raw_doubt(x);	/* the tree shows "" */
			tx = NULL;
		}
		if (x->unsure)
			return -1;
		buf_puts(&r->out, "{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":");
		if (tx == NULL) {
			buf_puts(&r->out, "\"\"");
		} else if (tool && tool->shown_max && text.n - 2 > tool->shown_max) {
			size_t len = 0;
			const char *t = acp_raw_strn(r, &text, &aoff, &len);
			if (t == NULL) {
				acp_raw_doubt(x);
				return x->unsure ? -1 : 0;
			}
			if (len > tool->shown_max)
				len = utf8_boundary(t, len, tool->shown_max);
			jenc_string(&r->out, t, len);
		} else if (acp_raw_value(&r->out, &text) < 0) {
			return -1;
		}
		buf_puts(&r->out, "}}");
	}
	buf_puts(&r->out, "]");
	if (outp && out.s[0] == '[' && tool && tool->raw_key) {
		buf_puts(&r->out, ",\"rawOutput\":{");
		jenc_string(&r->out, tool->raw_key, strlen(tool->raw_key));
		buf_puts(&r->out, ":");
		if (acp_raw_value(&r->out, &out) < 0)
			return -1;
		buf_puts(&r->out, "}");
	} else if (outp) {
		buf_puts(&r->out, ",\"rawOutput\":");
		if (acp_raw_value(&r->out, &out) < 0)
			return -1;
	} else if (is_error && errp) {
		buf_puts(&r->out, ",\"rawOutput\":{\"error\":");
		if (acp_raw_value(&r->out, &error) < 0)
			return -1;
		buf_puts(&r->out, "}");
	}
	if (agentp && agent.s[0] == '"') {
		const char *aid = acp_raw_cstr(r, &agent, &aoff);
		if (aid == NULL)
			acp_raw_doubt(x);
		acp_raw_agent_meta(r, aid);
	}
	return x->unsure ? -1 : 0;
}

/* A number the toolCallId is made of: on canonical bytes as json_integer_value reads it; on a line
 * as it lies, a plain integer (anything else: the check decides). */
static long long
acp_raw_num(struct acp_raw *x, const struct json_span *v)
{
	long long n;

	if (v == NULL || x->canonical)
		return acp_raw_intv(v);
	if (json_raw_int(v, &n))
		return n;
	acp_raw_doubt(x);
	return 0;
}

/* The toolCallId of the call an event (tool/call, tool/result) is about, into *tcid (owned), with
 * its name and the provider's id at *noff and *coff in r->tmp; -1 when it has no name or id. */
static int
acp_raw_call_ids(struct acp_raw *x, size_t d, char **tcid, size_t *noff, size_t *coff)
{
	struct acp_replay *r = x->r;
	struct json_span turn, step, name, callid;
	long long tn = acp_raw_num(x, acp_raw_get(x, d, "turn", &turn));
	long long sn = acp_raw_num(x, acp_raw_get(x, d, "step", &step));

	if (acp_raw_cstr(r, acp_raw_get(x, d, "name", &name), noff) == NULL ||
	    acp_raw_cstr(r, acp_raw_get(x, d, "callId", &callid), coff) == NULL || x->unsure) {
		acp_raw_doubt(x);
		return -1;
	}
	*tcid = acp_tool_call_id(tn, sn, r->tmp.data + *coff);
	return 0;
}

/* Whether a result's isError is true. */
static int
acp_raw_is_error(struct acp_raw *x, size_t d)
{
	struct json_span v;

	return acp_raw_get(x, d, "isError", &v) && v.n == 4 && memcmp(v.s, "true", 4) == 0;
}

/* A replayed result: the whole call, completed or failed, as one tool_call. */
static int
acp_raw_result(struct acp_raw *x, size_t d)
{
	struct acp_replay *r = x->r;
	size_t noff, coff;
	int is_error = acp_raw_is_error(x, d);
	int late, k;
	json_t *input;
	char *tcid;

	if (acp_raw_call_ids(x, d, &tcid, &noff, &coff) < 0)
		return x->unsure ? -1 : 0;
	const char *cid = r->tmp.data + coff;
	const struct tool *tool = toolbox_find(r->tb, r->tmp.data + noff);
	k = acp_raw_call_head(r, tcid, r->tmp.data + noff,
	    json_string_value(json_object_get(json_object_get(r->calls, cid), "arguments")),
	    json_object_get(r->titles, cid), is_error ? "failed" : "completed", &late, &input);
	json_decref(input);
	free(tcid);
	if (k < 0 || acp_raw_result_fields(x, d, tool, is_error) < 0)
		return -1;
	buf_puts(&r->out, "}");
	acp_raw_end(r);
	/* a result ends its call: what the replay holds stays small */
	cid = r->tmp.data + coff;
	json_object_del(r->calls, cid);
	json_object_del(r->titles, cid);
	return 0;
}

/* The live updates of a call and of its result (docs/contract.md §3.4): tool_call in_progress,
 * then tool_call_update with how it ended. */
static int
acp_raw_live_call(struct acp_raw *x, size_t d)
{
	struct acp_replay *r = x->r;
	struct json_span args, title;
	size_t noff, coff, aoff, toff, tlen = 0;
	const char *raw, *logged;
	json_t *input, *lt;
	char *tcid;
	int late, k;

	if (acp_raw_call_ids(x, d, &tcid, &noff, &coff) < 0)
		return -1;
	raw = acp_raw_cstr(r, acp_raw_get(x, d, "arguments", &args), &aoff);
	logged = acp_raw_strn(r, acp_raw_get(x, d, "title", &title), &toff, &tlen);
	lt = logged ? json_stringn_nocheck(r->tmp.data + toff, tlen) : NULL;
	k = acp_raw_call_head(r, tcid, r->tmp.data + noff, raw ? r->tmp.data + aoff : NULL, lt, "in_progress", &late,
	    &input);
	free(tcid);
	json_decref(lt);
	if (k == 0)
		acp_raw_agent_meta(r, json_string_value(json_object_get(input, "agent_id")));
	json_decref(input);
	if (k < 0)
		return -1;
	buf_puts(&r->out, "}");
	acp_raw_end(r);
	return 0;
}

static int
acp_raw_live_result(struct acp_raw *x, size_t d)
{
	struct acp_replay *r = x->r;
	size_t noff, coff;
	int is_error = acp_raw_is_error(x, d);
	char *tcid;

	if (acp_raw_call_ids(x, d, &tcid, &noff, &coff) < 0)
		return -1;
	buf_puts(&r->out, "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":");
	jenc_string(&r->out, tcid, strlen(tcid));
	free(tcid);
	buf_puts(&r->out, is_error ? ",\"status\":\"failed\"" : ",\"status\":\"completed\"");
	if (acp_raw_result_fields(x, d, toolbox_find(r->tb, r->tmp.data + noff), is_error) < 0)
		return -1;
	buf_puts(&r->out, "}");
	acp_raw_end(r);
	return 0;
}

/* A compaction, in place, as one completed update (docs/contract.md §20.1). */
static int
acp_raw_compacted(struct acp_raw *x, size_t d)
{
	struct acp_replay *r = x->r;
	struct json_span id, summary;

	if (acp_raw_get(x, d, "id", &id) == NULL || id.s[0] != '"') {
		acp_raw_doubt(x);
		return x->unsure ? -1 : 0;
	}
	buf_puts(&r->out, "{\"sessionUpdate\":\"compaction_update\",\"compactionId\":");
	if (acp_raw_value(&r->out, &id) < 0)
		return -1;
	buf_puts(&r->out, ",\"status\":\"completed\"");
	if (acp_raw_get(x, d, "summary", &summary) && summary.s[0] != '"')
		acp_raw_doubt(x);
	else if (acp_raw_get(x, d, "summary", &summary)) {
		buf_puts(&r->out, ",\"summary\":[{\"type\":\"text\",\"text\":");
		if (acp_raw_value(&r->out, &summary) < 0)
			return -1;
		buf_puts(&r->out, "}]");
	}
	buf_puts(&r->out, "}");
	acp_raw_end(r);
	return x->unsure ? -1 : 0;
}

/* A message between agents (docs/contract.md §22.2), for a client that shows children: the
 * logged view as a session_message upsert, its fields copied in one order. */
static int
acp_raw_view(struct acp_raw *x, size_t d)
{
	static const char *const keys[] = { "messageId", "senderSessionId", "recipientSessionId", "senderMessageId",
		"recipientMessageId", "content", NULL };
	struct acp_replay *r = x->r;
	struct json_span v;

	if (acp_raw_at(x, d, "messageId") == 0 || acp_raw_at(x, d, "content") == 0) {
		acp_raw_doubt(x);
		return x->unsure ? -1 : 0;
	}
	buf_puts(&r->out, "{\"sessionUpdate\":\"" ACP_UPDATE_SESSION_MESSAGE "\"");
	for (size_t i = 0; keys[i]; i++) {
		if (acp_raw_get(x, d, keys[i], &v) == NULL)
			continue;
		if (i == 1 || i == 2) {	/* the sessions it names: a replay announces them first */
			size_t off;
			const char *id = acp_raw_cstr(r, &v, &off);
			if (id && sess_id_valid(id))
				snprintf(r->named[i - 1], sizeof(r->named[i - 1]), "%s", id);
		}
		buf_printf(&r->out, ",\"%s\":", keys[i]);
		if (acp_raw_value(&r->out, &v) < 0)
			return -1;
	}
	buf_puts(&r->out, "}");
	acp_raw_end(r);
	return x->unsure ? -1 : 0;
}

/* A task list (docs/contract.md §26), live and replayed alike: to a client that takes plan
 * operations, plan_update of the session's plan (an empty list: plan_removed); to others the
 * legacy plan with every entry. */
static int
acp_raw_plan(struct acp_raw *x, size_t d)
{
	struct acp_replay *r = x->r;
	size_t a = acp_raw_at(x, d, "entries");
	int empty = acp_raw_items(x, a) == 0;
	struct json_span v;

	if (x->unsure || a == 0)
		return x->unsure ? -1 : 0;
	v = json_tape_span(x->tp, a);
	if (r->plan && empty) {
		buf_printf(&r->out, "{\"sessionUpdate\":\"plan_removed\",\"planId\":\"plan-%s\"}", r->sid);
	} else {
		if (r->plan)
			buf_printf(&r->out, "{\"sessionUpdate\":\"plan_update\",\"plan\":{\"type\":\"items\","
			    "\"planId\":\"plan-%s\",\"entries\":", r->sid);
		else
			buf_puts(&r->out, "{\"sessionUpdate\":\"plan\",\"entries\":");
		if (acp_raw_value(&r->out, &v) < 0)
			return -1;
		buf_puts(&r->out, r->plan ? "}}" : "}");
	}
	acp_raw_end(r);
	return 0;
}

enum { ACP_RENDER_REPLAY, ACP_RENDER_LIVE };

/* Renders every update of the event whose bytes are s[0..n) into r->out (as it lies in the log,
 * or canonical: above); -1 when not sure, before anything of r->calls or r->titles changed. */
static int
acp_render(struct acp_replay *r, const char *s, size_t n, int canonical, int mode)
{
	struct acp_raw x = { .r = r, .tp = &r->tape, .canonical = canonical };
	struct json_span type;
	size_t d;
	json_t *calls;
	int k = 0;

	r->out.len = r->tmp.len = 0;
	r->nends = r->next = 0;
	r->linked[0] = '\0';
	r->named[0][0] = r->named[1][0] = '\0';
	/* A replayed line was checked when the session was loaded; what is copied out is checked
	 * again as it is copied (acp_raw_value), so the client never gets a broken message. */
	if (json_tape_build(&r->tape, s, n) < 0 || acp_raw_get(&x, ACP_RAW_LINE, "type", &type) == NULL ||
	    (d = acp_raw_at(&x, ACP_RAW_LINE, "data")) == 0 || *r->tape.t[d].s != '{' || x.unsure)
		return -1;
	const char *tn;
	size_t tl;
	int plain = json_raw_plain(&type, &tn, &tl);
	if (!plain && !canonical)
		return -1;	/* an escaped type: the check's, then canonical */
	switch (plain ? sess_ev_ofn(tn, tl) : SESS_EV_NONE) {
	case SESS_EV_USER_MESSAGE:
		if (mode == ACP_RENDER_REPLAY)
			k = acp_raw_user(&x, d);
		break;
	case SESS_EV_ASSISTANT_MESSAGE:
		if (mode != ACP_RENDER_REPLAY)
			break;
		calls = json_object();
		if ((k = acp_raw_assistant(&x, d, calls)) == 0)
			json_object_update(r->calls, calls);
		json_decref(calls);
		break;
	case SESS_EV_TOOL_CALL:
		k = mode == ACP_RENDER_REPLAY ? acp_raw_call(&x, d, r->titles) : acp_raw_live_call(&x, d);
		break;
	case SESS_EV_TOOL_RESULT:
		k = mode == ACP_RENDER_REPLAY ? acp_raw_result(&x, d) : acp_raw_live_result(&x, d);
		break;
	case SESS_EV_MESSAGE_VIEW:
		if (r->subagents)
			k = acp_raw_view(&x, d);
		break;
	case SESS_EV_COMPACTED:
		if (mode == ACP_RENDER_REPLAY && r->compaction)
			k = acp_raw_compacted(&x, d);
		break;
	case SESS_EV_PLAN_UPDATED:
		k = acp_raw_plan(&x, d);
		break;
	default:
		break;		/* shows nothing */
	}
	if (k < 0)
		r->nends = r->next = 0;
	return k < 0 ? -1 : 0;
}

/* A tree's updates: rendered from its canonical bytes (in r->canon: the tape points into them). */
static int
acp_render_tree(struct acp_replay *r, const json_t *ev, int mode)
{
	r->canon.len = 0;
	if (jenc_append(&r->canon, ev) < 0 || acp_render(r, r->canon.data, r->canon.len, 1, mode) < 0) {
		r->nends = r->next = 0;
		return -1;
	}
	return 0;
}

int
acp_update_live(struct acp_replay *r, const json_t *ev)
{
	enum sess_ev et = sess_ev_of(json_string_value(json_object_get(ev, "type")));

	/* only a call, its result, a task list and a message view show live: the others are not
	 * encoded for nothing */
	if ((et != SESS_EV_TOOL_CALL && et != SESS_EV_TOOL_RESULT && et != SESS_EV_PLAN_UPDATED &&
		(et != SESS_EV_MESSAGE_VIEW || !r->subagents)) ||
	    acp_render_tree(r, ev, ACP_RENDER_LIVE) < 0 ||
	    r->nends != 1)
		return 0;
	r->next = r->nends;
	return 1;
}

/* Makes sure an update is waiting in r->out, pulling events as needed; 0 once they are done. */
static int
acp_replay_fill(struct acp_replay *r)
{
	const char *line;
	size_t len;
	json_t *ev;

	while (r->next == r->nends && !r->done) {
		r->nends = r->next = 0;
		line = r->pull(r->arg, &len, &ev);
		if (line) {
			if (acp_render(r, line, len, 0, ACP_RENDER_REPLAY) == 0)
				continue;
			/* Not sure of its bytes: checked again (a lying line ends the replay here). */
			if ((ev = r->tree(r->arg, line, len)) == NULL) {
				r->done = 1;
				break;
			}
		} else if (ev == NULL) {
			r->done = 1;
			break;
		}
		if (line && acp_render_tree(r, ev, ACP_RENDER_REPLAY) == 0)
			r->checked += r->nends;
		else if (line == NULL)
			(void)acp_render_tree(r, ev, ACP_RENDER_REPLAY);	/* deeper than jenc goes: nothing */
		json_decref(ev);
	}
	return r->next < r->nends;
}

int
acp_replay_next_update(struct acp_replay *r, const char **s, size_t *n)
{
	if (!acp_replay_fill(r))
		return 0;
	size_t a = r->next ? r->ends[r->next - 1] : 0;
	*s = r->out.data + a;
	*n = r->ends[r->next++] - a;
	return 1;
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

	while (n < max && acp_replay_next_update(r, &s, &len)) {
		if ((u = json_loadb(s, len, JSON_ALLOW_NUL, NULL)) == NULL)
			continue;	/* cannot be: the bytes are jenc's */
		json_array_append_new(out, u);
		n++;
	}
	return n;
}

void
acp_replay_free(struct acp_replay *r)
{
	json_decref(r->calls);
	json_decref(r->titles);
	r->calls = r->titles = NULL;
	buf_free(&r->out);
	buf_free(&r->canon);
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
