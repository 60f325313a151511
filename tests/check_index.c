/*
 * The persistent corpus index (docs/contract.md §5.6): whatever happens to index.v1 or to the session files
 * behind its back, the corpus answers as a fresh build from the files does. The differential
 * helper describes a corpus (every entry's facts, then the session/list order) as text and
 * compares it with the description of a fresh build that never looks at the index file.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <unistd.h>

#include <ev.h>

#include "base/buf.h"
#include "base/xmalloc.h"
#include "session/corpus.h"
#include "session/index.h"
#include "session/reconcile.h"
#include "session/store.h"
#include "tests/helpers.h"

#define R1 "00000000-0000-4000-8000-000000000001"
#define R2 "00000000-0000-4000-8000-000000000002"
#define R3 "00000000-0000-4000-8000-000000000003"
#define C1 "00000000-0000-4000-8000-0000000000c1"

static char dir[64], state[128], index_path[200];
static struct sess_env env;

static void
put(const char *id, const char *text)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, id);
	test_write_file(path, text, strlen(text));
}

static void
put_root(const char *id, int created, int time, const char *cwd, const char *title)
{
	char text[1024];

	snprintf(text, sizeof(text),
	    "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":%d,\"cwd\":\"%s\",\"delegationDepth\":0}\n"
	    "{\"seq\":0,\"time\":%d,\"type\":\"user/message\",\"data\":{\"id\":\"m\",\"content\":[{\"type\":\"text\","
	    "\"text\":\"%s\"}],\"source\":{\"kind\":\"user\"}}}\n", id, created, cwd, time, title);
	put(id, text);
}

static void
put_child(const char *id, const char *parent, int created)
{
	char text[1024];

	snprintf(text, sizeof(text),
	    "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":%d,\"cwd\":\"/w\",\"delegationDepth\":1,"
	    "\"parentSession\":\"%s\",\"origin\":\"subagent\"}\n"
	    "{\"seq\":0,\"time\":%d,\"type\":\"subagent/descriptor\",\"data\":{\"version\":2,\"mode\":\"continuable\","
	    "\"provider\":\"in-process\",\"label\":\"kid\"}}\n", id, created, parent, created + 1);
	put(id, text);
}

/* A small corpus of every kind: roots in two cwds, a child, an unsupported and a corrupt file. */
static void
put_corpus(void)
{
	put_root(R1, 10, 110, "/a", "one");
	put_root(R2, 20, 130, "/b", "two");
	put_root(R3, 30, 120, "/a", "three");
	put_child(C1, R1, 40);
	put("00000000-0000-4000-8000-0000000000e1",
	    "{\"type\":\"session\",\"version\":9,\"id\":\"00000000-0000-4000-8000-0000000000e1\",\"createdAt\":5}\n");
	put("00000000-0000-4000-8000-0000000000e2", "not json\n");
}

static void
opt(struct buf *b, const char *s)
{
	buf_printf(b, " %s", s ? s : "-");
}

static int
by_id(const void *pa, const void *pb)
{
	return strcmp((*(struct sess_entry *const *)pa)->id, (*(struct sess_entry *const *)pb)->id);
}

/* The answers of c as text (owned): every entry by id, then the roots newest first. */
static char *
describe_parts(struct map *m, const struct sess_order *o)
{
	struct sess_entry **v = xcalloc(m->len + 1, sizeof(*v));
	size_t pos = 0, k = 0;
	void *val;
	struct buf b;

	buf_init(&b);
	while (map_next(m, &pos, NULL, &val))
		if (!((struct sess_entry *)val)->gone)
			v[k++] = val;
	qsort(v, k, sizeof(*v), by_id);
	for (size_t i = 0; i < k; i++) {
		buf_printf(&b, "%s state=%d created=%lld depth=%d", v[i]->id, (int)v[i]->state,
		    (long long)v[i]->created_at, v[i]->depth);
		if (v[i]->state == SESS_ENTRY_OK)
			buf_printf(&b, " updated=%lld", (long long)v[i]->updated_at);
		opt(&b, v[i]->cwd);
		opt(&b, v[i]->parent);
		opt(&b, v[i]->origin);
		opt(&b, v[i]->title);
		opt(&b, v[i]->label);
		opt(&b, v[i]->mode);
		buf_puts(&b, "\n");
	}
	buf_puts(&b, "list:");
	for (size_t i = o->n; i > 0; i--)
		buf_printf(&b, " %s@%lld", o->v[i - 1]->id, (long long)o->v[i - 1]->updated_at);
	buf_puts(&b, "\n");
	free(v);
	return buf_steal(&b);
}

static char *
describe(struct sess_corpus *c)
{
	const struct sess_order *o = sess_corpus_roots(c);

	return describe_parts(&c->by_id, o);
}

/* A fresh build from the files alone: the index file is neither read nor written. */
static char *
describe_fresh(void)
{
	struct sess_reconcile r;
	char *text;

	sess_reconcile_init(&r, env.state_dir, env.dir, 0);
	r.write_index = 0;
	sess_reconcile_run(&r, NULL);
	ck_assert(!r.failed);
	text = describe_parts(&r.by_id, &r.roots);
	sess_reconcile_free(&r);
	return text;
}

/*
 * The differential check: a corpus scanned now (index file and all) answers as a fresh build.
 * Returns what it logged (owned): a bad index file is reported once.
 */
static char *
same_as_fresh(void)
{
	struct sess_corpus c;
	struct err e;
	char *got, *want = describe_fresh();

	test_log_capture_start();
	sess_corpus_init(&c, &env);
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_scan(&c, &e), 0);
	got = describe(&c);
	ck_assert_str_eq(got, want);
	sess_corpus_free(&c);
	free(got);
	free(want);
	return test_log_capture_stop();
}

static void
assert_same_as_fresh(void)
{
	free(same_as_fresh());
}

/* The same, and the index file was reported as ignored. */
static void
assert_same_as_fresh_logged(const char *why)
{
	char *logged = same_as_fresh();

	ck_assert_msg(strstr(logged, "the index file was ignored") && strstr(logged, why), "logged: %s", logged);
	free(logged);
}

/* One reconcile run with the index file, for its counts; *why gets the reason it was ignored. */
static void
run_with_index(size_t *kept, size_t *read, size_t *dropped, int *bad, enum err_code *why)
{
	struct sess_reconcile r;

	sess_reconcile_init(&r, env.state_dir, env.dir, 1);
	r.write_index = 0;
	sess_reconcile_run(&r, NULL);
	*kept = r.kept;
	*read = r.read;
	*dropped = r.dropped;
	*bad = r.index_bad;
	*why = r.why.code;
	sess_reconcile_free(&r);
}

/* Builds the index file from the files as start-up does. */
static void
build_index(void)
{
	struct sess_corpus c;
	struct err e;

	sess_corpus_init(&c, &env);
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_scan(&c, &e), 0);
	sess_corpus_free(&c);
	ck_assert_int_eq(access(index_path, F_OK), 0);
}

static void
setup(void)
{
	struct err e;

	test_mkdtemp(dir, sizeof(dir));
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(index_path, sizeof(index_path), "%s/%s", state, SESS_INDEX_NAME);
	err_clear(&e);
	ck_assert_int_eq(sess_env_init(&env, state, SESS_SYNC_NONE, 0, NULL, &e), 0);
}

static void
teardown(void)
{
	sess_env_free(&env);
	test_rmtree(dir);
}

START_TEST(index_is_written_then_used)
{
	size_t kept, read, dropped;
	int bad;
	enum err_code why;

	put_corpus();
	build_index();
	run_with_index(&kept, &read, &dropped, &bad, &why);
	/* Every readable file comes from the index; the unreadable ones are not indexed at all. */
	ck_assert_uint_eq(kept, 6);
	ck_assert_uint_eq(read, 0);
	ck_assert_uint_eq(dropped, 0);
	ck_assert(!bad);
	assert_same_as_fresh();
}
END_TEST

START_TEST(index_deleted_gives_the_same_answers)
{
	put_corpus();
	build_index();
	unlink(index_path);
	assert_same_as_fresh();
	ck_assert_int_eq(access(index_path, F_OK), 0);	/* written again */
}
END_TEST

/* Truncated at every length: ignored, the same answers, and a good index written again. */
START_TEST(index_truncated_is_ignored_and_rebuilt)
{
	size_t len, kept, read, dropped;
	char *good;
	int bad;
	enum err_code why;

	put_corpus();
	build_index();
	good = test_read_file(index_path, &len);
	for (size_t cut = 0; cut < len; cut += (cut < 64 || cut > len - 64) ? 1 : 97) {
		test_write_file(index_path, good, cut);
		run_with_index(&kept, &read, &dropped, &bad, &why);
		ck_assert_msg(bad, "cut at %zu of %zu was trusted", cut, len);
		ck_assert_uint_eq(kept, 0);
	}
	test_write_file(index_path, good, len / 2);
	assert_same_as_fresh_logged("torn");
	run_with_index(&kept, &read, &dropped, &bad, &why);
	ck_assert(!bad);
	ck_assert_uint_eq(kept, 6);
	free(good);
}
END_TEST

/* Any flipped byte is caught (checksum, magic, marker, version or trailer). */
START_TEST(index_flipped_bytes_are_ignored)
{
	size_t len, kept, read, dropped;
	char *good;
	int bad;
	enum err_code why;

	put_corpus();
	build_index();
	good = test_read_file(index_path, &len);
	for (size_t at = 0; at < len; at++) {
		good[at] ^= 0x20;
		test_write_file(index_path, good, len);
		good[at] ^= 0x20;
		run_with_index(&kept, &read, &dropped, &bad, &why);
		ck_assert_msg(bad, "a flip at %zu of %zu was trusted", at, len);
	}
	good[len / 2] ^= 1;
	test_write_file(index_path, good, len);
	assert_same_as_fresh_logged("checksum");
	free(good);
}
END_TEST

START_TEST(index_other_version_or_byte_order_is_ignored)
{
	size_t len, kept, read, dropped;
	char *good;
	int bad;
	enum err_code why;
	uint32_t v = SESS_INDEX_VERSION + 1, marker = 0x04030201u;

	put_corpus();
	build_index();
	good = test_read_file(index_path, &len);
	memcpy(good + 8, &v, 4);
	test_write_file(index_path, good, len);
	run_with_index(&kept, &read, &dropped, &bad, &why);
	ck_assert(bad);
	ck_assert_int_eq(why, ERR_SESSION_UNSUPPORTED);
	assert_same_as_fresh_logged("version");
	free(good);
	good = test_read_file(index_path, &len);
	memcpy(good + 12, &marker, 4);
	test_write_file(index_path, good, len);
	run_with_index(&kept, &read, &dropped, &bad, &why);
	ck_assert(bad);
	ck_assert_int_eq(why, ERR_SESSION_UNSUPPORTED);
	assert_same_as_fresh_logged("byte order");
	free(good);
}
END_TEST

/* Writes payload (header + entries) with a correct trailer. */
static void
forge(const char *payload, size_t len)
{
	char *d = xmalloc(len + 24);
	uint64_t l = len, s = sess_index_sum((const unsigned char *)payload, len);

	memcpy(d, payload, len);
	memcpy(d + len, &l, 8);
	memcpy(d + len + 8, &s, 8);
	memcpy(d + len + 16, "ACPIEND\n", 8);
	test_write_file(index_path, d, len + 24);
	free(d);
}

/* Well framed but lying inside: a count too big, bytes left over, a bad id, a NUL in a string. */
START_TEST(index_lies_inside_a_good_frame_are_ignored)
{
	size_t len, kept, read, dropped;
	char *good, *p;
	int bad;
	enum err_code why;
	uint64_t count;

	put_root(R1, 10, 110, "/a", "one");
	build_index();
	good = test_read_file(index_path, &len);
	len -= 24;			/* the payload */
	/* count 2 with one entry */
	count = 2;
	memcpy(good + 16, &count, 8);
	forge(good, len);
	run_with_index(&kept, &read, &dropped, &bad, &why);
	ck_assert(bad);
	count = 1;
	memcpy(good + 16, &count, 8);
	/* a byte after the last entry */
	p = xmalloc(len + 1);
	memcpy(p, good, len);
	p[len] = 'x';
	forge(p, len + 1);
	run_with_index(&kept, &read, &dropped, &bad, &why);
	ck_assert(bad);
	free(p);
	/* an id that is not one */
	good[24] = 'X';
	forge(good, len);
	run_with_index(&kept, &read, &dropped, &bad, &why);
	ck_assert(bad);
	good[24] = '0';
	/* a NUL inside the title "one" (it is the last bytes before the label and mode: -1 -1) */
	p = memmem(good, len, "one", 3);
	ck_assert_ptr_nonnull(p);
	p[1] = '\0';
	forge(good, len);
	run_with_index(&kept, &read, &dropped, &bad, &why);
	ck_assert(bad);
	p[1] = 'n';
	/* the repaired payload is trusted again: the forging itself is right */
	forge(good, len);
	run_with_index(&kept, &read, &dropped, &bad, &why);
	ck_assert(!bad);
	ck_assert_uint_eq(kept, 1);
	assert_same_as_fresh();
	free(good);
}
END_TEST

/* Entries the writer would never write: a good entry without cwd, one id twice. */
START_TEST(index_with_impossible_entries_is_ignored)
{
	struct sess_entry a, b, *v[2] = { &a, &b };
	size_t kept, read, dropped;
	int bad;
	enum err_code why;
	struct err e;

	put_root(R1, 10, 110, "/a", "one");
	memset(&a, 0, sizeof(a));
	memcpy(a.id, R1, sizeof(a.id));
	a.state = SESS_ENTRY_OK;
	err_clear(&e);
	ck_assert_int_eq(sess_index_write(index_path, v, 1, &e), 0);
	run_with_index(&kept, &read, &dropped, &bad, &why);
	ck_assert(bad);
	ck_assert_int_eq(why, ERR_SESSION_CORRUPT);
	char cwd[] = "/a";
	a.cwd = cwd;
	b = a;
	ck_assert_int_eq(sess_index_write(index_path, v, 2, &e), 0);
	run_with_index(&kept, &read, &dropped, &bad, &why);
	ck_assert(bad);
	ck_assert_uint_eq(read, 1);
	assert_same_as_fresh_logged("twice");
}
END_TEST

/* Changed, added and removed behind its back (while not running): found by size and mtime. */
START_TEST(index_files_changed_behind_its_back)
{
	size_t kept, read, dropped;
	int bad;
	enum err_code why;
	char path[256];

	put_corpus();
	build_index();
	put_root(R1, 10, 500, "/a", "one, later");		/* changed: newest now */
	put_root("00000000-0000-4000-8000-000000000004", 40, 90, "/b", "four");	/* added */
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, R2);
	unlink(path);						/* removed */
	put_child(C1, R3, 40);					/* another parent, same size */
	run_with_index(&kept, &read, &dropped, &bad, &why);
	ck_assert(!bad);
	ck_assert_uint_eq(read, 3);
	ck_assert_uint_eq(dropped, 1);
	assert_same_as_fresh();
}
END_TEST

/* The index file cannot be replaced (a directory holds its name): answers stand, logged once. */
START_TEST(index_write_failures_change_no_answer)
{
	struct sess_entry *v[1] = { NULL };
	struct err e;
	size_t kept, read, dropped;
	int bad;
	enum err_code why;

	put_corpus();
	ck_assert_int_eq(mkdir(index_path, 0700), 0);
	run_with_index(&kept, &read, &dropped, &bad, &why);
	ck_assert(bad);			/* not a regular file */
	char *logged = same_as_fresh();
	ck_assert_ptr_nonnull(strstr(logged, "the index file was ignored"));
	free(logged);
	struct sess_reconcile r;
	sess_reconcile_init(&r, env.state_dir, env.dir, 1);
	sess_reconcile_run(&r, NULL);
	ck_assert(r.write_failed);
	ck_assert_int_eq(r.write_err.code, ERR_SESSION_LOG_IO);
	sess_reconcile_free(&r);
	/* the temporary file cannot be created (no descriptor left: Check runs this in its own
	 * process, so the limit is this test's alone) */
	rmdir(index_path);
	struct rlimit was, none;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &was), 0);
	none = was;
	none.rlim_cur = 0;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &none), 0);
	err_clear(&e);
	int wrote = sess_index_write(index_path, v, 0, &e);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &was), 0);
	ck_assert_int_eq(wrote, -1);
	ck_assert_int_eq(e.code, ERR_SESSION_LOG_IO);
	ck_assert_int_ne(access(index_path, F_OK), 0);
}
END_TEST

/* While it runs, files changed behind its back are seen through inotify, each re-read alone. */
START_TEST(index_runtime_changes_are_seen)
{
	struct sess_corpus c;
	struct err e;
	char *got, *want;

	put_corpus();
	build_index();
	sess_corpus_init(&c, &env);
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_scan(&c, &e), 0);
	/* Behind its back at run time: inotify marks them, the next listing re-reads only those. */
	put_root(R2, 20, 50, "/b", "two, rewritten");
	put_root("00000000-0000-4000-8000-000000000005", 50, 140, "/a", "five");
	char path[256];
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, R3);
	unlink(path);
	got = describe(&c);
	want = describe_fresh();
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	sess_corpus_free(&c);
}
END_TEST

static int ready_calls;

static void
on_ready(void *arg)
{
	ready_calls++;
	ev_break(arg, EVBREAK_ALL);
}

/* The start-up path: nothing read before the kick, a worker builds it, the loop adopts it. */
START_TEST(index_worker_builds_it_off_the_loop)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct sess_corpus c;
	struct runq q;
	struct err e;
	char *got, *want;

	put_corpus();
	build_index();
	put_root(R1, 10, 700, "/a", "one, later");
	runq_init(&q, loop);
	sess_corpus_init(&c, &env);
	err_clear(&e);
	ready_calls = 0;
	ck_assert_int_eq(sess_corpus_start(&c, loop, &q, on_ready, loop, &e), 0);
	ck_assert(!sess_corpus_is_ready(&c));
	ck_assert_uint_eq(c.by_id.len, 0);
	/* Before it is ready a session can still be looked up: its file is read at once. */
	ck_assert_int_eq(sess_corpus_get(&c, R2)->state, SESS_ENTRY_OK);
	sess_corpus_kick(&c);
	sess_corpus_kick(&c);		/* once */
	ev_run(loop, 0);
	ck_assert_int_eq(ready_calls, 1);
	ck_assert(sess_corpus_is_ready(&c));
	got = describe(&c);
	want = describe_fresh();
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	sess_corpus_free(&c);
	runq_stop(&q);
	ev_loop_destroy(loop);
}
END_TEST

/* Freed while the worker runs: it is stopped and joined; no index file comes of it. */
START_TEST(index_worker_stopped_at_shutdown)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct sess_corpus c;
	struct runq q;
	struct err e;

	put_corpus();
	runq_init(&q, loop);
	sess_corpus_init(&c, &env);
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_start(&c, loop, &q, on_ready, loop, &e), 0);
	sess_corpus_kick(&c);
	sess_corpus_free(&c);
	runq_stop(&q);
	ev_loop_destroy(loop);
}
END_TEST

/* The directory cannot be listed: start-up fails at once; vanished by the time the worker runs: logged, ready. */
START_TEST(index_directory_errors)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct sess_corpus c;
	struct runq q;
	struct err e;

	runq_init(&q, loop);
	sess_corpus_init(&c, &env);
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_start(&c, loop, &q, on_ready, loop, &e), 0);
	test_rmtree(env.dir);
	ready_calls = 0;
	test_log_capture_start();
	sess_corpus_kick(&c);
	ev_run(loop, 0);
	char *logged = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(logged, "cannot list"));
	free(logged);
	ck_assert_int_eq(ready_calls, 1);
	ck_assert(sess_corpus_is_ready(&c));
	ck_assert_uint_eq(sess_corpus_roots(&c)->n, 0);
	sess_corpus_free(&c);
	sess_corpus_init(&c, &env);
	err_clear(&e);
	ck_assert_int_eq(sess_corpus_start(&c, loop, &q, on_ready, loop, &e), -1);
	ck_assert_int_eq(e.code, ERR_SESSION_LOG_IO);
	sess_corpus_free(&c);
	runq_stop(&q);
	ev_loop_destroy(loop);
}
END_TEST

/* The sorted root list: inserts, moves and removals keep it in order; lower finds a cursor's place. */
START_TEST(index_order_stays_sorted)
{
	struct sess_entry e[64];
	struct sess_order o;
	unsigned seed = 7;

	sess_order_init(&o);
	memset(e, 0, sizeof(e));
	for (int i = 0; i < 64; i++) {
		snprintf(e[i].id, sizeof(e[i].id), "00000000-0000-4000-8000-%012d", i);
		e[i].updated_at = (seed = seed * 1103515245u + 12345u) % 16;
		sess_order_insert(&o, &e[i]);
	}
	for (int round = 0; round < 200; round++) {
		struct sess_entry *en = &e[(seed = seed * 1103515245u + 12345u) % 64];
		if (en->listed)
			sess_order_remove(&o, en);
		en->updated_at = (seed = seed * 1103515245u + 12345u) % 16;
		if (round % 3)
			sess_order_insert(&o, en);
	}
	for (size_t i = 1; i < o.n; i++) {
		ck_assert(o.v[i - 1]->listed_at < o.v[i]->listed_at ||
		    (o.v[i - 1]->listed_at == o.v[i]->listed_at && strcmp(o.v[i - 1]->id, o.v[i]->id) < 0));
		ck_assert(o.v[i]->listed);
	}
	for (size_t i = 0; i < o.n; i++)
		ck_assert_uint_eq(sess_order_lower(&o, o.v[i]->listed_at, o.v[i]->id), i);
	ck_assert_uint_eq(sess_order_lower(&o, -1, e[0].id), 0);
	ck_assert_uint_eq(sess_order_lower(&o, 99, e[0].id), o.n);
	sess_order_free(&o);
}
END_TEST

Suite *
index_suite(void)
{
	Suite *s = suite_create("index");
	TCase *tc = tcase_create("index");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, index_is_written_then_used);
	tcase_add_test(tc, index_deleted_gives_the_same_answers);
	tcase_add_test(tc, index_truncated_is_ignored_and_rebuilt);
	tcase_add_test(tc, index_flipped_bytes_are_ignored);
	tcase_add_test(tc, index_other_version_or_byte_order_is_ignored);
	tcase_add_test(tc, index_lies_inside_a_good_frame_are_ignored);
	tcase_add_test(tc, index_with_impossible_entries_is_ignored);
	tcase_add_test(tc, index_files_changed_behind_its_back);
	tcase_add_test(tc, index_write_failures_change_no_answer);
	tcase_add_test(tc, index_runtime_changes_are_seen);
	tcase_add_test(tc, index_worker_builds_it_off_the_loop);
	tcase_add_test(tc, index_worker_stopped_at_shutdown);
	tcase_add_test(tc, index_directory_errors);
	tcase_add_test(tc, index_order_stays_sorted);
	tcase_set_timeout(tc, 20);
	suite_add_tcase(s, tc);
	return s;
}
