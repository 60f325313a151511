/* The only code that writes the protocol fd. */
#include "acp/wq.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jenc.h"
#include "base/log.h"

static void
acp_wq_fail(struct acp_wq *q, int err)
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
acp_wq_write(struct acp_wq *q)
{
	while (q->off < q->out.len) {
		ssize_t n = write(q->fd, q->out.data + q->off, q->out.len - q->off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -1;
			acp_wq_fail(q, errno);
			return 0;
		}
		q->off += (size_t)n;
	}
	buf_consume(&q->out, q->off);
	q->off = 0;
	return 0;
}

static void
acp_wq_after_write(struct acp_wq *q)
{
	if (q->failed)
		return;
	if (q->off > ACP_WQ_LOW) {
		buf_consume(&q->out, q->off);
		q->off = 0;
	}
	if (acp_wq_pending(q) == 0)
		ev_io_stop(q->loop, &q->io);
	if (q->above_high && acp_wq_pending(q) < ACP_WQ_LOW) {
		q->above_high = 0;
		if (q->on_low)
			q->on_low(q->arg);
	}
}

static void
acp_wq_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct acp_wq *q = (struct acp_wq *)w;

	(void)loop;
	(void)revents;
	acp_wq_write(q);
	acp_wq_after_write(q);
}

void
acp_wq_init(struct acp_wq *q, struct ev_loop *loop, int fd)
{
	memset(q, 0, sizeof(*q));
	ev_io_init(&q->io, acp_wq_cb, fd, EV_WRITE);
	q->loop = loop;
	q->fd = fd;
	buf_init(&q->out);
}

size_t
acp_wq_pending(const struct acp_wq *q)
{
	return q->out.len - q->off;
}

int
acp_wq_full(const struct acp_wq *q)
{
	return q->above_high;
}

void
acp_wq_push(struct acp_wq *q, const json_t *msg)
{
	size_t start = q->out.len;

	if (q->failed)
		return;
	if (jenc_append(&q->out, msg) < 0) {
		log_error("acp: a message could not be encoded; dropped");
		return;
	}
	buf_append(&q->out, "\n", 1);
	q->total += q->out.len - start;
	if (q->trace)
		fwrite(q->out.data + start, 1, q->out.len - start, q->trace);
	/* Skip the watcher when the pipe takes it at once (the common case). */
	if (acp_wq_write(q) < 0)
		ev_io_start(q->loop, &q->io);
	acp_wq_after_write(q);
	if (!q->above_high && acp_wq_pending(q) > ACP_WQ_HIGH) {
		q->above_high = 1;
		if (q->on_high)
			q->on_high(q->arg);
	}
}

void
acp_wq_flush_blocking(struct acp_wq *q, int timeout_ms)
{
	struct pollfd p = { .fd = q->fd, .events = POLLOUT };

	while (!q->failed && acp_wq_pending(q)) {
		if (acp_wq_write(q) == 0)
			break;
		if (poll(&p, 1, timeout_ms) <= 0)
			break;
	}
}

void
acp_wq_free(struct acp_wq *q)
{
	if (q->loop)
		ev_io_stop(q->loop, &q->io);
	buf_free(&q->out);
}
