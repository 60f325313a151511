/*
 * The ordering gate (docs/architecture.md, "ACP"): a request is dispatched now, or parked with
 * the reason it waits (enum acp_wait), and a parked one is dispatched again from here, in order,
 * once its reason is gone. Lines park in lanes before they are dispatched: the server's lane
 * while the corpus index is incomplete (a request that needs it and every line after it, so
 * answers keep the order of requests), a load's lane while its session is read or its
 * conversation rebuilt (acp/load.c decides which lines). A checked session/prompt parks in its
 * session's one slot while a replay of the session is out or a cancelled turn has not answered.
 */
#include <stdlib.h>
#include <string.h>

#include "acp/internal.h"
#include "acp/rpc.h"
#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

/* Past this many bytes parked for the corpus, stdin is paused. */
#define ACP_GATE_MAX (16u << 20)

struct acp_parked {
	struct acp_parked *next;
	enum acp_wait why;
	int prompt;		/* a session/prompt request */
	size_t len;
	char line[];
};

/* ---- lanes ---- */

void
acp_lane_init(struct acp_lane *q)
{
	q->head = NULL;
	q->tail = &q->head;
	q->bytes = 0;
}

int
acp_lane_empty(const struct acp_lane *q)
{
	return q->head == NULL;
}

void
acp_lane_push(struct acp_lane *q, enum acp_wait why, const char *line, size_t len, int prompt)
{
	struct acp_parked *p = xmalloc(sizeof(*p) + len + 1);

	p->next = NULL;
	p->why = why;
	p->prompt = prompt;
	p->len = len;
	memcpy(p->line, line, len);
	p->line[len] = '\0';
	*q->tail = p;
	q->tail = &p->next;
	q->bytes += len;
}

/* The first parked line, taken off the lane (the caller frees it), or NULL. */
static struct acp_parked *
acp_lane_take(struct acp_lane *q)
{
	struct acp_parked *p = q->head;

	if (p == NULL)
		return NULL;
	q->head = p->next;
	if (q->head == NULL)
		q->tail = &q->head;
	q->bytes -= p->len;
	return p;
}

void
acp_lane_release(struct acp_server *srv, struct acp_lane *q, int upto_prompt)
{
	struct acp_parked *p;

	while (!srv->shutting_down && q->head && !(upto_prompt && q->head->prompt)) {
		p = acp_lane_take(q);
		acp_dispatch(srv, p->line, p->len);	/* recorded when it was read */
		free(p);
	}
}

void
acp_lane_answer_prompts(struct acp_server *srv, struct acp_lane *q)
{
	struct acp_parked *p;

	while ((p = acp_lane_take(q)) != NULL) {
		json_t *j = p->prompt ? acp_spans_peek(p->line, p->len) : NULL;
		json_t *id = json_object_get(j, "id");
		if (json_is_string(id) || json_is_integer(id))
			acp_send(srv, acp_result_new(id, xjson_pack("{s:s}", "stopReason", "cancelled")));
		json_decref(j);
		free(p);
	}
}

void
acp_lane_free(struct acp_lane *q)
{
	struct acp_parked *p;

	while ((p = acp_lane_take(q)) != NULL)
		free(p);
}

/* ---- the corpus lane ---- */

/* 1 when the line is a request that the corpus index must be complete for. */
static int
acp_gate_needs_corpus(const char *line, size_t len)
{
	json_t *j = acp_spans_peek(line, len);	/* the envelope only: no copy of a large value */
	const char *method = json_string_value(json_object_get(j, "method"));
	int needs = method && json_object_get(j, "id") && strcmp(method, "initialize") != 0 &&
		    strcmp(method, "authenticate") != 0 && strcmp(method, "session/new") != 0;

	json_decref(j);
	return needs;
}

int
acp_gate_admit(struct acp_server *srv, const char *line, size_t len)
{
	struct acp_gate *g = &srv->gate;

	if (acp_lane_empty(&g->corpus) && (sess_corpus_is_ready(&srv->corpus) || !acp_gate_needs_corpus(line, len)))
		return 0;
	acp_lane_push(&g->corpus, ACP_WAIT_CORPUS, line, len, 0);
	if (g->corpus.bytes > ACP_GATE_MAX && !g->paused) {
		g->paused = 1;
		reader_pause(&srv->reader);
	}
	return 1;
}

/* Dispatches one line of the corpus lane per loop turn, in order; then stdin and EOF go on. */
static void
acp_gate_idle_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct acp_server *srv = w->data;
	struct acp_gate *g = &srv->gate;
	struct acp_parked *p;

	(void)revents;
	if (srv->shutting_down || (p = acp_lane_take(&g->corpus)) == NULL) {
		ev_idle_stop(loop, w);	/* what is left is freed with the server */
		return;
	}
	acp_dispatch_now(srv, p->line, p->len);
	free(p);
	if (!acp_lane_empty(&g->corpus))
		return;
	ev_idle_stop(loop, w);
	if (g->paused && !srv->shutting_down && !wq_full(&srv->wq))
		reader_resume(&srv->reader);
	g->paused = 0;
	if (g->eof_pending)
		acp_server_shutdown(srv);
}

void
acp_gate_corpus_ready(void *arg)
{
	struct acp_server *srv = arg;

	if (!acp_lane_empty(&srv->gate.corpus))
		ev_idle_start(srv->loop, &srv->gate.idle);
}

int
acp_gate_empty(const struct acp_server *srv)
{
	return acp_lane_empty(&srv->gate.corpus);
}

void
acp_gate_init(struct acp_server *srv)
{
	memset(&srv->gate, 0, sizeof(srv->gate));
	acp_lane_init(&srv->gate.corpus);
	ev_idle_init(&srv->gate.idle, acp_gate_idle_cb);
	srv->gate.idle.data = srv;
}

void
acp_gate_free(struct acp_server *srv)
{
	if (srv->loop)
		ev_idle_stop(srv->loop, &srv->gate.idle);
	acp_lane_free(&srv->gate.corpus);
}

/* ---- a session's parked prompt ---- */

int
acp_gate_park_prompt(struct acp_session *as, enum acp_wait why, const json_t *id, const json_t *prompt)
{
	if (as->parked.why != ACP_WAIT_NONE)
		return -1;
	as->parked.why = why;
	as->parked.id = json_incref(id ? (json_t *)id : json_null());
	as->parked.prompt = json_deep_copy(prompt);
	return 0;
}

/* Takes the parked prompt off its slot: *id and *prompt are the caller's. */
static void
acp_gate_unpark(struct acp_session *as, json_t **id, json_t **prompt)
{
	*id = as->parked.id;
	*prompt = as->parked.prompt;
	as->parked.id = as->parked.prompt = NULL;
	as->parked.why = ACP_WAIT_NONE;
}

json_t *
acp_gate_take_prompt(struct acp_session *as, enum acp_wait why)
{
	json_t *id, *prompt;

	if (as->parked.why != why)
		return NULL;
	acp_gate_unpark(as, &id, &prompt);
	json_decref(prompt);
	return id;
}

/* The cancelled turn before the parked prompt answered: it starts, if its session can take it. */
void
acp_gate_after_cancelled(struct acp_session *as)
{
	json_t *id, *prompt;

	if (as->parked.why != ACP_WAIT_CANCEL || as->agent == NULL || as->prompt_id)
		return;
	acp_gate_unpark(as, &id, &prompt);
	acp_prompt_start(as, id, prompt);
}

/* A replay of as is out (or ended): the parked prompt runs, whatever it waited for. */
void
acp_gate_release_prompt(struct acp_session *as)
{
	json_t *id, *prompt, *reply;

	if (as->parked.why == ACP_WAIT_NONE || as->parked.why == ACP_WAIT_STORE || as->replays ||
	    as->agent == NULL || as->prompt_id || as->srv->shutting_down)
		return;
	if (as->parked.why == ACP_WAIT_CANCEL) {
		/* behind a cancelled turn: a turn, as it was when it was parked */
		acp_gate_unpark(as, &id, &prompt);
		acp_prompt_start(as, id, prompt);
		return;
	}
	acp_gate_unpark(as, &id, &prompt);	/* behind a replay: as if it came now */
	if ((reply = acp_prompt_begin(as, id, prompt)) != NULL)
		acp_send(as->srv, reply);
	json_decref(id);
	json_decref(prompt);
}

void
acp_gate_drop_prompt(struct acp_session *as, enum acp_wait why)
{
	json_t *id, *prompt, *reply;

	if (as->parked.why == ACP_WAIT_NONE || (why != ACP_WAIT_NONE && as->parked.why != why))
		return;
	int behind_turn = as->parked.why == ACP_WAIT_CANCEL;
	if (as->parked.why == ACP_WAIT_STORE)
		acp_store_detach(as);
	acp_gate_unpark(as, &id, &prompt);
	reply = acp_result_new(id, xjson_pack("{s:s}", "stopReason", "cancelled"));
	/* one parked behind a cancelled turn is answered after that turn's answer, as it would
	 * have run after it */
	if (behind_turn)
		acp_prompt_answer_after_sync(as, reply);
	else
		acp_send(as->srv, reply);
	json_decref(id);
	json_decref(prompt);
}

void
acp_gate_free_prompt(struct acp_session *as)
{
	acp_store_detach(as);
	json_decref(as->parked.id);
	json_decref(as->parked.prompt);
	as->parked.id = as->parked.prompt = NULL;
	as->parked.why = ACP_WAIT_NONE;
}
