/* Live sessions and appends. */
#include "session/store.h"

#include <stdlib.h>
#include <string.h>

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
	json_decref(s->header);
	json_decref(s->events);
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

static struct sess *
sess_store_add(struct sess_store *st, json_t *header, json_t *events, struct sess_log *lg)
{
	struct sess *s = xcalloc(1, sizeof(*s));

	snprintf(s->id, sizeof(s->id), "%s", json_string_value(json_object_get(header, "id")));
	s->header = header;
	s->events = events;
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

	return sess_store_add(st, h, json_array(), sess_log_new(st->env, info->id, h));
}

struct sess *
sess_store_load(struct sess_store *st, const char *id, struct err *e)
{
	struct sess_image img;
	struct sess_log *lg;
	struct sess *s;
	char *path;
	size_t n;

	if (!sess_id_valid(id)) {
		err_set(e, "invalid_params", "malformed session id");
		return NULL;
	}
	path = sess_env_path(st->env, id);
	if (sess_inspect_file(path, &img, e) < 0) {
		free(path);
		return NULL;
	}
	free(path);
	if (strcmp(json_string_value(json_object_get(img.header, "id")), id) != 0) {
		err_set(e, "session_corrupt", "the session file %s.jsonl holds session %s", id,
		    json_string_value(json_object_get(img.header, "id")));
		sess_image_free(&img);
		return NULL;
	}
	lg = sess_log_open(st->env, id, img.valid_len, e);
	if (lg == NULL) {
		sess_image_free(&img);
		return NULL;
	}
	/* The closers inspect computed become durable: append them for real. */
	n = json_array_size(img.events);
	json_t *closers = json_array();
	for (size_t i = n - img.nclosers; i < n; i++)
		json_array_append(closers, json_array_get(img.events, i));
	for (size_t i = 0; i < img.nclosers; i++)
		json_array_remove(img.events, n - img.nclosers);
	s = sess_store_add(st, json_incref(img.header), json_incref(img.events), lg);
	sess_image_free(&img);
	for (size_t i = 0; i < json_array_size(closers); i++) {
		json_t *c = json_array_get(closers, i);
		struct buf *line = &st->line;
		int rc;

		line->len = 0;
		rc = jenc_append(line, c);
		if (rc < 0)
			err_set(e, "internal", "a closer of %s cannot be encoded", id);
		buf_append(line, "\n", 1);
		if (rc < 0 || sess_log_append(lg, line->data, line->len, e) < 0) {
			json_decref(closers);
			sess_store_release(st, s);
			return NULL;
		}
		json_array_append(s->events, c);
	}
	if (json_array_size(closers)) {
		log_info("sess: %s: repaired with %zu closers", id, json_array_size(closers));
		sess_checkpoint(s);
	}
	json_decref(closers);
	return s;
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
	if (s->nobs < SESS_MAX_OBSERVERS)
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
	struct sess_env *env = s->store->env;
	int64_t now = clock_now_ms(&env->clock);
	json_t *ev = sess_event_new((int64_t)json_array_size(s->events), now, type, data);
	struct buf *line = &s->store->line;	/* reused: no allocation on the hot path */
	int rc;

	line->len = 0;
	if (jenc_append(line, ev) < 0) {
		json_decref(ev);
		err_set(e, "internal", "event %s cannot be encoded", type);
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

const char *
sess_header_str(const struct sess *s, const char *key)
{
	return json_string_value(json_object_get(s->header, key));
}
