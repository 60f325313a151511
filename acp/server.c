/*
 * ACP methods (SPEC §3.3) and the glue between ACP sessions and root agents.
 * Order contract: a session/new response precedes the session's updates; all
 * updates of a turn precede its session/prompt response, which leaves only
 * after the durability checkpoint (the after-sync queue).
 */
#include "acp/server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/commands.h"
#include "acp/rpc.h"
#include "acp/updates.h"
#include "base/log.h"
#include "base/version.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "agent/subagent.h"
#include "agent/team.h"
#include "tools/toolsets.h"

#define ACP_PAGE 50

struct acp_waiter {
	ev_timer timer;		/* first member */
	struct acp_server *srv;
	json_t *id;
	struct acp_waiter *next;
};

typedef json_t *acp_handler(struct acp_server *srv, struct acp_msg *m);

static void
acp_send(struct acp_server *srv, json_t *msg)
{
	acp_wq_push(&srv->wq, msg);
	json_decref(msg);
}

/* A session/update notification; steals update. */
static json_t *
acp_update_msg(const char *sid, json_t *update)
{
	return acp_notification_new("session/update", xjson_pack("{s:s, s:o}", "sessionId", sid, "update", update));
}

/* A message about a session that is being replayed waits until the replay is out (steals msg). */
static void
acp_hold(struct acp_session *as, json_t *msg)
{
	if (as->held == NULL)
		as->held = json_array();
	json_array_append_new(as->held, msg);
}

static void
acp_send_update(struct acp_server *srv, const char *sid, json_t *update)
{
	struct acp_session *as = map_get(&srv->sessions, sid);
	json_t *msg = acp_update_msg(sid, update);

	if (as && as->replays)
		acp_hold(as, msg);
	else
		acp_send(srv, msg);
}

static json_t *
acp_invalid_params(const json_t *id, const char *details)
{
	return acp_error_new(id, ACP_INVALID_PARAMS, "invalid_params", details, NULL);
}

static json_t *
acp_unknown_session(const json_t *id, const char *sid)
{
	return acp_error_new(id, ACP_UNKNOWN_SESSION, "unknown_session", "unknown session",
	    xjson_pack("{s:s}", "sessionId", sid));
}

/* An error from the session layer as a JSON-RPC error. */
static json_t *
acp_session_error(const json_t *id, const char *sid, const struct err *e)
{
	if (e->code && strcmp(e->code, "unknown_session") == 0)
		return acp_unknown_session(id, sid);
	if (e->code && strcmp(e->code, "invalid_params") == 0)
		return acp_invalid_params(id, e->msg);
	return acp_error_new(id, ACP_INTERNAL_ERROR, e->code ? e->code : "internal", e->msg,
	    xjson_pack("{s:s}", "sessionId", sid));
}

/* ---- agent hooks ---- */

static void
acp_hook_delta(void *arg, struct agent *a, int reasoning, const char *msg_id, const char *s, size_t n)
{
	struct acp_session *as = arg;

	(void)a;
	acp_send_update(as->srv, as->id, acp_update_chunk(reasoning, msg_id, s, n));
}

static void
acp_hook_tool_progress(void *arg, struct agent *a, const char *call_id, const char *child_id,
    const char *text)
{
	struct acp_session *as = arg;
	char *tcid = acp_tool_call_id(a->turn, a->step, call_id);	/* the call is in a's current step */

	acp_send_update(as->srv, as->id, acp_update_progress(tcid, child_id, text));
	free(tcid);
}

static void acp_prompt_start(struct acp_session *as, json_t *id, json_t *prompt);

/* By id: the session may be closed and reaped, or opened again, before it runs. */
struct acp_reply_task {
	struct acp_server *srv;
	char sid[SESS_ID_LEN + 1];
	json_t *reply;
};

/* Sends a held session/prompt response (after the sync) and starts a queued prompt. */
static void
acp_reply_task_run(void *arg)
{
	struct acp_reply_task *t = arg;
	struct acp_session *as = map_get(&t->srv->sessions, t->sid);

	if (as && as->replays) {
		/* The turn's updates are held behind a replay: so is its answer, and what it queued. */
		acp_hold(as, t->reply);
		free(t);
		return;
	}
	acp_send(t->srv, t->reply);
	free(t);
	if (as && as->queued_id && as->agent && !as->prompt_id) {
		json_t *id = as->queued_id, *prompt = as->queued_prompt;
		as->queued_id = as->queued_prompt = NULL;
		acp_prompt_start(as, id, prompt);
	}
}

static json_t *
acp_prompt_reply(const json_t *id, const json_t *reason)
{
	const char *kind = json_string_value(json_object_get(reason, "kind"));
	const char *stop;

	if (strcmp(kind, "completed") == 0)
		stop = "end_turn";
	else if (strcmp(kind, "max-tokens") == 0)
		stop = "max_tokens";
	else if (strcmp(kind, "max-steps") == 0)
		stop = "max_turn_requests";
	else if (strcmp(kind, "refusal") == 0)
		stop = "refusal";
	else if (strcmp(kind, "aborted") == 0 || strcmp(kind, "interrupted") == 0)
		stop = "cancelled";
	else {
		const char *msg = json_string_value(json_object_get(reason, "message"));
		const char *code = json_string_value(json_object_get(reason, "code"));
		char *details = xasprintf("turn failed: %s", msg ? msg : "unknown error");
		json_t *r = acp_error_new(id, ACP_INTERNAL_ERROR,
		    code && strcmp(code, "session_log_io") == 0 ? "session_log_io" : "turn_failed", details,
		    NULL);
		free(details);
		return r;
	}
	return acp_result_new(id, xjson_pack("{s:s}", "stopReason", stop));
}

static void
acp_hook_turn_end(void *arg, struct agent *a, const char *first_msg, const json_t *reason)
{
	struct acp_session *as = arg;
	struct acp_reply_task *t;

	(void)a;
	if (as->prompt_id == NULL || strcmp(first_msg, as->prompt_msg) != 0)
		return;		/* a turn the runtime started on its own */
	t = xmalloc(sizeof(*t));
	t->srv = as->srv;
	memcpy(t->sid, as->id, sizeof(t->sid));
	/* A cancelled prompt is cancelled, whatever the turn's last state was. */
	if (as->cancelled)
		t->reply = acp_result_new(as->prompt_id, xjson_pack("{s:s}", "stopReason", "cancelled"));
	else
		t->reply = acp_prompt_reply(as->prompt_id, reason);
	json_decref(as->prompt_id);
	as->prompt_id = NULL;
	as->cancelled = 0;
	runq_push_after_sync(&as->srv->runq, acp_reply_task_run, t);
}

static void
acp_observe_event(void *arg, struct sess *s, const json_t *ev)
{
	struct acp_session *as = arg;
	json_t *u = acp_update_live(ev, &as->srv->tools);

	(void)s;
	if (u)
		acp_send_update(as->srv, as->id, u);
}

static struct acp_session *
acp_session_attach(struct acp_server *srv, struct agent *a)
{
	struct acp_session *as = map_get(&srv->sessions, agent_id(a));

	if (as == NULL) {
		as = xcalloc(1, sizeof(*as));
		snprintf(as->id, sizeof(as->id), "%s", agent_id(a));
		as->srv = srv;
		map_put(&srv->sessions, as->id, as);
		if (srv->nall == srv->call) {
			srv->call = srv->call ? srv->call * 2 : 16;
			srv->all = xrealloc(srv->all, srv->call * sizeof(*srv->all));
		}
		srv->all[srv->nall++] = as;
	}
	as->agent = a;
	a->hooks.delta = acp_hook_delta;
	a->hooks.turn_end = acp_hook_turn_end;
	a->hooks.tool_progress = acp_hook_tool_progress;
	a->hooks.arg = as;
	sess_observe(a->sess, acp_observe_event, as);
	return as;
}

static void
acp_session_free(struct acp_session *as)
{
	json_decref(as->prompt_id);
	json_decref(as->queued_id);
	json_decref(as->queued_prompt);
	json_decref(as->held);
	json_decref(as->wait_id);
	json_decref(as->wait_prompt);
	free(as);
}

/* Frees a closed session from the run queue; one a load opened again meanwhile stays. */
static void
acp_session_reap(void *arg)
{
	struct acp_session *as = arg;
	struct acp_server *srv = as->srv;

	as->reap_queued = 0;
	if (as->agent || as->replays)
		return;
	map_del(&srv->sessions, as->id);
	for (size_t i = srv->nall; i-- > 0;)
		if (srv->all[i] == as) {
			memmove(srv->all + i, srv->all + i + 1, (srv->nall - i - 1) * sizeof(*srv->all));
			srv->nall--;
			break;
		}
	acp_session_free(as);
}

static void
acp_session_reap_later(struct acp_session *as)
{
	if (as->reap_queued)
		return;
	as->reap_queued = 1;
	runq_push(&as->srv->runq, acp_session_reap, as);
}

/* ---- methods ---- */

static json_t *
acp_m_initialize(struct acp_server *srv, struct acp_msg *m)
{
	srv->initialized = 1;
	return acp_result_new(m->id, xjson_pack(
	    "{s:i, s:{s:b, s:{s:b, s:b, s:b}, s:{s:b, s:b}, s:{s:{}, s:{}, s:{}}}, s:[], s:{s:s, s:s, s:s}}",
	    "protocolVersion", 1, "agentCapabilities", "loadSession", 1, "promptCapabilities", "image", 0,
	    "audio", 0, "embeddedContext", 1, "mcpCapabilities", "http", 0, "sse", 0,
	    "sessionCapabilities", "list", "resume", "close", "authMethods", "agentInfo", "name",
	    "acp-agent", "title", "acp-agent", "version", ACP_AGENT_VERSION));
}

static json_t *
acp_m_authenticate(struct acp_server *srv, struct acp_msg *m)
{
	(void)srv;
	return acp_result_new(m->id, json_object());
}

/* A string whose C text would stop short at a \u0000 (an id, a path, a command): refused, never cut. */
static int
acp_has_nul(const json_t *s)
{
	return json_is_string(s) && strlen(json_string_value(s)) != json_string_length(s);
}

/* Checks cwd and mcpServers of new/load/resume; returns an error reply or NULL. */
static json_t *
acp_check_cwd_mcp(struct acp_msg *m, int cwd_required)
{
	json_t *cwd = json_object_get(m->params, "cwd");
	json_t *mcp = json_object_get(m->params, "mcpServers");

	if (cwd == NULL && !cwd_required)
		return NULL;
	if (!json_is_string(cwd))
		return acp_invalid_params(m->id, "cwd: expected an absolute path string");
	if (acp_has_nul(cwd))
		return acp_invalid_params(m->id, "cwd: must not contain \\u0000");
	if (json_string_value(cwd)[0] != '/')
		return acp_invalid_params(m->id, "cwd: must be an absolute path");
	if (mcp && !json_is_array(mcp))
		return acp_invalid_params(m->id, "mcpServers: expected an array");
	if (json_array_size(mcp))
		log_warn("acp: %zu MCP server(s) ignored: MCP servers are not supported yet",
		    json_array_size(mcp));
	return NULL;
}

static json_t *
acp_m_session_new(struct acp_server *srv, struct acp_msg *m)
{
	json_t *bad = acp_check_cwd_mcp(m, 1);
	struct agent *a;
	struct err e;

	if (bad)
		return bad;
	a = agent_new_root(&srv->rt, json_string_value(json_object_get(m->params, "cwd")), &srv->tools,
	    NULL);
	/* Durable from the response on: a client that reconnects later finds it (SPEC §20). */
	err_clear(&e);
	if (agent_publish_root(a, "default", model_id(srv->rt.model), &e) < 0) {
		char sid[SESS_ID_LEN + 1];
		snprintf(sid, sizeof(sid), "%s", agent_id(a));
		agent_release(a);
		return acp_session_error(m->id, sid, &e);
	}
	acp_session_attach(srv, a);
	acp_send(srv, acp_result_new(m->id, xjson_pack("{s:s}", "sessionId", agent_id(a))));
	acp_send_update(srv, agent_id(a), acp_commands_update());
	return NULL;
}

/* Validates params.sessionId; returns it or NULL with *reply set. */
static const char *
acp_session_id_param(struct acp_msg *m, json_t **reply)
{
	const char *sid = json_string_value(json_object_get(m->params, "sessionId"));

	if (sid == NULL) {
		*reply = acp_invalid_params(m->id, "sessionId: expected a string");
		return NULL;
	}
	if (acp_has_nul(json_object_get(m->params, "sessionId"))) {
		*reply = acp_invalid_params(m->id, "sessionId: must not contain \\u0000");
		return NULL;
	}
	if (!sess_id_valid(sid)) {
		*reply = acp_invalid_params(m->id, "sessionId: malformed session id");
		return NULL;
	}
	return sid;
}

/* The live ACP session for sid, or NULL with *reply (-32002). */
static struct acp_session *
acp_live_session(struct acp_server *srv, struct acp_msg *m, json_t **reply)
{
	const char *sid = acp_session_id_param(m, reply);
	struct acp_session *as;

	if (sid == NULL)
		return NULL;
	as = map_get(&srv->sessions, sid);
	if (as == NULL || as->agent == NULL) {
		*reply = acp_unknown_session(m->id, sid);
		return NULL;
	}
	return as;
}

/* Opens a stored root session (load/resume); returns the ACP session or NULL with *reply. */
static struct acp_session *
acp_open_stored(struct acp_server *srv, struct acp_msg *m, json_t **reply)
{
	const char *sid = acp_session_id_param(m, reply);
	struct acp_session *as;
	struct sess_entry *en;
	struct agent *a;
	struct err e;

	if (sid == NULL)
		return NULL;
	if ((*reply = acp_check_cwd_mcp(m, 0)) != NULL)
		return NULL;
	as = map_get(&srv->sessions, sid);
	if (as && as->agent)
		return as;		/* already live here */
	en = sess_corpus_get(&srv->corpus, sid);
	if (en == NULL || en->gone) {
		*reply = acp_unknown_session(m->id, sid);
		return NULL;
	}
	if (en->parent) {
		*reply = acp_invalid_params(m->id, "sessionId: a subagent session cannot be loaded as an ACP session");
		return NULL;
	}
	err_clear(&e);
	a = agent_load(&srv->rt, sid, &srv->tools, NULL, &e);
	if (a == NULL) {
		*reply = acp_session_error(m->id, sid, &e);
		return NULL;
	}
	if (agent_parent(a)) {
		agent_release(a);
		*reply = acp_invalid_params(m->id, "sessionId: a subagent session cannot be loaded as an ACP session");
		return NULL;
	}
	as = acp_session_attach(srv, a);
	/* Children that settled while it was not live: their notices arrive now (SPEC §6.6). */
	subagent_redeliver(a);
	if (srv->team)
		team_recover(a);	/* roster, tasks and undelivered mail come back from the log */
	return as;
}

/*
 * The session/load replay is sent in slices (at most ACP_REPLAY_UPDATES updates or about
 * ACP_REPLAY_BYTES each), one per loop iteration: stdin is read between slices, so other requests
 * are answered, and EOF, a signal or a session/close stop it. The first slice goes out at once, so a
 * short replay is whole before the next request is read. It pauses while the write queue is above
 * its high mark and goes on from acp_on_low. While it runs, everything else about the session
 * (live updates, a turn's answer) is held and follows the load's response; a prompt waits for it.
 */
#define ACP_REPLAY_UPDATES 256
#define ACP_REPLAY_BYTES (256ull * 1024)

struct acp_replay_task {
	ev_idle idle;			/* first member: active while the next slice waits for the loop */
	struct acp_server *srv;
	struct acp_session *as;		/* NULL once stopped */
	json_t *id;			/* the session/load request's id: owned */
	json_t *events;			/* a reference: the cursor reads it, even after a close */
	struct acp_replay cur;
	int busy;			/* queued, or a slice is being sent: only that code frees it */
	int paused;			/* waits for acp_on_low */
	struct acp_replay_task *next;
};

static json_t *acp_prompt_begin(struct acp_session *as, json_t *id, const json_t *prompt);

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
	acp_replay_free(&t->cur);
	json_decref(t->events);
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
		json_array_foreach(held, i, msg) acp_wq_push(&t->srv->wq, msg);
		json_decref(held);
	}
	if (!t->busy)
		acp_replay_free_task(t);
}

/* Sends one slice; returns 1 once every update is out. */
static int
acp_replay_slice(struct acp_replay_task *t)
{
	struct acp_server *srv = t->srv;
	unsigned long long start = srv->wq.total;
	json_t *one = json_array();
	size_t n = 0;

	/* t->as goes NULL when a write error shuts the server down from inside acp_send. */
	while (t->as && n < ACP_REPLAY_UPDATES && srv->wq.total - start < ACP_REPLAY_BYTES
	    && !acp_wq_full(&srv->wq) && acp_replay_next(&t->cur, 1, one) == 1) {
		acp_send(srv, acp_update_msg(t->as->id, json_incref(json_array_get(one, 0))));
		json_array_clear(one);
		n++;
	}
	json_decref(one);
	return acp_replay_done(&t->cur);
}

/* A prompt that came during the replay (or was queued behind a cancelled one) runs now. */
static void
acp_session_after_replay(struct acp_session *as)
{
	json_t *id, *prompt, *reply;

	if (as->replays || as->agent == NULL || as->prompt_id || as->srv->shutting_down)
		return;
	if (as->queued_id) {
		id = as->queued_id, prompt = as->queued_prompt;
		as->queued_id = as->queued_prompt = NULL;
		acp_prompt_start(as, id, prompt);
	} else if (as->wait_id) {
		id = as->wait_id, prompt = as->wait_prompt;
		as->wait_id = as->wait_prompt = NULL;
		if ((reply = acp_prompt_begin(as, id, prompt)) != NULL)
			acp_send(as->srv, reply);
		json_decref(id);
		json_decref(prompt);
	}
}

/* A prompt that waited for a replay that will not end well is answered cancelled. */
static void
acp_session_drop_wait(struct acp_session *as)
{
	if (as->wait_id == NULL)
		return;
	acp_send(as->srv, acp_result_new(as->wait_id, xjson_pack("{s:s}", "stopReason", "cancelled")));
	json_decref(as->wait_id);
	json_decref(as->wait_prompt);
	as->wait_id = as->wait_prompt = NULL;
}

/* The replay is out: its response, then the commands (SPEC §3.1, §3.6), then what was held. */
static void
acp_replay_finish(struct acp_replay_task *t)
{
	struct acp_server *srv = t->srv;
	struct acp_session *as = t->as;

	t->busy = 1;		/* a write error in acp_send stops it: it is freed here */
	acp_send(srv, acp_result_new(t->id, json_object()));
	acp_send(srv, acp_update_msg(as->id, acp_commands_update()));
	t->busy = 0;
	if (t->as == NULL) {
		acp_replay_free_task(t);
		return;
	}
	acp_replay_detach(t);
	acp_session_after_replay(as);
}

static void
acp_replay_continue(struct acp_replay_task *t)
{
	if (acp_wq_full(&t->srv->wq))
		t->paused = 1;
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
static void
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
			acp_send(srv, acp_error_new(id, ACP_UNKNOWN_SESSION, "unknown_session",
			    "the session was closed while it was being loaded", xjson_pack("{s:s}", "sessionId", as->id)));
		json_decref(id);
	}
}

static json_t *
acp_m_session_load(struct acp_server *srv, struct acp_msg *m)
{
	json_t *reply = NULL;
	struct acp_session *as = acp_open_stored(srv, m, &reply);
	struct acp_replay_task *t, **pp;

	if (as == NULL)
		return reply;
	t = xcalloc(1, sizeof(*t));
	ev_idle_init(&t->idle, acp_replay_idle_cb);
	t->srv = srv;
	t->as = as;
	t->id = json_incref(m->id);
	t->events = json_incref(as->agent->sess->events);
	acp_replay_init(&t->cur, t->events, &srv->tools);
	for (pp = &srv->replays; *pp; pp = &(*pp)->next)
		;
	*pp = t;
	as->replays++;
	t->busy = 1;
	acp_replay_go(t);
	return NULL;
}

static json_t *
acp_m_session_resume(struct acp_server *srv, struct acp_msg *m)
{
	json_t *reply = NULL;
	struct acp_session *as = acp_open_stored(srv, m, &reply);

	if (as == NULL)
		return reply;
	acp_send(srv, acp_result_new(m->id, json_object()));
	/* Clients that only ever resume learn the commands too (SPEC §20). */
	acp_send_update(srv, as->id, acp_commands_update());
	return NULL;
}

static int
acp_entry_cmp(const void *pa, const void *pb)
{
	const struct sess_entry *a = *(struct sess_entry *const *)pa, *b = *(struct sess_entry *const *)pb;

	if (a->updated_at != b->updated_at)
		return a->updated_at > b->updated_at ? -1 : 1;
	return strcmp(b->id, a->id);
}

static json_t *
acp_m_session_list(struct acp_server *srv, struct acp_msg *m)
{
	json_t *jcwd = json_object_get(m->params, "cwd"), *jcur = json_object_get(m->params, "cursor");
	const char *cwd = json_string_value(jcwd);
	size_t n, k = 0, offset = 0;
	struct sess_entry **all;
	json_t *sessions, *result;

	if (jcwd && !json_is_null(jcwd) && (!cwd || cwd[0] != '/'))
		return acp_invalid_params(m->id, "cwd: must be an absolute path");
	if (acp_has_nul(jcwd))
		return acp_invalid_params(m->id, "cwd: must not contain \\u0000");
	if (jcur && !json_is_null(jcur)) {
		const char *c = json_string_value(jcur);
		char *end;
		if (c == NULL || strncmp(c, "o:", 2) != 0 || acp_has_nul(jcur))
			return acp_invalid_params(m->id, "cursor: not a cursor this agent returned");
		errno = 0;
		unsigned long long v = strtoull(c + 2, &end, 10);
		if (*end || errno || c[2] == '\0')
			return acp_invalid_params(m->id, "cursor: not a cursor this agent returned");
		offset = (size_t)v;
	}
	all = sess_corpus_list(&srv->corpus, &n);
	for (size_t i = 0; i < n; i++) {
		struct sess_entry *en = all[i];
		if (en->gone || en->state != SESS_ENTRY_OK || en->parent || (cwd && strcmp(en->cwd, cwd) != 0))
			continue;
		/* A live session that was never published and is not open here is nothing. */
		all[k++] = en;
	}
	qsort(all, k, sizeof(*all), acp_entry_cmp);
	sessions = json_array();
	for (size_t i = offset; i < k && i < offset + ACP_PAGE; i++) {
		char iso[32];
		clock_iso8601(all[i]->updated_at, iso, sizeof(iso));
		json_t *info = xjson_pack("{s:s, s:s, s:s}", "sessionId", all[i]->id, "cwd", all[i]->cwd,
		    "updatedAt", iso);
		if (all[i]->title)
			json_object_set_new(info, "title", json_string(all[i]->title));
		json_array_append_new(sessions, info);
	}
	result = xjson_pack("{s:o}", "sessions", sessions);
	if (offset + ACP_PAGE < k) {
		char cur[32];
		snprintf(cur, sizeof(cur), "o:%zu", offset + ACP_PAGE);
		json_object_set_new(result, "nextCursor", json_string(cur));
	}
	free(all);
	return acp_result_new(m->id, result);
}

static void
acp_session_cancel(struct acp_session *as)
{
	struct agent *a = as->agent;

	if (as->prompt_id)
		as->cancelled = 1;
	if (a->status == AGENT_RUNNING) {
		agent_cancel(a, "user");
	} else if (as->prompt_id && agent_withdraw(a, as->prompt_msg)) {
		/* The prompt had not started its turn: it ends here, cancelled. */
		json_t *reason = xjson_pack("{s:s, s:s}", "kind", "aborted", "cause", "user");
		acp_hook_turn_end(as, a, as->prompt_msg, reason);
		json_decref(reason);
	}
}

static json_t *
acp_m_session_close(struct acp_server *srv, struct acp_msg *m)
{
	json_t *reply = NULL;
	struct acp_session *as = acp_live_session(srv, m, &reply);

	if (as == NULL)
		return reply;
	acp_replays_stop(srv, as);
	acp_session_drop_wait(as);
	acp_session_cancel(as);
	json_decref(as->queued_id);
	json_decref(as->queued_prompt);
	as->queued_id = as->queued_prompt = NULL;
	sess_unobserve(as->agent->sess, acp_observe_event, as);
	agent_release(as->agent);
	memset(&as->agent->hooks, 0, sizeof(as->agent->hooks));	/* its struct waits for its reap */
	as->agent = NULL;
	acp_session_reap_later(as);
	return acp_result_new(m->id, json_object());
}

/* Checks a prompt's content blocks; returns an error text or NULL. */
static const char *
acp_check_prompt(const json_t *prompt, char *buf, size_t size)
{
	size_t i;
	json_t *blk;

	if (!json_is_array(prompt))
		return "prompt: expected an array of content blocks";
	json_array_foreach(prompt, i, blk) {
		const char *type = json_string_value(json_object_get(blk, "type"));
		if (type == NULL) {
			snprintf(buf, size, "prompt[%zu]: expected a content block with a type", i);
			return buf;
		}
		if (strcmp(type, "text") == 0) {
			if (!json_is_string(json_object_get(blk, "text"))) {
				snprintf(buf, size, "prompt[%zu].text: expected a string", i);
				return buf;
			}
		} else if (strcmp(type, "resource") == 0) {
			if (!json_is_object(json_object_get(blk, "resource"))) {
				snprintf(buf, size, "prompt[%zu].resource: expected an object", i);
				return buf;
			}
		} else if (strcmp(type, "resource_link") == 0) {
			if (!json_is_string(json_object_get(blk, "uri"))) {
				snprintf(buf, size, "prompt[%zu].uri: expected a string", i);
				return buf;
			}
		} else {
			snprintf(buf, size, "prompt[%zu]: content type \"%.20s\" is not supported", i, type);
			return buf;
		}
	}
	return NULL;
}

/* Posts a prompt to the session's agent; steals id and prompt. */
static void
acp_prompt_start(struct acp_session *as, json_t *id, json_t *prompt)
{
	as->prompt_id = id;
	as->cancelled = 0;
	agent_post(as->agent, prompt, xjson_pack("{s:s}", "kind", "user"), as->prompt_msg);
}

/* Runs a checked prompt on an idle session: a slash command answers now, else a turn starts. */
static json_t *
acp_prompt_begin(struct acp_session *as, json_t *id, const json_t *prompt)
{
	struct acp_server *srv = as->srv;

	if (acp_commands_match(prompt)) {
		char *text = acp_commands_run(as->agent, acp_commands_match(prompt));
		char mid[SESS_ID_LEN + 1];
		sess_ids_new(&srv->env.ids, mid);
		acp_send_update(srv, as->id, acp_update_chunk(0, mid, text, strlen(text)));
		free(text);
		return acp_result_new(id, xjson_pack("{s:s}", "stopReason", "end_turn"));
	}
	acp_prompt_start(as, json_incref(id ? id : json_null()), json_deep_copy(prompt));
	return NULL;		/* answered when its turn ends */
}

static json_t *
acp_m_session_prompt(struct acp_server *srv, struct acp_msg *m)
{
	json_t *reply = NULL, *prompt = json_object_get(m->params, "prompt");
	struct acp_session *as = acp_live_session(srv, m, &reply);
	char buf[160];
	const char *bad;

	if (as == NULL)
		return reply;
	if ((bad = acp_check_prompt(prompt, buf, sizeof(buf))) != NULL)
		return acp_invalid_params(m->id, bad);
	if (acp_commands_match(prompt) && acp_has_nul(json_object_get(json_array_get(prompt, 0), "text")))
		return acp_invalid_params(m->id, "prompt: a slash command must not contain \\u0000");
	if (as->replays && as->prompt_id == NULL) {
		/* The session is being loaded: the prompt runs once the replay and its response are out. */
		if (as->wait_id || as->queued_id)
			return acp_invalid_params(m->id, "a prompt is already in flight for this session");
		as->wait_id = json_incref(m->id ? m->id : json_null());
		as->wait_prompt = json_deep_copy(prompt);
		return NULL;
	}
	if (as->prompt_id) {
		if (as->cancelled && as->queued_id == NULL) {
			as->queued_id = json_incref(m->id ? m->id : json_null());
			as->queued_prompt = json_deep_copy(prompt);
			return NULL;
		}
		return acp_invalid_params(m->id, "a prompt is already in flight for this session");
	}
	return acp_prompt_begin(as, m->id, prompt);
}

static json_t *
acp_m_session_cancel(struct acp_server *srv, struct acp_msg *m)
{
	const char *sid = json_string_value(json_object_get(m->params, "sessionId"));
	struct acp_session *as = sid ? map_get(&srv->sessions, sid) : NULL;

	if (acp_has_nul(json_object_get(m->params, "sessionId"))) {
		/* A notification gets no answer: a sessionId cut at its NUL must not cancel another. */
		log_warn("acp: session/cancel with \\u0000 in its sessionId ignored");
		return NULL;
	}
	if (as && as->agent) {
		acp_session_drop_wait(as);
		acp_session_cancel(as);
	} else
		log_info("acp: session/cancel for unknown session ignored");
	return NULL;
}

static void
acp_waiter_done(struct acp_server *srv, struct acp_waiter *w, int idle)
{
	struct acp_waiter **pp;

	for (pp = &srv->waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	ev_timer_stop(srv->loop, &w->timer);
	acp_send(srv, acp_result_new(w->id, xjson_pack("{s:b}", "idle", idle)));
	json_decref(w->id);
	free(w);
}

static void
acp_waiter_timeout(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct acp_waiter *w = (struct acp_waiter *)t;

	(void)loop;
	(void)revents;
	acp_waiter_done(w->srv, w, 0);
}

static json_t *
acp_m_wait_idle(struct acp_server *srv, struct acp_msg *m)
{
	json_t *jt = json_object_get(m->params, "timeoutMs");
	struct acp_waiter *w;
	double timeout = 10.0;

	if (jt && (!json_is_integer(jt) || json_integer_value(jt) < 0))
		return acp_invalid_params(m->id, "timeoutMs: expected a non-negative integer");
	if (jt)
		timeout = (double)json_integer_value(jt) / 1000.0;
	w = xcalloc(1, sizeof(*w));
	w->srv = srv;
	w->id = json_incref(m->id ? m->id : json_null());
	ev_timer_init(&w->timer, acp_waiter_timeout, timeout, 0.);
	ev_timer_start(srv->loop, &w->timer);
	w->next = srv->waiters;
	srv->waiters = w;
	return NULL;		/* answered by the settle hook once idle */
}

static const struct acp_method {
	const char *name;
	acp_handler *fn;
	int notification;
} acp_methods[] = {
	{ "initialize", acp_m_initialize, 0 },
	{ "authenticate", acp_m_authenticate, 0 },
	{ "session/new", acp_m_session_new, 0 },
	{ "session/load", acp_m_session_load, 0 },
	{ "session/resume", acp_m_session_resume, 0 },
	{ "session/list", acp_m_session_list, 0 },
	{ "session/close", acp_m_session_close, 0 },
	{ "session/prompt", acp_m_session_prompt, 0 },
	{ "session/cancel", acp_m_session_cancel, 1 },
	{ "_acp_agent/wait_idle", acp_m_wait_idle, 0 },
};

static const struct acp_method *
acp_method_find(const char *name)
{
	for (size_t i = 0; i < sizeof(acp_methods) / sizeof(acp_methods[0]); i++)
		if (strcmp(acp_methods[i].name, name) == 0)
			return &acp_methods[i];
	return NULL;
}

void
acp_server_line(void *arg, const char *line, size_t len)
{
	struct acp_server *srv = arg;
	struct acp_msg m;
	json_t *reply = NULL;
	const struct acp_method *meth;

	if (srv->shutting_down)
		return;
	switch (acp_classify(line, len, &m, &reply)) {
	case ACP_MSG_INVALID:
		acp_send(srv, reply);
		return;
	case ACP_MSG_RESPONSE:
		if (json_is_null(m.id))
			log_info("acp: a response with id null was ignored");
		else
			log_info("acp: a response to an unknown request was ignored");
		break;
	case ACP_MSG_NOTIFICATION:
		meth = acp_method_find(m.method);
		if (meth && meth->notification && srv->initialized)
			meth->fn(srv, &m);
		else
			log_debug("acp: notification %s ignored", m.method);
		break;
	case ACP_MSG_REQUEST:
		meth = acp_method_find(m.method);
		if (meth == NULL || meth->notification) {
			reply = acp_error_new(m.id, ACP_METHOD_NOT_FOUND, "method_not_found", "unknown method",
			    xjson_pack("{s:s}", "method", m.method));
		} else if (!srv->initialized && meth->fn != acp_m_initialize) {
			reply = acp_error_new(m.id, ACP_INVALID_REQUEST, "not_initialized",
			    "initialize must come first", NULL);
		} else if (m.params && !json_is_object(m.params)) {
			reply = acp_invalid_params(m.id, "params: expected an object");
		} else {
			json_t *empty = NULL;
			if (m.params == NULL)
				m.params = empty = json_object();
			reply = meth->fn(srv, &m);
			json_decref(empty);
		}
		if (reply)
			acp_send(srv, reply);
		break;
	}
	acp_msg_free(&m);
}

static void
acp_overlong(void *arg)
{
	struct acp_server *srv = arg;

	acp_send(srv, acp_error_new(NULL, ACP_INVALID_REQUEST, "line_too_long",
	    "the line is longer than 64 MiB and was discarded", NULL));
}

/* ---- loop plumbing ---- */

static void
acp_sync_pass(void *arg)
{
	struct acp_server *srv = arg;

	sess_store_sync_due(&srv->store);
}

static void
acp_settle(void *arg)
{
	struct acp_server *srv = arg;

	if (srv->waiters && agent_rt_idle(&srv->rt) && srv->replays == NULL)
		while (srv->waiters)
			acp_waiter_done(srv, srv->waiters, 1);
	if (srv->shutting_down == 2 && acp_wq_pending(&srv->wq) == 0)
		ev_break(srv->loop, EVBREAK_ALL);
}

static void
acp_shutdown_task(void *arg)
{
	struct acp_server *srv = arg;

	agent_rt_shutdown(&srv->rt);
	for (size_t i = 0; i < srv->nall; i++)
		srv->all[i]->agent = NULL;
	srv->shutting_down = 2;
}

void
acp_server_shutdown(struct acp_server *srv)
{
	if (srv->shutting_down)
		return;
	srv->shutting_down = 1;
	acp_reader_pause(&srv->reader);
	/* A replay would keep the run queue busy: it stops now; waiting prompts are cancelled. */
	acp_replays_stop(srv, NULL);
	for (size_t i = 0; i < srv->nall; i++)
		acp_session_drop_wait(srv->all[i]);
	runq_push(&srv->runq, acp_shutdown_task, srv);
}

static void
acp_on_eof(void *arg)
{
	acp_server_shutdown(arg);
}

static void
acp_on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct acp_server *srv = w->data;

	(void)loop;
	(void)revents;
	log_info("acp: signal %d: shutting down", w->signum);
	acp_server_shutdown(srv);
}

static void
acp_on_high(void *arg)
{
	acp_reader_pause(&((struct acp_server *)arg)->reader);
}

static void
acp_on_low(void *arg)
{
	struct acp_server *srv = arg;

	if (!srv->shutting_down)
		acp_reader_resume(&srv->reader);
	for (struct acp_replay_task *t = srv->replays; t; t = t->next)
		if (t->paused) {
			t->paused = 0;
			ev_idle_start(srv->loop, &t->idle);
		}
}

static void
acp_on_write_error(void *arg)
{
	acp_server_shutdown(arg);
}

int
acp_server_init(struct acp_server *srv, struct ev_loop *loop, int in_fd, int proto_fd,
    const struct acp_options *opts, struct err *e)
{
	enum toolset_profile profile = TOOLSET_DEFAULT;

	memset(srv, 0, sizeof(*srv));
	srv->loop = loop;
	srv->opts = *opts;
	map_init(&srv->sessions);
	runq_init(&srv->runq, loop);
	runq_set_sync(&srv->runq, acp_sync_pass, srv);
	runq_set_settle(&srv->runq, acp_settle, srv);
	if (sess_env_init(&srv->env, opts->state_dir, opts->sync, opts->deterministic, opts->faults, e) < 0)
		return -1;
	sess_store_init(&srv->store, &srv->env);
	sess_corpus_init(&srv->corpus, &srv->env);
	if (sess_corpus_scan(&srv->corpus, e) < 0)
		return -1;
	if (strcmp(opts->model, "replay") == 0) {
		srv->model = model_replay_new(&srv->runq, opts->recording, e);
		if (srv->model == NULL)
			return -1;
	} else if (strcmp(opts->model, "builtin") == 0) {
		srv->model = model_builtin_new(&srv->runq);
	} else {
		srv->model = model_openai_new(&srv->runq, loop, &opts->openai, e);
		if (srv->model == NULL)
			return -1;
	}
	toolsets_parse_profile(opts->profile, &profile);
	toolbox_init(&srv->tools);
	toolsets_build(&srv->tools, profile);
	agent_rt_init(&srv->rt, &srv->runq, &srv->env, &srv->store, &srv->corpus, srv->model);
	srv->rt.max_steps = opts->max_steps;
	srv->rt.max_depth = opts->max_depth;
	srv->rt.max_active = opts->max_active;
	srv->rt.loop = loop;
	srv->team = profile == TOOLSET_TEAM;
	if (srv->team)
		team_install(&srv->rt);
	acp_wq_init(&srv->wq, loop, proto_fd);
	srv->wq.on_high = acp_on_high;
	srv->wq.on_low = acp_on_low;
	srv->wq.on_error = acp_on_write_error;
	srv->wq.arg = srv;
	acp_reader_init(&srv->reader, loop, in_fd, acp_server_line, acp_overlong, acp_on_eof, srv);
	ev_signal_init(&srv->sigint, acp_on_signal, SIGINT);
	ev_signal_init(&srv->sigterm, acp_on_signal, SIGTERM);
	srv->sigint.data = srv->sigterm.data = srv;
	ev_signal_start(loop, &srv->sigint);
	ev_signal_start(loop, &srv->sigterm);
	ev_unref(loop);
	ev_unref(loop);
	return 0;
}

void
acp_server_free(struct acp_server *srv)
{
	if (srv->loop) {
		ev_ref(srv->loop);
		ev_ref(srv->loop);
		ev_signal_stop(srv->loop, &srv->sigint);
		ev_signal_stop(srv->loop, &srv->sigterm);
	}
	while (srv->waiters)
		acp_waiter_done(srv, srv->waiters, 0);
	for (struct acp_replay_task *t = srv->replays, *next; t; t = next) {
		next = t->next;
		if (t->as)
			t->as->replays--;
		acp_replay_free_task(t);
	}
	agent_rt_shutdown(&srv->rt);
	if (srv->model)
		srv->model->ops->report(srv->model);
	for (size_t i = 0; i < srv->nall; i++)
		acp_session_free(srv->all[i]);
	free(srv->all);
	map_free(&srv->sessions);
	runq_stop(&srv->runq);
	agent_rt_free(&srv->rt);
	model_free(srv->model);
	toolbox_free(&srv->tools);
	sess_store_free(&srv->store);
	sess_corpus_free(&srv->corpus);
	sess_env_free(&srv->env);
	acp_reader_free(&srv->reader);
	acp_wq_free(&srv->wq);
}
