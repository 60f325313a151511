/* Line framing (docs/contract.md §3.1). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "base/reader.h"
#include "base/wq.h"
#include "base/xmalloc.h"
#include "tests/helpers.h"

struct got {
	char lines[16][64];
	int n;
	int overlong;
};

static void
on_line(void *arg, const char *line, size_t len)
{
	struct got *g = arg;

	ck_assert_int_lt(g->n, 16);
	ck_assert_uint_lt(len, 64);
	memcpy(g->lines[g->n], line, len);
	g->lines[g->n][len] = '\0';
	g->n++;
}

static void
on_overlong(void *arg)
{
	((struct got *)arg)->overlong++;
}

/* A taker: takes the buffer of every line that starts with "take", keeping where the line lies. */
struct taker {
	struct frame *f;
	struct got g;
	char *bufs[4];
	const char *at[4];
	int n;
};

static void
on_line_take(void *arg, const char *line, size_t len)
{
	struct taker *t = arg;

	on_line(&t->g, line, len);
	if (len >= 4 && memcmp(line, "take", 4) == 0) {
		ck_assert_int_lt(t->n, 4);
		t->bufs[t->n] = frame_take(t->f);
		ck_assert_ptr_nonnull(t->bufs[t->n]);
		ck_assert_ptr_null(frame_take(t->f));	/* once per line */
		t->at[t->n++] = line;
	} else if (len >= 4 && memcmp(line, "free", 4) == 0) {
		free(frame_take(t->f));		/* taken and freed at once: the frame must not read it again */
	}
}

/* A line's buffer taken: the line stays where it was in it; the lines after it, in the same read
 * and in later ones, and a last line at EOF, all come as before. */
START_TEST(frame_take_hands_the_line_over_and_goes_on)
{
	struct taker t = { 0 };
	struct frame f;
	const char *first = "one\ntake two\nthree\nfo", *second = "ur\nfree six\r\n\nseven\ntake five";

	t.f = &f;
	frame_init(&f, 1024, on_line_take, on_overlong, &t);
	ck_assert_ptr_null(frame_take(&f));	/* outside on_line: nothing to take */
	frame_feed(&f, first, strlen(first));
	frame_feed(&f, second, strlen(second));
	frame_eof(&f);
	ck_assert_int_eq(t.g.n, 7);
	ck_assert_str_eq(t.g.lines[1], "take two");
	ck_assert_str_eq(t.g.lines[2], "three");
	ck_assert_str_eq(t.g.lines[3], "four");
	ck_assert_str_eq(t.g.lines[4], "free six");
	ck_assert_str_eq(t.g.lines[5], "seven");
	ck_assert_str_eq(t.g.lines[6], "take five");
	ck_assert_int_eq(t.n, 2);
	/* the taken buffers hold the lines, unchanged by what the frame did afterwards */
	ck_assert_int_eq(memcmp(t.at[0], "take two", 8), 0);
	ck_assert_int_eq(memcmp(t.at[1], "take five", 9), 0);
	ck_assert(t.at[0] >= t.bufs[0] && t.at[1] >= t.bufs[1]);
	free(t.bufs[0]);
	free(t.bufs[1]);
	frame_free(&f);
}
END_TEST

START_TEST(frame_split_reads_byte_by_byte)
{
	struct got g = { 0 };
	struct frame f;
	const char *in = "{\"a\":1}\n{\"b\":\"\xc3\xa9\"}\n";

	frame_init(&f, 1024, on_line, on_overlong, &g);
	for (size_t i = 0; i < strlen(in); i++)
		frame_feed(&f, in + i, 1);
	ck_assert_int_eq(g.n, 2);
	ck_assert_str_eq(g.lines[0], "{\"a\":1}");
	ck_assert_str_eq(g.lines[1], "{\"b\":\"\xc3\xa9\"}");
	frame_free(&f);
}
END_TEST

START_TEST(frame_blank_lines_skipped_and_crlf_stripped)
{
	struct got g = { 0 };
	struct frame f;
	const char *in = "\n  \n\r\nx\r\n\ny\n";

	frame_init(&f, 1024, on_line, on_overlong, &g);
	frame_feed(&f, in, strlen(in));
	ck_assert_int_eq(g.n, 2);
	ck_assert_str_eq(g.lines[0], "x");
	ck_assert_str_eq(g.lines[1], "y");
	frame_free(&f);
}
END_TEST

START_TEST(frame_overlong_line_reported_once_then_recovers)
{
	struct got g = { 0 };
	struct frame f;
	char big[100];

	memset(big, 'z', sizeof(big));
	frame_init(&f, 16, on_line, on_overlong, &g);
	frame_feed(&f, "ok1\n", 4);
	frame_feed(&f, big, 40);	/* partial: already over the limit */
	frame_feed(&f, big, 60);
	frame_feed(&f, "zz\nok2\n", 7);
	ck_assert_int_eq(g.overlong, 1);
	ck_assert_int_eq(g.n, 2);
	ck_assert_str_eq(g.lines[1], "ok2");
	/* A complete overlong line inside one read is reported too. */
	frame_feed(&f, "0123456789abcdefXYZ\nok3\n", 24);
	ck_assert_int_eq(g.overlong, 2);
	ck_assert_str_eq(g.lines[2], "ok3");
	frame_free(&f);
}
END_TEST

START_TEST(frame_eof_without_newline_is_a_last_line)
{
	struct got g = { 0 };
	struct frame f;

	frame_init(&f, 1024, on_line, on_overlong, &g);
	frame_feed(&f, "a\ntail", 6);
	ck_assert_int_eq(g.n, 1);
	frame_eof(&f);
	ck_assert_int_eq(g.n, 2);
	ck_assert_str_eq(g.lines[1], "tail");
	frame_free(&f);
}
END_TEST

START_TEST(frame_eof_while_skipping_drops_the_tail)
{
	struct got g = { 0 };
	struct frame f;

	frame_init(&f, 4, on_line, on_overlong, &g);
	frame_feed(&f, "toolongtail", 11);
	frame_eof(&f);
	ck_assert_int_eq(g.overlong, 1);
	ck_assert_int_eq(g.n, 0);
	frame_free(&f);
}
END_TEST

START_TEST(frame_real_limit_is_64_mib)
{
	struct got g = { 0 };
	struct frame f;
	size_t n = READER_LINE_MAX + 10;
	char *big = xmalloc(n);

	ck_assert_uint_eq(READER_LINE_MAX, (size_t)64 * 1024 * 1024);
	memset(big, ' ', n);
	frame_init(&f, READER_LINE_MAX, on_line, on_overlong, &g);
	frame_feed(&f, big, n);
	frame_feed(&f, "\n{}\n", 4);
	ck_assert_int_eq(g.overlong, 1);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.lines[0], "{}");
	frame_free(&f);
	free(big);
}
END_TEST

/* A message that cannot be encoded is dropped whole; what follows still goes out. */
START_TEST(wq_drops_an_unencodable_message_and_keeps_the_stream_whole)
{
	struct ev_loop *loop = ev_loop_new(0);
	struct wq q;
	int p[2];
	char got[256];

	ck_assert_int_eq(pipe(p), 0);
	wq_init(&q, loop, p[1]);
	json_t *bad = json_pack("{s:o}", "text", json_stringn_nocheck("a\xc3", 2));
	json_t *good = json_pack("{s:s, s:i}", "jsonrpc", "2.0", "id", 7);
	test_log_capture_start();
	wq_push(&q, bad);
	char *said = test_log_capture_stop();
	ck_assert_str_eq(said, "acp-agent: error: acp: a message could not be encoded; dropped\n");
	free(said);
	ck_assert_uint_eq(wq_pending(&q), 0);
	wq_push(&q, good);
	ck_assert_uint_eq(wq_pending(&q), 0);	/* the pipe took it at once */
	ssize_t n = read(p[0], got, sizeof(got) - 1);
	ck_assert_int_gt(n, 0);
	got[n] = '\0';
	ck_assert_str_eq(got, "{\"jsonrpc\":\"2.0\",\"id\":7}\n");
	json_decref(bad);
	json_decref(good);
	wq_free(&q);
	close(p[0]);
	close(p[1]);
	ev_loop_destroy(loop);
}
END_TEST

static void
wq_test_low(void *arg)
{
	(*(int *)arg)++;
}

/* A corked queue writes nothing until uncorked, then all of it in order; a producer ahead of the
 * reader is told so, and on_low comes once the reader has taken it down to half the mark. */
START_TEST(wq_cork_batches_and_ahead_waits_for_the_reader)
{
	struct ev_loop *loop = ev_loop_new(0);
	struct wq q;
	int p[2], lows = 0;
	static char got[1 << 20];
	json_t *msg = json_pack("{s:s}", "text", "0123456789012345678901234567890123456789012345678901234567890123456789");

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
	wq_init(&q, loop, p[1]);
	q.on_low = wq_test_low;
	q.arg = &lows;
	wq_cork(&q);
	for (int i = 0; i < 3; i++)
		wq_push(&q, msg);
	ck_assert_uint_eq(wq_pending(&q), 3 * 82);	/* queued, not written */
	ck_assert_int_eq(wq_ahead(&q, 1000), 0);
	wq_uncork(&q);
	ck_assert_uint_eq(wq_pending(&q), 0);
	ck_assert_int_eq(read(p[0], got, sizeof(got)), 3 * 82);
	/* More than the pipe holds: the rest waits, and the producer is ahead of a 4 KiB mark. */
	wq_cork(&q);
	for (int i = 0; i < 2000; i++)
		wq_push(&q, msg);
	wq_uncork(&q);
	ck_assert_uint_gt(wq_pending(&q), 4096);
	ck_assert_int_eq(wq_ahead(&q, 4096), 1);
	ck_assert_int_eq(lows, 0);
	size_t total = 0;
	while (wq_pending(&q) > 0) {
		ssize_t n = read(p[0], got, sizeof(got));
		ck_assert_int_gt(n, 0);
		total += (size_t)n;
		ev_run(loop, EVRUN_NOWAIT);	/* the writable watcher writes more */
	}
	while (total < 2000 * 82) {
		ssize_t n = read(p[0], got, sizeof(got));
		ck_assert_int_gt(n, 0);
		total += (size_t)n;
	}
	ck_assert_uint_eq(total, 2000 * 82);
	ck_assert_int_eq(lows, 1);	/* once, when it drained to 2 KiB or less */
	json_decref(msg);
	wq_free(&q);
	close(p[0]);
	close(p[1]);
	ev_loop_destroy(loop);
}
END_TEST

Suite *
reader_suite(void)
{
	Suite *s = suite_create("reader");
	TCase *tc = tcase_create("framing");

	tcase_add_test(tc, frame_split_reads_byte_by_byte);
	tcase_add_test(tc, frame_blank_lines_skipped_and_crlf_stripped);
	tcase_add_test(tc, frame_overlong_line_reported_once_then_recovers);
	tcase_add_test(tc, frame_eof_without_newline_is_a_last_line);
	tcase_add_test(tc, frame_take_hands_the_line_over_and_goes_on);
	tcase_add_test(tc, frame_eof_while_skipping_drops_the_tail);
	tcase_add_test(tc, wq_drops_an_unencodable_message_and_keeps_the_stream_whole);
	tcase_add_test(tc, wq_cork_batches_and_ahead_waits_for_the_reader);
	tcase_add_test(tc, frame_real_limit_is_64_mib);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}
