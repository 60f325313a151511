/* A big file's second half checked ahead on a thread of its own (ahead.h). */
#include "session/ahead.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/xmalloc.h"
#include "session/checked.h"
#include "session/event.h"

#define AHEAD_CHUNK (1u << 20)
#define AHEAD_FIND (64u << 10)	/* how far from mid a line must start */

/* The seq a line starts with ({"seq":N, as the writer writes it), or -1. */
static int64_t
ahead_seq(const char *s, size_t n)
{
	int64_t v = 0;
	size_t i = 7;

	if (n < 9 || memcmp(s, "{\"seq\":", 7) != 0 || s[i] < '0' || s[i] > '9' || (s[i] == '0' && s[i + 1] != ','))
		return -1;
	for (; i < n && i < 7 + 18 && s[i] >= '0' && s[i] <= '9'; i++)
		v = v * 10 + (s[i] - '0');
	return i < n && s[i] == ',' ? v : -1;
}

/* Takes the line s[0..n) at off as event seq when it passes the check: its type code, or 0. */
static int
ahead_take(struct sess_checked *checked, const char *s, size_t n, int64_t seq)
{
	int code = sess_checked_match(checked, s, n, seq);
	json_t *j;
	struct err e;

	if (code)
		return code;
	if ((j = sess_json_parse_line(s, n)) == NULL)
		return 0;
	err_clear(&e);
	if (sess_event_check(j, seq, &e) >= 0) {
		code = sess_event_type_code(json_string_value(json_object_get(j, "type")));
		sess_checked_learn(checked, s, n, code);
		/* an unknown ignorable type has code 0 here: the read in order takes it */
	}
	json_decref(j);
	return code;
}

static void
ahead_note(struct sess_ahead *a, size_t *cap, off_t off, int code)
{
	if (a->n == *cap) {
		*cap = *cap ? *cap * 2 : 4096;
		a->types = xrealloc(a->types, *cap);
		a->offs = xrealloc(a->offs, *cap * sizeof(*a->offs));
	}
	a->types[a->n] = (unsigned char)code;
	a->offs[a->n] = off;
	a->n++;
}

static void *
ahead_main(void *p)
{
	struct sess_ahead *a = p;
	struct sess_checked checked;
	size_t cap = AHEAD_CHUNK, have = 0, room = 0;
	off_t off = a->start;
	off_t base = off;
	char *buf = xmalloc(cap + 16);	/* padded, as the scan's compares want (jsonscan.h) */
	int64_t seq = -1;

	sess_checked_init(&checked);
	for (;;) {
		size_t pos = 0;
		int eof = 0;
		if (a->cancel && atomic_load_explicit(a->cancel, memory_order_relaxed))
			break;
		while (have < cap && !eof) {
			size_t want = cap - have;
			if ((off_t)want > a->end - off)
				want = (size_t)(a->end - off);
			ssize_t r = want ? pread(a->fd, buf + have, want, off) : 0;
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				eof = 1;	/* the end of the range, or an error: the read in order decides */
			else
				have += (size_t)r, off += r;
		}
		memset(buf + have, 0, 16);
		for (;;) {
			const char *nl = memchr(buf + pos, '\n', have - pos);
			size_t len = nl ? (size_t)(nl - (buf + pos)) : 0;
			int code;
			if (nl == NULL)
				break;
			if (seq < 0 && (seq = a->seq0 = ahead_seq(buf + pos, len)) < 0)
				goto done;
			if ((code = ahead_take(&checked, buf + pos, len, seq)) == 0)
				goto done;
			ahead_note(a, &room, base + (off_t)pos, code);
			seq++;
			pos += len + 1;
			a->stop = base + (off_t)pos;
		}
		if (eof)
			break;
		if (pos == 0 && have == cap)
			buf = xrealloc(buf, (cap *= 2) + 16);	/* one line longer than the buffer */
		memmove(buf, buf + pos, have - pos);
		have -= pos;
		base += (off_t)pos;
	}
done:
	free(buf);
	sess_checked_free(&checked);
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
