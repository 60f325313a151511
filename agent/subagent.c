/*
 * Delegation. A child is an agent whose session header names its parent
 * (origin "subagent") and whose first own event is its descriptor. One-shot
 * children run one task for a waiting tool call and are disposed; continuable
 * children stay resident until they are quiescent, then settle: the child
 * logs subagent/settled (synced) and its parent is sent one notice, exactly
 * once across crashes (the notice carries source.settlement).
 * This file: the children's state, lineage and capacity, start and settlement.
 */
#include "agent/subagent.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_def.h"
#include "agent/subagent_int.h"
#include "agent/view.h"
#include "agent/turnend.h"
#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

static void sub_settle_check(void *arg);
static int sub_checks(struct agent *parent, int background, const char *type, const char *model,
    const struct agent_type **t, struct err *e);

/* ---- state ---- */

static void
sub_state_free(void *p)
{
	struct sub_state *st = p;

	buf_free(&st->fg_progress);
	free(st->iso_work);
	json_decref(st->fg_reason);
	free(st);
}

struct sub_state *
sub_state(struct agent *a)
{
	struct sub_state *st = agent_state(a, &subagent_ext);

	if (st == NULL) {
		st = xcalloc(1, sizeof(*st));
		st->mode = subagent_mode(a);
		buf_init(&st->fg_progress);
		agent_state_set(a, &subagent_ext, st, sub_state_free);
	}
	return st;
}

enum subagent_mode
subagent_mode(const struct agent *a)
{
	const struct sub_state *st = agent_state(a, &subagent_ext);

	if (st)
		return st->mode;
	return agent_parent(a) ? SUBAGENT_CONTINUABLE : SUBAGENT_ROOT;
}

void
subagent_note_delivered(struct agent *a)
{
	if (subagent_mode(a) == SUBAGENT_CONTINUABLE)
		sub_state(a)->delivered = 1;
}

/* ---- lineage ---- */
/* ---- lineage ---- */

/* The parent id of id (live or stored), or NULL; borrowed. */
static const char *
sub_parent_of(struct agent_rt *rt, const char *id)
{
	struct agent *a = agent_rt_get(rt, id);
	struct sess_entry *en;

	if (a)
		return agent_parent(a);
	en = map_get(&rt->corpus->by_id, id);
	return en ? en->parent : NULL;
}

/*
 * A walk up a lineage goes to its end, however deep: no bound cuts it short with a wrong answer.
 * Only a damaged state directory holds a cycle of parents; a second cursor at half speed (Floyd)
 * then meets the first, after the first has been once round the whole cycle, and the walk stops.
 */
struct sub_lineage {
	struct agent_rt *rt;
	const char *cur;		/* where the walk is: borrowed */
	const char *slow;		/* one step for every two of cur */
	unsigned long steps;
};

static void
sub_lineage_start(struct sub_lineage *w, struct agent_rt *rt, const char *id)
{
	w->rt = rt;
	w->cur = w->slow = id;
	w->steps = 0;
}

/* Steps to the parent: 1, or 0 at a root (cur is it) or once round a cycle (cur is on it). */
static int
sub_lineage_up(struct sub_lineage *w)
{
	const char *up = sub_parent_of(w->rt, w->cur);

	if (up == NULL)
		return 0;
	w->cur = up;
	if (++w->steps % 2 == 0)
		w->slow = sub_parent_of(w->rt, w->slow);	/* behind cur: never NULL */
	return strcmp(w->slow, w->cur) != 0;
}

/* Copies the root of id's tree into out; for a cycle, its smallest id, whichever member began. */
void
sub_root_of(struct agent_rt *rt, const char *id, char out[SESS_ID_LEN + 1])
{
	struct sub_lineage w;
	const char *root;

	sub_lineage_start(&w, rt, id);
	while (sub_lineage_up(&w))
		;
	root = w.cur;
	/* Stopped on a cycle: once more round it for its smallest id. */
	for (const char *c = sub_parent_of(rt, w.cur); c && strcmp(c, w.cur) != 0; c = sub_parent_of(rt, c))
		if (strcmp(c, root) < 0)
			root = c;
	snprintf(out, SESS_ID_LEN + 1, "%s", root);
}

/* 1 when id lies below ancestor. */
int
sub_is_descendant(struct agent_rt *rt, const char *id, const char *ancestor)
{
	struct sub_lineage w;

	sub_lineage_start(&w, rt, id);
	/* The step that closes a cycle lands on an id met before, compared then. */
	while (sub_lineage_up(&w))
		if (strcmp(w.cur, ancestor) == 0)
			return 1;
	return 0;
}

const char *
sub_label(const struct agent *a)
{
	struct sess_entry *en = map_get(&a->rt->corpus->by_id, agent_id(a));

	return en && en->label ? en->label : "";
}

/* Resident continuable children of the tree rooted at root; fills holders when asked. */
static int
sub_active_in_tree(struct agent_rt *rt, const char *root, struct buf *holders)
{
	int n = 0;

	for (size_t i = 0; i < rt->nall; i++) {
		struct agent *a = rt->all[i];
		char r[SESS_ID_LEN + 1];
		if (a->released || subagent_mode(a) != SUBAGENT_CONTINUABLE)
			continue;
		sub_root_of(rt, agent_id(a), r);
		if (strcmp(r, root) != 0)
			continue;
		if (holders)
			buf_printf(holders, "%s%s (%s)", n ? ", " : "", agent_id(a), sub_label(a));
		n++;
	}
	return n;
}

int
sub_capacity(struct agent_rt *rt, const char *for_id, struct err *e)
{
	char root[SESS_ID_LEN + 1];
	struct buf holders;
	int rc = 0;

	sub_root_of(rt, for_id, root);
	buf_init(&holders);
	if (sub_active_in_tree(rt, root, &holders) >= rt->max_active)
		rc = err_set(e, ERR_ACTIVATION_LIMIT_REACHED,
		    "subagent limit reached (active child limit: %d); wait for an existing child to finish "
		    "or complete this work with the current agents\nholding slots: %s", rt->max_active,
		    holders.data ? holders.data : "");
	buf_free(&holders);
	return rc;
}

static int
sub_owns_resident_children(struct agent_rt *rt, const char *id)
{
	for (size_t i = 0; i < rt->nall; i++) {
		struct agent *a = rt->all[i];
		if (!a->released && subagent_mode(a) == SUBAGENT_CONTINUABLE && agent_parent(a) &&
		    strcmp(agent_parent(a), id) == 0)
			return 1;
	}
	return 0;
}

int
sub_is_subagent(const struct sess_entry *en)
{
	return en->origin && strcmp(en->origin, "subagent") == 0;
}

/* ---- texts ---- */

char *
subagent_return_guidance(const char *parent_id)
{
	json_t *j = json_string(parent_id);
	char *q = json_dumps(j, JSON_ENCODE_ANY);
	char *s = xasprintf("Your parent agent id is %s. Before you finish, send your result to that agent "
	    "with send_message({ agent_id: %s, message: \"<self-contained result>\" }). The parent shares "
	    "your workspace but does not automatically receive your transcript, tool output, or reasoning. "
	    "Send earlier messages as well when a finding changes what the parent should do next; sending "
	    "a message does not end your turn.", q, q);

	free(q);
	json_decref(j);
	return s;
}

char *
subagent_notice_text(const char *child_id, const char *end_kind, const char *final, const char *work)
{
	const char *sep = work ? "\n" : "", *w = work ? work : "";

	if (final && *final)
		return xasprintf("Background subagent %s %s\nIts closing message:\n%s%s%s", child_id,
		    turn_end_of(end_kind)->notice, final, sep, w);
	return xasprintf("Background subagent %s %s\nIt left no closing message.%s%s", child_id,
	    turn_end_of(end_kind)->notice, sep, w);
}

/* ---- hooks of child agents ---- */

static void
sub_progress(struct agent *child, struct sub_state *st)
{
	struct tool_inv *inv = st->fg_inv;
	struct agent *parent;

	if (inv == NULL)
		return;
	parent = inv->agent;
	if (parent->hooks.tool_progress)
		parent->hooks.tool_progress(parent->hooks.arg, parent, inv->call_id, agent_id(child),
		    st->fg_progress.data ? st->fg_progress.data : "");
}

static void
sub_child_delta(void *arg, struct agent *a, int reasoning, const char *msg_id, const char *s, size_t n)
{
	struct sub_state *st = sub_state(a);

	(void)arg;
	(void)msg_id;
	if (reasoning || st->fg_inv == NULL)
		return;
	buf_append(&st->fg_progress, s, n);
	sub_progress(a, st);
}

/* A foreground child's tool calls show in its parent's call by title. */
static void
sub_child_event(void *arg, struct sess *s, const json_t *ev)
{
	struct agent *a = arg;
	struct sub_state *st = sub_state(a);
	const json_t *data = json_object_get(ev, "data");
	const struct tool *t;
	json_t *args;
	char *title;

	(void)s;
	if (st->fg_inv == NULL || sess_ev_of(json_string_value(json_object_get(ev, "type"))) != SESS_EV_TOOL_CALL)
		return;
	t = toolbox_find(a->tools, json_string_value(json_object_get(data, "name")));
	args = json_loads(json_string_value(json_object_get(data, "arguments")), 0, NULL);
	title = t && t->title ? t->title(t, args) : xstrdup(json_string_value(json_object_get(data, "name")));
	if (st->fg_progress.len && st->fg_progress.data[st->fg_progress.len - 1] != '\n')
		buf_puts(&st->fg_progress, "\n");
	buf_printf(&st->fg_progress, "[%s]\n", title);
	free(title);
	json_decref(args);
	sub_progress(a, st);
}

static void
sub_release_task(void *arg)
{
	agent_unpin(arg);
	agent_release(arg);
}

static void
sub_child_turn_end(void *arg, struct agent *a, const char *first, const json_t *reason)
{
	(void)arg;
	(void)first;
	struct sub_state *st = sub_state(a);

	if (a->rt->shutting_down)
		return;
	if (st->mode == SUBAGENT_ONESHOT) {
		json_decref(st->fg_reason);
		st->fg_reason = json_deep_copy(reason);
		/* an isolated one's work is committed first: its result says where it is */
		if (!sub_iso_settle(a))
			sub_oneshot_finished(a);
		return;
	}
	agent_push(a, sub_settle_check);
}

void
sub_oneshot_finished(struct agent *a)
{
	struct sub_state *st = sub_state(a);
	struct tool_inv *inv = st->fg_inv;
	json_t *reason = st->fg_reason;

	st->fg_inv = NULL;
	st->fg_reason = NULL;
	if (inv)
		st->fg_finish(inv, a, reason);
	json_decref(reason);
	buf_free(&st->fg_progress);	/* its one run is over: nothing shows it any more */
	agent_push(a, sub_release_task);
}

void
sub_settle_again(struct agent *a)
{
	agent_push(a, sub_settle_check);
}

const char *
subagent_work(const struct agent *child)
{
	const struct sub_state *st = agent_state(child, &subagent_ext);

	return st ? st->iso_work : NULL;
}

void
sub_adopt(struct agent *child, enum subagent_mode mode)
{
	sub_state(child)->mode = mode;
	child->hooks.delta = sub_child_delta;
	child->hooks.turn_end = sub_child_turn_end;
	child->hooks.tool_progress = NULL;
	child->hooks.arg = child;
	sess_observe(child->sess, sub_child_event, child);
}

/* ---- delivery ---- */

json_t *
sub_text_blocks(const char *text)
{
	return xjson_pack("[{s:s, s:s}]", "type", "text", "text", text);
}

void
sub_post_notice(struct agent *parent, struct agent *child, const char *child_id, const char *child_view, long epoch,
    const char *end, const char *final, const char *work)
{
	char *text = subagent_notice_text(child_id, end, final, work);
	char *summary = xasprintf("Background subagent %s %s", child_id, turn_end_of(end)->notice);
	json_t *view = sub_text_blocks(text);

	/* Both views when the child is still there to log its own; else the parent's, naming the
	 * child's view if it logged one when it settled. */
	if (child)
		agent_view_pair(child, parent, view);
	else
		agent_view_in(parent, child_id, child_view, view);
	json_decref(view);
	agent_post(parent, sub_text_blocks(text),
	    xjson_pack("{s:s, s:s, s:s, s:{s:s, s:i}}", "kind", "subagent-settled", "senderSessionId",
		child_id, "summary", summary, "settlement", "childId", child_id, "epoch", (json_int_t)epoch),
	    NULL);
	free(summary);
	free(text);
}

/* The end kind of the last turn: "completed" before any, "error" for one that names none. */
static const char *
sub_last_end(struct sess *s, char *buf, size_t size)
{
	int turn_end = SESS_EV_TURN_END;

	for (size_t i = sess_nev(s); i-- > 0;) {
		if (sess_type_at(s, i) != turn_end)
			continue;
		json_t *ev = sess_event_get(s, i);
		const char *kind = json_string_value(json_object_get(json_object_get(json_object_get(ev,
		    "data"), "reason"), "kind"));
		snprintf(buf, size, "%s", kind ? kind : "error");
		json_decref(ev);
		return buf;
	}
	return "completed";
}

const char *
sub_settle_record(struct agent *a, char *end_buf, size_t size, struct err *e)
{
	struct sub_state *st = sub_state(a);
	const char *end = sub_last_end(a->sess, end_buf, size);
	json_t *settled = xjson_pack("{s:i, s:s}", "epoch", (json_int_t)st->epoch, "end", end);

	if (st->iso_work)
		json_object_set_new(settled, "work", json_string(st->iso_work));
	err_clear(e);
	if (sess_append(a->sess, "subagent/settled", settled, e) == NULL || sess_sync(a->sess, e) < 0)
		return NULL;
	return end;
}

void
sub_settle_at_exit(struct agent *a)
{
	struct sub_state *st = sub_state(a);
	char end[32], parent_id[SESS_ID_LEN + 1];
	struct err e;

	/* a turn begun meanwhile (a message came): not quiescent; the next load settles it */
	if (st->mode != SUBAGENT_CONTINUABLE || a->status == AGENT_RUNNING || a->inbox || a->request_held)
		return;
	if (sub_settle_record(a, end, sizeof(end), &e) == NULL) {
		log_error("subagent %s: settlement not recorded: %s", agent_id(a), e.msg);
		return;
	}
	if (st->delivered) {
		/* its view of the notice; the parent's comes with its next load (subagent_redeliver) */
		char *final = agent_final_text(a);
		char *text = subagent_notice_text(agent_id(a), end, final, st->iso_work);
		json_t *view = sub_text_blocks(text);
		snprintf(parent_id, sizeof(parent_id), "%s", agent_parent(a));
		agent_view_out(a, parent_id, view, NULL);
		json_decref(view);
		free(text);
		free(final);
	}
}

/* Settles a quiescent continuable child: log, sync, release, notice. */
static void
sub_settle_check(void *arg)
{
	struct agent *a = arg;
	struct agent_rt *rt = a->rt;
	char child_id[SESS_ID_LEN + 1], parent_id[SESS_ID_LEN + 1];
	const char *end;
	char *final, end_buf[32];
	struct err e;
	struct sub_state *st = agent_state(a, &subagent_ext);

	agent_unpin(a);
	if (a->released || rt->shutting_down || a->status == AGENT_RUNNING || a->inbox || a->kick_queued ||
	    st == NULL || st->mode != SUBAGENT_CONTINUABLE || sub_owns_resident_children(rt, agent_id(a)))
		return;
	/* an isolated child's work committed and its worktree removed first (docs/contract.md §24) */
	if (sub_iso_settle(a))
		return;
	int delivered = st->delivered;
	long epoch = st->epoch;
	char *work = st->iso_work ? xstrdup(st->iso_work) : NULL;
	snprintf(child_id, sizeof(child_id), "%s", agent_id(a));
	snprintf(parent_id, sizeof(parent_id), "%s", agent_parent(a));
	end = sub_settle_record(a, end_buf, sizeof(end_buf), &e);
	if (end == NULL) {
		log_error("subagent %s: settlement not recorded: %s", child_id, e.msg);
		free(work);
		agent_release(a);
		return;
	}
	if (rt->env->faults.exit_after_settled) {
		log_warn("fault: exit-after-settled reached");
		_exit(3);
	}
	final = agent_final_text(a);
	{
		char end_copy[32];
		snprintf(end_copy, sizeof(end_copy), "%s", end);
		struct agent *parent = agent_rt_get(rt, parent_id);
		/* the notice is posted while the child can still log its view of it, then it goes */
		if (delivered && parent) {
			sub_post_notice(parent, a, child_id, NULL, epoch, end_copy, final, work);
		} else if (delivered) {
			/* its view of the notice now; the parent's, when it is loaded (subagent_redeliver) */
			char *text = subagent_notice_text(child_id, end_copy, final, work);
			json_t *view = sub_text_blocks(text);
			agent_view_out(a, parent_id, view, NULL);
			json_decref(view);
			free(text);
		}
		agent_release(a);
		if (delivered && parent == NULL)
			log_info("subagent %s: parent %s not live; the notice waits for its next load", child_id,
			    parent_id);
		if (parent && subagent_mode(parent) == SUBAGENT_CONTINUABLE)
			agent_push(parent, sub_settle_check);
	}
	free(work);
	free(final);
}

void
sub_settle_cut_off(struct agent *child)
{
	sub_state(child)->delivered = 1;
	agent_push(child, sub_settle_check);
}

/* ---- start ---- */

/* The type a call names (NULL: general) among the caller's workspace's, or NULL with e. */
static const struct agent_type *
sub_type(struct agent *parent, const char *name, struct err *e)
{
	const struct agent_types *types = agent_types_of(parent);
	const struct agent_type *t = agent_types_get(types, name ? name : "general");
	struct buf names;

	if (t)
		return t;
	buf_init(&names);
	for (size_t i = 0; i < types->n; i++)
		buf_printf(&names, "%s%s", i ? ", " : "", types->v[i].name);
	err_set(e, ERR_INVALID_ARGUMENT, "unknown agent_type \"%s\"; available: %s", name, names.data ? names.data : "");
	buf_free(&names);
	return NULL;
}

/* qsort's order of strings. */
static int
sub_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A model a call names: an id a descriptor can hold, and one of ACP_AGENT_MODELS when that is
 * set (not under replay or builtin: the server leaves rt->models NULL then). 0, or -1 with e. */
static int
sub_model_check(struct agent_rt *rt, const char *model, struct err *e)
{
	size_t n = strlen(model), count = 0;
	char **v = NULL;
	int found = 0;

	for (size_t i = 0; i < n; i++)
		if ((unsigned char)model[i] < 0x20 || model[i] == 0x7f)
			n = 0;
	if (n == 0 || n > SESS_DESCRIPTOR_MODEL_MAX)
		return err_set(e, ERR_INVALID_ARGUMENT, "invalid arguments: \"model\" must be a model id: 1-%d "
		    "characters, no control characters", SESS_DESCRIPTOR_MODEL_MAX);
	if (rt->models == NULL || *rt->models == '\0')
		return 0;
	for (const char *p = rt->models; *p;) {
		size_t k = strcspn(p, ",");
		if (k) {
			v = xrealloc(v, (count + 1) * sizeof(*v));
			v[count++] = xstrndup(p, k);
			found |= strcmp(v[count - 1], model) == 0;
		}
		p += k + (p[k] == ',');
	}
	if (count == 0)
		found = 1;	/* a list of no names is no list (as the model option's values take it) */
	if (!found) {
		struct buf b;
		buf_init(&b);
		if (count > 1)
			qsort(v, count, sizeof(*v), sub_cmp_str);
		for (size_t i = 0; i < count; i++)
			if (i == 0 || strcmp(v[i], v[i - 1]) != 0)
				buf_printf(&b, "%s%s", i ? ", " : "", v[i]);
		err_set(e, ERR_INVALID_ARGUMENT, "unknown model \"%s\"; available: %s", model, b.data ? b.data : "");
		buf_free(&b);
	}
	for (size_t i = 0; i < count; i++)
		free(v[i]);
	free(v);
	return found ? 0 : -1;
}

/* Whether a call of kind (with its type t) asks for a worktree. */
static int
sub_wants_worktree(const struct subagent_kind *kind, const struct agent_type *t)
{
	if (kind && kind->isolation)
		return strcmp(kind->isolation, "worktree") == 0;
	return t && t->worktree;
}

int
subagent_kind_check(struct agent *parent, const struct subagent_kind *kind, struct err *e)
{
	if (kind == NULL)
		return 0;
	const struct agent_type *t = sub_type(parent, kind->type, e);
	if (t == NULL || (kind->model && sub_model_check(parent->rt, kind->model, e) < 0))
		return -1;
	return 0;
}

int
subagent_kind_isolated(struct agent *parent, const struct subagent_kind *kind)
{
	struct err e;

	err_clear(&e);
	return sub_wants_worktree(kind, sub_type(parent, kind ? kind->type : NULL, &e));
}

int
subagent_spawn_isolated(struct agent *parent, const char *label, json_t *content, json_t *source,
    const struct subagent_kind *kind, struct tool_inv *inv, subagent_spawned_fn *done, void *arg, struct err *e)
{
	const struct agent_type *t;

	if (sub_checks(parent, 1, kind ? kind->type : NULL, kind ? kind->model : NULL, &t, e) < 0) {
		json_decref(content);
		json_decref(source);
		return -1;
	}
	return sub_iso_spawn(inv, label, content, source, kind, done, arg);
}

/* What must hold before a child of parent is made: its type (into *t), its model, the depth and,
 * for a background child, the capacity. 0, or -1 with e. */
static int
sub_checks(struct agent *parent, int background, const char *type, const char *model, const struct agent_type **t,
    struct err *e)
{
	struct agent_rt *rt = parent->rt;
	int depth = (int)json_integer_value(json_object_get(sess_header(parent->sess), "delegationDepth")) + 1;

	if ((*t = sub_type(parent, type, e)) == NULL || (model && sub_model_check(rt, model, e) < 0))
		return -1;
	if (depth > rt->max_depth)
		return err_set(e, ERR_DEPTH_EXCEEDED, "subagent depth %d exceeds maxDepth %d", depth, rt->max_depth);
	if (background && sub_capacity(rt, agent_id(parent), e) < 0)
		return -1;
	return 0;
}

struct agent *
sub_new_child(struct agent *parent, const char *label, int background, const char *type, const char *model,
    const struct tool_inv *inv, const char *id, struct git_wt *wt, struct err *e)
{
	struct agent_rt *rt = parent->rt;
	const struct agent_type *t;
	struct agent *child;
	json_t *desc;
	char *cwd = NULL;

	if (sub_checks(parent, background, type, model, &t, e) < 0)
		return NULL;
	if (wt)		/* its workspace: the parent's place inside the repository, in its worktree */
		cwd = *wt->subdir ? xasprintf("%s/%s", wt->path, wt->subdir) : xstrdup(wt->path);
	child = agent_new_child(rt, parent, parent->tools, id, cwd);
	free(cwd);
	/* composed once, here; the descriptor keeps it (docs/contract.md §23.3) */
	agent_comp_free(&child->comp);
	agent_comp_make(&child->comp, &parent->comp, parent->tools, t, model, background);
	if (wt) {
		child->comp.wt = xcalloc(1, sizeof(*child->comp.wt));
		*child->comp.wt = *wt;	/* moved in */
		memset(wt, 0, sizeof(*wt));
	}
	sub_adopt(child, background ? SUBAGENT_CONTINUABLE : SUBAGENT_ONESHOT);
	desc = xjson_pack("{s:i, s:s, s:s, s:s}", "version", SESS_DESCRIPTOR_VERSION, "mode",
	    background ? "continuable" : "one-shot", "provider", "in-process", "label", label ? label : "");
	agent_comp_describe(&child->comp, desc);
	/* the tree's additional directories, copied: it keeps them on a cold resume (docs/contract.md §27) */
	json_t *dirs = agent_additional_dirs(parent);
	if (sess_append(child->sess, "subagent/descriptor", desc, e) == NULL ||
	    (json_array_size(dirs) > 0 &&
		sess_append(child->sess, "session/roots", xjson_pack("{s:O}", "directories", dirs), e) == NULL) ||
	    (child->comp.wt && sub_iso_created(child, e) < 0)) {
		json_decref(dirs);
		char msg[sizeof(e->msg)];
		snprintf(msg, sizeof(msg), "%s", e->msg);
		err_clear(e);
		err_set(e, ERR_SESSION_LOG_IO, "%s", msg);
		if (wt && child->comp.wt) {	/* the worktree back to the caller, who drops it */
			*wt = *child->comp.wt;
			free(child->comp.wt);
			child->comp.wt = NULL;
		}
		agent_release(child);
		return NULL;
	}
	json_decref(dirs);
	sub_state(child)->epoch = 1;
	sub_state(child)->delivered = 1;
	if (rt->watch)
		rt->watch->born(rt->watch->arg, child, inv);
	return child;
}

struct agent *
subagent_spawn(struct agent *parent, const char *label, json_t *content, json_t *source,
    const struct subagent_kind *kind, const struct tool_inv *inv, struct err *e)
{
	struct agent *child = sub_new_child(parent, label, 1, kind ? kind->type : NULL, kind ? kind->model : NULL, inv,
	    NULL, NULL, e);

	if (child == NULL) {
		json_decref(content);
		json_decref(source);
		return NULL;
	}
	agent_view_in(child, agent_id(parent), NULL, content);	/* its first prompt */
	agent_post(child, content, source, NULL);
	return child;
}

/* The parent's call is cancelled: stop the one-shot child (cause parent) and let it go. */
void
sub_fg_cancel(struct tool_inv *inv)
{
	struct agent *child = inv->state;

	inv->state = NULL;
	if (child == NULL)
		return;
	sub_state(child)->fg_inv = NULL;
	agent_cancel(child, "parent");
}

/* The child is made: its first prompt posted; a foreground call waits for its run. */
void
sub_start_child(struct tool_inv *inv, struct agent *child, const char *prompt, int background,
    subagent_finish_fn *finish)
{
	struct agent *parent = inv->agent;
	json_t *content = sub_text_blocks(prompt);

	if (background) {
		char *guide = subagent_return_guidance(agent_id(parent));
		json_array_append_new(content, xjson_pack("{s:s, s:s}", "type", "text", "text", guide));
		free(guide);
	}
	agent_view_in(child, agent_id(parent), NULL, content);	/* its first prompt, guidance included */
	agent_post(child, content, xjson_pack("{s:s, s:s}", "kind", "agent-message", "senderSessionId",
	    agent_id(parent)), NULL);
	if (background)
		return;
	sub_state(child)->fg_inv = inv;
	sub_state(child)->fg_finish = finish;
	inv->state = child;
	inv->cancel = sub_fg_cancel;
}

int
subagent_start(struct tool_inv *inv, const char *description, const char *prompt, int background,
    const struct subagent_kind *kind, subagent_finish_fn *finish, subagent_started_fn *started, char *child_id,
    struct err *e)
{
	struct agent *parent = inv->agent, *child;
	const struct agent_type *t;

	if (sub_checks(parent, background, kind ? kind->type : NULL, kind ? kind->model : NULL, &t, e) < 0)
		return -1;
	struct agent *owner = agent_worktree_owner(parent);
	if (background && owner && subagent_mode(owner) == SUBAGENT_ONESHOT)
		return err_set(e, ERR_INVALID_ARGUMENT, "a foreground isolated agent cannot start background subagents: "
		    "its worktree goes when its run ends");
	if (sub_wants_worktree(kind, t))
		return sub_iso_make(inv, description, prompt, background, kind, finish, started, e);
	child = sub_new_child(parent, description, background, kind ? kind->type : NULL, kind ? kind->model : NULL,
	    inv, NULL, NULL, e);
	if (child == NULL)
		return -1;
	memcpy(child_id, agent_id(child), SESS_ID_LEN + 1);
	sub_start_child(inv, child, prompt, background, finish);
	return 0;
}

/* ---- the extension ---- */

static void
sub_prompt(const struct agent *a, struct buf *b)
{
	const char *parent = agent_parent(a);
	const char *label = NULL;
	int depth;
	size_t i;
	json_t *ev;

	if (parent == NULL)
		return;
	depth = (int)json_integer_value(json_object_get(sess_header(a->sess), "delegationDepth"));
	static const char *const kinds[] = { "subagent/descriptor", NULL };
	json_t *evs = sess_collect(a->sess, kinds);
	json_array_foreach(evs, i, ev)
		label = json_string_value(json_object_get(json_object_get(ev, "data"), "label"));
	buf_printf(b, "\n\nYou are a subagent of %s, working on: %s, at delegation depth %d. Finish your "
	    "task and report back.", parent, label ? label : "a delegated task", depth);
	json_decref(evs);
}

const struct agent_ext subagent_ext = {
	.name = "subagent",
	.prompt = sub_prompt,
	.recover = subagent_redeliver,
	.hold_request = sub_iso_hold,
	.release = sub_iso_release,
};
