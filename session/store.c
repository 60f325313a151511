/* Live sessions and appends. */
#include "session/store.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/jenc.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "session/evtype.h"
#include "session/repair.h"
#include "session/store_def.h"

void
sess_store_init(struct sess_store *st, struct sess_env *env)
{
	st->env = env;
	map_init(&st->live);
	st->order = NULL;
	st->norder = st->corder = 0;
	buf_init(&st->line);
}

static void
sess_free(struct sess *s)
{
	sess_log_free(s->log);
	free(s->obs);
	json_decref(s->header);
	for (size_t i = s->win_base; i < s->nev; i++)
		json_decref(s->win[i - s->win_base]);
	free(s->win);
	free(s->types);
	free(s->offs);
	free(s);
}

void
sess_store_free(struct sess_store *st)
{
	for (size_t i = 0; i < st->norder; i++)
		sess_free(st->order[i]);
	free(st->order);
	map_free(&st->live);
	buf_free(&st->line);
	st->order = NULL;
	st->norder = st->corder = 0;
}

struct sess *
sess_store_get(struct sess_store *st, const char *id)
{
	return map_get(&st->live, id);
}

/* Takes header and lg; the events, their codes and offsets come with sess_adopt_image. */
static struct sess *
sess_store_add(struct sess_store *st, json_t *header, struct sess_log *lg)
{
	struct sess *s = xcalloc(1, sizeof(*s));

	snprintf(s->id, sizeof(s->id), "%s", json_string_value(json_object_get(header, "id")));
	s->header = header;
	s->last_time = json_integer_value(json_object_get(header, "createdAt"));
	s->offs = xmalloc(sizeof(*s->offs));
	s->offs[0] = 0;
	s->coffs = 1;
	s->log = lg;
	s->store = st;
	map_put(&st->live, s->id, s);
	if (st->norder == st->corder) {
		st->corder = st->corder ? st->corder * 2 : 16;
		st->order = xrealloc(st->order, st->corder * sizeof(*st->order));
	}
	st->order[st->norder++] = s;
	return s;
}

/* Events kept in memory after they are written (the window): a turn's tail is read from here. */
#define SESS_WINDOW ((size_t)128)

/* Keeps ev (stolen) as event s->nev in the window, dropping the oldest written ones past it. */
static void
sess_window_push(struct sess *s, json_t *ev)
{
	size_t n = s->nev - s->win_base;

	if (n >= 2 * SESS_WINDOW && s->win_base + n - SESS_WINDOW <= s->nfile) {
		size_t drop = n - SESS_WINDOW;
		for (size_t i = 0; i < drop; i++)
			json_decref(s->win[i]);
		memmove(s->win, s->win + drop, (n - drop) * sizeof(*s->win));
		s->win_base += drop;
		n -= drop;
	}
	if (n == s->cwin) {
		s->cwin = s->cwin ? s->cwin * 2 : 16;
		s->win = xrealloc(s->win, s->cwin * sizeof(*s->win));
	}
	s->win[n] = ev;
	s->nev++;
	s->last_time = json_integer_value(json_object_get(ev, "time"));
}

/* Takes what a streamed read of s's file found: codes, offsets and the open turn's events (the
 * closers among them only when the log is read-only: they are never written). */
static void
sess_adopt_image(struct sess *s, struct sess_image *img, int with_closers)
{
	size_t total = img->nevents + (with_closers ? img->nclosers : 0);

	free(s->offs);
	s->offs = img->offs;
	s->coffs = img->nevents + 1;
	s->nfile = img->nevents;
	img->offs = NULL;
	free(s->types);
	s->types = img->types;
	s->views = img->views;
	s->ctypes = img->nevents + img->nclosers;
	img->types = NULL;
	s->nev = img->base;
	s->win_base = img->base;
	for (size_t i = img->base; i < total; i++)
		sess_window_push(s, json_incref(json_array_get(img->events, i - img->base)));
	if (s->offs == NULL) {	/* no event at all */
		s->offs = xmalloc(sizeof(*s->offs));
		s->offs[0] = img->valid_len;
		s->coffs = 1;
	}
}

struct sess *
sess_store_create(struct sess_store *st, const struct sess_header_info *info)
{
	json_t *h = sess_header_new(info);

	return sess_store_add(st, h, sess_log_new(st->env, info->id, h));
}

static const json_t *sess_put(struct sess *s, json_t *ev, struct err *e);

/* Appends to s what sess_closers_append computes for its open turn, for real (load's repair, and
 * the same after a recovered write failure); observers see them like any event. Only the open
 * turn is looked at, never the whole history. 0, or -1 with e (s is then failed). */
static int
sess_store_close_tail(struct sess *s, struct err *e)
{
	int turn_start = SESS_EV_TURN_START, turn_end = SESS_EV_TURN_END;
	size_t n = s->nev, from = n, k;
	json_t *tail = json_array();
	int rc = 0;

	while (from > 0) {
		int t = s->types[from - 1];
		if (t == turn_end)
			break;
		from--;
		if (t == turn_start)
			break;
	}
	for (size_t i = from; i < n; i++) {
		json_t *ev = sess_event_get(s, i);
		if (ev == NULL) {
			json_decref(tail);
			return err_set(e, ERR_SESSION_LOG_IO, "session %s: event %zu cannot be read back", s->id, i);
		}
		json_array_append_new(tail, ev);
	}
	k = sess_closers_append(tail);
	for (size_t i = n - from; i < n - from + k && rc == 0; i++)
		if (sess_put(s, json_incref(json_array_get(tail, i)), e) == NULL)
			rc = -1;
	if (k && rc == 0) {
		log_info("sess: %s: repaired with %zu closers", s->id, k);
		sess_checkpoint(s);
	}
	json_decref(tail);
	return rc;
}

/* A load between its steps: the lease, then the image read under it. */
struct sess_loading {
	char id[SESS_ID_LEN + 1];
	struct sess_log *lg;	/* owned: holds the lease */
	off_t size;		/* the file's size when the lease was taken */
	struct sess_image img;
	int rc;			/* sess_loading_read's outcome */
	struct err e;
};

struct sess_loading *
sess_store_load_start(struct sess_store *st, const char *id, struct err *e)
{
	struct sess_loading *ld;
	struct sess_log *lg;
	struct stat sb;

	if (!sess_id_valid(id)) {
		err_set(e, ERR_INVALID_PARAMS, "malformed session id");
		return NULL;
	}
	/* The lease first: what is read below is what no other process appends to meanwhile. */
	if ((lg = sess_log_open(st->env, id, e)) == NULL)
		return NULL;
	ld = xcalloc(1, sizeof(*ld));
	snprintf(ld->id, sizeof(ld->id), "%s", id);
	ld->lg = lg;
	ld->size = fstat(lg->fd, &sb) == 0 ? sb.st_size : 0;
	ld->rc = -1;
	err_clear(&ld->e);
	err_set(&ld->e, ERR_INTERNAL, "session %s was not read", id);
	return ld;
}

off_t
sess_loading_size(const struct sess_loading *ld)
{
	return ld->size;
}

void
sess_loading_read(struct sess_loading *ld, const atomic_int *cancel)
{
	err_clear(&ld->e);
	ld->rc = sess_inspect_stream(ld->lg->fd, ld->lg->path, cancel, &ld->img, &ld->e);
	/* counted here, on the reading thread: the loop never walks the codes of a whole history */
	ld->img.views = 0;
	for (size_t i = 0, n = sess_loading_nevents(ld); i < n; i++)
		ld->img.views += ld->img.types[i] == SESS_EV_MESSAGE_VIEW;
}

size_t
sess_loading_nevents(const struct sess_loading *ld)
{
	return ld->rc == 0 ? ld->img.nevents + ld->img.nclosers : 0;
}

int
sess_loading_type_at(const struct sess_loading *ld, size_t i)
{
	return i < sess_loading_nevents(ld) ? ld->img.types[i] : 0;
}

struct sess_cursor *
sess_loading_cursor(const struct sess_loading *ld, size_t from, size_t to)
{
	size_t n = sess_loading_nevents(ld), fend = to < ld->img.base ? to : ld->img.base;
	json_t *mem = json_array();

	if (to > n)
		to = n;
	if (from > to)
		from = to;
	if (fend < from)
		fend = from;
	for (size_t i = fend; i < to; i++)
		json_array_append(mem, json_array_get(ld->img.events, i - ld->img.base));
	return sess_cursor_open(ld->id, ld->lg->fd, ld->img.offs, from, fend, to, mem);
}

json_t *
sess_loading_event(const struct sess_loading *ld, size_t i)
{
	struct sess_cursor *c = sess_loading_cursor(ld, i, i + 1);
	json_t *ev = sess_cursor_next(c);

	sess_cursor_free(c);
	return ev;
}

int
sess_loading_ok(const struct sess_loading *ld)
{
	return ld->rc == 0;
}

void
sess_loading_free(struct sess_loading *ld)
{
	if (ld == NULL)
		return;
	sess_image_free(&ld->img);
	sess_log_free(ld->lg);
	free(ld);
}

struct sess *
sess_store_load_finish(struct sess_store *st, struct sess_loading *ld, struct err *e)
{
	struct sess_image *img = &ld->img;
	struct sess_log *lg = ld->lg;
	struct sess *s;

	if (ld->rc < 0) {
		err_set(e, ld->e.code, "%s", ld->e.msg);
		sess_loading_free(ld);
		return NULL;
	}
	if (strcmp(json_string_value(json_object_get(img->header, "id")), ld->id) != 0) {
		err_set(e, ERR_SESSION_CORRUPT, "the session file %s.jsonl holds session %s", ld->id,
		    json_string_value(json_object_get(img->header, "id")));
		sess_loading_free(ld);
		return NULL;
	}
	if (sess_log_adopt(lg, img->valid_len, e) < 0) {
		sess_loading_free(ld);
		return NULL;
	}
	ld->lg = NULL;
	s = sess_store_add(st, json_incref(img->header), lg);
	/* A log we may not write keeps its closers in memory only: it is read, never written. */
	sess_adopt_image(s, img, lg->readonly);
	sess_loading_free(ld);
	if (!lg->readonly && sess_store_close_tail(s, e) < 0) {
		sess_store_release(st, s);
		return NULL;
	}
	return s;
}

struct sess *
sess_store_load(struct sess_store *st, const char *id, struct err *e)
{
	struct sess_loading *ld = sess_store_load_start(st, id, e);

	if (ld == NULL)
		return NULL;
	sess_loading_read(ld, NULL);
	return sess_store_load_finish(st, ld, e);
}

int
sess_recover(struct sess *s, struct err *e)
{
	if (!s->log->failed)
		return 0;
	if (sess_log_recover(s->log, e) < 0)
		return -1;
	/* The failed turn left its tail open: close it as a reload would. */
	return sess_store_close_tail(s, e);
}

const char *
sess_failure(const struct sess *s)
{
	return s->log->failed ? s->log->why : NULL;
}

int
sess_store_sync_due(struct sess_store *st)
{
	int failed = 0;

	for (size_t i = 0; i < st->norder; i++) {
		struct sess *s = st->order[i];
		struct err e;
		if (!s->checkpoint)
			continue;
		s->checkpoint = 0;
		err_clear(&e);
		if (sess_log_sync(s->log, &e) < 0) {
			log_error("sess: %s", e.msg);
			failed++;
		}
	}
	return failed;
}

void
sess_store_release(struct sess_store *st, struct sess *s)
{
	struct err e;

	err_clear(&e);
	if (sess_log_sync(s->log, &e) < 0)
		log_error("sess: %s", e.msg);
	map_del(&st->live, s->id);
	for (size_t i = 0; i < st->norder; i++) {
		if (st->order[i] == s) {
			memmove(st->order + i, st->order + i + 1, (st->norder - i - 1) * sizeof(*st->order));
			st->norder--;
			break;
		}
	}
	sess_free(s);
}

void
sess_observe(struct sess *s, sess_observer_fn *fn, void *arg)
{
	if (s->nobs == s->cobs) {
		s->cobs = s->cobs ? s->cobs * 2 : 4;
		s->obs = xrealloc(s->obs, (size_t)s->cobs * sizeof(*s->obs));
	}
	s->obs[s->nobs++] = (struct sess_observer){ fn, arg };
}

void
sess_unobserve(struct sess *s, sess_observer_fn *fn, void *arg)
{
	for (int i = 0; i < s->nobs; i++) {
		if (s->obs[i].fn == fn && s->obs[i].arg == arg) {
			memmove(s->obs + i, s->obs + i + 1, (size_t)(s->nobs - i - 1) * sizeof(*s->obs));
			s->nobs--;
			return;
		}
	}
}

const json_t *
sess_append(struct sess *s, const char *type, json_t *data, struct err *e)
{
	int64_t now = clock_now_ms(&s->store->env->clock);

	return sess_put(s, sess_event_new((int64_t)s->nev, now, type, data), e);
}

/* Writes ev (stolen; its seq the next one), keeps it and tells the observers. */
static const json_t *
sess_put(struct sess *s, json_t *ev, struct err *e)
{
	struct sess_env *env = s->store->env;
	struct buf *line = &s->store->line;	/* reused: no allocation on the hot path */
	const char *type = json_string_value(json_object_get(ev, "type"));
	int rc;

	line->len = 0;
	if (jenc_append(line, ev) < 0) {
		err_set(e, ERR_INTERNAL, "event %s cannot be encoded", type);
		json_decref(ev);
		return NULL;
	}
	buf_append(line, "\n", 1);
	size_t written = line->len;
	rc = sess_log_append(s->log, line->data, written, e);
	/* One huge event must not pin its buffer for the rest of the process. */
	if (line->cap > (1u << 20))
		buf_free(line);
	if (rc < 0) {
		json_decref(ev);
		return NULL;
	}
	size_t n = s->nev;
	if (n >= s->ctypes) {
		s->ctypes = s->ctypes ? s->ctypes * 2 : 64;
		s->types = xrealloc(s->types, s->ctypes);
	}
	s->types[n] = (unsigned char)sess_event_type_code(type);
	s->views += s->types[n] == SESS_EV_MESSAGE_VIEW;
	if (n + 2 > s->coffs) {
		s->coffs = s->coffs * 2 > n + 2 ? s->coffs * 2 : n + 2;
		s->offs = xrealloc(s->offs, s->coffs * sizeof(*s->offs));
	}
	s->offs[n] = s->log->good - (off_t)written;	/* the line just written ends at good */
	s->offs[n + 1] = s->log->good;
	s->nfile = n + 1;
	sess_window_push(s, ev);
	if (env->faults.exit_n)
		sess_faults_event_written(&env->faults, type);
	for (int i = 0; i < s->nobs; i++)
		s->obs[i].fn(s->obs[i].arg, s, ev);
	return ev;
}

void
sess_checkpoint(struct sess *s)
{
	s->checkpoint = 1;
}

int
sess_failed(const struct sess *s)
{
	return s->log->failed;
}

int64_t
sess_last_time(const struct sess *s)
{
	return s->last_time;
}

/* Reads event i < s->nfile back from the file: the line at its offset, parsed, its seq checked. */
static json_t *
sess_read_back(struct sess *s, size_t i)
{
	size_t len = (size_t)(s->offs[i + 1] - s->offs[i]);
	char *line = xmalloc(len + 1);
	size_t got = 0;
	json_t *ev = NULL;

	while (got < len) {
		ssize_t r = pread(s->log->fd, line + got, len - got, s->offs[i] + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	if (got == len && len > 0 && line[len - 1] == '\n')
		ev = sess_json_parse_line(line, len - 1);
	free(line);
	if (ev == NULL || json_integer_value(json_object_get(ev, "seq")) != (json_int_t)i) {
		log_error("sess: %s: event %zu is no longer in the file as it was written", s->id, i);
		json_decref(ev);
		return NULL;
	}
	return ev;
}

json_t *
sess_event_get(struct sess *s, size_t i)
{
	if (i >= s->nev)
		return NULL;
	if (i >= s->win_base)
		return json_incref(s->win[i - s->win_base]);
	return sess_read_back(s, i);
}

json_t *
sess_collect(struct sess *s, const char *const *types)
{
	unsigned char want[256] = { 0 };
	json_t *out = json_array();

	for (; *types; types++)
		want[sess_event_type_code(*types)] = 1;
	want[0] = 0;	/* an unknown type has no code to find it by */
	for (size_t i = 0; i < s->nev; i++) {
		json_t *ev;
		if (want[s->types[i]] && (ev = sess_event_get(s, i)) != NULL)
			json_array_append_new(out, ev);
	}
	return out;
}

int
sess_type_at(const struct sess *s, size_t i)
{
	return s->types[i];
}

const char *
sess_id(const struct sess *s)
{
	return s->id;
}

const json_t *
sess_header(const struct sess *s)
{
	return s->header;
}

size_t
sess_nev(const struct sess *s)
{
	return s->nev;
}

off_t
sess_length(const struct sess *s)
{
	return s->log->fd >= 0 ? s->log->good : 0;
}

size_t
sess_views(const struct sess *s)
{
	return s->views;
}

int
sess_sync(struct sess *s, struct err *e)
{
	return sess_log_sync(s->log, e);
}

const char *
sess_header_str(const struct sess *s, const char *key)
{
	return json_string_value(json_object_get(s->header, key));
}
