/*
 * Delegation. A child is an agent whose session header names its parent
 * (origin "subagent") and whose first own event is its descriptor. One-shot
 * children run one task for a waiting tool call and are disposed; continuable
 * children stay resident until they are quiescent, then settle: the child
 * logs subagent/settled (synced) and its parent is sent one notice, exactly
 * once across crashes (the notice carries source.settlement).
 */
#include "agent/subagent.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "session/repair.h"

static void sub_settle_check(void *arg);

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
static void
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
static int
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

static const char *
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
		if (a->released || a->mode != AGENT_MODE_CONTINUABLE)
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

static int
sub_capacity(struct agent_rt *rt, const char *for_id, struct err *e)
{
	char root[SESS_ID_LEN + 1];
	struct buf holders;
	int rc = 0;

	sub_root_of(rt, for_id, root);
	buf_init(&holders);
	if (sub_active_in_tree(rt, root, &holders) >= rt->max_active)
		rc = err_set(e, "ACTIVATION_LIMIT_REACHED",
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
		if (!a->released && a->mode == AGENT_MODE_CONTINUABLE && agent_parent(a) &&
		    strcmp(agent_parent(a), id) == 0)
			return 1;
	}
	return 0;
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

static const char *
sub_notice_line(const char *end)
{
	if (strcmp(end, "completed") == 0)
		return "finished and will do no further work unless you send it more.";
	if (strcmp(end, "aborted") == 0 || strcmp(end, "interrupted") == 0)
		return "was stopped before it finished.";
	if (strcmp(end, "max-tokens") == 0 || strcmp(end, "max-steps") == 0)
		return "ran out of room before it finished.";
	if (strcmp(end, "refusal") == 0)
		return "declined the task.";
	return "failed before it finished.";
}

char *
subagent_notice_text(const char *child_id, const char *end_kind, const char *final)
{
	if (final && *final)
		return xasprintf("Background subagent %s %s\nIts closing message:\n%s", child_id,
		    sub_notice_line(end_kind), final);
	return xasprintf("Background subagent %s %s\nIt left no closing message.", child_id,
	    sub_notice_line(end_kind));
}

/* ---- hooks of child agents ---- */

static void
sub_progress(struct agent *child)
{
	struct tool_inv *inv = child->fg_inv;
	struct agent *parent;

	if (inv == NULL)
		return;
	parent = inv->agent;
	if (parent->hooks.tool_progress)
		parent->hooks.tool_progress(parent->hooks.arg, parent, inv->call_id, agent_id(child),
		    child->fg_progress.data ? child->fg_progress.data : "");
}

static void
sub_child_delta(void *arg, struct agent *a, int reasoning, const char *msg_id, const char *s, size_t n)
{
	(void)arg;
	(void)msg_id;
	if (reasoning || a->fg_inv == NULL)
		return;
	buf_append(&a->fg_progress, s, n);
	sub_progress(a);
}

/* A foreground child's tool calls show in its parent's call by title. */
static void
sub_child_event(void *arg, struct sess *s, const json_t *ev)
{
	struct agent *a = arg;
	const json_t *data = json_object_get(ev, "data");
	const struct tool *t;
	json_t *args;
	char *title;

	(void)s;
	if (a->fg_inv == NULL || strcmp(json_string_value(json_object_get(ev, "type")), "tool/call") != 0)
		return;
	t = toolbox_find(a->tools, json_string_value(json_object_get(data, "name")));
	args = json_loads(json_string_value(json_object_get(data, "arguments")), 0, NULL);
	title = t && t->title ? t->title(t, args) : xstrdup(json_string_value(json_object_get(data, "name")));
	if (a->fg_progress.len && a->fg_progress.data[a->fg_progress.len - 1] != '\n')
		buf_puts(&a->fg_progress, "\n");
	buf_printf(&a->fg_progress, "[%s]\n", title);
	free(title);
	json_decref(args);
	sub_progress(a);
}

static void
sub_release_task(void *arg)
{
	agent_unpin(arg);
	agent_release(arg);
}

/* The foreground result for a one-shot child whose run ended with reason. */
static void
sub_foreground_result(struct agent *child, const json_t *reason, struct tool_result *r)
{
	const char *kind = json_string_value(json_object_get(reason, "kind"));
	const char *cause = json_string_value(json_object_get(reason, "message"));
	char *final = agent_final_text(child);
	const char *msg;
	char *full;

	if (strcmp(kind, "completed") == 0) {
		tool_result_set(r, final ? final : "", xjson_pack("{s:s, s:s}", "kind", "foreground", "output",
		    final ? final : ""));
		goto out;
	}
	if (strcmp(kind, "aborted") == 0 || strcmp(kind, "interrupted") == 0)
		msg = "subagent run was cancelled";
	else if (strcmp(kind, "max-tokens") == 0)
		msg = "subagent run hit its token limit before finishing";
	else if (strcmp(kind, "refusal") == 0)
		msg = "subagent declined the task";
	else if (strcmp(kind, "max-steps") == 0)
		msg = "subagent run failed: it reached the step limit";
	else
		msg = NULL;
	if (msg == NULL && cause)
		full = xasprintf("subagent run failed: %s", cause);
	else
		full = xstrdup(msg ? msg : "subagent run failed");
	if (final && *final) {
		char *with = xasprintf("%s\nPartial output before the run ended:\n%s", full, final);
		free(full);
		full = with;
	}
	tool_result_error(r, strcmp(kind, "aborted") == 0 ? "CANCELLED" : "SUBAGENT_FAILED", "%s", full);
	free(full);
out:
	snprintf(r->agent_id, sizeof(r->agent_id), "%s", agent_id(child));
	free(final);
}

static void
sub_child_turn_end(void *arg, struct agent *a, const char *first, const json_t *reason)
{
	(void)arg;
	(void)first;
	if (a->rt->shutting_down)
		return;
	if (a->mode == AGENT_MODE_ONESHOT) {
		struct tool_inv *inv = a->fg_inv;
		a->fg_inv = NULL;
		if (inv) {
			struct tool_result r = { 0 };
			sub_foreground_result(a, reason, &r);
			tool_inv_complete(inv, &r);
		}
		buf_free(&a->fg_progress);	/* its one run is over: nothing shows it any more */
		agent_push(a, sub_release_task);
		return;
	}
	agent_push(a, sub_settle_check);
}

static void
sub_adopt(struct agent *child, enum agent_mode mode)
{
	child->mode = mode;
	child->hooks.delta = sub_child_delta;
	child->hooks.turn_end = sub_child_turn_end;
	child->hooks.tool_progress = NULL;
	child->hooks.arg = child;
	sess_observe(child->sess, sub_child_event, child);
}

/* ---- delivery ---- */

static json_t *
sub_text_blocks(const char *text)
{
	return xjson_pack("[{s:s, s:s}]", "type", "text", "text", text);
}

/* Posts a settlement notice to a live parent. */
static void
sub_post_notice(struct agent *parent, const char *child_id, long epoch, const char *end, const char *final)
{
	char *text = subagent_notice_text(child_id, end, final);
	char *summary = xasprintf("Background subagent %s %s", child_id, sub_notice_line(end));

	agent_post(parent, sub_text_blocks(text),
	    xjson_pack("{s:s, s:s, s:s, s:{s:s, s:i}}", "kind", "subagent-settled", "senderSessionId",
		child_id, "summary", summary, "settlement", "childId", child_id, "epoch", (json_int_t)epoch),
	    NULL);
	free(summary);
	free(text);
}

/* The end kind of the last turn: "completed" before any, "error" for one that names none. */
static const char *
sub_last_end(const json_t *events)
{
	for (size_t i = json_array_size(events); i-- > 0;) {
		json_t *ev = json_array_get(events, i);
		if (strcmp(json_string_value(json_object_get(ev, "type")), "turn/end") == 0) {
			const char *kind = json_string_value(json_object_get(json_object_get(json_object_get(ev,
			    "data"), "reason"), "kind"));
			return kind ? kind : "error";
		}
	}
	return "completed";
}

/* Settles a quiescent continuable child: log, sync, release, notice. */
static void
sub_settle_check(void *arg)
{
	struct agent *a = arg;
	struct agent_rt *rt = a->rt;
	char child_id[SESS_ID_LEN + 1], parent_id[SESS_ID_LEN + 1];
	const char *end;
	char *final;
	struct err e;
	int delivered = a->delivered;
	long epoch = a->epoch;

	agent_unpin(a);
	if (a->released || rt->shutting_down || a->status == AGENT_RUNNING || a->inbox || a->kick_queued ||
	    a->mode != AGENT_MODE_CONTINUABLE || sub_owns_resident_children(rt, agent_id(a)))
		return;
	snprintf(child_id, sizeof(child_id), "%s", agent_id(a));
	snprintf(parent_id, sizeof(parent_id), "%s", agent_parent(a));
	end = sub_last_end(a->sess->events);
	err_clear(&e);
	if (sess_append(a->sess, "subagent/settled", xjson_pack("{s:i, s:s}", "epoch", (json_int_t)epoch,
		"end", end), &e) == NULL || sess_log_sync(a->sess->log, &e) < 0) {
		log_error("subagent %s: settlement not recorded: %s", child_id, e.msg);
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
		agent_release(a);
		struct agent *parent = agent_rt_get(rt, parent_id);
		if (delivered && parent)
			sub_post_notice(parent, child_id, epoch, end_copy, final);
		else if (delivered)
			log_info("subagent %s: parent %s not live; the notice waits for its next load", child_id,
			    parent_id);
		if (parent && parent->mode == AGENT_MODE_CONTINUABLE)
			agent_push(parent, sub_settle_check);
	}
	free(final);
}

/* ---- start ---- */

static struct agent *sub_cold_resume(struct agent *sender, const char *target, struct err *e);

/* A new child of parent with its descriptor written, or NULL with e (depth, capacity, log). */
static struct agent *
sub_new_child(struct agent *parent, const char *label, int background, struct err *e)
{
	struct agent_rt *rt = parent->rt;
	int depth = (int)json_integer_value(json_object_get(parent->sess->header, "delegationDepth")) + 1;
	struct agent *child;

	if (depth > rt->max_depth) {
		err_set(e, "DEPTH_EXCEEDED", "subagent depth %d exceeds maxDepth %d", depth, rt->max_depth);
		return NULL;
	}
	if (background && sub_capacity(rt, agent_id(parent), e) < 0)
		return NULL;
	child = agent_new_child(rt, parent, parent->tools);
	sub_adopt(child, background ? AGENT_MODE_CONTINUABLE : AGENT_MODE_ONESHOT);
	if (sess_append(child->sess, "subagent/descriptor", xjson_pack("{s:i, s:s, s:s, s:s}", "version", 2,
		"mode", background ? "continuable" : "one-shot", "provider", "in-process", "label", label ? label : ""),
		e) == NULL) {
		char msg[sizeof(e->msg)];
		snprintf(msg, sizeof(msg), "%s", e->msg);
		err_clear(e);
		err_set(e, "SESSION_LOG_IO", "%s", msg);
		agent_release(child);
		return NULL;
	}
	child->epoch = 1;
	child->delivered = 1;
	return child;
}

struct agent *
subagent_spawn(struct agent *parent, const char *label, json_t *content, json_t *source, struct err *e)
{
	struct agent *child = sub_new_child(parent, label, 1, e);

	if (child == NULL) {
		json_decref(content);
		json_decref(source);
		return NULL;
	}
	agent_post(child, content, source, NULL);
	return child;
}

struct agent *
subagent_resume(struct agent *parent, const char *child_id, struct err *e)
{
	return sub_cold_resume(parent, child_id, e);
}

/* The parent's call is cancelled: stop the one-shot child (cause parent) and let it go. */
static void
sub_fg_cancel(struct tool_inv *inv)
{
	struct agent *child = inv->state;

	inv->state = NULL;
	if (child == NULL)
		return;
	child->fg_inv = NULL;
	agent_cancel(child, "parent");
}

int
subagent_start(struct tool_inv *inv, const char *description, const char *prompt, int background,
    struct tool_result *out)
{
	struct agent *parent = inv->agent, *child;
	struct err e;
	json_t *content = sub_text_blocks(prompt);

	err_clear(&e);
	child = sub_new_child(parent, description, background, &e);
	if (child == NULL) {
		json_decref(content);
		tool_result_error(out, e.code, "%s", e.msg);
		return TOOL_DONE;
	}
	if (background) {
		char *guide = subagent_return_guidance(agent_id(parent));
		json_array_append_new(content, xjson_pack("{s:s, s:s}", "type", "text", "text", guide));
		free(guide);
	}
	agent_post(child, content, xjson_pack("{s:s, s:s}", "kind", "agent-message", "senderSessionId",
	    agent_id(parent)), NULL);
	if (background) {
		char text[80];
		snprintf(text, sizeof(text), "started subagent %s", agent_id(child));
		tool_result_set(out, text, xjson_pack("{s:s, s:s}", "kind", "continuable", "subagentId",
		    agent_id(child)));
		snprintf(out->agent_id, sizeof(out->agent_id), "%s", agent_id(child));
		return TOOL_DONE;
	}
	child->fg_inv = inv;
	inv->state = child;
	inv->cancel = sub_fg_cancel;
	return TOOL_PENDING;
}

/* ---- listing ---- */

static int
sub_is_subagent(const struct sess_entry *en)
{
	return en->origin && strcmp(en->origin, "subagent") == 0;
}

/* What one candidate is (§6.4): a diagnostic reason, or NULL with *omit set in the creation window. */
static const char *
sub_diagnostic(struct agent_rt *rt, const struct sess_entry *en, struct agent **live, int *omit)
{
	*live = agent_rt_get(rt, en->id);
	*omit = 0;
	if (en->state == SESS_ENTRY_UNSUPPORTED)
		return "unsupported";
	if (en->state == SESS_ENTRY_UNAVAILABLE)
		return "unavailable";
	if (en->state == SESS_ENTRY_CORRUPT)
		return "corrupt";
	if (en->mode == NULL) {
		if (*live)
			*omit = 1;	/* live, identity not written yet: the creation window */
		return *live ? NULL : "corrupt";
	}
	return NULL;
}

/* One listing pass; emit is called per subagent candidate in listing order. */
struct sub_lister {
	struct agent_rt *rt;
	int descendants;
	int model_view;		/* the §6.5 projection, else the §6.4 service entries */
	struct map parents;	/* ids that have children (service view) */
	json_t *out;
	json_t *child, *running, *inactive;	/* shared by every entry (strings never change) */
};

static void
sub_emit(struct sub_lister *ls, const struct sess_entry *en, const char *parent, int depth)
{
	struct agent *live;
	int omit;
	const char *reason = sub_diagnostic(ls->rt, en, &live, &omit);
	json_t *v;

	if (omit)
		return;
	if (reason) {
		v = xjson_pack("{s:s, s:s, s:s}", "kind", "diagnostic", "id", en->id, "reason", reason);
	} else if (ls->model_view) {
		if (strcmp(en->mode, "continuable") != 0)
			return;		/* one-shot children are traversed, never shown */
		/* The hot path of a large listing: no format parsing, no re-validation of UTF-8. */
		v = json_object();
		json_object_set_nocheck(v, "kind", ls->child);
		json_object_set_new_nocheck(v, "id", json_string_nocheck(en->id));
		json_object_set_new_nocheck(v, "label", json_string_nocheck(en->label ? en->label : ""));
		json_object_set_nocheck(v, "status", live && live->status == AGENT_RUNNING ? ls->running : ls->inactive);
	} else {
		v = xjson_pack("{s:s, s:s, s:s, s:s, s:s, s:b}", "kind", "child", "id", en->id, "mode",
		    en->mode, "label", en->label ? en->label : "", "activity", live ? "running" : "inactive",
		    "has_children", map_get(&ls->parents, en->id) != NULL);
	}
	if (ls->descendants) {
		json_object_set_new(v, "parent", json_string(parent));
		json_object_set_new(v, "depth", json_integer(depth));
	}
	json_array_append_new(ls->out, v);
}

/* Pre-order walk below node over tree (parent id -> NULL-terminated entry array). */
static void
sub_walk(struct sub_lister *ls, const struct map *tree, const char *node, int depth, struct map *visited)
{
	struct sess_entry **kids = map_get(tree, node);

	if (kids == NULL || map_get(visited, node))
		return;
	map_put(visited, node, (void *)1);
	for (size_t i = 0; kids[i]; i++) {
		if (sub_is_subagent(kids[i]))
			sub_emit(ls, kids[i], node, depth);
		sub_walk(ls, tree, kids[i]->id, depth + 1, visited);
	}
}

static void
sub_list_descendants(struct sub_lister *ls, const char *root)
{
	struct map tree, visited;
	size_t n, pos = 0;
	struct sess_entry **all = sess_corpus_list(ls->rt->corpus, &n);
	void *v;

	/* One snapshot, sorted once; grouping keeps each parent's children in that order. */
	qsort(all, n, sizeof(*all), sess_entry_order);
	map_init(&tree);
	map_init(&visited);
	for (size_t i = 0; i < n; i++) {
		struct sess_entry *en = all[i];
		if (en->gone || en->parent == NULL)
			continue;
		size_t *kids = map_get(&tree, en->parent);
		size_t k = kids ? kids[0] : 0;
		kids = xrealloc(kids, (k + 3) * sizeof(*kids));
		kids[0] = k + 1;
		kids[k + 1] = (size_t)en;
		kids[k + 2] = 0;
		map_put(&tree, en->parent, kids);
	}
	/* Shift each group so it reads as a NULL-terminated entry array. */
	while (map_next(&tree, &pos, NULL, &v)) {
		size_t *kids = v;
		memmove(kids, kids + 1, (kids[0] + 1) * sizeof(*kids));
	}
	sub_walk(ls, &tree, root, 1, &visited);
	pos = 0;
	while (map_next(&tree, &pos, NULL, &v))
		free(v);
	map_free(&tree);
	map_free(&visited);
	free(all);
}

static json_t *
sub_list(struct agent_rt *rt, const char *parent, int descendants, int model_view)
{
	struct sub_lister ls = { rt, descendants, model_view, { 0 }, json_array(), json_string_nocheck("child"),
		json_string_nocheck("running"), json_string_nocheck("inactive") };

	map_init(&ls.parents);
	if (!model_view) {
		size_t pos = 0;
		void *v;
		while (map_next(&rt->corpus->by_id, &pos, NULL, &v)) {
			struct sess_entry *en = v;
			if (en->parent && !en->gone)
				map_put(&ls.parents, en->parent, (void *)1);
		}
	}
	if (descendants) {
		sub_list_descendants(&ls, parent);
	} else {
		size_t n;
		struct sess_entry **kids = sess_corpus_children(rt->corpus, parent, &n);
		for (size_t i = 0; i < n; i++)
			if (sub_is_subagent(kids[i]))
				sub_emit(&ls, kids[i], parent, 1);
		free(kids);
	}
	map_free(&ls.parents);
	json_decref(ls.child);
	json_decref(ls.running);
	json_decref(ls.inactive);
	return ls.out;
}

json_t *
subagent_list_raw(struct agent_rt *rt, const char *parent, int descendants, struct err *e)
{
	(void)e;
	return sub_list(rt, parent, descendants, 0);
}

json_t *
subagent_list(struct agent *caller, int descendants, struct err *e)
{
	(void)e;
	return sub_list(caller->rt, agent_id(caller), descendants, 1);
}

/* ---- send_message ---- */

static void
sub_deliver(struct agent *sender, struct agent *target, const char *message, char *message_id)
{
	char *text = xasprintf("Agent %s sent a message: %s", agent_id(sender), message);

	target->delivered = 1;
	agent_post(target, sub_text_blocks(text), xjson_pack("{s:s, s:s}", "kind", "agent-message",
	    "senderSessionId", agent_id(sender)), message_id);
	free(text);
}

static long
sub_settled_epochs(const json_t *events)
{
	long epoch = 0;
	size_t i;
	json_t *ev;

	json_array_foreach(events, i, ev) {
		if (strcmp(json_string_value(json_object_get(ev, "type")), "subagent/settled") == 0) {
			long ep = (long)json_integer_value(json_object_get(json_object_get(ev, "data"), "epoch"));
			if (ep > epoch)
				epoch = ep;
		}
	}
	return epoch;
}

/* Cold resume (§6.6): checks in SPEC order, then load, rebuild, deliver. */
static struct agent *
sub_cold_resume(struct agent *sender, const char *target, struct err *e)
{
	struct agent_rt *rt = sender->rt;
	struct sess_entry *en = sess_corpus_get(rt->corpus, target);
	struct agent *child;

	if (en == NULL || en->gone || en->state != SESS_ENTRY_OK) {
		err_set(e, "NOT_RESUMABLE", "subagent \"%s\" is unavailable", target);
		return NULL;
	}
	if (en->parent == NULL || strcmp(en->parent, agent_id(sender)) != 0) {
		err_set(e, "UNAUTHORIZED", "subagent \"%s\" belongs to another parent session", target);
		return NULL;
	}
	if (!sub_is_subagent(en) || en->mode == NULL || strcmp(en->mode, "continuable") != 0) {
		err_set(e, "NOT_RESUMABLE", "subagent \"%s\" has no supported continuation state and cannot "
		    "be resumed; choose a different target", target);
		return NULL;
	}
	if (sub_capacity(rt, target, e) < 0)
		return NULL;
	struct err le;
	err_clear(&le);
	child = agent_load(rt, target, sender->tools, NULL, &le);
	if (child == NULL) {
		if (le.code && strcmp(le.code, "session_busy") == 0)
			err_set(e, "SESSION_BUSY", "subagent \"%s\" is held by another process", target);
		else if (le.code && strcmp(le.code, "session_log_io") == 0)
			err_set(e, "SESSION_LOG_IO", "subagent \"%s\" cannot be opened: %s", target, le.msg);
		else
			err_set(e, "NOT_RESUMABLE", "subagent \"%s\" is unavailable", target);
		return NULL;
	}
	if (sess_failure(child->sess)) {
		/* A read-only log: the child could take the message but never record its turn, its
		 * settlement or its notice; refuse before anything is delivered. */
		err_set(e, "SESSION_LOG_IO", "subagent \"%s\" cannot be written: %s", target,
		    sess_failure(child->sess));
		agent_release(child);
		return NULL;
	}
	sub_adopt(child, AGENT_MODE_CONTINUABLE);
	child->epoch = (int)sub_settled_epochs(child->sess->events) + 1;
	subagent_redeliver(child);
	return child;
}

int
subagent_send(struct agent *sender, const char *target, const char *message, char *message_id,
    struct err *e)
{
	struct agent_rt *rt = sender->rt;
	const char *parent = agent_parent(sender);
	struct agent *t;

	if (!sess_id_valid(target))
		return err_set(e, "INVALID_ARGUMENT", "invalid arguments: \"agent_id\" is not a valid agent id");
	if (parent && strcmp(target, parent) == 0) {
		if (sender->mode != AGENT_MODE_CONTINUABLE)
			return err_set(e, "UNAUTHORIZED", "agent \"%s\" is not a resident continuable child and "
			    "cannot send to parent \"%s\"", agent_id(sender), target);
		t = agent_rt_get(rt, target);
		if (t == NULL)
			return err_set(e, "PARENT_UNAVAILABLE", "direct parent is not live; the message was not "
			    "delivered");
		sub_deliver(sender, t, message, message_id);
		return 0;
	}
	t = agent_rt_get(rt, target);
	if (t && t->mode == AGENT_MODE_CONTINUABLE && agent_parent(t) &&
	    strcmp(agent_parent(t), agent_id(sender)) == 0) {
		sub_deliver(sender, t, message, message_id);
		return 0;
	}
	if (t && (agent_parent(t) == NULL || strcmp(agent_parent(t), agent_id(sender)) != 0))
		return err_set(e, "UNAUTHORIZED", "subagent \"%s\" belongs to another parent session", target);
	t = sub_cold_resume(sender, target, e);
	if (t == NULL)
		return -1;
	sub_deliver(sender, t, message, message_id);
	return 0;
}

/* ---- interrupt ---- */

int
subagent_interrupt(struct agent *caller, const char *target, struct err *e)
{
	struct agent *t;

	if (strcmp(target, agent_id(caller)) == 0)
		return err_set(e, "UNAUTHORIZED", "agent \"%s\" cannot interrupt itself", target);
	if (!sess_id_valid(target))
		return err_set(e, "INVALID_ARGUMENT", "invalid arguments: \"agent_id\" is not a valid agent id");
	t = agent_rt_get(caller->rt, target);
	/* Resident: live and not one-shot. A root (of another tree, or the caller's own) is resident too. */
	if (t == NULL || t->mode == AGENT_MODE_ONESHOT)
		return 0;	/* not resident: an accepted no-op */
	if (!sub_is_descendant(caller->rt, target, agent_id(caller)))
		return err_set(e, "UNAUTHORIZED", "subagent \"%s\" is not a live descendant of agent \"%s\"",
		    target, agent_id(caller));
	agent_cancel(t, "parent");
	return 0;
}

/* ---- redelivery ---- */

static int
sub_notice_known(const struct agent *parent, const char *child, long epoch)
{
	size_t i;
	json_t *ev;

	json_array_foreach(parent->sess->events, i, ev) {
		if (strcmp(json_string_value(json_object_get(ev, "type")), "user/message") != 0)
			continue;
		json_t *st = json_object_get(json_object_get(json_object_get(ev, "data"), "source"), "settlement");
		if (st && strcmp(json_string_value(json_object_get(st, "childId")), child) == 0 &&
		    json_integer_value(json_object_get(st, "epoch")) == epoch)
			return 1;
	}
	for (const struct agent_msg *m = parent->inbox; m; m = m->next) {
		json_t *st = json_object_get(m->source, "settlement");
		if (st && strcmp(json_string_value(json_object_get(st, "childId")), child) == 0 &&
		    json_integer_value(json_object_get(st, "epoch")) == epoch)
			return 1;
	}
	return 0;
}

void
subagent_redeliver(struct agent *parent)
{
	struct agent_rt *rt = parent->rt;
	size_t n;
	struct sess_entry **kids = sess_corpus_children(rt->corpus, agent_id(parent), &n);

	/* First only the settlements (the common answer: the notice is known); the final text before
	 * one is read by a second scan only for a notice that is missing. The scan checks every line
	 * without building it (SPEC §12's inspect). */
	static const char *const settled[] = { "subagent/settled", NULL };
	static const char *const keep[] = { "turn/start", "assistant/message", "subagent/settled", NULL };

	for (size_t i = 0; i < n; i++) {
		struct sess_scan img;
		struct err e;
		char *path;
		if (!sub_is_subagent(kids[i]) || kids[i]->state != SESS_ENTRY_OK || kids[i]->mode == NULL ||
		    strcmp(kids[i]->mode, "continuable") != 0)
			continue;
		path = sess_env_path(rt->env, kids[i]->id);
		err_clear(&e);
		long epoch = 0;
		if (sess_scan_file(path, settled, &img, &e) == 0 && img.kept)
			epoch = sub_settled_epochs(img.kept);
		sess_scan_free(&img);
		if (epoch > 0 && !sub_notice_known(parent, kids[i]->id, epoch) &&
		    sess_scan_file(path, keep, &img, &e) == 0 && img.kept) {
			/* The end and closing text of that residency: what precedes its settled event. */
			const char *end = "completed";
			char end_buf[32];
			for (size_t k = json_array_size(img.kept); k-- > 0;) {
				json_t *ev = json_array_get(img.kept, k);
				if (strcmp(json_string_value(json_object_get(ev, "type")), "subagent/settled") == 0 &&
				    json_integer_value(json_object_get(json_object_get(ev, "data"), "epoch")) == epoch) {
					const char *e2 = json_string_value(json_object_get(json_object_get(ev, "data"), "end"));
					snprintf(end_buf, sizeof(end_buf), "%s", e2 ? e2 : "completed");
					end = end_buf;
					json_t *cut = json_array();
					for (size_t j = 0; j < k; j++)
						json_array_append(cut, json_array_get(img.kept, j));
					json_decref(img.kept);
					img.kept = cut;
					break;
				}
			}
			struct agent tmp = { 0 };
			struct sess fake = { 0 };
			fake.events = img.kept;
			tmp.sess = &fake;
			char *final = agent_final_text(&tmp);
			char end_copy[32];
			snprintf(end_copy, sizeof(end_copy), "%s", end ? end : "completed");
			log_info("subagent %s: redelivering the notice of epoch %ld", kids[i]->id, epoch);
			sub_post_notice(parent, kids[i]->id, epoch, end_copy, final);
			free(final);
		}
		sess_scan_free(&img);
		free(path);
	}
	free(kids);
}
