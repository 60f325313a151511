/* The SSE parser (SPEC §7.3): any byte split, comments, CRLF, multi-line data. */
#include <string.h>

#include "agent/sse.h"
#include "tests/helpers.h"

struct got {
	char events[8][128];
	int n;
	int stop_at;
};

static int
on_event(void *arg, const char *data, size_t len)
{
	struct got *g = arg;

	ck_assert_int_lt(g->n, 8);
	ck_assert_uint_lt(len, 128);
	memcpy(g->events[g->n], data, len);
	g->events[g->n][len] = '\0';
	g->n++;
	return g->n == g->stop_at ? -1 : 0;
}

static const char stream[] = ": keep-alive\r\n"
    "data: {\"a\":\"\xc3\xa9\"}\r\n\r\n"
    "event: ignored\n"
    "data:{\"b\":1}\n\n"
    "data: line one\ndata: line two\n\n"
    "data: [DONE]\n\n";

START_TEST(sse_every_split_gives_the_same_events)
{
	size_t len = strlen(stream);

	for (size_t step = 1; step <= len; step++) {
		struct sse p;
		struct got g = { .stop_at = -1 };
		sse_init(&p, on_event, &g);
		for (size_t off = 0; off < len; off += step)
			ck_assert_int_eq(sse_feed(&p, stream + off, off + step > len ? len - off : step), 0);
		ck_assert_int_eq(sse_finish(&p), 0);
		ck_assert_int_eq(g.n, 4);
		ck_assert_str_eq(g.events[0], "{\"a\":\"\xc3\xa9\"}");
		ck_assert_str_eq(g.events[1], "{\"b\":1}");
		ck_assert_str_eq(g.events[2], "line one\nline two");
		ck_assert_str_eq(g.events[3], "[DONE]");
		sse_free(&p);
	}
}
END_TEST

START_TEST(sse_pending_event_is_delivered_at_the_end)
{
	struct sse p;
	struct got g = { .stop_at = -1 };

	sse_init(&p, on_event, &g);
	sse_feed(&p, "data: tail", 10);
	ck_assert_int_eq(g.n, 0);
	sse_finish(&p);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.events[0], "tail");
	sse_free(&p);
}
END_TEST

START_TEST(sse_callback_can_stop_the_stream)
{
	struct sse p;
	struct got g = { .stop_at = 1 };

	sse_init(&p, on_event, &g);
	ck_assert_int_eq(sse_feed(&p, stream, strlen(stream)), -1);
	ck_assert_int_eq(g.n, 1);
	sse_free(&p);
}
END_TEST

Suite *
sse_suite(void)
{
	Suite *s = suite_create("sse");
	TCase *tc = tcase_create("sse");

	tcase_add_test(tc, sse_every_split_gives_the_same_events);
	tcase_add_test(tc, sse_pending_event_is_delivered_at_the_end);
	tcase_add_test(tc, sse_callback_can_stop_the_stream);
	suite_add_tcase(s, tc);
	return s;
}
