/* The corpus index (docs/contract.md §5.6). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "session/corpus.h"
#include "tests/helpers.h"

#define A "00000000-0000-4000-8000-0000000000a1"
#define B "00000000-0000-4000-8000-0000000000b2"

static char dir[64], state[128];
static struct sess_env env;
static struct sess_corpus corpus;

static void
put(const char *id, const char *text)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, id);
	test_write_file(path, text, strlen(text));
}

static void
setup(void)
{
	struct err e;

	test_mkdtemp(dir, sizeof(dir));
	snprintf(state, sizeof(state), "%s/state", dir);
	err_clear(&e);
	ck_assert_int_eq(sess_env_init(&env, state, SESS_SYNC_NONE, 1, NULL, &e), 0);
	sess_corpus_init(&corpus, &env);
}

static void
teardown(void)
{
	sess_corpus_free(&corpus);
	sess_env_free(&env);
	test_rmtree(dir);
}

START_TEST(corpus_indexes_headers_titles_and_activity)
{
	struct err e;
	struct sess_entry *en;

	put(A, "{\"type\":\"session\",\"version\":1,\"id\":\"" A "\",\"createdAt\":100,\"cwd\":\"/w\",\"delegationDepth\":0}\n"
	    "{\"seq\":0,\"time\":101,\"type\":\"turn/start\",\"data\":{\"turn\":1}}\n"
	    "{\"seq\":1,\"time\":102,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"First line\\nsecond\"}],\"source\":{\"kind\":\"user\"}}}\n");
	put(B, "{\"type\":\"session\",\"version\":9,\"id\":\"" B "\",\"createdAt\":5,\"cwd\":\"/w\",\"delegationDepth\":1,\"parentSession\":\"" A "\"}\n");
	put("not-an-id", "x\n");
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_scan(&corpus, &e), 0);
	ck_assert_uint_eq(corpus.by_id.len, 2);
	en = sess_corpus_get(&corpus, A);
	ck_assert_int_eq(en->state, SESS_ENTRY_OK);
	ck_assert_str_eq(en->title, "First line");
	ck_assert_int_eq(en->created_at, 100);
	ck_assert_int_eq(en->updated_at, 102);
	en = sess_corpus_get(&corpus, B);
	ck_assert_int_eq(en->state, SESS_ENTRY_UNSUPPORTED);
	ck_assert_str_eq(en->parent, A);
	/* Deterministic mode: the clock and ids continue after what is on disk. */
	ck_assert_int_gt(env.clock.next, 102);
	ck_assert_uint_ge(env.ids.counter, 0xb2);
}
END_TEST

START_TEST(corpus_rereads_a_file_that_changed)
{
	struct err e;
	struct sess_entry *en;
	const char *hdr = "{\"type\":\"session\",\"version\":1,\"id\":\"" A "\",\"createdAt\":100,\"cwd\":\"/w\",\"delegationDepth\":0}\n";
	char more[1024];

	put(A, hdr);
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_scan(&corpus, &e), 0);
	ck_assert_ptr_null(sess_corpus_get(&corpus, A)->title);
	snprintf(more, sizeof(more), "%s%s", hdr,
	    "{\"seq\":0,\"time\":300,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"later\"}],\"source\":{\"kind\":\"user\"}}}\n");
	put(A, more);
	en = sess_corpus_get(&corpus, A);
	ck_assert_str_eq(en->title, "later");
	ck_assert_int_eq(en->updated_at, 300);
	put(A, "garbage\n");
	ck_assert_int_eq(sess_corpus_get(&corpus, A)->state, SESS_ENTRY_CORRUPT);
	char path[256];
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, A);
	unlink(path);
	ck_assert(sess_corpus_get(&corpus, A)->gone);
}
END_TEST

START_TEST(corpus_title_is_at_most_80_characters)
{
	char text[400];
	char *t;

	memset(text, 'x', 100);
	text[100] = '\0';
	t = sess_title_from_text(text);
	ck_assert_uint_eq(strlen(t), 80);
	free(t);
	text[0] = '\0';
	for (int i = 0; i < 90; i++)
		strcat(text, "\xc3\xa9");	/* two bytes, one character */
	t = sess_title_from_text(text);
	ck_assert_uint_eq(strlen(t), 160);
	free(t);
}
END_TEST

START_TEST(corpus_scan_fails_when_the_directory_cannot_be_listed)
{
	struct err e;

	test_rmtree(env.dir);
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_scan(&corpus, &e), -1);
	ck_assert_int_eq(e.code, ERR_SESSION_LOG_IO);
}
END_TEST

/* A file whose header names another session is corrupt in the index (and load refuses it). */
START_TEST(corpus_refuses_a_file_holding_another_session)
{
	struct sess_entry *en;
	struct err e;

	put(A, "{\"type\":\"session\",\"version\":1,\"id\":\"" B "\",\"createdAt\":1,\"cwd\":\"/w\",\"delegationDepth\":0}\n");
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_scan(&corpus, &e), 0);
	en = sess_corpus_get(&corpus, A);
	ck_assert_ptr_nonnull(en);
	ck_assert_int_eq(en->state, SESS_ENTRY_CORRUPT);
	ck_assert_ptr_null(sess_corpus_get(&corpus, B));
}
END_TEST

/* sess_corpus_sort (a radix sort on createdAt, ties by id) gives sess_entry_order's order: ties,
 * the extremes of int64, negative times, real millisecond stamps, sizes from 0 to 20,000. */
START_TEST(corpus_sort_matches_the_entry_order)
{
	struct sess_corpus c;

	memset(&c, 0, sizeof(c));
	srand(7);
	for (int round = 0; round < 300; round++) {
		size_t n = (size_t)(rand() % (round < 200 ? 50 : 20000));
		struct sess_entry *e = calloc(n + 1, sizeof(*e));
		struct sess_entry **a = calloc(n + 1, sizeof(*a)), **b = calloc(n + 1, sizeof(*b));
		int mode = round % 5;
		for (size_t k = 0; k < n; k++) {
			snprintf(e[k].id, sizeof(e[k].id), "00000000-0000-4000-8000-%012x", (unsigned)rand());
			switch (mode) {
			case 0: e[k].created_at = rand() % 4; break;
			case 1: e[k].created_at = ((int64_t)rand() << 31) ^ rand(); break;
			case 2: e[k].created_at = (rand() & 1) ? INT64_MAX - rand() % 3 : INT64_MIN + rand() % 3; break;
			case 3: e[k].created_at = -(int64_t)(rand() % 100000); break;
			default: e[k].created_at = 1700000000000LL + rand() % 100000000; break;
			}
			a[k] = b[k] = &e[k];
		}
		qsort(a, n, sizeof(*a), sess_entry_order);
		sess_corpus_sort(&c, b, n);
		ck_assert_msg(n == 0 || memcmp(a, b, n * sizeof(*a)) == 0, "round %d (%zu entries, mode %d)", round, n,
		    mode);
		free(e);
		free(a);
		free(b);
	}
	free(c.keys);
}
END_TEST

/*
 * The children index (session/kin.h) against a walk of every entry: children created, moved to
 * another parent, re-dated, made unreadable, deleted and brought back, in random order, with
 * inotify and without it (every member stat()ed); the listing is the same set in the same order.
 */
static void
kin_child(int i, int parent, int created)
{
	char id[40], text[512];

	snprintf(id, sizeof(id), "00000000-0000-4000-8000-3%011x", i);
	snprintf(text, sizeof(text), "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":%d,\"cwd\":\"/w\","
	    "\"delegationDepth\":1,\"parentSession\":\"00000000-0000-4000-8000-40000000000%d\"}\n", id, created, parent);
	put(id, text);
}

static void
kin_check(int parent, int round)
{
	char pid[40];
	size_t n, all, k = 0;
	struct sess_entry **got, **every, **want;

	snprintf(pid, sizeof(pid), "00000000-0000-4000-8000-40000000000%d", parent);
	got = sess_corpus_children(&corpus, pid, &n);
	every = sess_corpus_list(&corpus, &all);
	want = calloc(all + 1, sizeof(*want));
	for (size_t i = 0; i < all; i++)
		if (!every[i]->gone && every[i]->parent && strcmp(every[i]->parent, pid) == 0)
			want[k++] = every[i];
	qsort(want, k, sizeof(*want), sess_entry_order);
	ck_assert_msg(n == k && memcmp(got, want, n * sizeof(*got)) == 0, "round %d parent %d: %zu listed, %zu wanted",
	    round, parent, n, k);
	ck_assert_ptr_null(got[n]);
	free(got);
	free(every);
	free(want);
}

START_TEST(corpus_children_index_matches_a_full_walk)
{
	struct err e;
	char path[256], id[40];

	srand(11 + (unsigned)_i);
	for (int i = 0; i < 30; i++)
		kin_child(i, i % 3, 100 + i);
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_scan(&corpus, &e), 0);
	if (_i == 1 && corpus.inotify_fd >= 0) {	/* the fallback: no watch */
		close(corpus.inotify_fd);
		corpus.inotify_fd = -1;
	}
	for (int round = 0; round < 400; round++) {
		int i = rand() % 40;
		snprintf(id, sizeof(id), "00000000-0000-4000-8000-3%011x", i);
		snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, id);
		switch (rand() % 5) {
		case 0:	/* new, moved or re-dated (created or rewritten) */
		case 1:
			rmdir(path);
			kin_child(i, rand() % 3, 100 + rand() % 50);
			sess_corpus_get(&corpus, id);	/* a file no listing knew of is found by id */
			break;
		case 2:	/* gone */
			unlink(path);
			break;
		case 3:	/* unreadable: a directory where the log was */
			if (unlink(path) == 0)
				ck_assert_int_eq(mkdir(path, 0700), 0);
			break;
		default:
			break;
		}
		kin_check(rand() % 3, round);
	}
}
END_TEST

Suite *
corpus_suite(void)
{
	Suite *s = suite_create("corpus");
	TCase *tc = tcase_create("corpus");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, corpus_indexes_headers_titles_and_activity);
	tcase_add_test(tc, corpus_rereads_a_file_that_changed);
	tcase_add_test(tc, corpus_title_is_at_most_80_characters);
	tcase_add_test(tc, corpus_scan_fails_when_the_directory_cannot_be_listed);
	tcase_add_test(tc, corpus_refuses_a_file_holding_another_session);
	tcase_add_test(tc, corpus_sort_matches_the_entry_order);
	tcase_add_loop_test(tc, corpus_children_index_matches_a_full_walk, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}
