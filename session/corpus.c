/* The state-directory index. */
#include "session/corpus.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base/log.h"
#include "base/offload.h"
#include "base/xmalloc.h"
#include "session/event.h"
#include "session/index.h"
#include "session/reconcile.h"
#include "session/store.h"
#include "session/store_def.h"

static struct sess_entry *sess_corpus_entry(struct sess_corpus *c, const char *id);
static void sess_corpus_read(struct sess_corpus *c, struct sess_entry *en);

void
sess_corpus_init(struct sess_corpus *c, struct sess_env *env)
{
	memset(c, 0, sizeof(*c));
	c->env = env;
	map_init(&c->by_id);
	sess_order_init(&c->roots);
	sess_kin_init(&c->kin);
	/* The watch itself is added by the index run: on a big directory that takes a while. */
	c->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
}

/* After a run: without a watch every listing stats its candidates. */
static void
sess_corpus_watch_result(struct sess_corpus *c, const struct sess_reconcile *r)
{
	if (c->inotify_fd >= 0 && !r->watch_failed)
		return;
	if (c->inotify_fd >= 0)
		close(c->inotify_fd);
	c->inotify_fd = -1;
	log_info("corpus: inotify unavailable; every listing stats its candidates");
}

/* Files en in the root list and under its parent, or takes it out, after its facts changed. */
static void
sess_corpus_relist(struct sess_corpus *c, struct sess_entry *en)
{
	int want = sess_order_wants(en);

	sess_kin_file(&c->kin, en);
	en->gen = ++c->gen;

	if (en->listed && (!want || en->listed_at != en->updated_at))
		sess_order_remove(&c->roots, en);
	if (want && !en->listed)
		sess_order_insert(&c->roots, en);
	c->changed = 1;
}

static void
sess_corpus_mark_dirty(struct sess_corpus *c, struct sess_entry *en)
{
	if (en->dirty)
		return;
	en->dirty = 1;
	if (c->ndirty == c->cdirty) {
		c->cdirty = c->cdirty ? c->cdirty * 2 : 16;
		c->dirty = xrealloc(c->dirty, c->cdirty * sizeof(*c->dirty));
	}
	c->dirty[c->ndirty++] = en;
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
					sess_corpus_mark_dirty(c, en);
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

/* The running job, if any, stops; its results are dropped. */
static void
sess_corpus_stop_job(struct sess_corpus *c)
{
	if (c->off)
		offload_cancel(c->off);
	c->off = NULL;
	if (c->job) {
		sess_reconcile_free(c->job);
		free(c->job);
		c->job = NULL;
	}
}

void
sess_corpus_free(struct sess_corpus *c)
{
	size_t pos = 0;
	void *v;
	struct err e;

	sess_corpus_stop_job(c);
	if (c->memo_free)
		c->memo_free(c->memo);
	c->memo = NULL;
	c->memo_free = NULL;
	err_clear(&e);
	if (c->ready && sess_corpus_save(c, &e) < 0)
		log_info("corpus: the index file is not written: %s", e.msg);
	sess_order_free(&c->roots);
	sess_kin_free(&c->kin);
	while (map_next(&c->by_id, &pos, NULL, &v)) {
		sess_entry_clear(v);
		free(v);
	}
	map_free(&c->by_id);
	free(c->keys);
	c->keys = NULL;
	c->keys_cap = 0;
	free(c->dirty);
	c->dirty = NULL;
	c->ndirty = c->cdirty = 0;
	if (c->inotify_fd >= 0)
		close(c->inotify_fd);
	c->inotify_fd = -1;
}

int
sess_corpus_save(struct sess_corpus *c, struct err *e)
{
	struct sess_entry **all;
	size_t pos = 0, k = 0;
	void *v;
	char *path;
	int rc;

	if (!c->changed)
		return 0;
	all = xcalloc(c->by_id.len + 1, sizeof(*all));
	while (map_next(&c->by_id, &pos, NULL, &v)) {
		struct sess_entry *en = v;
		/* Unreadable and vanished files are looked at again by the next start anyway. */
		if (!en->gone && en->state != SESS_ENTRY_UNAVAILABLE)
			all[k++] = en;
	}
	path = xasprintf("%s/%s", c->env->state_dir, SESS_INDEX_NAME);
	rc = sess_index_write(path, all, k, e);
	if (rc == 0)
		c->changed = 0;
	free(path);
	free(all);
	return rc;
}

/* Deterministic mode only: time and the id counter continue after what the file holds. */
static void
sess_corpus_seen(struct sess_corpus *c, struct sess_entry *en)
{
	char path[4096];
	struct stat st;
	int fd;

	sess_ids_seen(&c->env->ids, en->id);
	if (en->state != SESS_ENTRY_OK)
		return;
	clock_advance_past(&c->env->clock, en->updated_at);
	snprintf(path, sizeof(path), "%s/%s.jsonl", c->env->dir, en->id);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		char *data = xmalloc((size_t)st.st_size + 1);
		ssize_t n = sess_pread_all(fd, data, (size_t)st.st_size, 0);
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
	close(fd);
}

/* (Re-)reads one file's head and tail into en. */
static void
sess_corpus_read_into(struct sess_corpus *c, struct sess_entry *en)
{
	sess_entry_read(c->env->dir, en);
	if (c->env->clock.deterministic)
		sess_corpus_seen(c, en);
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
		sess_corpus_relist(c, en);
		return;
	}
	sess_entry_clear(en);
	fresh.live = en->live;
	fresh.listed = en->listed;
	fresh.listed_at = en->listed_at;
	fresh.kin = en->kin;
	*en = fresh;
	sess_corpus_relist(c, en);
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

/*
 * Takes a finished run's entries. Live entries win over the run's. For the others the run's
 * facts go into the loop's struct (whose address others may hold); one the loop read while a
 * worker ran may be newer than the run's, so recheck marks it to be stat()ed on its next use.
 */
static void
sess_corpus_adopt(struct sess_corpus *c, struct sess_reconcile *r, int recheck)
{
	struct sess_entry **mine = xcalloc(c->by_id.len + 1, sizeof(*mine));
	size_t pos = 0, k = 0;
	void *v;

	while (map_next(&c->by_id, &pos, NULL, &v)) {
		struct sess_entry *en = v, *theirs = map_get(&r->by_id, en->id);
		if (theirs) {
			if (theirs->listed)
				sess_order_remove(&r->roots, theirs);
			if (!en->live) {
				int dirty = en->dirty;
				sess_entry_clear(en);
				*en = *theirs;
				en->dirty = dirty;
				en->listed = 0;
				memset(theirs, 0, sizeof(*theirs));	/* its strings are en's now */
				if (recheck)
					sess_corpus_mark_dirty(c, en);
			}
			sess_entry_clear(theirs);
			free(theirs);
		}
		map_put(&r->by_id, en->id, en);
		mine[k++] = en;
	}
	sess_order_free(&c->roots);
	map_free(&c->by_id);
	c->by_id = r->by_id;
	c->roots = r->roots;
	map_init(&r->by_id);
	sess_order_init(&r->roots);
	/* The run's entries were never filed under their parents: the index is made again. */
	sess_kin_reset(&c->kin);
	pos = 0;
	while (map_next(&c->by_id, &pos, NULL, &v)) {
		struct sess_entry *en = v;
		memset(&en->kin, 0, sizeof(en->kin));
		sess_kin_file(&c->kin, en);
		en->gen = ++c->gen;
	}
	for (size_t i = 0; i < k; i++)
		sess_corpus_relist(c, mine[i]);
	free(mine);
	c->changed = k > 0 || r->write_failed;	/* else the run wrote the file, or it was the truth */
	c->ready = 1;
}

/* What a finished run says, once, on the loop (a worker does not log). */
static void
sess_corpus_report(const struct sess_reconcile *r)
{
	if (r->index_bad)
		log_warn("corpus: the index file was ignored and is rebuilt: %s", r->why.msg);
	if (r->write_failed)
		log_info("corpus: the index file is not written: %s", r->write_err.msg);
	log_debug("corpus: %zu sessions kept from the index file, %zu read, %zu gone", r->kept, r->read, r->dropped);
}

static int
sess_corpus_check_dir(struct sess_corpus *c, struct err *e)
{
	DIR *d = opendir(c->env->dir);

	if (d == NULL)
		return err_set(e, ERR_SESSION_LOG_IO, "cannot list %s: %s", c->env->dir, strerror(errno));
	closedir(d);
	return 0;
}

int
sess_corpus_scan(struct sess_corpus *c, struct err *e)
{
	struct sess_reconcile r;
	int deterministic = c->env->clock.deterministic;

	if (sess_corpus_check_dir(c, e) < 0)
		return -1;
	sess_reconcile_init(&r, c->env->state_dir, c->env->dir, !deterministic);
	if (!c->watched)
		r.watch_fd = c->inotify_fd;
	c->watched = 1;
	sess_reconcile_run(&r, NULL);
	sess_corpus_watch_result(c, &r);
	if (r.failed) {
		err_set(e, r.err.code, "%s", r.err.msg);
		sess_reconcile_free(&r);
		return -1;
	}
	sess_corpus_report(&r);
	sess_corpus_adopt(c, &r, 0);
	sess_reconcile_free(&r);
	if (deterministic) {
		size_t pos = 0;
		void *v;
		while (map_next(&c->by_id, &pos, NULL, &v))
			if (!((struct sess_entry *)v)->live)
				sess_corpus_seen(c, v);
	}
	return 0;
}

static void
sess_corpus_job_run(void *arg, const atomic_int *cancel)
{
	struct sess_corpus *c = arg;	/* only c->job is touched here */

	sess_reconcile_run(c->job, cancel);
}

static void
sess_corpus_job_done(void *arg)
{
	struct sess_corpus *c = arg;
	struct sess_reconcile *r = c->job;

	c->off = NULL;
	c->job = NULL;
	sess_corpus_watch_result(c, r);
	if (r->failed) {
		/* Listing fails only where it is asked for; what is known so far stands. */
		log_warn("corpus: %s", r->err.msg);
		c->ready = 1;
		c->all_dirty = 1;
	} else {
		sess_corpus_report(r);
		sess_corpus_adopt(c, r, 1);
	}
	sess_reconcile_free(r);
	free(r);
	if (c->on_ready)
		c->on_ready(c->ready_arg);
}

int
sess_corpus_start(struct sess_corpus *c, struct ev_loop *loop, struct runq *q, void (*on_ready)(void *arg),
    void *arg, struct err *e)
{
	if (loop == NULL || c->env->clock.deterministic)
		return sess_corpus_scan(c, e);
	if (sess_corpus_check_dir(c, e) < 0)
		return -1;
	c->on_ready = on_ready;
	c->ready_arg = arg;
	c->loop = loop;
	c->q = q;
	return 0;
}

void
sess_corpus_kick(struct sess_corpus *c)
{
	if (c->ready || c->job || c->loop == NULL)
		return;
	c->job = xcalloc(1, sizeof(*c->job));
	sess_reconcile_init(c->job, c->env->state_dir, c->env->dir, 1);
	c->job->watch_fd = c->inotify_fd;
	c->watched = 1;
	c->off = offload_start(c->loop, c->q, sess_corpus_job_run, sess_corpus_job_done, c);
}

int
sess_corpus_is_ready(const struct sess_corpus *c)
{
	return c->ready;
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
		sess_corpus_relist(c, en);
		return;
	}
	en->gone = 0;
	if (st.st_size != en->size || st.st_mtim.tv_sec != en->mtime.tv_sec ||
	    st.st_mtim.tv_nsec != en->mtime.tv_nsec || en->state == SESS_ENTRY_UNAVAILABLE)
		sess_corpus_read(c, en);
	else if (!en->listed && sess_order_wants(en))
		sess_corpus_relist(c, en);	/* it was gone a moment and is back unchanged */
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
sess_corpus_note_live(struct sess_corpus *c, struct sess *s)
{
	struct sess_entry *en = sess_corpus_entry(c, s->id);
	size_t n = s->nev;
	json_t *ev;

	if (!en->live) {
		sess_entry_clear(en);
		en->live = 1;
		en->gone = 0;
		sess_entry_from_header(en, s->header);
		int user = SESS_EV_USER_MESSAGE, desc = SESS_EV_SUBAGENT_DESCRIPTOR, wtc = SESS_EV_WORKTREE_CREATED,
		    wtr = SESS_EV_WORKTREE_REMOVED;
		/* only the events that can tell something, found by their type codes (docs/decisions.md, "Sessions off the heap") */
		for (size_t i = 0; i < n; i++) {
			int t = sess_type_at(s, i);
			if (((t == user && en->title == NULL) || t == desc || t == wtc || t == wtr) &&
			    (ev = sess_event_get(s, i)) != NULL) {
				sess_entry_note_event(en, ev);
				json_decref(ev);
			}
		}
	} else if (n && (ev = sess_event_get(s, n - 1)) != NULL) {
		sess_entry_note_event(en, ev);
		json_decref(ev);
	}
	en->updated_at = sess_last_time(s);
	sess_corpus_relist(c, en);
}

void
sess_corpus_note_released(struct sess_corpus *c, const char *id)
{
	struct sess_entry *en = map_get(&c->by_id, id);

	if (en == NULL)
		return;
	en->live = 0;
	en->size = -1;		/* forces a re-read on next use */
	/* Looked at now, whatever inotify saw: a session whose log was never published (its
	 * creation failed: no inodes, a full disk) made no file event, and must not stay listed. */
	en->dirty = 1;
	sess_corpus_revalidate(c, en);
}

/* sess_entry_order's order for equal times: by id. */
static int
sess_corpus_key_order(const void *pa, const void *pb)
{
	const struct sess_corpus_key *a = pa, *b = pb;

	return strcmp(a->en->id, b->en->id);
}

/*
 * By createdAt with a radix sort of (time, entry) keys, a byte of the times' range a pass, then
 * by id within equal times. It was a qsort whose comparison read both entries (scattered over
 * the heap) and which allocated its buffer per call: 13-17 ms of a 100,000-entry listing here.
 * The keys' two arrays are kept in c for the next sort.
 */
void
sess_corpus_sort(struct sess_corpus *c, struct sess_entry **v, size_t n)
{
	struct sess_corpus_key *a, *b, *t;
	int64_t lo = INT64_MAX, hi = INT64_MIN;

	if (n < 2)
		return;
	if (n > c->keys_cap) {
		free(c->keys);
		c->keys_cap = n;
		c->keys = xmalloc(2 * n * sizeof(*c->keys));
	}
	a = c->keys;
	b = c->keys + c->keys_cap;
	for (size_t i = 0; i < n; i++) {
		a[i].created_at = v[i]->created_at;
		a[i].en = v[i];
		lo = a[i].created_at < lo ? a[i].created_at : lo;
		hi = a[i].created_at > hi ? a[i].created_at : hi;
	}
	uint64_t range = (uint64_t)hi - (uint64_t)lo;
	for (unsigned shift = 0; shift < 64 && (range >> shift) != 0; shift += 8) {
		size_t at[257] = { 0 };
		for (size_t i = 0; i < n; i++)
			at[(((uint64_t)a[i].created_at - (uint64_t)lo) >> shift & 0xff) + 1]++;
		for (int d = 1; d < 257; d++)
			at[d] += at[d - 1];
		for (size_t i = 0; i < n; i++)
			b[at[((uint64_t)a[i].created_at - (uint64_t)lo) >> shift & 0xff]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && a[j].created_at == a[i].created_at; j++)
			;
		if (j - i > 1)
			qsort(a + i, j - i, sizeof(*a), sess_corpus_key_order);
	}
	for (size_t i = 0; i < n; i++)
		v[i] = a[i].en;
}

/*
 * parent's group (session/kin.h), copied in listing order. Only what can have changed is
 * looked at: with inotify the entries it marked (all of them, wherever they are filed) and the
 * group's unreadable ones; without it, or after its queue overflowed, every member. Looking at
 * one may move it out of the group, so the members are copied before.
 */
struct sess_entry **
sess_corpus_children(struct sess_corpus *c, const char *parent, size_t *n)
{
	struct sess_kin *kin;
	struct sess_entry **v;
	size_t m;

	sess_corpus_drain_events(c);
	kin = sess_kin_get(&c->kin, parent);
	if (kin && (c->inotify_fd < 0 || c->all_dirty || kin->unavailable)) {
		m = kin->n;
		v = xmalloc((m + 1) * sizeof(*v));
		memcpy(v, kin->v, m * sizeof(*v));
		for (size_t i = 0; i < m; i++)
			if (c->inotify_fd < 0 || c->all_dirty || v[i]->state == SESS_ENTRY_UNAVAILABLE)
				sess_corpus_revalidate(c, v[i]);
		free(v);
	}
	for (size_t i = 0; i < c->ndirty; i++)
		sess_corpus_revalidate(c, c->dirty[i]);
	c->ndirty = 0;
	kin = sess_kin_get(&c->kin, parent);	/* the group may have been made just now */
	m = kin ? kin->n : 0;
	if (kin && !kin->sorted_ok) {
		if (kin->sorted_cap < kin->cap) {
			kin->sorted_cap = kin->cap;
			kin->sorted = xrealloc(kin->sorted, kin->sorted_cap * sizeof(*kin->sorted));
		}
		memcpy(kin->sorted, kin->v, m * sizeof(*kin->v));
		sess_corpus_sort(c, kin->sorted, m);
		kin->sorted_ok = 1;
	}
	v = xmalloc((m + 1) * sizeof(*v));
	if (m)
		memcpy(v, kin->sorted, m * sizeof(*v));
	v[m] = NULL;
	*n = m;
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
	c->ndirty = 0;		/* every marked one was looked at */
	*n = k;
	return v;
}

const struct sess_order *
sess_corpus_roots(struct sess_corpus *c)
{
	sess_corpus_drain_events(c);
	if (c->inotify_fd < 0 || c->all_dirty) {
		free(sess_corpus_list(c, &(size_t){ 0 }));
		return &c->roots;
	}
	/* Only what inotify marked: the list stays as true as a full pass would make it. */
	for (size_t i = 0; i < c->ndirty; i++)
		sess_corpus_revalidate(c, c->dirty[i]);
	c->ndirty = 0;
	return &c->roots;
}
