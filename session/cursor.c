/* Reading a live session's events back in order, from its file (a replay never holds them all). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/xmalloc.h"
#include "session/event.h"
#include "session/store.h"
#include "session/store_def.h"

#define CURSOR_CHUNK (256u << 10)

struct sess_cursor {
	char id[SESS_ID_LEN + 1];
	int fd;			/* owned: a duplicate, so the session may go meanwhile */
	off_t off, end;		/* the file's bytes still to read */
	size_t seq;		/* the next event's index */
	size_t to;
	size_t fto;		/* events [seq, fto) come from the file, then the rest from mem */
	char *buf;		/* owned: read ahead; [pos, have) not yet taken */
	size_t pos, have, cap;
	json_t *mem;		/* owned: the events past the file's (a read-only log's closers) */
	size_t nmem_taken;
	size_t from;
	unsigned char *types;	/* owned, or NULL: the type codes of [from, fto), with want */
	unsigned char want[256];	/* the codes read: the others are passed over unparsed */
};

struct sess_cursor *
sess_cursor_open(const char *id, int fd, const off_t *offs, size_t from, size_t fto, size_t to, json_t *mem)
{
	struct sess_cursor *c = xcalloc(1, sizeof(*c));

	snprintf(c->id, sizeof(c->id), "%s", id);
	c->seq = c->from = from;
	c->to = to;
	c->fto = fto;
	c->fd = -1;
	if (from < fto) {
		c->off = offs[from];
		c->end = offs[fto];
		if ((c->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
			log_error("sess: %s: cannot read events back: %s", id, strerror(errno));
	}
	c->mem = mem;
	return c;
}

struct sess_cursor *
sess_cursor_new_only(struct sess *s, size_t from, size_t to, const char *const *types)
{
	struct sess_cursor *c = sess_cursor_new(s, from, to);

	if (c->seq < c->fto) {
		c->types = xmalloc(c->fto - c->seq);
		memcpy(c->types, s->types + c->seq, c->fto - c->seq);
		for (size_t k = 0; types[k]; k++)
			c->want[(unsigned char)sess_event_type_code(types[k])] = 1;
	}
	return c;
}

struct sess_cursor *
sess_cursor_new(struct sess *s, size_t from, size_t to)
{
	size_t fend = to < s->nfile ? to : s->nfile;
	json_t *mem = json_array();

	if (to > s->nev)
		to = s->nev;
	if (from > to)
		from = to;
	if (fend < from)
		fend = from;
	for (size_t i = from > s->nfile ? from : s->nfile; i < to; i++)
		json_array_append_new(mem, sess_event_get(s, i));
	return sess_cursor_open(s->id, s->log->fd, s->offs, from, fend, to, mem);
}

/* The next line of the file's range (its bytes up to the newline, valid until the next call);
 * NULL at its end or on a read error. */
static const char *
sess_cursor_raw(struct sess_cursor *c, size_t *len)
{
	for (;;) {
		char *nl = c->have > c->pos ? memchr(c->buf + c->pos, '\n', c->have - c->pos) : NULL;
		if (nl) {
			size_t start = c->pos;
			c->pos = (size_t)(nl - c->buf) + 1;
			*len = (size_t)(nl - c->buf) - start;
			return c->buf + start;
		}
		if (c->off >= c->end || c->fd < 0)
			return NULL;
		if (c->pos) {
			memmove(c->buf, c->buf + c->pos, c->have - c->pos);
			c->have -= c->pos;
			c->pos = 0;
		}
		if (c->cap - c->have < CURSOR_CHUNK / 2) {
			c->cap = c->cap ? c->cap * 2 : CURSOR_CHUNK;
			c->buf = xrealloc(c->buf, c->cap);
		}
		size_t want = c->cap - c->have;
		if ((off_t)want > c->end - c->off)
			want = (size_t)(c->end - c->off);
		ssize_t r = pread(c->fd, c->buf + c->have, want, c->off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			log_error("sess: %s: cannot read events back: %s", c->id, r < 0 ? strerror(errno) : "the file is shorter");
			return NULL;
		}
		c->have += (size_t)r;
		c->off += r;
	}
}

/* Passes over the file's events of the types not wanted: their lines are not parsed. */
static void
sess_cursor_skip(struct sess_cursor *c)
{
	size_t len;

	while (c->types && c->seq < c->fto && !c->want[c->types[c->seq - c->from]]) {
		if (c->fd < 0 || sess_cursor_raw(c, &len) == NULL) {
			log_error("sess: %s: event %zu is no longer in the file as it was written", c->id, c->seq);
			c->seq = c->to;		/* the read failed: the cursor ends here */
			return;
		}
		c->seq++;
	}
}

json_t *
sess_cursor_next(struct sess_cursor *c)
{
	size_t len;
	json_t *ev;

	sess_cursor_next_line(c, &len, &ev, 0);
	return ev;
}

/*
 * The tree of the file's line for event seq (line may be NULL: a read error), or NULL, logged, and
 * the cursor ends. Its seq must be seq; full: the whole check a load gives it too (envelope,
 * payload), for a reader that trusts the payload's shape (a replay's tree functions).
 */
static json_t *
sess_cursor_checked(struct sess_cursor *c, const char *line, size_t len, size_t seq, int full)
{
	json_t *ev = line ? sess_json_parse_line(line, len) : NULL;
	struct err e;

	err_clear(&e);
	if (ev == NULL || json_integer_value(json_object_get(ev, "seq")) != (json_int_t)seq ||
	    (full && sess_event_check(ev, (int64_t)seq, &e) < 0)) {
		log_error("sess: %s: event %zu is no longer in the file as it was written%s%s", c->id, seq,
		    e.code ? ": " : "", e.code ? e.msg : "");
		json_decref(ev);
		c->seq = c->to;
		return NULL;
	}
	return ev;
}

/* Whether line starts {"seq":N, with N seq, as the writer writes it. */
static int
sess_cursor_head(const char *line, size_t len, size_t seq)
{
	char digits[24], *d = digits + sizeof(digits);
	size_t n;

	do
		*--d = (char)('0' + seq % 10);
	while ((seq /= 10) != 0);
	n = (size_t)(digits + sizeof(digits) - d);
	return len > 7 + n + 1 && memcmp(line, "{\"seq\":", 7) == 0 && memcmp(line + 7, d, n) == 0 && line[7 + n] == ',';
}

const char *
sess_cursor_next_line(struct sess_cursor *c, size_t *len, json_t **evp, int raw_ok)
{
	json_t *ev;

	*evp = NULL;
	*len = 0;
	sess_cursor_skip(c);
	if (c->seq >= c->to)
		return NULL;
	if (c->seq < c->fto) {
		const char *line = c->fd >= 0 ? sess_cursor_raw(c, len) : NULL;
		if (raw_ok && line && sess_cursor_head(line, *len, c->seq)) {
			c->seq++;
			return line;	/* the writer's own line: its reader checks the rest */
		}
		if ((ev = sess_cursor_checked(c, line, *len, c->seq, raw_ok)) == NULL)
			return NULL;
	} else if (c->nmem_taken < json_array_size(c->mem)) {
		ev = json_incref(json_array_get(c->mem, c->nmem_taken++));
	} else {
		c->seq = c->to;
		return NULL;
	}
	c->seq++;
	*evp = ev;
	return NULL;
}

json_t *
sess_cursor_tree(struct sess_cursor *c, const char *line, size_t len)
{
	return sess_cursor_checked(c, line, len, c->seq - 1, 1);
}

void
sess_cursor_free(struct sess_cursor *c)
{
	if (c == NULL)
		return;
	if (c->fd >= 0)
		close(c->fd);
	free(c->buf);
	free(c->types);
	json_decref(c->mem);
	free(c);
}

json_t *
sess_read_all(struct sess *s)
{
	struct sess_cursor *c = sess_cursor_new(s, 0, s->nev);
	json_t *all = json_array(), *ev;

	while ((ev = sess_cursor_next(c)) != NULL)
		json_array_append_new(all, ev);
	sess_cursor_free(c);
	return all;
}
