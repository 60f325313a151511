/* The state-directory index. */
#include "session/corpus.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base/log.h"
#include "base/utf8.h"
#include "base/xmalloc.h"
#include "session/event.h"
#include "session/store.h"

#define CORPUS_HEAD_BYTES 65536

static struct sess_entry *sess_corpus_entry(struct sess_corpus *c, const char *id);
static void sess_corpus_read(struct sess_corpus *c, struct sess_entry *en);
#define CORPUS_TAIL_BYTES 8192

void
sess_corpus_init(struct sess_corpus *c, struct sess_env *env)
{
	c->env = env;
	map_init(&c->by_id);
	c->all_dirty = 0;
	c->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (c->inotify_fd >= 0 &&
	    inotify_add_watch(c->inotify_fd, env->dir, IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE |
		IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF) < 0) {
		close(c->inotify_fd);
		c->inotify_fd = -1;
	}
	if (c->inotify_fd < 0)
		log_info("corpus: inotify unavailable; every listing stats its candidates");
}

/* Marks the entries inotify reports as changed; never blocks. */
static void
sess_corpus_drain_events(struct sess_corpus *c)
{
	char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	if (c->inotify_fd < 0)
		return;
	while ((n = read(c->inotify_fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;
			if (ev->mask & (IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED))
				c->all_dirty = 1;
			else if (ev->len >= SESS_ID_LEN && sess_id_validn(ev->name, SESS_ID_LEN)) {
				char id[SESS_ID_LEN + 1];
				memcpy(id, ev->name, SESS_ID_LEN);
				id[SESS_ID_LEN] = '\0';
				struct sess_entry *en = map_get(&c->by_id, id);
				if (en) {
					en->dirty = 1;
				} else if (ev->len >= SESS_ID_LEN + 6 &&
				    strcmp(ev->name + SESS_ID_LEN, ".jsonl") == 0 && !(ev->mask & (IN_DELETE | IN_MOVED_FROM))) {
					/* A session another process created: index it now. */
					en = sess_corpus_entry(c, id);
					sess_corpus_read(c, en);
				}
			}
			p += sizeof(*ev) + ev->len;
		}
	}
}

static void
sess_entry_clear(struct sess_entry *en)
{
	free(en->cwd);
	free(en->parent);
	free(en->origin);
	free(en->title);
	free(en->label);
	free(en->mode);
	en->cwd = en->parent = en->origin = en->title = en->label = en->mode = NULL;
}

void
sess_corpus_free(struct sess_corpus *c)
{
	size_t pos = 0;
	void *v;

	while (map_next(&c->by_id, &pos, NULL, &v)) {
		sess_entry_clear(v);
		free(v);
	}
	map_free(&c->by_id);
	if (c->inotify_fd >= 0)
		close(c->inotify_fd);
	c->inotify_fd = -1;
}

char *
sess_title_from_text(const char *text)
{
	size_t len = strcspn(text, "\r\n"), i = 0, chars = 0;

	while (i < len && chars < 80) {
		size_t l = utf8_seq_len((const unsigned char *)text + i, len - i);
		i += l ? l : 1;
		chars++;
	}
	return xstrndup(text, i);
}

static char *
sess_dup_opt(const json_t *j)
{
	return json_is_string(j) ? xstrdup(json_string_value(j)) : NULL;
}

/* Fills header facts; returns 0, or -1 when the header is unusable (state set). */
static int
sess_entry_from_header(struct sess_entry *en, const json_t *h)
{
	struct err e;

	err_clear(&e);
	if (sess_header_check(h, &e) < 0) {
		en->state = e.code == ERR_SESSION_UNSUPPORTED ? SESS_ENTRY_UNSUPPORTED
									: SESS_ENTRY_CORRUPT;
		/* A newer header may still say whose child it is. */
		if (json_is_string(json_object_get(h, "parentSession")))
			en->parent = sess_dup_opt(json_object_get(h, "parentSession"));
		en->origin = sess_dup_opt(json_object_get(h, "origin"));
		en->created_at = json_integer_value(json_object_get(h, "createdAt"));
		return -1;
	}
	if (strcmp(json_string_value(json_object_get(h, "id")), en->id) != 0) {
		/* <a>.jsonl holding session b lies about what it is: not listed, not loaded. */
		en->state = SESS_ENTRY_CORRUPT;
		return -1;
	}
	en->state = SESS_ENTRY_OK;
	en->created_at = json_integer_value(json_object_get(h, "createdAt"));
	en->depth = (int)json_integer_value(json_object_get(h, "delegationDepth"));
	en->cwd = sess_dup_opt(json_object_get(h, "cwd"));
	en->parent = sess_dup_opt(json_object_get(h, "parentSession"));
	en->origin = sess_dup_opt(json_object_get(h, "origin"));
	return 0;
}

/* Title and identity facts from one event. */
static void
sess_entry_note_event(struct sess_entry *en, const json_t *ev)
{
	const char *type = json_string_value(json_object_get(ev, "type"));
	const json_t *data = json_object_get(ev, "data");

	if (type == NULL)
		return;
	if (en->title == NULL && strcmp(type, "user/message") == 0) {
		const char *kind = json_string_value(json_object_get(json_object_get(data, "source"), "kind"));
		const json_t *first = json_array_get(json_object_get(data, "content"), 0);
		const char *text = json_string_value(json_object_get(first, "text"));
		if (kind && strcmp(kind, "user") == 0 && text)
			en->title = sess_title_from_text(text);
	} else if (strcmp(type, "subagent/descriptor") == 0) {
		/* Identity fold: last wins; a malformed or unknown version is no identity. */
		free(en->label);
		free(en->mode);
		en->label = en->mode = NULL;
		const char *mode = json_string_value(json_object_get(data, "mode"));
		const json_t *label = json_object_get(data, "label");
		if (json_integer_value(json_object_get(data, "version")) == 2 && mode &&
		    (strcmp(mode, "one-shot") == 0 ||
			(strcmp(mode, "continuable") == 0 && json_is_string(label))) &&
		    (label == NULL || json_is_string(label))) {
			en->mode = sess_dup_opt(json_object_get(data, "mode"));
			en->label = sess_dup_opt(json_object_get(data, "label"));
		}
	}
}

static ssize_t
sess_pread_all(int fd, char *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, off + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Deterministic mode only: keep the id counter past every counter-form id in the file. */
static void
sess_corpus_seen_ids(struct sess_corpus *c, int fd, off_t size)
{
	char *data = xmalloc((size_t)size + 1);
	ssize_t n = sess_pread_all(fd, data, (size_t)size, 0);

	if (n > 0) {
		data[n] = '\0';
		for (char *p = data; (p = strstr(p, "00000000-0000-4000-8000-")) != NULL; p += 24)
			if (p + SESS_ID_LEN <= data + n) {
				char id[SESS_ID_LEN + 1];
				memcpy(id, p, SESS_ID_LEN);
				id[SESS_ID_LEN] = '\0';
				sess_ids_seen(&c->env->ids, id);
			}
	}
	free(data);
}

/* (Re-)reads one file's head and tail into en. */
static void
sess_corpus_read_into(struct sess_corpus *c, struct sess_entry *en)
{
	char *path = sess_env_path(c->env, en->id);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	char *head = NULL;
	ssize_t n;

	free(path);
	sess_entry_clear(en);
	en->state = SESS_ENTRY_UNAVAILABLE;
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto out;
	en->size = st.st_size;
	en->mtime = st.st_mtim;
	en->updated_at = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
	head = xmalloc(CORPUS_HEAD_BYTES + 1);
	n = sess_pread_all(fd, head, CORPUS_HEAD_BYTES, 0);
	if (n < 0)
		goto out;
	head[n] = '\0';
	en->state = SESS_ENTRY_CORRUPT;
	char *p = head, *nl;
	int line = 0;
	while ((nl = memchr(p, '\n', (size_t)(head + n - p))) != NULL) {
		size_t len = (size_t)(nl - p);
		/* Past the header only two kinds of line matter: skip the rest unparsed. */
		if (line > 0 && !memmem(p, len, "\"subagent/descriptor\"", 21) &&
		    (en->title || !memmem(p, len, "\"user/message\"", 14))) {
			line++;
			p = nl + 1;
			continue;
		}
		json_t *j = sess_json_parse_line(p, len);
		if (line++ == 0) {
			int ok = j ? sess_entry_from_header(en, j) : -1;
			json_decref(j);
			if (ok < 0)
				goto out;
		} else if (j) {
			sess_entry_note_event(en, j);
			json_decref(j);
		}
		p = nl + 1;
	}
	if (line == 0)
		goto out;
	/* Activity: the time of the last complete line. */
	if (st.st_size > n || line > 1) {
		off_t off = st.st_size > CORPUS_TAIL_BYTES ? st.st_size - CORPUS_TAIL_BYTES : 0;
		char tail[CORPUS_TAIL_BYTES + 1];
		ssize_t t = sess_pread_all(fd, tail, CORPUS_TAIL_BYTES, off);
		if (t > 0) {
			tail[t] = '\0';
			char *end = memrchr(tail, '\n', (size_t)t);
			if (end) {
				*end = '\0';
				char *start = memrchr(tail, '\n', (size_t)(end - tail));
				start = start ? start + 1 : tail;
				json_t *j = sess_json_parse_line(start, (size_t)(end - start));
				if (json_is_integer(json_object_get(j, "time")))
					en->updated_at = json_integer_value(json_object_get(j, "time"));
				else if (json_is_integer(json_object_get(j, "createdAt")))
					en->updated_at = json_integer_value(json_object_get(j, "createdAt"));
				json_decref(j);
			}
		}
	}
	if (c->env->clock.deterministic) {
		clock_advance_past(&c->env->clock, en->updated_at);
		sess_corpus_seen_ids(c, fd, st.st_size);
	}
out:
	free(head);
	close(fd);
}

/*
 * Re-reads en. A file that cannot be read keeps the lineage it was indexed with
 * (id, parent, origin, createdAt), so its parent can still report it unavailable.
 */
static void
sess_corpus_read(struct sess_corpus *c, struct sess_entry *en)
{
	struct sess_entry fresh;

	memset(&fresh, 0, sizeof(fresh));
	memcpy(fresh.id, en->id, sizeof(fresh.id));
	sess_corpus_read_into(c, &fresh);
	if (fresh.state == SESS_ENTRY_UNAVAILABLE && en->parent) {
		en->state = SESS_ENTRY_UNAVAILABLE;
		en->size = -1;
		sess_entry_clear(&fresh);
		return;
	}
	sess_entry_clear(en);
	fresh.live = en->live;
	*en = fresh;
}

static struct sess_entry *
sess_corpus_entry(struct sess_corpus *c, const char *id)
{
	struct sess_entry *en = map_get(&c->by_id, id);

	if (en == NULL) {
		en = xcalloc(1, sizeof(*en));
		snprintf(en->id, sizeof(en->id), "%s", id);
		map_put(&c->by_id, id, en);
	}
	return en;
}

int
sess_corpus_scan(struct sess_corpus *c, struct err *e)
{
	DIR *d = opendir(c->env->dir);
	struct dirent *de;

	if (d == NULL)
		return err_set(e, ERR_SESSION_LOG_IO, "cannot list %s: %s", c->env->dir, strerror(errno));
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (len != SESS_ID_LEN + 6 || strcmp(de->d_name + SESS_ID_LEN, ".jsonl") != 0 ||
		    !sess_id_validn(de->d_name, SESS_ID_LEN))
			continue;
		char id[SESS_ID_LEN + 1];
		memcpy(id, de->d_name, SESS_ID_LEN);
		id[SESS_ID_LEN] = '\0';
		struct sess_entry *en = sess_corpus_entry(c, id);
		if (!en->live)
			sess_corpus_read(c, en);
		sess_ids_seen(&c->env->ids, id);
	}
	closedir(d);
	return 0;
}

/* Re-reads a stored entry whose file changed (or vanished) since it was indexed. */
static void
sess_corpus_revalidate(struct sess_corpus *c, struct sess_entry *en)
{
	char path[4096];
	struct stat st;

	if (en->live)
		return;
	if (c->inotify_fd >= 0 && !c->all_dirty && !en->dirty && en->state != SESS_ENTRY_UNAVAILABLE)
		return;		/* inotify saw no change since it was indexed */
	en->dirty = 0;
	snprintf(path, sizeof(path), "%s/%s.jsonl", c->env->dir, en->id);
	if (lstat(path, &st) < 0) {
		sess_entry_clear(en);
		en->state = SESS_ENTRY_UNAVAILABLE;
		en->size = -1;
		en->gone = 1;
		return;
	}
	en->gone = 0;
	if (st.st_size != en->size || st.st_mtim.tv_sec != en->mtime.tv_sec ||
	    st.st_mtim.tv_nsec != en->mtime.tv_nsec || en->state == SESS_ENTRY_UNAVAILABLE)
		sess_corpus_read(c, en);
}

struct sess_entry *
sess_corpus_get(struct sess_corpus *c, const char *id)
{
	struct sess_entry *en;

	sess_corpus_drain_events(c);
	en = map_get(&c->by_id, id);
	if (en == NULL) {
		char *path;
		struct stat st;
		if (!sess_id_valid(id))
			return NULL;
		path = sess_env_path(c->env, id);
		int exists = lstat(path, &st) == 0;
		free(path);
		if (!exists)
			return NULL;
		en = sess_corpus_entry(c, id);
		sess_corpus_read(c, en);
		return en;
	}
	sess_corpus_revalidate(c, en);
	return en;
}

void
sess_corpus_note_live(struct sess_corpus *c, const struct sess *s)
{
	struct sess_entry *en = sess_corpus_entry(c, s->id);
	size_t n = json_array_size(s->events);

	if (!en->live) {
		sess_entry_clear(en);
		en->live = 1;
		en->gone = 0;
		sess_entry_from_header(en, s->header);
		int user = sess_event_type_code("user/message"), desc = sess_event_type_code("subagent/descriptor");
		/* only the events that can tell something, found by their type codes (issue 15) */
		for (size_t i = 0; i < n; i++) {
			int t = sess_type_at(s, i);
			if ((t == user && en->title == NULL) || t == desc)
				sess_entry_note_event(en, json_array_get(s->events, i));
		}
	} else if (n) {
		sess_entry_note_event(en, json_array_get(s->events, n - 1));
	}
	en->updated_at = sess_last_time(s);
}

void
sess_corpus_note_released(struct sess_corpus *c, const char *id)
{
	struct sess_entry *en = map_get(&c->by_id, id);

	if (en == NULL)
		return;
	en->live = 0;
	en->size = -1;		/* forces a re-read on next use */
	sess_corpus_revalidate(c, en);
}

int
sess_entry_order(const void *pa, const void *pb)
{
	const struct sess_entry *a = *(struct sess_entry *const *)pa, *b = *(struct sess_entry *const *)pb;

	if (a->created_at != b->created_at)
		return a->created_at < b->created_at ? -1 : 1;
	return strcmp(a->id, b->id);
}

struct sess_entry **
sess_corpus_children(struct sess_corpus *c, const char *parent, size_t *n)
{
	struct sess_entry **v = xcalloc(c->by_id.len + 1, sizeof(*v));
	size_t pos = 0, k = 0;
	void *val;

	sess_corpus_drain_events(c);
	while (map_next(&c->by_id, &pos, NULL, &val)) {
		struct sess_entry *en = val;
		if (en->parent == NULL || strcmp(en->parent, parent) != 0)
			continue;
		sess_corpus_revalidate(c, en);
		if (!en->gone && en->parent && strcmp(en->parent, parent) == 0)
			v[k++] = en;
	}
	qsort(v, k, sizeof(*v), sess_entry_order);
	*n = k;
	return v;
}

struct sess_entry **
sess_corpus_list(struct sess_corpus *c, size_t *n)
{
	struct sess_entry **v = xcalloc(c->by_id.len + 1, sizeof(*v));
	size_t pos = 0, k = 0;
	void *val;
	int all = (sess_corpus_drain_events(c), c->all_dirty);

	while (map_next(&c->by_id, &pos, NULL, &val)) {
		sess_corpus_revalidate(c, val);
		v[k++] = val;
	}
	if (all)
		c->all_dirty = 0;
	*n = k;
	return v;
}
