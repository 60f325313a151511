/* FIFO run queue drained before the loop sleeps, in slices when the loop drives it. */
#include "base/runq.h"

#include <stdlib.h>
#include <time.h>

#include "base/xmalloc.h"

struct runq_task {
	runq_fn *fn;
	void *arg;
	int after_sync;		/* on the later list: the queue it joins once admitted */
	struct runq_task *next;
};

static int runq_run(struct runq *q, unsigned max, double budget);

static void
runq_prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct runq *q = (struct runq *)w;

	(void)revents;
	runq_run(q, q->slice_tasks, q->slice_time);
	/* Work left: the idle watcher makes the loop poll I/O without sleeping and come back. */
	if (runq_empty(q))
		ev_idle_stop(loop, &q->idle);
	else
		ev_idle_start(loop, &q->idle);
}

static void
runq_idle_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	/* Nothing to do here: being active keeps the loop awake; the prepare runs the next slice. */
	(void)loop;
	(void)w;
	(void)revents;
}

void
runq_init(struct runq *q, struct ev_loop *loop)
{
	ev_prepare_init(&q->prepare, runq_prepare_cb);
	ev_idle_init(&q->idle, runq_idle_cb);
	q->loop = loop;
	q->head = q->tail = NULL;
	q->shead = q->stail = NULL;
	q->lhead = q->ltail = NULL;
	q->next_at = NULL;
	q->running = 0;
	q->cut = 0;
	q->slice_tasks = RUNQ_SLICE_TASKS;
	q->slice_time = RUNQ_SLICE_TIME;
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
runq_link(struct runq_task **head, struct runq_task **tail, struct runq_task *t)
{
	t->next = NULL;
	if (*tail)
		(*tail)->next = t;
	else
		*head = t;
	*tail = t;
}

/* Work queued from outside a cut-short drain waits on the later list until the drain is done. */
static void
runq_add(struct runq *q, runq_fn *fn, void *arg, int after_sync)
{
	struct runq_task *t = xmalloc(sizeof(*t));

	t->fn = fn;
	t->arg = arg;
	t->after_sync = after_sync;
	if (q->cut && !q->running)
		runq_link(&q->lhead, &q->ltail, t);
	else if (after_sync)
		runq_link(&q->shead, &q->stail, t);
	else
		runq_link(&q->head, &q->tail, t);
}

void
runq_push(struct runq *q, runq_fn *fn, void *arg)
{
	runq_add(q, fn, arg, 0);
}

void
runq_push_after_sync(struct runq *q, runq_fn *fn, void *arg)
{
	runq_add(q, fn, arg, 1);
}

void
runq_push_next(struct runq *q, runq_fn *fn, void *arg)
{
	struct runq_task *t;

	if (!q->running) {
		runq_add(q, fn, arg, 0);
		return;
	}
	t = xmalloc(sizeof(*t));
	t->fn = fn;
	t->arg = arg;
	t->after_sync = 0;
	if (q->next_at) {
		t->next = q->next_at->next;
		q->next_at->next = t;
	} else {
		t->next = q->head;
		q->head = t;
	}
	if (t->next == NULL)
		q->tail = t;
	q->next_at = t;
}

int
runq_empty(const struct runq *q)
{
	return q->head == NULL && q->shead == NULL && q->lhead == NULL;
}

/* Everything queued before it is done: what waited is queued now, in the order it came. */
static void
runq_admit_later(struct runq *q)
{
	struct runq_task *t;

	while ((t = q->lhead) != NULL) {
		q->lhead = t->next;
		if (t->after_sync)
			runq_link(&q->shead, &q->stail, t);
		else
			runq_link(&q->head, &q->tail, t);
	}
	q->ltail = NULL;
}

static double
runq_clock(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * One drain: every queued task, the sync pass, the after-sync work, again
 * until every queue is empty, then the settle hook. Returns 1 when it
 * ended, 0 when the budget ran out first (max tasks, or budget seconds; 0
 * for no limit; at least one task runs). Between two calls only the queues
 * hold state, so the next call goes on exactly where this one stopped: the
 * tasks, the sync passes and the after-sync work come in the same order as
 * in one uninterrupted drain.
 */
static int
runq_run(struct runq *q, unsigned max, double budget)
{
	double deadline = budget > 0 ? runq_clock() + budget : 0;
	unsigned n = 0;

	q->running = 1;
	for (;;) {
		while (q->head) {
			struct runq_task *t = q->head;
			if ((max && n == max) || (deadline > 0 && n && runq_clock() >= deadline)) {
				q->running = 0;
				q->cut = 1;
				return 0;
			}
			q->head = t->next;
			if (q->head == NULL)
				q->tail = NULL;
			q->next_at = NULL;
			t->fn(t->arg);
			q->next_at = NULL;
			free(t);
			n++;
		}
		if (q->sync_fn)
			q->sync_fn(q->sync_arg);
		if (q->shead == NULL && q->lhead) {
			/* What waited for this drain runs now; the settle hook only once nothing is queued. */
			runq_admit_later(q);
			continue;
		}
		if (q->shead == NULL) {
			if (q->settle_fn)
				q->settle_fn(q->settle_arg);
			if (q->head == NULL && q->shead == NULL)
				break;
			continue;
		}
		/* Move the after-sync work to the front, then run it like any task. */
		q->head = q->shead;
		q->tail = q->stail;
		q->shead = q->stail = NULL;
	}
	q->running = 0;
	q->cut = 0;
	return 1;
}

void
runq_drain(struct runq *q)
{
	runq_run(q, 0, 0);
}

static void
runq_free_list(struct runq_task **head, struct runq_task **tail)
{
	while (*head) {
		struct runq_task *t = *head;
		*head = t->next;
		free(t);
	}
	*tail = NULL;
}

void
runq_stop(struct runq *q)
{
	if (q->loop && ev_is_active(&q->prepare)) {
		ev_ref(q->loop);
		ev_prepare_stop(q->loop, &q->prepare);
	}
	if (q->loop)
		ev_idle_stop(q->loop, &q->idle);
	runq_free_list(&q->head, &q->tail);
	runq_free_list(&q->shead, &q->stail);
	runq_free_list(&q->lhead, &q->ltail);
	q->next_at = NULL;
	q->cut = 0;
}
