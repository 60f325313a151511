/*
 * The run queue: work that becomes ready is queued here and run in FIFO
 * order from an ev_prepare watcher, never re-entrantly from inside another
 * callback. That makes the whole program deterministic for a deterministic
 * model. A second queue holds work that must follow the durability
 * checkpoint (replies that may only leave after the logs are synced).
 */
#ifndef BASE_RUNQ_H
#define BASE_RUNQ_H

#include <ev.h>

typedef void runq_fn(void *arg);

struct runq_task;

struct runq {
	ev_prepare prepare;		/* first member: the callback casts back */
	struct ev_loop *loop;
	struct runq_task *head, *tail;		/* run now */
	struct runq_task *shead, *stail;	/* run after the next sync pass */
	runq_fn *sync_fn;			/* the checkpoint: syncs dirty logs */
	void *sync_arg;
	runq_fn *settle_fn;			/* called once both queues are empty */
	void *settle_arg;
};

void runq_init(struct runq *q, struct ev_loop *loop);
void runq_set_sync(struct runq *q, runq_fn *fn, void *arg);
void runq_set_settle(struct runq *q, runq_fn *fn, void *arg);
void runq_push(struct runq *q, runq_fn *fn, void *arg);		/* arg: borrowed by the task */
void runq_push_after_sync(struct runq *q, runq_fn *fn, void *arg);
/* Runs everything queued, syncs, runs the after-sync work, until both are empty. */
void runq_drain(struct runq *q);
int runq_empty(const struct runq *q);
void runq_stop(struct runq *q);

#endif
