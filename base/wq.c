/* The only code that writes the protocol fd. */
#include "base/wq.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jenc.h"
#include "base/log.h"

static void
wq_fail(struct wq *q, int err)
{
	if (q->failed)
		return;
	q->failed = 1;
	log_warn("acp: stdout write failed: %s", strerror(err));
	ev_io_stop(q->loop, &q->io);
	buf_free(&q->out);
	q->off = 0;
	if (q->on_error)
		q->on_error(q->arg);
}

/* One pass of non-blocking writes; returns 0, or -1 on EAGAIN. */
static int
wq_write(struct wq *q)
{
	while (q->off < q->out.len) {
		ssize_t n = write(q->fd, q->out.data + q->off, q->out.len - q->off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -1;
			wq_fail(q, errno);
			return 0;
		}
		q->off += (size_t)n;
	}
	buf_consume(&q->out, q->off);
	q->off = 0;
	return 0;
}

static void
wq_after_write(struct wq *q)
{
	if (q->failed)
		return;
	if (q->off > WQ_LOW) {
		buf_consume(&q->out, q->off);
		q->off = 0;
	}
	if (wq_pending(q) == 0)
		ev_io_stop(q->loop, &q->io);
	if ((q->above_high && wq_pending(q) < WQ_LOW) || (q->wait_below && wq_pending(q) <= q->wait_below)) {
		q->above_high = 0;	/* below both marks (wait_below is under WQ_LOW) */
		q->wait_below = 0;
		if (q->on_low)
			q->on_low(q->arg);
	}
}

static void
wq_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct wq *q = (struct wq *)w;

	(void)loop;
	(void)revents;
	wq_write(q);
	wq_after_write(q);
}

void
wq_init(struct wq *q, struct ev_loop *loop, int fd)
{
	memset(q, 0, sizeof(*q));
	ev_io_init(&q->io, wq_cb, fd, EV_WRITE);
	q->loop = loop;
	q->fd = fd;
	buf_init(&q->out);
}

void
wq_pipe_room(struct wq *q, int bytes)
{
#ifdef F_SETPIPE_SZ
	/* Not a pipe, or more than the system lets this user have: it stays as it is. */
	if (fcntl(q->fd, F_GETPIPE_SZ) < bytes)
		(void)fcntl(q->fd, F_SETPIPE_SZ, bytes);
#else
	(void)q;
	(void)bytes;
#endif
}

size_t
wq_pending(const struct wq *q)
{
	return q->out.len - q->off;
}

int
wq_full(const struct wq *q)
{
	return q->above_high;
}

void
wq_push(struct wq *q, const json_t *msg)
{
	wq_push_in(q, NULL, 0, msg, NULL, 0);
}

/* The frame at out.data[start, len) is whole: it goes out (or waits, corked); the marks. */
static void
wq_queued(struct wq *q, size_t start)
{
	buf_append(&q->out, "\n", 1);
	q->total += q->out.len - start;
	if (q->trace)
		fwrite(q->out.data + start, 1, q->out.len - start, q->trace);
	/* Skip the watcher when the pipe takes it at once (the common case). */
	if (!q->corked) {
		if (wq_write(q) < 0)
			ev_io_start(q->loop, &q->io);
		wq_after_write(q);
	}
	if (wq_pending(q) > q->peak)
		q->peak = wq_pending(q);
	if (!q->above_high && wq_pending(q) > WQ_HIGH) {
		q->above_high = 1;
		if (q->on_high)
			q->on_high(q->arg);
	}
}

void
wq_push_in(struct wq *q, const char *pre, size_t prelen, const json_t *msg, const char *post, size_t postlen)
{
	size_t start = q->out.len;

	if (q->failed)
		return;
	buf_append(&q->out, pre, prelen);
	if (jenc_append(&q->out, msg) < 0) {
		q->out.len = start;	/* the envelope goes too */
		q->out.data[start] = '\0';
		log_error("acp: a message could not be encoded; dropped");
		return;
	}
	buf_append(&q->out, post, postlen);
	wq_queued(q, start);
}

void
wq_push_bytes(struct wq *q, const char *pre, size_t prelen, const char *body, size_t bodylen, const char *post,
    size_t postlen)
{
	size_t start = q->out.len;

	if (q->failed)
		return;
	buf_reserve(&q->out, prelen + bodylen + postlen + 1);
	buf_append(&q->out, pre, prelen);
	buf_append(&q->out, body, bodylen);
	buf_append(&q->out, post, postlen);
	wq_queued(q, start);
}

int
wq_ahead(struct wq *q, size_t mark)
{
	if (wq_pending(q) <= mark)
		return 0;
	q->wait_below = mark / 2;
	return 1;
}

void
wq_cork(struct wq *q)
{
	q->corked = 1;
}

void
wq_uncork(struct wq *q)
{
	q->corked = 0;
	if (q->failed || wq_pending(q) == 0)
		return;
	if (wq_write(q) < 0)
		ev_io_start(q->loop, &q->io);
	wq_after_write(q);
}

void
wq_flush_blocking(struct wq *q, int timeout_ms)
{
	struct pollfd p = { .fd = q->fd, .events = POLLOUT };

	while (!q->failed && wq_pending(q)) {
		if (wq_write(q) == 0)
			break;
		if (poll(&p, 1, timeout_ms) <= 0)
			break;
	}
}

void
wq_free(struct wq *q)
{
	if (q->loop)
		ev_io_stop(q->loop, &q->io);
	buf_free(&q->out);
}
