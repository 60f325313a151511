/*
 * Confinement by a walk that never lets the kernel follow a symlink: every open is relative to
 * the directory reached so far and carries O_NOFOLLOW, and every link is read and judged here.
 */
#include "workspace/path.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/xmalloc.h"

#define WS_SYMLINK_MAX 40	/* links and root crossings per walk, as the kernel's limit */
#define WS_WALK_TRIES 8		/* restarts when the tree changes under a walk */
#define WALK_RETRY (-2)		/* a walk's outcome besides 0 and -1: start again */

enum walk_mode { WALK_RESOLVE, WALK_READ, WALK_WRITE };

/* What the walk ended on. WK_DIR also covers a walk that ends on dirfd itself ("", ".."). */
enum walk_kind { WK_DIR, WK_FILE, WK_MISSING, WK_OTHER };

/*
 * One walk. Invariant: while dirfd >= 0 it is the real directory <base>/<canon>, reached from
 * the base by O_NOFOLLOW opens only; dirfd < 0 once a component is missing, and from then on
 * the rest is taken lexically (canon only).
 */
struct walk {
	const struct ws_roots *roots;
	const char *p;			/* the caller's path, for messages */
	enum walk_mode mode;
	int for_write;			/* messages say "write" (WALK_WRITE, or a resolve for one) */
	int which;			/* the base: 0 the workspace root, 1 the read-only root, 2 + k the
					 * additional root k */
	int dirfd;
	struct buf canon;		/* below the base: real names, '/'-joined */
	char *rest;			/* owned: what is left, '/'-separated, may hold ".." */
	size_t pos;			/* the next component of rest starts here */
	int hops;
	enum walk_kind kind;
	int fd;				/* WALK_READ: the opened file, or -1 */
	char *name;			/* WALK_WRITE: the final component, owned, or NULL */
	mode_t st_mode;			/* WALK_WRITE: the existing file's mode */
};

/* The part of p below base ("" for base itself), or NULL when p is not under base. */
static const char *
ws_under(const char *base, const char *p)
{
	size_t n;

	if (base == NULL)
		return NULL;
	if (strcmp(base, "/") == 0)
		return p[0] == '/' ? p + 1 : NULL;
	n = strlen(base);
	if (strncmp(base, p, n) != 0)
		return NULL;
	if (p[n] == '\0')
		return p + n;
	return p[n] == '/' ? p + n + 1 : NULL;
}

/*
 * Appends the components of s to b ('/'-joined, "" and "." dropped, ".." drops the last).
 * Returns -1 when ".." would climb above b's start, unless clamp (then it stays: "/.." is "/").
 */
static int
ws_lexical(struct buf *b, const char *s, int clamp)
{
	while (*s) {
		const char *e = strchrnul(s, '/');
		size_t n = (size_t)(e - s);

		if (n == 2 && s[0] == '.' && s[1] == '.') {
			char *slash;

			if (b->len == 0 && !clamp)
				return -1;
			slash = b->len ? memrchr(b->data, '/', b->len) : NULL;
			b->len = slash ? (size_t)(slash - b->data) : 0;
			if (b->data)
				b->data[b->len] = '\0';
		} else if (n > 0 && !(n == 1 && s[0] == '.')) {
			if (b->len)
				buf_append(b, "/", 1);
			buf_append(b, s, n);
		}
		s = *e ? e + 1 : e;
	}
	return 0;
}

/*
 * The realpath of the longest existing prefix of the absolute path s, with the missing rest
 * appended lexically. Returns an owned string. Used only to translate an absolute path that is
 * not spelled under a root; the walk then checks the result again without following links.
 */
static char *
ws_realpath_prefix(const char *s)
{
	char *r = realpath(s, NULL), *pre;
	struct buf b;

	if (r)
		return r;
	pre = xstrdup(s);
	for (size_t i = strlen(s); i-- > 0;) {
		if (s[i] != '/')
			continue;
		pre[i] = '\0';
		if ((r = realpath(i ? pre : "/", NULL)) == NULL)
			continue;
		buf_init(&b);
		ws_lexical(&b, r + 1, 1);
		ws_lexical(&b, s + i + 1, 1);
		free(r);
		free(pre);
		r = xasprintf("/%s", b.data ? b.data : "");
		buf_free(&b);
		return r;
	}
	free(pre);
	return xstrdup("/");
}

int
ws_roots_init(struct ws_roots *r, const char *cwd, const char *spill, struct err *err)
{
	r->spill = NULL;
	r->extra = NULL;
	r->nextra = 0;
	if ((r->root = realpath(cwd, NULL)) == NULL)
		return err_set(err, ERR_FS_IO, "cannot resolve the workspace \"%.300s\": %s", cwd,
		    strerror(errno));
	if (spill == NULL)
		return 0;
	if (spill[0] == '/') {
		r->spill = ws_realpath_prefix(spill);
	} else {
		char *here = getcwd(NULL, 0), *abs;

		if (here == NULL) {
			ws_roots_free(r);
			return err_set(err, ERR_FS_IO, "cannot resolve \"%.300s\": %s", spill,
			    strerror(errno));
		}
		abs = xasprintf("%s/%s", here, spill);
		r->spill = ws_realpath_prefix(abs);
		free(abs);
		free(here);
	}
	return 0;
}

void
ws_roots_free(struct ws_roots *r)
{
	free(r->root);
	free(r->spill);
	for (size_t i = 0; i < r->nextra; i++)
		free(r->extra[i]);
	free(r->extra);
	r->root = r->spill = NULL;
	r->extra = NULL;
	r->nextra = 0;
}

int
ws_roots_add(struct ws_roots *r, const char *dir, struct err *err)
{
	char *real = realpath(dir, NULL);
	struct stat st;

	if (real == NULL || stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		int e = real ? ENOTDIR : errno;
		free(real);
		return err_set(err, ERR_FS_IO, "cannot use \"%.300s\" as a root: %s", dir, strerror(e));
	}
	r->extra = xrealloc(r->extra, (r->nextra + 1) * sizeof(*r->extra));
	r->extra[r->nextra++] = real;
	return 0;
}

void
ws_path_free(struct ws_path *p)
{
	free(p->abs);
	memset(p, 0, sizeof(*p));
}

static int
walk_outside(const struct walk *w, struct err *err)
{
	return err_set(err, ERR_FS_OUTSIDE_WORKSPACE, "path \"%.300s\" is outside the workspace %s",
	    w->p, w->roots->root);
}

static int
walk_io(const struct walk *w, int e, struct err *err)
{
	return err_set(err, ERR_FS_IO, "cannot %s \"%.300s\": %s",
	    w->for_write ? "write" : "read", w->p, strerror(e));
}

static const char *
walk_base(const struct walk *w)
{
	return w->which == 0 ? w->roots->root : w->which == 1 ? w->roots->spill : w->roots->extra[w->which - 2];
}

/* The root p lies under, as walk's which (-1: none), and the part below it in *rest: the
 * workspace first, then the read-only root, then the additional ones in order. */
static int
ws_which(const struct ws_roots *r, const char *p, const char **rest)
{
	if ((*rest = ws_under(r->root, p)) != NULL)
		return 0;
	if ((*rest = ws_under(r->spill, p)) != NULL)
		return 1;
	for (size_t i = 0; i < r->nextra; i++)
		if ((*rest = ws_under(r->extra[i], p)) != NULL)
			return 2 + (int)i;
	return -1;
}

/* The absolute path of <base>/<canon>[/<name>]; owned. */
static char *
walk_abs(const struct walk *w, const char *name)
{
	const char *base = walk_base(w), *sep = strcmp(base, "/") == 0 ? "" : "/";
	const char *canon = w->canon.data ? w->canon.data : "";

	if (name == NULL)
		return w->canon.len ? xasprintf("%s%s%s", base, sep, canon) : xstrdup(base);
	return xasprintf("%s%s%s%s%s", base, sep, canon, w->canon.len ? "/" : "", name);
}

static int
walk_is_read_only(const struct walk *w, const char *name)
{
	char *abs = walk_abs(w, name);
	int ro = ws_under(w->roots->spill, abs) != NULL;

	free(abs);
	return ro;
}

static void
walk_canon_add(struct walk *w, const char *name)
{
	if (w->canon.len)
		buf_append(&w->canon, "/", 1);
	buf_puts(&w->canon, name);
}

static void
walk_canon_clear(struct walk *w)
{
	w->canon.len = 0;
	if (w->canon.data)
		w->canon.data[0] = '\0';
}

static void
walk_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Opens the base; a read-only root that does not exist yet leaves the walk lexical. */
static int
walk_open_base(struct walk *w, struct err *err)
{
	walk_close(&w->dirfd);
	w->dirfd = open(walk_base(w), O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (w->dirfd < 0 && (errno != ENOENT || w->which != 1))
		return walk_io(w, errno, err);
	return 0;
}

/* Opens <base>/<canon> again from the base after a ".." (each name was a real directory). */
static int
walk_reopen(struct walk *w, struct err *err)
{
	const char *s = w->canon.data ? w->canon.data : "";
	char name[NAME_MAX + 1];

	if (walk_open_base(w, err) != 0)
		return -1;
	while (*s && w->dirfd >= 0) {
		const char *e = strchrnul(s, '/');
		int fd;

		memcpy(name, s, (size_t)(e - s));
		name[e - s] = '\0';
		fd = openat(w->dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		walk_close(&w->dirfd);
		if (fd < 0)
			return WALK_RETRY;
		w->dirfd = fd;
		s = *e ? e + 1 : e;
	}
	return w->dirfd >= 0 ? 0 : WALK_RETRY;
}

/*
 * Continues the walk at the absolute path s (a link's target with the rest appended, or the
 * way out above a root): under a root as spelled, else as its realpath says; else refused.
 */
static int
walk_translate(struct walk *w, const char *s, struct err *err)
{
	const char *r;
	char *real = NULL, *rest;
	int which;

	if (++w->hops > WS_SYMLINK_MAX)
		return walk_io(w, ELOOP, err);
	if ((which = ws_which(w->roots, s, &r)) < 0) {
		real = ws_realpath_prefix(s);
		which = ws_which(w->roots, real, &r);
	}
	if (which < 0) {
		free(real);
		return walk_outside(w, err);
	}
	rest = xstrdup(r);
	free(real);
	free(w->rest);
	w->rest = rest;
	w->pos = 0;
	w->which = which;
	walk_canon_clear(w);
	return walk_open_base(w, err);
}

/* Follows the link name in dirfd: its target replaces it at the head of what is left. */
static int
walk_link(struct walk *w, const char *name, struct err *err)
{
	char target[PATH_MAX];
	ssize_t n = readlinkat(w->dirfd, name, target, sizeof(target));
	char *s;
	int rc;

	if (n < 0)
		return errno == EINVAL || errno == ENOENT ? WALK_RETRY : walk_io(w, errno, err);
	if ((size_t)n >= sizeof(target))
		return walk_io(w, ENAMETOOLONG, err);
	target[n] = '\0';
	s = xasprintf("%s/%s", target, w->rest + w->pos);
	if (target[0] == '/') {
		rc = walk_translate(w, s, err);
		free(s);
		return rc;
	}
	if (++w->hops > WS_SYMLINK_MAX) {
		free(s);
		return walk_io(w, ELOOP, err);
	}
	free(w->rest);
	w->rest = s;
	w->pos = 0;
	return 0;
}

/* "..": the real parent, or the way out above the base (judged by walk_translate). */
static int
walk_dotdot(struct walk *w, struct err *err)
{
	const char *base = walk_base(w), *slash;
	char *s;
	int rc;

	if (w->canon.len == 0) {
		if (strcmp(base, "/") == 0)
			return 0;
		if (w->dirfd < 0 && w->which != 1)
			return walk_outside(w, err);
		slash = strrchr(base, '/');
		s = xasprintf("%.*s/%s", (int)(slash - base), base, w->rest + w->pos + strspn(w->rest + w->pos, "/"));
		rc = walk_translate(w, s, err);
		free(s);
		return rc;
	}
	ws_lexical(&w->canon, "..", 0);
	return w->dirfd < 0 ? 0 : walk_reopen(w, err);
}

/* A component with more to follow: a directory to enter, a link to follow, or missing. */
static int
walk_dir(struct walk *w, const char *name, struct err *err)
{
	int fd = openat(w->dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), e = errno;
	struct stat st;

	if (fd >= 0) {
		walk_close(&w->dirfd);
		w->dirfd = fd;
		walk_canon_add(w, name);
		return 0;
	}
	if (e == ENOTDIR || e == ELOOP) {
		if (fstatat(w->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			return WALK_RETRY;
		if (S_ISLNK(st.st_mode))
			return walk_link(w, name, err);
		e = ENOTDIR;
	}
	if (e != ENOENT && e != ENOTDIR)
		return walk_io(w, e, err);
	if (w->mode == WALK_WRITE) {
		if (e == ENOTDIR)
			return walk_io(w, ENOTDIR, err);
		if (walk_is_read_only(w, name))
			return walk_outside(w, err);
		if (mkdirat(w->dirfd, name, 0777) != 0 && errno != EEXIST)
			return walk_io(w, errno, err);
		if ((fd = openat(w->dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			return WALK_RETRY;
		walk_close(&w->dirfd);
		w->dirfd = fd;
		walk_canon_add(w, name);
		return 0;
	}
	walk_close(&w->dirfd);
	walk_canon_add(w, name);
	w->kind = WK_MISSING;
	return 0;
}

/* The last component: stat it, open it (read) or note it (write); a link is followed. */
static int
walk_last(struct walk *w, const char *name, struct err *err)
{
	struct stat st;
	int found = 1;

	if (w->mode == WALK_READ) {
		w->fd = openat(w->dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (w->fd < 0 && errno == ELOOP)
			return walk_link(w, name, err);
		if (w->fd < 0 && errno != ENOENT)
			return walk_io(w, errno, err);
		if (w->fd < 0)
			found = 0;
		else if (fstat(w->fd, &st) != 0)
			return walk_io(w, errno, err);
	} else if (fstatat(w->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno != ENOENT)
			return walk_io(w, errno, err);
		found = 0;
	} else if (S_ISLNK(st.st_mode)) {
		return walk_link(w, name, err);
	}
	walk_canon_add(w, name);
	if (!found)
		w->kind = WK_MISSING;
	else
		w->kind = S_ISDIR(st.st_mode) ? WK_DIR : S_ISREG(st.st_mode) ? WK_FILE : WK_OTHER;
	if (w->mode == WALK_WRITE) {
		w->st_mode = w->kind == WK_FILE ? st.st_mode : 0;
		w->name = xstrdup(name);
	}
	return 0;
}

static void
walk_reset(struct walk *w)
{
	walk_close(&w->dirfd);
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	free(w->rest);
	free(w->name);
	w->rest = w->name = NULL;
	w->pos = 0;
	w->hops = 0;
	w->which = 0;
	w->kind = WK_DIR;
	walk_canon_clear(w);
}

/* Starts at the caller's path, normalised lexically (docs/contract.md §16.2). */
static int
walk_start(struct walk *w, struct err *err)
{
	struct buf b;
	char *s;
	int rc;

	buf_init(&b);
	if (w->p[0] != '/') {
		if (ws_lexical(&b, w->p, 0) != 0) {
			buf_free(&b);
			return walk_outside(w, err);
		}
		w->rest = buf_steal(&b);
		return walk_open_base(w, err);
	}
	ws_lexical(&b, w->p, 1);
	s = xasprintf("/%s", b.data ? b.data : "");
	buf_free(&b);
	rc = walk_translate(w, s, err);
	free(s);
	return rc;
}

/* Whether a component other than "." is left after pos. */
static int
walk_more(const struct walk *w)
{
	for (const char *s = w->rest + w->pos; *s;) {
		const char *e = strchrnul(s, '/');

		if (e - s > 1 || (e - s == 1 && s[0] != '.'))
			return 1;
		s = *e ? e + 1 : e;
	}
	return 0;
}

static int
walk_steps(struct walk *w, struct err *err)
{
	char name[NAME_MAX + 1];

	if (w->rest == NULL)
		return 0;
	for (;;) {
		const char *s = w->rest + w->pos, *e;
		size_t n;
		int rc;

		while (*s == '/')
			s++;
		if (*s == '\0')
			return 0;
		e = strchrnul(s, '/');
		n = (size_t)(e - s);
		w->pos = (size_t)(e - w->rest);
		if (n == 1 && s[0] == '.')
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			if ((rc = walk_dotdot(w, err)) != 0)
				return rc;
			continue;
		}
		if (n > NAME_MAX)
			return walk_io(w, ENAMETOOLONG, err);
		memcpy(name, s, n);
		name[n] = '\0';
		if (w->dirfd < 0) {
			walk_canon_add(w, name);
			w->kind = WK_MISSING;
			continue;
		}
		rc = walk_more(w) ? walk_dir(w, name, err) : walk_last(w, name, err);
		if (rc != 0)
			return rc;
	}
}

/* Runs the walk, again from the start when the tree changed under it. */
static int
walk_run(struct walk *w, struct err *err)
{
	for (int t = 0; t < WS_WALK_TRIES; t++) {
		int rc;

		walk_reset(w);
		if ((rc = walk_start(w, err)) == 0)
			rc = walk_steps(w, err);
		if (rc != WALK_RETRY)
			return rc;
	}
	return walk_io(w, EAGAIN, err);
}

static void
walk_init(struct walk *w, const struct ws_roots *r, const char *path, enum walk_mode mode)
{
	memset(w, 0, sizeof(*w));
	w->roots = r;
	w->p = path;
	w->mode = mode;
	w->for_write = mode == WALK_WRITE;
	w->dirfd = w->fd = -1;
	buf_init(&w->canon);
}

static void
walk_free(struct walk *w)
{
	walk_reset(w);
	buf_free(&w->canon);
}

static void
walk_result(const struct walk *w, struct ws_path *out)
{
	const char *rel;

	out->abs = walk_abs(w, NULL);
	rel = ws_under(w->roots->root, out->abs);
	out->rel = rel == NULL ? out->abs : rel[0] ? rel : ".";
	out->read_only = ws_under(w->roots->spill, out->abs) != NULL;
	out->exists = w->kind != WK_MISSING;
}

int
ws_path_resolve(const struct ws_roots *r, const char *path, int for_write,
    struct ws_path *out, struct err *err)
{
	struct walk w;
	int rc;

	memset(out, 0, sizeof(*out));
	walk_init(&w, r, path, WALK_RESOLVE);
	w.for_write = for_write;
	if ((rc = walk_run(&w, err)) == 0) {
		walk_result(&w, out);
		if (for_write && out->read_only) {
			ws_path_free(out);
			rc = walk_outside(&w, err);
		}
	}
	walk_free(&w);
	return rc;
}

int
ws_path_open_read(const struct ws_roots *r, const char *path, struct ws_path *out,
    struct err *err)
{
	struct walk w;
	int fd = -1;

	memset(out, 0, sizeof(*out));
	walk_init(&w, r, path, WALK_READ);
	if (walk_run(&w, err) == 0) {
		walk_result(&w, out);
		switch (w.kind) {
		case WK_FILE:
			fd = w.fd;
			w.fd = -1;
			break;
		case WK_MISSING:
			err_set(err, ERR_FS_NOT_FOUND, "file \"%.300s\" does not exist", path);
			break;
		case WK_DIR:
			err_set(err, ERR_FS_IS_DIRECTORY, "path \"%.300s\" is a directory", path);
			break;
		case WK_OTHER:
			err_set(err, ERR_FS_IO, "cannot read \"%.300s\": not a regular file", path);
			ws_path_free(out);
			break;
		}
	}
	walk_free(&w);
	return fd;
}

/* The target replaced whole (base/atomic.c): all of data or nothing, with the mode it had. */
static int
walk_replace(struct walk *w, const char *data, size_t len, int flags, struct err *err)
{
	int keep = w->kind == WK_FILE;
	int rc = atomic_writeat(w->dirfd, w->name, data, len, keep ? w->st_mode & 07777 : 0666,
	    (keep ? ATOMIC_MODE : 0) | ((flags & WS_WRITE_SYNC) ? ATOMIC_SYNC : 0));

	if (rc < 0)
		return walk_io(w, errno ? errno : EIO, err);
	if (rc == 1)	/* the file is in place; a failed directory sync is only logged */
		log_warn("workspace: %s: cannot sync the directory of %.200s: %s", __func__, w->p, strerror(errno));
	return 0;
}

int
ws_path_write(const struct ws_roots *r, const char *path, const char *data, size_t len,
    int flags, struct ws_path *out, struct err *err)
{
	struct ws_path where;
	struct walk w;
	int rc;

	memset(&where, 0, sizeof(where));
	walk_init(&w, r, path, WALK_WRITE);
	if ((rc = walk_run(&w, err)) == 0) {
		walk_result(&w, &where);
		if (where.read_only || w.dirfd < 0)
			rc = walk_outside(&w, err);
		else if (w.kind == WK_DIR)
			rc = err_set(err, ERR_FS_IS_DIRECTORY, "path \"%.300s\" is a directory", path);
		else if (w.kind == WK_OTHER)
			rc = err_set(err, ERR_FS_IO, "cannot write \"%.300s\": not a regular file", path);
		else
			rc = walk_replace(&w, data, len, flags, err);
	}
	walk_free(&w);
	if (rc == 0 && out)
		*out = where;
	else
		ws_path_free(&where);
	return rc;
}
