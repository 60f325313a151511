/* base/: utf8, map, run queue, JSON encoder and raw reader, SHA-256. */
#include <ctype.h>
#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/frontmatter.h"
#include "base/jenc.h"
#include "base/jsonraw.h"
#include "base/map.h"
#include "base/offload.h"
#include "base/runq.h"
#include "base/sha256.h"
#include "base/utf8.h"
#include "base/xmalloc.h"
#include "base/err.h"
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

static char order[32];
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

static void
task_next(void *arg)
{
	order_add(arg);
	runq_push_next(q_under_test, task_b, lc);	/* right after this task, in push order */
	runq_push_next(q_under_test, task_b, lz);
}

START_TEST(runq_push_next_runs_right_after_its_task)
{
	struct runq q;

	runq_init(&q, NULL);
	q_under_test = &q;
	order[0] = '\0';
	runq_push(&q, task_next, la);
	runq_push(&q, task_b, lb);
	runq_push_next(&q, task_b, lz);		/* outside a drain: a plain push */
	runq_drain(&q);
	ck_assert_str_eq(order, "aczbz");
	runq_stop(&q);
}
END_TEST

/* ---- the run queue on a real loop: slices, I/O between them, the same order ---- */

static struct {
	struct runq q;
	ev_io io;
	ev_timer guard;
	long spins;
	int io_seen, x_ran, timed_out;
} L;

static void
loop_spin(void *arg)
{
	(void)arg;
	L.spins++;
	runq_push(&L.q, loop_spin, NULL);	/* runnable forever, like a turn that never waits */
}

static void
loop_io_break_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)revents;
	L.io_seen = 1;
	ev_io_stop(loop, w);
	ev_break(loop, EVBREAK_ALL);
}

static void
loop_guard_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	L.timed_out = 1;
	ev_break(loop, EVBREAK_ALL);
}

/* A pipe with one byte waiting, a watcher on it, and a 3 s guard. */
static struct ev_loop *
loop_start(int fds[2], void (*io_cb)(struct ev_loop *, ev_io *, int))
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);

	memset(&L, 0, sizeof(L));
	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(write(fds[1], "!", 1), 1);
	runq_init(&L.q, loop);
	ev_io_init(&L.io, io_cb, fds[0], EV_READ);
	ev_io_start(loop, &L.io);
	ev_timer_init(&L.guard, loop_guard_cb, 3., 0.);
	ev_timer_start(loop, &L.guard);
	return loop;
}

static void
loop_finish(struct ev_loop *loop, int fds[2])
{
	ev_timer_stop(loop, &L.guard);
	ev_io_stop(loop, &L.io);
	runq_stop(&L.q);
	ev_loop_destroy(loop);
	close(fds[0]);
	close(fds[1]);
}

START_TEST(runq_endless_work_does_not_starve_io)
{
	int fds[2];
	struct ev_loop *loop = loop_start(fds, loop_io_break_cb);

	L.q.slice_tasks = 0;		/* only the time budget: a few ms per slice */
	runq_push(&L.q, loop_spin, NULL);
	ev_run(loop, 0);
	ck_assert_msg(!L.timed_out, "the pipe was never served");
	ck_assert(L.io_seen);
	ck_assert_int_gt(L.spins, 0);
	loop_finish(loop, fds);
}
END_TEST

static void
loop_task_x(void *arg)
{
	order_add(arg);
	L.x_ran = 1;
}

static void
loop_io_push_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)revents;
	order_add("i");
	ev_io_stop(loop, w);
	runq_push(&L.q, loop_task_x, (char *)"x");	/* from outside the cut drain: after it */
}

static void
loop_settle(void *arg)
{
	struct ev_loop *loop = arg;

	order_add("!");
	if (L.x_ran)
		ev_break(loop, EVBREAK_ALL);
}

START_TEST(runq_slices_keep_the_order_and_settle_once_drained)
{
	int fds[2];
	struct ev_loop *loop = loop_start(fds, loop_io_push_cb);

	L.q.slice_tasks = 1;
	L.q.slice_time = 0;
	q_under_test = &L.q;
	runq_set_sync(&L.q, sync_mark, NULL);
	runq_set_settle(&L.q, loop_settle, loop);
	order[0] = '\0';
	runq_push_after_sync(&L.q, task_b, lz);
	runq_push(&L.q, task_a, la);
	runq_push(&L.q, task_b, lb);
	runq_push(&L.q, task_b, (char *)"y");
	ev_run(loop, 0);
	ck_assert_msg(!L.timed_out, "the loop slept with work queued: %s", order);
	/*
	 * The pipe is served after the first slice, and its task waits for the drain: the order of
	 * one uninterrupted drain ("abyc|z|", then "x|"), the settle hook only once all is done.
	 */
	ck_assert_str_eq(order, "aibyc|z|x|!");
	ck_assert(runq_empty(&L.q));
	loop_finish(loop, fds);
}
END_TEST

/* The encoder's bytes must be jansson's JSON_COMPACT bytes, on every kind of value. */
static void
same_as_jansson(const json_t *v)
{
	char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	size_t len = 0;
	char *got = jenc_dumps(v, &len);

	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	ck_assert_uint_eq(len, strlen(want));
	free(want);
	free(got);
}

START_TEST(jenc_matches_jansson_compact_output)
{
	const char *texts[] = {
		"{}", "[]", "{\"a\":[1,-2,3.5,1e300,0.1,-0.0,true,false,null,\"\"]}",
		"{\"seq\":9223372036854775807,\"n\":-9223372036854775808,\"r\":100000000000000000000.0}",
		"\"plain ascii text that is longer than eight bytes\"",
		"\"quote \\\" backslash \\\\ slash / tab \\t nl \\n cr \\r bs \\b ff \\f\"",
		"\"controls \\u0001\\u001f\\u0000\\u007f end\"",
		"\"utf8 \\u00e9\\u20ac\\ud83d\\ude00 \\u2028\\u2029 mixed\"",
		"{\"k\\\"ey\":{\"nested\":[[[]],{}]},\"\\u00e9\":\"x\",\"dup\":1}",
		"[\"a\",\"abcdefg\",\"abcdefgh\",\"abcdefghi\",\"\\\"abcdefgh\",\"abcdefg\\\"\"]",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		json_error_t je;
		json_t *v = json_loads(texts[i], JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
		ck_assert_msg(v != NULL, "%s: %s", texts[i], je.text);
		same_as_jansson(v);
		json_decref(v);
	}
	/* Every single byte value at every position of an 8-byte word. */
	for (int c = 1; c < 0x80; c++) {
		for (int at = 0; at < 9; at++) {
			char s[10];
			memset(s, 'a', sizeof(s));
			s[at] = (char)c;
			json_t *v = json_stringn(s, sizeof(s));
			same_as_jansson(v);
			json_decref(v);
		}
	}
}
END_TEST

/* json_raw_copy of text writes jenc's bytes of jansson's tree of it, or (-1) nothing. */
static int
raw_copy_is_jenc(const char *text)
{
	struct json_span v = { text, strlen(text), 0 };
	struct buf b;
	int r;

	buf_init(&b);
	buf_puts(&b, "pre");
	r = json_raw_copy(&b, &v);
	if (r == 0) {
		json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		char *want;
		ck_assert_msg(j != NULL, "copied what jansson refuses: %s", text);
		want = jenc_dumps(j, NULL);
		ck_assert_msg(strcmp(b.data + 3, want) == 0, "%s: %s, want %s", text, b.data + 3, want);
		free(want);
		json_decref(j);
	} else {
		ck_assert_str_eq(b.data, "pre");	/* nothing written */
	}
	buf_free(&b);
	return r;
}

START_TEST(json_raw_copy_writes_jenc_bytes_or_nothing)
{
	static const char *const yes[] = {
		"{}", "[]", "\"\"", "0", "-12", "123456789012345678", "true", "false", "null",
		"{\"a\":[1,{\"b\":\"c\"},[]],\"d\":null}",
		" { \"a\" : [ 1 , 2 ] , \"b\" : { } } ",	/* another writer's spaces */
		"\"caf\\u00e9 \\/ \\u001f \\u001F \\ud83d\\ude00 \\t\\n\\\"\\\\ \\b\\f\\r\"",	/* and escapes */
		"\"\\u007f \\u0041\"", "\"snow \xe2\x98\x83\"", "{\"k\\u0065y\":1}",
	};
	static const char *const no[] = {
		"1.5", "1e3", "-0", "1234567890123456789", "\"nul \\u0000\"", "{\"a\" 1}", "[1,]", "{,}", "[1 2]",
		"{\"a\":1}x", "tru", "\"open", "\"raw \x01 control\"", "\"bad \xff utf8\"", "\"\\ud800 alone\"",
		"{\"a\":}", "[}", "{]", "", "   ", "{\"a\":1,}", "\"x\":1", "01", "+1", "-", "[1]]",
	};
	char deep[200];

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		ck_assert_msg(raw_copy_is_jenc(yes[i]) == 0, "refused %s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		ck_assert_msg(raw_copy_is_jenc(no[i]) < 0, "copied %s", no[i]);
	memset(deep, '[', 65);
	memset(deep + 65, ']', 65);
	deep[130] = '\0';
	ck_assert_int_lt(raw_copy_is_jenc(deep), 0);	/* deeper than it goes */
	deep[64] = '\0';
	memset(deep, '[', 32);
	memset(deep + 32, ']', 32);
	ck_assert_int_eq(raw_copy_is_jenc(deep), 0);
}
END_TEST

/* Random trees written by jansson in its other styles (ASCII escapes, indents, escaped slashes):
 * copied, each is jenc's compact text of the same tree. */
START_TEST(json_raw_copy_agrees_with_jansson_on_random_trees)
{
	static const char *const strs[] = { "", "a/b", "caf\xc3\xa9", "\xf0\x9f\x98\x80", "q\"b\\", "\x01\x1f\t\n", "long text here" };
	static const size_t flags[] = { JSON_COMPACT, JSON_ENSURE_ASCII, JSON_INDENT(2), JSON_ESCAPE_SLASH | JSON_COMPACT };
	unsigned seed = 1;

	for (int k = 0; k < 400; k++) {
		json_t *stack[8], *root = json_object();
		int depth = 1;
		stack[0] = root;
		for (int n = 0; n < 20; n++) {
			seed = seed * 1103515245u + 12345u;
			unsigned r = (seed >> 16) % 9;
			json_t *top = stack[depth - 1], *v;
			switch (r) {
			case 0: v = json_object(); break;
			case 1: v = json_array(); break;
			case 2: v = json_integer((json_int_t)(seed % 100000) - 50000); break;
			case 3: v = json_true(); break;
			case 4: v = json_null(); break;
			default: v = json_string(strs[seed % 7]); break;
			}
			if (json_is_object(top)) {
				char key[16];
				snprintf(key, sizeof(key), "k%u%s", n, seed % 3 == 0 ? "\xc3\xa9" : "");
				json_object_set_new(top, key, v);
			} else {
				json_array_append_new(top, v);
			}
			if ((json_is_object(v) || json_is_array(v)) && depth < 8)
				stack[depth++] = v;
			else if (r % 4 == 0 && depth > 1)
				depth--;
		}
		char *text = json_dumps(root, flags[k % 4]);
		ck_assert_int_eq(raw_copy_is_jenc(text), 0);
		free(text);
		json_decref(root);
	}
}
END_TEST

/* The tape finds a value by its key without a tree, and says when it cannot be sure. */
START_TEST(json_tape_finds_values_and_says_when_it_is_not_sure)
{
	static const char text[] = "{\"a\":1,\"b\":{\"c\":[1,\"x]\",{\"d\":\"y}\"}]},\"e\":\"s\\\"q\",\"f\":[]}";
	struct json_tape tp;
	size_t at, b, c;
	struct json_span v;
	struct buf d;

	json_tape_init(&tp);
	ck_assert_int_eq(json_tape_build(&tp, text, strlen(text)), 0);
	ck_assert_int_eq(json_tape_get(&tp, 0, "a", &at), 1);
	v = json_tape_span(&tp, at);
	ck_assert_int_eq((int)v.n, 1);
	ck_assert_int_eq(json_tape_get(&tp, 0, "b", &b), 1);
	ck_assert_int_eq(json_tape_get(&tp, b, "c", &c), 1);
	ck_assert_int_eq(tp.t[c].s[0], '[');
	ck_assert_int_eq(tp.t[tp.t[c + 1].end].s[0], '"');	/* the array's second item: "x]" */
	ck_assert_int_eq(json_tape_get(&tp, 0, "e", &at), 1);
	v = json_tape_span(&tp, at);
	buf_init(&d);
	ck_assert_int_eq(json_raw_decode(&v, &d), 0);
	ck_assert_str_eq(d.data, "s\"q");
	buf_free(&d);
	ck_assert_int_eq(json_tape_get(&tp, 0, "zz", &at), 0);
	ck_assert_int_eq(json_tape_get(&tp, c, "a", &at), -1);	/* not an object */
	/* a key twice, or escaped (it may be the one asked for): not sure */
	ck_assert_int_eq(json_tape_build(&tp, "{\"a\":1,\"a\":2}", 13), 0);
	ck_assert_int_eq(json_tape_get(&tp, 0, "a", &at), -1);
	ck_assert_int_eq(json_tape_build(&tp, "{\"\\u0061\":1}", 12), 0);
	ck_assert_int_eq(json_tape_get(&tp, 0, "a", &at), -1);
	/* brackets and quotes that do not close, or close the wrong way */
	ck_assert_int_eq(json_tape_build(&tp, "{\"a\":[1}", 8), -1);
	ck_assert_int_eq(json_tape_build(&tp, "{\"a\":1", 6), -1);
	ck_assert_int_eq(json_tape_build(&tp, "{\"a\":\"1}", 8), -1);
	ck_assert_int_eq(json_tape_build(&tp, "]", 1), -1);
	ck_assert_int_eq(json_tape_build(&tp, "{}{}", 4), -1);
	ck_assert_int_eq(json_tape_build(&tp, "", 0), -1);
	json_tape_free(&tp);
}
END_TEST

START_TEST(json_raw_decode_and_int_refuse_what_a_c_string_cannot_hold)
{
	struct json_span v;
	struct buf d;
	long long x;

	buf_init(&d);
	buf_puts(&d, "k");
	v = (struct json_span){ "\"a\\u0000b\"", 10, 0 };
	ck_assert_int_eq(json_raw_decode(&v, &d), -1);
	v = (struct json_span){ "\"a\xff\"", 4, 0 };
	ck_assert_int_eq(json_raw_decode(&v, &d), -1);
	v = (struct json_span){ "\"open", 5, 0 };
	ck_assert_int_eq(json_raw_decode(&v, &d), -1);
	v = (struct json_span){ "12", 2, 0 };
	ck_assert_int_eq(json_raw_decode(&v, &d), -1);
	ck_assert_str_eq(d.data, "k");	/* untouched */
	v = (struct json_span){ "\"\\u00e9\\n\"", 10, 0 };
	ck_assert_int_eq(json_raw_decode(&v, &d), 0);
	ck_assert_str_eq(d.data, "k\xc3\xa9\n");
	buf_free(&d);
	v = (struct json_span){ "-42", 3, 0 };
	ck_assert(json_raw_int(&v, &x) && x == -42);
	v = (struct json_span){ "1.0", 3, 0 };
	ck_assert(!json_raw_int(&v, &x));
	v = (struct json_span){ "0123", 4, 0 };
	ck_assert(!json_raw_int(&v, &x));
	v = (struct json_span){ "1234567890123456789", 19, 0 };
	ck_assert(!json_raw_int(&v, &x));
	v = (struct json_span){ "\"a\"", 3, 0 };
	ck_assert(json_raw_is(&v, "a") == 1 && json_raw_is(&v, "b") == 0);
	v = (struct json_span){ "\"\\u0061\"", 8, 0 };
	ck_assert_int_eq(json_raw_is(&v, "a"), -1);	/* not its bytes: the caller is not sure */
	v = (struct json_span){ "12", 2, 0 };
	ck_assert_int_eq(json_raw_is(&v, "12"), -1);	/* not a string */
}
END_TEST

/* Work that gives way (a load's rebuild) runs on a thread niced by what it asked for. */
struct behind {
	int nice_seen;
	int done;
};

static void
behind_fn(void *arg, const atomic_int *cancel)
{
	struct behind *b = arg;

	(void)cancel;
	errno = 0;
	b->nice_seen = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
}

static void
behind_done(void *arg)
{
	((struct behind *)arg)->done = 1;
}

START_TEST(offload_behind_runs_its_thread_niced)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	struct runq q;
	struct behind b = { -100, 0 }, same = { -100, 0 };
	int base = getpriority(PRIO_PROCESS, 0);

	runq_init(&q, loop);
	offload_start_behind(loop, &q, behind_fn, behind_done, &b, 5);
	offload_start(loop, &q, behind_fn, behind_done, &same);
	while (!b.done || !same.done)
		ev_run(loop, EVRUN_ONCE);
	ck_assert_int_eq(b.nice_seen, base + 5 > 19 ? 19 : base + 5);
	ck_assert_int_eq(same.nice_seen, base);
	ck_assert_int_eq(getpriority(PRIO_PROCESS, 0), base);	/* the loop's own is as it was */
	runq_stop(&q);
	ev_loop_destroy(loop);
}
END_TEST

START_TEST(jenc_rejects_invalid_utf8_and_leaves_the_buffer_as_it_was)
{
	const char *bad[] = { "\xff", "ab\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "abcdefgh\x80" };
	struct buf b;

	buf_init(&b);
	buf_puts(&b, "prefix");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *v = json_pack("{s:[s,o]}", "k", "ok", json_stringn_nocheck(bad[i], strlen(bad[i])));
		char *j = json_dumps(v, JSON_COMPACT);
		ck_assert_ptr_null(j);	/* jansson refuses it too */
		ck_assert_int_eq(jenc_append(&b, v), -1);
		ck_assert_str_eq(b.data, "prefix");
		ck_assert_uint_eq(b.len, 6);
		ck_assert_int_eq(jenc_string(&b, bad[i], strlen(bad[i])), -1);
		ck_assert_str_eq(b.data, "prefix");
		json_decref(v);
	}
	/* A key that is not UTF-8. */
	json_t *o = json_object();
	json_object_set_new_nocheck(o, "\xfe", json_true());
	ck_assert_int_eq(jenc_append(&b, o), -1);
	ck_assert_str_eq(b.data, "prefix");
	json_decref(o);
	ck_assert_ptr_null(jenc_dumps(NULL, NULL));
	buf_free(&b);
}
END_TEST

START_TEST(jenc_refuses_nesting_deeper_than_its_limit)
{
	json_t *top = json_array(), *v = top;

	for (int i = 0; i < JENC_MAX_DEPTH; i++) {
		json_t *inner = json_array();
		json_array_append_new(v, inner);
		v = inner;
	}
	ck_assert_ptr_null(jenc_dumps(top, NULL));
	json_t *ok = json_array_get(top, 0);
	char *s = jenc_dumps(ok, NULL);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(strlen(s), 2 * JENC_MAX_DEPTH);
	free(s);
	json_decref(top);
}
END_TEST

START_TEST(buf_append_file_appends_or_leaves_the_buffer_alone)
{
	char dir[64], path[128];
	struct buf b;
	FILE *f;

	test_mkdtemp(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	f = fopen(path, "w");
	fputs("line one\nline two\n", f);
	fclose(f);
	buf_init(&b);
	buf_puts(&b, ">");
	ck_assert_int_eq(buf_append_file(&b, path), 0);
	ck_assert_str_eq(b.data, ">line one\nline two\n");
	snprintf(path, sizeof(path), "%s/missing", dir);
	ck_assert_int_eq(buf_append_file(&b, path), -1);
	ck_assert_str_eq(b.data, ">line one\nline two\n");
	ck_assert_int_eq(buf_append_file(&b, dir), -1);	/* a directory cannot be read */
	ck_assert_str_eq(b.data, ">line one\nline two\n");
	buf_free(&b);
	test_rmtree(dir);
}
END_TEST

/* FIPS 180-4's examples (NIST's SHA-256 test vectors), as sha256sum prints them. */
/* fm(text): the parsed fields as compact JSON with the body's offset, or "ERR <why>". */
static char *
fm(const char *text)
{
	json_t *f;
	size_t body;
	char why[200], *out, *js;

	if (frontmatter_parse(text, strlen(text), &f, &body, why, sizeof(why)) < 0)
		return xasprintf("ERR %s", why);
	js = json_dumps(f, JSON_COMPACT | JSON_SORT_KEYS);
	out = xasprintf("%s @%zu", js, body);
	free(js);
	json_decref(f);
	return out;
}

#define FM(text, want)                                                  \
	do {                                                            \
		char *got_ = fm(text);                                  \
		ck_assert_msg(strcmp(got_, want) == 0, "%s\n got  %s\n want %s", text, got_, want); \
		free(got_);                                             \
	} while (0)

/* The front matter subset of docs/contract.md §23.1: every value form, and each thing refused
 * with its line and reason (a file the user wrote is never half-read). */
START_TEST(frontmatter_takes_the_subset_and_refuses_the_rest)
{
	FM("no front matter\n---\n", "{} @0");
	FM("", "{} @0");
	FM("---\n---\nbody", "{} @8");
	FM("---\r\nname: x\r\n---\r\nbody", "{\"name\":\"x\"} @19");
	FM("---\nname: code-reviewer\ndescription: Reviews code: finds bugs # not a comment\n---\nB",
	    "{\"description\":\"Reviews code: finds bugs\",\"name\":\"code-reviewer\"} @82");
	FM("---\ndescription: \"say \\\"hi\\\"\\n\" # c\nmodel: 'it''s'\n---\n",
	    "{\"description\":\"say \\\"hi\\\"\\n\",\"model\":\"it's\"} @55");
	FM("---\ntools: Read, Grep, Glob\n---\n", "{\"tools\":\"Read, Grep, Glob\"} @32");
	FM("---\ntools: [Read, \"Grep\", 'a,b']\n---\n", "{\"tools\":[\"Read\",\"Grep\",\"a,b\"]} @37");
	FM("---\ntools: []\n---\n", "{\"tools\":[]} @18");
	FM("---\nd: ['a'', b', c]\n---\n", "{\"d\":[\"a', b\",\"c\"]} @25");
	FM("---\ntools:\n  - Read\n\n  - Bash   # c\n# c\nmodel: inherit\n---\n",
	    "{\"model\":\"inherit\",\"tools\":[\"Read\",\"Bash\"]} @59");
	FM("---\ndescription:\nname: x\n---\n", "{\"description\":\"\",\"name\":\"x\"} @29");
	FM("---\ndescription:\n---\n", "{\"description\":\"\"} @21");
	FM("---   \nmax_steps: 7\n---  \n", "{\"max_steps\":\"7\"} @26");
	/* refused */
	FM("---\nname: x\n", "ERR line 2: the front matter has no closing ---");
	FM("---\nname x\n---\n", "ERR line 2: not a key: value line");
	FM("---\nname:x\n---\n", "ERR line 2: not a key: value line");
	FM("---\n9name: x\n---\n", "ERR line 2: not a key: value line");
	FM("---\nname: x\nname: y\n---\n", "ERR line 3: the key name is given twice");
	FM("---\ndescription: |\n  text\n---\n", "ERR line 2: block scalars (| or >) are not supported: write the value on one line");
	FM("---\ndescription: >-\n---\n", "ERR line 2: block scalars (| or >) are not supported: write the value on one line");
	FM("---\ndescription: a\n  continued\n---\n", "ERR line 3: an indented line (continuations and nested keys are not supported)");
	FM("---\n- a\n---\n", "ERR line 2: a - item that follows no key");
	FM("---\nname: x\n- a\n---\n", "ERR line 3: a - item that follows no key");
	FM("---\nd: \"open\n---\n", "ERR line 2: a quoted value is not closed");
	FM("---\nd: \"a\" b\n---\n", "ERR line 2: text after a quoted value");
	FM("---\nd: \"\\q\"\n---\n", "ERR line 2: unknown escape \\q in a quoted value");
	FM("---\nd: [a, b\n---\n", "ERR line 2: a [ list is not closed on its line");
	FM("---\nd: [a, , b]\n---\n", "ERR line 2: an empty item in a [ list");
	FM("---\nd: {a: 1}\n---\n", "ERR line 2: nested maps are not supported");
	FM("---\nd: \"\\u0041\"\n---\n", "ERR line 2: unknown escape \\u in a quoted value");
	FM("---\nd: \"\\\xc3\xa9\"\n---\n", "ERR line 2: unknown escape \\ then byte 0xc3 in a quoted value");
}
END_TEST

START_TEST(sha256_fips_vectors)
{
	static const struct {
		const char *msg, *hex;
	} v[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",	/* 448 bits */
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
		{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
		  "klmnopqrlmnopqrsmnopqrstnopqrstu",				/* 896 bits */
		  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
	};
	char hex[2 * SHA256_LEN + 1];
	char *million = xmalloc(1000000);

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sha256_hex(v[i].msg, strlen(v[i].msg), hex);
		ck_assert_str_eq(hex, v[i].hex);
	}
	memset(million, 'a', 1000000);
	sha256_hex(million, 1000000, hex);
	ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	sha256_hex(NULL, 0, hex);
	ck_assert_str_eq(hex, v[0].hex);
	free(million);
}
END_TEST

/*
 * Lengths around the padding's edges: 55 is the last with the length in the same block, 56 the
 * first that needs another; 63, 64, 65 and 119, 120, 128 the block edges. Bytes (37i + 11) mod
 * 256, so 0x00, 0x80 and 0xff are among them (a signed char would show); digests from sha256sum.
 */
START_TEST(sha256_lengths_around_the_padding)
{
	static const struct {
		size_t len;
		const char *hex;
	} v[] = {
		{ 55, "2900465fcb533e05a158fd2b3be0e5e3b03740d83060aa3580e0d98a96bf2384" },
		{ 56, "31454ff48ef36af2f08fd511bdc37d9d5855ac23e992e5ff5445cb6b7674a674" },
		{ 63, "5f6401b96532c36de4e65beec0409b69b1d181864c8009b7a04f43e5d56350d1" },
		{ 64, "94eb5de4943613fd048dc93393ab06877405faa39c11f53e9386083339833e7e" },
		{ 65, "fc518669b6eb4b4dd91827ecacef86689c725bd5bab888fd3b26dbb196eec954" },
		{ 119, "b0dc41b1a384e2f1203f0351b38fbeaafceef577ce1191d5bfc25da39f721eae" },
		{ 120, "5df24dd802ac26132ce608dcb5f09841eef039ee0f152acf98d26d17fe4e88e6" },
		{ 128, "0aedd4856f8eba0963627336ad5144a9a7dbe12498e6066f0165fc97d8ddee4c" },
	};
	unsigned char pat[128];
	char hex[2 * SHA256_LEN + 1];

	for (size_t i = 0; i < sizeof(pat); i++)
		pat[i] = (unsigned char)(i * 37 + 11);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sha256_hex(pat, v[i].len, hex);
		ck_assert_msg(strcmp(hex, v[i].hex) == 0, "length %zu: %s", v[i].len, hex);
	}
}
END_TEST

/* init/update/final over pieces of every awkward size gives the one call's digest. */
START_TEST(sha256_pieces_match_one_call)
{
	static const size_t sizes[] = { 1, 63, 64, 65, 0, 127, 1000, 3 };
	unsigned char one[SHA256_LEN], pieces[SHA256_LEN];
	char *m = xmalloc(200000);
	struct sha256 s;
	size_t off = 0;

	for (size_t i = 0; i < 200000; i++)
		m[i] = (char)(i * 131 + i / 7);
	sha256(m, 200000, one);
	sha256_init(&s);
	for (size_t k = 0; off < 200000; k++) {
		size_t n = sizes[k % (sizeof(sizes) / sizeof(sizes[0]))];
		if (n > 200000 - off)
			n = 200000 - off;
		sha256_update(&s, m + off, n);
		off += n;
	}
	sha256_update(&s, NULL, 0);
	sha256_final(&s, pieces);
	ck_assert_mem_eq(one, pieces, SHA256_LEN);
	free(m);
}
END_TEST

/* base/errcode.h: one row per code; kinds are lower case, tool names upper case, all distinct. */
START_TEST(errcode_table_names_every_code_once_in_its_casing)
{
	for (int c = ERR_NONE + 1; c < ERR_COUNT; c++) {
		const char *k = err_kind((enum err_code)c), *t = err_tool((enum err_code)c);
		ck_assert_ptr_nonnull(k);
		ck_assert_ptr_nonnull(t);
		ck_assert_msg(err_text((enum err_code)c)[0] != '\0', "code %d has no default text", c);
		for (const char *p = k; *p && k != t; p++)
			ck_assert_msg(!isupper((unsigned char)*p), "kind %s is not lower case", k);
		for (const char *p = t; *p && k != t; p++)
			ck_assert_msg(!islower((unsigned char)*p), "tool name %s is not upper case", t);
		for (int d = c + 1; d < ERR_COUNT; d++) {
			ck_assert_str_ne(k, err_kind((enum err_code)d));
			ck_assert_str_ne(t, err_tool((enum err_code)d));
		}
	}
	/* One code, two surfaces (docs/contract.md §3.3's data.kind, §6.9's error.code). */
	ck_assert_str_eq(err_kind(ERR_SESSION_BUSY), "session_busy");
	ck_assert_str_eq(err_tool(ERR_SESSION_BUSY), "SESSION_BUSY");
	ck_assert_str_eq(err_tool(ERR_NOT_RESUMABLE), "NOT_RESUMABLE");
	ck_assert_str_eq(err_kind(ERR_NOT_RESUMABLE), "NOT_RESUMABLE");	/* a tool-only code */
	ck_assert_str_eq(err_tool(ERR_MCP_PROTOCOL_ERROR), "MCP_PROTOCOL_ERROR");	/* docs/contract.md §18 */
	ck_assert_int_eq(err_rpc(ERR_UNKNOWN_SESSION), -32002);
	ck_assert_int_eq(err_rpc(ERR_INVALID_PARAMS), -32602);
	ck_assert_int_eq(err_rpc(ERR_PARSE_ERROR), -32700);
	ck_assert_int_eq(err_rpc(ERR_DEPTH_EXCEEDED), 0);
	ck_assert_str_eq(err_kind((enum err_code)ERR_COUNT), "internal");	/* out of range: never a crash */
	struct err e;
	err_clear(&e);
	ck_assert_int_eq(e.code, ERR_NONE);
	ck_assert_int_eq(err_set(&e, ERR_SESSION_BUSY, "held by %d", 7), -1);
	ck_assert_int_eq(err_set(&e, ERR_INTERNAL, "second"), -1);		/* the first error wins */
	ck_assert_int_eq(e.code, ERR_SESSION_BUSY);
	ck_assert_str_eq(e.msg, "held by 7");
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
	tcase_add_test(tc, runq_push_next_runs_right_after_its_task);
	tcase_add_test(tc, runq_endless_work_does_not_starve_io);
	tcase_add_test(tc, runq_slices_keep_the_order_and_settle_once_drained);
	tcase_add_test(tc, buf_append_file_appends_or_leaves_the_buffer_alone);
	tcase_add_test(tc, jenc_matches_jansson_compact_output);
	tcase_add_test(tc, jenc_rejects_invalid_utf8_and_leaves_the_buffer_as_it_was);
	tcase_add_test(tc, jenc_refuses_nesting_deeper_than_its_limit);
	tcase_add_test(tc, offload_behind_runs_its_thread_niced);
	tcase_add_test(tc, json_raw_copy_writes_jenc_bytes_or_nothing);
	tcase_add_test(tc, json_raw_copy_agrees_with_jansson_on_random_trees);
	tcase_add_test(tc, json_tape_finds_values_and_says_when_it_is_not_sure);
	tcase_add_test(tc, json_raw_decode_and_int_refuse_what_a_c_string_cannot_hold);
	tcase_add_test(tc, errcode_table_names_every_code_once_in_its_casing);
	suite_add_tcase(s, tc);
	tc = tcase_create("sha256");
	tcase_add_test(tc, frontmatter_takes_the_subset_and_refuses_the_rest);
	tcase_add_test(tc, sha256_fips_vectors);
	tcase_add_test(tc, sha256_lengths_around_the_padding);
	tcase_add_test(tc, sha256_pieces_match_one_call);
	suite_add_tcase(s, tc);
	return s;
}
