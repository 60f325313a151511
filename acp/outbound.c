/* The outbound request table: one entry per request we sent and whose answer is not delivered. */
#include "acp/outbound.h"

#include <stdlib.h>

#include "acp/rpc.h"
#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

enum acp_out_state { OUT_WAITING, OUT_ANSWERED, OUT_DROPPED };

struct acp_out {
	ev_timer timer;			/* first member: the callback casts back */
	struct acp_outbound *ob;
	long id;
	char *method;
	enum acp_out_state state;
	agent_client_done *done;
	void *arg;
	json_t *result, *error;		/* the answer, owned, until delivered */
	struct err e;			/* or why there is none (timeout) */
	struct acp_out *next;
};

void
acp_outbound_init(struct acp_outbound *ob, struct ev_loop *loop, struct runq *q,
    void (*send)(void *arg, json_t *msg), void *send_arg)
{
	ob->loop = loop;
	ob->runq = q;
	ob->send = send;
	ob->send_arg = send_arg;
	ob->next_id = 0;
	ob->head = NULL;
}

static void
acp_out_unlink(struct acp_out *o)
{
	struct acp_out **pp;

	for (pp = &o->ob->head; *pp; pp = &(*pp)->next)
		if (*pp == o) {
			*pp = o->next;
			break;
		}
	if (o->ob->loop)
		ev_timer_stop(o->ob->loop, &o->timer);
}

static void
acp_out_free(struct acp_out *o)
{
	json_decref(o->result);
	json_decref(o->error);
	free(o->method);
	free(o);
}

/* From the run queue: the answer (or the timeout) reaches its owner, unless it was dropped. */
static void
acp_out_deliver(void *arg)
{
	struct acp_out *o = arg;

	acp_out_unlink(o);
	if (o->state == OUT_ANSWERED)
		o->done(o->arg, o->result, o->error, o->error || o->result ? NULL : &o->e);
	acp_out_free(o);
}

/* Answered (or timed out): the delivery is queued; a cancel before it runs still drops it. */
static void
acp_out_settle(struct acp_out *o)
{
	if (o->ob->loop)
		ev_timer_stop(o->ob->loop, &o->timer);
	o->state = OUT_ANSWERED;
	runq_push(o->ob->runq, acp_out_deliver, o);
}

static void
acp_out_on_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct acp_out *o = (struct acp_out *)w;

	(void)loop;
	(void)revents;
	log_warn("acp: the client did not answer %s (request %ld) in time", o->method, o->id);
	err_set(&o->e, ERR_CLIENT_TIMEOUT, "the editor did not answer %s in time", o->method);
	/* Nothing will read a late answer: tell the client to stop working on it. */
	o->ob->send(o->ob->send_arg, acp_notification_new("$/cancel_request",
	    xjson_pack("{s:I}", "requestId", (json_int_t)o->id)));
	acp_out_settle(o);
}

long
acp_outbound_request(struct acp_outbound *ob, const char *method, json_t *params, long timeout_ms,
    agent_client_done *done, void *arg)
{
	struct acp_out *o = xcalloc(1, sizeof(*o));

	o->ob = ob;
	o->id = ++ob->next_id;
	o->method = xstrdup(method);
	o->done = done;
	o->arg = arg;
	err_clear(&o->e);
	o->next = ob->head;
	ob->head = o;
	ev_timer_init(&o->timer, acp_out_on_timeout, (double)timeout_ms / 1000.0, 0.);
	if (timeout_ms > 0 && ob->loop)
		ev_timer_start(ob->loop, &o->timer);
	ob->send(ob->send_arg, xjson_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", (json_int_t)o->id,
	    "method", method, "params", params ? params : json_object()));
	return o->id;
}

int
acp_outbound_answer(struct acp_outbound *ob, const json_t *id, const json_t *msg)
{
	struct acp_out *o;

	if (!json_is_integer(id))
		return 0;
	for (o = ob->head; o; o = o->next)
		if (o->id == json_integer_value(id) && o->state == OUT_WAITING)
			break;
	if (o == NULL)
		return 0;	/* unknown, or answered twice: the caller logs it */
	const json_t *error = json_object_get(msg, "error");
	if (error) {
		o->error = json_is_object(error) ? json_incref((json_t *)error) : xjson_pack("{s:i, s:s}", "code",
		    -32603, "message", "the client answered a malformed error");
	} else {
		const json_t *result = json_object_get(msg, "result");
		/* A result of null is a success too ("null and {} are both a success for a write"). */
		o->result = result && !json_is_null(result) ? json_incref((json_t *)result) : json_object();
	}
	acp_out_settle(o);
	return 1;
}

void
acp_outbound_cancel(struct acp_outbound *ob, long id)
{
	struct acp_out *o;

	for (o = ob->head; o; o = o->next)
		if (o->id == id)
			break;
	if (o == NULL || o->state == OUT_DROPPED)
		return;
	if (o->state == OUT_ANSWERED) {
		o->state = OUT_DROPPED;		/* its delivery is queued: it frees it, silently */
		return;
	}
	acp_out_unlink(o);
	ob->send(ob->send_arg, acp_notification_new("$/cancel_request",
	    xjson_pack("{s:I}", "requestId", (json_int_t)id)));
	acp_out_free(o);
}

size_t
acp_outbound_pending(const struct acp_outbound *ob)
{
	size_t n = 0;

	for (const struct acp_out *o = ob->head; o; o = o->next)
		n += o->state == OUT_WAITING;
	return n;
}

void
acp_outbound_free(struct acp_outbound *ob)
{
	while (ob->head) {
		struct acp_out *o = ob->head;
		ob->head = o->next;
		if (ob->loop)
			ev_timer_stop(ob->loop, &o->timer);
		acp_out_free(o);
	}
}
