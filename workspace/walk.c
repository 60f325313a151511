/* The tree walk of glob and grep: sorted, without symlinks or VCS entries, with few fds open. */
#include "workspace/walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "base/xmalloc.h"

/* One entry of a directory being walked: its name at names.data + off. */
struct walk_ent {
	size_t off;
	int dir;
};

/*
 * A walk in progress. path holds the absolute path of the directory being walked, then
 * "/<name>" while one of its entries is visited; rel_off is where the shown path starts in it.
 * names and ents are stacks: a directory's entries sit above its parent's until it is done.
 */
struct walk {
	const struct ws_walk_ops *ops;
	void *arg;
	const atomic_int *cancel;
	struct err *e;
	struct buf path;
	size_t rel_off;
	int anchor_fd;		/* the directory at depth WS_WALK_FDS - 1 being walked */
	size_t anchor_len;	/* its path's length in path */
	struct buf names;
	struct walk_ent *ents;
	size_t nents, cap;
	int stop;	/* a callback ended the walk */
	int failed;	/* ... with an error, or the walk was cancelled */
};

static const char *const ws_walk_vcs[] = { ".git", ".hg", ".svn", ".bzr", ".jj" };

static int
ws_walk_is_vcs(const char *name)
{
	if (name[0] != '.')
		return 0;
	for (size_t i = 0; i < sizeof(ws_walk_vcs) / sizeof(ws_walk_vcs[0]); i++)
		if (strcmp(name, ws_walk_vcs[i]) == 0)
			return 1;
	return 0;
}

/* Sort order of entries: as whole paths compare, a directory's name goes on with '/'. */
static int
ws_walk_cmp(const void *a, const void *b, void *arg)
{
	const struct walk_ent *x = a, *y = b;
	const unsigned char *s = (const unsigned char *)arg + x->off;
	const unsigned char *t = (const unsigned char *)arg + y->off;

	while (*s && *s == *t) {
		s++;
		t++;
	}
	unsigned cs = *s ? *s : x->dir ? '/' : 0;
	unsigned ct = *t ? *t : y->dir ? '/' : 0;
	return (cs > ct) - (cs < ct);
}

static int
ws_walk_cancelled(const struct walk *w)
{
	return w->cancel && atomic_load(w->cancel);
}

/* Reads the entries of d onto the stack: regular files and directories, VCS names left out. */
static void
ws_walk_list(struct walk *w, DIR *d, int fd)
{
	struct dirent *de;

	while ((de = readdir(d)) != NULL) {
		const char *n = de->d_name;
		int dir;

		if (n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0')))
			continue;
		if (ws_walk_is_vcs(n))
			continue;
		if (de->d_type == DT_REG) {
			dir = 0;
		} else if (de->d_type == DT_DIR) {
			dir = 1;
		} else if (de->d_type == DT_UNKNOWN) {
			struct stat st;

			if (fstatat(fd, n, &st, AT_SYMLINK_NOFOLLOW) != 0)
				continue;
			if (S_ISREG(st.st_mode))
				dir = 0;
			else if (S_ISDIR(st.st_mode))
				dir = 1;
			else
				continue;
		} else {
			continue;	/* symlinks, devices, FIFOs, sockets */
		}
		if (w->nents == w->cap) {
			w->cap = w->cap ? w->cap * 2 : 256;
			w->ents = xrealloc(w->ents, w->cap * sizeof(*w->ents));
		}
		w->ents[w->nents].off = w->names.len;
		w->ents[w->nents].dir = dir;
		w->nents++;
		buf_append(&w->names, n, strlen(n) + 1);
	}
}

/*
 * Opens the directory w->path.data[0..dirlen), which lies below the anchor, one component at a
 * time from the anchor's fd, never through a symlink (a component swapped for one fails).
 */
static int
ws_walk_reopen(const struct walk *w, size_t dirlen)
{
	const char *p = w->path.data;
	size_t i = w->anchor_len + (w->anchor_len > 1);
	int fd = w->anchor_fd;

	while (i < dirlen) {
		char comp[NAME_MAX + 1];
		size_t j = i;

		while (j < dirlen && p[j] != '/')
			j++;
		int next = -1;
		if (j - i <= NAME_MAX) {
			memcpy(comp, p + i, j - i);
			comp[j - i] = '\0';
			next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (fd != w->anchor_fd)
			close(fd);
		if (next < 0)
			return -1;
		fd = next;
		i = j + 1;
	}
	return fd == w->anchor_fd ? -1 : fd;
}

/*
 * Walks the directory at w->path, open as fd (owned here); depth 0 is the start. Above
 * WS_WALK_FDS levels the directory stream keeps fd open while the subtree is walked; deeper,
 * the directory is closed once listed and while a subdirectory is walked, and reopened from
 * the anchor (the directory at depth WS_WALK_FDS - 1) when one of its entries needs it.
 */
static void
ws_walk_dir(struct walk *w, int fd, int depth)
{
	size_t base = w->nents, names_base = w->names.len, dirlen = w->path.len;
	int deep = depth >= WS_WALK_FDS;
	DIR *d = fdopendir(fd);

	if (d == NULL) {
		close(fd);
		return;
	}
	ws_walk_list(w, d, fd);
	size_t end = w->nents, names_end = w->names.len;
	if (deep) {
		closedir(d);
		d = NULL;
		fd = -1;
	} else if (depth == WS_WALK_FDS - 1) {
		w->anchor_fd = fd;
		w->anchor_len = dirlen;
	}
	qsort_r(w->ents + base, end - base, sizeof(*w->ents), ws_walk_cmp, w->names.data);
	for (size_t i = base; i < end && !w->stop; i++) {
		if (ws_walk_cancelled(w)) {
			err_set(w->e, ERR_CANCELLED, "search cancelled");
			w->stop = w->failed = 1;
			break;
		}
		w->path.len = dirlen;
		w->path.data[dirlen] = '\0';
		if (fd < 0 && (fd = ws_walk_reopen(w, dirlen)) < 0)
			break;
		/* Children's entries go above this directory's: names may move, offsets stay. */
		const char *name = w->names.data + w->ents[i].off;
		if (dirlen > 1)
			buf_append(&w->path, "/", 1);
		buf_puts(&w->path, name);
		if (!w->ents[i].dir) {
			struct ws_walk_file f = { fd, name, w->path.data,
				w->path.data + w->rel_off };
			int rc = w->ops->file(w->arg, &f, depth, w->e);

			if (rc != 0)
				w->stop = 1;
			if (rc < 0)
				w->failed = 1;
			continue;
		}
		if (w->ops->enter && !w->ops->enter(w->arg, name, depth + 1))
			continue;
		int cfd = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			continue;
		if (deep) {
			close(fd);
			fd = -1;
		}
		ws_walk_dir(w, cfd, depth + 1);
		w->nents = end;
		w->names.len = names_end;
	}
	w->nents = base;
	w->names.len = names_base;
	w->path.len = dirlen;
	w->path.data[dirlen] = '\0';
	if (d)
		closedir(d);
	else if (fd >= 0)
		close(fd);
}

/* Where the shown path of every file under start (no trailing slash) begins: 0 for absolute. */
static size_t
ws_walk_rel_off(const char *root, const char *start)
{
	size_t n = strlen(root);

	while (n > 1 && root[n - 1] == '/')
		n--;
	if (strncmp(start, root, n) != 0)
		return 0;
	if (n == 1)
		return 1;
	return start[n] == '\0' || start[n] == '/' ? n + 1 : 0;
}

const char *
ws_walk_rel(const char *root, const char *path)
{
	size_t off = ws_walk_rel_off(root, path);

	if (off == 0)
		return path;
	return off >= strlen(path) ? "." : path + off;
}

int
ws_walk(const char *root, const char *start, int allow_file, const struct ws_walk_ops *ops,
    void *arg, const atomic_int *cancel, struct err *e)
{
	struct walk w = { .ops = ops, .arg = arg, .cancel = cancel, .e = e };
	const char *shown = ws_walk_rel(root, start);
	struct stat st;
	char why[128];	/* strerror_r's (GNU): strerror's buffer is not the thread's */
	int rc = 0;

	if (stat(start, &st) != 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return err_set(e, ERR_FS_NOT_FOUND, "path \"%s\" does not exist", shown);
		return err_set(e, ERR_INVALID_ARGUMENT, "cannot search \"%s\": %s", shown,
		    strerror_r(errno, why, sizeof(why)));
	}
	if (!S_ISDIR(st.st_mode) && !(allow_file && S_ISREG(st.st_mode)))
		return err_set(e, ERR_INVALID_ARGUMENT, "path \"%s\" is not a %s", shown,
		    allow_file ? "file or a directory" : "directory");
	buf_init(&w.path);
	buf_init(&w.names);
	buf_puts(&w.path, start);
	while (w.path.len > 1 && w.path.data[w.path.len - 1] == '/')
		w.path.data[--w.path.len] = '\0';
	w.rel_off = ws_walk_rel_off(root, w.path.data);
	if (S_ISREG(st.st_mode)) {
		const char *slash = strrchr(w.path.data, '/');
		struct ws_walk_file f = { -1, slash ? slash + 1 : w.path.data, w.path.data,
			w.path.data + w.rel_off };

		rc = ops->file(arg, &f, 0, e) < 0 ? -1 : 0;
		goto out;
	}
	/* The start itself was named by the caller, so it may be a symlink: no O_NOFOLLOW. */
	int fd = open(w.path.data, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = err_set(e, ERR_INVALID_ARGUMENT, "cannot search \"%s\": %s", shown,
		    strerror_r(errno, why, sizeof(why)));
		goto out;
	}
	ws_walk_dir(&w, fd, 0);
	rc = w.failed ? -1 : 0;
out:
	buf_free(&w.path);
	buf_free(&w.names);
	free(w.ents);
	return rc;
}

void
ws_walk_show(struct buf *out, const char *s, size_t n)
{
	struct buf esc;
	size_t len;

	if (memchr(s, '\n', n) == NULL && memchr(s, '\r', n) == NULL && utf8_valid(s, n)) {
		buf_append(out, s, n);
		return;
	}
	buf_init(&esc);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n' || s[i] == '\r')
			buf_puts(&esc, s[i] == '\n' ? "\\n" : "\\r");
		else
			buf_append(&esc, s + i, 1);
	}
	char *fixed = utf8_repair(esc.data ? esc.data : "", esc.len, &len);
	buf_append(out, fixed, len);
	free(fixed);
	buf_free(&esc);
}
