/*
 * Confinement: over a fixed tree full of symlinks (in, out, up and back, loops, dangling, into
 * the read-only root and out of it), no path the fuzzer spells is ever resolved, opened or
 * written outside the roots, and no write lands under the read-only root. Input bytes pick
 * path pieces (names of the tree, "..", "/", absolute prefixes) or, with the top bit set, one
 * literal character, so the search needs no corpus. Writes that succeed are undone so the tree
 * stays the same for every input.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "workspace/fs.h"
#include "workspace/path.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

/* The fixture: its base directory, roots, and the files a write may replace (restored after). */
static struct {
	char base[64];
	char *real;			/* realpath of base */
	struct ws_roots roots;
	int ready;
} fz;

static const char *const files[][2] = {
	{ "ws/a.txt", "alpha\n" },
	{ "ws/dir/b.txt", "beta\n" },
	{ "ws/dir/sub/c.txt", "gamma\n" },
	{ "outside/secret", "secret\n" },
	{ "spill/s.txt", "spilled\n" },
	{ "spill/d/t.txt", "tee\n" },
};

/* Symlinks: target ("@" is the base directory), then the link. */
static const char *const links[][2] = {
	{ "dir", "ws/in_link" },
	{ "@/ws/dir/b.txt", "ws/abs_in" },
	{ "../outside", "ws/out_link" },
	{ "@/outside/secret", "ws/abs_out" },
	{ "../ws/a.txt", "ws/up_in" },
	{ "loop2", "ws/loop1" },
	{ "loop1", "ws/loop2" },
	{ "..", "ws/dir/back" },
	{ "../..", "ws/dir/up2" },
	{ "missing/file", "ws/dangling" },
	{ "../outside/new", "ws/dangling_out" },
	{ "@/spill", "ws/to_spill" },
	{ "../../outside", "spill/d/esc" },
	{ "../ws", "spill/to_ws" },
	{ "/", "ws/slash" },
	{ "@/ws", "outside/to_ws" },
	{ "sub/../../a.txt", "ws/dir/twisty" },
};

static const char *const pieces[] = {
	"/", "/", "/", "..", "..", ".", "a.txt", "dir", "sub", "b.txt", "c.txt", "in_link", "abs_in",
	"out_link", "abs_out", "up_in", "loop1", "back", "up2", "dangling", "dangling_out",
	"to_spill", "esc", "to_ws", "slash", "twisty", "missing", "secret", "s.txt", "d", "ws",
	"outside", "spill", "new", "//", "@", "@/ws", "@/spill", "@/outside", "/tmp", "/etc",
};

static void
put(const char *rel, const char *content)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fz.base, rel);
	if ((f = fopen(path, "w")) == NULL || fputs(content, f) < 0 || fclose(f) != 0)
		abort();
}

static int
unlink_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

/* At exit: the fixture goes. */
static void
fixture_remove(void)
{
	nftw(fz.base, unlink_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void
fixture(void)
{
	static const char *const dirs[] = { "ws", "ws/dir", "ws/dir/sub", "outside", "spill", "spill/d" };
	char path[256], target[256], ws[128], spill[128];
	struct err e;

	snprintf(fz.base, sizeof(fz.base), "/tmp/acp-fuzz-path-XXXXXX");
	if (mkdtemp(fz.base) == NULL)
		abort();
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", fz.base, dirs[i]);
		if (mkdir(path, 0755) != 0)
			abort();
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		put(files[i][0], files[i][1]);
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		const char *t = links[i][0];

		if (t[0] == '@')
			snprintf(target, sizeof(target), "%s%s", fz.base, t + 1);
		else
			snprintf(target, sizeof(target), "%s", t);
		snprintf(path, sizeof(path), "%s/%s", fz.base, links[i][1]);
		if (symlink(target, path) != 0)
			abort();
	}
	snprintf(ws, sizeof(ws), "%s/ws", fz.base);
	snprintf(spill, sizeof(spill), "%s/spill", fz.base);
	err_clear(&e);
	if (ws_roots_init(&fz.roots, ws, spill, &e) != 0 || (fz.real = realpath(fz.base, NULL)) == NULL)
		abort();
	fz.ready = 1;
	atexit(fixture_remove);
}

static const char *
below(const char *base, const char *p)
{
	size_t n = strlen(base);

	if (strncmp(base, p, n) != 0 || (p[n] != '\0' && p[n] != '/'))
		return NULL;
	return p[n] == '/' ? p + n + 1 : p + n;
}

static int
inside(const char *p)
{
	return below(fz.roots.root, p) != NULL || below(fz.roots.spill, p) != NULL;
}

/* A resolved path: spelled under a root, and where it exists, really there. */
static void
check_path(const struct ws_path *w, int for_write)
{
	char *real;

	if (!inside(w->abs))
		__builtin_trap();
	if (for_write && below(fz.roots.spill, w->abs) != NULL)
		__builtin_trap();
	if ((real = realpath(w->abs, NULL)) != NULL) {
		if (strcmp(real, w->abs) != 0)
			__builtin_trap();
		free(real);
	}
}

/* What the descriptor really is lies under a root. */
static void
check_fd(int fd)
{
	char link[64], real[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, real, sizeof(real) - 1)) < 0)
		__builtin_trap();
	real[n] = '\0';
	if (!inside(real))
		__builtin_trap();
}

/* The outside directory holds its secret and its link, unchanged; the read-only root too. */
static void
check_untouched(void)
{
	static const char *const dirs[] = { "outside", "spill", "spill/d" };
	static const int want[] = { 2, 3, 2 };
	char path[256], buf[16];
	FILE *f;

	for (size_t i = 0; i < 3; i++) {
		DIR *d;
		struct dirent *de;
		int n = 0;

		snprintf(path, sizeof(path), "%s/%s", fz.base, dirs[i]);
		if ((d = opendir(path)) == NULL)
			__builtin_trap();
		while ((de = readdir(d)) != NULL)
			n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
		closedir(d);
		if (n != want[i])
			__builtin_trap();
	}
	snprintf(path, sizeof(path), "%s/outside/secret", fz.base);
	if ((f = fopen(path, "r")) == NULL || fgets(buf, sizeof(buf), f) == NULL || strcmp(buf, "secret\n") != 0)
		__builtin_trap();
	fclose(f);
}

/* Undoes a write: a fixture file gets its content back; a new file and new directories go. */
static void
undo_write(const struct ws_path *w)
{
	char *dir, *slash;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		const char *rel = below(fz.real, w->abs);

		if (rel && strcmp(rel, files[i][0]) == 0) {
			put(files[i][0], files[i][1]);
			return;
		}
	}
	if (unlink(w->abs) != 0)
		__builtin_trap();
	dir = strdup(w->abs);
	while ((slash = strrchr(dir, '/')) != NULL) {
		*slash = '\0';
		if (strcmp(dir, fz.roots.root) == 0 || rmdir(dir) != 0)
			break;
	}
	free(dir);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const size_t npieces = sizeof(pieces) / sizeof(pieces[0]);
	struct buf p;
	struct ws_path w;
	struct err e;
	int fd;

	if (!fz.ready)
		fixture();
	if (size > 64)
		return 0;
	buf_init(&p);
	buf_append(&p, "", 0);
	for (size_t i = 0; i < size; i++) {
		if (data[i] & 0x80) {
			char c = (char)(data[i] & 0x7f);

			if (c != '\0')
				buf_append(&p, &c, 1);
		} else if (strcmp(pieces[data[i] % npieces], "@") == 0) {
			buf_puts(&p, fz.base);
		} else if (pieces[data[i] % npieces][0] == '@') {
			buf_puts(&p, fz.base);
			buf_puts(&p, pieces[data[i] % npieces] + 1);
		} else {
			buf_puts(&p, pieces[data[i] % npieces]);
		}
	}
	for (int for_write = 0; for_write < 2; for_write++) {
		err_clear(&e);
		if (ws_path_resolve(&fz.roots, p.data, for_write, &w, &e) == 0)
			check_path(&w, for_write);
		else if (w.abs != NULL)
			__builtin_trap();
		ws_path_free(&w);
	}
	err_clear(&e);
	fd = ws_path_open_read(&fz.roots, p.data, &w, &e);
	if (fd >= 0) {
		check_fd(fd);
		close(fd);
	}
	if (w.abs)
		check_path(&w, 0);
	ws_path_free(&w);
	err_clear(&e);
	if (ws_fs_write(&fz.roots, p.data, "fuzz\n", 5, 0, &w, &e) == 0) {
		check_path(&w, 1);
		undo_write(&w);
	}
	ws_path_free(&w);
	check_untouched();
	buf_free(&p);
	return 0;
}
