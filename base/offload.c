/* One thread per job, joined on the loop; the result comes back through an ev_async. */
#include "base/offload.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"
#include "base/xmalloc.h"

struct offload {
	ev_async async;			/* first member: the callback casts back */
	struct ev_loop *loop;
	pthread_t thread;
	int started;
	atomic_int cancel;
	int keep_done;			/* stopped, not cancelled: done still runs (loop thread only) */
	void (*fn)(void *arg, const atomic_int *cancel);
	void (*done)(void *arg);
	void *arg;
	int nice;			/* added to the thread's nice value (0: as the loop's) */
};

static void *
offload_main(void *p)
{
	struct offload *o = p;

	/* Linux: the nice value is the thread's own (the tid names it); an error leaves it as it was. */
	if (o->nice > 0) {
		id_t tid = (id_t)syscall(SYS_gettid);
		errno = 0;
		int now = getpriority(PRIO_PROCESS, tid);
		if (errno == 0)
			(void)setpriority(PRIO_PROCESS, tid, now + o->nice);
	}
	o->fn(o->arg, &o->cancel);
	ev_async_send(o->loop, &o->async);
	return NULL;
}

static void
offload_on_async(struct ev_loop *loop, ev_async *w, int revents)
{
	struct offload *o = (struct offload *)w;
	void (*done)(void *) = o->done;
	void *arg = o->arg;

	(void)revents;
	ev_async_stop(loop, &o->async);
	pthread_join(o->thread, NULL);
	free(o);
	done(arg);
}

/* Without a loop: fn, then done, from the run queue (never re-entrantly); a cancel before it
 * runs means neither runs. Between the start and this, other queued work runs, as it would while
 * a thread worked. */
static void
offload_deliver(void *p)
{
	struct offload *o = p;
	void (*done)(void *) = o->done;
	void *arg = o->arg;

	if (!atomic_load(&o->cancel))
		o->fn(arg, &o->cancel);
	else if (!o->keep_done) {
		free(o);
		return;
	}
	free(o);
	done(arg);
}

struct offload *
offload_start(struct ev_loop *loop, struct runq *q, void (*fn)(void *arg, const atomic_int *cancel),
    void (*done)(void *arg), void *arg)
{
	return offload_start_behind(loop, q, fn, done, arg, 0);
}

struct offload *
offload_start_behind(struct ev_loop *loop, struct runq *q, void (*fn)(void *arg, const atomic_int *cancel),
    void (*done)(void *arg), void *arg, int nice)
{
	struct offload *o = xcalloc(1, sizeof(*o));

	o->loop = loop;
	o->nice = nice;
	o->fn = fn;
	o->done = done;
	o->arg = arg;
	atomic_init(&o->cancel, 0);
	if (loop) {
		ev_async_init(&o->async, offload_on_async);
		ev_async_start(loop, &o->async);
		if (pthread_create(&o->thread, NULL, offload_main, o) == 0) {
			o->started = 1;
			return o;
		}
		log_warn("offload: cannot start a thread; the work runs on the loop");
		ev_async_stop(loop, &o->async);
	}
	o->loop = NULL;
	runq_push(q, offload_deliver, o);
	return o;
}

void
offload_stop(struct offload *o)
{
	o->keep_done = 1;
	atomic_store(&o->cancel, 1);
}

void
offload_cancel(struct offload *o)
{
	atomic_store(&o->cancel, 1);
	if (o->loop && o->started) {
		pthread_join(o->thread, NULL);
		ev_async_stop(o->loop, &o->async);
		free(o);
	}
	/* else: the queued delivery sees the flag and frees it */
}
