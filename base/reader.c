/* Non-blocking stdin reader and line framing. */
#include "base/reader.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

#define ACP_READ_CHUNK ((size_t)65536)

void
frame_init(struct frame *f, size_t max, reader_line_fn *on_line, reader_overlong_fn *on_overlong,
    void *arg)
{
	buf_init(&f->in);
	f->scanned = 0;
	f->max = max;
	f->skipping = 0;
	f->on_line = on_line;
	f->on_overlong = on_overlong;
	f->arg = arg;
	f->emitting = 0;
	f->taken = 0;
	f->next = 0;
}

void
frame_free(struct frame *f)
{
	buf_free(&f->in);
}

static void
frame_emit(struct frame *f, const char *line, size_t len)
{
	if (len && line[len - 1] == '\r')
		len--;
	for (size_t i = 0; i < len; i++) {
		if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r') {
			f->on_line(f->arg, line, len);
			return;
		}
	}
	/* blank line: skipped */
}

void
frame_feed(struct frame *f, const char *data, size_t len)
{
	size_t start = 0;

	while (f->skipping && len) {
		const char *nl = memchr(data, '\n', len);
		if (nl == NULL)
			return;		/* still inside the overlong line */
		f->skipping = 0;
		len -= (size_t)(nl + 1 - data);
		data = nl + 1;
	}
	buf_append(&f->in, data, len);
	for (;;) {
		char *nl = memchr(f->in.data + f->scanned, '\n', f->in.len - f->scanned);
		if (nl == NULL)
			break;
		size_t end = (size_t)(nl - f->in.data);
		if (end - start > f->max) {
			if (f->on_overlong)
				f->on_overlong(f->arg);
		} else {
			f->emitting = 1;
			f->next = end + 1;
			frame_emit(f, f->in.data + start, end - start);
			f->emitting = 0;
			if (f->taken) {
				/* the buffer went with its line (frame_take moved what follows into a new one) */
				f->taken = 0;
				start = 0;
				f->scanned = 0;
				continue;
			}
		}
		start = end + 1;
		f->scanned = start;
	}
	/* Compact once per feed, not once per line. */
	buf_consume(&f->in, start);
	f->scanned = f->in.len;
	if (f->in.len > f->max) {
		if (f->on_overlong)
			f->on_overlong(f->arg);
		f->skipping = 1;
		buf_consume(&f->in, f->in.len);
		f->scanned = 0;
	}
	if (f->in.len == 0 && f->in.cap > 4 * ACP_READ_CHUNK)
		buf_free(&f->in);	/* give back the memory of one huge line */
}

char *
frame_take(struct frame *f)
{
	struct buf rest;
	char *line_buf;

	if (!f->emitting || f->taken)
		return NULL;
	/* what follows the line goes into a new buffer now, while the old one is surely alive: the
	 * taker may free it before on_line returns */
	buf_init(&rest);
	buf_reserve(&rest, f->in.len - f->next + 1);
	buf_append(&rest, f->in.data + f->next, f->in.len - f->next);
	line_buf = f->in.data;
	f->in = rest;
	f->taken = 1;
	return line_buf;
}

void
frame_eof(struct frame *f)
{
	if (!f->skipping && f->in.len) {
		f->emitting = 1;
		f->next = f->in.len;
		frame_emit(f, f->in.data, f->in.len);
		f->emitting = 0;
		f->taken = 0;
	}
	buf_consume(&f->in, f->in.len);
	f->scanned = 0;
	f->skipping = 0;
}

static void
reader_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct reader *r = (struct reader *)w;
	char chunk[ACP_READ_CHUNK];
	ssize_t n;

	(void)revents;
	n = read(r->fd, chunk, sizeof(chunk));
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return;
		log_warn("acp: stdin read failed: %s", strerror(errno));
		n = 0;
	}
	if (n == 0) {
		ev_io_stop(loop, &r->io);
		r->eof = 1;
		frame_eof(&r->frame);
		if (r->on_eof)
			r->on_eof(r->arg);
		return;
	}
	frame_feed(&r->frame, chunk, (size_t)n);
}

void
reader_init(struct reader *r, struct ev_loop *loop, int fd, reader_line_fn *on_line,
    reader_overlong_fn *on_overlong, void (*on_eof)(void *), void *arg)
{
	ev_io_init(&r->io, reader_cb, fd, EV_READ);
	r->loop = loop;
	r->fd = fd;
	r->eof = 0;
	r->on_eof = on_eof;
	r->arg = arg;
	frame_init(&r->frame, READER_LINE_MAX, on_line, on_overlong, arg);
	ev_io_start(loop, &r->io);
}

void
reader_pause(struct reader *r)
{
	ev_io_stop(r->loop, &r->io);
}

void
reader_resume(struct reader *r)
{
	if (!r->eof)
		ev_io_start(r->loop, &r->io);
}

void
reader_free(struct reader *r)
{
	if (r->loop)
		ev_io_stop(r->loop, &r->io);
	frame_free(&r->frame);
}
