/* workspace/: confinement, the race-free walk, read text, atomic write, edit, observation, diff. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/xmalloc.h"
#include "tests/helpers.h"
#include "workspace/diff.h"
#include "workspace/fs.h"
#include "base/hash64.h"
#include "workspace/obs.h"
#include "workspace/path.h"

/*
 * Each test gets <base>/ws (the workspace root), <base>/outside (must never change) and
 * <base>/spill (the read-only root).
 */
static struct {
	char base[64];
	char ws[128], out[128], spill[128];
	struct ws_roots roots;
	struct err e;
} fx;

static char *
at(const char *rel)
{
	return xasprintf("%s/%s", fx.base, rel);
}

static void
mk(const char *rel, const char *content)
{
	char *p = at(rel);

	test_write_file(p, content, strlen(content));
	free(p);
}

static void
md(const char *rel)
{
	char *p = at(rel);

	ck_assert_int_eq(mkdir(p, 0755), 0);
	free(p);
}

/* A symlink at rel to target; "@" at target's start stands for the base directory. */
static void
ln(const char *target, const char *rel)
{
	char *p = at(rel), *t = target[0] == '@' ? at(target + 2) : xstrdup(target);

	ck_assert_int_eq(symlink(t, p), 0);
	free(p);
	free(t);
}

static char *
rd(const char *rel)
{
	char *p = at(rel), *s;
	size_t n;

	s = test_read_file(p, &n);
	free(p);
	return s;
}

static int
exists(const char *rel)
{
	char *p = at(rel);
	struct stat st;
	int rc = lstat(p, &st) == 0;

	free(p);
	return rc;
}

/* Entries of dir rel besides "." and "..". */
static int
entries(const char *rel)
{
	char *p = at(rel);
	DIR *d = opendir(p);
	struct dirent *de;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	free(p);
	return n;
}

static void
setup(void)
{
	umask(022);
	test_mkdtemp(fx.base, sizeof(fx.base));
	snprintf(fx.ws, sizeof(fx.ws), "%s/ws", fx.base);
	snprintf(fx.out, sizeof(fx.out), "%s/outside", fx.base);
	snprintf(fx.spill, sizeof(fx.spill), "%s/spill", fx.base);
	md("ws");
	md("outside");
	md("spill");
	md("ws/src");
	mk("ws/a.txt", "alpha\n");
	mk("ws/src/a.c", "int a;\n");
	mk("outside/secret.txt", "secret\n");
	mk("spill/s.txt", "spilled\n");
	err_clear(&fx.e);
	ck_assert_int_eq(ws_roots_init(&fx.roots, fx.ws, fx.spill, &fx.e), 0);
}

static void
teardown(void)
{
	ws_roots_free(&fx.roots);
	test_rmtree(fx.base);
}

static void
expect_err(int rc, const char *code, const char *msg)
{
	ck_assert_int_eq(rc, -1);
	ck_assert_int_ne(fx.e.code, ERR_NONE);
	ck_assert_str_eq(err_tool(fx.e.code), code);
	if (msg)
		ck_assert_str_eq(fx.e.msg, msg);
	err_clear(&fx.e);
}

static void
expect_outside(int rc, const char *p)
{
	char *msg = xasprintf("path \"%s\" is outside the workspace %s", p, fx.roots.root);

	expect_err(rc, "FS_OUTSIDE_WORKSPACE", msg);
	free(msg);
}

/* The outside directory holds only its secret, unchanged. */
static void
outside_untouched(void)
{
	char *s = rd("outside/secret.txt");

	ck_assert_int_eq(entries("outside"), 1);
	ck_assert_str_eq(s, "secret\n");
	free(s);
}

/* p is refused by resolve (both ways), open_read and write, and nothing outside changes. */
static void
refused_everywhere(const char *p)
{
	struct ws_path w;
	int fd;

	expect_outside(ws_path_resolve(&fx.roots, p, 0, &w, &fx.e), p);
	ck_assert_ptr_null(w.abs);
	expect_outside(ws_path_resolve(&fx.roots, p, 1, &w, &fx.e), p);
	fd = ws_path_open_read(&fx.roots, p, &w, &fx.e);
	expect_outside(fd, p);
	ck_assert_ptr_null(w.abs);
	expect_outside(ws_fs_write(&fx.roots, p, "pwned\n", 6, 0, &w, &fx.e), p);
	ck_assert_ptr_null(w.abs);
	outside_untouched();
}

/* Resolves p (expected inside) and checks its relative form. */
static void
resolves_to(const char *p, const char *rel, int exist)
{
	struct ws_path w;

	ck_assert_msg(ws_path_resolve(&fx.roots, p, 0, &w, &fx.e) == 0, "%s: %s", p, fx.e.msg);
	ck_assert_str_eq(w.rel, rel);
	ck_assert_int_eq(w.exists, exist);
	ck_assert_int_eq(w.read_only, 0);
	if (strcmp(rel, ".") == 0) {
		ck_assert_str_eq(w.abs, fx.roots.root);
	} else {
		char *abs = xasprintf("%s/%s", fx.roots.root, rel);

		ck_assert_str_eq(w.abs, abs);
		free(abs);
	}
	ws_path_free(&w);
}

static char *
read_via(const char *p, struct ws_path *w)
{
	struct buf b;

	buf_init(&b);
	ck_assert_msg(ws_fs_load(&fx.roots, p, WS_READ_MAX, w, &b, &fx.e) == 0, "%s: %s", p, fx.e.msg);
	return buf_steal(&b);
}

START_TEST(path_relative_paths_resolve_lexically_under_the_root)
{
	resolves_to("src/a.c", "src/a.c", 1);
	resolves_to("./src//a.c", "src/a.c", 1);
	resolves_to("src/../a.txt", "a.txt", 1);
	resolves_to("new/dir/x.c", "new/dir/x.c", 0);
	resolves_to("a.txt/x", "a.txt/x", 0);
	resolves_to("", ".", 1);
	resolves_to(".", ".", 1);
	resolves_to("src/..", ".", 1);
	/* Lexical first: a ".." after a link cancels the name, not the link's target. */
	ln("@/outside", "ws/outlink");
	resolves_to("outlink/../a.txt", "a.txt", 1);
}
END_TEST

START_TEST(path_dotdot_escapes_are_refused)
{
	refused_everywhere("..");
	refused_everywhere("../outside/secret.txt");
	refused_everywhere("src/../../outside/secret.txt");
	refused_everywhere("../ws/../outside/x");
}
END_TEST

START_TEST(path_absolute_paths_inside_and_outside)
{
	struct ws_path w;
	char *p = xasprintf("%s/src/a.c", fx.roots.root), *q = at("outside/secret.txt");
	char *alias = at("alias"), *via = xasprintf("%s/src/a.c", alias);

	resolves_to(p, "src/a.c", 1);
	refused_everywhere(q);
	refused_everywhere("/etc/passwd");
	refused_everywhere("/");
	/* Spelled through a symlink outside the workspace that leads into it: realpath decides. */
	ck_assert_int_eq(symlink(fx.ws, alias), 0);
	resolves_to(via, "src/a.c", 1);
	ck_assert_int_eq(ws_path_write(&fx.roots, via, "int b;\n", 7, 0, &w, &fx.e), 0);
	ck_assert_str_eq(w.rel, "src/a.c");
	ws_path_free(&w);
	free(p);
	free(q);
	free(alias);
	free(via);
}
END_TEST

START_TEST(path_symlinks_inside_are_followed)
{
	struct ws_path w;
	char *s;

	ln("src", "ws/lnk");
	ln("@/ws/src/a.c", "ws/abs.c");
	ln("../ws/a.txt", "ws/up_in");
	ln("..", "ws/src/back");
	ln("../..", "ws/src/up2");
	resolves_to("lnk/a.c", "src/a.c", 1);
	resolves_to("abs.c", "src/a.c", 1);
	resolves_to("up_in", "a.txt", 1);
	resolves_to("src/back/a.txt", "a.txt", 1);
	resolves_to("src/back/src/back/src/a.c", "src/a.c", 1);
	resolves_to("src/up2/ws/a.txt", "a.txt", 1);
	resolves_to("lnk/missing/x", "src/missing/x", 0);
	s = read_via("lnk/a.c", &w);
	ck_assert_str_eq(s, "int a;\n");
	ck_assert_str_eq(w.rel, "src/a.c");
	ws_path_free(&w);
	free(s);
	s = read_via("src/up2/ws/a.txt", &w);
	ck_assert_str_eq(s, "alpha\n");
	ws_path_free(&w);
	free(s);
}
END_TEST

START_TEST(path_symlinks_leading_out_are_refused)
{
	ln("../outside/secret.txt", "ws/out.txt");		/* a file, relative */
	ln("@/outside", "ws/outdir");				/* a directory, absolute */
	ln("../../outside", "ws/src/esc");			/* two levels up */
	ln("../..", "ws/src/up2");				/* above the root, then down */
	ln("../outside/new.txt", "ws/dangling_out");		/* dangling, outside */
	ln("outdir/secret.txt", "ws/chain");			/* inside, then out */
	ln("/etc", "ws/etc");
	refused_everywhere("out.txt");
	refused_everywhere("outdir/secret.txt");
	refused_everywhere("outdir/new.txt");
	refused_everywhere("src/esc/secret.txt");
	refused_everywhere("src/up2/outside/secret.txt");
	refused_everywhere("dangling_out");
	refused_everywhere("chain");
	refused_everywhere("etc/passwd");
	ck_assert(!exists("outside/new.txt"));
}
END_TEST

START_TEST(path_symlink_loops_are_an_io_error)
{
	struct ws_path w;

	ln("loop2", "ws/loop1");
	ln("loop1", "ws/loop2");
	expect_err(ws_path_resolve(&fx.roots, "loop1", 0, &w, &fx.e), "FS_IO",
	    "cannot read \"loop1\": Too many levels of symbolic links");
	expect_err(ws_path_resolve(&fx.roots, "loop1", 1, &w, &fx.e), "FS_IO",
	    "cannot write \"loop1\": Too many levels of symbolic links");
	expect_err(ws_path_open_read(&fx.roots, "loop1/x", &w, &fx.e), "FS_IO", NULL);
	expect_err(ws_path_write(&fx.roots, "loop2", "x", 1, 0, &w, &fx.e), "FS_IO",
	    "cannot write \"loop2\": Too many levels of symbolic links");
}
END_TEST

/* docs/contract.md §27: an additional directory is another read-write root: reached by its
 * absolute path or a link from the workspace, written there; ".." above it, a link out of it and a
 * relative path climbing out of the workspace stay outside; the read-only root inside it stays
 * read-only. */
START_TEST(path_additional_root_is_read_write_and_confined)
{
	struct ws_path w;
	char *extra = at("extra"), *in = at("extra/in.txt"), *up = at("extra/../outside/secret.txt"), *c;
	char *ro = at("extra/spill2/r.txt"), *esc = at("extra/esc/secret.txt");
	struct ws_roots r2;
	struct err e;

	md("extra");
	mk("extra/in.txt", "in\n");
	md("extra/spill2");
	mk("extra/spill2/r.txt", "r\n");
	ln("@/extra", "ws/toextra");
	ln("../outside", "extra/esc");
	/* not a root yet: outside */
	expect_outside(ws_path_resolve(&fx.roots, in, 0, &w, &fx.e), in);
	err_clear(&e);
	ck_assert_int_eq(ws_roots_add(&fx.roots, extra, &e), 0);
	c = read_via(in, &w);
	ck_assert_str_eq(c, "in\n");
	ck_assert_int_eq(w.read_only, 0);
	ck_assert_str_eq(w.rel, w.abs);		/* not under the workspace: the absolute path */
	ws_path_free(&w);
	free(c);
	c = read_via("toextra/in.txt", &w);		/* a link from the workspace into it */
	ck_assert_str_eq(c, "in\n");
	ws_path_free(&w);
	free(c);
	ck_assert_int_eq(ws_fs_write(&fx.roots, "toextra/new.txt", "n", 1, 0, &w, &fx.e), 0);
	ws_path_free(&w);
	c = rd("extra/new.txt");
	ck_assert_str_eq(c, "n");
	free(c);
	ck_assert_int_eq(ws_fs_write(&fx.roots, in, "w", 1, 0, &w, &fx.e), 0);
	ws_path_free(&w);
	/* ways out of it */
	expect_outside(ws_path_resolve(&fx.roots, up, 0, &w, &fx.e), up);
	expect_outside(ws_path_resolve(&fx.roots, esc, 0, &w, &fx.e), esc);
	expect_outside(ws_path_resolve(&fx.roots, "../extra/in.txt", 0, &w, &fx.e), "../extra/in.txt");
	refused_everywhere(esc);
	/* a read-only root inside it stays read-only */
	err_clear(&e);
	char *spill2 = at("extra/spill2");
	ck_assert_int_eq(ws_roots_init(&r2, fx.ws, spill2, &e), 0);
	ck_assert_int_eq(ws_roots_add(&r2, extra, &e), 0);
	ck_assert_int_eq(ws_path_resolve(&r2, ro, 0, &w, &e), 0);
	ck_assert_int_eq(w.read_only, 1);
	ws_path_free(&w);
	ck_assert_int_eq(ws_path_resolve(&r2, ro, 1, &w, &e), -1);
	ws_roots_free(&r2);
	/* not a directory, or missing: refused */
	ck_assert_int_eq(ws_roots_add(&fx.roots, in, &e), -1);
	ck_assert_int_eq(ws_roots_add(&fx.roots, "/nonexistent/dir", &e), -1);
	free(spill2);
	free(extra);
	free(in);
	free(up);
	free(ro);
	free(esc);
}
END_TEST

START_TEST(path_read_only_root_is_readable_never_writable)
{
	struct ws_path w;
	struct ws_roots r2;
	char *s = at("spill/s.txt"), *nd = at("spill/newdir/x"), *esc = at("spill/esc"), *c;

	ln("@/spill/s.txt", "ws/tospill");
	ln("../outside/secret.txt", "spill/esc");
	c = read_via(s, &w);
	ck_assert_str_eq(c, "spilled\n");
	ck_assert_int_eq(w.read_only, 1);
	ck_assert_str_eq(w.rel, w.abs);		/* not under the workspace: the absolute path */
	ws_path_free(&w);
	free(c);
	c = read_via("tospill", &w);
	ck_assert_str_eq(c, "spilled\n");
	ck_assert_int_eq(w.read_only, 1);
	ws_path_free(&w);
	free(c);
	ck_assert_int_eq(ws_path_resolve(&fx.roots, s, 0, &w, &fx.e), 0);
	ws_path_free(&w);
	expect_outside(ws_path_resolve(&fx.roots, s, 1, &w, &fx.e), s);
	expect_outside(ws_fs_write(&fx.roots, s, "x", 1, 0, &w, &fx.e), s);
	expect_outside(ws_fs_write(&fx.roots, "tospill", "x", 1, 0, &w, &fx.e), "tospill");
	expect_outside(ws_fs_write(&fx.roots, nd, "x", 1, 0, &w, &fx.e), nd);
	ck_assert(!exists("spill/newdir"));
	c = rd("spill/s.txt");
	ck_assert_str_eq(c, "spilled\n");
	free(c);
	refused_everywhere(esc);
	/* A read-only root not created yet: resolved lexically, read as missing. */
	ck_assert_int_eq(ws_roots_init(&r2, fx.ws, "/nonexistent-acp/spill/x", &fx.e), 0);
	ck_assert_int_eq(ws_path_resolve(&r2, "/nonexistent-acp/spill/x/y.txt", 0, &w, &fx.e), 0);
	ck_assert_str_eq(w.abs, "/nonexistent-acp/spill/x/y.txt");
	ck_assert_int_eq(w.exists, 0);
	ws_path_free(&w);
	expect_err(ws_path_open_read(&r2, "/nonexistent-acp/spill/x/y.txt", &w, &fx.e),
	    "FS_NOT_FOUND", NULL);
	ws_path_free(&w);
	ws_roots_free(&r2);
	free(s);
	free(nd);
	free(esc);
}
END_TEST

START_TEST(path_open_read_errors_fill_the_path_for_absence)
{
	struct ws_path w;
	char *fifo = at("ws/fifo");

	expect_err(ws_path_open_read(&fx.roots, "nope.txt", &w, &fx.e), "FS_NOT_FOUND",
	    "file \"nope.txt\" does not exist");
	ck_assert_str_eq(w.rel, "nope.txt");
	ck_assert_int_eq(w.exists, 0);
	ws_path_free(&w);
	expect_err(ws_path_open_read(&fx.roots, "a.txt/x", &w, &fx.e), "FS_NOT_FOUND", NULL);
	ws_path_free(&w);
	expect_err(ws_path_open_read(&fx.roots, "src", &w, &fx.e), "FS_IS_DIRECTORY",
	    "path \"src\" is a directory");
	ck_assert_str_eq(w.rel, "src");
	ck_assert_int_eq(w.exists, 1);
	ws_path_free(&w);
	expect_err(ws_path_open_read(&fx.roots, "", &w, &fx.e), "FS_IS_DIRECTORY", NULL);
	ws_path_free(&w);
	ck_assert_int_eq(mkfifo(fifo, 0644), 0);
	expect_err(ws_path_open_read(&fx.roots, "fifo", &w, &fx.e), "FS_IO",
	    "cannot read \"fifo\": not a regular file");
	ck_assert_ptr_null(w.abs);
	free(fifo);
}
END_TEST

START_TEST(path_roots_init_resolves_and_fails_clearly)
{
	struct ws_roots r;
	struct ws_path w;
	char *lnk = at("wslink"), *here = getcwd(NULL, 0);

	ck_assert_int_eq(symlink(fx.ws, lnk), 0);
	ck_assert_int_eq(ws_roots_init(&r, lnk, NULL, &fx.e), 0);
	ck_assert_str_eq(r.root, fx.roots.root);
	ck_assert_ptr_null(r.spill);
	ws_roots_free(&r);
	expect_err(ws_roots_init(&r, "/nonexistent-acp/ws", NULL, &fx.e), "FS_IO",
	    "cannot resolve the workspace \"/nonexistent-acp/ws\": No such file or directory");
	/* A relative spill directory is taken against the process's cwd. */
	ck_assert_int_eq(chdir(fx.base), 0);
	ck_assert_int_eq(ws_roots_init(&r, "ws", "spill", &fx.e), 0);
	ck_assert_str_eq(r.spill, fx.roots.spill);
	ws_roots_free(&r);
	ck_assert_int_eq(chdir(here), 0);
	/* The workspace "/": every absolute path is inside. */
	ck_assert_int_eq(ws_roots_init(&r, "/", NULL, &fx.e), 0);
	ck_assert_int_eq(ws_path_resolve(&r, "/etc/../etc", 0, &w, &fx.e), 0);
	ck_assert_str_eq(w.abs, "/etc");
	ck_assert_str_eq(w.rel, "etc");
	ws_path_free(&w);
	ws_roots_free(&r);
	free(lnk);
	free(here);
}
END_TEST

START_TEST(path_directory_swapped_for_a_symlink_after_resolve_writes_nothing_outside)
{
	struct ws_path w;
	char *d = at("ws/d"), *old = at("ws/d.old"), *r = at("ws/r.txt");
	int fd;

	md("ws/d");
	mk("ws/r.txt", "mine\n");
	ck_assert_int_eq(ws_path_resolve(&fx.roots, "d/f.txt", 1, &w, &fx.e), 0);
	ws_path_free(&w);
	ck_assert_int_eq(ws_path_resolve(&fx.roots, "r.txt", 0, &w, &fx.e), 0);
	ws_path_free(&w);
	/* Between the check and the use, someone swaps the component for a link out. */
	ck_assert_int_eq(rename(d, old), 0);
	ck_assert_int_eq(symlink(fx.out, d), 0);
	ck_assert_int_eq(unlink(r), 0);
	ck_assert_int_eq(symlink("../outside/secret.txt", r), 0);
	expect_outside(ws_fs_write(&fx.roots, "d/f.txt", "pwned\n", 6, 0, &w, &fx.e), "d/f.txt");
	expect_outside(ws_fs_write(&fx.roots, "d/secret.txt", "pwned\n", 6, 0, &w, &fx.e), "d/secret.txt");
	expect_outside(ws_fs_write(&fx.roots, "r.txt", "pwned\n", 6, 0, &w, &fx.e), "r.txt");
	fd = ws_path_open_read(&fx.roots, "r.txt", &w, &fx.e);
	expect_outside(fd, "r.txt");
	fd = ws_path_open_read(&fx.roots, "d/secret.txt", &w, &fx.e);
	expect_outside(fd, "d/secret.txt");
	outside_untouched();
	ck_assert_int_eq(entries("ws/d.old"), 0);
	free(d);
	free(old);
	free(r);
}
END_TEST

/* No ".acp-write-*" temporary file is left in dir rel. */
static void
no_temp_left(const char *rel)
{
	char *p = at(rel);
	DIR *d = opendir(p);
	struct dirent *de;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL)
		ck_assert_msg(strncmp(de->d_name, ".acp-write-", 11) != 0, "left %s", de->d_name);
	closedir(d);
	free(p);
}

START_TEST(write_is_atomic_keeps_the_mode_and_creates_parents)
{
	struct ws_path w;
	struct stat before, after;
	char *a = at("ws/a.txt"), *n = at("ws/new.txt"), *s;

	ck_assert_int_eq(chmod(a, 0600), 0);
	ck_assert_int_eq(stat(a, &before), 0);
	ck_assert_int_eq(ws_fs_write(&fx.roots, "a.txt", "beta\n", 5, WS_WRITE_SYNC, &w, &fx.e), 0);
	ck_assert_int_eq(w.exists, 1);
	ck_assert_str_eq(w.rel, "a.txt");
	ws_path_free(&w);
	ck_assert_int_eq(stat(a, &after), 0);
	ck_assert_uint_eq(after.st_mode & 07777, 0600);
	ck_assert(after.st_ino != before.st_ino);	/* a new file renamed over, not rewritten */
	s = rd("ws/a.txt");
	ck_assert_str_eq(s, "beta\n");
	free(s);
	ck_assert_int_eq(ws_fs_write(&fx.roots, "new.txt", "", 0, 0, &w, &fx.e), 0);
	ck_assert_int_eq(w.exists, 0);
	ws_path_free(&w);
	ck_assert_int_eq(stat(n, &after), 0);
	ck_assert_uint_eq(after.st_mode & 07777, 0644);
	ck_assert_int_eq(after.st_size, 0);
	ck_assert_int_eq(ws_path_write(&fx.roots, "deep/er/x.c", "x\n", 2, 0, NULL, &fx.e), 0);
	s = rd("ws/deep/er/x.c");
	ck_assert_str_eq(s, "x\n");
	free(s);
	no_temp_left("ws");
	no_temp_left("ws/deep/er");
	free(a);
	free(n);
}
END_TEST

START_TEST(write_through_a_symlink_inside_replaces_its_target)
{
	struct ws_path w;
	struct stat st;
	char *l = at("ws/lnk.txt"), *s;

	ln("a.txt", "ws/lnk.txt");
	ln("src/created.c", "ws/dang");
	ck_assert_int_eq(ws_fs_write(&fx.roots, "lnk.txt", "via link\n", 9, 0, &w, &fx.e), 0);
	ck_assert_str_eq(w.rel, "a.txt");
	ws_path_free(&w);
	s = rd("ws/a.txt");
	ck_assert_str_eq(s, "via link\n");
	free(s);
	ck_assert_int_eq(lstat(l, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_int_eq(ws_fs_write(&fx.roots, "dang", "new\n", 4, 0, &w, &fx.e), 0);
	ck_assert_str_eq(w.rel, "src/created.c");
	ws_path_free(&w);
	s = rd("ws/src/created.c");
	ck_assert_str_eq(s, "new\n");
	free(s);
	free(l);
}
END_TEST

START_TEST(write_refuses_bad_content_and_bad_targets)
{
	struct ws_path w;
	char *big = xmalloc(WS_FILE_MAX + 1), *fifo = at("ws/fifo"), *s;

	memset(big, 'a', WS_FILE_MAX + 1);
	expect_err(ws_fs_write(&fx.roots, "big.txt", big, WS_FILE_MAX + 1, 0, &w, &fx.e),
	    "FS_TOO_LARGE", "content for \"big.txt\" is larger than 8 MiB (8388609 bytes)");
	ck_assert_int_eq(ws_fs_write(&fx.roots, "big.txt", big, WS_FILE_MAX, 0, &w, &fx.e), 0);
	ws_path_free(&w);
	expect_err(ws_fs_write(&fx.roots, "a.txt", "bad \xff\n", 6, 0, &w, &fx.e), "FS_NOT_UTF8",
	    "content for \"a.txt\" is not valid UTF-8");
	expect_err(ws_fs_write(&fx.roots, "src", "x", 1, 0, &w, &fx.e), "FS_IS_DIRECTORY",
	    "path \"src\" is a directory");
	expect_err(ws_fs_write(&fx.roots, "", "x", 1, 0, &w, &fx.e), "FS_IS_DIRECTORY", NULL);
	expect_err(ws_fs_write(&fx.roots, "a.txt/x", "x", 1, 0, &w, &fx.e), "FS_IO",
	    "cannot write \"a.txt/x\": Not a directory");
	ck_assert_int_eq(mkfifo(fifo, 0644), 0);
	expect_err(ws_fs_write(&fx.roots, "fifo", "x", 1, 0, &w, &fx.e), "FS_IO",
	    "cannot write \"fifo\": not a regular file");
	s = rd("ws/a.txt");
	ck_assert_str_eq(s, "alpha\n");
	free(s);
	no_temp_left("ws");
	free(big);
	free(fifo);
}
END_TEST

START_TEST(write_that_fails_midway_leaves_the_old_file_whole)
{
	struct ws_path w;
	struct rlimit old, lim;
	char *data = xmalloc(100000), *s;

	memset(data, 'z', 100000);
	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 4096;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	expect_err(ws_fs_write(&fx.roots, "a.txt", data, 100000, 0, &w, &fx.e), "FS_IO",
	    "cannot write \"a.txt\": File too large");
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	s = rd("ws/a.txt");
	ck_assert_str_eq(s, "alpha\n");
	free(s);
	no_temp_left("ws");
	free(data);
}
END_TEST

START_TEST(load_reads_whole_files_within_a_limit)
{
	struct ws_path w;
	struct buf b;
	char *big = xmalloc(WS_FILE_MAX + 1), *p = at("ws/big.bin");

	buf_init(&b);
	memset(big, 'b', WS_FILE_MAX + 1);
	test_write_file(p, big, WS_FILE_MAX + 1);
	expect_err(ws_fs_load(&fx.roots, "big.bin", WS_FILE_MAX, &w, &b, &fx.e), "FS_TOO_LARGE",
	    "file \"big.bin\" is larger than 8 MiB (8388609 bytes)");
	ws_path_free(&w);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_int_eq(ws_fs_load(&fx.roots, "big.bin", WS_READ_MAX, &w, &b, &fx.e), 0);
	ck_assert_uint_eq(b.len, WS_FILE_MAX + 1);
	ws_path_free(&w);
	b.len = 0;
	expect_err(ws_fs_load(&fx.roots, "big.bin", 1000, &w, &b, &fx.e), "FS_TOO_LARGE",
	    "file \"big.bin\" is larger than 1000 bytes (8388609 bytes)");
	ws_path_free(&w);
	expect_err(ws_fs_load(&fx.roots, "gone.txt", WS_READ_MAX, &w, &b, &fx.e), "FS_NOT_FOUND", NULL);
	ck_assert_str_eq(w.rel, "gone.txt");
	ws_path_free(&w);
	buf_free(&b);
	free(big);
	free(p);
}
END_TEST

/* Renders data with offset/limit; the text is returned (owned). */
static char *
render(const char *data, size_t len, size_t offset, size_t limit, struct ws_read_span *sp)
{
	struct buf b;

	buf_init(&b);
	ck_assert_int_eq(ws_fs_read_render("f", data, len, offset, limit, &b, sp, &fx.e), 0);
	return buf_steal(&b);
}

START_TEST(read_numbers_lines_and_drops_carriage_returns)
{
	struct ws_read_span sp;
	char *s;

	s = render("a\nb\n", 4, 0, 0, &sp);
	ck_assert_str_eq(s, "     1\ta\n     2\tb");
	ck_assert_uint_eq(sp.first, 1);
	ck_assert_uint_eq(sp.last, 2);
	ck_assert_uint_eq(sp.total, 2);
	ck_assert_int_eq(sp.more, 0);
	free(s);
	s = render("a\r\n\r\nb", 6, 1, 2000, &sp);
	ck_assert_str_eq(s, "     1\ta\n     2\t\n     3\tb");
	ck_assert_uint_eq(sp.total, 3);
	free(s);
	s = render("", 0, 0, 0, &sp);
	ck_assert_str_eq(s, "");
	ck_assert_uint_eq(sp.total, 0);
	free(s);
}
END_TEST

START_TEST(read_offset_limit_and_the_footer)
{
	struct ws_read_span sp;
	struct buf f;
	char *s;

	buf_init(&f);
	for (int i = 1; i <= 2500; i++)
		buf_printf(&f, "l%d\n", i);
	s = render(f.data, f.len, 3, 4, &sp);
	ck_assert_str_eq(s, "     3\tl3\n     4\tl4\n     5\tl5\n     6\tl6\n"
	    "[lines 3-6 of 2500; continue with offset=7]");
	ck_assert_int_eq(sp.more, 1);
	free(s);
	s = render(f.data, f.len, 0, 0, &sp);
	ck_assert_uint_eq(sp.last, 2000);
	ck_assert_ptr_nonnull(strstr(s, "\n  2000\tl2000\n[lines 1-2000 of 2500; continue with offset=2001]"));
	free(s);
	s = render(f.data, f.len, 2001, 0, &sp);
	ck_assert(strncmp(s, "  2001\tl2001\n", 13) == 0);
	ck_assert_ptr_nonnull(strstr(s, "  2500\tl2500"));
	ck_assert_ptr_null(strchr(s, '['));		/* the end: no footer */
	ck_assert_int_eq(sp.more, 0);
	free(s);
	/* Any offset lands on its line, lines of every length around the 4 KiB skip blocks. */
	f.len = 0;
	for (int i = 1; i <= 20000; i++)
		buf_printf(&f, "%d:%.*s\n", i, (i * 37) % 23, "xxxxxxxxxxxxxxxxxxxxxxxxx");
	for (int i = 1; i <= 20000; i += 97) {
		char want[64];

		s = render(f.data, f.len, (size_t)i, 1, &sp);
		snprintf(want, sizeof(want), "%6d\t%d:", i, i);
		ck_assert_msg(strncmp(s, want, strlen(want)) == 0, "offset %d: %.20s", i, s);
		ck_assert_uint_eq(sp.total, 20000);
		free(s);
	}
	/* A block of nothing but '\n' near the offset is not skipped past it. */
	f.len = 0;
	for (int i = 0; i < 10000; i++)
		buf_append(&f, "\n", 1);
	s = render(f.data, f.len, 4050, 1, &sp);
	ck_assert_str_eq(s, "  4050\t\n[lines 4050-4050 of 10000; continue with offset=4051]");
	free(s);
	/* Numbers wider than six columns push the tab right. */
	f.len = 0;
	for (int i = 0; i < 1000001; i++)
		buf_append(&f, "x\n", 2);
	s = render(f.data, f.len, 999999, 3, &sp);
	ck_assert_str_eq(s, "999999\tx\n1000000\tx\n1000001\tx");
	free(s);
	buf_free(&f);
}
END_TEST

START_TEST(read_offset_past_the_end_says_so)
{
	struct ws_read_span sp;
	char *s;

	s = render("a\nb\n", 4, 3, 0, &sp);
	ck_assert_str_eq(s, "[offset 3 is past the end; the file has 2 lines]");
	ck_assert_uint_eq(sp.first, 0);
	ck_assert_uint_eq(sp.total, 2);
	free(s);
	s = render("a\nb", 3, 9, 0, &sp);
	ck_assert_str_eq(s, "[offset 9 is past the end; the file has 2 lines]");
	free(s);
	s = render("", 0, 2, 0, &sp);
	ck_assert_str_eq(s, "[offset 2 is past the end; the file has 0 lines]");
	free(s);
	s = render("a\n", 2, 2, 0, &sp);
	ck_assert_str_eq(s, "[offset 2 is past the end; the file has 1 line]");
	free(s);
	s = render("a\nb", 3, 2, 0, &sp);
	ck_assert_str_eq(s, "     2\tb");
	free(s);
}
END_TEST

START_TEST(read_cuts_long_lines_at_2000_characters)
{
	struct ws_read_span sp;
	struct buf f, want;
	char *s;

	buf_init(&f);
	buf_init(&want);
	for (int i = 0; i < 3000; i++)
		buf_append(&f, "a", 1);
	buf_append(&f, "\n", 1);
	for (int i = 0; i < 3000; i++)
		buf_append(&f, "\xc3\xa9", 2);		/* é: 2 bytes, 1 character */
	buf_append(&f, "\n", 1);
	for (int i = 0; i < 3000; i++)
		buf_append(&f, "\xff", 1);		/* invalid: one U+FFFD each */
	buf_puts(&want, "     1\t");
	for (int i = 0; i < 2000; i++)
		buf_append(&want, "a", 1);
	buf_puts(&want, "\n     2\t");
	for (int i = 0; i < 2000; i++)
		buf_append(&want, "\xc3\xa9", 2);
	buf_puts(&want, "\n     3\t");
	for (int i = 0; i < 2000; i++)
		buf_append(&want, "\xef\xbf\xbd", 3);
	s = render(f.data, f.len, 0, 0, &sp);
	ck_assert_str_eq(s, want.data);
	free(s);
	/* Exactly 2000 characters stay whole. */
	s = render(f.data + 1000, 2000, 0, 0, &sp);
	ck_assert_uint_eq(strlen(s), 7 + 2000);
	free(s);
	buf_free(&f);
	buf_free(&want);
}
END_TEST

START_TEST(read_shows_invalid_utf8_as_replacement_characters)
{
	struct ws_read_span sp;
	char *s = render("a\xff" "b\n\xed\xa0\x80\n\xe2\x82", 10, 0, 0, &sp);

	ck_assert_str_eq(s, "     1\ta\xef\xbf\xbd" "b\n     2\t\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\n"
	    "     3\t\xef\xbf\xbd\xef\xbf\xbd");
	free(s);
}
END_TEST

START_TEST(read_refuses_binary_files)
{
	struct ws_read_span sp;
	struct buf b;
	char *f = xmalloc(9000);

	buf_init(&b);
	memset(f, 'a', 9000);
	f[8191] = '\0';
	expect_err(ws_fs_read_render("bin.dat", f, 9000, 0, 0, &b, &sp, &fx.e), "FS_BINARY",
	    "file \"bin.dat\" is binary (a NUL byte in its first 8 KiB)");
	ck_assert_uint_eq(b.len, 0);
	f[8191] = 'a';
	f[8192] = '\0';		/* past the first 8 KiB: shown */
	ck_assert_int_eq(ws_fs_read_render("bin.dat", f, 9000, 0, 0, &b, &sp, &fx.e), 0);
	expect_err(ws_fs_read_render("z", "\0", 1, 0, 0, &b, &sp, &fx.e), "FS_BINARY", NULL);
	buf_free(&b);
	free(f);
}
END_TEST

START_TEST(read_stops_before_256_kib_and_says_where_to_go_on)
{
	struct ws_read_span sp, sp2;
	struct buf f;
	char line[201], *s, *s2;

	buf_init(&f);
	memset(line, 'q', 199);
	line[199] = '\n';
	line[200] = '\0';
	for (int i = 0; i < 2000; i++)
		buf_puts(&f, line);		/* 400 KB in 2000 lines: the byte cap cuts first */
	s = render(f.data, f.len, 0, 0, &sp);
	ck_assert_uint_le(strlen(s), WS_READ_TEXT_MAX);
	ck_assert_uint_gt(strlen(s), WS_READ_TEXT_MAX - 2 * 207);
	ck_assert_uint_lt(sp.last, 2000);
	ck_assert_int_eq(sp.more, 1);
	{
		char *want = xasprintf("\n[lines 1-%zu of 2000; continue with offset=%zu]", sp.last, sp.last + 1);

		ck_assert_str_eq(s + strlen(s) - strlen(want), want);
		free(want);
	}
	s2 = render(f.data, f.len, sp.last + 1, 0, &sp2);
	ck_assert_uint_eq(sp2.first, sp.last + 1);
	free(s);
	free(s2);
	buf_free(&f);
}
END_TEST

/* Edits old; returns the new text (owned); out keeps count and line. */
static char *
edit_ok(const char *old, const char *a, const char *b, int all, struct ws_edit *ed)
{
	char *s;

	ck_assert_msg(ws_fs_edit("f.c", old, strlen(old), a, b, all, ed, &fx.e) == 0, "%s", fx.e.msg);
	s = xstrndup(ed->text.data, ed->text.len);
	ws_edit_free(ed);
	return s;
}

START_TEST(edit_replaces_literally_and_reports_count_and_line)
{
	struct ws_edit ed;
	char *s;

	s = edit_ok("one\ntwo\nthree\n", "two", "2", 0, &ed);
	ck_assert_str_eq(s, "one\n2\nthree\n");
	ck_assert_uint_eq(ed.count, 1);
	ck_assert_uint_eq(ed.first_line, 2);
	ck_assert_int_eq(ed.crlf, 0);
	free(s);
	s = edit_ok("a.b a.b a.b", "a.b", "", 1, &ed);	/* literal, not a pattern; empty deletes */
	ck_assert_str_eq(s, "  ");
	ck_assert_uint_eq(ed.count, 3);
	ck_assert_uint_eq(ed.first_line, 1);
	free(s);
	s = edit_ok("aaaa", "aa", "b", 1, &ed);		/* non-overlapping, left to right */
	ck_assert_str_eq(s, "bb");
	ck_assert_uint_eq(ed.count, 2);
	free(s);
	s = edit_ok("x\ny\nz\nend", "end", "fin\n", 0, &ed);
	ck_assert_str_eq(s, "x\ny\nz\nfin\n");
	ck_assert_uint_eq(ed.first_line, 4);
	free(s);
}
END_TEST

START_TEST(edit_no_match_ambiguous_and_empty_old_string)
{
	struct ws_edit ed;

	expect_err(ws_fs_edit("src/a.c", "abc", 3, "zz", "y", 0, &ed, &fx.e), "EDIT_NO_MATCH",
	    "old_string not found in \"src/a.c\"");
	ws_edit_free(&ed);
	expect_err(ws_fs_edit("src/a.c", "x x x", 5, "x", "y", 0, &ed, &fx.e), "EDIT_AMBIGUOUS",
	    "old_string occurs 3 times in \"src/a.c\"; add context or set replace_all");
	ws_edit_free(&ed);
	expect_err(ws_fs_edit("src/a.c", "abc", 3, "", "y", 0, &ed, &fx.e), "INVALID_ARGUMENT",
	    "invalid arguments: \"old_string\" must not be empty");
	ws_edit_free(&ed);
	/* A file without "\r\n" is not retried. */
	expect_err(ws_fs_edit("f", "a\rb", 3, "a\nb", "c", 0, &ed, &fx.e), "EDIT_NO_MATCH", NULL);
	ws_edit_free(&ed);
}
END_TEST

START_TEST(edit_in_a_crlf_file_retries_with_crlf)
{
	struct ws_edit ed;
	char *s;

	s = edit_ok("a\r\nb\r\nc\r\n", "a\nb\n", "x\ny\n", 0, &ed);
	ck_assert_str_eq(s, "x\r\ny\r\nc\r\n");
	ck_assert_int_eq(ed.crlf, 1);
	ck_assert_uint_eq(ed.count, 1);
	free(s);
	/* Already "\r\n" in old_string: only the bare '\n' is turned. */
	s = edit_ok("a\r\nb\r\nc\r\n", "b\r\nc\n", "B\nC", 0, &ed);
	ck_assert_str_eq(s, "a\r\nB\r\nC");
	free(s);
	/* A direct match needs no retry. */
	s = edit_ok("a\r\nb\r\n", "b", "B", 0, &ed);
	ck_assert_str_eq(s, "a\r\nB\r\n");
	ck_assert_int_eq(ed.crlf, 0);
	free(s);
	/* The retry also counts: ambiguous after it. */
	expect_err(ws_fs_edit("w.txt", "a\r\nb\r\na\r\nb\r\n", 12, "a\nb", "z", 0, &ed, &fx.e),
	    "EDIT_AMBIGUOUS", "old_string occurs 2 times in \"w.txt\"; add context or set replace_all");
	ws_edit_free(&ed);
}
END_TEST

START_TEST(edit_checks_size_and_utf8)
{
	struct ws_edit ed;
	char *big = xmalloc(WS_FILE_MAX + 1);

	memset(big, 'a', WS_FILE_MAX + 1);
	big[0] = 'X';
	expect_err(ws_fs_edit("big", big, WS_FILE_MAX + 1, "X", "Y", 0, &ed, &fx.e), "FS_TOO_LARGE",
	    "file \"big\" is larger than 8 MiB (8388609 bytes)");
	ws_edit_free(&ed);
	expect_err(ws_fs_edit("big", big, WS_FILE_MAX, "X", "YY", 0, &ed, &fx.e), "FS_TOO_LARGE",
	    "the edit would make \"big\" larger than 8 MiB (8388609 bytes)");
	ws_edit_free(&ed);
	ck_assert_int_eq(ws_fs_edit("big", big, WS_FILE_MAX, "X", "Y", 0, &ed, &fx.e), 0);
	ck_assert_uint_eq(ed.text.len, WS_FILE_MAX);
	ws_edit_free(&ed);
	expect_err(ws_fs_edit("bad", "a\xff", 2, "a", "b", 0, &ed, &fx.e), "FS_NOT_UTF8",
	    "file \"bad\" is not valid UTF-8");
	ws_edit_free(&ed);
	expect_err(ws_fs_edit("ok", "abc", 3, "a", "\xc3", 0, &ed, &fx.e), "FS_NOT_UTF8",
	    "new_string is not valid UTF-8");
	ws_edit_free(&ed);
	free(big);
}
END_TEST

START_TEST(observation_rule_not_observed_stale_and_absent)
{
	struct ws_obs o;
	const char *abs = "/w/a.txt";

	ws_obs_init(&o);
	expect_err(ws_obs_check(&o, abs, "a.txt", "v1", 2, &fx.e), "FS_NOT_OBSERVED",
	    "file \"a.txt\" has not been read \xe2\x80\x94 read the file, then retry");
	ck_assert_int_eq(ws_obs_check(&o, abs, "a.txt", NULL, 0, &fx.e), 0);	/* new: may create */
	ws_obs_note(&o, abs, "v1", 2);
	ck_assert_int_eq(ws_obs_check(&o, abs, "a.txt", "v1", 2, &fx.e), 0);
	expect_err(ws_obs_check(&o, abs, "a.txt", "v2", 2, &fx.e), "FS_STALE_VERSION",
	    "file \"a.txt\" changed since it was last read \xe2\x80\x94 re-read the file, then retry");
	expect_err(ws_obs_check(&o, abs, "a.txt", "v1 ", 3, &fx.e), "FS_STALE_VERSION", NULL);
	/* A write by the tools updates the record. */
	ws_obs_note(&o, abs, "v2", 2);
	ck_assert_int_eq(ws_obs_check(&o, abs, "a.txt", "v2", 2, &fx.e), 0);
	/* Seen absent: may still be created; if it appeared meanwhile, it is stale. */
	ws_obs_note(&o, "/w/b.txt", NULL, 0);
	ck_assert_int_eq(ws_obs_get(&o, "/w/b.txt")->absent, 1);
	ck_assert_int_eq(ws_obs_check(&o, "/w/b.txt", "b.txt", NULL, 0, &fx.e), 0);
	expect_err(ws_obs_check(&o, "/w/b.txt", "b.txt", "", 0, &fx.e), "FS_STALE_VERSION", NULL);
	ck_assert_ptr_null(ws_obs_get(&o, "/w/c.txt"));
	ws_obs_free(&o);
}
END_TEST

START_TEST(hash_tells_every_one_bit_change_and_length)
{
	unsigned char b[100], c[101];
	uint64_t h[200], base;
	size_t n = 0;

	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = (unsigned char)(i * 7);
	base = hash64(b, sizeof(b));
	memcpy(c + 1, b, sizeof(b));
	ck_assert(hash64(c + 1, sizeof(b)) == base);		/* alignment does not matter */
	for (size_t i = 0; i < sizeof(b); i++) {
		b[i] ^= 0x10;
		h[n++] = hash64(b, sizeof(b));
		b[i] ^= 0x10;
	}
	for (size_t len = 0; len < 100; len++)
		h[n++] = hash64(b, len);
	for (size_t i = 0; i < n; i++) {
		ck_assert(h[i] != base);
		for (size_t j = i + 1; j < n; j++)
			ck_assert_msg(h[i] != h[j], "%zu and %zu collide", i, j);
	}
	/* Zero bytes at the end still count. */
	ck_assert(hash64("a", 1) != hash64("a\0", 2));
}
END_TEST

START_TEST(diff_small_texts_are_whole)
{
	struct ws_diff d;

	ws_diff_make(&d, "a\nb\nc\n", 6, "a\nB\nc\n", 6);
	ck_assert_int_eq(d.partial, 0);
	ck_assert_str_eq(d.old_text, "a\nb\nc\n");
	ck_assert_str_eq(d.new_text, "a\nB\nc\n");
	ck_assert_uint_eq(d.nhunks, 1);
	ck_assert_uint_eq(d.hunks[0].old_line, 1);
	ck_assert_uint_eq(d.hunks[0].old_count, 3);
	ck_assert_uint_eq(d.hunks[0].new_count, 3);
	ws_diff_free(&d);
	ws_diff_make(&d, NULL, 0, "new\nfile\n", 9);	/* a new file: no old text */
	ck_assert_ptr_null(d.old_text);
	ck_assert_str_eq(d.new_text, "new\nfile\n");
	ck_assert_uint_eq(d.nhunks, 1);
	ck_assert_uint_eq(d.hunks[0].old_count, 0);
	ck_assert_uint_eq(d.hunks[0].new_count, 2);
	ws_diff_free(&d);
	ws_diff_make(&d, "x\xff\n", 3, "x\n", 2);		/* invalid old bytes shown as U+FFFD */
	ck_assert_str_eq(d.old_text, "x\xef\xbf\xbd\n");
	ws_diff_free(&d);
}
END_TEST

/* 20000 lines "line <i>\n" (about 250 KB with the padding, over 256 KiB). */
static void
big_text(struct buf *b, int change_at, int change_at2)
{
	b->len = 0;
	for (int i = 1; i <= 20000; i++) {
		if (i == change_at || i == change_at2)
			buf_printf(b, "CHANGED %d\n", i);
		else
			buf_printf(b, "line %d padding\n", i);
	}
}

START_TEST(diff_large_texts_keep_hunks_with_three_lines_of_context)
{
	struct ws_diff d;
	struct buf a, b, want;

	buf_init(&a);
	buf_init(&b);
	buf_init(&want);
	big_text(&a, 0, 0);
	big_text(&b, 5000, 9000);
	ck_assert_uint_gt(a.len, WS_DIFF_WHOLE_MAX);
	ws_diff_make(&d, a.data, a.len, b.data, b.len);
	ck_assert_int_eq(d.partial, 1);
	ck_assert_uint_eq(d.nhunks, 2);
	ck_assert_uint_eq(d.hunks[0].old_line, 4997);
	ck_assert_uint_eq(d.hunks[0].old_count, 7);
	ck_assert_uint_eq(d.hunks[0].new_line, 4997);
	ck_assert_uint_eq(d.hunks[1].old_line, 8997);
	buf_puts(&want, "\xe2\x80\xa6 4996 unchanged lines \xe2\x80\xa6\n");
	for (int i = 4997; i <= 5003; i++)
		buf_printf(&want, i == 5000 ? "CHANGED %d\n" : "line %d padding\n", i);
	buf_puts(&want, "\xe2\x80\xa6 3993 unchanged lines \xe2\x80\xa6\n");
	for (int i = 8997; i <= 9003; i++)
		buf_printf(&want, i == 9000 ? "CHANGED %d\n" : "line %d padding\n", i);
	buf_puts(&want, "\xe2\x80\xa6 10997 unchanged lines \xe2\x80\xa6\n");
	ck_assert_str_eq(d.new_text, want.data);
	ck_assert_ptr_nonnull(strstr(d.old_text, "\nline 5000 padding\nline 5001"));
	ws_diff_free(&d);
	/* Changes with six common lines between share one hunk; with seven they do not. */
	big_text(&b, 5000, 5007);
	ws_diff_make(&d, a.data, a.len, b.data, b.len);
	ck_assert_uint_eq(d.nhunks, 1);
	ck_assert_uint_eq(d.hunks[0].old_count, 14);
	ws_diff_free(&d);
	big_text(&b, 5000, 5008);
	ws_diff_make(&d, a.data, a.len, b.data, b.len);
	ck_assert_uint_eq(d.nhunks, 2);
	ws_diff_free(&d);
	/* Nothing changed: one gap line each. */
	ws_diff_make(&d, a.data, a.len, a.data, a.len);
	ck_assert_uint_eq(d.nhunks, 0);
	ck_assert_str_eq(d.old_text, "\xe2\x80\xa6 20000 unchanged lines \xe2\x80\xa6\n");
	ck_assert_str_eq(d.new_text, d.old_text);
	ws_diff_free(&d);
	buf_free(&a);
	buf_free(&b);
	buf_free(&want);
}
END_TEST

START_TEST(diff_inserts_deletes_and_gives_up_coarsely_beyond_its_budget)
{
	struct ws_diff d;
	struct buf a, b;

	buf_init(&a);
	buf_init(&b);
	big_text(&a, 0, 0);
	/* Delete line 100, insert a line after 15000. */
	for (int i = 1; i <= 20000; i++) {
		if (i != 100)
			buf_printf(&b, "line %d padding\n", i);
		if (i == 15000)
			buf_puts(&b, "inserted\n");
	}
	ws_diff_make(&d, a.data, a.len, b.data, b.len);
	ck_assert_uint_eq(d.nhunks, 2);
	ck_assert_uint_eq(d.hunks[0].old_line, 97);
	ck_assert_uint_eq(d.hunks[0].old_count, 7);
	ck_assert_uint_eq(d.hunks[0].new_count, 6);
	ck_assert_uint_eq(d.hunks[1].old_line, 14998);
	ck_assert_uint_eq(d.hunks[1].old_count, 6);
	ck_assert_uint_eq(d.hunks[1].new_line, 14997);
	ck_assert_uint_eq(d.hunks[1].new_count, 7);
	ws_diff_free(&d);
	/* Every other line changed: beyond the edit budget, one coarse hunk, still exact at the ends. */
	b.len = 0;
	for (int i = 1; i <= 20000; i++)
		buf_printf(&b, i % 2 && i > 10 && i < 19990 ? "other %d\n" : "line %d padding\n", i);
	ws_diff_make(&d, a.data, a.len, b.data, b.len);
	ck_assert_uint_eq(d.nhunks, 1);
	ck_assert_uint_eq(d.hunks[0].old_line, 8);
	ck_assert_uint_eq(d.hunks[0].old_count, 19989 - 11 + 1 + 6);
	ck_assert(strncmp(d.old_text, "\xe2\x80\xa6 7 unchanged lines \xe2\x80\xa6\nline 8 padding\n", 40) == 0);
	ws_diff_free(&d);
	buf_free(&a);
	buf_free(&b);
}
END_TEST

Suite *
workspace_suite(void)
{
	Suite *s = suite_create("workspace");
	TCase *tc = tcase_create("workspace");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, path_relative_paths_resolve_lexically_under_the_root);
	tcase_add_test(tc, path_dotdot_escapes_are_refused);
	tcase_add_test(tc, path_absolute_paths_inside_and_outside);
	tcase_add_test(tc, path_symlinks_inside_are_followed);
	tcase_add_test(tc, path_symlinks_leading_out_are_refused);
	tcase_add_test(tc, path_symlink_loops_are_an_io_error);
	tcase_add_test(tc, path_read_only_root_is_readable_never_writable);
	tcase_add_test(tc, path_additional_root_is_read_write_and_confined);
	tcase_add_test(tc, path_open_read_errors_fill_the_path_for_absence);
	tcase_add_test(tc, path_roots_init_resolves_and_fails_clearly);
	tcase_add_test(tc, path_directory_swapped_for_a_symlink_after_resolve_writes_nothing_outside);
	tcase_add_test(tc, write_is_atomic_keeps_the_mode_and_creates_parents);
	tcase_add_test(tc, write_through_a_symlink_inside_replaces_its_target);
	tcase_add_test(tc, write_refuses_bad_content_and_bad_targets);
	tcase_add_test(tc, write_that_fails_midway_leaves_the_old_file_whole);
	tcase_add_test(tc, load_reads_whole_files_within_a_limit);
	tcase_add_test(tc, read_numbers_lines_and_drops_carriage_returns);
	tcase_add_test(tc, read_offset_limit_and_the_footer);
	tcase_add_test(tc, read_offset_past_the_end_says_so);
	tcase_add_test(tc, read_cuts_long_lines_at_2000_characters);
	tcase_add_test(tc, read_shows_invalid_utf8_as_replacement_characters);
	tcase_add_test(tc, read_refuses_binary_files);
	tcase_add_test(tc, read_stops_before_256_kib_and_says_where_to_go_on);
	tcase_add_test(tc, edit_replaces_literally_and_reports_count_and_line);
	tcase_add_test(tc, edit_no_match_ambiguous_and_empty_old_string);
	tcase_add_test(tc, edit_in_a_crlf_file_retries_with_crlf);
	tcase_add_test(tc, edit_checks_size_and_utf8);
	tcase_add_test(tc, observation_rule_not_observed_stale_and_absent);
	tcase_add_test(tc, hash_tells_every_one_bit_change_and_length);
	tcase_add_test(tc, diff_small_texts_are_whole);
	tcase_add_test(tc, diff_large_texts_keep_hunks_with_three_lines_of_context);
	tcase_add_test(tc, diff_inserts_deletes_and_gives_up_coarsely_beyond_its_budget);
	suite_add_tcase(s, tc);
	return s;
}
