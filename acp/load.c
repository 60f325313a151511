/*
 * session/load and session/resume of a big stored session (issue 15): the lease is taken on the
 * loop, the file is read, parsed and checked on a worker thread (base/offload), and the session
 * becomes live on the loop when the worker is done; only then is the request answered (load: its
 * replay first). Nothing of the agent or the session is touched off the loop: the worker owns the
 * sess_loading alone.
 *
 * While a load runs, every line that names its session (a prompt, a second load, a cancel...) waits
 * in the load's queue and is dispatched, in order, once the session is live: the client sees what
 * it saw when the load ran inline. A session/close cancels the load instead (the load is answered
 * -32002, the close {}); shutdown cancels every load without an answer, as it stops replays.
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
	struct sess_loading *ld;	/* owned; the worker's alone while job runs */
	struct offload *job;		/* the worker, until done runs or it is cancelled */
	json_t *req_id;			/* the request that started it: owned */
	json_t *params;			/* its params: owned */
	struct agent_conv conv;		/* the conversation, rebuilt by the worker too (empty otherwise) */
	int has_conv;
	int replay;			/* session/load (else session/resume) */
	struct buf queued;		/* lines about this session meanwhile: [size_t len][bytes]... */
	struct acp_load *next;
};

static void
acp_load_worker(void *arg, const atomic_int *cancel)
{
	struct acp_load *l = arg;

	/* The file is checked without a tree per line, then the conversation is rebuilt from the
	 * latest compaction on (closers included), reading back only those events. */
	sess_loading_read(l->ld, cancel);
	if (sess_loading_ok(l->ld) && !atomic_load(cancel)) {
		agent_conv_from_loading(&l->conv, l->ld);
		l->has_conv = 1;
	}
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

/* Dispatches the lines that waited for l (l is off the list: they find the session live, or not at
 * all), then frees l. */
static void
acp_load_requeue_free(struct acp_load *l)
{
	struct acp_server *srv = l->srv;
	size_t pos = 0;

	while (pos < l->queued.len && !srv->shutting_down) {
		size_t n;
		memcpy(&n, l->queued.data + pos, sizeof(n));
		pos += sizeof(n);
		acp_server_line(srv, l->queued.data + pos, n);
		pos += n;
	}
	buf_free(&l->queued);
	json_decref(l->req_id);
	json_decref(l->params);
	agent_conv_free(&l->conv);
	sess_loading_free(l->ld);
	free(l);
}

/* The worker is done (on the loop): the session goes live and the request is answered. */
static void
acp_load_done(void *arg)
{
	struct acp_load *l = arg;
	struct acp_server *srv = l->srv;
	struct acp_session *as;
	json_t *reply = NULL;

	l->job = NULL;
	acp_load_unlink(l);
	as = acp_open_loaded(srv, l->ld, l->has_conv ? &l->conv : NULL, l->id, l->req_id, l->params, &reply);
	l->ld = NULL;		/* freed by acp_open_loaded */
	if (as == NULL)
		acp_send(srv, reply);
	else if (l->replay)
		acp_replay_start(srv, as, l->req_id);
	else
		acp_resume_answer(srv, as, l->req_id);
	acp_load_requeue_free(l);
	xmalloc_trim();		/* the read's transient trees lived in the worker's arena */
}

void
acp_load_offload(struct acp_server *srv, struct sess_loading *ld, const char *sid, struct acp_msg *m,
    int replay)
{
	struct acp_load *l = xcalloc(1, sizeof(*l)), **pp;

	l->srv = srv;
	snprintf(l->id, sizeof(l->id), "%s", sid);
	l->ld = ld;
	l->req_id = json_incref(m->id ? m->id : json_null());
	l->params = json_incref(m->params);
	l->replay = replay;
	agent_conv_init(&l->conv);	/* the worker folds into it */
	buf_init(&l->queued);
	for (pp = &srv->loads; *pp; pp = &(*pp)->next)
		;
	*pp = l;
	log_debug("acp: %s: reading %lld bytes off the loop", sid, (long long)sess_loading_size(ld));
	l->job = offload_start(srv->loop, &srv->runq, acp_load_worker, acp_load_done, l);
}

struct acp_load *
acp_load_find(struct acp_server *srv, const char *sid)
{
	for (struct acp_load *l = srv->loads; l && sid; l = l->next)
		if (strcmp(l->id, sid) == 0)
			return l;
	return NULL;
}

void
acp_load_queue(struct acp_load *l, const char *line, size_t len)
{
	buf_append(&l->queued, &len, sizeof(len));
	buf_append(&l->queued, line, len);
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

json_t *
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
	} while ((l = acp_load_find(srv, sid)) != NULL);
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
		buf_free(&l->queued);	/* nothing is dispatched any more: the process is ending */
		acp_load_requeue_free(l);
	}
}
