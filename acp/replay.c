/*
 * The session/load replay task (docs/architecture.md, "ACP"): the stored events of a session go
 * out as session/update notifications in slices, then the load's answer and the commands; while
 * it runs, what else is sent about that session is held (acp_hold) and follows the answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/commands.h"
#include "acp/internal.h"
#include "acp/rpc.h"
#include "acp/updates.h"
#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "session/log.h"
#include "session/stream.h"

/*
 * The session/load replay is sent in slices (at most ACP_REPLAY_UPDATES updates or about
 * ACP_REPLAY_BYTES each), one per loop iteration: stdin is read between slices, so other requests
 * are answered, and EOF, a signal or a session/close stop it. The first slice goes out at once, so a
 * short replay is whole before the next request is read. A slice corks the write queue (its updates
 * go out in a few big writes), and the replay pauses while more than ACP_REPLAY_AHEAD bytes wait
 * for the client, going on from acp_on_low. While it runs, everything else about the session
 * (live updates, a turn's answer) is held and follows the load's response; a prompt waits for it.
 */
#define ACP_REPLAY_UPDATES 256
#define ACP_REPLAY_BYTES (256ull * 1024)
#define ACP_REPLAY_SLICE_S 0.004
/* A replay waits while this much is queued for the client: what other sessions' updates queue
 * behind stays a few milliseconds of reading. */
#define ACP_REPLAY_AHEAD ((size_t)512 * 1024)

/* A child's history replayed inside its parent's, right after the call that made it (docs/contract.md
 * §22.4), depth first: per-session order is kept and sessions are not interleaved. */
#define ACP_REPLAY_DEPTH 16
struct acp_replay_frame {
	char sid[SESS_ID_LEN + 1];	/* the child */
	char parent[SESS_ID_LEN + 1];
	struct sess_stream *events;	/* its shown events, read in bounded pieces; NULL: none */
	struct acp_replay cur;
	struct buf prefix;		/* acp_update_prefix of its session */
};

/* One session/load replay in flight; the server's list of them is srv->replays. */
struct acp_replay_task {
	ev_idle idle;			/* first member: active while the next slice waits for the loop */
	struct acp_server *srv;
	struct acp_session *as;		/* NULL once stopped */
	json_t *id;			/* the session/load request's id: owned */
	struct sess_cursor *events;	/* owned: reads the log back, even after a close */
	struct acp_replay cur;
	int busy;			/* queued, or a slice is being sent: only that code frees it */
	int paused;			/* waits for acp_replays_resume */
	unsigned long long total0;	/* the write queue's total when it started */
	ev_tstamp t0;			/* when it started (the log says how long it took) */
	struct buf prefix;		/* acp_update_prefix of its session */
	struct acp_replay_frame *frames[ACP_REPLAY_DEPTH];	/* the children being replayed, owned */
	int depth;
	struct map announced;		/* child id -> (void *)1: announced in this replay */
	/* child id -> off_t * (owned): where a live child's replayed history stops, its file's length
	 * when the replay began or when it went live during it; what it appends later goes out live,
	 * held until the answer, so nothing is shown twice */
	struct map limits;
	struct acp_replay_task *next;
};

static void
acp_replay_frame_free(struct acp_replay_frame *f)
{
	acp_replay_free(&f->cur);
	sess_stream_close(f->events);
	buf_free(&f->prefix);
	free(f);
}

/* Whether child id can be replayed inside the frames open now: not deeper than ACP_REPLAY_DEPTH,
 * and not a session already open (a loop in the files is never followed). */
static int
acp_replay_can_push(const struct acp_replay_task *t, const char *id)
{
	if (t->depth == ACP_REPLAY_DEPTH || strcmp(id, t->as->id) == 0)
		return 0;
	for (int i = 0; i < t->depth; i++)
		if (strcmp(t->frames[i]->sid, id) == 0)
			return 0;
	return 1;
}

/* A child's events, from its file; at the end, why it ended early, if it did. */
static const char *
acp_replay_frame_pull(void *arg, size_t *len, json_t **ev)
{
	struct acp_replay_frame *f = arg;
	const char *line;

	*ev = NULL;
	if (f->events == NULL)
		return NULL;
	if ((line = sess_stream_next(f->events, len)) == NULL && sess_stream_error(f->events))
		log_warn("acp: the history of subagent %s stops early: %s", f->sid, sess_stream_error(f->events));
	return line;
}

static json_t *
acp_replay_frame_tree(void *arg, const char *line, size_t len)
{
	struct acp_replay_frame *f = arg;

	return sess_stream_tree(f->events, line, len);
}

/* Replays child id (linked by the update just sent on the top session) next: its history, read
 * from its file in bounded pieces as the slices go (session/stream.h), each line checked as a
 * load checks it. A file that cannot be opened gives no history, only the last state. */
static void
acp_replay_push(struct acp_replay_task *t, const char *parent, const char *id)
{
	struct acp_server *srv = t->srv;
	struct acp_replay_frame *f;
	char *path;
	struct err e;

	f = xcalloc(1, sizeof(*f));
	snprintf(f->sid, sizeof(f->sid), "%s", id);
	snprintf(f->parent, sizeof(f->parent), "%s", parent);
	path = sess_env_path(&srv->env, id);
	err_clear(&e);
	const off_t *limit = map_get(&t->limits, id);
	if ((f->events = sess_stream_open(path, acp_replay_types, limit ? *limit : -1, &e)) == NULL)
		log_warn("acp: %s: the history of subagent %s is not replayed: %s", t->as->id, id, e.msg);
	free(path);
	acp_replay_init(&f->cur, acp_replay_frame_pull, acp_replay_frame_tree, f, &srv->tools);
	f->cur.compaction = srv->client_compaction;
	f->cur.subagents = srv->client_subagents;
	f->cur.plan = srv->client_plan;
	f->cur.state_dir = srv->env.state_dir;
	snprintf(f->cur.sid, sizeof(f->cur.sid), "%s", id);
	buf_init(&f->prefix);
	acp_update_prefix(&f->prefix, id);
	t->frames[t->depth++] = f;
}

/* The top child's history is out: its last state on its parent's session, then its parent goes on. */
static void
acp_replay_pop(struct acp_replay_task *t)
{
	struct acp_replay_frame *f = t->frames[--t->depth];

	acp_send(t->srv, acp_update_msg(f->parent, acp_child_replay_state(t->srv, f->sid)));
	acp_replay_frame_free(f);
}

static void
acp_replay_limits_free(struct acp_replay_task *t)
{
	size_t pos = 0;
	const char *key;
	void *v;

	while (map_next(&t->limits, &pos, &key, &v))
		free(v);
	map_free(&t->limits);
}

/* Notes where child's replayed history stops, once: the length of its file now. */
static void
acp_replay_limit(struct acp_replay_task *t, struct agent *child)
{
	off_t *at;

	if (agent_sess(child) == NULL || map_get(&t->limits, agent_id(child)))
		return;
	at = xmalloc(sizeof(*at));
	*at = sess_length(agent_sess(child));
	map_put(&t->limits, agent_id(child), at);
}

void
acp_replays_child_live(struct acp_server *srv, struct agent *child)
{
	struct acp_session *root = acp_root_session(srv, agent_id(child));

	for (struct acp_replay_task *t = srv->replays; t; t = t->next) {
		if (t->as == NULL || t->as != root)
			continue;
		acp_replay_limit(t, child);
		/* its history is being replayed now: it stops there too */
		for (int i = 0; i < t->depth; i++)
			if (strcmp(t->frames[i]->sid, agent_id(child)) == 0 && t->frames[i]->events && agent_sess(child))
				sess_stream_limit(t->frames[i]->events, sess_length(agent_sess(child)));
	}
}

static void
acp_replay_free_task(struct acp_replay_task *t)
{
	struct acp_replay_task **pp;

	for (pp = &t->srv->replays; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	ev_idle_stop(t->srv->loop, &t->idle);
	while (t->depth > 0)
		acp_replay_frame_free(t->frames[--t->depth]);
	acp_replay_free(&t->cur);
	sess_cursor_free(t->events);
	acp_replay_limits_free(t);
	map_free(&t->announced);
	buf_free(&t->prefix);
	json_decref(t->id);
	free(t);
}

/* Lets go of the session; the last replay of it sends what was held meanwhile. May free t. */
static void
acp_replay_detach(struct acp_replay_task *t)
{
	struct acp_session *as = t->as;

	t->as = NULL;
	t->paused = 0;
	ev_idle_stop(t->srv->loop, &t->idle);
	if (--as->replays == 0 && as->held) {
		json_t *held = as->held, *msg;
		size_t i;
		as->held = NULL;
		json_array_foreach(held, i, msg) acp_send(t->srv, json_incref(msg));
		json_decref(held);
	}
	if (!t->busy)
		acp_replay_free_task(t);
}

/* A message view names id: a child not announced in this replay yet (a sibling made later than
 * the sender, as a Team's teammates are) is announced now on its parent's session, when the client
 * knows that one, so nothing names a child before its announcement (docs/contract.md §22.1); it
 * is announced again, with its history, at the call that made it. */
static void
acp_replay_announce_named(struct acp_replay_task *t, const char *id)
{
	struct acp_server *srv = t->srv;
	const struct sess_entry *en;

	if (strcmp(id, t->as->id) == 0 || map_get(&t->announced, id))
		return;
	for (int i = 0; i < t->depth; i++)
		if (strcmp(t->frames[i]->sid, id) == 0)
			return;
	en = sess_corpus_get(&srv->corpus, id);
	if (en == NULL || en->parent == NULL || (strcmp(en->parent, t->as->id) != 0 && !map_get(&t->announced, en->parent)))
		return;
	acp_send(srv, acp_update_msg(en->parent, acp_child_replay_announce(srv, id)));
	map_put(&t->announced, id, (void *)1);
}

/* Sends one slice; returns 1 once every update is out. */
static int
acp_replay_slice(struct acp_replay_task *t)
{
	struct acp_server *srv = t->srv;
	unsigned long long start = srv->wq.total;
	const char *bytes;
	size_t n = 0, len;
	/* Each event is read back and parsed here: a slice also ends after ACP_REPLAY_SLICE_S, so
	 * other sessions wait at most that long (not under --deterministic: its output must not
	 * depend on timing). */
	ev_tstamp until = ev_time() + ACP_REPLAY_SLICE_S;

	/* The slice's updates go out in a few big writes (at the uncork below), not one each. */
	wq_cork(&srv->wq);
	/* t->as goes NULL when a write error shuts the server down from inside acp_send. */
	while (t->as && n < ACP_REPLAY_UPDATES && srv->wq.total - start < ACP_REPLAY_BYTES
	    && !wq_ahead(&srv->wq, ACP_REPLAY_AHEAD)) {
		struct acp_replay_frame *f = t->depth ? t->frames[t->depth - 1] : NULL;
		struct acp_replay *cur = f ? &f->cur : &t->cur;
		const char *sid = f ? f->sid : t->as->id;
		if (!acp_replay_next_update(cur, &bytes, &len)) {
			if (f == NULL)
				break;
			acp_replay_pop(t);
			continue;
		}
		for (int k = 0; k < 2; k++)
			if (cur->named[k][0]) {
				acp_replay_announce_named(t, cur->named[k]);
				cur->named[k][0] = '\0';
			}
		if (cur->linked[0] && cur->next == cur->nends && acp_replay_can_push(t, cur->linked)) {
			/* the call that made a child: announced first, its history right after */
			char child[SESS_ID_LEN + 1];
			snprintf(child, sizeof(child), "%s", cur->linked);
			cur->linked[0] = '\0';
			acp_send(srv, acp_update_msg(sid, acp_child_replay_announce(srv, child)));
			map_put(&t->announced, child, (void *)1);
			acp_send_update_bytes(srv, f ? &f->prefix : &t->prefix, sid, bytes, len);
			if (t->as)	/* a write error may have stopped the replay */
				acp_replay_push(t, sid, child);
		} else {
			acp_send_update_bytes(srv, f ? &f->prefix : &t->prefix, sid, bytes, len);
		}
		n++;
		if (!srv->opts.deterministic && n % 16 == 0 && ev_time() > until)
			break;
	}
	wq_uncork(&srv->wq);	/* a write error here stops the replay too (t->as goes NULL) */
	return t->as ? t->depth == 0 && acp_replay_done(&t->cur) : 0;
}

/* The replay is out: its response, then the commands (docs/contract.md §3.1, §3.6), then what was held. */
static void
acp_replay_finish(struct acp_replay_task *t)
{
	struct acp_server *srv = t->srv;
	struct acp_session *as = t->as;

	t->busy = 1;		/* a write error in acp_send stops it: it is freed here */
	/* the replay waits while the client does not read: at most the high mark and a slice queue up */
	log_info("acp: %s: replayed %llu bytes in %.0f ms; at most %zu were queued at once", as->id,
	    srv->wq.total - t->total0, (ev_time() - t->t0) * 1e3, srv->wq.peak);
	json_t *result = json_object();
	if (as->agent)
		acp_session_describe(srv, as->agent, result);
	acp_send(srv, acp_result_new(t->id, result));
	acp_send(srv, acp_update_msg(as->id, acp_commands_update()));
	acp_session_notices(srv, as);
	t->busy = 0;
	if (t->as == NULL) {
		acp_replay_free_task(t);
		return;
	}
	acp_replay_detach(t);
	/* after what was held: a child's announcement on its parent's session comes first */
	acp_children_resumed(srv, as->id);
	acp_gate_release_prompt(as);
}

static void
acp_replay_continue(struct acp_replay_task *t)
{
	if (wq_ahead(&t->srv->wq, ACP_REPLAY_AHEAD))
		t->paused = 1;	/* acp_replays_resume goes on once the client has read most of it */
	else
		ev_idle_start(t->srv->loop, &t->idle);
}

/* One slice, then the response or the next slice; t->busy is set by the caller. */
static void
acp_replay_go(struct acp_replay_task *t)
{
	int done = t->as ? acp_replay_slice(t) : 0;

	t->busy = 0;
	if (t->as == NULL)
		acp_replay_free_task(t);	/* stopped while it was queued or sending */
	else if (done)
		acp_replay_finish(t);
	else
		acp_replay_continue(t);
}

static void
acp_replay_task_run(void *arg)
{
	acp_replay_go(arg);
}

/* The next slice is queued from the loop, so work that arrived meanwhile runs before it. */
static void
acp_replay_idle_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct acp_replay_task *t = (struct acp_replay_task *)w;

	(void)revents;
	ev_idle_stop(loop, w);
	t->busy = 1;
	runq_push(&t->srv->runq, acp_replay_task_run, t);
}

/* Stops the replays of as (session/close: each load is answered), or of every session (shutdown). */
void
acp_replays_stop(struct acp_server *srv, struct acp_session *as)
{
	for (;;) {
		struct acp_replay_task *t;
		json_t *id;
		/* From the head each time: a write error below can shut down and stop the others. */
		for (t = srv->replays; t && (t->as == NULL || (as && t->as != as)); t = t->next)
			;
		if (t == NULL)
			break;
		id = json_incref(t->id);
		acp_replay_detach(t);
		if (as)
			acp_send(srv, acp_error_new(id, ERR_UNKNOWN_SESSION,
			    "the session was closed while it was being loaded", xjson_pack("{s:s}", "sessionId", as->id)));
		json_decref(id);
	}
}

static const char *
acp_replay_pull(void *arg, size_t *len, json_t **ev)
{
	return sess_cursor_next_line(arg, len, ev, 1);
}

static json_t *
acp_replay_tree(void *arg, const char *line, size_t len)
{
	return sess_cursor_tree(arg, line, len);
}

/* Starts the replay of a live session that answers the session/load request id (borrowed). */
void
acp_replay_start(struct acp_server *srv, struct acp_session *as, json_t *id)
{
	struct acp_replay_task *t, **pp;

	t = xcalloc(1, sizeof(*t));
	ev_idle_init(&t->idle, acp_replay_idle_cb);
	t->srv = srv;
	t->as = as;
	t->id = json_incref(id);
	t->total0 = srv->wq.total;
	t->t0 = ev_time();
	buf_init(&t->prefix);
	acp_update_prefix(&t->prefix, as->id);
	t->events = sess_cursor_new_only(agent_sess(as->agent), 0, sess_nev(agent_sess(as->agent)), acp_replay_types);
	log_info("acp: the replay of %s begins (%zu events)", as->id, sess_nev(agent_sess(as->agent)));
	map_init(&t->limits);
	map_init(&t->announced);
	if (srv->client_subagents) {
		/* its live descendants' histories stop where they are now, as its own does */
		size_t pos = 0;
		const char *key;
		void *v;
		while (map_next(&srv->rt.agents, &pos, &key, &v))
			if (agent_parent(v) && acp_root_session(srv, key) == as)
				acp_replay_limit(t, v);
	}
	acp_replay_init(&t->cur, acp_replay_pull, acp_replay_tree, t->events, &srv->tools);
	t->cur.compaction = srv->client_compaction;
	t->cur.subagents = srv->client_subagents;
	t->cur.plan = srv->client_plan;
	t->cur.state_dir = srv->env.state_dir;
	snprintf(t->cur.sid, sizeof(t->cur.sid), "%s", as->id);
	for (pp = &srv->replays; *pp; pp = &(*pp)->next)
		;
	*pp = t;
	as->replays++;
	t->busy = 1;
	acp_replay_go(t);
}

/* The client read most of what was queued: paused replays go on. */
void
acp_replays_resume(struct acp_server *srv)
{
	for (struct acp_replay_task *t = srv->replays; t; t = t->next)
		if (t->paused) {
			t->paused = 0;
			ev_idle_start(srv->loop, &t->idle);
		}
}

/* The server goes: every replay is freed, answered or not. */
void
acp_replays_free(struct acp_server *srv)
{
	for (struct acp_replay_task *t = srv->replays, *next; t; t = next) {
		next = t->next;
		if (t->as)
			t->as->replays--;
		acp_replay_free_task(t);
	}
}
