/* Live sessions and appends. */
#include "session/store.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/jenc.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "session/repair.h"

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
	json_decref(s->events);
	free(s->types);
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

/* Takes header, events, types (their codes, or NULL for no events) and lg. */
static struct sess *
sess_store_add(struct sess_store *st, json_t *header, json_t *events, unsigned char *types, struct sess_log *lg)
{
	struct sess *s = xcalloc(1, sizeof(*s));

	snprintf(s->id, sizeof(s->id), "%s", json_string_value(json_object_get(header, "id")));
	s->header = header;
	s->events = events;
	s->types = types;
	s->ctypes = types ? json_array_size(events) : 0;
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

struct sess *
sess_store_create(struct sess_store *st, const struct sess_header_info *info)
{
	json_t *h = sess_header_new(info);

	return sess_store_add(st, h, json_array(), NULL, sess_log_new(st->env, info->id, h));
}

static const json_t *sess_put(struct sess *s, json_t *ev, struct err *e);

/* Appends to s what sess_closers_append computes for its open turn, for real (load's repair, and
 * the same after a recovered write failure); observers see them like any event. Only the open
 * turn is looked at, never the whole history. 0, or -1 with e (s is then failed). */
static int
sess_store_close_tail(struct sess *s, struct err *e)
{
	size_t n = json_array_size(s->events), from = n, k;
	json_t *tail = json_array();
	int rc = 0;

	while (from > 0) {
		const char *t = json_string_value(json_object_get(json_array_get(s->events, from - 1), "type"));
		if (strcmp(t, "turn/end") == 0)
			break;
		from--;
		if (strcmp(t, "turn/start") == 0)
			break;
	}
	for (size_t i = from; i < n; i++)
		json_array_append(tail, json_array_get(s->events, i));
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
	ld->rc = sess_inspect_fd(ld->lg->fd, ld->lg->path, cancel, &ld->img, &ld->e);
}

const json_t *
sess_loading_events(const struct sess_loading *ld)
{
	return ld->rc < 0 ? NULL : ld->img.events;
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
	/* A log we may not write keeps its closers in memory only: it is read, never written. */
	if (!lg->readonly)
		for (size_t i = 0; i < img->nclosers; i++)
			json_array_remove(img->events, json_array_size(img->events) - 1);
	ld->lg = NULL;
	s = sess_store_add(st, json_incref(img->header), json_incref(img->events), img->types, lg);
	img->types = NULL;
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

	return sess_put(s, sess_event_new((int64_t)json_array_size(s->events), now, type, data), e);
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
	rc = sess_log_append(s->log, line->data, line->len, e);
	/* One huge event must not pin its buffer for the rest of the process. */
	if (line->cap > (1u << 20))
		buf_free(line);
	if (rc < 0) {
		json_decref(ev);
		return NULL;
	}
	size_t n = json_array_size(s->events);
	if (n >= s->ctypes) {
		s->ctypes = s->ctypes ? s->ctypes * 2 : 64;
		s->types = xrealloc(s->types, s->ctypes);
	}
	s->types[n] = (unsigned char)sess_event_type_code(type);
	json_array_append_new(s->events, ev);
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
	size_t n = json_array_size(s->events);

	if (n == 0)
		return json_integer_value(json_object_get(s->header, "createdAt"));
	return json_integer_value(json_object_get(json_array_get(s->events, n - 1), "time"));
}

int
sess_type_at(const struct sess *s, size_t i)
{
	return s->types[i];
}

const char *
sess_header_str(const struct sess *s, const char *key)
{
	return json_string_value(json_object_get(s->header, key));
}
