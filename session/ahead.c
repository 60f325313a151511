/* A big file's second half checked ahead on a thread of its own (ahead.h). */
#include "session/ahead.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "session/walk.h"

#define AHEAD_FIND (64u << 10)	/* how far from mid a line must start */

/* The walk's take: notes the event; an ignorable unknown type (code 0) is left to the read in
 * order, and so is any line the walk refuses (it stops there). */
static int
ahead_take(struct sess_walk *w, const char *line, size_t n, off_t off, int code, json_t *ev, struct err *e)
{
	struct sess_ahead *a = w->arg;

	(void)line, (void)n, (void)e;
	json_decref(ev);
	if (code == 0)
		return 1;
	if (a->n == 0)
		a->seq0 = w->seq;
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 4096;
		a->types = xrealloc(a->types, a->cap);
		a->offs = xrealloc(a->offs, a->cap * sizeof(*a->offs));
	}
	a->types[a->n] = (unsigned char)code;
	a->offs[a->n] = off;
	a->n++;
	return 0;
}

static void *
ahead_main(void *p)
{
	struct sess_ahead *a = p;
	struct sess_walk w;
	struct err e;
	off_t off = a->start;

	sess_walk_init(&w, SESS_CHECK_FULL, 1, ahead_take, a);
	w.headless = 1;
	w.seq = -1;
	err_clear(&e);
	/* An error only ends what it takes: the read in order meets that line and decides it. */
	(void)sess_walk_fd(&w, a->fd, "the second half", a->cancel, &off, a->end, &e);
	a->stop = a->n ? w.valid_len : a->start;
	sess_walk_free(&w);
	return NULL;
}

int
sess_ahead_start(struct sess_ahead *a, int fd, off_t mid, off_t end, const atomic_int *cancel)
{
	char *buf = xmalloc(AHEAD_FIND);
	ssize_t r;
	char *nl;

	memset(a, 0, sizeof(*a));
	a->fd = fd;
	a->cancel = cancel;
	do
		r = pread(fd, buf, AHEAD_FIND, mid - 1);
	while (r < 0 && errno == EINTR);
	nl = r > 0 ? memchr(buf, '\n', (size_t)r) : NULL;
	if (nl == NULL) {
		free(buf);
		return -1;
	}
	a->start = a->stop = mid + (nl - buf);	/* after the newline at mid - 1 + (nl - buf) */
	a->end = end;
	free(buf);
	if (a->start >= end || pthread_create(&a->thread, NULL, ahead_main, a) != 0)
		return -1;
	a->started = 1;
	return 0;
}

void
sess_ahead_join(struct sess_ahead *a)
{
	if (a->started)
		pthread_join(a->thread, NULL);
	a->started = 0;
}

void
sess_ahead_free(struct sess_ahead *a)
{
	sess_ahead_join(a);
	free(a->types);
	free(a->offs);
	a->types = NULL;
	a->offs = NULL;
	a->n = 0;
}
