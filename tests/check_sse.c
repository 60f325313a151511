/* The SSE parser (docs/contract.md §7.3): any byte split, comments, CRLF, multi-line data. */
#include <string.h>

#include "base/sse.h"
#include "model/sse_delta.h"

#include <jansson.h>
#include <stdlib.h>
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
		sse_init(&p, SSE_LINE_MAX, on_event, &g);
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

	sse_init(&p, SSE_LINE_MAX, on_event, &g);
	sse_feed(&p, "data: tail", 10);
	ck_assert_int_eq(g.n, 0);
	sse_finish(&p);
	ck_assert_int_eq(g.n, 1);
	ck_assert_str_eq(g.events[0], "tail");
	sse_free(&p);
}
END_TEST

/* What a client resumes with (MCP's Streamable HTTP): the last id and retry, kept across events. */
START_TEST(sse_keeps_the_last_id_and_retry_at_any_split)
{
	static const char ids[] = "id: e1\ndata:\n\n"	/* a priming event: an id and empty data */
	    "retry: 250\nidx: nope\ndata: a\n\n"
	    "retry: 12x\nretry:\nid:e2\n\n"		/* bad retries are ignored; no data, no event */
	    "id: bad\0id\ndata: b\n\n";		/* an id with a NUL is ignored */
	size_t len = sizeof(ids) - 1;

	for (size_t step = 1; step <= len; step++) {
		struct sse p;
		struct got g = { .stop_at = -1 };
		sse_init(&p, SSE_LINE_MAX, on_event, &g);
		ck_assert_int_eq(p.has_id, 0);
		ck_assert_int_eq(p.retry_ms, -1);
		for (size_t off = 0; off < len; off += step)
			ck_assert_int_eq(sse_feed(&p, ids + off, off + step > len ? len - off : step), 0);
		ck_assert_int_eq(sse_finish(&p), 0);
		ck_assert_int_eq(g.n, 3);
		ck_assert_str_eq(g.events[0], "");
		ck_assert_str_eq(g.events[1], "a");
		ck_assert_str_eq(g.events[2], "b");
		ck_assert_int_eq(p.has_id, 1);
		ck_assert_str_eq(p.id.data, "e2");
		ck_assert_int_eq(p.retry_ms, 250);
		sse_free(&p);
	}
}
END_TEST

START_TEST(sse_an_empty_id_clears_it_and_a_huge_retry_is_clamped)
{
	struct sse p;
	struct got g = { .stop_at = -1 };
	static const char s1[] = "id: x\nretry: 99999999999999999999\nid\ndata: c\n\n";

	sse_init(&p, SSE_LINE_MAX, on_event, &g);
	ck_assert_int_eq(sse_feed(&p, s1, sizeof(s1) - 1), 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(p.has_id, 0);
	ck_assert_int_eq(p.retry_ms, SSE_RETRY_MAX_MS);
	sse_free(&p);
}
END_TEST

START_TEST(sse_callback_can_stop_the_stream)
{
	struct sse p;
	struct got g = { .stop_at = 1 };

	sse_init(&p, SSE_LINE_MAX, on_event, &g);
	ck_assert_int_eq(sse_feed(&p, stream, strlen(stream)), -1);
	ck_assert_int_eq(g.n, 1);
	sse_free(&p);
}
END_TEST

START_TEST(sse_a_line_over_the_limit_stops_the_stream_unbuffered)
{
	static const size_t steps[] = { 1, 7, 4096 };	/* buffered across feeds, and whole in one */
	char big[4096];

	memset(big, 'x', sizeof(big));
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct sse p;
		struct got g = { .stop_at = -1 };
		size_t fed = 0;
		int rc = 0;
		sse_init(&p, 16, on_event, &g);
		/* Exactly the limit is still a line. */
		ck_assert_int_eq(sse_feed(&p, "data: 0123456789\n\n", 18), 0);
		ck_assert_int_eq(g.n, 1);
		ck_assert_int_eq(sse_feed(&p, "data: ", 6), 0);
		/* Then a line that never ends: it stops once over 16 bytes, holding no more than that. */
		while (rc == 0 && fed < sizeof(big)) {
			size_t n = steps[k] < sizeof(big) - fed ? steps[k] : sizeof(big) - fed;
			rc = sse_feed(&p, big + fed, n);
			fed += n;
			ck_assert_uint_le(p.line.len, 16);
		}
		ck_assert_int_eq(rc, -1);
		ck_assert_uint_lt(fed, 11 + steps[k]);	/* at the first feed that crossed it */
		ck_assert_ptr_nonnull(p.too_long);
		ck_assert_str_eq(p.too_long, "line");
		/* Stopped for good: nothing more is taken or delivered. */
		ck_assert_int_eq(sse_feed(&p, "\n\ndata: y\n\n", 11), -1);
		ck_assert_int_eq(sse_finish(&p), -1);
		ck_assert_int_eq(g.n, 1);
		sse_free(&p);
	}
}
END_TEST

START_TEST(sse_an_event_over_the_limit_stops_the_stream)
{
	struct sse p;
	struct got g = { .stop_at = -1 };
	int rc = 0;

	sse_init(&p, 16, on_event, &g);
	/* Short lines, one endless event: its joined data is bounded by the same limit. */
	for (int i = 0; i < 100 && rc == 0; i++) {
		rc = sse_feed(&p, "data: abcd\n", 11);
		ck_assert_uint_le(p.data.len, 16);
	}
	ck_assert_int_eq(rc, -1);
	ck_assert_str_eq(p.too_long, "event");
	ck_assert_int_eq(g.n, 0);
	ck_assert_int_eq(sse_finish(&p), -1);
	ck_assert_int_eq(g.n, 0);
	sse_free(&p);
}
END_TEST

/* What the full path would take from an event: 1 when it is a pure text delta. */
static int
slow_delta(const char *ev, struct buf *c, struct buf *r)
{
	json_t *j = json_loads(ev, JSON_ALLOW_NUL, NULL);
	json_t *ch = json_object_get(j, "choices"), *d = json_object_get(json_array_get(ch, 0), "delta");
	json_t *t = json_object_get(d, "content"), *rs = json_object_get(d, "reasoning_content");

	if (j && json_is_string(t))
		buf_append(c, json_string_value(t), json_string_length(t));
	if (j && json_is_string(rs))
		buf_append(r, json_string_value(rs), json_string_length(rs));
	int ok = j != NULL;
	json_decref(j);
	return ok;
}

static void
assert_same(struct sse_delta *d, const char *ev)
{
	struct buf fc, fr, sc, sr;

	buf_init(&fc);
	buf_init(&fr);
	buf_init(&sc);
	buf_init(&sr);
	if (sse_delta_fast(d, ev, strlen(ev), &fc, &fr)) {
		ck_assert_msg(slow_delta(ev, &sc, &sr), "fast path took what jansson refuses: %s", ev);
		ck_assert_uint_eq(fc.len, sc.len);
		ck_assert_uint_eq(fr.len, sr.len);
		ck_assert(fc.len == 0 || memcmp(fc.data, sc.data, fc.len) == 0);
		ck_assert(fr.len == 0 || memcmp(fr.data, sr.data, fr.len) == 0);
	} else {
		ck_assert_uint_eq(fc.len, 0);	/* left untouched */
		ck_assert_uint_eq(fr.len, 0);
	}
	buf_free(&fc);
	buf_free(&fr);
	buf_free(&sc);
	buf_free(&sr);
}

static const char *const delta_events[] = {
	"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"plain\"},\"finish_reason\":null}]}",
	"{\"id\":\"c-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,"
	    "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}",
	"{\"choices\":[{\"delta\":{\"content\":\"esc \\\" \\\\ \\/ \\b\\f\\n\\r\\t \\u00e9 \\ud83d\\ude00 \\u20ac\"}}]}",
	"{\"choices\":[{\"delta\":{\"content\":\"raw \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}}]}",
	"{\"choices\":[{\"delta\":{\"reasoning_content\":\"think\",\"content\":null}}]}",
	"{ \"choices\" : [ { \"delta\" : { \"content\" : \"spaced\" } } ] }",
	/* the full path's business: */
	"{\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}",
	"{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0}]}}]}",
	"{\"choices\":[],\"usage\":{\"total_tokens\":3}}",
	"{\"choices\":[{\"delta\":{\"content\":\"a\"}},{\"delta\":{\"content\":\"b\"}}]}",
	"{\"error\":{\"message\":\"x\"}}",
	"{\"choices\":[{\"delta\":{\"content\":\"bad \\ud800\"}}]}",
	"{\"choices\":[{\"delta\":{\"content\":\"nul \\u0000\"}}]}",
	"{\"choices\":[{\"delta\":{\"content\":\"cut",
	"{\"choices\":[{\"delta\":{\"content\":\"x\"}}]} trailing",
	/* found by fuzz_delta: a key at the very end of the input (was a one-byte over-read) */
	"{\"id\":\"x\",\"choices\":",
	/* numbers jansson cannot hold fail the whole event there, so they go the full way here */
	"{\"choices\":[{\"index\":23333333333333333333333,\"delta\":{\"content\":\"a\"}}]}",
	"{\"created\":99999999999999999999,\"choices\":[{\"delta\":{\"content\":\"a\"}}]}",
	"{\"x\":[1e400],\"choices\":[{\"delta\":{\"content\":\"a\"}}]}",
	"{\"x\":false,\"created\":1700000000,\"choices\":[{\"delta\":{\"content\":\"a\"}}]}",
};

START_TEST(sse_delta_fast_agrees_with_the_full_parser)
{
	size_t n = sizeof(delta_events) / sizeof(delta_events[0]);
	struct sse_delta d;
	struct buf c, r;

	sse_delta_init(&d);
	for (size_t i = 0; i < n; i++)
		assert_same(&d, delta_events[i]);
	buf_init(&c);
	buf_init(&r);
	ck_assert_int_eq(sse_delta_fast(&d, delta_events[0], strlen(delta_events[0]), &c, &r), 1);
	ck_assert_str_eq(c.data, "plain");
	ck_assert_int_eq(sse_delta_fast(&d, delta_events[6], strlen(delta_events[6]), &c, &r), 0);
	ck_assert_int_eq(sse_delta_fast(&d, delta_events[7], strlen(delta_events[7]), &c, &r), 0);
	ck_assert_str_eq(c.data, "plain");	/* untouched by the refusals */
	buf_free(&c);
	buf_free(&r);
	/* Mutations: wherever the fast path accepts, it must agree with jansson. */
	unsigned seed = 12345;
	char m[256];
	for (int k = 0; k < 20000; k++) {
		const char *base = delta_events[k % 6];
		size_t len = strlen(base);
		memcpy(m, base, len + 1);
		test_mutate(m, len, 2, &seed, "\"\\{}[],: nulx0u\x80\xc3");
		/* After its own base event, so the learnt template meets the mutant. */
		assert_same(&d, base);
		assert_same(&d, m);
	}
	sse_delta_free(&d);
}
END_TEST

/* Events of one stream differ only in their text: the second and later take the template. */
START_TEST(sse_delta_template_takes_the_same_shape_and_nothing_else)
{
	const char *pre = "{\"id\":\"c-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
	const char *post = "\"},\"finish_reason\":null}]}";
	const char *texts[] = {
		"first", "second", "", "esc \\\" \\n \\u00e9 \\ud83d\\ude00", "raw \xc3\xa9",
		/* not one string body: an unescaped quote, a cut escape, a lone surrogate, bad UTF-8 */
		"a\"}}]},\"x\":\"b", "tail \\", "\\ud800", "\xff", "\\u0000",
	};
	struct sse_delta d;
	char ev[256];

	sse_delta_init(&d);
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		snprintf(ev, sizeof(ev), "%s%s%s", pre, texts[i], post);
		assert_same(&d, ev);
	}
	ck_assert_int_eq(d.into, 1);
	ck_assert_str_eq(d.prefix.data, pre);
	ck_assert_str_eq(d.suffix.data, post);
	/* Reasoning is learnt the same way; an event with both kinds teaches nothing. */
	assert_same(&d, "{\"choices\":[{\"delta\":{\"reasoning_content\":\"r1\"}}]}");
	ck_assert_int_eq(d.into, 2);
	assert_same(&d, "{\"choices\":[{\"delta\":{\"reasoning_content\":\"r2 \\\"q\\\"\"}}]}");
	assert_same(&d, "{\"choices\":[{\"delta\":{\"reasoning_content\":\"r\",\"content\":\"c\"}}]}");
	ck_assert_int_eq(d.into, 0);
	sse_delta_free(&d);
}
END_TEST

/* jansson keeps the last of duplicate keys: the fast path must not keep both. */
START_TEST(sse_delta_fast_leaves_duplicate_keys_to_the_full_parser)
{
	const char *dups[] = {
		"{\"choices\":[{\"delta\":{\"content\":\"a\",\"content\":\"b\"}}]}",
		"{\"choices\":[{\"delta\":{\"reasoning_content\":\"a\",\"reasoning_content\":\"b\"}}]}",
		"{\"choices\":[{\"delta\":{\"content\":\"a\"},\"delta\":{\"content\":\"b\"}}]}",
	};
	struct sse_delta d;
	struct buf c, r;

	sse_delta_init(&d);
	buf_init(&c);
	buf_init(&r);
	for (size_t i = 0; i < sizeof(dups) / sizeof(dups[0]); i++) {
		ck_assert_int_eq(sse_delta_fast(&d, dups[i], strlen(dups[i]), &c, &r), 0);
		ck_assert_uint_eq(c.len + r.len, 0);
		assert_same(&d, dups[i]);
	}
	buf_free(&c);
	buf_free(&r);
	sse_delta_free(&d);
}
END_TEST

Suite *
sse_suite(void)
{
	Suite *s = suite_create("sse");
	TCase *tc = tcase_create("sse");

	tcase_add_test(tc, sse_every_split_gives_the_same_events);
	tcase_add_test(tc, sse_pending_event_is_delivered_at_the_end);
	tcase_add_test(tc, sse_keeps_the_last_id_and_retry_at_any_split);
	tcase_add_test(tc, sse_an_empty_id_clears_it_and_a_huge_retry_is_clamped);
	tcase_add_test(tc, sse_callback_can_stop_the_stream);
	tcase_add_test(tc, sse_a_line_over_the_limit_stops_the_stream_unbuffered);
	tcase_add_test(tc, sse_an_event_over_the_limit_stops_the_stream);
	tcase_add_test(tc, sse_delta_fast_agrees_with_the_full_parser);
	tcase_add_test(tc, sse_delta_template_takes_the_same_shape_and_nothing_else);
	tcase_add_test(tc, sse_delta_fast_leaves_duplicate_keys_to_the_full_parser);
	suite_add_tcase(s, tc);
	return s;
}
