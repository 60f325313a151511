/* glob: fnmatch segments with "**" over ws_walk, and its result text. */
#include "workspace/glob.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/xmalloc.h"

#define WS_GLOB_SEGS 64

/*
 * A compiled pattern. In basename mode the whole pattern is matched against file names at any
 * depth. Otherwise segs[0..nseg) are the segments, and a directory's state is the set (a bit per
 * segment) of the segments its entries may match next: the start has {0}, an entry named d
 * moves each segment i of the set to i + 1 when d matches it, and a "**" stays in the set (it
 * takes d). A "**" in a set brings the segment after it (it takes no directory). A directory
 * with an empty set cannot hold a match and is not entered.
 */
struct glob {
	const char *pattern;
	int basename;
	char *copy;			/* the segments' storage */
	const char *segs[WS_GLOB_SEGS];
	int star2[WS_GLOB_SEGS];	/* segs[i] is "**" */
	int nseg;
	uint64_t *st;			/* st[depth]: the state of the directory walked there */
	size_t st_cap;
	ws_glob_fn *fn;
	void *arg;
};

static int
ws_glob_compile(struct glob *g, const char *pattern, struct err *e)
{
	memset(g, 0, sizeof(*g));
	g->pattern = pattern;
	if (pattern[0] == '\0')
		return err_set(e, ERR_INVALID_ARGUMENT, "glob pattern is empty");
	if (strchr(pattern, '/') == NULL) {
		g->basename = 1;
		return 0;
	}
	if (pattern[0] == '/')
		return err_set(e, ERR_INVALID_ARGUMENT,
		    "glob pattern \"%s\" is absolute; give it relative to path", pattern);
	g->copy = xstrdup(pattern);
	for (char *s = g->copy, *next; s; s = next) {
		next = strchr(s, '/');
		if (next)
			*next++ = '\0';
		if (s[0] == '\0' || strcmp(s, ".") == 0)
			continue;
		if (strcmp(s, "..") == 0)
			return err_set(e, ERR_INVALID_ARGUMENT,
			    "glob pattern \"%s\" goes up with \"..\"; search another path instead",
			    pattern);
		if (g->nseg == WS_GLOB_SEGS)
			return err_set(e, ERR_INVALID_ARGUMENT,
			    "glob pattern \"%s\" has more than %d segments", pattern, WS_GLOB_SEGS);
		g->star2[g->nseg] = strcmp(s, "**") == 0;
		g->segs[g->nseg++] = s;
	}
	if (g->nseg == 0)
		return err_set(e, ERR_INVALID_ARGUMENT, "glob pattern \"%s\" names no file", pattern);
	return 0;
}

/* s with every segment a "**" in it can skip to. */
static uint64_t
ws_glob_close(const struct glob *g, uint64_t s)
{
	for (int i = 0; i + 1 < g->nseg; i++)
		if ((s >> i & 1) && g->star2[i])
			s |= (uint64_t)1 << (i + 1);
	return s;
}

static int
ws_glob_enter(void *arg, const char *name, int depth)
{
	struct glob *g = arg;
	uint64_t from, to = 0;

	if (g->basename)
		return 1;
	if ((size_t)depth >= g->st_cap) {
		g->st_cap = (size_t)depth * 2;
		g->st = xrealloc(g->st, g->st_cap * sizeof(*g->st));
	}
	from = g->st[depth - 1];
	for (int i = 0; i < g->nseg; i++) {
		if (!(from >> i & 1))
			continue;
		if (g->star2[i])
			to |= (uint64_t)1 << i;
		else if (i + 1 < g->nseg && fnmatch(g->segs[i], name, 0) == 0)
			to |= (uint64_t)1 << (i + 1);
	}
	g->st[depth] = ws_glob_close(g, to);
	return g->st[depth] != 0;
}

static int
ws_glob_file(void *arg, const struct ws_walk_file *f, int depth, struct err *e)
{
	struct glob *g = arg;
	int last = g->nseg - 1;

	(void)e;
	if (g->basename)
		return fnmatch(g->pattern, f->name, 0) == 0 ? g->fn(g->arg, f) : 0;
	if (!(g->st[depth] >> last & 1))
		return 0;
	if (g->star2[last] || fnmatch(g->segs[last], f->name, 0) == 0)
		return g->fn(g->arg, f);
	return 0;
}

int
ws_glob_each(const struct ws_glob_opts *o, ws_glob_fn *fn, void *arg, struct err *e)
{
	static const struct ws_walk_ops ops = { ws_glob_enter, ws_glob_file };
	struct glob g;
	int rc = -1;

	if (ws_glob_compile(&g, o->pattern, e) == 0) {
		g.fn = fn;
		g.arg = arg;
		g.st_cap = 16;
		g.st = xmalloc(g.st_cap * sizeof(*g.st));
		g.st[0] = ws_glob_close(&g, 1);
		rc = ws_walk(o->root, o->dir, 0, &ops, &g, o->cancel, e);
	}
	free(g.copy);
	free(g.st);
	return rc;
}

/* One match kept for the result text: its shown path at names.data + off. */
struct glob_hit {
	size_t off;
	struct timespec mtime;
};

/* The matches of ws_glob, with the names they point into (the sort's context). */
struct glob_list {
	struct buf names;
	struct glob_hit *hits;
	size_t n, cap;
	int stat;
};

static int
ws_glob_keep(void *arg, const struct ws_walk_file *f)
{
	struct glob_list *l = arg;
	struct timespec mtime = { 0, 0 };

	if (l->stat) {
		struct stat st;
		int rc = f->dirfd >= 0 ? fstatat(f->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) :
		    lstat(f->path, &st);

		if (rc != 0)
			return 0;	/* gone since it was listed */
		mtime = st.st_mtim;
	}
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		l->hits = xrealloc(l->hits, l->cap * sizeof(*l->hits));
	}
	l->hits[l->n].off = l->names.len;
	l->hits[l->n].mtime = mtime;
	l->n++;
	buf_append(&l->names, f->rel, strlen(f->rel) + 1);
	return 0;
}

/* Newest first, ties by path. */
static int
ws_glob_newer(const void *a, const void *b, void *arg)
{
	const struct glob_hit *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
	return strcmp((const char *)arg + x->off, (const char *)arg + y->off);
}

int
ws_glob(const struct ws_glob_opts *o, struct buf *out, struct err *e)
{
	struct glob_list l = { .stat = !o->deterministic };
	int rc;

	buf_init(&l.names);
	rc = ws_glob_each(o, ws_glob_keep, &l, e);
	if (rc == 0 && l.n == 0)
		buf_printf(out, "no files match %s", o->pattern);
	if (rc == 0 && l.n > 0) {
		/* The walk gives path order already: a deterministic list is sorted. */
		if (!o->deterministic)
			qsort_r(l.hits, l.n, sizeof(*l.hits), ws_glob_newer, l.names.data);
		for (size_t i = 0; i < l.n && i < WS_GLOB_MAX; i++) {
			const char *p = l.names.data + l.hits[i].off;

			if (i > 0)
				buf_append(out, "\n", 1);
			ws_walk_show(out, p, strlen(p));
		}
		if (l.n > WS_GLOB_MAX)
			buf_printf(out, "\n[%d of %zu files shown; narrow the pattern or path]",
			    WS_GLOB_MAX, l.n);
	}
	buf_free(&l.names);
	free(l.hits);
	return rc;
}
