/* base/: utf8, map, run queue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/map.h"
#include "base/runq.h"
#include "base/utf8.h"
#include "tests/helpers.h"

START_TEST(utf8_repair_replaces_invalid_sequences)
{
	size_t n;
	char *s = utf8_repair("a\xffz\xc3\xa9\xed\xa0\x80", 9, &n);

	ck_assert_str_eq(s, "a\xef\xbf\xbdz\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	ck_assert(utf8_valid(s, n));
	ck_assert(!utf8_valid("\xc0\xaf", 2));		/* overlong */
	free(s);
}
END_TEST

START_TEST(utf8_boundary_never_splits_a_character)
{
	const char *s = "abcdefghijklmno\xe2\x82\xac tail";	/* euro sign at byte 15 */

	ck_assert_uint_eq(utf8_boundary(s, strlen(s), 16), 15);
	ck_assert_uint_eq(utf8_boundary(s, 5, 16), 5);
	ck_assert_uint_eq(utf8_boundary("\xe2\x82\xac", 3, 1), 3);
}
END_TEST

START_TEST(map_put_get_delete_and_grow)
{
	struct map m;
	char key[32];
	size_t pos = 0, count = 0;

	map_init(&m);
	for (long i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "k%ld", i);
		map_put(&m, key, (void *)(i + 1));
	}
	for (long i = 0; i < 1000; i += 2) {
		snprintf(key, sizeof(key), "k%ld", i);
		ck_assert_ptr_eq(map_del(&m, key), (void *)(i + 1));
	}
	ck_assert_uint_eq(m.len, 500);
	ck_assert_ptr_eq(map_get(&m, "k1"), (void *)2);
	ck_assert_ptr_null(map_get(&m, "k0"));
	while (map_next(&m, &pos, NULL, NULL))
		count++;
	ck_assert_uint_eq(count, 500);
	map_free(&m);
}
END_TEST

static char order[16];
static struct runq *q_under_test;
static char la[] = "a", lb[] = "b", lc[] = "c", lz[] = "z";

static void
order_add(const char *s)
{
	size_t n = strlen(order);

	order[n] = s[0];
	order[n + 1] = '\0';
}

static void
task_b(void *arg)
{
	order_add(arg);
}

static void
task_a(void *arg)
{
	order_add(arg);
	runq_push(q_under_test, task_b, lc);	/* queued work runs after what was queued before */
}

static void
sync_mark(void *arg)
{
	(void)arg;
	order_add("|");
}

START_TEST(runq_fifo_then_sync_then_after_sync)
{
	struct runq q;

	runq_init(&q, NULL);
	q_under_test = &q;
	runq_set_sync(&q, sync_mark, NULL);
	order[0] = '\0';
	runq_push_after_sync(&q, task_b, lz);
	runq_push(&q, task_a, la);
	runq_push(&q, task_b, lb);
	runq_drain(&q);
	ck_assert_str_eq(order, "abc|z|");
	ck_assert(runq_empty(&q));
	runq_stop(&q);
}
END_TEST

Suite *
base_suite(void)
{
	Suite *s = suite_create("base");
	TCase *tc = tcase_create("base");

	tcase_add_test(tc, utf8_repair_replaces_invalid_sequences);
	tcase_add_test(tc, utf8_boundary_never_splits_a_character);
	tcase_add_test(tc, map_put_get_delete_and_grow);
	tcase_add_test(tc, runq_fifo_then_sync_then_after_sync);
	suite_add_tcase(s, tc);
	return s;
}
