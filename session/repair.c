/* inspect and the repair closers. */
#include "session/repair.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/jsonscan.h"
#include "base/xmalloc.h"
#include "session/ahead.h"
#include "session/checked.h"
#include "session/event.h"

void
sess_image_free(struct sess_image *img)
{
	json_decref(img->header);
	json_decref(img->events);
	free(img->types);
	free(img->offs);
	memset(img, 0, sizeof(*img));
}

/* inspect's state between chunks of a file: what a line needs of the lines before it. */
struct inspect_run {
	struct sess_image *img;
	int64_t seq;
	int line_no;
	size_t open_turn;	/* index of the open turn's first event (closers: only it) */
	off_t base;		/* file offset of the chunk's first byte */
	int done;		/* a torn last line ended the file */
	size_t ctypes;		/* room in img->types */
	size_t coffs;		/* room in img->offs */
	int stream;		/* streamed: offsets, no tree kept; the open turn is read back at the end */
	int fd;			/* streamed: the file, for that */
	struct sess_checked checked;	/* streamed: the shapes the full check accepted */
	int turn_start, turn_end;	/* their type codes */
};

/* Event n's type code (n: the next one). */
static void
inspect_note_code(struct inspect_run *run, size_t n, int code)
{
	struct sess_image *img = run->img;

	if (n >= run->ctypes) {
		run->ctypes = run->ctypes ? run->ctypes * 2 : 1024;
		img->types = xrealloc(img->types, run->ctypes);
	}
	img->types[n] = (unsigned char)code;
}

static void
inspect_note_type(struct inspect_run *run, const json_t *ev)
{
	struct sess_image *img = run->img;

	inspect_note_code(run, img->base + json_array_size(img->events),
	    sess_event_type_code(json_string_value(json_object_get(ev, "type"))));
}

/* Streamed: event idx at file offset off, of type code, taken. */
static void
inspect_note_streamed(struct inspect_run *run, size_t idx, off_t off, int code)
{
	struct sess_image *img = run->img;

	if (code == run->turn_start || code == run->turn_end)
		run->open_turn = idx;
	inspect_note_code(run, idx, code);
	if (idx + 1 >= run->coffs) {
		run->coffs = run->coffs ? run->coffs * 2 : 1024;
		img->offs = xrealloc(img->offs, run->coffs * sizeof(*img->offs));
	}
	img->offs[idx] = off;
	run->seq++;
}

static void
inspect_run_init(struct inspect_run *run, struct sess_image *img)
{
	memset(run, 0, sizeof(*run));
	memset(img, 0, sizeof(*img));
	run->img = img;
	run->fd = -1;
	run->turn_start = SESS_EV_TURN_START;
	run->turn_end = SESS_EV_TURN_END;
	sess_checked_init(&run->checked);
	img->events = json_array();
}

/*
 * The lines of one chunk (data[0..len), at file offset run->base). A line is taken once it is
 * known whether it is the file's last one (a torn last line is ignored, any other bad line is
 * corruption): every line but the chunk's final one (INSPECT_MORE), and that too when the file
 * ends there (INSPECT_FINAL) or more lines follow it (INSPECT_BOUNDARY: the chunk ends on a
 * newline). *used is how many bytes were taken; the caller keeps the rest for the next chunk.
 */
enum { INSPECT_MORE, INSPECT_FINAL, INSPECT_BOUNDARY };
static int
inspect_lines(struct inspect_run *run, const char *data, size_t len, int final, size_t *used, struct err *e)
{
	struct sess_image *img = run->img;
	size_t pos = 0;

	*used = 0;
	while (pos < len && !run->done) {
		const char *nl = memchr(data + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - data) : len;
		json_t *j;
		if (final == INSPECT_MORE && (nl == NULL || end + 1 == len))
			break;		/* whether this line is the last is not known yet */
		int last = final == INSPECT_FINAL && (nl == NULL || end + 1 == len);
		run->line_no++;
		if (run->stream && nl && run->line_no > 1) {
			/* A line of a shape the full check accepted needs no tree (checked.h). */
			int code = sess_checked_match(&run->checked, data + pos, end - pos, run->seq);
			if (code) {
				inspect_note_streamed(run, (size_t)run->seq, run->base + (off_t)pos, code);
				pos = end + 1;
				img->valid_len = run->base + (off_t)pos;
				continue;
			}
		}
		j = nl ? sess_json_parse_line(data + pos, end - pos) : NULL;
		if (j == NULL) {
			if (last && run->line_no > 1) {
				/* A torn last line: no newline, or not JSON. */
				img->torn = 1;
				run->done = 1;
				break;
			}
			if (run->line_no == 1)
				return err_set(e, ERR_SESSION_CORRUPT, "the session header is unreadable");
			return err_set(e, ERR_SESSION_CORRUPT, "line %d is not valid JSON", run->line_no);
		}
		if (run->line_no == 1) {
			if (sess_header_check(j, e) < 0) {
				json_decref(j);
				return -1;
			}
			img->header = j;
		} else {
			int ok = sess_event_check(j, run->seq, e);
			if (ok < 0) {
				json_decref(j);
				return -1;
			}
			/* Ignorable unknown events stay, so seq stays contiguous in memory. */
			const char *t = json_string_value(json_object_get(j, "type"));
			size_t idx = (size_t)run->seq;
			if (run->stream) {
				int code = sess_event_type_code(t);
				sess_checked_learn(&run->checked, data + pos, end - pos, code);
				inspect_note_streamed(run, idx, run->base + (off_t)pos, code);
				json_decref(j);
			} else {
				enum sess_ev et = sess_ev_of(t);
				if (et == SESS_EV_TURN_START || et == SESS_EV_TURN_END)
					run->open_turn = idx;
				run->seq++;
				inspect_note_type(run, j);
				json_array_append_new(img->events, j);
			}
		}
		pos = end + 1;
		img->valid_len = run->base + (off_t)pos;
	}
	*used = pos < len ? pos : len;
	run->base += (off_t)*used;
	return 0;
}

/* Streamed, after the last chunk: the open turn's events, read back from the file (the read kept
 * no tree), from index img->base on. They were checked as they were read. */
static int
inspect_read_back(struct inspect_run *run, struct err *e)
{
	struct sess_image *img = run->img;
	size_t from = run->open_turn, n = (size_t)run->seq;
	off_t off = n > from ? img->offs[from] : img->valid_len;
	size_t len = (size_t)(img->valid_len - off), have = 0;
	char *buf = xmalloc(len + 1);
	int rc = 0;

	img->base = from;
	while (have < len) {
		ssize_t r = pread(run->fd, buf + have, len - have, off + (off_t)have);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(buf);
			return err_set(e, ERR_SESSION_LOG_IO, "cannot read the open turn back: %s",
			    r < 0 ? strerror(errno) : "the file is shorter");
		}
		have += (size_t)r;
	}
	for (size_t i = from, pos = 0; i < n && rc == 0; i++) {
		size_t end = (size_t)(img->offs[i + 1] - off) - 1;	/* its newline */
		json_t *ev = sess_json_parse_line(buf + pos, end - pos);
		if (ev == NULL || json_integer_value(json_object_get(ev, "seq")) != (json_int_t)i)
			rc = err_set(e, ERR_SESSION_LOG_IO, "event %zu changed while the file was read", i);
		json_array_append_new(img->events, ev);
		pos = end + 1;
	}
	free(buf);
	return rc;
}

/* After the last chunk: the verdict on an empty file, and the closers, computed from the open
 * turn alone (what sess_closers_append reads of the whole history depends on nothing before). */
static int
inspect_finish(struct inspect_run *run, struct err *e)
{
	struct sess_image *img = run->img;
	size_t n = run->stream ? (size_t)run->seq : img->base + json_array_size(img->events);
	json_t *tail;

	if (img->header == NULL)
		return err_set(e, ERR_SESSION_CORRUPT, "the session file is empty");
	img->nevents = n;
	if (run->stream) {
		if (n + 1 > run->coffs)
			img->offs = xrealloc(img->offs, (n + 1) * sizeof(*img->offs));
		img->offs[n] = img->valid_len;
		if (inspect_read_back(run, e) < 0)
			return -1;
	}
	tail = json_array();
	for (size_t i = run->open_turn; i < n; i++)
		json_array_append(tail, json_array_get(img->events, i - img->base));
	img->nclosers = sess_closers_append(tail);
	for (size_t i = n - run->open_turn; i < json_array_size(tail); i++) {
		inspect_note_type(run, json_array_get(tail, i));
		json_array_append(img->events, json_array_get(tail, i));
	}
	json_decref(tail);
	return 0;
}

int
sess_inspect_buf(const char *data, size_t len, struct sess_image *img, struct err *e)
{
	struct inspect_run run;
	size_t used;
	int rc;

	inspect_run_init(&run, img);
	rc = inspect_lines(&run, data, len, INSPECT_FINAL, &used, e);
	if (rc == 0)
		rc = inspect_finish(&run, e);
	if (rc < 0)
		sess_image_free(img);	/* a refused file leaves nothing behind */
	return rc;
}

/* The file is read a chunk at a time: a load keeps the events, never the whole file's bytes too. */
#define INSPECT_CHUNK (1u << 20)
/* From this size on, a streamed read checks the file's second half on a second thread. */
#define INSPECT_SPLIT_MIN ((off_t)16 << 20)

static int inspect_fd(int fd, const char *path, const atomic_int *cancel, int stream, off_t split_min,
    struct sess_image *img, struct err *e);

int
sess_inspect_fd(int fd, const char *path, const atomic_int *cancel, struct sess_image *img, struct err *e)
{
	return inspect_fd(fd, path, cancel, 0, 0, img, e);
}

int
sess_inspect_stream(int fd, const char *path, const atomic_int *cancel, struct sess_image *img, struct err *e)
{
	return inspect_fd(fd, path, cancel, 1, INSPECT_SPLIT_MIN, img, e);
}

int
sess_inspect_stream_split(int fd, const char *path, const atomic_int *cancel, off_t split_min, struct sess_image *img,
    struct err *e)
{
	return inspect_fd(fd, path, cancel, 1, split_min, img, e);
}

/* Reads [*off, limit) of the file (limit -1: to its end) through inspect_lines, *buf (cap bytes
 * and a 16-byte pad) its buffer; *off ends where the lines taken end. */
static int
inspect_range(struct inspect_run *run, const char *path, const atomic_int *cancel, off_t *off, off_t limit,
    char **bufp, size_t *capp, struct err *e)
{
	size_t have = 0;
	off_t at = *off;
	int rc = 0, eof = 0, bound = 0;

	run->base = *off;
	while (rc == 0 && !run->done) {
		size_t used;
		if (cancel && atomic_load_explicit(cancel, memory_order_relaxed))
			return err_set(e, ERR_INTERNAL, "reading %s was cancelled", path);
		while (!eof && have < *capp) {
			/* pread: the lease holder may have moved the offset; a file cut meanwhile reads
			 * short, never faults */
			size_t want = *capp - have;
			if (limit >= 0 && (off_t)want > limit - at)
				want = (size_t)(limit - at);
			if (want == 0) {
				eof = bound = 1;	/* the range ends on a line's end: more follow */
				break;
			}
			ssize_t n = pread(run->fd, *bufp + have, want, at);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				return err_set(e, ERR_SESSION_LOG_IO, "cannot read %s: %s", path, strerror(errno));
			if (n == 0)
				eof = 1;
			have += (size_t)n;
			at += n;
		}
		memset(*bufp + have, 0, 16);
		if ((rc = inspect_lines(run, *bufp, have, !eof ? INSPECT_MORE : bound ? INSPECT_BOUNDARY : INSPECT_FINAL,
		    &used, e)) < 0 || eof)
			break;
		if (used == 0 && have == *capp) {
			*capp *= 2;	/* one line longer than the buffer */
			*bufp = xrealloc(*bufp, *capp + 16);
		}
		memmove(*bufp, *bufp + used, have - used);
		have -= used;
	}
	*off = run->base;
	return rc;
}

/* Takes what the thread ahead checked when the read in order ended where it began. */
static void
inspect_splice(struct inspect_run *run, struct sess_ahead *a, off_t *off)
{
	if (run->done || a->n == 0 || *off != a->start || run->seq != a->seq0)
		return;
	for (size_t i = 0; i < a->n; i++)
		inspect_note_streamed(run, (size_t)run->seq, a->offs[i], a->types[i]);
	run->line_no += (int)a->n;
	run->img->valid_len = *off = a->stop;
}

static int
inspect_fd(int fd, const char *path, const atomic_int *cancel, int stream, off_t split_min, struct sess_image *img,
    struct err *e)
{
	struct inspect_run run;
	struct sess_ahead ahead;
	struct stat st;
	size_t cap = INSPECT_CHUNK;
	off_t off = 0;
	char *buf;
	int rc, split;

	inspect_run_init(&run, img);
	run.stream = stream;
	run.fd = fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		sess_image_free(img);
		return err_set(e, ERR_SESSION_LOG_IO, "%s is not a regular file", path);
	}
	buf = xmalloc(cap + 16);	/* padded: the scan's short compares read whole words (jsonscan.h) */
	/* A big streamed read checks its second half on a second thread meanwhile (session/ahead.h). */
	split = stream && split_min > 0 && st.st_size >= split_min && st.st_size >= 2 &&
	    sess_ahead_start(&ahead, fd, st.st_size / 2, st.st_size, cancel) == 0;
	rc = inspect_range(&run, path, cancel, &off, split ? ahead.start : -1, &buf, &cap, e);
	if (split) {
		sess_ahead_join(&ahead);
		if (rc == 0 && !run.done) {
			inspect_splice(&run, &ahead, &off);
			rc = inspect_range(&run, path, cancel, &off, -1, &buf, &cap, e);
		}
		sess_ahead_free(&ahead);
	}
	free(buf);
	if (rc == 0)
		rc = inspect_finish(&run, e);
	sess_checked_free(&run.checked);
	if (rc < 0)
		sess_image_free(img);
	return rc;
}

int
sess_inspect_file(const char *path, struct sess_image *img, struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int rc;

	memset(img, 0, sizeof(*img));
	if (fd < 0)
		return err_set(e, errno == ENOENT ? ERR_UNKNOWN_SESSION : ERR_SESSION_LOG_IO,
		    "cannot open %s: %s", path, strerror(errno));
	rc = sess_inspect_fd(fd, path, NULL, img, e);
	close(fd);
	return rc;
}

/* Pulls the seq of the last event, or -1. */
static int64_t
sess_last_seq(json_t *events, int64_t *time)
{
	size_t n = json_array_size(events);
	json_t *last;

	if (n == 0)
		return -1;
	last = json_array_get(events, n - 1);
	*time = json_integer_value(json_object_get(last, "time"));
	return json_integer_value(json_object_get(last, "seq"));
}

static void
sess_closer_push(json_t *events, const char *type, json_t *data)
{
	int64_t time = 0;
	int64_t seq = sess_last_seq(events, &time) + 1;

	json_array_append_new(events, sess_event_new(seq, time, type, data));
}

size_t
sess_closers_append(json_t *events)
{
	size_t n = json_array_size(events), before = n;
	json_t *turn = NULL, *step_start = NULL, *assistant = NULL;
	json_t *called = json_object(), *resulted = json_object();

	for (size_t i = 0; i < n; i++) {
		json_t *ev = json_array_get(events, i), *data = json_object_get(ev, "data");
		enum sess_ev et = sess_ev_of(json_string_value(json_object_get(ev, "type")));
		const char *cid = json_string_value(json_object_get(data, "callId"));
		if (et == SESS_EV_TURN_START) {
			turn = ev;
			step_start = assistant = NULL;
		} else if (et == SESS_EV_TURN_END) {
			turn = step_start = assistant = NULL;
		} else if (et == SESS_EV_STEP_START) {
			step_start = ev;
			assistant = NULL;
			json_object_clear(called);
			json_object_clear(resulted);
		} else if (et == SESS_EV_STEP_END) {
			step_start = assistant = NULL;
		} else if (et == SESS_EV_ASSISTANT_MESSAGE) {
			assistant = ev;
		} else if (et == SESS_EV_TOOL_CALL && cid) {
			json_object_set_new(called, cid, json_true());
		} else if (et == SESS_EV_TOOL_RESULT && cid) {
			json_object_set_new(resulted, cid, json_true());
		}
	}
	if (turn == NULL)
		goto out;
	json_t *tdata = json_object_get(turn, "data");
	json_int_t tno = json_integer_value(json_object_get(tdata, "turn"));
	if (step_start) {
		json_int_t sno = json_integer_value(json_object_get(json_object_get(step_start, "data"), "step"));
		json_t *content = json_object_get(json_object_get(assistant, "data"), "content");
		size_t k;
		json_t *block;
		json_array_foreach(content, k, block) {
			const char *cid = json_string_value(json_object_get(block, "callId"));
			const char *btype = json_string_value(json_object_get(block, "type"));
			if (!btype || strcmp(btype, "tool-call") != 0 || !cid || json_object_get(resulted, cid))
				continue;
			int started = json_object_get(called, cid) != NULL;
			const char *name = json_string_value(json_object_get(block, "name"));
			sess_closer_push(events, "tool/result",
			    json_pack("{s:I, s:I, s:s, s:s, s:[{s:s, s:s}], s:b, s:{s:s}}", "turn", tno,
				"step", sno, "callId", cid, "name", name ? name : "",
				"content", "type", "text", "text",
				started ? SESS_TEXT_OUTCOME_UNKNOWN : SESS_TEXT_NOT_STARTED, "isError", 1,
				"error", "code", err_tool(started ? ERR_TOOL_OUTCOME_UNKNOWN : ERR_TOOL_NOT_STARTED)));
		}
		sess_closer_push(events, "step/end", json_pack("{s:I, s:I}", "turn", tno, "step", sno));
	}
	sess_closer_push(events, "turn/end",
	    json_pack("{s:I, s:{s:s}}", "turn", tno, "reason", "kind", "interrupted"));
out:
	json_decref(called);
	json_decref(resulted);
	return json_array_size(events) - before;
}

/* ---- the scan: inspect's answers without keeping the events ---- */

/* Our own writer's prefix: {"seq":N,"time":T,"type":"X", ... Returns 1 and fills seq/type. */
static int
sess_scan_prefix(const char *s, size_t n, int64_t *seq, const char **type, size_t *tlen)
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
		return 0;	/* no integer, or one jansson might not hold: the full path decides */
	if (end - p < 9 || memcmp(p, ",\"type\":\"", 9) != 0)
		return 0;
	p += 9;
	const char *q = memchr(p, '"', (size_t)(end - p));
	/* our writer puts data fourth, an object; any other shape takes the full path */
	if (q == NULL || end - q < 10 || memcmp(q, "\",\"data\":{", 10) != 0)
		return 0;
	*seq = v;
	*type = p;
	*tlen = (size_t)(q - p);
	return 1;
}

static int
sess_type_is(const char *t, size_t n, const char *want)
{
	return strlen(want) == n && memcmp(t, want, n) == 0;
}

static int
sess_scan_keeps(const char *const *keep, const char *type, size_t tlen)
{
	for (size_t i = 0; keep && keep[i]; i++)
		if (sess_type_is(type, tlen, keep[i]))
			return 1;
	return 0;
}

static void
sess_scan_keep(struct sess_scan *sc, json_t *ev)
{
	if (sc->kept == NULL)
		sc->kept = json_array();
	json_array_append_new(sc->kept, ev);
}

void
sess_scan_free(struct sess_scan *sc)
{
	json_decref(sc->kept);
	sc->kept = NULL;
}

/*
 * The shapes of the event lines seen so far (jsonscan.h): a line of a known shape is checked by
 * comparing the bytes between its values and validating the values, and its end is where the
 * shape ends (no separate newline search). Shapes are learnt only from lines our writer's prefix
 * matched, so a shape's first three values are seq, time and type.
 */
#define SCAN_SHAPES 8

struct scan_shapes {
	char seq[24];		/* the expected seq in decimal, kept in step with the count */
	size_t seqlen;
	struct json_shape shape[SCAN_SHAPES];
	int next[SCAN_SHAPES];	/* the shape that followed this one last time: tried first */
	int n, last, victim;	/* last: the shape of the previous line, or -1 */
};

/* The scan's state between chunks of a file: everything a line needs of the lines before it. */
struct scan_run {
	struct sess_scan *sc;
	const char *const *keep;
	struct scan_shapes shapes;
	off_t base;		/* file offset of the chunk's first byte */
	off_t open_turn;	/* file offset of the open turn's turn/start, or -1 */
	int64_t seq;
	int line_no;
	int done;		/* a torn last line ended the file */
};

static void scan_run_init(struct scan_run *run, const char *const *keep, struct sess_scan *sc);
static int sess_scan_lines(struct scan_run *run, const char *data, size_t len, int final, size_t *used,
    struct err *e);
static int scan_run_finish(struct scan_run *run, const char *tail, size_t tail_len, struct err *e);

static void
scan_shapes_free(struct scan_shapes *c)
{
	for (int i = 0; i < c->n; i++)
		json_shape_free(&c->shape[i]);
	c->n = 0;
}

/* a[0..n) == b[0..n) for short n, a word at a time: both must be readable up to n rounded up
 * to 8 (a value inside a line followed by more of it; our own padded buffers). */
static inline int
scan_eq_short(const char *a, const char *b, size_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	for (size_t i = 0; i < n; i += 8) {
		uint64_t x, y, left = n - i;
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (left < 8 ? ((x ^ y) << (64 - 8 * left)) != 0 : x != y)
			return 0;
	}
	return 1;
#else
	return memcmp(a, b, n) == 0;
#endif
}

/* Returns the newline ending a line of a known shape at line, with its seq and type; or NULL. */
static const char *
scan_shaped(struct scan_shapes *c, const char *line, const char *limit, int64_t expected, int64_t *seq,
    const char **type, size_t *tlen)
{
	struct json_span v[3];	/* seq, time, type */

	int first = c->last >= 0 ? c->next[c->last] : 0;

	for (int k = 0; k < c->n; k++) {
		int i = k == 0 ? first : (k <= first ? k - 1 : k);	/* first, then the others in order */
		const char *end = json_shape_match(&c->shape[i], line, limit, v, 3);
		if (end == NULL || end >= limit || *end != '\n')
			continue;
		/* seq and time must be integers, the type a plain known string: else the slow way. The
		 * expected seq is compared as text; any other seq is parsed (for the gap error). */
		if (v[0].n == c->seqlen && scan_eq_short(v[0].s, c->seq, c->seqlen))
			*seq = expected;
		else if (!v[0].plain || !sess_plain_int(v[0].s, v[0].n, seq))
			return NULL;
		if (!v[1].plain)
			return NULL;
		/* the learnt line's type was a plain known one: the same bytes are too */
		const struct json_shape *sh = &c->shape[i];
		if (!(v[2].n == sh->var[2].len && scan_eq_short(v[2].s, sh->bytes + sh->var[2].off, v[2].n)) &&
		    (v[2].n < 2 || memchr(v[2].s, '\\', v[2].n) || !sess_event_type_knownn(v[2].s + 1, v[2].n - 2)))
			return NULL;
		*type = v[2].s + 1;
		*tlen = v[2].n - 2;
		if (c->last >= 0)
			c->next[c->last] = i;
		c->last = i;
		return end;
	}
	c->last = -1;
	return NULL;
}

/* Validates line like json_scan_valid and keeps its shape in front (the oldest goes). */
static int
scan_learn(struct scan_shapes *c, const char *line, size_t n, size_t flags)
{
	struct json_shape sh;

	memset(&sh, 0, sizeof(sh));
	if (!json_shape_learn(&sh, line, n, flags))
		return 0;
	if (sh.bytes == NULL || sh.nvar < 3)
		return 1;	/* valid, but no shape to keep */
	int i = c->n < SCAN_SHAPES ? c->n++ : c->victim++ % SCAN_SHAPES;
	json_shape_free(&c->shape[i]);
	c->shape[i] = sh;
	c->next[i] = 0;
	for (int k = 0; k < c->n; k++)
		if (c->next[k] == i && k != i)
			c->next[k] = 0;	/* it was another shape before */
	c->last = i;
	return 1;
}

static void
scan_run_init(struct scan_run *run, const char *const *keep, struct sess_scan *sc)
{
	memset(run, 0, sizeof(*run));
	memset(sc, 0, sizeof(*sc));
	run->sc = sc;
	run->keep = keep;
	run->open_turn = -1;
	run->shapes.last = -1;
	run->shapes.seq[0] = '0';
	run->shapes.seqlen = 1;
}

int
sess_scan_buf(const char *data, size_t len, const char *const *keep, struct sess_scan *sc, struct err *e)
{
	struct scan_run run;
	size_t used;
	int rc;

	scan_run_init(&run, keep, sc);
	rc = sess_scan_lines(&run, data, len, 1, &used, e);
	if (rc == 0 && run.open_turn >= 0)
		rc = scan_run_finish(&run, data + run.open_turn, (size_t)(sc->valid_len - run.open_turn), e);
	else if (rc == 0)
		rc = scan_run_finish(&run, NULL, 0, e);
	scan_shapes_free(&run.shapes);
	return rc;
}

/*
 * The lines of one chunk (data[0..len), at file offset run->base): every complete line, and with
 * final the rest too (the file ends there). *used is how many bytes were taken; the caller keeps
 * the rest for the next chunk.
 */
static int
sess_scan_lines(struct scan_run *run, const char *data, size_t len, int final, size_t *used, struct err *e)
{
	struct sess_scan *sc = run->sc;
	struct scan_shapes *shapes = &run->shapes;
	const char *const *keep = run->keep;
	size_t pos = 0;
	int ok;

	*used = 0;
	while (pos < len && !run->done) {
		const char *line = data + pos, *type = NULL, *nl = NULL;
		size_t tlen = 0;
		int64_t s = -1;
		int shaped = 0;
		if (run->line_no > 0 && shapes->n)
			shaped = (nl = scan_shaped(shapes, line, data + len, run->seq, &s, &type, &tlen)) != NULL;
		if (!shaped)
			nl = memchr(line, '\n', len - pos);
		if (nl == NULL && !final)
			break;		/* the rest of this line comes with the next chunk */
		run->line_no++;
		size_t end = nl ? (size_t)(nl - data) : len, n = end - pos;
		int last = final && (nl == NULL || end + 1 == len);
		if (run->line_no == 1) {
			json_t *h = nl ? sess_json_parse_line(line, n) : NULL;
			if (h == NULL)
				return err_set(e, ERR_SESSION_CORRUPT, "the session header is unreadable");
			ok = sess_header_check(h, e);
			json_decref(h);
			if (ok < 0)
				return -1;
		} else {
			/* The prefix holds what the event check looks at; the validator says yes only to
			 * what jansson, as load parses, accepts (duplicate keys included). */
			if (shaped || (nl && sess_scan_prefix(line, n, &s, &type, &tlen) &&
			    sess_event_type_knownn(type, tlen) &&
			    scan_learn(shapes, line, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL))) {
				if (s != run->seq)
					return err_set(e, ERR_SESSION_CORRUPT, "event seq gap: expected %lld",
					    (long long)run->seq);
				if (keep && sess_scan_keeps(keep, type, tlen)) {
					json_t *j = sess_json_parse_line(line, n);
					if (j == NULL)	/* cannot be: the validator said jansson takes it */
						return err_set(e, ERR_SESSION_CORRUPT, "line %d is not valid JSON",
						    run->line_no);
					/* what is kept reaches its readers: its payload is checked like load's */
					if (sess_event_check(j, run->seq, e) < 0) {
						json_decref(j);
						return -1;
					}
					sess_scan_keep(sc, j);
				}
			} else {
				/* Anything else takes the full path: repair, parse, check. */
				json_t *j = nl ? sess_json_parse_line(line, n) : NULL;
				if (j == NULL) {
					if (last) {
						sc->torn = 1;
						run->done = 1;
						break;
					}
					return err_set(e, ERR_SESSION_CORRUPT, "line %d is not valid JSON", run->line_no);
				}
				ok = sess_event_check(j, run->seq, e);
				if (ok < 0) {
					json_decref(j);
					return -1;
				}
				const char *t = json_string_value(json_object_get(j, "type"));
				enum sess_ev et = sess_ev_of(t);
				/* the open turn is tracked on this path too: the closers depend on it */
				if (et == SESS_EV_TURN_START)
					run->open_turn = run->base + (off_t)pos;
				else if (et == SESS_EV_TURN_END)
					run->open_turn = -1;
				if (ok == 1 && keep && sess_scan_keeps(keep, t, strlen(t)))
					sess_scan_keep(sc, j);
				else
					json_decref(j);
				type = NULL;
			}
			/* constant lengths: the compares are inlined (this runs for every line) */
			if (type && sess_ev_is_TURN_START(type, tlen))
				run->open_turn = run->base + (off_t)pos;
			else if (type && sess_ev_is_TURN_END(type, tlen))
				run->open_turn = -1;
			run->seq++;
			sess_seq_text_next(shapes->seq, &shapes->seqlen, sizeof(shapes->seq));
		}
		pos = end + 1;
		sc->valid_len = run->base + (off_t)pos;
	}
	*used = pos < len ? pos : len;
	run->base += (off_t)*used;
	return 0;
}

/* After the last chunk: the verdict on an empty file, and the closers of an open turn, computed
 * from that turn's lines (tail: its bytes up to the valid length). */
static int
scan_run_finish(struct scan_run *run, const char *tail, size_t tail_len, struct err *e)
{
	struct sess_scan *sc = run->sc;

	if (run->line_no == 0)
		return err_set(e, ERR_SESSION_CORRUPT, "the session file is empty");
	sc->nevents = (long)run->seq;
	if (tail) {
		/* Only the open turn is parsed in full: the closers depend on it alone. */
		json_t *events = json_array();
		size_t p = 0;
		while (p < tail_len) {
			const char *nl = memchr(tail + p, '\n', tail_len - p);
			size_t n = nl ? (size_t)(nl - (tail + p)) : tail_len - p;
			json_t *j = sess_json_parse_line(tail + p, n);
			if (j)
				json_array_append_new(events, j);
			p += n + 1;
		}
		sc->nclosers = sess_closers_append(events);
		json_decref(events);
	}
	return 0;
}

/* The file is read a chunk at a time into one buffer that stays in the cache; a line longer than
 * a chunk grows it. Read, not mapped: another process may truncate the file (a load's repair)
 * while we scan, and a mapping would fault (SIGBUS) where a read only comes up short. */
#define SCAN_CHUNK (1u << 18)

int
sess_scan_file(const char *path, const char *const *keep, struct sess_scan *sc, struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct scan_run run;
	struct stat st;
	size_t cap = SCAN_CHUNK, have = 0;
	char *buf;
	int rc = 0, eof = 0;

	scan_run_init(&run, keep, sc);
	if (fd < 0)
		return err_set(e, errno == ENOENT ? ERR_UNKNOWN_SESSION : ERR_SESSION_LOG_IO, "cannot open %s: %s", path,
		    strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(e, ERR_SESSION_LOG_IO, "%s is not a regular file", path);
	}
	buf = xmalloc(cap + 16);	/* padded: the short compares read whole words (jsonscan.h) */
	while (rc == 0 && !run.done) {
		size_t used;
		while (!eof && have < cap) {
			ssize_t n = read(fd, buf + have, cap - have);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				rc = err_set(e, ERR_SESSION_LOG_IO, "cannot read %s: %s", path, strerror(errno));
				break;
			}
			if (n == 0)
				eof = 1;
			have += (size_t)n;
		}
		if (rc < 0)
			break;
		memset(buf + have, 0, 16);
		if ((rc = sess_scan_lines(&run, buf, have, eof, &used, e)) < 0 || eof)
			break;
		if (used == 0) {
			cap *= 2;	/* one line longer than the buffer */
			buf = xrealloc(buf, cap + 16);
		}
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	if (rc == 0 && run.open_turn >= 0) {
		/* The open turn is the tail: read it back (a file cut meanwhile reads short). */
		size_t n = (size_t)(sc->valid_len - run.open_turn), got = 0;
		char *tail = xmalloc(n + 1);
		while (got < n) {
			ssize_t r = pread(fd, tail + got, n - got, run.open_turn + (off_t)got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		rc = scan_run_finish(&run, tail, got, e);
		free(tail);
	} else if (rc == 0) {
		rc = scan_run_finish(&run, NULL, 0, e);
	}
	close(fd);
	free(buf);
	scan_shapes_free(&run.shapes);
	return rc;
}
