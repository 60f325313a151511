/* The derived conversation (agent/conv.h, docs/contract.md §19): the fold, the rebuild, the estimate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/conv.h"
#include "session/event.h"
#include "session/repair.h"
#include "session/store.h"
#include "tests/helpers.h"

static json_t *
ev(int64_t seq, const char *type, json_t *data)
{
	return json_pack("{s:I, s:i, s:s, s:o}", "seq", (json_int_t)seq, "time", 0, "type", type, "data", data);
}

static json_t *
user(int64_t seq, const char *text)
{
	return ev(seq, "user/message", json_pack("{s:s, s:[{s:s, s:s}], s:{s:s}}", "id", "u", "content", "type",
	    "text", "text", text, "source", "kind", "user"));
}

static json_t *
assistant(int64_t seq, const char *text, int prompt, int completion)
{
	json_t *d = json_pack("{s:i, s:i, s:s, s:[{s:s, s:s}], s:s}", "turn", 1, "step", 1, "id", "m", "content",
	    "type", "text", "text", text, "finish", "stop");
	if (prompt >= 0)
		json_object_set_new(d, "usage", json_pack("{s:i, s:i}", "prompt_tokens", prompt,
		    "completion_tokens", completion));
	return ev(seq, "assistant/message", d);
}

static json_t *
compacted(int64_t seq, const char *summary, int64_t through)
{
	return ev(seq, "context/compacted", json_pack("{s:s, s:s, s:I}", "id", "compaction-1", "summary", summary,
	    "through", (json_int_t)through));
}

/* Fails unless the incremental fold of events[0, n) equals the rebuild of the same prefix. */
static void
agree(const json_t *events, const char *where)
{
	struct agent_conv inc, whole;
	size_t n = json_array_size(events);

	agent_conv_init(&inc);
	agent_conv_init(&whole);
	for (size_t i = 0; i < n; i++) {
		json_t *prefix = json_array();
		agent_conv_fold(&inc, json_array_get(events, i));
		for (size_t k = 0; k <= i; k++)
			json_array_append(prefix, json_array_get(events, k));
		agent_conv_rebuild(&whole, prefix);
		json_decref(prefix);
		if (!json_equal(inc.msgs, whole.msgs) || inc.bytes != whole.bytes || inc.usage != whole.usage ||
		    inc.bytes_since != whole.bytes_since || inc.attempts != whole.attempts ||
		    inc.through != whole.through || (inc.plan || whole.plan ? !json_equal(inc.plan, whole.plan) : 0))
			ck_abort_msg("%s: the fold and the rebuild differ after event %zu", where, i);
	}
	agent_conv_free(&inc);
	agent_conv_free(&whole);
}

#define LOAD_ID "00000000-0000-4000-8000-0000000000c0"

/* Fails unless the conversation a load rebuilds off the loop (from the file's latest compaction
 * on, agent_conv_begin_loading) equals the rebuild of the whole log with the load's closers. */
static void
agree_loaded(const json_t *events, const char *where)
{
	char dir[64], state[128], path[256];
	struct sess_env env;
	struct sess_store store;
	struct sess_loading *ld;
	struct sess_cursor *cur;
	struct agent_conv loaded, whole;
	struct err e;
	json_t *closed = json_array(), *ev;
	size_t i, n;
	FILE *f;

	test_mkdtemp(dir, sizeof(dir));
	snprintf(state, sizeof(state), "%s/state", dir);
	err_clear(&e);
	ck_assert_int_eq(sess_env_init(&env, state, SESS_SYNC_NONE, 1, NULL, &e), 0);
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, LOAD_ID);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":1,\"cwd\":\"/w\",\"delegationDepth\":0}\n", LOAD_ID);
	json_array_foreach(events, i, ev) {
		char *line = json_dumps(ev, JSON_COMPACT);
		fprintf(f, "%s\n", line);
		free(line);
		json_array_append(closed, ev);
	}
	fclose(f);
	sess_closers_append(closed);
	sess_store_init(&store, &env);
	ck_assert_ptr_nonnull(ld = sess_store_load_start(&store, LOAD_ID, &e));
	sess_loading_read(ld, NULL);
	if (!sess_loading_ok(ld)) {
		struct sess *bad = sess_store_load_finish(&store, ld, &e);
		ck_abort_msg("%s: the load refused the log: %s (%p)", where, e.msg, (void *)bad);
	}
	agent_conv_init(&loaded);
	cur = agent_conv_begin_loading(&loaded, ld, &n);
	ck_assert_uint_eq(n, json_array_size(closed));
	ck_assert_int_eq(agent_conv_fold_cursor(&loaded, cur, NULL), 0);
	sess_cursor_free(cur);
	sess_loading_free(ld);
	agent_conv_init(&whole);
	agent_conv_rebuild(&whole, closed);
	if (!json_equal(loaded.msgs, whole.msgs) || loaded.bytes != whole.bytes || loaded.usage != whole.usage ||
	    loaded.bytes_since != whole.bytes_since || loaded.attempts != whole.attempts ||
	    loaded.through != whole.through || (loaded.plan || whole.plan ? !json_equal(loaded.plan, whole.plan) : 0))
		ck_abort_msg("%s: the loaded conversation and the rebuild differ", where);
	agent_conv_free(&loaded);
	agent_conv_free(&whole);
	json_decref(closed);
	sess_store_free(&store);
	sess_env_free(&env);
	test_rmtree(dir);
}

START_TEST(conv_fold_keeps_messages_after_through_and_the_summary_first)
{
	json_t *events = json_pack("[o, o, o, o, o, o]", user(0, "one"), assistant(1, "two", 100, 10),
	    user(2, "three"), assistant(3, "four", 200, 20), compacted(4, "S", 1), user(5, "five"));
	struct agent_conv c;

	agent_conv_init(&c);
	agent_conv_rebuild(&c, events);
	ck_assert_int_eq(json_array_size(c.msgs), 4);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c.msgs, 0), "content")),
	    AGENT_COMPACT_PREFIX "S");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c.msgs, 1), "content")), "three");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c.msgs, 3), "content")), "five");
	ck_assert_int_eq(c.usage, -1);		/* no usage since the compaction */
	ck_assert_int_eq(c.attempts, 1);
	ck_assert_int_eq(c.through, 1);
	agent_conv_free(&c);
	agree(events, "kept");
	json_decref(events);
}
END_TEST

static json_t *
plan(int64_t seq, const char *first_status)
{
	return ev(seq, "plan/updated", json_pack("{s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]}", "entries", "content", "Read",
	    "status", first_status, "priority", "medium", "content", "Fix", "status", "pending", "priority", "high"));
}

/* docs/contract.md §26: the summary's message ends with the task list as it was when compacting
 * (the compaction's own plan, not a later one), and later messages carry it unchanged; the plan
 * is the latest, whether folded, rebuilt or loaded. */
START_TEST(conv_the_summary_carries_the_task_list)
{
	json_t *events = json_pack("[o, o, o, o, o, o]", user(0, "one"), plan(1, "in_progress"), assistant(2, "two", 100, 10),
	    user(3, "three"), plan(4, "completed"), user(5, "four"));
	json_t *c5, *entries;
	struct agent_conv c;

	/* the compaction of seq 6 covers through 3; it logged the plan of that moment (seq 4's) */
	agent_conv_init(&c);
	agent_conv_rebuild(&c, events);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c.plan, 0), "status")), "completed");
	entries = json_deep_copy(c.plan);
	agent_conv_free(&c);
	c5 = compacted(6, "S", 3);
	json_object_set_new(json_object_get(c5, "data"), "plan", entries);
	json_array_append_new(events, c5);
	json_array_append_new(events, user(7, "five"));
	agent_conv_init(&c);
	agent_conv_rebuild(&c, events);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c.msgs, 0), "content")),
	    AGENT_COMPACT_PREFIX "S\n\nCurrent task list:\n- [completed] Read\n- [pending] Fix\n");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c.plan, 0), "status")), "completed");
	agent_conv_free(&c);
	agree(events, "plan");
	agree_loaded(events, "plan");
	/* a later change of the list is the plan now; the summary's message stays as it was */
	json_array_append_new(events, ev(8, "plan/updated", json_pack("{s:[]}", "entries")));
	agent_conv_init(&c);
	agent_conv_rebuild(&c, events);
	ck_assert_uint_eq(json_array_size(c.plan), 0);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_array_get(c.msgs, 0), "content")),
	    "- [pending] Fix\n"));
	agent_conv_free(&c);
	agree(events, "plan emptied");
	/* with no list, nothing is added */
	json_t *plain = agent_conv_summary_message("S", NULL);
	ck_assert_str_eq(json_string_value(json_object_get(plain, "content")), AGENT_COMPACT_PREFIX "S");
	json_decref(plain);
	json_decref(events);
}
END_TEST

START_TEST(conv_estimate_is_usage_plus_bytes_since_or_the_whole_request)
{
	json_t *events = json_pack("[o, o, o]", user(0, "hello"), assistant(1, "hi", 1000, 50), user(2, "12345678"));
	struct agent_conv c;
	size_t last;

	agent_conv_init(&c);
	ck_assert_int_eq(agent_conv_estimate(&c, 400), 100);	/* no usage: a token per 4 bytes */
	agent_conv_fold(&c, json_array_get(events, 0));
	ck_assert_int_eq(agent_conv_estimate(&c, 400), (long long)((400 + c.bytes + 3) / 4));
	agent_conv_fold(&c, json_array_get(events, 1));
	ck_assert_int_eq(agent_conv_estimate(&c, 400), 1050);
	agent_conv_fold(&c, json_array_get(events, 2));
	last = json_dumpb(json_array_get(c.msgs, 2), NULL, 0, JSON_COMPACT) + 1;
	ck_assert_uint_eq(c.bytes_since, last);
	ck_assert_int_eq(agent_conv_estimate(&c, 400), 1050 + (long long)(last / 4));
	agent_conv_free(&c);
	json_decref(events);
}
END_TEST

START_TEST(conv_a_lying_through_is_clamped_and_bad_usage_ignored)
{
	json_t *events = json_pack("[o, o, o, o]", user(0, "one"), assistant(1, "two", -5, 3), compacted(2, "S", 99),
	    user(3, "after"));
	struct agent_conv c;

	agent_conv_init(&c);
	agent_conv_rebuild(&c, events);
	ck_assert_int_eq(c.through, 1);		/* below the compaction's own seq */
	ck_assert_int_eq(json_array_size(c.msgs), 2);
	ck_assert_int_eq(c.usage, -1);
	agent_conv_free(&c);
	agree(events, "lying");
	json_decref(events);
}
END_TEST

START_TEST(conv_failed_attempts_count_and_change_nothing_else)
{
	json_t *events = json_pack("[o, o, o]", user(0, "one"), ev(1, "context/compaction_failed",
	    json_pack("{s:s, s:s}", "id", "compaction-1", "reason", "cancelled")), user(2, "two"));
	struct agent_conv c;

	agent_conv_init(&c);
	agent_conv_rebuild(&c, events);
	ck_assert_int_eq(c.attempts, 1);
	ck_assert_int_eq(json_array_size(c.msgs), 2);
	agent_conv_free(&c);
	agree(events, "failed");
	json_decref(events);
}
END_TEST

/* One scenario log's checked prefix (a lying log stops there), the snapshot's <time> a time: the
 * fold and the rebuild agree after every event, and so does a load's; compactions counted. */
static void
agree_log(const char *path, void *arg)
{
	size_t *compactions = arg;
	char line[1 << 16];
	json_t *events = json_array();
	FILE *f;
	int bad = 0;

	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	while (!bad && fgets(line, sizeof(line), f)) {
		json_t *j = json_loads(line, JSON_ALLOW_NUL, NULL);
		struct err e;
		err_clear(&e);
		if (j && json_is_string(json_object_get(j, "time")))
			json_object_set_new(j, "time", json_integer(0));
		if (j && json_object_get(j, "seq") && sess_event_check(j, (int64_t)json_array_size(events), &e) < 0)
			bad = 1;
		else if (j && json_object_get(j, "seq")) {
			if (strcmp(json_string_value(json_object_get(j, "type")), "context/compacted") == 0)
				(*compactions)++;
			json_array_append(events, j);
		}
		json_decref(j);
	}
	fclose(f);
	agree(events, path);
	agree_loaded(events, path);
	json_decref(events);
}

/* Every committed scenario log: after every event, the fold and the rebuild agree; and a load's
 * conversation, rebuilt from the file off the loop, agrees with them. */
START_TEST(conv_fold_equals_rebuild_on_every_scenario_log)
{
	size_t compactions = 0;

	ck_assert_uint_gt(test_each_scenario_log(agree_log, &compactions), 50);
	ck_assert_uint_ge(compactions, 5);	/* the context-* and openai-overflow scenarios */
}
END_TEST

Suite *
conv_suite(void)
{
	Suite *s = suite_create("conv");
	TCase *tc = tcase_create("conv");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, conv_fold_keeps_messages_after_through_and_the_summary_first);
	tcase_add_test(tc, conv_the_summary_carries_the_task_list);
	tcase_add_test(tc, conv_estimate_is_usage_plus_bytes_since_or_the_whole_request);
	tcase_add_test(tc, conv_a_lying_through_is_clamped_and_bad_usage_ignored);
	tcase_add_test(tc, conv_failed_attempts_count_and_change_nothing_else);
	tcase_add_test(tc, conv_fold_equals_rebuild_on_every_scenario_log);
	suite_add_tcase(s, tc);
	return s;
}
