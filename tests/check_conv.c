/* The derived conversation (agent/conv.h, SPEC §19): the fold, the rebuild, the estimate. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/conv.h"
#include "session/event.h"
#include "tests/helpers.h"

static json_t *
ev(int64_t seq, const char *type, json_t *data)
{
	return json_pack("{s:I, s:s, s:s, s:o}", "seq", (json_int_t)seq, "time", "t", "type", type, "data", data);
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
		    inc.through != whole.through)
			ck_abort_msg("%s: the fold and the rebuild differ after event %zu", where, i);
	}
	agent_conv_free(&inc);
	agent_conv_free(&whole);
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

/* Every committed scenario log: after every event, the fold and the rebuild agree. */
START_TEST(conv_fold_equals_rebuild_on_every_scenario_log)
{
	DIR *d = opendir("scenarios");
	struct dirent *de;
	size_t logs = 0, compactions = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL) {
		char dir[512];
		DIR *s;
		struct dirent *fe;
		if (de->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "scenarios/%s/expected/sessions", de->d_name);
		if ((s = opendir(dir)) == NULL)
			continue;
		while ((fe = readdir(s)) != NULL) {
			char path[1024], line[1 << 16];
			json_t *events;
			FILE *f;
			if (strstr(fe->d_name, ".jsonl") == NULL)
				continue;
			events = json_array();
			snprintf(path, sizeof(path), "%s/%s", dir, fe->d_name);
			ck_assert_ptr_nonnull(f = fopen(path, "r"));
			int bad = 0;
			while (!bad && fgets(line, sizeof(line), f)) {
				json_t *j = json_loads(line, JSON_ALLOW_NUL, NULL);
				struct err e;
				err_clear(&e);
				if (j && json_is_string(json_object_get(j, "time")))
					json_object_set_new(j, "time", json_integer(0));	/* the snapshot's <time> */
				/* What a load would read: the checked prefix (a lying log stops there). */
				if (j && json_object_get(j, "seq") &&
				    sess_event_check(j, (int64_t)json_array_size(events), &e) < 0)
					bad = 1;
				else if (j && json_object_get(j, "seq")) {
					if (strcmp(json_string_value(json_object_get(j, "type")), "context/compacted") == 0)
						compactions++;
					json_array_append(events, j);
				}
				json_decref(j);
			}
			fclose(f);
			agree(events, path);
			json_decref(events);
			logs++;
		}
		closedir(s);
	}
	closedir(d);
	ck_assert_uint_gt(logs, 50);
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
	tcase_add_test(tc, conv_estimate_is_usage_plus_bytes_since_or_the_whole_request);
	tcase_add_test(tc, conv_a_lying_through_is_clamped_and_bad_usage_ignored);
	tcase_add_test(tc, conv_failed_attempts_count_and_change_nothing_else);
	tcase_add_test(tc, conv_fold_equals_rebuild_on_every_scenario_log);
	suite_add_tcase(s, tc);
	return s;
}
