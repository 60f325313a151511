/* The corpus index built off the loop: index file, directory listing, size and mtime checks. */
#include "session/reconcile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "base/xmalloc.h"
#include "session/index.h"

void
sess_reconcile_init(struct sess_reconcile *r, const char *state_dir, const char *dir, int use_index)
{
	memset(r, 0, sizeof(*r));
	r->dir = xstrdup(dir);
	r->index_path = xasprintf("%s/%s", state_dir, SESS_INDEX_NAME);
	r->use_index = use_index;
	r->write_index = 1;
	r->watch_fd = -1;
	map_init(&r->by_id);
	sess_order_init(&r->roots);
	err_clear(&r->err);
	err_clear(&r->why);
	err_clear(&r->write_err);
}

static void
sess_reconcile_drop(struct sess_entry *en)
{
	sess_entry_clear(en);
	free(en);
}

void
sess_reconcile_free(struct sess_reconcile *r)
{
	size_t pos = 0;
	void *v;

	sess_order_free(&r->roots);
	while (map_next(&r->by_id, &pos, NULL, &v))
		sess_reconcile_drop(v);
	map_free(&r->by_id);
	free(r->dir);
	free(r->index_path);
	r->dir = r->index_path = NULL;
}

/*
 * The index file's entries go into r->by_id marked gone: the directory listing brings back each
 * it still holds. A file that names an id twice is not one we wrote: none of it is used.
 */
static void
sess_reconcile_load(struct sess_reconcile *r)
{
	struct sess_entry **v;
	size_t n;
	enum sess_index_read rc = sess_index_read(r->index_path, &v, &n, &r->why);

	if (rc == SESS_INDEX_BAD)
		r->index_bad = 1;
	if (rc != SESS_INDEX_OK)
		return;
	for (size_t i = 0; i < n && !r->index_bad; i++) {
		if (map_get(&r->by_id, v[i]->id)) {
			err_set(&r->why, ERR_SESSION_CORRUPT, "%s is indexed twice", v[i]->id);
			r->index_bad = 1;
			break;
		}
		v[i]->gone = 1;
		map_put(&r->by_id, v[i]->id, v[i]);
	}
	if (r->index_bad) {
		/* The map holds only the array's first ones: every entry is dropped once, from the array. */
		map_free(&r->by_id);
		map_init(&r->by_id);
		for (size_t i = 0; i < n; i++)
			sess_reconcile_drop(v[i]);
	}
	free(v);
}

/* 1 when the file named name is what en was indexed from. */
static int
sess_reconcile_same(int dfd, const char *name, const struct sess_entry *en)
{
	struct stat st;

	if (en->size < 0 || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
		return 0;
	return st.st_size == en->size && st.st_mtim.tv_sec == en->mtime.tv_sec &&
	       st.st_mtim.tv_nsec == en->mtime.tv_nsec;
}

/* Takes out the indexed entries the directory no longer holds. */
static void
sess_reconcile_sweep(struct sess_reconcile *r)
{
	struct sess_entry **gone = xcalloc(r->by_id.len + 1, sizeof(*gone));
	size_t pos = 0, k = 0;
	void *v;

	while (map_next(&r->by_id, &pos, NULL, &v))
		if (((struct sess_entry *)v)->gone)
			gone[k++] = v;
	for (size_t i = 0; i < k; i++) {
		map_del(&r->by_id, gone[i]->id);
		sess_reconcile_drop(gone[i]);
	}
	r->dropped = k;
	free(gone);
}

void
sess_reconcile_run(struct sess_reconcile *r, const atomic_int *cancel)
{
	DIR *d;
	struct dirent *de;
	size_t seen = 0, pos = 0, k = 0;
	void *v;

	/* The watch first: a change after it is reported, one before it shows in the stat below. */
	if (r->watch_fd >= 0 && inotify_add_watch(r->watch_fd, r->dir, SESS_RECONCILE_WATCH) < 0)
		r->watch_failed = 1;
	if (r->use_index)
		sess_reconcile_load(r);
	d = opendir(r->dir);
	if (d == NULL) {
		r->failed = 1;
		err_set(&r->err, ERR_SESSION_LOG_IO, "cannot list %s: %s", r->dir, strerror(errno));
		return;
	}
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if ((++seen & 255) == 0 && cancel && atomic_load(cancel))
			break;
		if (len != SESS_ID_LEN + 6 || strcmp(de->d_name + SESS_ID_LEN, ".jsonl") != 0 ||
		    !sess_id_validn(de->d_name, SESS_ID_LEN))
			continue;
		char id[SESS_ID_LEN + 1];
		memcpy(id, de->d_name, SESS_ID_LEN);
		id[SESS_ID_LEN] = '\0';
		struct sess_entry *en = map_get(&r->by_id, id);
		if (en && !en->gone)
			continue;	/* listed twice: the directory changed under readdir */
		if (en && sess_reconcile_same(dirfd(d), de->d_name, en)) {
			r->kept++;
		} else {
			if (en == NULL) {
				en = xcalloc(1, sizeof(*en));
				memcpy(en->id, id, sizeof(en->id));
				map_put(&r->by_id, id, en);
			}
			sess_entry_read(r->dir, en);
			r->read++;
		}
		en->gone = 0;
	}
	closedir(d);
	if (cancel && atomic_load(cancel))
		return;
	sess_reconcile_sweep(r);
	/* The listed roots, sorted once; and the file again when it was not the truth. */
	struct sess_entry **all = xcalloc(r->by_id.len + 1, sizeof(*all)), **roots = xcalloc(r->by_id.len + 1, sizeof(*roots));
	size_t nroots = 0;
	while (map_next(&r->by_id, &pos, NULL, &v)) {
		struct sess_entry *en = v;
		if (sess_order_wants(en))
			roots[nroots++] = en;
		if (en->state != SESS_ENTRY_UNAVAILABLE)
			all[k++] = en;
	}
	sess_order_build(&r->roots, roots, nroots);
	free(roots);
	if (r->write_index && (!r->use_index || r->index_bad || r->read || r->dropped)) {
		r->wrote = sess_index_write(r->index_path, all, k, &r->write_err) == 0;
		r->write_failed = !r->wrote;
	}
	free(all);
}
