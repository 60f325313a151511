/*
 * glob and grep of workspace/ (docs/contract.md §16.1) against find and GNU grep on the same trees, in the
 * same run: grep over 100 MB of source-like files (a literal within 2x of `grep -rn`, a regex
 * within 5x of `grep -rnE`), glob of every *.c at any depth (the segments "**" and "*.c") over
 * 100,000 files (within 2x of `find -name`).
 * GNU grep prints every match and ours stops at 250, so the capped cases use patterns with fewer
 * matches than that (or none): both read every byte. One case lifts the cap (the raw API) for a
 * pattern on 2% of the lines. Peers run through system() with output to /dev/null (their fork
 * and exec, about 1 ms, count against them), in the C locale; medians of RUNS, alternating, on
 * a warm page cache. The trees are made under /dev/shm when it is writable, else /tmp.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "bench/util.h"
#include "workspace/glob.h"
#include "workspace/grep.h"

#define RUNS 5
#define GREP_BYTES (100L * 1000 * 1000)
#define GREP_FILES 8000
#define GLOB_FILES 100000

static unsigned long rng = 12345;

static unsigned
pick(unsigned n)
{
	rng = rng * 6364136223846793005ul + 1442695040888963407ul;
	return (unsigned)(rng >> 33) % n;
}

static const char *const words[] = {
	"buf", "len", "data", "cap", "node", "list", "item", "count", "next", "prev", "key", "val",
	"map", "err", "msg", "path", "name", "size", "flags", "state", "ctx", "loop", "task", "queue",
};
static const char *const types[] = { "int", "char *", "size_t", "struct buf *", "const char *", "void *", "long" };

/* One line of made-up C into b. */
static void
code_line(struct buf *b)
{
	const char *w1 = words[pick(24)], *w2 = words[pick(24)], *w3 = words[pick(24)];

	switch (pick(10)) {
	case 0: buf_printf(b, "\t%s %s_%s = %s_%s(%s, %u);\n", types[pick(7)], w1, w2, w3, w1, w2, pick(1000)); break;
	case 1: buf_printf(b, "\tif (%s->%s == NULL)\n\t\treturn -1;\n", w1, w2); break;
	case 2: buf_printf(b, "/* The %s of the %s, kept until %s is done. */\n", w1, w2, w3); break;
	case 3: buf_printf(b, "static %s\n%s_%s(struct %s *%s)\n{\n", types[pick(7)], w1, w2, w3, w1); break;
	case 4: buf_printf(b, "\tfor (size_t i = 0; i < %s->%s; i++)\n\t\t%s[i] = %s;\n", w1, w2, w3, w1); break;
	case 5: buf_printf(b, "\treturn %s_%s(%s);\n}\n\n", w1, w2, w3); break;
	case 6: buf_printf(b, "\t%s->%s += %s_len(%s);\n", w1, w2, w3, w1); break;
	case 7: buf_printf(b, "#include \"%s/%s.h\"\n", w1, w2); break;
	case 8: buf_printf(b, "\tlog_warn(\"%s: %%s: %s failed\", __func__, %s);\n", w1, w2, w3); break;
	default: buf_printf(b, "\t%s.%s = %s;\n", w1, w2, w3); break;
	}
}

static void
write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		exit(1);
	close(fd);
}

/* GREP_FILES files of about GREP_BYTES in all, in 40 x 10 directories; every 80th file holds
 * the marker line once. Returns the bytes written. */
static long
make_grep_tree(const char *dir)
{
	char path[1024];
	struct buf b;
	long total = 0;
	long per = GREP_BYTES / GREP_FILES;

	buf_init(&b);
	for (int i = 0; i < GREP_FILES; i++) {
		snprintf(path, sizeof(path), "%s/mod%02d", dir, i / 200);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/mod%02d/part%d", dir, i / 200, i / 20 % 10);
		mkdir(path, 0755);
		snprintf(path, sizeof(path), "%s/mod%02d/part%d/file%04d.%s", dir, i / 200, i / 20 % 10, i,
		    i % 5 ? "c" : "h");
		b.len = 0;
		while ((long)b.len < per) {
			code_line(&b);
			if (i % 80 == 0 && b.len > (size_t)per / 2 && b.len < (size_t)per / 2 + 60)
				buf_puts(&b, "static int acp_needle_marker(void);\n");
		}
		write_file(path, b.data, b.len);
		total += (long)b.len;
	}
	buf_free(&b);
	return total;
}

/* GLOB_FILES empty files in 100 x 10 directories, a fifth of them *.c. */
static void
make_glob_tree(const char *dir)
{
	static const char *const ext[] = { "c", "h", "py", "md", "txt" };
	char path[1024];

	for (int i = 0; i < GLOB_FILES; i++) {
		if (i % 100 == 0) {
			snprintf(path, sizeof(path), "%s/d%02d", dir, i / 1000);
			mkdir(path, 0755);
			snprintf(path, sizeof(path), "%s/d%02d/s%d", dir, i / 1000, i / 100 % 10);
			mkdir(path, 0755);
		}
		snprintf(path, sizeof(path), "%s/d%02d/s%d/f%05d.%s", dir, i / 1000, i / 100 % 10, i, ext[i % 5]);
		write_file(path, "", 0);
	}
}

static double
median(double *v)
{
	qsort(v, RUNS, sizeof(double), bench_cmp_double);
	return v[RUNS / 2];
}

static int
count_hit(void *arg, const struct ws_grep_hit *h)
{
	(void)h;
	++*(long *)arg;
	return 0;
}

/* What printing a hit costs: "path:n:line\n" into a buffer that is reset now and then. */
static int
format_hit(void *arg, const struct ws_grep_hit *h)
{
	struct buf *b = arg;

	if (b->len > (1 << 20))
		b->len = 0;
	buf_printf(b, "%s:%zu:", h->rel, h->line_no);
	buf_append(b, h->line, h->len);
	buf_append(b, "\n", 1);
	return 0;
}

/* The number of lines a shell command prints. */
static long
count_lines(const char *cmd)
{
	char full[1200], line[64];
	FILE *p;
	long n = -1;

	snprintf(full, sizeof(full), "%s | wc -l", cmd);
	p = popen(full, "r");
	if (p && fgets(line, sizeof(line), p))
		n = atol(line);
	if (p)
		pclose(p);
	return n;
}

struct grep_case {
	const char *name;	/* what it shows */
	const char *pattern;
	int regex;		/* the peer is grep -rnE */
	int raw;		/* ours uncapped, every hit formatted */
	double limit;		/* the target ratio */
};

static void
bench_grep(const char *dir, const struct grep_case *c)
{
	char cmd[1024];
	double ours[RUNS], peer[RUNS], t0;
	long hits = 0;
	struct err e;
	struct ws_grep_opts o = { dir, dir, c->pattern, NULL, NULL };

	snprintf(cmd, sizeof(cmd), "LC_ALL=C grep -rn%s -e '%s' %s", c->regex ? "E" : "", c->pattern, dir);
	long theirs = count_lines(cmd);
	err_clear(&e);
	if (ws_grep_each(&o, count_hit, &hits, &e) != 0) {
		printf("grep[%s]: FAILED: %s\n", c->name, e.msg);
		return;
	}
	strcat(cmd, " > /dev/null");
	for (int i = 0; i < RUNS; i++) {
		struct buf out;

		t0 = bench_now_ms();
		if (system(cmd) < 0)
			exit(1);
		peer[i] = bench_now_ms() - t0;
		buf_init(&out);
		err_clear(&e);
		t0 = bench_now_ms();
		if (c->raw)
			ws_grep_each(&o, format_hit, &out, &e);
		else
			ws_grep(&o, &out, &e);
		ours[i] = bench_now_ms() - t0;
		buf_free(&out);
	}
	double a = median(ours), p = median(peer);
	printf("grep[%s]: %.0f ms (median of %d; %ld matching lines, GNU grep %ld; %s)\n", c->name, a, RUNS, hits,
	    theirs, c->raw ? "uncapped: every hit formatted" : "the capped result text");
	printf("ratio[grep %s / grep -rn%s]: %.2fx the time (GNU grep %.0f ms; target <= %.0fx)\n", c->name,
	    c->regex ? "E" : "", a / p, p, c->limit);
}

/* ours: 0 newest first (stats every match), 1 deterministic (no stat); find runs in dir + sub. */
static void
bench_glob(const char *dir, const char *pattern, int deterministic, const char *sub, const char *find_args)
{
	char cmd[1024];
	double ours[RUNS], peer[RUNS], t0;
	struct err e;
	struct ws_glob_opts o = { dir, dir, pattern, deterministic, NULL };
	struct buf out;

	snprintf(cmd, sizeof(cmd), "LC_ALL=C find %s%s %s", dir, sub, find_args);
	long theirs = count_lines(cmd);
	strcat(cmd, " > /dev/null");
	for (int i = 0; i < RUNS; i++) {
		t0 = bench_now_ms();
		if (system(cmd) < 0)
			exit(1);
		peer[i] = bench_now_ms() - t0;
		buf_init(&out);
		err_clear(&e);
		t0 = bench_now_ms();
		if (ws_glob(&o, &out, &e) != 0) {
			printf("glob[%s]: FAILED: %s\n", pattern, e.msg);
			return;
		}
		ours[i] = bench_now_ms() - t0;
		if (i == RUNS - 1) {
			const char *last = strrchr(out.data, '\n');
			printf("glob[%s%s]: %.0f ms (median of %d; %s; find %ld paths)\n", pattern,
			    deterministic ? ", deterministic" : "", median(ours), RUNS, last ? last + 1 : out.data,
			    theirs);
		}
		buf_free(&out);
	}
	printf("ratio[glob %s%s / find%s %s]: %.2fx the time (find %.0f ms; target <= 2x)\n", pattern,
	    deterministic ? " deterministic" : "", sub, find_args, median(ours) / median(peer), median(peer));
}

int
main(void)
{
	/* tmpfs when there is one: making 100,000 files on a shared disk takes 30 s or more. */
	char dir[64], gdir[128], cmd[300];
	static const struct grep_case cases[] = {
		{ "literal, 100 matches", "acp_needle_marker", 0, 0, 2 },
		{ "literal, no match", "no_such_identifier", 0, 0, 2 },
		{ "regex with a literal run, 100 matches", "static int acp_[a-z]+_marker\\(", 1, 0, 5 },
		{ "regex, no match", "^zz[0-9]+qq$", 1, 0, 5 },
		{ "regex without a literal run, 100 matches", "(int|long) [a-z_]+_marker", 1, 0, 5 },
		{ "regex without a literal run, no match", "[0-9]{5}", 1, 0, 5 },
		{ "literal on 2% of lines, uncapped", "queue_", 0, 1, 2 },
	};
	double t0;

	snprintf(dir, sizeof(dir), "%s/acp-bench-search-XXXXXX", access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(gdir, sizeof(gdir), "%s/grep", dir);
	mkdir(gdir, 0755);
	t0 = bench_now_ms();
	long bytes = make_grep_tree(gdir);
	printf("grep tree: %ld bytes in %d files under %s (made in %.1f s)\n", bytes, GREP_FILES, dir,
	    (bench_now_ms() - t0) / 1e3);
	snprintf(cmd, sizeof(cmd), "grep -rn x %s > /dev/null", gdir);	/* warm the page cache */
	if (system(cmd) < 0)
		return 1;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bench_grep(gdir, &cases[i]);
	snprintf(gdir, sizeof(gdir), "%s/glob", dir);
	mkdir(gdir, 0755);
	t0 = bench_now_ms();
	make_glob_tree(gdir);
	printf("glob tree: %d files (made in %.1f s)\n", GLOB_FILES, (bench_now_ms() - t0) / 1e3);
	bench_glob(gdir, "**/*.c", 0, "", "-name '*.c'");
	bench_glob(gdir, "**/*.c", 1, "", "-name '*.c'");
	/* A pattern that names a directory: ours enters only that one, find is started in it. */
	bench_glob(gdir, "d07/**/*.py", 0, "/d07", "-name '*.py'");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
