/*
 * The MCP bridge (docs/contract.md §18): the editor's MCP servers of a root session as tools of every agent
 * of its tree. One set per root (children call through it: one server process per root, never
 * per child): the clients (mcp/client.c), their tools as `struct tool`s named mcp__<server>__<tool>
 * in a toolbox sorted by name (rebuilt at the next step after a list changes), the mcp/server
 * events in the root's log, the failure line to the user, the unavailable servers in the system
 * prompt, the hold of a turn's first request while servers start. A call is kind "other", titled
 * "<server>: <tool>", judged as an exec call with the rule mcp:<server>:<tool>.
 *
 * Lifetimes: the set is counted: the root holds it until its reap, every invocation of one of
 * its tools and every call in flight hold it too; its tool records live as long as it does.
 * The clients are stopped at the root's release; each lingers in the runtime until its
 * process is gone, so the process exits only after them.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/ask.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "mcp/client.h"
#include "mcp/names.h"
#include "mcp/result.h"
#include "tools/cap.h"
#include "tools/tools.h"

static const char mcp_key;

struct mcp_set;

/* One tool as the model sees it; tool.svc points back here. */
struct mcp_rec {
	struct tool tool;
	char name[MCP_NAME_MAX + 1];
	char *raw;			/* the server's name of it */
	char *description;
	char *schema;
	char *title;			/* "<server>: <tool>" */
	size_t srv;			/* its server in the set */
	struct mcp_set *set;
};

struct mcp_srv {
	struct mcp_client *c;		/* NULL when refused (sse) or stopped */
	char *name;
	enum mcp_state logged;		/* the state of the last mcp/server event */
	int logged_any;
	unsigned long generation;	/* bumped at every ready list */
	json_t *logged_tools;		/* the tool names of the last ready event logged; owned */
	char *refused;			/* why it never started (sse), or NULL */
	int told;			/* the failure line was shown */
	struct mcp_set *set;
};

struct mcp_set {
	struct agent *root;		/* NULL once reaped */
	struct agent_rt *rt;
	char root_id[SESS_ID_LEN + 1];
	struct mcp_srv *srv;
	size_t nsrv;
	struct toolbox tb;		/* the tools now, sorted by name */
	int dirty;			/* a list changed: tb is rebuilt at the next look */
	struct mcp_rec **recs;		/* every record made, freed with the set */
	size_t nrecs;
	char **waiting;			/* ids of agents whose first request is held */
	size_t nwait;
	ev_timer wait_tm;		/* the hold ends at the startup limit in any case */
	json_t *queued;			/* mcp/server events not yet logged: [data] */
	long startup_ms;
	int refs;
};

/* One call in flight. */
struct mcp_run {
	struct tool_inv *inv;
	struct mcp_set *set;
	struct mcp_call *call;
};

static void
mcp_set_unref(struct mcp_set *set)
{
	if (--set->refs > 0)
		return;
	for (size_t i = 0; i < set->nsrv; i++) {
		if (set->srv[i].c)	/* never released (tests): stopped at once */
			mcp_client_free(set->srv[i].c);
		free(set->srv[i].name);
		json_decref(set->srv[i].logged_tools);
		free(set->srv[i].refused);
	}
	for (size_t i = 0; i < set->nrecs; i++) {
		free(set->recs[i]->raw);
		free(set->recs[i]->description);
		free(set->recs[i]->schema);
		free(set->recs[i]->title);
		free(set->recs[i]);
	}
	for (size_t i = 0; i < set->nwait; i++)
		free(set->waiting[i]);
	if (set->rt->loop)
		ev_timer_stop(set->rt->loop, &set->wait_tm);
	free(set->waiting);
	free(set->recs);
	free(set->srv);
	toolbox_free(&set->tb);
	json_decref(set->queued);
	free(set);
}

static void
mcp_set_free_root(void *p)
{
	struct mcp_set *set = p;

	set->root = NULL;
	mcp_set_unref(set);
}

/* The set of a's tree (its root's), or NULL when it has none. */
static struct mcp_set *
mcp_set_of(struct agent *a)
{
	struct agent *root = agent_root(a);

	return root ? agent_state(root, &mcp_key) : NULL;
}

/* ---- the tools ---- */

static char *
mcp_tool_title(const struct tool *t, const json_t *args)
{
	(void)args;
	return xstrdup(((const struct mcp_rec *)t->svc)->title);
}

static void
mcp_tool_hold(const struct tool *t, int delta)
{
	struct mcp_set *set = ((const struct mcp_rec *)t->svc)->set;

	if (delta > 0)
		set->refs++;
	else
		mcp_set_unref(set);
}

static int
mcp_tool_prepare(struct tool_inv *inv, const json_t *args, struct tool_plan *plan, struct tool_result *out)
{
	const struct mcp_rec *r = inv->tool->svc;

	(void)args;
	(void)out;
	plan->mcp_tool = xasprintf("%s:%s", r->set->srv[r->srv].name, r->raw);
	return 0;
}

static void
mcp_run_free(struct mcp_run *run)
{
	mcp_set_unref(run->set);
	free(run);
}

static void
mcp_tool_done(void *arg, const json_t *result, const struct err *e)
{
	struct mcp_run *run = arg;
	struct tool_inv *inv = run->inv;
	const struct mcp_rec *r = inv->tool->svc;
	struct tool_result res = { 0 };
	struct err ce;
	int is_error = 0;
	char *text = NULL;

	err_clear(&ce);
	if (result == NULL && e == NULL)
		err_set(&ce, ERR_MCP_PROTOCOL_ERROR, "no result");
	if (result != NULL && (text = mcp_result_text(result, &is_error, &ce)) == NULL)
		e = &ce;
	if (e == NULL && text == NULL)
		e = &ce;
	if (e != NULL) {
		tool_result_error(&res, e->code, "%s", e->msg);
	} else {
		size_t len = strlen(text);
		char spill[SESS_ID_LEN + 96];
		snprintf(spill, sizeof(spill), "mcp-%s-%s", agent_id(inv->agent), inv->call_id);
		tools_cap_text(inv->agent, spill, &text, &len);
		if (is_error) {	/* the whole (capped) text: tool_result_error would cut it at 1 KiB */
			res.text = xasprintf("Error: %s", text);
			res.error_code = ERR_MCP_TOOL_ERROR;
		} else {
			tool_result_set(&res, text, NULL);
		}
		res.output = xjson_pack("{s:s, s:s, s:b}", "server", r->set->srv[r->srv].name, "tool", r->raw,
		    "isError", is_error);
	}
	free(text);
	inv->state = NULL;
	mcp_run_free(run);
	tool_inv_complete(inv, &res);
}

static void
mcp_tool_cancel(struct tool_inv *inv)
{
	struct mcp_run *run = inv->state;

	if (run == NULL)
		return;
	mcp_call_cancel(run->call, "cancelled");
	inv->state = NULL;
	mcp_run_free(run);
}

static int
mcp_tool_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	const struct mcp_rec *r = inv->tool->svc;
	struct mcp_srv *srv = &r->set->srv[r->srv];
	struct mcp_run *run;
	struct err e;

	err_clear(&e);
	if (srv->c == NULL) {
		tool_result_error(out, ERR_MCP_NOT_READY, "MCP server \"%s\" is stopped", srv->name);
		return TOOL_DONE;
	}
	run = xcalloc(1, sizeof(*run));
	run->inv = inv;
	run->set = r->set;
	run->set->refs++;
	run->call = mcp_client_call(srv->c, r->raw, args, mcp_tool_done, run, &e);
	if (run->call == NULL) {
		mcp_run_free(run);
		tool_result_error(out, e.code, "%s", e.msg);
		return TOOL_DONE;
	}
	inv->state = run;
	inv->cancel = mcp_tool_cancel;
	return TOOL_PENDING;
}

/* The record for server i's tool t: the one made before when nothing changed, else a new one. */
static struct mcp_rec *
mcp_rec_get(struct mcp_set *set, size_t i, const struct mcp_tool *t)
{
	struct mcp_rec *r;

	for (size_t k = 0; k < set->nrecs; k++) {
		r = set->recs[k];
		if (r->srv == i && strcmp(r->raw, t->name) == 0 && strcmp(r->schema, t->schema) == 0 &&
		    strcmp(r->description, t->description) == 0)
			return r;
	}
	r = xcalloc(1, sizeof(*r));
	mcp_public_name(set->srv[i].name, t->name, r->name);
	r->raw = xstrdup(t->name);
	r->description = xstrdup(t->description);
	r->schema = xstrdup(t->schema);
	r->title = xasprintf("%s: %s", set->srv[i].name, t->name);
	r->srv = i;
	r->set = set;
	r->tool.name = r->name;
	r->tool.description = r->description;
	r->tool.schema = r->schema;
	r->tool.kind = "other";
	r->tool.concurrency_safe = 1;
	r->tool.title = mcp_tool_title;
	r->tool.run = mcp_tool_run;
	r->tool.svc = r;
	r->tool.cls = PERMIT_EXEC;
	r->tool.prepare = mcp_tool_prepare;
	r->tool.hold = mcp_tool_hold;
	set->recs = xrealloc(set->recs, (set->nrecs + 1) * sizeof(*set->recs));
	set->recs[set->nrecs++] = r;
	return r;
}

/* By public name (what bsearch looks a kept record up by). */
static int
mcp_rec_by_name(const void *a, const void *b)
{
	return strcmp((*(struct mcp_rec *const *)a)->name, (*(struct mcp_rec *const *)b)->name);
}

/* The same; of two tools with one name, the server listed first in mcpServers first. */
static int
mcp_rec_cmp(const void *a, const void *b)
{
	const struct mcp_rec *x = *(struct mcp_rec *const *)a, *y = *(struct mcp_rec *const *)b;
	int c = mcp_rec_by_name(a, b);

	return c ? c : (x->srv > y->srv) - (x->srv < y->srv);
}

/*
 * The tools the model gets, sorted by name (owned array of borrowed records, *n of them): every
 * ready server's, and of two with one public name the first server's (the other is left out, and
 * said so when warn). The toolbox and the ready events both come from here.
 */
static struct mcp_rec **
mcp_kept(struct mcp_set *set, size_t *np, int warn)
{
	struct mcp_rec **v = NULL;
	size_t n = 0, kept = 0;

	for (size_t i = 0; i < set->nsrv; i++) {
		size_t nt;
		const struct mcp_tool *t = set->srv[i].c ? mcp_client_tools(set->srv[i].c, &nt) : NULL;
		if (t == NULL)
			continue;
		v = xrealloc(v, (n + nt) * sizeof(*v));
		for (size_t k = 0; k < nt; k++)
			v[n++] = mcp_rec_get(set, i, &t[k]);
	}
	if (n > 0)
		qsort(v, n, sizeof(*v), mcp_rec_cmp);
	for (size_t k = 0; k < n; k++) {
		if (kept > 0 && strcmp(v[k]->name, v[kept - 1]->name) == 0) {
			if (warn)
				log_warn("mcp: two tools are both named %s; %s's is left out", v[k]->name,
				    set->srv[v[k]->srv].name);
			continue;
		}
		v[kept++] = v[k];
	}
	*np = kept;
	return v;
}

static void
mcp_rebuild(struct mcp_set *set)
{
	size_t n;
	struct mcp_rec **v;

	set->dirty = 0;
	v = mcp_kept(set, &n, 1);
	toolbox_free(&set->tb);
	toolbox_init(&set->tb);
	for (size_t k = 0; k < n; k++)
		toolbox_add(&set->tb, &v[k]->tool);
	free(v);
}

static const struct toolbox *
mcp_toolbox(struct agent *a)
{
	struct mcp_set *set = mcp_set_of(a);

	if (set == NULL)
		return NULL;
	if (set->dirty)
		mcp_rebuild(set);
	return &set->tb;
}

/* ---- the servers' states: the log, the failure line, held requests ---- */

/* What the model gets of a ready server now, in the server's order: not a tool that another
 * server's tool of the same name hides (a new reference). */
static json_t *
mcp_ready_names(struct mcp_srv *srv)
{
	struct mcp_set *set = srv->set;
	size_t nk, nt, self = (size_t)(srv - set->srv);
	struct mcp_rec **kept = mcp_kept(set, &nk, 0);
	const struct mcp_tool *t = mcp_client_tools(srv->c, &nt);
	json_t *names = json_array();

	for (size_t k = 0; k < nt; k++) {
		struct mcp_rec *r = mcp_rec_get(set, self, &t[k]), **at;
		at = bsearch(&r, kept, nk, sizeof(*kept), mcp_rec_by_name);
		if (at && *at == r)
			json_array_append_new(names, json_string(r->name));
	}
	free(kept);
	return names;
}

/*
 * Queues a state for the root's log. A ready event's tools are named again when it is written
 * (mcp_flush): which of two tools with one name the model gets depends on every server's list,
 * and the servers settle in any order; these are the names should the server be gone by then.
 */
static void
mcp_log_state(struct mcp_srv *srv, enum mcp_state st, const char *reason)
{
	struct mcp_set *set = srv->set;
	struct agent *root = set->root;
	json_t *data;

	if (root == NULL || agent_sess(root) == NULL)
		return;
	data = xjson_pack("{s:s, s:s}", "name", srv->name, "state", mcp_state_name(st));
	if (reason && reason[0])
		json_object_set_new(data, "reason", xjson_text(reason, strlen(reason)));
	if (st == MCP_READY)
		json_object_set_new(data, "tools", mcp_ready_names(srv));
	json_array_append_new(set->queued, data);	/* logged by mcp_flush */
}

/*
 * Whether a queued event says something new of its server (the tools named now when it is still
 * ready): only a change is logged, so a server that floods list_changed with the same list does
 * not fill the log with identical ready events.
 */
static int
mcp_event_news(struct mcp_srv *srv, json_t *data)
{
	const char *state = json_string_value(json_object_get(data, "state"));
	int ready = strcmp(state, mcp_state_name(MCP_READY)) == 0;
	json_t *names;

	if (ready && srv->c && mcp_client_state(srv->c) == MCP_READY)
		json_object_set_new(data, "tools", mcp_ready_names(srv));
	names = json_object_get(data, "tools");
	if (srv->logged_any && strcmp(mcp_state_name(srv->logged), state) == 0 &&
	    (!ready || json_equal(names, srv->logged_tools)))
		return 0;
	srv->logged_any = 1;
	for (enum mcp_state st = MCP_STARTING; st <= MCP_STOPPED; st++)
		if (strcmp(mcp_state_name(st), state) == 0)
			srv->logged = st;
	json_decref(srv->logged_tools);
	srv->logged_tools = ready ? json_incref(names) : NULL;
	return 1;
}

/*
 * The queued mcp/server events go into the root's log. They are logged at the next step
 * boundary of the tree (a model request), when held requests go, and at the release, not the
 * moment a process answers: the log's order is then the same however fast the servers are.
 */
/* The index of the server an event names (its place in mcpServers). */
static size_t
mcp_event_srv(const struct mcp_set *set, const json_t *data)
{
	const char *name = json_string_value(json_object_get(data, "name"));

	for (size_t i = 0; name && i < set->nsrv; i++)
		if (strcmp(set->srv[i].name, name) == 0)
			return i;
	return set->nsrv;
}

/*
 * The events of one flush in the order of the servers in mcpServers, each server's own in the
 * order they came: servers that settled while a turn waited are written together, and the
 * order they happened to settle in is a race no log should show (a stable insertion sort).
 */
static void
mcp_queued_in_order(struct mcp_set *set)
{
	size_t n = json_array_size(set->queued);
	json_t **v = xcalloc(n ? n : 1, sizeof(*v));

	for (size_t i = 0; i < n; i++) {
		json_t *d = json_array_get(set->queued, i);
		size_t k = i, at = mcp_event_srv(set, d);
		while (k > 0 && mcp_event_srv(set, v[k - 1]) > at) {
			v[k] = v[k - 1];
			k--;
		}
		v[k] = d;
	}
	json_t *sorted = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append(sorted, v[i]);
	json_decref(set->queued);
	set->queued = sorted;
	free(v);
}

static void
mcp_flush(struct mcp_set *set)
{
	struct agent *root = set->root;
	size_t i;
	json_t *data;

	if (root == NULL || json_array_size(set->queued) == 0)
		return;
	mcp_queued_in_order(set);
	json_array_foreach(set->queued, i, data) {
		size_t at = mcp_event_srv(set, data);
		if (at < set->nsrv && !mcp_event_news(&set->srv[at], data))
			continue;
		agent_append(root, "mcp/server", json_incref(data));
	}
	json_array_clear(set->queued);
}

/* The failure lines not yet shown, on the root's session (docs/contract.md §18). */
static void
mcp_tell(struct mcp_set *set)
{
	const struct agent_client *cl = set->rt->client;

	for (size_t i = 0; i < set->nsrv; i++) {
		struct mcp_srv *srv = &set->srv[i];
		const char *why = srv->refused;
		char *line;
		if (why == NULL && (srv->c == NULL || mcp_client_state(srv->c) != MCP_FAILED))
			continue;
		if (srv->told)
			continue;
		srv->told = 1;
		if (why == NULL)
			why = mcp_client_reason(srv->c);
		line = xasprintf("MCP server \"%s\" failed", srv->name);
		if (cl && cl->notice)
			cl->notice(cl->self, set->root_id, line, why);
		free(line);
	}
}

/* Whether a request waits: servers starting (a turn's first), a list being read again (any). */
static int
mcp_any_starting(const struct mcp_set *set)
{
	for (size_t i = 0; i < set->nsrv; i++)
		if (set->srv[i].c && (mcp_client_starting(set->srv[i].c) || mcp_client_listing(set->srv[i].c)))
			return 1;
	return 0;
}

static int
mcp_any_listing(const struct mcp_set *set)
{
	for (size_t i = 0; i < set->nsrv; i++)
		if (set->srv[i].c && mcp_client_listing(set->srv[i].c))
			return 1;
	return 0;
}

/* No server starts any more (or the limit passed): the held requests go, after the failure lines. */
static void
mcp_release_waiting(struct mcp_set *set, int force)
{
	char **w = set->waiting;
	size_t n = set->nwait;

	if (n == 0 || (!force && mcp_any_starting(set)))
		return;
	ev_timer_stop(set->rt->loop, &set->wait_tm);
	mcp_flush(set);
	set->waiting = NULL;
	set->nwait = 0;
	mcp_tell(set);
	for (size_t i = 0; i < n; i++) {
		struct agent *a = agent_rt_get(set->rt, w[i]);
		if (a)
			agent_request_release(a);
		free(w[i]);
	}
	free(w);
}

static void
mcp_on_state(void *arg, struct mcp_client *c)
{
	struct mcp_srv *srv = arg;
	enum mcp_state st = mcp_client_state(c);

	if (st == MCP_READY) {
		srv->generation++;
		srv->told = 0;	/* a later failure is told again */
	}
	srv->set->dirty = 1;
	mcp_log_state(srv, st, mcp_client_reason(c));
	/* a list that came or went may hide or free another server's names: their ready events
	 * are logged again when what they name changed */
	for (size_t i = 0; i < srv->set->nsrv; i++) {
		struct mcp_srv *o = &srv->set->srv[i];
		if (o != srv && o->c && mcp_client_state(o->c) == MCP_READY)
			mcp_log_state(o, MCP_READY, "");
	}
	mcp_release_waiting(srv->set, 0);
}

static void
mcp_wait_expired(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mcp_set *set = (struct mcp_set *)((char *)w - offsetof(struct mcp_set, wait_tm));

	(void)loop;
	(void)revents;
	log_warn("mcp: servers still starting after %ld ms; the turn goes on without them", set->startup_ms);
	mcp_release_waiting(set, 1);
}

static int
mcp_hold(struct agent *a, int first)
{
	struct mcp_set *set = mcp_set_of(a);

	if (set == NULL)
		return 0;
	/* A list_changed re-list counts from the next step: that step waits for it. What settled
	 * so far is logged when the wait ends, with the rest, in mcpServers order (mcp_flush): the
	 * order servers happen to settle in is a race the log must not show. */
	if (!(first ? mcp_any_starting(set) : mcp_any_listing(set))) {
		mcp_flush(set);
		return 0;
	}
	set->waiting = xrealloc(set->waiting, (set->nwait + 1) * sizeof(*set->waiting));
	set->waiting[set->nwait++] = xstrdup(agent_id(a));
	if (!ev_is_active(&set->wait_tm)) {
		ev_timer_set(&set->wait_tm, (double)set->startup_ms / 1000., 0.);
		ev_timer_start(set->rt->loop, &set->wait_tm);
	}
	return 1;
}

/* A turn ended (cancelled while its request was held, say): its hold is over, and the startup
 * limit's timer with the last hold. */
static void
mcp_turn_end(struct agent *a)
{
	struct mcp_set *set = mcp_set_of(a);
	size_t k = 0;

	if (set == NULL)
		return;
	for (size_t i = 0; i < set->nwait; i++) {
		if (strcmp(set->waiting[i], agent_id(a)) == 0)
			free(set->waiting[i]);
		else
			set->waiting[k++] = set->waiting[i];
	}
	set->nwait = k;
	if (k == 0 && set->rt->loop)
		ev_timer_stop(set->rt->loop, &set->wait_tm);
}

static void
mcp_turn_start(struct agent *a)
{
	struct mcp_set *set = agent_parent(a) ? NULL : agent_state(a, &mcp_key);

	/* failures are told once none is starting (then all at once, in mcpServers order) */
	if (set && !mcp_any_starting(set))
		mcp_tell(set);
}

static void
mcp_prompt(const struct agent *a, struct buf *b)
{
	struct mcp_set *set = mcp_set_of((struct agent *)a);
	int any = 0;

	for (size_t i = 0; set && i < set->nsrv; i++) {
		struct mcp_srv *srv = &set->srv[i];
		const char *why = srv->refused;
		if (why == NULL && (srv->c == NULL || mcp_client_state(srv->c) != MCP_FAILED))
			continue;
		if (why == NULL)
			why = mcp_client_reason(srv->c);
		buf_printf(b, "%s- %s: %s", any ? "\n" : "\n\n# Unavailable MCP servers\n\n"
		    "These MCP servers of the session could not be started; their tools are missing:\n",
		    srv->name, why);
		any = 1;
	}
}

static void
mcp_stopped(void *arg)
{
	agent_rt_linger(arg, -1);
}

/* A root released (session/close, shutdown): its servers stop (docs/contract.md §18's ladder). */
static void
mcp_release(struct agent *a)
{
	struct mcp_set *set = agent_parent(a) ? NULL : agent_state(a, &mcp_key);

	for (size_t i = 0; set && i < set->nsrv; i++) {
		struct mcp_srv *srv = &set->srv[i];
		if (srv->c == NULL)
			continue;
		if (mcp_client_state(srv->c) != MCP_FAILED)	/* a failed one stays failed */
			mcp_log_state(srv, MCP_STOPPED, NULL);
		if (mcp_client_idle(srv->c)) {
			/* no server runs (it failed): nothing to wait for; freed now, so that an exit
			 * right after cannot leave it behind (a hung server's client leaked so) */
			mcp_client_free(srv->c);
			srv->c = NULL;
			continue;
		}
		agent_rt_linger(set->rt, 1);
		mcp_client_stop(srv->c, mcp_stopped, set->rt);
		srv->c = NULL;
	}
	if (set) {
		mcp_flush(set);
		set->dirty = 1;
		for (size_t i = 0; i < set->nwait; i++)
			free(set->waiting[i]);
		set->nwait = 0;
		if (set->rt->loop)
			ev_timer_stop(set->rt->loop, &set->wait_tm);
	}
}

/* ---- session parameters ---- */

static long
mcp_env_ms(const char *name, long def)
{
	const char *v = getenv(name);
	char *end;
	long n;

	if (v == NULL || *v == '\0')
		return def;
	n = strtol(v, &end, 10);
	if (*end != '\0' || n <= 0) {
		log_warn("%s=\"%s\" is not a positive number of milliseconds; %ld is used", name, v, def);
		return def;
	}
	return n;
}

/* The servers start from the run queue, so the answer to session/new leaves first. */
static void
mcp_start_task(void *arg)
{
	struct agent *a = arg;
	struct mcp_set *set;

	agent_unpin(a);
	if (agent_released(a) || (set = agent_state(a, &mcp_key)) == NULL)
		return;
	for (size_t i = 0; i < set->nsrv; i++)
		if (set->srv[i].c && mcp_client_state(set->srv[i].c) == MCP_STARTING)
			mcp_client_start(set->srv[i].c);
	mcp_flush(set);
}

/* Checks mcpServers: an array of McpServer objects with distinct names. */
static int
mcp_check(const json_t *servers, struct err *e)
{
	size_t i, j;
	const json_t *s;

	if (servers == NULL || json_is_null(servers))
		return 0;
	if (!json_is_array(servers))
		return err_set(e, ERR_INVALID_PARAMS, "mcpServers: expected an array");
	json_array_foreach(servers, i, s) {
		const char *type = json_string_value(json_object_get(s, "type"));
		const char *name = json_string_value(json_object_get(s, "name"));
		struct mcp_config cfg;
		if (type && strcmp(type, "sse") == 0 && name && name[0]) {
			/* refused when it starts, with a line to the user (docs/contract.md §18) */
		} else if (mcp_config_parse(s, &cfg, e) < 0) {
			return -1;
		} else {
			mcp_config_free(&cfg);
		}
		for (j = 0; j < i; j++) {
			const char *other = json_string_value(json_object_get(json_array_get(servers, j), "name"));
			if (other != NULL && name != NULL && strcmp(other, name) == 0)
				return err_set(e, ERR_INVALID_PARAMS, "mcpServers: two servers are named \"%s\"", name);
		}
	}
	return 0;
}

static int
mcp_session_params(struct agent *a, const json_t *params, struct err *e)
{
	const json_t *servers = json_object_get(params, "mcpServers");
	struct mcp_limits lim;
	struct mcp_set *set;
	size_t i;
	const json_t *s;

	if (a == NULL)
		return mcp_check(servers, e);
	if (agent_parent(a) || json_array_size(servers) == 0 || agent_state(a, &mcp_key) != NULL)
		return 0;	/* a root already live keeps the servers it has */
	mcp_limits_default(&lim);
	lim.startup_ms = mcp_env_ms("ACP_AGENT_MCP_STARTUP_MS", lim.startup_ms);
	lim.call_ms = mcp_env_ms("ACP_AGENT_MCP_TOOL_TIMEOUT_MS", lim.call_ms);
	set = xcalloc(1, sizeof(*set));
	set->root = a;
	set->rt = agent_rt_of(a);
	snprintf(set->root_id, sizeof(set->root_id), "%s", agent_id(a));
	set->refs = 1;
	set->dirty = 1;
	set->startup_ms = lim.startup_ms;
	set->queued = json_array();
	ev_init(&set->wait_tm, mcp_wait_expired);
	toolbox_init(&set->tb);
	set->srv = xcalloc(json_array_size(servers), sizeof(*set->srv));
	agent_state_set(a, &mcp_key, set, mcp_set_free_root);
	json_array_foreach(servers, i, s) {
		struct mcp_srv *srv = &set->srv[set->nsrv++];
		const char *type = json_string_value(json_object_get(s, "type"));
		struct mcp_client_cb cb = { mcp_on_state, srv };
		struct mcp_config cfg;
		srv->set = set;
		srv->name = xstrdup(json_string_value(json_object_get(s, "name")));
		if (type && strcmp(type, "sse") == 0) {
			srv->refused = xstrdup("the sse transport is not supported");
			log_warn("mcp %s: refused: %s", srv->name, srv->refused);
			mcp_log_state(srv, MCP_FAILED, srv->refused);
			continue;
		}
		if (mcp_config_parse(s, &cfg, e) < 0 || agent_rt_of(a)->loop == NULL) {
			srv->refused = xstrdup(agent_rt_of(a)->loop == NULL ? "no event loop" : e->msg);
			mcp_log_state(srv, MCP_FAILED, srv->refused);
			continue;
		}
		srv->c = mcp_client_new(agent_rt_of(a)->loop, &cfg, sess_header_str(agent_sess(a), "cwd"), &lim, &cb);
		mcp_config_free(&cfg);
	}
	agent_push(a, mcp_start_task);	/* after the ACP answer is out: the processes start in the background */
	return 0;
}

const struct agent_ext mcp_ext = {
	.name = "mcp",
	.prompt = mcp_prompt,
	.turn_start = mcp_turn_start,
	.turn_end = mcp_turn_end,
	.release = mcp_release,
	.toolbox = mcp_toolbox,
	.hold_request = mcp_hold,
	.session_params = mcp_session_params,
};
