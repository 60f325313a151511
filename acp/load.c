/*
 * session/load and session/resume of a big stored session (docs/decisions.md, "Loading at scan speed"), in two steps off the loop
 * (base/offload):
 *   1. the lease is taken on the loop; the file is read and checked on a worker; the session goes
 *      live on the loop when that is done, and the request is answered (load: its replay first);
 *   2. meanwhile a second job rebuilds the conversation from the latest compaction on (a log that
 *      never compacted: the whole of it); when it is in, the session's children and Team come
 *      back (agent_rt_recover) and what waited is dispatched.
 * Nothing of the agent or the session is touched off the loop: a worker owns the sess_loading, then
 * the cursor and conversation, alone.
 *
 * While the file is read, every line that names its session (a prompt, a second load, a cancel...)
 * waits in the load's queue and is dispatched, in order, once the session is live: the client sees
 * what it saw when the load ran inline. A session/close cancels the load instead (the load is
 * answered -32002, the close {}). Once the session is live, only a prompt waits for the
 * conversation, with whatever comes after it (a close too: it comes in its turn); the rest goes
 * through. Shutdown cancels every load without an answer, as it stops replays.
 */
#include <stdlib.h>
#include <string.h>

#include "acp/internal.h"
#include "acp/rpc.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/offload.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

struct acp_load {
	struct acp_server *srv;
	char id[SESS_ID_LEN + 1];
	struct sess_loading *ld;	/* owned; the worker's alone while step 1 runs */
	struct offload *job;		/* the worker, until done runs or it is cancelled */
	json_t *req_id;			/* the request that started it: owned */
	json_t *params;			/* its params: owned */
	struct sess_cursor *fold;	/* step 2's events: owned; the worker's alone while it runs */
	struct agent_conv conv;		/* the conversation step 2 rebuilds */
	size_t nfold;			/* of the session's first nfold events */
	struct agent *agent;		/* step 2: the live session's agent (NULL before) */
	int replay;			/* session/load (else session/resume) */
	double t0, read_ms, fold_ms;	/* for the log: when it started, how long each step took */
	struct acp_lane lane;		/* lines about this session meanwhile (the gate's: acp/gate.c) */
	struct acp_load *next;
};

/* Step 1: the file is checked without a tree per line (session/checked.c); the events step 2
 * folds are found from the type codes. */
static void
acp_load_read(void *arg, const atomic_int *cancel)
{
	struct acp_load *l = arg;

	double t0 = ev_time();

	sess_loading_read(l->ld, cancel);
	if (sess_loading_ok(l->ld) && !atomic_load(cancel))
		l->fold = agent_conv_begin_loading(&l->conv, l->ld, &l->nfold);
	l->read_ms = (ev_time() - t0) * 1e3;
}

/* Step 2. */
static void
acp_load_fold(void *arg, const atomic_int *cancel)
{
	struct acp_load *l = arg;
	double t0 = ev_time();

	agent_conv_fold_cursor(&l->conv, l->fold, cancel);
	l->fold_ms = (ev_time() - t0) * 1e3;
}

/* Puts l at the end of the server's list. */
static void
acp_load_link(struct acp_load *l)
{
	struct acp_load **pp;

	for (pp = &l->srv->loads; *pp; pp = &(*pp)->next)
		;
	l->next = NULL;
	*pp = l;
}

/* Takes l off the server's list. */
static void
acp_load_unlink(struct acp_load *l)
{
	for (struct acp_load **pp = &l->srv->loads; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
}

/* Dispatches the lines that waited for l, in order, up to the first prompt when upto_prompt (that
 * one and the rest wait on). l is off the list: they find the session live, or not at all. */
static void
acp_load_dispatch(struct acp_load *l, int upto_prompt)
{
	acp_lane_release(l->srv, &l->lane, upto_prompt);
}

/* Dispatches what waited for l, then frees l. */
static void
acp_load_requeue_free(struct acp_load *l)
{
	acp_load_dispatch(l, 0);
	acp_lane_free(&l->lane);
	json_decref(l->req_id);
	json_decref(l->params);
	sess_cursor_free(l->fold);
	agent_conv_free(&l->conv);
	sess_loading_free(l->ld);
	free(l);
}

/* Step 2 is done (on the loop): the conversation goes in, the children and Team come back, and
 * what waited is dispatched. */
static void
acp_load_folded(void *arg)
{
	struct acp_load *l = arg;

	l->job = NULL;
	acp_load_unlink(l);
	log_info("acp: %s: read and checked in %.0f ms, conversation rebuilt in %.0f ms more (%.0f ms since the request)",
	    l->id, l->read_ms, l->fold_ms, (ev_time() - l->t0) * 1e3);
	/* Only a close releases the agent, and a close cancels step 2 (acp_load_hold) first. */
	agent_set_conv(l->agent, &l->conv, l->nfold);
	agent_rt_recover(l->agent);
	acp_load_requeue_free(l);
	xmalloc_trim();
}

/* Step 1 is done (on the loop): the session goes live and the request is answered (load: by
 * its replay); step 2 starts. */
static void
acp_load_done(void *arg)
{
	struct acp_load *l = arg;
	struct acp_server *srv = l->srv;
	struct acp_session *as;
	struct agent_conv none;
	json_t *reply = NULL;

	l->job = NULL;
	acp_load_unlink(l);	/* a write error while answering stops the loads: not this one */
	log_info("acp: %s: read and checked in %.0f ms (%.0f ms since the request); the replay starts", l->id,
	    l->read_ms, (ev_time() - l->t0) * 1e3);
	agent_conv_init(&none);		/* the agent's until step 2's is in */
	as = acp_open_loaded(srv, l->ld, &none, l->id, l->req_id, l->params, &reply);
	agent_conv_free(&none);
	l->ld = NULL;		/* freed by acp_open_loaded */
	if (as == NULL) {
		acp_send(srv, reply);
		acp_load_requeue_free(l);
		return;
	}
	l->agent = as->agent;
	if (l->replay)
		acp_replay_start(srv, as, l->req_id);
	else
		acp_resume_answer(srv, as, l->req_id);
	/* What waited while the file was read goes on now, up to the first prompt: that one waits
	 * for the conversation, and what came after it waits behind it. */
	acp_load_dispatch(l, 1);
	as = srv->shutting_down ? NULL : map_get(&srv->sessions, l->id);
	if (as == NULL || as->agent != l->agent) {
		/* a write error above, or a close among those lines: the conversation is not needed */
		acp_load_requeue_free(l);
		return;
	}
	acp_load_link(l);	/* lines about the session find it again */
	/* The replay is what the client waits for: the rebuild gives way to it (and to the client
	 * reading it) where they share the cores. */
	l->job = offload_start_behind(srv->loop, &srv->runq, acp_load_fold, acp_load_folded, l, ACP_FOLD_NICE);
	xmalloc_trim();		/* the read's transient trees lived in the worker's arena */
}

void
acp_load_offload(struct acp_server *srv, struct sess_loading *ld, const char *sid, struct acp_msg *m,
    int replay)
{
	struct acp_load *l = xcalloc(1, sizeof(*l));

	l->srv = srv;
	snprintf(l->id, sizeof(l->id), "%s", sid);
	l->ld = ld;
	l->req_id = json_incref(m->id ? m->id : json_null());
	l->params = json_incref(m->params);
	l->replay = replay;
	l->t0 = ev_time();
	agent_conv_init(&l->conv);	/* step 2 folds into it */
	acp_lane_init(&l->lane);
	acp_load_link(l);
	log_debug("acp: %s: reading %lld bytes off the loop", sid, (long long)sess_loading_size(ld));
	l->job = offload_start(srv->loop, &srv->runq, acp_load_read, acp_load_done, l);
}

struct acp_load *
acp_load_find(struct acp_server *srv, const char *sid)
{
	for (struct acp_load *l = srv->loads; l && sid; l = l->next)
		if (strcmp(l->id, sid) == 0)
			return l;
	return NULL;
}

/* Whether anything still waits in l's lane. */
static int
acp_load_waiting(const struct acp_load *l)
{
	return !acp_lane_empty(&l->lane);
}

/* Stops l's worker and takes l off the list (its lease goes when l is freed). */
static void
acp_load_cancel(struct acp_load *l)
{
	if (l->job)
		offload_cancel(l->job);	/* joins the worker: it stops at its next chunk */
	l->job = NULL;
	acp_load_unlink(l);
}

static json_t *
acp_load_close(struct acp_load *l, struct acp_msg *m)
{
	struct acp_server *srv = l->srv;
	char sid[SESS_ID_LEN + 1];

	snprintf(sid, sizeof(sid), "%s", l->id);
	/* What came before the close is dispatched in order; a second load among it starts again and
	 * is closed too, as it would have been had the loads run inline. */
	do {
		acp_load_cancel(l);
		acp_send(srv, acp_error_new(l->req_id, ERR_UNKNOWN_SESSION,
		    "the session was closed while it was being loaded", xjson_pack("{s:s}", "sessionId", sid)));
		acp_load_requeue_free(l);
	} while ((l = acp_load_find(srv, sid)) != NULL && l->agent == NULL);
	/* A line before the close may have made it live (a load that read inline): it closes now. */
	if (map_get(&srv->sessions, sid) && ((struct acp_session *)map_get(&srv->sessions, sid))->agent)
		return acp_m_session_close(srv, m);
	return acp_result_new(m->id, json_object());
}

void
acp_loads_stop(struct acp_server *srv)
{
	struct acp_load *l;

	while ((l = srv->loads) != NULL) {
		srv->loads = l->next;	/* off the list first: nothing below finds it */
		if (l->job)
			offload_cancel(l->job);
		l->job = NULL;
		/* Nothing is dispatched any more: the process is ending. A prompt that waited for a
		 * live session's conversation is answered as one that waited for its replay is. */
		if (l->agent)
			acp_lane_answer_prompts(srv, &l->lane);
		acp_lane_free(&l->lane);
		acp_load_requeue_free(l);
	}
}

int
acp_load_hold(struct acp_load *l, struct acp_msg *m, const char *line, size_t len)
{
	int close = m->kind == ACP_MSG_REQUEST && m->method && strcmp(m->method, "session/close") == 0;
	int prompt = m->kind == ACP_MSG_REQUEST && m->method && strcmp(m->method, "session/prompt") == 0;

	if (l->agent && !acp_load_waiting(l) && close) {
		/* Live, nothing waits: the close goes through (stopping the replay); the conversation
		 * will not be needed. */
		acp_load_cancel(l);
		acp_load_requeue_free(l);
		return 0;
	}
	if (l->agent) {		/* live: only a prompt waits for the conversation, and what follows it */
		if (!acp_load_waiting(l) && !prompt)
			return 0;
	} else if (close) {
		struct acp_server *srv = l->srv;	/* l is freed by the close */
		acp_send(srv, acp_load_close(l, m));
		return 1;
	}
	acp_lane_push(&l->lane, l->agent ? ACP_WAIT_CONV : ACP_WAIT_LOAD, line, len, prompt);
	return 1;
}
