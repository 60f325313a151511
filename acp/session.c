/* The ACP session methods (docs/contract.md §3.3): new, load (its replay: acp/replay.c), resume, list, close. */
#include "acp/server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/commands.h"
#include "acp/internal.h"
#include "acp/rpc.h"
#include "acp/updates.h"
#include "agent/ask.h"
#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

#define ACP_PAGE 50


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
	const struct sess_entry *en = sess_corpus_get(&srv->corpus, as->id);
	as->titled = en && en->title;	/* a stored session's title was there before */
	agent_hooks(a)->delta = acp_hook_delta;
	agent_hooks(a)->turn_end = acp_hook_turn_end;
	agent_hooks(a)->tool_progress = acp_hook_tool_progress;
	agent_hooks(a)->usage = acp_hook_usage;
	agent_hooks(a)->compaction = acp_hook_compaction;
	agent_hooks(a)->arg = as;
	sess_observe(agent_sess(a), acp_observe_event, as);
	return as;
}

void
acp_session_notices(struct acp_server *srv, struct acp_session *as)
{
	const char *cut;
	const json_t *skipped, *f;
	size_t i;
	char *title;

	if (as == NULL || !srv->client_notices || as->agent == NULL || map_get(&srv->noticed, as->id))
		return;
	map_put(&srv->noticed, as->id, srv);	/* once per root session in this process */
	if ((cut = agent_instructions_cut(as->agent)) != NULL) {
		title = xasprintf(ACP_NOTICE_INSTRUCTIONS_CUT, cut);
		acp_send_update(srv, as->id, acp_update_notice("warning", title, ACP_NOTICE_INSTRUCTIONS_CUT_WHY));
		free(title);
	}
	skipped = agent_types_skipped(as->agent);
	json_array_foreach(skipped, i, f) {
		title = xasprintf(ACP_NOTICE_TYPE_SKIPPED, json_string_value(json_object_get(f, "path")));
		acp_send_update(srv, as->id, acp_update_notice("warning", title,
		    json_string_value(json_object_get(f, "reason"))));
		free(title);
	}
}

void
acp_session_free(struct acp_session *as)
{
	json_decref(as->prompt_id);
	acp_gate_free_prompt(as);
	json_decref(as->held);
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
	xmalloc_trim();		/* what the closed session held goes back to the system */
}

static void
acp_session_reap_later(struct acp_session *as)
{
	if (as->reap_queued)
		return;
	as->reap_queued = 1;
	runq_push(&as->srv->runq, acp_session_reap, as);
}

/* A string whose C text would stop short at a \u0000 (an id, a path, a command): refused, never cut. */
int
acp_has_nul(const json_t *s)
{
	return json_is_string(s) && strlen(json_string_value(s)) != json_string_length(s);
}

/* Checks cwd and the extensions' parameters (mcpServers) of new/load/resume; an error reply or NULL. */
static json_t *
acp_check_cwd_mcp(struct acp_server *srv, struct acp_msg *m, int cwd_required)
{
	json_t *cwd = json_object_get(m->params, "cwd");
	struct err e;

	err_clear(&e);
	if (agent_rt_session_params(&srv->rt, NULL, m->params, &e) < 0)
		return acp_error_new(m->id, e.code, e.msg, NULL);
	if (cwd == NULL && !cwd_required)
		return NULL;
	if (!json_is_string(cwd))
		return acp_invalid_params(m->id, "cwd: expected an absolute path string");
	if (acp_has_nul(cwd))
		return acp_invalid_params(m->id, "cwd: must not contain \\u0000");
	if (json_string_value(cwd)[0] != '/')
		return acp_invalid_params(m->id, "cwd: must be an absolute path");
	return NULL;
}

json_t *
acp_m_session_new(struct acp_server *srv, struct acp_msg *m)
{
	json_t *bad = acp_check_cwd_mcp(srv, m, 1);
	struct agent *a;
	struct err e;

	if (bad)
		return bad;
	a = agent_new_root(&srv->rt, json_string_value(json_object_get(m->params, "cwd")), &srv->tools,
	    NULL);
	/* Durable from the response on: a client that reconnects later finds it (docs/contract.md §20). */
	err_clear(&e);
	if (agent_publish_root(a, permit_mode_id(srv->rt.start_mode), model_id(srv->rt.model), &e) < 0) {
		char sid[SESS_ID_LEN + 1];
		snprintf(sid, sizeof(sid), "%s", agent_id(a));
		agent_release(a);
		return acp_session_error(m->id, sid, &e);
	}
	acp_session_attach(srv, a);
	agent_rt_session_params(&srv->rt, a, m->params, &e);	/* checked above: starts the MCP servers */
	json_t *result = xjson_pack("{s:s}", "sessionId", agent_id(a));
	acp_session_describe(srv, a, result);
	acp_send(srv, acp_result_new(m->id, result));
	acp_send_update(srv, agent_id(a), acp_commands_update());
	acp_session_notices(srv, map_get(&srv->sessions, agent_id(a)));
	return NULL;
}

/* Validates params.sessionId; returns it or NULL with *reply set. A child's session takes no
 * method but session/cancel (docs/contract.md §22.3). */
static const char *
acp_session_id_param(struct acp_server *srv, struct acp_msg *m, json_t **reply)
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
	if (acp_is_child_session(srv, sid)) {
		*reply = acp_child_refuse(m->id, sid);
		return NULL;
	}
	return sid;
}

/* The live ACP session for sid, or NULL with *reply (-32002). */
struct acp_session *
acp_live_session(struct acp_server *srv, struct acp_msg *m, json_t **reply)
{
	const char *sid = acp_session_id_param(srv, m, reply);
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

/*
 * A stored session read under its lease becomes the live root of an ACP session: the repair is made
 * durable, the root attached, the request's parameters applied (id, params: borrowed). Frees ld.
 * Returns the ACP session, or NULL with *reply.
 */
struct acp_session *
acp_open_loaded(struct acp_server *srv, struct sess_loading *ld, struct agent_conv *conv, const char *sid,
    const json_t *id, const json_t *params, json_t **reply)
{
	struct acp_session *as;
	struct sess *s;
	struct agent *a;
	struct err e;

	err_clear(&e);
	if ((s = sess_store_load_finish(&srv->store, ld, &e)) == NULL) {
		*reply = acp_session_error(id, sid, &e);
		return NULL;
	}
	a = agent_adopt_conv(&srv->rt, s, conv, &srv->tools, NULL);
	if (agent_parent(a)) {
		agent_release(a);
		*reply = acp_invalid_params(id, "sessionId: a subagent session cannot be loaded as an ACP session");
		return NULL;
	}
	as = acp_session_attach(srv, a);
	agent_rt_session_params(&srv->rt, a, params, &e);	/* checked before: starts the MCP servers */
	return as;
}

/*
 * Opens a stored root session (load/resume); returns the ACP session, or NULL with *reply; or NULL
 * with *reply NULL when the file is big enough to be read off the loop (acp/load.c answers later).
 * *opened: it was read now, and its children and Team are for the caller to bring back
 * (agent_rt_recover) once the answer is out or the replay has begun, so that what they say (a
 * notice's view naming a child) follows what the client is shown of them.
 */
static struct acp_session *
acp_open_stored(struct acp_server *srv, struct acp_msg *m, int replay, int *opened, json_t **reply)
{
	const char *sid = acp_session_id_param(srv, m, reply);
	struct acp_session *as;
	struct sess_entry *en;
	struct sess_loading *ld;
	struct err e;

	if (sid == NULL)
		return NULL;
	if ((*reply = acp_check_cwd_mcp(srv, m, 0)) != NULL)
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
	if ((ld = sess_store_load_start(&srv->store, sid, &e)) == NULL) {
		*reply = acp_session_error(m->id, sid, &e);
		return NULL;
	}
	if (sess_loading_size(ld) >= srv->load_offload_min) {
		acp_load_offload(srv, ld, sid, m, replay);
		return NULL;
	}
	sess_loading_read(ld, NULL);	/* small: a few milliseconds on the loop */
	as = acp_open_loaded(srv, ld, NULL, sid, m->id, m->params, reply);
	*opened = as != NULL;	/* docs/contract.md §6.6: see acp_open_loaded */
	return as;
}

json_t *
acp_m_session_load(struct acp_server *srv, struct acp_msg *m)
{
	json_t *reply = NULL;
	int opened = 0;
	struct acp_session *as = acp_open_stored(srv, m, 1, &opened, &reply);

	if (as == NULL)
		return reply;
	acp_replay_start(srv, as, m->id);
	if (opened)
		agent_rt_recover(as->agent);	/* held while the replay is out, else after its answer */
	return NULL;
}

/* Answers a session/resume request id (borrowed) of a live session. */
void
acp_resume_answer(struct acp_server *srv, struct acp_session *as, json_t *id)
{
	json_t *result = json_object();

	acp_session_describe(srv, as->agent, result);
	acp_send(srv, acp_result_new(id, result));
	/* Clients that only ever resume learn the commands too (docs/contract.md §20). */
	acp_send_update(srv, as->id, acp_commands_update());
	acp_session_notices(srv, as);
	acp_children_resumed(srv, as->id);
}

json_t *
acp_m_session_resume(struct acp_server *srv, struct acp_msg *m)
{
	json_t *reply = NULL;
	int opened = 0;
	struct acp_session *as = acp_open_stored(srv, m, 0, &opened, &reply);

	if (as == NULL)
		return reply;
	acp_resume_answer(srv, as, m->id);
	if (opened)
		agent_rt_recover(as->agent);	/* after the answer and the children's announcements */
	return NULL;
}

/*
 * A session/list cursor: "k:<updatedAt>:<id>" (what we return: the last entry of the page; the
 * next page starts after it, so sessions that move meanwhile neither repeat nor hide others) or
 * "o:<n>" (an offset, what earlier versions returned). Returns the corpus root list position the
 * next page reads down from, or -1 when the text is not a cursor of ours.
 */
static long long
acp_list_cursor(const struct sess_order *o, const char *c, const char *cwd)
{
	char *end;
	unsigned long long skip;
	long long t;
	size_t i;

	errno = 0;
	if (strncmp(c, "k:", 2) == 0) {
		t = strtoll(c + 2, &end, 10);
		if (errno || end == c + 2 || *end != ':' || !sess_id_valid(end + 1))
			return -1;
		return (long long)sess_order_lower(o, t, end + 1);
	}
	if (strncmp(c, "o:", 2) != 0 || c[2] < '0' || c[2] > '9')
		return -1;
	skip = strtoull(c + 2, &end, 10);
	if (*end || errno)
		return -1;
	if (cwd == NULL)
		return skip >= o->n ? 0 : (long long)(o->n - skip);
	for (i = o->n; i > 0 && skip > 0; i--)
		if (strcmp(o->v[i - 1]->cwd, cwd) == 0)
			skip--;
	return (long long)i;
}

json_t *
acp_m_session_list(struct acp_server *srv, struct acp_msg *m)
{
	json_t *jcwd = json_object_get(m->params, "cwd"), *jcur = json_object_get(m->params, "cursor");
	const char *cwd = json_string_value(jcwd);
	const struct sess_order *o;
	const struct sess_entry *last = NULL;
	json_t *sessions, *result;
	size_t i, k = 0;

	if (jcwd && !json_is_null(jcwd) && (!cwd || cwd[0] != '/'))
		return acp_invalid_params(m->id, "cwd: must be an absolute path");
	if (acp_has_nul(jcwd))
		return acp_invalid_params(m->id, "cwd: must not contain \\u0000");
	if (jcur && !json_is_null(jcur) && (!json_is_string(jcur) || acp_has_nul(jcur)))
		return acp_invalid_params(m->id, "cursor: not a cursor this agent returned");
	/* Newest activity first: the root list read from its end, page by page. */
	o = sess_corpus_roots(&srv->corpus);
	i = o->n;
	if (jcur && !json_is_null(jcur)) {
		long long at = acp_list_cursor(o, json_string_value(jcur), cwd);
		if (at < 0)
			return acp_invalid_params(m->id, "cursor: not a cursor this agent returned");
		i = (size_t)at;
	}
	sessions = json_array();
	for (; i > 0; i--) {
		const struct sess_entry *en = o->v[i - 1];
		if (cwd && strcmp(en->cwd, cwd) != 0)
			continue;
		if (k == ACP_PAGE)
			break;		/* one more exists: the page gets a next cursor */
		char iso[32];
		clock_iso8601(en->updated_at, iso, sizeof(iso));
		json_t *info = xjson_pack("{s:s, s:s, s:s}", "sessionId", en->id, "cwd", en->cwd, "updatedAt", iso);
		if (en->title)
			json_object_set_new(info, "title", json_string(en->title));
		json_array_append_new(sessions, info);
		last = en;
		k++;
	}
	result = xjson_pack("{s:o}", "sessions", sessions);
	if (i > 0 && last) {
		char cur[64];
		snprintf(cur, sizeof(cur), "k:%lld:%s", (long long)last->listed_at, last->id);
		json_object_set_new(result, "nextCursor", json_string(cur));
	}
	return acp_result_new(m->id, result);
}

void
acp_session_cancel(struct acp_session *as)
{
	struct agent *a = as->agent;

	if (as->prompt_id)
		as->cancelled = 1;
	if (agent_status(a) == AGENT_RUNNING) {
		agent_cancel(a, "user");
		return;
	}
	/* An idle root's background children may be asking: their asks end as cancelled calls, and a
	 * late answer runs nothing (docs/decisions.md). agent_cancel does this for a running root. */
	agent_ask_cancel_below(a);
	if (as->prompt_id && agent_withdraw(a, as->prompt_msg)) {
		/* The prompt had not started its turn: it ends here, cancelled. */
		json_t *reason = xjson_pack("{s:s, s:s}", "kind", "aborted", "cause", "user");
		acp_hook_turn_end(as, a, as->prompt_msg, reason);
		json_decref(reason);
	}
}

/* Closes a live ACP session: its replays stopped, its prompt cancelled (answered), its agent released. */
static void
acp_session_close_now(struct acp_server *srv, struct acp_session *as)
{
	acp_replays_stop(srv, as);
	acp_gate_drop_prompt(as, ACP_WAIT_REPLAY);
	acp_gate_drop_prompt(as, ACP_WAIT_STORE);
	acp_session_cancel(as);		/* the turn's answer is queued here... */
	acp_gate_drop_prompt(as, ACP_WAIT_CANCEL);	/* ...and the prompt parked behind it after it */
	sess_unobserve(agent_sess(as->agent), acp_observe_event, as);
	agent_release(as->agent);
	memset(agent_hooks(as->agent), 0, sizeof(*agent_hooks(as->agent)));	/* its struct waits for its reap */
	as->agent = NULL;
	acp_session_reap_later(as);
}

json_t *
acp_m_session_close(struct acp_server *srv, struct acp_msg *m)
{
	json_t *reply = NULL;
	struct acp_session *as = acp_live_session(srv, m, &reply);

	if (as == NULL)
		return reply;
	acp_session_close_now(srv, as);
	return acp_result_new(m->id, json_object());
}

/* A deletion's answer, once everything of it is removed. */
struct acp_delete_wait {
	struct acp_server *srv;
	json_t *id;		/* owned */
};

static void
acp_delete_done(void *arg, const struct err *e)
{
	struct acp_delete_wait *w = arg;

	(void)e;	/* what could not be removed is in the log; the session is gone */
	acp_send(w->srv, acp_result_new(w->id, json_object()));
	json_decref(w->id);
	free(w);
}

json_t *
acp_m_session_delete(struct acp_server *srv, struct acp_msg *m)
{
	const json_t *jsid = json_object_get(m->params, "sessionId");
	const char *sid = json_string_value(jsid);
	struct acp_session *as;
	struct agent_delete *d;
	struct acp_delete_wait *w;
	struct err e;

	if (sid == NULL)
		return acp_invalid_params(m->id, "sessionId: expected a string");
	if (acp_has_nul(jsid))
		return acp_invalid_params(m->id, "sessionId: must not contain \\u0000");
	if (!sess_id_valid(sid))
		return acp_invalid_params(m->id, "sessionId: malformed session id");
	err_clear(&e);
	if ((d = agent_rt_delete_plan(&srv->rt, sid, &e)) == NULL) {
		if (e.code == ERR_CHILD_SESSION)
			return acp_error_new(m->id, ERR_CHILD_SESSION, e.msg, NULL);
		return acp_session_error(m->id, sid, &e);
	}
	if (agent_delete_mark(d, &e) < 0)
		return acp_session_error(m->id, sid, &e);	/* nothing changed */
	/* open here: closed (a prompt in flight is cancelled and answered) */
	if ((as = map_get(&srv->sessions, sid)) != NULL && as->agent)
		acp_session_close_now(srv, as);
	w = xcalloc(1, sizeof(*w));
	w->srv = srv;
	w->id = json_incref(m->id ? m->id : json_null());
	agent_delete_go(d, acp_delete_done, w);
	map_del(&srv->noticed, sid);
	return NULL;
}
