/* workspace/glob and workspace/grep (docs/contract.md §16.1): semantics, caps, texts, errors, cancellation. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/xmalloc.h"
#include "tests/helpers.h"
#include "workspace/glob.h"
#include "workspace/grep.h"

/* The TCase's temp root (an unchecked fixture: removed even after a failure); a test's tree
 * is a fresh directory under it. */
static char search_tmp[64];

static void
search_setup(void)
{
	test_mkdtemp(search_tmp, sizeof(search_tmp));
}

static void
search_teardown(void)
{
	test_rmtree(search_tmp);
}

/* A fresh tree directory into dir (size >= 128). */
static void
tree(char *dir, size_t size)
{
	snprintf(dir, size, "%s/tXXXXXX", search_tmp);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* Writes dir/rel (parents made) with data. */
static void
put(const char *dir, const char *rel, const char *data)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (char *s = path + strlen(dir) + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		ck_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
		*s = '/';
	}
	test_write_file(path, data, strlen(data));
}

static void
link_at(const char *dir, const char *target, const char *rel)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	ck_assert_int_eq(symlink(target, path), 0);
}

static void
set_mtime(const char *dir, const char *rel, time_t t)
{
	char path[4096];
	struct timespec ts[2] = { { t, 0 }, { t, 0 } };

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* The glob result text (owned); NULL on an error, then e holds it. */
static char *
glob_text(const char *root, const char *dir, const char *pattern, int deterministic, struct err *e)
{
	struct ws_glob_opts o = { root, dir, pattern, deterministic, NULL };
	struct buf out;

	buf_init(&out);
	err_clear(e);
	if (ws_glob(&o, &out, e) != 0) {
		buf_free(&out);
		return NULL;
	}
	return buf_steal(&out);
}

static char *
grep_text(const char *root, const char *path, const char *pattern, const char *include, struct err *e)
{
	struct ws_grep_opts o = { root, path, pattern, include, NULL };
	struct buf out;

	buf_init(&out);
	err_clear(e);
	if (ws_grep(&o, &out, e) != 0) {
		buf_free(&out);
		return NULL;
	}
	return buf_steal(&out);
}

/* Asserts the deterministic glob text of pattern under dir. */
static void
glob_is(const char *dir, const char *pattern, const char *want)
{
	struct err e;
	char *got = glob_text(dir, dir, pattern, 1, &e);

	ck_assert_msg(got != NULL, "%s: %s", pattern, e.msg);
	ck_assert_msg(strcmp(got, want) == 0, "glob %s:\n%s\nwanted:\n%s", pattern, got, want);
	free(got);
}

static void
grep_is(const char *dir, const char *pattern, const char *include, const char *want)
{
	struct err e;
	char *got = grep_text(dir, dir, pattern, include, &e);

	ck_assert_msg(got != NULL, "%s: %s", pattern, e.msg);
	ck_assert_msg(strcmp(got, want) == 0, "grep %s:\n%s\nwanted:\n%s", pattern, got, want);
	free(got);
}

START_TEST(glob_double_star_matches_any_number_of_directories)
{
	char d[128];

	tree(d, sizeof(d));
	put(d, "a.c", "");
	put(d, "x/a.c", "");
	put(d, "x/y/a.c", "");
	put(d, "x/y/b.h", "");
	put(d, "z/x/a.c", "");
	glob_is(d, "**/*.c", "a.c\nx/a.c\nx/y/a.c\nz/x/a.c");
	glob_is(d, "x/**/a.c", "x/a.c\nx/y/a.c");		/* zero directories included */
	glob_is(d, "**/x/*.c", "x/a.c\nz/x/a.c");
	glob_is(d, "x/**", "x/a.c\nx/y/a.c\nx/y/b.h");		/* a last ** takes every file below */
	glob_is(d, "*/a.c", "x/a.c");				/* one level exactly */
	glob_is(d, "x/*", "x/a.c");				/* files only: not x/y */
	glob_is(d, "**/**/b.h", "x/y/b.h");
	glob_is(d, "./x//y/*.h", "x/y/b.h");			/* "." and empty segments dropped */
	glob_is(d, "x/[ab].c", "x/a.c");
	glob_is(d, "x/\\a.c", "x/a.c");				/* fnmatch escapes */
}
END_TEST

START_TEST(glob_without_slash_matches_basenames_at_any_depth)
{
	char d[128];

	tree(d, sizeof(d));
	put(d, "a.c", "");
	put(d, "x/a.c", "");
	put(d, "x/y/a.c", "");
	put(d, "y/.hidden.c", "");
	put(d, "d.c/inner.txt", "");		/* a directory whose name matches is not listed */
	glob_is(d, "a.c", "a.c\nx/a.c\nx/y/a.c");
	glob_is(d, "*.c", "a.c\nx/a.c\nx/y/a.c\ny/.hidden.c");	/* '*' takes a leading dot (find -name) */
	glob_is(d, "y", "no files match y");
	glob_is(d, "*.txt", "d.c/inner.txt");
}
END_TEST

START_TEST(glob_and_grep_skip_vcs_entries)
{
	char d[128];

	tree(d, sizeof(d));
	put(d, "keep.c", "needle\n");
	put(d, ".git/objects/a.c", "needle\n");
	put(d, "sub/.hg/a.c", "needle\n");
	put(d, "sub/.svn/a.c", "needle\n");
	put(d, ".bzr/a.c", "needle\n");
	put(d, "deep/er/.jj/a.c", "needle\n");
	put(d, "wt/.git", "gitdir: needle\n");		/* a worktree's .git is a file */
	put(d, "sub/.gitignore", "needle\n");		/* only the exact names are VCS ones */
	glob_is(d, "**", "keep.c\nsub/.gitignore");
	grep_is(d, "needle", NULL, "keep.c\n  1: needle\nsub/.gitignore\n  1: needle");
	/* A VCS directory named as the start is searched: the caller asked for it. */
	char git[160];
	struct err e;
	snprintf(git, sizeof(git), "%s/.git", d);
	char *got = grep_text(d, git, "needle", NULL, &e);
	ck_assert_str_eq(got, ".git/objects/a.c\n  1: needle");
	free(got);
}
END_TEST

START_TEST(symlinks_are_never_followed)
{
	char d[128], outside[160];

	tree(d, sizeof(d));
	snprintf(outside, sizeof(outside), "%s-outside", d);
	put(d, "real/a.c", "needle\n");
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	put(outside, "secret.c", "needle\n");
	link_at(d, "real/a.c", "file-link.c");		/* to a file inside */
	link_at(d, "real", "dir-link");			/* to a directory inside */
	link_at(d, outside, "out-link");		/* to a directory outside */
	link_at(d, "nowhere.c", "dangling.c");
	glob_is(d, "**/*.c", "real/a.c");
	grep_is(d, "needle", NULL, "real/a.c\n  1: needle");
	/* A start the caller resolved and named is followed, even through a link. */
	char start[200];
	struct err e;
	snprintf(start, sizeof(start), "%s/file-link.c", d);
	char *got = grep_text(d, start, "needle", NULL, &e);
	ck_assert_str_eq(got, "file-link.c\n  1: needle");
	free(got);
	test_rmtree(outside);
}
END_TEST

START_TEST(glob_caps_at_100_with_a_cut_line)
{
	char d[128], name[256];
	struct err e;

	tree(d, sizeof(d));
	for (int i = 0; i < 150; i++) {
		snprintf(name, sizeof(name), "f%03d.c", i);
		put(d, name, "");
	}
	char *got = glob_text(d, d, "*.c", 1, &e);
	size_t lines = 0;
	for (char *s = got; (s = strchr(s, '\n')) != NULL; s++)
		lines++;
	ck_assert_uint_eq(lines, 100);		/* 100 paths, then the cut line */
	ck_assert_ptr_nonnull(strstr(got, "f099.c\n[100 of 150 files shown; narrow the pattern or path]"));
	ck_assert_ptr_null(strstr(got, "f100.c"));
	ck_assert(strncmp(got, "f000.c\nf001.c\n", 14) == 0);
	free(got);
	/* Exactly 100: no cut line. */
	for (int i = 100; i < 150; i++) {
		snprintf(name, sizeof(name), "%s/f%03d.c", d, i);
		ck_assert_int_eq(unlink(name), 0);
	}
	got = glob_text(d, d, "*.c", 1, &e);
	ck_assert_ptr_null(strchr(got, '['));
	ck_assert(strlen(got) == 100 * 7 - 1);
	free(got);
}
END_TEST

START_TEST(glob_newest_first_ties_by_path_or_by_path_when_deterministic)
{
	char d[128];
	struct err e;

	tree(d, sizeof(d));
	put(d, "old.c", "");
	put(d, "b/new.c", "");
	put(d, "tie-b.c", "");
	put(d, "tie-a.c", "");
	set_mtime(d, "old.c", 1000000);
	set_mtime(d, "b/new.c", 3000000);
	set_mtime(d, "tie-b.c", 2000000);
	set_mtime(d, "tie-a.c", 2000000);
	char *got = glob_text(d, d, "*.c", 0, &e);
	ck_assert_str_eq(got, "b/new.c\ntie-a.c\ntie-b.c\nold.c");
	free(got);
	got = glob_text(d, d, "*.c", 1, &e);
	ck_assert_str_eq(got, "b/new.c\nold.c\ntie-a.c\ntie-b.c");
	free(got);
}
END_TEST

START_TEST(paths_show_relative_to_the_root_or_absolute_outside_it)
{
	char d[128], sub[160], want[300];
	struct err e;

	tree(d, sizeof(d));
	put(d, "src/in/a.c", "x\n");
	snprintf(sub, sizeof(sub), "%s/src", d);
	char *got = glob_text(d, sub, "*.c", 1, &e);
	ck_assert_str_eq(got, "src/in/a.c");
	free(got);
	got = glob_text(sub, d, "*.c", 1, &e);		/* d lies outside the root sub */
	snprintf(want, sizeof(want), "%s/src/in/a.c", d);
	ck_assert_str_eq(got, want);
	free(got);
	/* A root that only shares a prefix ("<d>/sr") is not the parent. */
	snprintf(sub, sizeof(sub), "%s/sr", d);
	got = glob_text(sub, d, "*.c", 1, &e);
	ck_assert_str_eq(got, want);
	free(got);
	got = glob_text("/", d, "*.c", 1, &e);
	ck_assert_str_eq(got, want + 1);
	free(got);
}
END_TEST

START_TEST(glob_refuses_bad_patterns_and_paths)
{
	char d[128], file[160], big[300] = "";
	struct err e;

	tree(d, sizeof(d));
	put(d, "a.c", "");
	ck_assert_ptr_null(glob_text(d, d, "", 1, &e));
	ck_assert_int_eq(e.code, ERR_INVALID_ARGUMENT);
	ck_assert_str_eq(e.msg, "glob pattern is empty");
	ck_assert_ptr_null(glob_text(d, d, "/etc/*.c", 1, &e));
	ck_assert_str_eq(e.msg, "glob pattern \"/etc/*.c\" is absolute; give it relative to path");
	ck_assert_ptr_null(glob_text(d, d, "../*.c", 1, &e));
	ck_assert_str_eq(e.msg, "glob pattern \"../*.c\" goes up with \"..\"; search another path instead");
	ck_assert_ptr_null(glob_text(d, d, "./", 1, &e));
	ck_assert_str_eq(e.msg, "glob pattern \"./\" names no file");
	for (int i = 0; i < 65; i++)
		strcat(big, "a/");
	ck_assert_ptr_null(glob_text(d, d, big, 1, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "has more than 64 segments"));
	snprintf(file, sizeof(file), "%s/a.c", d);
	ck_assert_ptr_null(glob_text(d, file, "*", 1, &e));
	ck_assert_int_eq(e.code, ERR_INVALID_ARGUMENT);
	ck_assert_str_eq(e.msg, "path \"a.c\" is not a directory");
	snprintf(file, sizeof(file), "%s/gone", d);
	ck_assert_ptr_null(glob_text(d, file, "*", 1, &e));
	ck_assert_int_eq(e.code, ERR_FS_NOT_FOUND);
	ck_assert_str_eq(e.msg, "path \"gone\" does not exist");
	glob_is(d, "*.h", "no files match *.h");
}
END_TEST

START_TEST(a_start_that_cannot_be_searched_is_refused)
{
	char d[128], path[200];
	struct err e;

	tree(d, sizeof(d));
	put(d, "a.c", "x\n");
	link_at(d, "loop", "loop");
	snprintf(path, sizeof(path), "%s/loop", d);
	ck_assert_ptr_null(grep_text(d, path, "x", NULL, &e));
	ck_assert_int_eq(e.code, ERR_INVALID_ARGUMENT);
	ck_assert_str_eq(e.msg, "cannot search \"loop\": Too many levels of symbolic links");
	snprintf(path, sizeof(path), "%s/fifo", d);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	ck_assert_ptr_null(grep_text(d, path, "x", NULL, &e));
	ck_assert_str_eq(e.msg, "path \"fifo\" is not a file or a directory");
	ck_assert_ptr_null(glob_text(d, path, "x", 1, &e));
	ck_assert_str_eq(e.msg, "path \"fifo\" is not a directory");
	/* A directory that cannot be opened (root opens any: then only the search is checked). */
	snprintf(path, sizeof(path), "%s/closed", d);
	put(d, "closed/b.c", "x\n");
	ck_assert_int_eq(chmod(path, 0), 0);
	char *got = glob_text(d, path, "*.c", 1, &e);
	if (geteuid() != 0) {
		ck_assert_ptr_null(got);
		ck_assert_str_eq(e.msg, "cannot search \"closed\": Permission denied");
	} else {
		ck_assert_str_eq(got, "closed/b.c");
	}
	free(got);
	ck_assert_int_eq(chmod(path, 0755), 0);
}
END_TEST

START_TEST(grep_groups_lines_by_file_with_numbers)
{
	char d[128];

	tree(d, sizeof(d));
	put(d, "b.c", "int x;\nint main(void)\n{\n\treturn x; /* main */\n}\n");
	put(d, "a/z.h", "int main(void);");		/* no newline at the end */
	put(d, "a/none.c", "nothing here\n");
	grep_is(d, "main", NULL, "a/z.h\n  1: int main(void);\nb.c\n  2: int main(void)\n  4: \treturn x; /* main */");
	grep_is(d, "^int ", NULL, "a/z.h\n  1: int main(void);\nb.c\n  1: int x;\n  2: int main(void)");
	grep_is(d, "xyz", NULL, "no matches for xyz");
	grep_is(d, "^$", NULL, "no matches for ^$");
	char file[160];
	struct err e;
	snprintf(file, sizeof(file), "%s/b.c", d);
	char *got = grep_text(d, file, "^[{}]$", NULL, &e);	/* a file as path */
	ck_assert_str_eq(got, "b.c\n  3: {\n  5: }");
	free(got);
	snprintf(file, sizeof(file), "%s/missing", d);
	ck_assert_ptr_null(grep_text(d, file, "x", NULL, &e));
	ck_assert_int_eq(e.code, ERR_FS_NOT_FOUND);
}
END_TEST

START_TEST(grep_caps_at_250_lines_with_a_cut_line)
{
	char d[128], name[256];
	struct buf b;
	struct err e;

	tree(d, sizeof(d));
	buf_init(&b);
	for (int i = 0; i < 100; i++)
		buf_puts(&b, "hit\n");
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "f%d.txt", i);
		put(d, name, b.data);
	}
	buf_free(&b);
	char *got = grep_text(d, d, "hit", NULL, &e);
	size_t hits = 0;
	for (char *s = got; (s = strstr(s, ": hit")) != NULL; s++)
		hits++;
	ck_assert_uint_eq(hits, 250);
	ck_assert_ptr_nonnull(strstr(got, "f2.txt\n  1: hit\n"));
	const char *tail = "  50: hit\n[cut at 250 matching lines; narrow the pattern, path or include]";
	ck_assert_str_eq(got + strlen(got) - strlen(tail), tail);
	free(got);
	/* Exactly 250: no cut line. */
	snprintf(name, sizeof(name), "%s/f2.txt", d);
	test_write_file(name, "hit\n", 4);
	for (int i = 0; i < 49; i++) {
		int fd = open(name, O_WRONLY | O_APPEND);
		ck_assert_int_eq(write(fd, "hit\n", 4), 4);
		close(fd);
	}
	got = grep_text(d, d, "hit", NULL, &e);
	ck_assert_ptr_null(strchr(got, '['));
	ck_assert_str_eq(got + strlen(got) - 9, "  50: hit");
	free(got);
}
END_TEST

START_TEST(grep_include_is_one_basename_glob)
{
	char d[128], file[160];
	struct err e;

	tree(d, sizeof(d));
	put(d, "a.c", "x\n");
	put(d, "s/b.c", "x\n");
	put(d, "s/b.h", "x\n");
	put(d, "c.cc", "x\n");
	grep_is(d, "x", "*.c", "a.c\n  1: x\ns/b.c\n  1: x");
	grep_is(d, "x", "*.[ch]", "a.c\n  1: x\ns/b.c\n  1: x\ns/b.h\n  1: x");
	grep_is(d, "x", "*.py", "no matches for x");
	snprintf(file, sizeof(file), "%s/s/b.h", d);
	char *got = grep_text(d, file, "x", "*.c", &e);		/* a file as path: include applies */
	ck_assert_str_eq(got, "no matches for x");
	free(got);
	ck_assert_ptr_null(grep_text(d, d, "x", "s/*.c", &e));
	ck_assert_int_eq(e.code, ERR_INVALID_ARGUMENT);
	ck_assert_str_eq(e.msg, "include \"s/*.c\" is a file-name glob, without \"/\"; give the directory as path");
}
END_TEST

START_TEST(grep_skips_binary_files)
{
	char d[128], path[160];
	struct buf b;

	tree(d, sizeof(d));
	snprintf(path, sizeof(path), "%s/early.bin", d);
	test_write_file(path, "needle\0rest\nneedle\n", 19);
	/* A NUL past the first 8 KiB does not make a file binary. */
	buf_init(&b);
	buf_puts(&b, "needle\n");
	while (b.len < 8192)
		buf_puts(&b, "filler line\n");
	buf_append(&b, "\0\nneedle\n", 9);
	snprintf(path, sizeof(path), "%s/late.txt", d);
	test_write_file(path, b.data, b.len);
	size_t late_line = 2;
	for (size_t i = 7; i < b.len - 9; i++)
		late_line += b.data[i] == '\n';
	buf_free(&b);
	char want[128];
	snprintf(want, sizeof(want), "late.txt\n  1: needle\n  %zu: needle", late_line + 1);
	grep_is(d, "needle", NULL, want);
	grep_is(d, "ne+dle", NULL, want);
}
END_TEST

/* A hit list as text: "file:line:so-eo" per hit (the reference's and ours compare equal). */
static int
hit_note(void *arg, const struct ws_grep_hit *h)
{
	buf_printf(arg, "%s:%zu\n", h->rel, h->line_no);
	return 0;
}

/* What grep -E gives: every line regexec'd alone (as a NUL-terminated string). */
static void
reference_grep(const char *rel, const char *text, size_t len, const char *pattern, struct buf *out)
{
	regex_t re;
	size_t line_no = 1;

	ck_assert_int_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE | REG_NOSUB), 0);
	for (size_t at = 0; at < len; line_no++) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - text) : len;
		char *line = xstrndup(text + at, end - at);

		if (regexec(&re, line, 0, NULL, 0) == 0)
			buf_printf(out, "%s:%zu\n", rel, line_no);
		free(line);
		at = end + 1;
	}
	regfree(&re);
}

START_TEST(grep_literal_must_and_regex_paths_equal_line_by_line_regexec)
{
	/* Every way of searching (a literal by memmem, a regex's literal run then regexec per
	 * line, regexec over the buffer) gives what regexec of each line alone gives, also in a
	 * file longer than the read buffer and with a line longer than it. */
	static const char *const patterns[] = {
		"foo", "fo[o]", "(foo)", "o f", "^foo", "foo$", "^$", "x*", "", "a+b", "ab?c", "ab*c",
		"a{2}b", "(ab)+c", "q\\.c", "[[:digit:]]+z", "\\<foo\\>", "foo\\b", "z.z", "f(o|0)o",
		"a\\+b", "\\(x\\)", "[]a]b", "[^a-z ]foo", "o\\s+b", "end\\'", "b\\Bc", "(c|z)\\'",
		"\\`(f|a)", "[[:space:]]", "(^|z)a", "(a|^)$", "\\W\\w",
	};
	static const char *const words[] = {
		"foo", "fo", "oo", "bar", "a", "aab", "ab", "abc", "ac", "abbc", "q.c", "qxc", "12z",
		"z", "zz", "zaz", "f0o", "ab+b", "a+b", "(x)", "]b", "Xfoo", "ababc", "b", "c", "bc",
		"end", "", "\t", "o", "foo_bar",
	};
	char d[128], path[160];
	struct buf text, ours, ref;
	unsigned seed = 7;
	struct err e;

	tree(d, sizeof(d));
	buf_init(&text);
	while (text.len < 700 * 1024) {
		seed = seed * 1103515245u + 12345u;
		unsigned r = seed >> 8;
		if (r % 9 == 0)
			buf_append(&text, "\n", 1);
		else if (r % 53 == 0)
			buf_append(&text, "\r\n", 2);
		buf_puts(&text, words[(r >> 4) % (sizeof(words) / sizeof(words[0]))]);
		if (r % 3)
			buf_append(&text, " ", 1);
		if (text.len > 300 * 1024 && text.len < 301 * 1024)	/* one line over 256 KiB */
			while (text.len < 600 * 1024)
				buf_puts(&text, "a long line without newline ");
	}
	snprintf(path, sizeof(path), "%s/big.txt", d);
	test_write_file(path, text.data, text.len);
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		struct ws_grep_opts o = { d, d, patterns[i], NULL, NULL };

		buf_init(&ours);
		buf_init(&ref);
		err_clear(&e);
		ck_assert_msg(ws_grep_each(&o, hit_note, &ours, &e) == 0, "%s: %s", patterns[i], e.msg);
		reference_grep("big.txt", text.data, text.len, patterns[i], &ref);
		ck_assert_msg(ref.len > 0, "pattern %s matches nothing: a weak case", patterns[i]);
		ck_assert_msg(ours.len == ref.len && memcmp(ours.data, ref.data, ref.len) == 0,
		    "pattern %s: %zu bytes of hits, reference %zu", patterns[i], ours.len, ref.len);
		buf_free(&ours);
		buf_free(&ref);
	}
	buf_free(&text);
}
END_TEST

START_TEST(grep_reads_a_brace_that_opens_no_interval_as_literal)
{
	char d[128];

	tree(d, sizeof(d));
	put(d, "a.c", "struct foo {\n{\naa{b}\nxx\n{2}\n");
	grep_is(d, "struct foo {", NULL, "a.c\n  1: struct foo {");
	grep_is(d, "^{$", NULL, "a.c\n  2: {");
	grep_is(d, "a{b}", NULL, "a.c\n  3: aa{b}");
	grep_is(d, "x{2}", NULL, "a.c\n  4: xx");		/* an interval stays one */
	grep_is(d, "^{2}", NULL, "a.c\n  5: {2}");		/* nothing before it: literal */
	grep_is(d, "[{]b", NULL, "a.c\n  3: aa{b}");
}
END_TEST

START_TEST(grep_refuses_invalid_regex_and_newline)
{
	char d[128];
	struct err e;

	tree(d, sizeof(d));
	put(d, "a.c", "x\n");
	ck_assert_ptr_null(grep_text(d, d, "a(b", NULL, &e));
	ck_assert_int_eq(e.code, ERR_INVALID_ARGUMENT);
	ck_assert_str_eq(e.msg, "invalid regular expression \"a(b\": Unmatched ( or \\(");
	ck_assert_ptr_null(grep_text(d, d, "[z-a]", NULL, &e));
	ck_assert_str_eq(e.msg, "invalid regular expression \"[z-a]\": Invalid range end");
	ck_assert_ptr_null(grep_text(d, d, "a{(", NULL, &e));	/* the brace is not all that is wrong */
	ck_assert_str_eq(e.msg, "invalid regular expression \"a{(\": Unmatched \\{");
	ck_assert_ptr_null(grep_text(d, d, "a\nb", NULL, &e));
	ck_assert_int_eq(e.code, ERR_INVALID_ARGUMENT);
	ck_assert_str_eq(e.msg, "pattern must not contain a newline (grep matches one line at a time)");
}
END_TEST

START_TEST(grep_cuts_long_lines_around_the_match)
{
	char d[128];
	struct buf b;
	struct err e;

	tree(d, sizeof(d));
	buf_init(&b);
	buf_puts(&b, "head ");
	while (b.len < 5000)
		buf_puts(&b, "-");
	buf_puts(&b, " tail\nshort\xff line\r\n");
	put(d, "long.txt", b.data);
	/* A match in the first 2000 bytes: the start shows. */
	char *got = grep_text(d, d, "head", NULL, &e);
	ck_assert_uint_eq(strlen(got), strlen("long.txt\n  1: ") + 2000 + strlen(" [\xe2\x80\xa6 3005 bytes]"));
	const char *end = "--- [\xe2\x80\xa6 3005 bytes]";
	ck_assert_str_eq(got + strlen(got) - strlen(end), end);
	free(got);
	/* A match further on: 100 bytes before it, then the rest of 2000. */
	got = grep_text(d, d, "tail", NULL, &e);
	ck_assert_ptr_nonnull(strstr(got, "  1: [\xe2\x80\xa6 4901 bytes] ---"));
	ck_assert_str_eq(got + strlen(got) - 5, " tail");
	free(got);
	/* A CR before the newline is dropped, invalid UTF-8 shows as U+FFFD. */
	got = grep_text(d, d, "short", NULL, &e);
	ck_assert_str_eq(got, "long.txt\n  2: short\xef\xbf\xbd line");
	free(got);
	buf_free(&b);
}
END_TEST

START_TEST(names_with_spaces_utf8_and_newlines)
{
	char d[128];

	tree(d, sizeof(d));
	put(d, "dir with space/caf\xc3\xa9.c", "x\n");
	put(d, "\xe6\x97\xa5\xe6\x9c\xac/a b.c", "x\n");
	put(d, "new\nline.c", "x\n");
	put(d, "bad\xff.c", "x\n");
	glob_is(d, "*.c", "bad\xef\xbf\xbd.c\ndir with space/caf\xc3\xa9.c\nnew\\nline.c\n\xe6\x97\xa5\xe6\x9c\xac/a b.c");
	glob_is(d, "dir with space/*\xc3\xa9.c", "dir with space/caf\xc3\xa9.c");
	grep_is(d, "x", NULL, "bad\xef\xbf\xbd.c\n  1: x\ndir with space/caf\xc3\xa9.c\n  1: x\nnew\\nline.c\n  1: x\n"
	    "\xe6\x97\xa5\xe6\x9c\xac/a b.c\n  1: x");
}
END_TEST

START_TEST(deep_trees_hold_few_fds)
{
	char d[128], deep[512] = "", want[2048];

	tree(d, sizeof(d));
	for (int i = 0; i < WS_WALK_FDS + 8; i++)
		strcat(deep, "d/");
	/* Past WS_WALK_FDS levels a directory is reopened after each subdirectory: z.c needs it. */
	char rel[600];
	snprintf(rel, sizeof(rel), "%sa.c", deep);
	put(d, rel, "needle\n");
	snprintf(rel, sizeof(rel), "%sm/x.c", deep);
	put(d, rel, "needle\n");
	snprintf(rel, sizeof(rel), "%sz.c", deep);
	put(d, rel, "needle\n");
	put(d, "top.c", "needle\n");
	int before = 0, after = 0;
	DIR *fds = opendir("/proc/self/fd");
	while (readdir(fds))
		before++;
	closedir(fds);
	snprintf(want, sizeof(want), "%sa.c\n%sm/x.c\n%sz.c\ntop.c", deep, deep, deep);
	glob_is(d, "**/*.c", want);
	snprintf(want, sizeof(want), "%sa.c\n  1: needle\n%sm/x.c\n  1: needle\n%sz.c\n  1: needle\ntop.c\n  1: needle",
	    deep, deep, deep);
	grep_is(d, "needle", NULL, want);
	fds = opendir("/proc/self/fd");
	while (readdir(fds))
		after++;
	closedir(fds);
	ck_assert_int_eq(before, after);
}
END_TEST

/* Raises the flag at the first callback: the search must stop with CANCELLED. */
static int
cancel_at_first(void *arg, const struct ws_walk_file *f)
{
	(void)f;
	atomic_store((atomic_int *)arg, 1);
	return 0;
}

static int
cancel_at_first_hit(void *arg, const struct ws_grep_hit *h)
{
	(void)h;
	atomic_store((atomic_int *)arg, 1);
	return 0;
}

START_TEST(cancellation_stops_between_files)
{
	char d[128], name[32];
	atomic_int flag = 0;
	struct err e;

	tree(d, sizeof(d));
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "f%d.c", i);
		put(d, name, "x\n");
	}
	struct ws_glob_opts go = { d, d, "*.c", 1, &flag };
	struct ws_grep_opts ro = { d, d, "x", NULL, &flag };
	err_clear(&e);
	ck_assert_int_eq(ws_glob_each(&go, cancel_at_first, &flag, &e), -1);
	ck_assert_int_eq(e.code, ERR_CANCELLED);
	atomic_store(&flag, 0);
	err_clear(&e);
	ck_assert_int_eq(ws_grep_each(&ro, cancel_at_first_hit, &flag, &e), -1);
	ck_assert_int_eq(e.code, ERR_CANCELLED);
	/* Raised before the call: the rendered forms fail too, leaving out untouched. */
	struct buf out;
	buf_init(&out);
	err_clear(&e);
	ck_assert_int_eq(ws_glob(&go, &out, &e), -1);
	ck_assert_int_eq(e.code, ERR_CANCELLED);
	err_clear(&e);
	ck_assert_int_eq(ws_grep(&ro, &out, &e), -1);
	ck_assert_int_eq(e.code, ERR_CANCELLED);
	ck_assert_uint_eq(out.len, 0);
	buf_free(&out);
}
END_TEST

Suite *
search_suite(void)
{
	Suite *s = suite_create("search");
	TCase *tc = tcase_create("search");

	tcase_add_unchecked_fixture(tc, search_setup, search_teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, glob_double_star_matches_any_number_of_directories);
	tcase_add_test(tc, glob_without_slash_matches_basenames_at_any_depth);
	tcase_add_test(tc, glob_and_grep_skip_vcs_entries);
	tcase_add_test(tc, symlinks_are_never_followed);
	tcase_add_test(tc, glob_caps_at_100_with_a_cut_line);
	tcase_add_test(tc, glob_newest_first_ties_by_path_or_by_path_when_deterministic);
	tcase_add_test(tc, paths_show_relative_to_the_root_or_absolute_outside_it);
	tcase_add_test(tc, glob_refuses_bad_patterns_and_paths);
	tcase_add_test(tc, a_start_that_cannot_be_searched_is_refused);
	tcase_add_test(tc, grep_groups_lines_by_file_with_numbers);
	tcase_add_test(tc, grep_caps_at_250_lines_with_a_cut_line);
	tcase_add_test(tc, grep_include_is_one_basename_glob);
	tcase_add_test(tc, grep_skips_binary_files);
	tcase_add_test(tc, grep_literal_must_and_regex_paths_equal_line_by_line_regexec);
	tcase_add_test(tc, grep_reads_a_brace_that_opens_no_interval_as_literal);
	tcase_add_test(tc, grep_refuses_invalid_regex_and_newline);
	tcase_add_test(tc, grep_cuts_long_lines_around_the_match);
	tcase_add_test(tc, names_with_spaces_utf8_and_newlines);
	tcase_add_test(tc, deep_trees_hold_few_fds);
	tcase_add_test(tc, cancellation_stops_between_files);
	suite_add_tcase(s, tc);
	return s;
}
