/* The one walk over a session file's lines (walk.h). */
#include "session/walk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jsonscan.h"
#include "base/xmalloc.h"
#include "session/event.h"
#include "session/evtype.h"

/* A chunk: big enough that a read is cheap per byte, small enough to stay in the cache. */
#define WALK_CHUNK (1u << 18)
#define WALK_FLAGS (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)

void
sess_walk_init(struct sess_walk *w, int level, int shaped, sess_walk_take_fn *take, void *arg)
{
	memset(w, 0, sizeof(*w));
	w->level = level;
	w->shaped = shaped;
	w->take = take;
	w->arg = arg;
	w->turn_off = -1;
	w->turn_seq = -1;
	sess_checked_init(&w->shapes);
}

void
sess_walk_free(struct sess_walk *w)
{
	sess_checked_free(&w->shapes);
	json_decref(w->header);
	w->header = NULL;
	free(w->buf);
	w->buf = NULL;
	w->cap = 0;
}

/* Our writer's prefix: {"seq":N,"time":T,"type":"X","data":{ ... Returns 1 with seq and the
 * type's bytes; 0 for any other line (the full way decides it). */
static int
walk_prefix(const char *s, size_t n, int64_t *seq, const char **type, size_t *tlen)
{
	const char *p = s, *end = s + n;
	int64_t v = 0;

	if (n < 8 || memcmp(p, "{\"seq\":", 7) != 0)
		return 0;
	p += 7;
	if (p >= end || *p < '0' || *p > '9')
		return 0;
	while (p < end && *p >= '0' && *p <= '9' && v < INT64_MAX / 10)
		v = v * 10 + (*p++ - '0');
	if (end - p < 9 || memcmp(p, ",\"time\":", 8) != 0)
		return 0;
	p += 8;
	const char *t0 = p;
	while (p < end && *p >= '0' && *p <= '9')
		p++;
	if (p == t0 || p - t0 > 18)
		return 0;	/* no integer, or one jansson might not hold: the full way decides */
	if (end - p < 9 || memcmp(p, ",\"type\":\"", 9) != 0)
		return 0;
	p += 9;
	const char *q = memchr(p, '"', (size_t)(end - p));
	/* our writer puts data fourth, an object; any other layout takes the full way */
	if (q == NULL || end - q < 10 || memcmp(q, "\",\"data\":{", 10) != 0)
		return 0;
	*seq = v;
	*type = p;
	*tlen = (size_t)(q - p);
	return 1;
}

/* The seq a headless walk starts at: the first line's, as the writer writes it ({"seq":N,), or -1. */
static int64_t
walk_first_seq(const char *s, size_t n)
{
	int64_t v = 0;
	size_t i = 7;

	if (n < 9 || memcmp(s, "{\"seq\":", 7) != 0 || s[i] < '0' || s[i] > '9' || (s[i] == '0' && s[i + 1] != ','))
		return -1;
	for (; i < n && i < 7 + 18 && s[i] >= '0' && s[i] <= '9'; i++)
		v = v * 10 + (s[i] - '0');
	return i < n && s[i] == ',' ? v : -1;
}

enum { WALK_TORN = -2 };

/*
 * The check of an event line no shape vouched for: its type code, with its tree in *ev when one
 * was built; WALK_TORN for a torn last line; -1 with e set. The envelope's check (the scan's)
 * takes a line of our writer's prefix with a known type that is valid JSON without a tree; any
 * other line, and every line of a full walk, is parsed and checked as load checks it.
 */
static int
walk_check(struct sess_walk *w, const char *line, size_t n, int has_nl, int last, json_t **ev, struct err *e)
{
	const char *type;
	size_t tlen;
	int64_t s;

	*ev = NULL;
	if (w->level == SESS_CHECK_ENVELOPE && has_nl && walk_prefix(line, n, &s, &type, &tlen) &&
	    sess_event_type_knownn(type, tlen)) {
		int code = sess_ev_ofn(type, tlen);
		int valid = w->shaped ? sess_checked_learn(&w->shapes, line, n, code, SESS_CHECK_ENVELOPE) :
		    json_scan_valid(line, n, WALK_FLAGS);
		if (valid) {
			if (s != w->seq)
				return err_set(e, ERR_SESSION_CORRUPT, "event seq gap: expected %lld", (long long)w->seq);
			return code;
		}
	}
	json_t *j = has_nl ? sess_json_parse_line(line, n) : NULL;
	if (j == NULL) {
		if (last)
			return WALK_TORN;	/* no newline, or not JSON */
		return err_set(e, ERR_SESSION_CORRUPT, "line %d is not valid JSON", w->line_no);
	}
	if (sess_event_check(j, w->seq, e) < 0) {
		json_decref(j);
		return -1;
	}
	int code = sess_event_type_code(json_string_value(json_object_get(j, "type")));
	if (w->shaped)
		sess_checked_learn(&w->shapes, line, n, code, SESS_CHECK_FULL);
	*ev = j;
	return code;
}

void
sess_walk_count(struct sess_walk *w, off_t off, int code)
{
	if (code == SESS_EV_TURN_START || code == SESS_EV_TURN_END) {
		w->turn_off = off;
		w->turn_seq = w->seq;
		w->turn_ended = code == SESS_EV_TURN_END;
	}
	w->seq++;
}

/* The header line: checked and kept; -1 with e set. */
static int
walk_header(struct sess_walk *w, const char *line, size_t n, int has_nl, struct err *e)
{
	json_t *h = has_nl ? sess_json_parse_line(line, n) : NULL;

	if (h == NULL)
		return err_set(e, ERR_SESSION_CORRUPT, "the session header is unreadable");
	if (sess_header_check(h, e) < 0) {
		json_decref(h);
		return -1;
	}
	w->header = h;
	return 0;
}

int
sess_walk_lines(struct sess_walk *w, const char *data, size_t len, int final, size_t *used, struct err *e)
{
	size_t pos = 0;

	*used = 0;
	while (pos < len && !w->done) {
		const char *line = data + pos, *nl = NULL;
		int code = 0, shaped = 0;
		if (w->shaped && w->seq >= 0 && (w->line_no > 0 || w->headless))
			shaped = (nl = sess_checked_match(&w->shapes, line, data + len, w->seq, w->level, &code)) != NULL;
		if (!shaped)
			nl = memchr(line, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - data) : len, n = end - pos;
		if (final == SESS_WALK_MORE && (nl == NULL || end + 1 == len))
			break;		/* whether this line is the last is not known yet */
		int last = final == SESS_WALK_FINAL && (nl == NULL || end + 1 == len);
		w->line_no++;
		if (w->line_no == 1 && !w->headless) {
			if (walk_header(w, line, n, nl != NULL, e) < 0)
				return -1;
		} else {
			json_t *ev = NULL;
			if (w->seq < 0 && (w->seq = walk_first_seq(line, n)) < 0) {
				w->done = 1;	/* a headless walk must start on a line of our writer's */
				break;
			}
			if (!shaped && (code = walk_check(w, line, n, nl != NULL, last, &ev, e)) < 0) {
				if (code != WALK_TORN)
					return -1;
				w->torn = w->done = 1;
				break;
			}
			int rc = w->take(w, line, n, w->base + (off_t)pos, code, ev, e);
			if (rc < 0)
				return -1;
			if (rc > 0) {
				w->done = 1;
				break;
			}
			sess_walk_count(w, w->base + (off_t)pos, code);
		}
		pos = end + 1;
		w->valid_len = w->base + (off_t)pos;
	}
	*used = pos < len ? pos : len;
	w->base += (off_t)*used;
	return 0;
}

int
sess_walk_fd(struct sess_walk *w, int fd, const char *path, const atomic_int *cancel, off_t *off, off_t limit,
    struct err *e)
{
	size_t have = 0;
	off_t at = *off;
	int rc = 0, eof = 0, bound = 0;

	if (w->buf == NULL) {
		w->cap = WALK_CHUNK;
		w->buf = xmalloc(w->cap + 16);	/* padded: the shapes' short compares (jsonscan.h) */
	}
	w->base = *off;
	while (rc == 0 && !w->done) {
		size_t used;
		if (cancel && atomic_load_explicit(cancel, memory_order_relaxed))
			return err_set(e, ERR_INTERNAL, "reading %s was cancelled", path);
		while (!eof && have < w->cap) {
			size_t want = w->cap - have;
			if (limit >= 0 && (off_t)want > limit - at)
				want = (size_t)(limit - at);
			if (want == 0) {
				eof = bound = 1;	/* the range ends on a line's end: more follow */
				break;
			}
			ssize_t r = pread(fd, w->buf + have, want, at);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return err_set(e, ERR_SESSION_LOG_IO, "cannot read %s: %s", path, strerror(errno));
			if (r == 0)
				eof = 1;
			have += (size_t)r;
			at += r;
		}
		memset(w->buf + have, 0, 16);
		rc = sess_walk_lines(w, w->buf, have, !eof ? SESS_WALK_MORE : bound ? SESS_WALK_BOUNDARY : SESS_WALK_FINAL,
		    &used, e);
		if (rc < 0 || eof)
			break;
		if (used == 0 && have == w->cap) {
			w->cap *= 2;	/* one line longer than the buffer */
			w->buf = xrealloc(w->buf, w->cap + 16);
		}
		memmove(w->buf, w->buf + used, have - used);
		have -= used;
	}
	*off = w->base;
	return rc;
}
