/*
 * Our requests to the client (docs/contract.md §16.4, §17.3): ids from one integer counter (§3.2), answers
 * matched by id, a timeout per request, `$/cancel_request` on cancel, late or unknown answers
 * logged and ignored. A client that never answers holds only that request. Answers and timeouts
 * are delivered from the run queue, never from inside the reader's callback.
 */
#ifndef ACP_OUTBOUND_H
#define ACP_OUTBOUND_H

#include <ev.h>
#include <jansson.h>

#include "agent/client.h"
#include "base/runq.h"

struct acp_out;

struct acp_outbound {
	struct ev_loop *loop;
	struct runq *runq;
	void (*send)(void *arg, json_t *msg);	/* steals msg: the server's write queue */
	void *send_arg;
	long next_id;				/* the last id used */
	struct acp_out *head;			/* unanswered, or answered and not yet delivered */
};

void acp_outbound_init(struct acp_outbound *ob, struct ev_loop *loop, struct runq *q,
    void (*send)(void *arg, json_t *msg), void *send_arg);
/* Drops every request without calling it back (shutdown: their owners are gone or going). */
void acp_outbound_free(struct acp_outbound *ob);
/* Sends method with params (stolen); timeout_ms 0: none. Returns the id (> 0). */
long acp_outbound_request(struct acp_outbound *ob, const char *method, json_t *params, long timeout_ms,
    agent_client_done *done, void *arg);
/* A response from the client (m->root borrowed): 1 when it answered one of ours, else 0. */
int acp_outbound_answer(struct acp_outbound *ob, const json_t *id, const json_t *msg);
/* Drops request id (nothing of it runs after this) and sends $/cancel_request when unanswered. */
void acp_outbound_cancel(struct acp_outbound *ob, long id);
/* Requests waiting for an answer (tests, wait_idle). */
size_t acp_outbound_pending(const struct acp_outbound *ob);

#endif
