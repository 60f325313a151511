/*
 * Hostile input to grep: a line with no end (bounded memory, a cancel between reads), a file that
 * keeps growing, and a regex that backtracks for ever (the search process is killed on cancel);
 * base/isolate underneath. No test waits for a time: each waits for the event (a hit, an
 * inotify read of the file, a join), and the TCase timeout is only the failure bound.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/isolate.h"
#include "base/xmalloc.h"
#include "tests/helpers.h"
#include "tools/ws_search.h"
#include "workspace/grep.h"

#define BIG ((size_t)64 * 1024 * 1024)	/* the line with no end: 64 times WS_GREP_LINE_CAP */
#define CATASTROPHIC "^(a*)(a*)(a*)\\3\\2\\1$"

/* Per test (a checked fixture: each test runs in its own fork). */
static struct {
	char dir[64], path[256];
	atomic_int cancel;
	size_t hits, clipped, last_line, last_len;
	int grow_fd;
	size_t grow_limit;
} fx;

static void
setup(void)
{
	memset(&fx, 0, sizeof(fx));
	test_mkdtemp(fx.dir, sizeof(fx.dir));
	atomic_init(&fx.cancel, 0);
	fx.grow_fd = -1;
}

static void
teardown(void)
{
	if (fx.grow_fd >= 0)
		close(fx.grow_fd);
	test_rmtree(fx.dir);
}

static const char *
at(const char *name)
{
	snprintf(fx.path, sizeof(fx.path), "%s/%s", fx.dir, name);
	return fx.path;
}

/* Writes name: head, then n bytes of c, then tail. */
static void
put_long(const char *name, const char *head, size_t n, char c, const char *tail)
{
	FILE *f = fopen(at(name), "w");
	char *chunk = xmalloc(1 << 20);

	ck_assert_ptr_nonnull(f);
	memset(chunk, c, 1 << 20);
	fputs(head, f);
	for (size_t done = 0; done < n;) {
		size_t k = n - done < (1 << 20) ? n - done : (1 << 20);
		ck_assert_uint_eq(fwrite(chunk, 1, k, f), k);
		done += k;
	}
	fputs(tail, f);
	ck_assert_int_eq(fclose(f), 0);
	free(chunk);
}

static int
count_hit(void *arg, const struct ws_grep_hit *h)
{
	(void)arg;
	fx.hits++;
	fx.clipped += h->clipped != 0;
	fx.last_line = h->line_no;
	fx.last_len = h->len;
	return 0;
}

/* Cancels at the first hit: the search is then in the middle of the long line. */
static int
cancel_at_hit(void *arg, const struct ws_grep_hit *h)
{
	count_hit(arg, h);
	atomic_store(&fx.cancel, 1);
	return 0;
}

START_TEST(a_line_with_no_end_is_searched_in_its_first_mib_with_bounded_memory)
{
	struct ws_grep_stats st;
	struct ws_grep_opts o = { fx.dir, at("big.txt"), "needle", NULL, NULL };
	struct err e;

	put_long("big.txt", "needle", BIG, 'x', "needle\nafter: needle\n");
	err_clear(&e);
	ck_assert_int_eq(ws_grep_each_stats(&o, count_hit, NULL, &st, &e), 0);
	/* Line 1 hit on its first MiB (the needle at its end is past the cut), line 2 whole. */
	ck_assert_uint_eq(fx.hits, 2);
	ck_assert_uint_eq(fx.clipped, 1);
	ck_assert_uint_eq(fx.last_line, 2);
	ck_assert_uint_eq(st.long_lines, 1);
	ck_assert_str_eq(st.long_rel, "big.txt");
	ck_assert_uint_eq(st.long_line_no, 1);
	/* The read buffer never held more than the cap, though the line is 64 times as long. */
	ck_assert_uint_le(st.buf_max, WS_GREP_LINE_CAP);
	free(st.long_rel);
}
END_TEST

START_TEST(a_line_with_no_end_gets_its_hit_and_a_note_in_the_text)
{
	struct ws_grep_opts o = { fx.dir, fx.dir, "needle", NULL, NULL };
	struct buf out;
	struct err e;

	put_long("big.txt", "needle", BIG, 'x', "");	/* not even a final newline */
	put_long("small.txt", "", 0, 0, "no\nneedle\n");
	buf_init(&out);
	err_clear(&e);
	ck_assert_int_eq(ws_grep(&o, &out, &e), 0);
	ck_assert_msg(strncmp(out.data, "big.txt\n  1: needle", 19) == 0, "%.300s", out.data);
	ck_assert_ptr_nonnull(strstr(out.data, " [\xe2\x80\xa6 over "));
	ck_assert_ptr_nonnull(strstr(out.data, "\nsmall.txt\n  2: needle\n"));
	const char *note = "[1 line longer than 1 MiB was searched in its first 1 MiB only; "
	    "the first: big.txt:1]";
	size_t nl = strlen(note);
	ck_assert_uint_ge(out.len, nl);
	ck_assert_str_eq(out.data + out.len - nl, note);
	buf_free(&out);

	/* No match: the note still says what was not searched. */
	struct ws_grep_opts none = { fx.dir, fx.dir, "nowhere", NULL, NULL };
	buf_init(&out);
	ck_assert_int_eq(ws_grep(&none, &out, &e), 0);
	ck_assert_str_eq(out.data, "no matches for nowhere\n"
	    "[1 line longer than 1 MiB was searched in its first 1 MiB only; "
	    "the first: big.txt:1]");
	buf_free(&out);
}
END_TEST

START_TEST(a_cancel_in_a_line_with_no_end_stops_between_reads)
{
	struct ws_grep_opts o = { fx.dir, at("big.txt"), "needle", NULL, &fx.cancel };
	struct err e;

	put_long("big.txt", "needle", BIG, 'x', "\nneedle\n");
	err_clear(&e);
	ck_assert_int_eq(ws_grep_each(&o, cancel_at_hit, NULL, &e), -1);
	ck_assert_int_eq(e.code, ERR_CANCELLED);
	ck_assert_uint_eq(fx.hits, 1);	/* line 2 was never reached */
}
END_TEST

/* Appends a matching line for every hit: the file grows as fast as it is read. */
static int
grow_at_hit(void *arg, const struct ws_grep_hit *h)
{
	(void)arg;
	(void)h;
	ck_assert_int_eq(write(fx.grow_fd, "needle\n", 7), 7);
	return ++fx.hits >= fx.grow_limit;	/* the failure bound: never in a passing run */
}

START_TEST(a_file_that_keeps_growing_is_read_up_to_its_size_at_open)
{
	const size_t lines = 300000;	/* 2.1 MB: more than the read buffer's first size */
	struct ws_grep_opts o = { fx.dir, at("grow.txt"), "needle", NULL, NULL };
	struct err e;
	char *data = xmalloc(lines * 7);

	for (size_t i = 0; i < lines; i++)
		memcpy(data + i * 7, "needle\n", 7);
	test_write_file(at("grow.txt"), data, lines * 7);
	free(data);
	fx.grow_fd = open(at("grow.txt"), O_WRONLY | O_APPEND | O_CLOEXEC);
	ck_assert_int_ge(fx.grow_fd, 0);
	fx.grow_limit = 3 * lines;
	err_clear(&e);
	ck_assert_int_eq(ws_grep_each(&o, grow_at_hit, NULL, &e), 0);
	ck_assert_uint_eq(fx.hits, lines);
}
END_TEST

/* The tool's search on a thread, as the tool runs it (tools/ws_search.h). */
struct search_run {
	struct ws_search_req q;
	int wake;
	int rc, inline_run;
	struct buf out;
	struct err e;
};

static void *
search_thread(void *p)
{
	struct search_run *r = p;

	r->rc = ws_search_isolated(&r->q, &fx.cancel, r->wake, &r->out, &r->e, &r->inline_run);
	return NULL;
}

/* Waits (up to the TCase's timeout) for a read of the file watched by fd. */
static void
wait_read(int fd)
{
	char ev[sizeof(struct inotify_event) + 256];
	struct pollfd p = { fd, POLLIN, 0 };

	ck_assert_int_eq(poll(&p, 1, -1), 1);
	ck_assert_int_gt(read(fd, ev, sizeof(ev)), 0);
}

/*
 * Starts a search of file for pattern on a thread, waits until the search process has read the
 * file (inotify IN_ACCESS), then cancels through the eventfd and the flag, as the tool does, and
 * joins the thread: the join is the answer, and nothing is left running or unreaped.
 */
static void
cancel_after_read(const char *file, const char *pattern)
{
	struct search_run r = { { 1, fx.dir, at(file), pattern, NULL, 0 }, -1, 0, 0, { 0 }, { 0 } };
	uint64_t one = 1;
	pthread_t t;
	int in = inotify_init1(IN_CLOEXEC);

	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(inotify_add_watch(in, at(file), IN_ACCESS), 0);
	r.wake = eventfd(0, EFD_CLOEXEC);
	ck_assert_int_ge(r.wake, 0);
	buf_init(&r.out);
	err_clear(&r.e);
	ck_assert_int_eq(pthread_create(&t, NULL, search_thread, &r), 0);
	wait_read(in);
	ck_assert_int_eq(write(r.wake, &one, sizeof(one)), (ssize_t)sizeof(one));
	atomic_store(&fx.cancel, 1);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(r.inline_run, 0);
	ck_assert_int_eq(r.rc, -1);
	ck_assert_int_eq(r.e.code, ERR_CANCELLED);
	ck_assert_str_eq(r.e.msg, "search cancelled");
	/* The search process was reaped: no child of ours is left, running or dead. */
	errno = 0;
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
	buf_free(&r.out);
	close(r.wake);
	close(in);
}

START_TEST(a_backtracking_regex_is_cancelled_at_once)
{
	char line[303];

	memset(line, 'a', 301);
	line[301] = '\n';
	line[302] = '\0';
	test_write_file(at("line.txt"), line, 302);
	cancel_after_read("line.txt", CATASTROPHIC);
}
END_TEST

/* What the tool's isolated search answers is what the search answers in process. */
START_TEST(an_isolated_search_answers_as_the_search_itself)
{
	struct ws_search_req q = { 1, fx.dir, fx.dir, "ne+dle", "*.txt", 0 };
	struct ws_grep_opts o = { fx.dir, fx.dir, "ne+dle", "*.txt", NULL };
	struct buf a, b;
	struct err e;
	int in_thread = -1;

	ck_assert_int_eq(mkdir(at("sub"), 0755), 0);
	test_write_file(at("sub/a.txt"), "x\nneedle\nneeedle\n", 17);
	test_write_file(at("b.c"), "needle\n", 7);
	buf_init(&a);
	buf_init(&b);
	err_clear(&e);
	ck_assert_int_eq(ws_search_isolated(&q, NULL, -1, &a, &e, &in_thread), 0);
	ck_assert_int_eq(in_thread, 0);
	ck_assert_int_eq(ws_grep(&o, &b, &e), 0);
	ck_assert_str_eq(a.data, b.data);
	ck_assert_str_eq(a.data, "sub/a.txt\n  2: needle\n  3: neeedle");
	buf_free(&a);

	/* Errors come back with their code and message. */
	struct ws_search_req bad = { 1, fx.dir, fx.dir, "a(", NULL, 0 };
	buf_init(&a);
	ck_assert_int_eq(ws_search_isolated(&bad, NULL, -1, &a, &e, NULL), -1);
	ck_assert_int_eq(e.code, ERR_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(e.msg, "invalid regular expression \"a(\""));
	ck_assert_uint_eq(a.len, 0);

	/* glob too. */
	struct ws_search_req g = { 0, fx.dir, fx.dir, "**/*.txt", NULL, 1 };
	err_clear(&e);
	ck_assert_int_eq(ws_search_isolated(&g, NULL, -1, &a, &e, NULL), 0);
	ck_assert_str_eq(a.data, "sub/a.txt");
	buf_free(&a);
	buf_free(&b);
	errno = 0;
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
}
END_TEST

static void
big_output(void *arg, struct buf *out)
{
	size_t n = *(const size_t *)arg;

	buf_reserve(out, n);
	for (size_t i = 0; i < n; i++)
		out->data[i] = (char)('a' + i % 26);
	out->len = n;
	out->data[n] = '\0';
}

static void
dies(void *arg, struct buf *out)
{
	(void)arg;
	buf_puts(out, "half");
	raise(SIGKILL);
}

START_TEST(isolate_brings_bytes_back_and_tells_a_death)
{
	size_t n = (size_t)5 * 1024 * 1024 + 7;	/* many pipe buffers */
	struct buf out;
	int status = 0;

	buf_init(&out);
	ck_assert_int_eq(isolate_run(big_output, &n, &out, NULL, -1, &status), 0);
	ck_assert_uint_eq(out.len, n);
	ck_assert_int_eq(out.data[n - 1], 'a' + (int)((n - 1) % 26));
	buf_free(&out);

	buf_init(&out);
	ck_assert_int_eq(isolate_run(dies, NULL, &out, NULL, -1, &status), -1);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_assert_uint_eq(out.len, 0);

	/* Cancelled before it starts: no child at all. */
	atomic_store(&fx.cancel, 1);
	ck_assert_int_eq(isolate_run(dies, NULL, &out, &fx.cancel, -1, &status), 1);
	buf_free(&out);
	errno = 0;
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
}
END_TEST

Suite *
grep_hostile_suite(void)
{
	Suite *s = suite_create("grep_hostile");
	TCase *tc = tcase_create("grep_hostile");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_line_with_no_end_is_searched_in_its_first_mib_with_bounded_memory);
	tcase_add_test(tc, a_line_with_no_end_gets_its_hit_and_a_note_in_the_text);
	tcase_add_test(tc, a_cancel_in_a_line_with_no_end_stops_between_reads);
	tcase_add_test(tc, a_file_that_keeps_growing_is_read_up_to_its_size_at_open);
	tcase_add_test(tc, a_backtracking_regex_is_cancelled_at_once);
	tcase_add_test(tc, an_isolated_search_answers_as_the_search_itself);
	tcase_add_test(tc, isolate_brings_bytes_back_and_tells_a_death);
	tcase_set_timeout(tc, 30);	/* the failure bound of a hang; a test takes under 1 s */
	suite_add_tcase(s, tc);
	return s;
}
