/* FIFO run queue drained before the loop sleeps. */
#include "base/runq.h"

#include <stdlib.h>

#include "base/xmalloc.h"

struct runq_task {
	runq_fn *fn;
	void *arg;
	struct runq_task *next;
};

static void
runq_prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	(void)loop;
	(void)revents;
	runq_drain((struct runq *)w);
}

void
runq_init(struct runq *q, struct ev_loop *loop)
{
	ev_prepare_init(&q->prepare, runq_prepare_cb);
	q->loop = loop;
	q->head = q->tail = NULL;
	q->shead = q->stail = NULL;
	q->sync_fn = NULL;
	q->sync_arg = NULL;
	q->settle_fn = NULL;
	q->settle_arg = NULL;
	if (loop) {
		ev_prepare_start(loop, &q->prepare);
		ev_unref(loop);		/* the queue alone does not keep the loop alive */
	}
}

void
runq_set_sync(struct runq *q, runq_fn *fn, void *arg)
{
	q->sync_fn = fn;
	q->sync_arg = arg;
}

void
runq_set_settle(struct runq *q, runq_fn *fn, void *arg)
{
	q->settle_fn = fn;
	q->settle_arg = arg;
}

static void
runq_enqueue(struct runq_task **head, struct runq_task **tail, runq_fn *fn, void *arg)
{
	struct runq_task *t = xmalloc(sizeof(*t));

	t->fn = fn;
	t->arg = arg;
	t->next = NULL;
	if (*tail)
		(*tail)->next = t;
	else
		*head = t;
	*tail = t;
}

void
runq_push(struct runq *q, runq_fn *fn, void *arg)
{
	runq_enqueue(&q->head, &q->tail, fn, arg);
}

void
runq_push_after_sync(struct runq *q, runq_fn *fn, void *arg)
{
	runq_enqueue(&q->shead, &q->stail, fn, arg);
}

int
runq_empty(const struct runq *q)
{
	return q->head == NULL && q->shead == NULL;
}

void
runq_drain(struct runq *q)
{
	for (;;) {
		while (q->head) {
			struct runq_task *t = q->head;
			q->head = t->next;
			if (q->head == NULL)
				q->tail = NULL;
			t->fn(t->arg);
			free(t);
		}
		if (q->sync_fn)
			q->sync_fn(q->sync_arg);
		if (q->shead == NULL) {
			if (q->settle_fn)
				q->settle_fn(q->settle_arg);
			if (q->head == NULL && q->shead == NULL)
				return;
			continue;
		}
		/* Move the after-sync work to the front, then run it like any task. */
		q->head = q->shead;
		q->tail = q->stail;
		q->shead = q->stail = NULL;
	}
}

void
runq_stop(struct runq *q)
{
	if (q->loop && ev_is_active(&q->prepare)) {
		ev_ref(q->loop);
		ev_prepare_stop(q->loop, &q->prepare);
	}
	while (q->head) {
		struct runq_task *t = q->head;
		q->head = t->next;
		free(t);
	}
	while (q->shead) {
		struct runq_task *t = q->shead;
		q->shead = t->next;
		free(t);
	}
	q->tail = q->stail = NULL;
}
