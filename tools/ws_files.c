/*
 * read, write and edit (docs/contract.md §16.1-§16.5): the texts, the checks before an ask (confinement, the
 * read-only refusal, observation, the diff) and the two backends: local files (workspace/), or
 * the editor's fs/read_text_file and fs/write_text_file when it advertised them.
 * Known limit: the base text of write and edit (their observation check and diff) is read
 * locally even when the editor reads for read: an editor's unsaved change shows as stale.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "tools/tools.h"
#include "tools/workspace.h"
#include "workspace/diff.h"
#include "workspace/fs.h"

#define WS_FS_TIMEOUT_MS 60000	/* an editor's fs request (CLIENT_TIMEOUT after) */

/* The file's current text as the editor has it (base), when it reads for us. */
struct ws_base {
	const char *text;		/* NULL: the file is not there */
	size_t len;
};

static const char *
ws_arg(const json_t *args, const char *key)
{
	return json_string_value(json_object_get(args, key));
}

/* The path a title shows: as the model gave it. */
static char *
ws_title_path(const char *verb, const json_t *args)
{
	const char *p = ws_arg(args, "file_path");

	return xasprintf("%s %s", verb, p ? p : "");
}

/* [{path, line?}]: new ref. */
static json_t *
ws_location(const char *abs, size_t line)
{
	json_t *l = xjson_pack("{s:s}", "path", abs);

	if (line)
		json_object_set_new(l, "line", json_integer((json_int_t)line));
	return json_pack("[o]", l);
}

/* The client request for inv's call, or 0 with e; the request's answer goes to done(inv). */
static long
ws_client_request(struct tool_inv *inv, const char *method, json_t *params, agent_client_done *done,
    struct err *e)
{
	const struct agent_client *c = agent_rt_of(inv->agent)->client;
	const char *sid = ws_state_sid(inv->agent);

	if (sid == NULL) {
		json_decref(params);
		err_set(e, ERR_CLIENT_ERROR, "the editor's session is not open");
		return 0;
	}
	json_object_set_new(params, "sessionId", json_string(sid));
	return c->request(c->self, sid, method, params, WS_FS_TIMEOUT_MS, done, inv, e);
}

/* 1 when the call goes through the editor's capability cap. */
static int
ws_via_editor(const struct tool_inv *inv, const char *cap, const struct ws_path *where)
{
	const struct agent_client *c = agent_rt_of(inv->agent)->client;

	/* Spill files are always read locally (docs/contract.md §20.1), and a worktree's files are
	 * none of the editor's (§24). */
	return c && !where->read_only && agent_worktree_owner(inv->agent) == NULL && !agent_in_worktrees(inv->agent) &&
	    c->can(c->self, cap);
}

/* Whether s says a file is not there: ENOENT, "no such file" in any case, "not found". */
static int
ws_says_not_found(const char *s)
{
	return s && (strstr(s, "ENOENT") || strcasestr(s, "no such file") || strstr(s, "not found"));
}

/* A client's error answer as a tool error (docs/decisions.md): the official SDK answers a
 * thrown ENOENT with -32603 "Internal error" and the errno in data, so data is read too. */
static void
ws_client_error(struct tool_result *r, const char *p, const json_t *error, const struct err *e)
{
	const char *msg = json_string_value(json_object_get(error, "message"));
	const json_t *data = json_object_get(error, "data");
	char *dtext = data ? json_dumps(data, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
	int missing = ws_says_not_found(msg) || ws_says_not_found(dtext);

	free(dtext);
	if (e) {
		tool_result_error(r, e->code, "%s", e->msg);
		return;
	}
	if (json_integer_value(json_object_get(error, "code")) == -32002 || missing) {
		tool_result_error(r, ERR_FS_NOT_FOUND, "file \"%.300s\" does not exist", p);
		return;
	}
	tool_result_error(r, ERR_CLIENT_ERROR, "the editor refused: %s", msg ? msg : "(no message)");
}

static void
ws_cancel_request(struct tool_inv *inv)
{
	const struct agent_client *c = agent_rt_of(inv->agent)->client;
	long id = (long)(intptr_t)inv->state;

	inv->state = NULL;
	if (c && id)
		c->cancel(c->self, id);
}

/* ---- what the editor last showed of a file (its buffers may differ from the disk) ---- */

static void
ws_text_put(struct ws_state *st, const char *abs, const char *text, size_t len)
{
	struct ws_text *t = map_get(&st->editor, abs);

	if (t == NULL) {
		t = xcalloc(1, sizeof(*t));
		map_put(&st->editor, abs, t);
	}
	free(t->text);
	t->text = text ? xstrndup(text, len) : NULL;
	t->len = text ? len : 0;
}

/* The base of a write or edit while the editor reads for us: its last text, or NULL (unknown). */
static int
ws_text_base(struct tool_inv *inv, const char *p, struct ws_base *base)
{
	struct ws_state *st;
	struct ws_path where = { 0 };
	struct err e;
	const struct ws_text *t;

	err_clear(&e);
	if ((st = ws_state(inv->agent, &e)) == NULL || ws_path_resolve(&st->roots, p, 1, &where, &e) < 0 ||
	    !ws_via_editor(inv, "fs.readTextFile", &where)) {
		ws_path_free(&where);
		return 0;
	}
	t = map_get(&st->editor, where.abs);
	ws_path_free(&where);
	if (t == NULL)
		return 0;
	base->text = t->text;
	base->len = t->len;
	return 1;
}

/* ---- read ---- */

static char *
read_title(const struct tool *t, const json_t *args)
{
	const json_t *off = json_object_get(args, "offset"), *lim = json_object_get(args, "limit");
	char *base = ws_title_path("Read", args);

	(void)t;
	if (off == NULL && lim == NULL)
		return base;
	json_int_t a = off ? json_integer_value(off) : 1;
	json_int_t b = a + (lim ? json_integer_value(lim) : WS_READ_LINES) - 1;
	char *s = xasprintf("%s (%lld-%lld)", base, (long long)a, (long long)b);
	free(base);
	return s;
}

static int
read_prepare(struct tool_inv *inv, const json_t *args, struct tool_plan *plan, struct tool_result *out)
{
	struct ws_path where = { 0 };
	struct err e;

	err_clear(&e);
	if (ws_state_path(inv->agent, ws_arg(args, "file_path"), 0, &where, &e) == NULL) {
		tool_result_error(out, e.code, "%s", e.msg);
		return -1;
	}
	json_int_t off = json_integer_value(json_object_get(args, "offset"));
	plan->locations = ws_location(where.abs, off > 0 ? (size_t)off : 1);
	ws_path_free(&where);
	return 0;
}

/* Renders data as read's result, noting it observed; fills r. */
static void
read_render(struct tool_inv *inv, struct ws_state *st, const char *abs, const char *data, size_t len,
    struct tool_result *r)
{
	const json_t *args = inv->args;
	const char *p = ws_arg(args, "file_path");
	struct ws_read_span span;
	struct buf text;
	struct err e;

	ws_obs_note(&st->obs, abs, data, len);	/* any read, partial too, observes the file */
	buf_init(&text);
	err_clear(&e);
	if (ws_fs_read_render(p, data, len, (size_t)json_integer_value(json_object_get(args, "offset")),
		(size_t)json_integer_value(json_object_get(args, "limit")), &text, &span, &e) < 0) {
		tool_result_error(r, e.code, "%s", e.msg);
	} else {
		tool_result_set(r, text.data ? text.data : "", xjson_pack("{s:s, s:I, s:I, s:I}", "path", abs,
		    "firstLine", (json_int_t)span.first, "lastLine", (json_int_t)span.last, "totalLines",
		    (json_int_t)span.total));
	}
	buf_free(&text);
}

static void
read_answered(void *arg, const json_t *result, const json_t *error, const struct err *e)
{
	struct tool_inv *inv = arg;
	struct tool_result r = { 0 };
	struct err se;
	struct ws_state *st;
	struct ws_path where = { 0 };
	const char *p = ws_arg(inv->args, "file_path");

	inv->state = NULL;
	inv->cancel = NULL;
	err_clear(&se);
	if ((st = ws_state(inv->agent, &se)) == NULL || ws_path_resolve(&st->roots, p, 0, &where, &se) < 0) {
		tool_result_error(&r, se.code, "%s", se.msg);
	} else if (result == NULL) {
		ws_client_error(&r, p, error, e);
		if (r.error_code == ERR_FS_NOT_FOUND) {
			ws_obs_note(&st->obs, where.abs, NULL, 0);	/* absent: write may create it */
			ws_text_put(st, where.abs, NULL, 0);
		}
	} else {
		const json_t *content = json_object_get(result, "content");
		if (!json_is_string(content)) {
			tool_result_error(&r, ERR_CLIENT_ERROR, "the editor refused: its answer has no content");
		} else {
			ws_text_put(st, where.abs, json_string_value(content), json_string_length(content));
			read_render(inv, st, where.abs, json_string_value(content), json_string_length(content), &r);
		}
	}
	ws_path_free(&where);
	tool_inv_complete(inv, &r);
}

static int
read_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	const char *p = ws_arg(args, "file_path");
	struct ws_state *st;
	struct ws_path where = { 0 };
	struct buf data;
	struct err e;

	err_clear(&e);
	if ((st = ws_state_path(inv->agent, p, 0, &where, &e)) == NULL) {
		tool_result_error(out, e.code, "%s", e.msg);
		return TOOL_DONE;
	}
	if (ws_via_editor(inv, "fs.readTextFile", &where)) {
		long id = ws_client_request(inv, "fs/read_text_file", xjson_pack("{s:s}", "path", where.abs),
		    read_answered, &e);
		ws_path_free(&where);
		if (id == 0) {
			tool_result_error(out, e.code, "%s", e.msg);
			return TOOL_DONE;
		}
		inv->state = (void *)(intptr_t)id;
		inv->cancel = ws_cancel_request;
		return TOOL_PENDING;
	}
	ws_path_free(&where);
	buf_init(&data);
	if (ws_fs_load(&st->roots, p, WS_READ_MAX, &where, &data, &e) < 0) {
		if (e.code == ERR_FS_NOT_FOUND && where.abs)
			ws_obs_note(&st->obs, where.abs, NULL, 0);
		tool_result_error(out, e.code, "%s", e.msg);
	} else {
		read_render(inv, st, where.abs, data.data ? data.data : "", data.len, out);
	}
	buf_free(&data);
	ws_path_free(&where);
	return TOOL_DONE;
}

const struct tool tool_read = {
	.name = "read",
	.file_arg = "file_path",
	.description = "Read a UTF-8 text file; returns line-numbered content (first 2000 lines by default, long "
	    "lines cut at 2000 characters). Use offset/limit for long files. A file must be read before write or "
	    "edit may change it.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"file_path\"],\"properties\":{"
	    "\"file_path\":{\"type\":\"string\",\"description\":\"Path; relative paths resolve against the "
	    "workspace.\"},"
	    "\"offset\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"1-based first line. Default 1.\"},"
	    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Maximum lines. Default 2000.\"}}}",
	.kind = "read",
	.shown_max = 4096,		/* the editor shows 4 KiB of what the model got */
	.concurrency_safe = 1,
	.title = read_title,
	.run = read_run,
	.cls = PERMIT_READ,
	.prepare = read_prepare,
};

/* ---- write and edit: the change, made twice (for the ask's diff, then for real) ---- */

/* What a write or edit would make of the file now. */
struct ws_change {
	struct ws_path where;
	struct buf old;			/* the current content (when exists) */
	int exists;
	char *text;			/* the new content (owned) */
	size_t len;
	size_t count, first_line;	/* edit: replacements, first changed line */
};

static void
ws_change_free(struct ws_change *c)
{
	ws_path_free(&c->where);
	buf_free(&c->old);
	free(c->text);
}

/*
 * Loads the file (or takes base, the editor's text), checks the observation rule and computes the
 * new text. -1 with out filled.
 */
static int
ws_change_make(struct tool_inv *inv, const json_t *args, int edit, const struct ws_base *base, struct ws_change *c,
    struct tool_result *out)
{
	const char *p = ws_arg(args, "file_path");
	struct ws_state *st;
	struct err e;

	memset(c, 0, sizeof(*c));
	buf_init(&c->old);
	err_clear(&e);
	if ((st = ws_state(inv->agent, &e)) == NULL)
		goto fail;
	if (base) {
		if (ws_path_resolve(&st->roots, p, 1, &c->where, &e) < 0)
			goto fail;
		if (base->text == NULL && edit) {
			err_set(&e, ERR_FS_NOT_FOUND, "file \"%.300s\" does not exist", p);
			goto fail;
		}
		if (base->text) {
			if (base->len > WS_FILE_MAX) {
				err_set(&e, ERR_FS_TOO_LARGE, "file \"%.300s\" is larger than 8 MiB (%zu bytes)", p, base->len);
				goto fail;
			}
			buf_append(&c->old, base->text, base->len);
			c->exists = 1;
		}
	} else if (ws_fs_load(&st->roots, p, WS_FILE_MAX, &c->where, &c->old, &e) < 0) {
		if (e.code != ERR_FS_NOT_FOUND || edit)
			goto fail;
		err_clear(&e);
		if (c->where.abs == NULL && ws_path_resolve(&st->roots, p, 1, &c->where, &e) < 0)
			goto fail;
	} else {
		c->exists = 1;
	}
	if (!base && c->where.read_only) {
		ws_path_free(&c->where);
		if (ws_path_resolve(&st->roots, p, 1, &c->where, &e) < 0)	/* the spill dir: FS_OUTSIDE_WORKSPACE */
			goto fail;
	}
	ws_state_touch(inv->agent, st, &c->where);
	if (inv->plan.verdict == PERMIT_REFUSE) {
		tool_result_read_only(out, inv->tool);
		return -1;
	}
	if (c->exists && ws_obs_check(&st->obs, c->where.abs, p, c->old.data ? c->old.data : "", c->old.len, &e) < 0)
		goto fail;
	if (!edit) {
		const char *content = ws_arg(args, "content");
		c->len = json_string_length(json_object_get(args, "content"));
		if (c->len > WS_FILE_MAX) {
			err_set(&e, ERR_FS_TOO_LARGE, "content for \"%.300s\" is larger than 8 MiB (%zu bytes)", p, c->len);
			goto fail;
		}
		if (!utf8_valid(content, c->len)) {
			err_set(&e, ERR_FS_NOT_UTF8, "content for \"%.300s\" is not valid UTF-8", p);
			goto fail;
		}
		c->text = xstrndup(content, c->len);
		return 0;
	}
	struct ws_edit ed;
	const json_t *all = json_object_get(args, "replace_all");
	if (ws_fs_edit(p, c->old.data ? c->old.data : "", c->old.len, ws_arg(args, "old_string"),
		ws_arg(args, "new_string"), json_is_true(all), &ed, &e) < 0) {
		ws_edit_free(&ed);
		goto fail;
	}
	c->len = ed.text.len;
	c->text = buf_steal(&ed.text);
	if (c->text == NULL)
		c->text = xstrdup("");
	c->count = ed.count;
	c->first_line = ed.first_line;
	ws_edit_free(&ed);
	return 0;
fail:
	tool_result_error(out, e.code, "%s", e.msg);
	return -1;
}

/* The ACP diff content of a change: [{type: "diff", path, oldText, newText}]: new ref. */
static json_t *
ws_change_diff(const struct ws_change *c)
{
	struct ws_diff d;
	json_t *v;

	ws_diff_make(&d, c->exists ? (c->old.data ? c->old.data : "") : NULL, c->old.len, c->text, c->len);
	v = xjson_pack("{s:s, s:s, s:o, s:o}", "type", "diff", "path", c->where.abs, "oldText",
	    d.old_text ? xjson_text(d.old_text, strlen(d.old_text)) : json_null(), "newText",
	    xjson_text(d.new_text, strlen(d.new_text)));
	ws_diff_free(&d);
	return v;
}

static int
ws_change_prepare(struct tool_inv *inv, const json_t *args, struct tool_plan *plan, struct tool_result *out,
    int edit)
{
	struct ws_change c;
	struct ws_base base;
	int have = ws_text_base(inv, ws_arg(args, "file_path"), &base);

	if (ws_change_make(inv, args, edit, have ? &base : NULL, &c, out) < 0) {
		ws_change_free(&c);
		return -1;
	}
	/* The file already holds exactly this: nothing to ask about, nothing to write (a diff of
	 * headers only told the user nothing). The mode still refuses first. */
	if (plan->verdict != PERMIT_REFUSE && c.exists && c.len == c.old.len &&
	    (c.len == 0 || memcmp(c.text, c.old.data, c.len) == 0)) {
		char text[512];
		snprintf(text, sizeof(text), "no change: %.400s already holds this content", ws_arg(args, "file_path"));
		tool_result_set(out, text, xjson_pack("{s:s, s:b}", "path", c.where.abs, "changed", 0));
		ws_change_free(&c);
		return -1;
	}
	plan->locations = ws_location(c.where.abs, edit ? c.first_line : 0);
	plan->content = json_pack("[o]", ws_change_diff(&c));
	ws_change_free(&c);
	return 0;
}

/* The result of a change written (steals nothing); notes what was written. */
static void
ws_change_done(struct tool_inv *inv, struct ws_change *c, int edit, struct tool_result *out)
{
	struct err e;
	struct ws_state *st;
	char text[512];
	const char *p = ws_arg(inv->args, "file_path");

	err_clear(&e);
	if ((st = ws_state(inv->agent, &e)) != NULL)
		ws_obs_note(&st->obs, c->where.abs, c->text, c->len);	/* its own writes keep the record */
	if (edit)
		snprintf(text, sizeof(text), "edited %.400s (%zu replacement(s))", p, c->count);	/* docs/contract.md §16.3, literally */
	else
		snprintf(text, sizeof(text), "wrote %.400s (%zu bytes)", p, c->len);
	tool_result_set(out, text, xjson_pack("{s:s, s:o}", "path", c->where.abs, "diff", ws_change_diff(c)));
}

/* A change waiting for the editor's fs/write_text_file answer (inv->state while pending). */
struct ws_pending {
	struct ws_change c;
	long id;
	int edit;
	int writing;			/* 0: the fresh read is out; 1: the write */
};

static void
ws_pending_cancel(struct tool_inv *inv)
{
	struct ws_pending *w = inv->state;
	const struct agent_client *cl = agent_rt_of(inv->agent)->client;

	inv->state = NULL;
	if (cl && w->id)
		cl->cancel(cl->self, w->id);
	ws_change_free(&w->c);
	free(w);
}


/* Local: check again (the file may have changed while the user looked at the ask), then write. */
static int
ws_change_run_local(struct tool_inv *inv, const json_t *args, struct tool_result *out, int edit)
{
	struct ws_change c;
	struct err e;
	struct ws_state *st;

	if (ws_change_make(inv, args, edit, NULL, &c, out) < 0) {
		ws_change_free(&c);
		return TOOL_DONE;
	}
	err_clear(&e);
	if ((st = ws_state(inv->agent, &e)) == NULL || ws_fs_write(&st->roots, ws_arg(args, "file_path"), c.text,
		c.len, ws_state_sync_flags(inv->agent), NULL, &e) < 0)
		tool_result_error(out, e.code, "%s", e.msg);
	else
		ws_change_done(inv, &c, edit, out);
	ws_change_free(&c);
	return TOOL_DONE;
}

/* Through the editor: read its text afresh (the observation check), then write it. */
static void
ws_editor_answered(void *arg, const json_t *result, const json_t *error, const struct err *e)
{
	struct tool_inv *inv = arg;
	struct ws_pending *w = inv->state;
	struct tool_result r = { 0 };
	const char *p = ws_arg(inv->args, "file_path");
	struct err se;

	w->id = 0;
	if (w->writing) {
		if (result)		/* null and {} are both a success */
			ws_change_done(inv, &w->c, w->edit, &r);
		else
			ws_client_error(&r, p, error, e);
		goto done;
	}
	struct ws_base base = { NULL, 0 };
	if (result) {
		const json_t *content = json_object_get(result, "content");
		if (!json_is_string(content)) {
			tool_result_error(&r, ERR_CLIENT_ERROR, "the editor refused: its answer has no content");
			goto done;
		}
		base.text = json_string_value(content);
		base.len = json_string_length(content);
	} else {
		ws_client_error(&r, p, error, e);
		if (r.error_code != ERR_FS_NOT_FOUND)
			goto done;
		tool_result_clear(&r);		/* not there: write may create it */
	}
	ws_change_free(&w->c);
	if (ws_change_make(inv, inv->args, w->edit, &base, &w->c, &r) < 0)
		goto done;
	err_clear(&se);
	w->writing = 1;
	w->id = ws_client_request(inv, "fs/write_text_file", xjson_pack("{s:s, s:o}", "path", w->c.where.abs,
	    "content", xjson_text(w->c.text, w->c.len)), ws_editor_answered, &se);
	if (w->id != 0)
		return;
	tool_result_error(&r, se.code, "%s", se.msg);
done:
	if (r.error_code == ERR_NONE && w->writing) {
		struct err ee;
		struct ws_state *st;
		err_clear(&ee);
		if ((st = ws_state(inv->agent, &ee)) != NULL)
			ws_text_put(st, w->c.where.abs, w->c.text, w->c.len);	/* what the editor holds now */
	}
	inv->state = NULL;
	inv->cancel = NULL;
	ws_change_free(&w->c);
	free(w);
	tool_inv_complete(inv, &r);
}

static int
ws_change_run(struct tool_inv *inv, const json_t *args, struct tool_result *out, int edit)
{
	struct ws_path where = { 0 };
	struct err e;
	struct ws_pending *w;

	err_clear(&e);
	if (ws_state_path(inv->agent, ws_arg(args, "file_path"), 1, &where, &e) == NULL) {
		tool_result_error(out, e.code, "%s", e.msg);
		return TOOL_DONE;
	}
	int editor = ws_via_editor(inv, "fs.writeTextFile", &where) && ws_via_editor(inv, "fs.readTextFile", &where);
	if (!editor) {
		ws_path_free(&where);
		return ws_change_run_local(inv, args, out, edit);
	}
	w = xcalloc(1, sizeof(*w));
	w->edit = edit;
	buf_init(&w->c.old);
	inv->state = w;
	w->id = ws_client_request(inv, "fs/read_text_file", xjson_pack("{s:s}", "path", where.abs), ws_editor_answered, &e);
	ws_path_free(&where);
	if (w->id == 0) {
		inv->state = NULL;
		ws_change_free(&w->c);
		free(w);
		tool_result_error(out, e.code, "%s", e.msg);
		return TOOL_DONE;
	}
	inv->cancel = ws_pending_cancel;
	return TOOL_PENDING;
}

static char *
write_title(const struct tool *t, const json_t *args)
{
	(void)t;
	return ws_title_path("Write", args);
}

static int
write_prepare(struct tool_inv *inv, const json_t *args, struct tool_plan *plan, struct tool_result *out)
{
	return ws_change_prepare(inv, args, plan, out, 0);
}

static int
write_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	return ws_change_run(inv, args, out, 0);
}

const struct tool tool_write = {
	.name = "write",
	.file_arg = "file_path",
	.description = "Create or fully replace a UTF-8 text file. Replacing an existing file requires a prior "
	    "read. Prefer edit for changes.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"file_path\",\"content\"],"
	    "\"properties\":{\"file_path\":{\"type\":\"string\",\"description\":\"Path to write.\"},"
	    "\"content\":{\"type\":\"string\",\"description\":\"Full UTF-8 content.\"}}}",
	.kind = "edit",
	.title = write_title,
	.run = write_run,
	.cls = PERMIT_EDIT,
	.prepare = write_prepare,
};

static char *
edit_title(const struct tool *t, const json_t *args)
{
	(void)t;
	return ws_title_path("Edit", args);
}

static int
edit_prepare(struct tool_inv *inv, const json_t *args, struct tool_plan *plan, struct tool_result *out)
{
	return ws_change_prepare(inv, args, plan, out, 1);
}

static int
edit_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	return ws_change_run(inv, args, out, 1);
}

const struct tool tool_edit = {
	.name = "edit",
	.file_arg = "file_path",
	.description = "Replace literal text in an existing UTF-8 file (read it first). old_string must occur "
	    "exactly once unless replace_all; add context to make it unique; keep exact indentation.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"file_path\",\"old_string\","
	    "\"new_string\"],\"properties\":{\"file_path\":{\"type\":\"string\",\"description\":\"Path to edit.\"},"
	    "\"old_string\":{\"type\":\"string\",\"description\":\"Literal text to replace; not empty.\"},"
	    "\"new_string\":{\"type\":\"string\",\"description\":\"Replacement; empty deletes the match.\"},"
	    "\"replace_all\":{\"type\":\"boolean\",\"description\":\"Replace every match. Default false.\"}}}",
	.kind = "edit",
	.title = edit_title,
	.run = edit_run,
	.cls = PERMIT_EDIT,
	.prepare = edit_prepare,
};
