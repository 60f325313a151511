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
#include "session/event.h"
#include "session/evtype.h"
#include "session/walk.h"

void
sess_image_free(struct sess_image *img)
{
	json_decref(img->header);
	json_decref(img->events);
	free(img->types);
	free(img->offs);
	memset(img, 0, sizeof(*img));
}

/* inspect's state beside its walk: what it keeps of each event. */
struct inspect_run {
	struct sess_image *img;
	struct sess_walk walk;
	size_t ctypes;		/* room in img->types */
	size_t coffs;		/* room in img->offs */
	int stream;		/* streamed: offsets, no tree kept; the open turn is read back at the end */
	int fd;			/* streamed: the file, for that */
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

	inspect_note_code(run, idx, code);
	if (idx + 1 >= run->coffs) {
		run->coffs = run->coffs ? run->coffs * 2 : 1024;
		img->offs = xrealloc(img->offs, run->coffs * sizeof(*img->offs));
	}
	img->offs[idx] = off;
}

/* The walk's take: a whole read keeps every tree, a streamed one the offset (walk.h). */
static int
inspect_take(struct sess_walk *w, const char *line, size_t n, off_t off, int code, json_t *ev, struct err *e)
{
	struct inspect_run *run = w->arg;

	(void)line, (void)n, (void)e;
	if (run->stream) {
		inspect_note_streamed(run, (size_t)w->seq, off, code);
		json_decref(ev);
	} else {
		/* Ignorable unknown events stay, so seq stays contiguous in memory. */
		inspect_note_type(run, ev);
		json_array_append_new(run->img->events, ev);
	}
	return 0;
}

static void
inspect_run_init(struct inspect_run *run, struct sess_image *img, int stream)
{
	memset(run, 0, sizeof(*run));
	memset(img, 0, sizeof(*img));
	run->img = img;
	run->fd = -1;
	run->stream = stream;
	/* A whole read builds every tree anyway: shapes would only cost. */
	sess_walk_init(&run->walk, SESS_CHECK_FULL, stream, inspect_take, run);
	img->events = json_array();
}

/* The first event of the open turn (closers: only it matters), or 0 when no turn was seen. */
static size_t
inspect_open_turn(const struct inspect_run *run)
{
	return run->walk.turn_seq >= 0 ? (size_t)run->walk.turn_seq : 0;
}

/* Streamed, after the last chunk: the open turn's events, read back from the file (the read kept
 * no tree), from index img->base on. They were checked as they were read. */
static int
inspect_read_back(struct inspect_run *run, struct err *e)
{
	struct sess_image *img = run->img;
	size_t from = inspect_open_turn(run), n = (size_t)run->walk.seq;
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
	size_t n = (size_t)run->walk.seq, open = inspect_open_turn(run);
	json_t *tail;

	img->header = run->walk.header;
	run->walk.header = NULL;
	img->valid_len = run->walk.valid_len;
	img->torn = run->walk.torn;
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
	for (size_t i = open; i < n; i++)
		json_array_append(tail, json_array_get(img->events, i - img->base));
	img->nclosers = sess_closers_append(tail);
	for (size_t i = n - open; i < json_array_size(tail); i++) {
		inspect_note_type(run, json_array_get(tail, i));
		json_array_append(img->events, json_array_get(tail, i));
	}
	json_decref(tail);
	return 0;
}

/* Ends a run: frees the walk, and the image too when the file was refused. */
static int
inspect_end(struct inspect_run *run, int rc)
{
	sess_walk_free(&run->walk);
	if (rc < 0)
		sess_image_free(run->img);	/* a refused file leaves nothing behind */
	return rc;
}

int
sess_inspect_buf(const char *data, size_t len, struct sess_image *img, struct err *e)
{
	struct inspect_run run;
	size_t used;
	int rc;

	inspect_run_init(&run, img, 0);
	rc = sess_walk_lines(&run.walk, data, len, SESS_WALK_FINAL, &used, e);
	if (rc == 0)
		rc = inspect_finish(&run, e);
	return inspect_end(&run, rc);
}

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

/* Takes what the thread ahead checked when the read in order ended where it began. */
static void
inspect_splice(struct inspect_run *run, struct sess_ahead *a, off_t *off)
{
	struct sess_walk *w = &run->walk;

	if (w->done || a->n == 0 || *off != a->start || w->seq != a->seq0)
		return;
	for (size_t i = 0; i < a->n; i++) {
		inspect_note_streamed(run, (size_t)w->seq, a->offs[i], a->types[i]);
		sess_walk_count(w, a->offs[i], a->types[i]);
	}
	w->line_no += (int)a->n;
	w->valid_len = *off = a->stop;
}

static int
inspect_fd(int fd, const char *path, const atomic_int *cancel, int stream, off_t split_min, struct sess_image *img,
    struct err *e)
{
	struct inspect_run run;
	struct sess_ahead ahead;
	struct stat st;
	off_t off = 0;
	int rc, split;

	inspect_run_init(&run, img, stream);
	run.fd = fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return inspect_end(&run, err_set(e, ERR_SESSION_LOG_IO, "%s is not a regular file", path));
	/* A big streamed read checks its second half on a second thread meanwhile (session/ahead.h). */
	split = stream && split_min > 0 && st.st_size >= split_min && st.st_size >= 2 &&
	    sess_ahead_start(&ahead, fd, st.st_size / 2, st.st_size, cancel) == 0;
	rc = sess_walk_fd(&run.walk, fd, path, cancel, &off, split ? ahead.start : -1, e);
	if (split) {
		sess_ahead_join(&ahead);
		if (rc == 0 && !run.walk.done) {
			inspect_splice(&run, &ahead, &off);
			rc = sess_walk_fd(&run.walk, fd, path, cancel, &off, -1, e);
		}
		sess_ahead_free(&ahead);
	}
	if (rc == 0)
		rc = inspect_finish(&run, e);
	return inspect_end(&run, rc);
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

void
sess_scan_free(struct sess_scan *sc)
{
	json_decref(sc->kept);
	sc->kept = NULL;
}

/* The scan's state beside its walk. */
struct scan_run {
	struct sess_scan *sc;
	struct sess_walk walk;
	unsigned char keep[256];	/* by type code: 1 when kept */
};

/* The walk's take: a kept type is parsed (when the walk built no tree) and its payload checked
 * like load's, so what is kept reaches its readers checked; the rest is let go. */
static int
scan_take(struct sess_walk *w, const char *line, size_t n, off_t off, int code, json_t *ev, struct err *e)
{
	struct scan_run *run = w->arg;

	(void)off;
	if (code <= 0 || !run->keep[code & 0xff]) {
		json_decref(ev);
		return 0;
	}
	if (ev == NULL) {
		if ((ev = sess_json_parse_line(line, n)) == NULL)	/* cannot be: the validator said yes */
			return err_set(e, ERR_SESSION_CORRUPT, "line %d is not valid JSON", w->line_no);
		if (sess_event_check(ev, w->seq, e) < 0) {
			json_decref(ev);
			return -1;
		}
	}
	if (run->sc->kept == NULL)
		run->sc->kept = json_array();
	json_array_append_new(run->sc->kept, ev);
	return 0;
}

static void
scan_run_init(struct scan_run *run, const char *const *keep, struct sess_scan *sc)
{
	memset(run, 0, sizeof(*run));
	memset(sc, 0, sizeof(*sc));
	run->sc = sc;
	for (size_t i = 0; keep && keep[i]; i++) {
		int code = sess_event_type_code(keep[i]);
		if (code > 0)
			run->keep[code & 0xff] = 1;
	}
	sess_walk_init(&run->walk, SESS_CHECK_ENVELOPE, 1, scan_take, run);
}

/* Whether the walk ended inside a turn: its first line's offset in *off. */
static int
scan_open_turn(const struct scan_run *run, off_t *off)
{
	*off = run->walk.turn_off;
	return run->walk.turn_off >= 0 && !run->walk.turn_ended;
}

/* After the last chunk: the verdict on an empty file, and the closers of an open turn, computed
 * from that turn's lines (tail: its bytes up to the valid length). */
static int
scan_run_finish(struct scan_run *run, const char *tail, size_t tail_len, struct err *e)
{
	struct sess_scan *sc = run->sc;

	sc->valid_len = run->walk.valid_len;
	sc->torn = run->walk.torn;
	if (run->walk.line_no == 0)
		return err_set(e, ERR_SESSION_CORRUPT, "the session file is empty");
	sc->nevents = (long)run->walk.seq;
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

int
sess_scan_buf(const char *data, size_t len, const char *const *keep, struct sess_scan *sc, struct err *e)
{
	struct scan_run run;
	size_t used;
	off_t open;
	int rc;

	scan_run_init(&run, keep, sc);
	rc = sess_walk_lines(&run.walk, data, len, SESS_WALK_FINAL, &used, e);
	if (rc == 0 && scan_open_turn(&run, &open))
		rc = scan_run_finish(&run, data + open, (size_t)(run.walk.valid_len - open), e);
	else if (rc == 0)
		rc = scan_run_finish(&run, NULL, 0, e);
	sess_walk_free(&run.walk);
	return rc;
}

int
sess_scan_file(const char *path, const char *const *keep, struct sess_scan *sc, struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct scan_run run;
	struct stat st;
	off_t off = 0, open;
	int rc;

	scan_run_init(&run, keep, sc);
	if (fd < 0) {
		sess_walk_free(&run.walk);
		return err_set(e, errno == ENOENT ? ERR_UNKNOWN_SESSION : ERR_SESSION_LOG_IO, "cannot open %s: %s", path,
		    strerror(errno));
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		sess_walk_free(&run.walk);
		return err_set(e, ERR_SESSION_LOG_IO, "%s is not a regular file", path);
	}
	rc = sess_walk_fd(&run.walk, fd, path, NULL, &off, -1, e);
	if (rc == 0 && scan_open_turn(&run, &open)) {
		/* The open turn is the tail: read it back (a file cut meanwhile reads short). */
		size_t n = (size_t)(run.walk.valid_len - open), got = 0;
		char *tail = xmalloc(n + 1);
		while (got < n) {
			ssize_t r = pread(fd, tail + got, n - got, open + (off_t)got);
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
	sess_walk_free(&run.walk);
	return rc;
}
