/*
 * Children as ACP sessions (docs/contract.md §22), for a client that advertised
 * clientCapabilities.subagents: each child agent is a session of the client's whose id is the
 * child's. It is announced on its immediate parent's session (subagent_update) before anything
 * carries its id, its state follows its turns (running, requires_action while an ask of its waits,
 * idle with how the turn ended), and its own stream (deltas, tool calls) goes out under its id.
 * The runtime tells of children through rt->watch (agent/agent.h); the table here is what the
 * client has been told. A client may only cancel a child: every other method naming one is
 * refused (acp_child_refuse).
 */
#include <stdlib.h>
#include <string.h>

#include "acp/internal.h"
#include "agent/turnend.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "session/entry.h"
#include "session/evtype.h"
#include "session/log.h"

enum acp_child_state { ACP_CHILD_NONE, ACP_CHILD_RUNNING, ACP_CHILD_ASKING, ACP_CHILD_IDLE };

/* What the client has been told of one child. Owned by srv->children (until the server goes). */
struct acp_child {
	struct acp_server *srv;
	char id[SESS_ID_LEN + 1];
	char parent[SESS_ID_LEN + 1];
	enum acp_child_state state;
	int asks;			/* its asks waiting for the client */
	struct sess *observed;		/* its session while live (borrowed), or NULL */
	long long in, out;		/* the usage its turn's model requests reported */
	int usage;			/* some request reported usage */
};

static struct acp_child *
acp_child_get(struct acp_server *srv, const char *id)
{
	return map_get(&srv->children, id);
}

/* A new entry for child id of parent, in the table; nothing told yet. */
static struct acp_child *
acp_child_new(struct acp_server *srv, const char *id, const char *parent)
{
	struct acp_child *c = xcalloc(1, sizeof(*c));

	c->srv = srv;
	snprintf(c->id, sizeof(c->id), "%s", id);
	snprintf(c->parent, sizeof(c->parent), "%s", parent);
	map_put(&srv->children, c->id, c);
	return c;
}

/* {sessionUpdate: subagent_update, sessionId, ...fields} on the parent's session; steals fields. */
static void
acp_child_update(struct acp_child *c, json_t *fields)
{
	json_t *u = xjson_pack("{s:s, s:s}", "sessionUpdate", "subagent_update", "sessionId", c->id);

	json_object_update(u, fields);
	json_decref(fields);
	acp_send_update(c->srv, c->parent, u);
}

static void
acp_child_state(struct acp_child *c, enum acp_child_state st)
{
	static const char *const names[] = { "", "running", "requires_action", "idle" };

	if (c->state == st)
		return;
	c->state = st;
	acp_child_update(c, xjson_pack("{s:{s:s}}", "state", "state", names[st]));
}

static void acp_child_event(void *arg, struct sess *s, const json_t *ev);

/* A child working elsewhere than its parent (an isolated child's worktree, docs/contract.md §24):
 * its cwd in the update. */
static void
acp_child_cwd(struct acp_server *srv, const struct sess_entry *en, json_t *update)
{
	const struct sess_entry *up = en && en->parent ? sess_corpus_get(&srv->corpus, en->parent) : NULL;

	if (en && en->cwd && up && up->cwd && strcmp(en->cwd, up->cwd) != 0)
		json_object_set_new(update, "cwd", json_string(en->cwd));
}

/* The first update about a child: title, description, what the client may do, running. */
static struct acp_child *
acp_child_announce(struct acp_server *srv, struct agent *a)
{
	struct acp_child *c = acp_child_new(srv, agent_id(a), agent_parent(a));
	struct sess_entry *en = sess_corpus_get(&srv->corpus, agent_id(a));
	const char *title = en && en->label && *en->label ? en->label : agent_id(a);

	c->state = ACP_CHILD_RUNNING;
	json_t *u = xjson_pack("{s:o, s:s, s:{s:{}}, s:{s:s}}", "title", xjson_text(title, strlen(title)),
	    "description", agent_type_description(en), "capabilities", "cancel", "state", "state", "running");
	acp_child_cwd(srv, en, u);
	acp_child_update(c, u);
	return c;
}

/* The entry of a live child, announced now if the client has not heard of it; its session
 * observed. NULL for a client that does not show children. */
static struct acp_child *
acp_child_of(struct acp_server *srv, struct agent *a)
{
	struct acp_child *c;

	if (!srv->client_subagents)
		return NULL;
	if ((c = acp_child_get(srv, agent_id(a))) == NULL)
		c = acp_child_announce(srv, a);
	if (c->observed == NULL && agent_sess(a)) {
		c->observed = agent_sess(a);
		sess_observe(c->observed, acp_child_event, c);
	}
	return c;
}

/* ---- the runtime's watch (agent/agent.h) ---- */

static void
acp_watch_born(void *arg, struct agent *child, const struct tool_inv *inv)
{
	struct acp_server *srv = arg;
	struct acp_child *c = acp_child_of(srv, child);
	struct agent *parent;

	if (c == NULL)
		return;
	acp_replays_child_live(srv, child);
	if (inv == NULL)
		return;
	/* The delegating call links the child, first in its content (docs/contract.md §22.1). */
	parent = inv->agent;
	char *tcid = acp_tool_call_id(agent_turn(parent), agent_step(parent), inv->call_id);
	acp_send_update(srv, agent_id(parent), xjson_pack("{s:s, s:s, s:s, s:[{s:s, s:s}]}", "sessionUpdate",
	    "tool_call_update", "toolCallId", tcid, "status", "in_progress", "content", "type", "session",
	    "sessionId", c->id));
	free(tcid);
}

static void
acp_watch_turn_start(void *arg, struct agent *a)
{
	struct acp_child *c = acp_child_of(arg, a);

	if (c == NULL)
		return;
	c->in = c->out = 0;
	c->usage = 0;
	acp_child_state(c, ACP_CHILD_RUNNING);
}

static void
acp_watch_turn_end(void *arg, struct agent *a, const json_t *reason)
{
	struct acp_child *c = acp_child_of(arg, a);
	const struct turn_end *te;
	json_t *st;

	if (c == NULL)
		return;
	te = turn_end_of(json_string_value(json_object_get(reason, "kind")));
	c->state = ACP_CHILD_IDLE;
	c->asks = 0;
	st = xjson_pack("{s:s, s:s}", "state", "idle", "stopReason", te->stop_reason ? te->stop_reason : "error");
	if (te->stop_reason == NULL) {
		const char *msg = json_string_value(json_object_get(reason, "message"));
		json_object_set_new(st, "error", xjson_pack("{s:i, s:o}", "code", err_rpc(ERR_INTERNAL), "message",
		    xjson_text(msg ? msg : te->foreground ? te->foreground : "the turn failed",
		    strlen(msg ? msg : te->foreground ? te->foreground : "the turn failed"))));
	}
	if (c->usage)
		json_object_set_new(st, "usage", xjson_pack("{s:I, s:I, s:I}", "inputTokens", (json_int_t)c->in,
		    "outputTokens", (json_int_t)c->out, "totalTokens", (json_int_t)(c->in + c->out)));
	acp_child_update(c, xjson_pack("{s:o}", "state", st));
}

static void
acp_watch_delta(void *arg, struct agent *a, int reasoning, const char *msg_id, const char *s, size_t n)
{
	struct acp_child *c = acp_child_of(arg, a);

	if (c)
		acp_send_update(c->srv, c->id, acp_update_chunk(reasoning, msg_id, s, n));
}

static void
acp_watch_released(void *arg, struct agent *a)
{
	struct acp_server *srv = arg;
	struct acp_child *c = srv->client_subagents ? acp_child_get(srv, agent_id(a)) : NULL;

	if (c && c->observed) {
		sess_unobserve(c->observed, acp_child_event, c);
		c->observed = NULL;
	}
	/* let go before its first turn began (a close, a shutdown): it ends as a cancelled turn would */
	if (c && c->state != ACP_CHILD_IDLE) {
		c->state = ACP_CHILD_IDLE;
		acp_child_update(c, xjson_pack("{s:{s:s, s:s}}", "state", "state", "idle", "stopReason", "cancelled"));
	}
}

/* A child's appended event: its live update under its own id; its usage counted. */
static void
acp_child_event(void *arg, struct sess *s, const json_t *ev)
{
	struct acp_child *c = arg;
	const json_t *data = json_object_get(ev, "data");
	struct agent *a;

	(void)s;
	if (sess_ev_of(json_string_value(json_object_get(ev, "type"))) == SESS_EV_ASSISTANT_MESSAGE) {
		const json_t *u = json_object_get(data, "usage");
		const json_t *p = json_object_get(u, "prompt_tokens"), *k = json_object_get(u, "completion_tokens");
		if (json_is_integer(p) && json_is_integer(k) && json_integer_value(p) >= 0 && json_integer_value(k) >= 0) {
			c->in += json_integer_value(p);
			c->out += json_integer_value(k);
			c->usage = 1;
		}
		return;
	}
	a = agent_rt_get(&c->srv->rt, c->id);
	acp_send_event_update(c->srv, c->id, a, ev);
}

/* ---- asks (acp/asks.c) ---- */

/* One ask of a child's that waits for the client: its answer (or its cancel) ends the wait, once. */
struct acp_child_ask {
	struct acp_server *srv;
	char child[SESS_ID_LEN + 1];
	long id;			/* the request's, once sent */
	agent_client_done *done;	/* the runtime's, and its arg */
	void *arg;
	struct acp_child_ask *next;
};

static void
acp_child_asks_count(struct acp_server *srv, const char *child, int delta)
{
	struct acp_child *c = acp_child_get(srv, child);

	if (c == NULL)
		return;
	c->asks += delta;
	if (c->asks < 0)
		c->asks = 0;
	if (c->asks > 0 && c->state == ACP_CHILD_RUNNING)
		acp_child_state(c, ACP_CHILD_ASKING);
	else if (c->asks == 0 && c->state == ACP_CHILD_ASKING)
		acp_child_state(c, ACP_CHILD_RUNNING);
}

/* Takes w off the server's list. */
static void
acp_child_ask_unlink(struct acp_child_ask *w)
{
	for (struct acp_child_ask **pp = &w->srv->child_asks; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
}

static void
acp_child_ask_done(void *arg, const json_t *result, const json_t *error, const struct err *e)
{
	struct acp_child_ask *w = arg;

	acp_child_ask_unlink(w);
	acp_child_asks_count(w->srv, w->child, -1);	/* answered: running again */
	w->done(w->arg, result, error, e);
	free(w);
}

long
acp_child_ask(struct acp_server *srv, struct agent *a, json_t *params, agent_client_done *done, void *arg)
{
	struct acp_child_ask *w = xcalloc(1, sizeof(*w));

	acp_child_of(srv, a);	/* announced, as anything naming it must be */
	w->srv = srv;
	snprintf(w->child, sizeof(w->child), "%s", agent_id(a));
	w->done = done;
	w->arg = arg;
	w->next = srv->child_asks;
	srv->child_asks = w;
	acp_child_asks_count(srv, w->child, 1);
	w->id = acp_outbound_request(&srv->out, "session/request_permission", params, 0, acp_child_ask_done, w);
	return w->id;
}

int
acp_child_ask_cancel(struct acp_server *srv, long id)
{
	for (struct acp_child_ask *w = srv->child_asks; w; w = w->next) {
		if (w->id != id)
			continue;
		acp_child_ask_unlink(w);
		acp_child_asks_count(srv, w->child, -1);	/* withdrawn: its done never runs */
		free(w);
		return 1;
	}
	return 0;
}

/* ---- load and resume (docs/contract.md §22.4) ---- */

/* {state: "idle", stopReason: stop}, with the error §22.1 asks for when stop is "error"; new ref. */
static json_t *
acp_child_idle(const char *stop)
{
	json_t *st = xjson_pack("{s:s, s:s}", "state", "idle", "stopReason", stop);

	if (strcmp(stop, "error") == 0)
		json_object_set_new(st, "error", xjson_pack("{s:i, s:s}", "code", err_rpc(ERR_INTERNAL), "message",
		    "the turn failed"));
	return st;
}

/* Where a child that is not live stopped: the stop reason of its last turn (its file's tail). */
static const char *
acp_child_last_stop(struct acp_server *srv, const char *id)
{
	char kind[32], *path = sess_env_path(&srv->env, id);
	const char *stop;

	stop = sess_last_turn_end(path, kind, sizeof(kind)) ? turn_end_of(kind)->stop_reason : "end_turn";
	free(path);
	return stop ? stop : "error";
}

/* Announces en (a continuable child of parent) again: title, description, what the client may
 * do, and its state now. */
static void
acp_child_reannounce(struct acp_server *srv, const struct sess_entry *en)
{
	struct acp_child *c = acp_child_get(srv, en->id);
	struct agent *a = agent_rt_get(&srv->rt, en->id);
	const char *title = en->label && *en->label ? en->label : en->id;
	int running = a && agent_status(a) == AGENT_RUNNING;
	json_t *state;

	if (c == NULL)
		c = acp_child_new(srv, en->id, en->parent);
	c->state = running ? (c->asks ? ACP_CHILD_ASKING : ACP_CHILD_RUNNING) : ACP_CHILD_IDLE;
	if (running)
		state = xjson_pack("{s:s}", "state", c->state == ACP_CHILD_ASKING ? "requires_action" : "running");
	else
		state = acp_child_idle(acp_child_last_stop(srv, en->id));
	json_t *u = xjson_pack("{s:o, s:s, s:{s:{}}, s:o}", "title", xjson_text(title, strlen(title)),
	    "description", agent_type_description(en), "capabilities", "cancel", "state", state);
	acp_child_cwd(srv, en, u);
	acp_child_update(c, u);
	if (a && c->observed == NULL && agent_sess(a)) {
		c->observed = agent_sess(a);
		sess_observe(c->observed, acp_child_event, c);
	}
}

json_t *
acp_child_replay_announce(struct acp_server *srv, const char *id)
{
	struct sess_entry *en = sess_corpus_get(&srv->corpus, id);
	const char *title = en && en->label && *en->label ? en->label : id;

	json_t *u = xjson_pack("{s:s, s:s, s:o, s:s, s:{s:s}}", "sessionUpdate", "subagent_update", "sessionId", id,
	    "title", xjson_text(title, strlen(title)), "description", agent_type_description(en), "state",
	    "state", "running");
	acp_child_cwd(srv, en, u);
	return u;
}

json_t *
acp_child_replay_state(struct acp_server *srv, const char *id)
{
	struct agent *a = agent_rt_get(&srv->rt, id);

	if (a && agent_status(a) == AGENT_RUNNING)
		return xjson_pack("{s:s, s:s, s:{s:s}}", "sessionUpdate", "subagent_update", "sessionId", id, "state",
		    "state", "running");
	return xjson_pack("{s:s, s:s, s:o}", "sessionUpdate", "subagent_update", "sessionId", id, "state",
	    acp_child_idle(acp_child_last_stop(srv, id)));
}

/* Every continuable descendant of id, parent first; below a parent the client was never told of
 * (a one-shot child's), nothing: its announcement would go on a session it does not know. */
static void
acp_children_walk(struct acp_server *srv, const char *id, int depth)
{
	size_t n;
	struct sess_entry **kids;

	if (depth > 64)
		return;		/* deeper than any tree the runtime makes: a loop in the files */
	kids = sess_corpus_children(&srv->corpus, id, &n);
	for (size_t i = 0; i < n; i++) {
		const struct sess_entry *en = kids[i];
		if (en->state == SESS_ENTRY_OK && !en->gone && en->mode && strcmp(en->mode, "continuable") == 0)
			acp_child_reannounce(srv, en);
	}
	for (size_t i = 0; i < n; i++)
		if (acp_child_get(srv, kids[i]->id))
			acp_children_walk(srv, kids[i]->id, depth + 1);
	free(kids);
}

void
acp_children_resumed(struct acp_server *srv, const char *root)
{
	if (srv->client_subagents)
		acp_children_walk(srv, root, 0);
}

/* ---- what a client may send about a child (docs/contract.md §22.3) ---- */

int
acp_is_child_session(struct acp_server *srv, const char *sid)
{
	struct sess_entry *en;

	if (!srv->client_subagents)
		return 0;
	if (acp_child_get(srv, sid))
		return 1;
	en = sess_corpus_get(&srv->corpus, sid);
	return en && !en->gone && en->parent != NULL;
}

json_t *
acp_child_refuse(const json_t *id, const char *sid)
{
	char *details = xasprintf("session %s is a subagent session: only session/cancel applies to it", sid);
	json_t *r = acp_error_new(id, ERR_CHILD_SESSION, details, NULL);

	free(details);
	return r;
}

int
acp_child_cancel(struct acp_server *srv, const char *sid)
{
	struct agent *a;

	if (!acp_is_child_session(srv, sid))
		return 0;
	/* Its turn and its descendants' (cause client); an idle child: nothing to do. The parent is
	 * not touched; the idle cancelled state confirms it. */
	if ((a = agent_rt_get(&srv->rt, sid)) != NULL && agent_parent(a))
		agent_cancel_tree(a, "client");
	return 1;
}

void
acp_children_init(struct acp_server *srv)
{
	map_init(&srv->children);
	srv->watch.born = acp_watch_born;
	srv->watch.turn_start = acp_watch_turn_start;
	srv->watch.turn_end = acp_watch_turn_end;
	srv->watch.delta = acp_watch_delta;
	srv->watch.released = acp_watch_released;
	srv->watch.arg = srv;
}

/* The table: each entry's observer removed, the entries freed. */
static void
acp_children_clear(struct acp_server *srv)
{
	size_t pos = 0;
	const char *key;
	void *v;

	while (map_next(&srv->children, &pos, &key, &v)) {
		struct acp_child *c = v;
		if (c->observed)
			sess_unobserve(c->observed, acp_child_event, c);
		free(c);
	}
	map_free(&srv->children);
}

void
acp_children_reset(struct acp_server *srv)
{
	/* the asks still waiting stay: their requests are out and their answers come (a no-op here) */
	acp_children_clear(srv);
	map_init(&srv->children);
}

void
acp_children_free(struct acp_server *srv)
{
	acp_children_clear(srv);
	while (srv->child_asks) {
		struct acp_child_ask *w = srv->child_asks;
		srv->child_asks = w->next;
		free(w);	/* its request went with the client */
	}
}
