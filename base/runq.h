/*
 * The run queue: work that becomes ready is queued here and run in FIFO
 * order from an ev_prepare watcher, never re-entrantly from inside another
 * callback. That makes the whole program deterministic for a deterministic
 * model. A second queue holds work that must follow the durability
 * checkpoint (replies that may only leave after the logs are synced).
 *
 * A drain from the loop is cut into slices (at most slice_tasks tasks or
 * slice_time seconds each), so I/O watchers run between slices: a cancel on
 * stdin is read while several turns are runnable. While a drain is cut
 * short, work queued from outside it (an I/O callback, a timer) waits until
 * everything the drain would have run is done, as if it had arrived just
 * after: the tasks run in the order one uninterrupted drain gives them.
 */
#ifndef BASE_RUNQ_H
#define BASE_RUNQ_H

#include <ev.h>

/* The budget of one slice run from the loop. */
#define RUNQ_SLICE_TASKS 64u
#define RUNQ_SLICE_TIME 0.002		/* seconds */

typedef void runq_fn(void *arg);

struct runq_task;

struct runq {
	ev_prepare prepare;		/* first member: the callback casts back */
	ev_idle idle;			/* active while a drain is cut short: the loop polls, never sleeps */
	struct ev_loop *loop;
	struct runq_task *head, *tail;		/* run now */
	struct runq_task *shead, *stail;	/* run after the next sync pass */
	struct runq_task *lhead, *ltail;	/* queued from outside a cut-short drain: after it */
	struct runq_task *next_at;		/* the last runq_push_next of the running task */
	int running;				/* inside a drain: pushes join the current one */
	int cut;				/* a drain from the loop ran out of budget */
	unsigned slice_tasks;			/* per slice from the loop; 0: no limit */
	double slice_time;			/* seconds per slice from the loop; 0: no limit */
	runq_fn *sync_fn;			/* the checkpoint: syncs dirty logs */
	void *sync_arg;
	runq_fn *settle_fn;			/* called once every queue is empty */
	void *settle_arg;
};

void runq_init(struct runq *q, struct ev_loop *loop);
void runq_set_sync(struct runq *q, runq_fn *fn, void *arg);
void runq_set_settle(struct runq *q, runq_fn *fn, void *arg);
void runq_push(struct runq *q, runq_fn *fn, void *arg);		/* arg: borrowed by the task */
void runq_push_after_sync(struct runq *q, runq_fn *fn, void *arg);
/*
 * From inside a task: runs right after it, before work queued earlier (in push order when it
 * pushes several). What a task defers this way runs as if the task had done it last, but outside
 * whatever callback it is in. Outside a drain it is runq_push.
 */
void runq_push_next(struct runq *q, runq_fn *fn, void *arg);
/* Runs everything queued, syncs, runs the after-sync work, until all is empty; no budget. */
void runq_drain(struct runq *q);
int runq_empty(const struct runq *q);
void runq_stop(struct runq *q);

#endif
