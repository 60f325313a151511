/*
 * Work off the loop thread: fn runs on a thread of its own; when it returns, done runs on the
 * loop (from an ev_async watcher), unless the job was cancelled first. fn must touch only what
 * its argument owns and check *cancel between slices of its work. Without a loop (unit tests)
 * fn and then done run from a task queued on the run queue, so other queued work runs between the
 * start and them, as it would while a thread worked; after a cancel before that task runs, neither
 * does.
 */
#ifndef BASE_OFFLOAD_H
#define BASE_OFFLOAD_H

#include <stdatomic.h>

#include <ev.h>

#include "base/runq.h"

struct offload;

/* Starts fn(arg, cancel); returns the job (owned by the offload until done runs or cancel). */
struct offload *offload_start(struct ev_loop *loop, struct runq *q, void (*fn)(void *arg, const atomic_int *cancel),
    void (*done)(void *arg), void *arg);
/* The same for work that should give way to the loop and the client while both are busy: its
 * thread runs nice more (what waits for it waits longer on a loaded machine, never forever). */
struct offload *offload_start_behind(struct ev_loop *loop, struct runq *q,
    void (*fn)(void *arg, const atomic_int *cancel), void (*done)(void *arg), void *arg, int nice);
/* Asks fn to stop, waits for its thread, frees the job; done never runs. */
void offload_cancel(struct offload *o);
/* Asks fn to stop and returns at once: done runs when fn has returned (without a loop, from the
 * queued task, fn skipped when it had not started), then the job is gone. For work whose own
 * clean-up must not wait on the loop. */
void offload_stop(struct offload *o);

#endif
