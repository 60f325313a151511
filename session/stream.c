/* A session file's wanted events, read forward in bounded pieces (stream.h). */
#include "session/stream.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/xmalloc.h"
#include "session/event.h"
#include "session/walk.h"

struct sess_stream {
	int fd;
	char *path;		/* owned: named in errors */
	off_t off;		/* where the next piece starts */
	off_t limit;		/* no line from here on is given (-1: none) */
	int stopped;		/* the walk stopped at a full piece: it goes on from off */
	unsigned char want[256];	/* by type code */
	struct sess_walk walk;
	struct buf lines;	/* the kept lines of the piece, each followed by a NUL */
	size_t *ends;		/* line i is lines.data[i ? ends[i - 1] : 0, ends[i]) */
	size_t nlines, next, cap;
	int eof;		/* the last piece was read */
	int failed;
	struct err e;
};

/* The walk's take: a wanted event's line is kept, up to a piece's worth. */
static int
stream_take(struct sess_walk *w, const char *line, size_t n, off_t off, int code, json_t *ev, struct err *e)
{
	struct sess_stream *st = w->arg;

	(void)e;
	json_decref(ev);
	if (st->limit >= 0 && off >= st->limit) {
		st->stopped = 0;	/* the end: what follows was appended after the limit */
		return 1;
	}
	/* the piece is full (shown lines, or bytes walked once it has one): this line starts the next */
	if (st->nlines > 0 && (off - st->off >= SESS_STREAM_RANGE ||
	    (st->nlines == SESS_STREAM_EVENTS && code > 0 && code < 256 && st->want[code]))) {
		st->stopped = 1;
		return 1;
	}
	if (code <= 0 || code > 255 || !st->want[code])
		return 0;
	if (st->nlines == st->cap) {
		st->cap = st->cap ? st->cap * 2 : 16;
		st->ends = xrealloc(st->ends, st->cap * sizeof(*st->ends));
	}
	buf_append(&st->lines, line, n);
	buf_append(&st->lines, "", 1);
	st->ends[st->nlines++] = st->lines.len;
	return 0;
}

struct sess_stream *
sess_stream_open(const char *path, const char *const *types, off_t limit, struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct sess_stream *st;
	struct stat sb;

	if (fd < 0) {
		err_set(e, errno == ENOENT ? ERR_UNKNOWN_SESSION : ERR_SESSION_LOG_IO, "cannot open %s: %s", path,
		    strerror(errno));
		return NULL;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		err_set(e, ERR_SESSION_LOG_IO, "%s is not a regular file", path);
		return NULL;
	}
	st = xcalloc(1, sizeof(*st));
	st->fd = fd;
	st->path = xstrdup(path);
	st->limit = limit;
	for (size_t i = 0; types[i]; i++) {
		int code = sess_event_type_code(types[i]);
		if (code > 0 && code < 256)
			st->want[code] = 1;
	}
	sess_walk_init(&st->walk, SESS_CHECK_FULL, 1, stream_take, st);
	buf_init(&st->lines);
	err_clear(&st->e);
	return st;
}

/* Reads the next piece: its wanted lines kept; 0, or -1 at the end or on an error. */
static int
stream_fill(struct sess_stream *st)
{
	st->lines.len = 0;
	st->nlines = st->next = 0;
	if (st->eof || st->failed)
		return -1;
	st->walk.done = st->stopped = 0;	/* on from the line that did not fit the last piece */
	/* To the file's end, or until the piece is full (stream_take): a torn last line is judged
	 * where the file ends, as a load judges it. */
	if (sess_walk_fd(&st->walk, st->fd, st->path, NULL, &st->off, -1, &st->e) < 0)
		st->failed = 1;
	else if (!st->stopped)
		st->eof = 1;
	return st->nlines ? 0 : -1;
}

const char *
sess_stream_next(struct sess_stream *st, size_t *len)
{
	size_t from;

	if (st->next == st->nlines && stream_fill(st) < 0)
		return NULL;
	from = st->next ? st->ends[st->next - 1] : 0;
	*len = st->ends[st->next] - from - 1;
	return st->lines.data + st->ends[st->next++] - *len - 1;
}

json_t *
sess_stream_tree(struct sess_stream *st, const char *line, size_t len)
{
	(void)st;
	return sess_json_parse_line(line, len);
}

void
sess_stream_limit(struct sess_stream *st, off_t limit)
{
	if (st->limit < 0 || limit < st->limit)
		st->limit = limit;
}

const char *
sess_stream_error(const struct sess_stream *st)
{
	return st->failed ? st->e.msg : NULL;
}

void
sess_stream_close(struct sess_stream *st)
{
	if (st == NULL)
		return;
	close(st->fd);
	free(st->path);
	sess_walk_free(&st->walk);
	buf_free(&st->lines);
	free(st->ends);
	free(st);
}
