/* The event -> session/update mapping (SPEC §3.4, §3.5). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/internal.h"
#include "acp/updates.h"
#include "base/jenc.h"
#include "tests/helpers.h"

static json_t *
ev(const char *type, const char *data)
{
	json_t *d = json_loads(data, 0, NULL);

	ck_assert_ptr_nonnull(d);
	return json_pack("{s:i, s:i, s:s, s:o}", "seq", 0, "time", 0, "type", type, "data", d);
}

START_TEST(updates_live_tool_call_and_result)
{
	struct toolbox tb;
	json_t *e1 = ev("tool/call", "{\"turn\":1,\"step\":1,\"callId\":\"c1\",\"name\":\"x\",\"arguments\":\"{\\\"a\\\":1}\"}");
	json_t *e2 = ev("tool/result", "{\"turn\":1,\"step\":1,\"callId\":\"c1\",\"name\":\"x\",\"content\":[{\"type\":\"text\",\"text\":\"Error: nope\"}],\"isError\":true,\"error\":{\"code\":\"UNKNOWN_TOOL\"}}");
	json_t *e3 = ev("step/start", "{\"turn\":1,\"step\":1}");
	json_t *u;

	toolbox_init(&tb);
	u = acp_update_live(e1, &tb);
	ck_assert_str_eq(json_string_value(json_object_get(u, "sessionUpdate")), "tool_call");
	ck_assert_str_eq(json_string_value(json_object_get(u, "status")), "in_progress");
	ck_assert_str_eq(json_string_value(json_object_get(u, "kind")), "other");
	ck_assert_str_eq(json_string_value(json_object_get(u, "title")), "x");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(u, "rawInput"), "a")), 1);
	json_decref(u);
	u = acp_update_live(e2, &tb);
	ck_assert_str_eq(json_string_value(json_object_get(u, "sessionUpdate")), "tool_call_update");
	ck_assert_str_eq(json_string_value(json_object_get(u, "status")), "failed");
	json_t *c = json_array_get(json_object_get(u, "content"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(c, "type")), "content");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(c, "content"), "text")), "Error: nope");
	json_decref(u);
	ck_assert_ptr_null(acp_update_live(e3, &tb));
	json_decref(e1);
	json_decref(e2);
	json_decref(e3);
	toolbox_free(&tb);
}
END_TEST

START_TEST(updates_replay_shows_what_the_client_saw)
{
	struct toolbox tb;
	json_t *events = json_array(), *out;

	toolbox_init(&tb);
	json_array_append_new(events, ev("user/message", "{\"id\":\"m1\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],\"source\":{\"kind\":\"user\"}}"));
	json_array_append_new(events, ev("user/message", "{\"id\":\"m2\",\"content\":[{\"type\":\"text\",\"text\":\"notice\"}],\"source\":{\"kind\":\"subagent-settled\"}}"));
	json_array_append_new(events, ev("assistant/message", "{\"id\":\"a1\",\"content\":[{\"type\":\"reasoning\",\"text\":\"r\"},{\"type\":\"text\",\"text\":\"t\"},{\"type\":\"tool-call\",\"callId\":\"c1\",\"name\":\"x\",\"arguments\":\"{}\"}]}"));
	json_array_append_new(events, ev("tool/result", "{\"callId\":\"c1\",\"name\":\"x\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}],\"isError\":false,\"output\":{\"k\":1}}"));
	out = acp_update_replay(events, &tb);
	ck_assert_uint_eq(json_array_size(out), 4);	/* the injected notice is not replayed */
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(out, 0), "sessionUpdate")), "user_message_chunk");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(out, 1), "sessionUpdate")), "agent_thought_chunk");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(out, 2), "sessionUpdate")), "agent_message_chunk");
	json_t *tc = json_array_get(out, 3);
	ck_assert_str_eq(json_string_value(json_object_get(tc, "sessionUpdate")), "tool_call");
	ck_assert_str_eq(json_string_value(json_object_get(tc, "status")), "completed");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(tc, "rawOutput"), "k")), 1);
	json_decref(out);
	json_decref(events);
	toolbox_free(&tb);
}
END_TEST

START_TEST(updates_chunk_repairs_invalid_utf8)
{
	json_t *u = acp_update_chunk(0, "m", "a\xff", 2);

	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(u, "content"), "text")),
	    "a\xef\xbf\xbd");
	ck_assert_str_eq(json_string_value(json_object_get(u, "messageId")), "m");
	json_decref(u);
}
END_TEST

/* toolCallIds are the runtime's (SPEC §20): a provider that reuses "call_0" in every turn still gives
 * the client one id per call, the same live and on replay; the provider's id stays in the log. */
START_TEST(updates_tool_call_ids_are_unique_when_the_provider_reuses_its_ids)
{
	struct toolbox tb;
	json_t *events = json_array(), *replay;
	const char *ids[4];
	json_t *u[4];

	toolbox_init(&tb);
	for (int t = 1; t <= 2; t++) {
		char buf[512];
		snprintf(buf, sizeof(buf), "{\"turn\":%d,\"step\":1,\"id\":\"a\",\"content\":[{\"type\":\"tool-call\","
		    "\"callId\":\"call_0\",\"name\":\"x\",\"arguments\":\"{}\"}],\"finish\":\"tool_calls\"}", t);
		json_array_append_new(events, ev("assistant/message", buf));
		snprintf(buf, sizeof(buf), "{\"turn\":%d,\"step\":1,\"callId\":\"call_0\",\"name\":\"x\",\"arguments\":\"{}\"}", t);
		json_array_append_new(events, ev("tool/call", buf));
		u[2 * (t - 1)] = acp_update_live(json_array_get(events, json_array_size(events) - 1), &tb);
		snprintf(buf, sizeof(buf), "{\"turn\":%d,\"step\":1,\"callId\":\"call_0\",\"name\":\"x\",\"content\":"
		    "[{\"type\":\"text\",\"text\":\"ok\"}],\"isError\":false}", t);
		json_array_append_new(events, ev("tool/result", buf));
		u[2 * (t - 1) + 1] = acp_update_live(json_array_get(events, json_array_size(events) - 1), &tb);
	}
	for (int i = 0; i < 4; i++)
		ids[i] = json_string_value(json_object_get(u[i], "toolCallId"));
	ck_assert_str_eq(ids[0], ids[1]);	/* a call and its result */
	ck_assert_str_eq(ids[2], ids[3]);
	ck_assert_str_ne(ids[0], ids[2]);	/* two calls the provider named alike */
	replay = acp_update_replay(events, &tb);
	ck_assert_uint_eq(json_array_size(replay), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(replay, 0), "toolCallId")), ids[0]);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(replay, 1), "toolCallId")), ids[2]);
	json_decref(replay);
	for (int i = 0; i < 4; i++)
		json_decref(u[i]);
	json_decref(events);
	toolbox_free(&tb);
}
END_TEST

/* list_agents' rawOutput is an object {"agents": [...]} (older clients reject arrays), live and on
 * replay of a log written before, where the output was the bare array. */
START_TEST(updates_list_agents_raw_output_is_an_object)
{
	struct toolbox tb;
	json_t *e = ev("tool/result", "{\"turn\":1,\"step\":1,\"callId\":\"c\",\"name\":\"list_agents\",\"content\":"
	    "[{\"type\":\"text\",\"text\":\"x\"}],\"isError\":false,\"output\":[{\"id\":\"a\"}]}");
	json_t *u, *raw;

	toolbox_init(&tb);
	u = acp_update_live(e, &tb);
	raw = json_object_get(u, "rawOutput");
	ck_assert(json_is_object(raw));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(raw, "agents"), 0), "id")), "a");
	json_decref(u);
	json_decref(e);
	toolbox_free(&tb);
}
END_TEST

/* A log with every kind of replayed event, messages of several blocks and events that show nothing. */
static json_t *
replay_events(void)
{
	json_t *events = json_array();

	json_array_append_new(events, ev("turn/start", "{\"turn\":1}"));
	json_array_append_new(events, ev("user/message", "{\"id\":\"m1\",\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"},{\"type\":\"resource_link\",\"uri\":\"file:///x\"}],\"source\":{\"kind\":\"user\"}}"));
	json_array_append_new(events, ev("user/message", "{\"id\":\"m2\",\"content\":[{\"type\":\"text\",\"text\":\"notice\"}],\"source\":{\"kind\":\"subagent-settled\"}}"));
	json_array_append_new(events, ev("assistant/message", "{\"turn\":1,\"step\":1,\"id\":\"a1\",\"content\":[{\"type\":\"reasoning\",\"text\":\"r\"},{\"type\":\"tool-call\",\"callId\":\"c1\",\"name\":\"x\",\"arguments\":\"{\\\"k\\\":2}\"},{\"type\":\"text\",\"text\":\"t\"},{\"type\":\"tool-call\",\"callId\":\"c2\",\"name\":\"list_agents\",\"arguments\":\"{}\"}]}"));
	json_array_append_new(events, ev("tool/call", "{\"turn\":1,\"step\":1,\"callId\":\"c1\",\"name\":\"x\",\"arguments\":\"{}\"}"));
	json_array_append_new(events, ev("tool/result", "{\"turn\":1,\"step\":1,\"callId\":\"c1\",\"name\":\"x\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}],\"isError\":false,\"output\":{\"k\":1}}"));
	json_array_append_new(events, ev("tool/result", "{\"turn\":1,\"step\":1,\"callId\":\"c2\",\"name\":\"list_agents\",\"content\":[{\"type\":\"text\",\"text\":\"l\"}],\"isError\":false,\"output\":[{\"id\":\"a\"}]}"));
	json_array_append_new(events, ev("assistant/message", "{\"turn\":1,\"step\":2,\"id\":\"a2\",\"content\":[]}"));
	json_array_append_new(events, ev("assistant/message", "{\"turn\":1,\"step\":3,\"id\":\"a3\",\"content\":[{\"type\":\"text\",\"text\":\"end\"}]}"));
	json_array_append_new(events, ev("turn/end", "{\"turn\":1,\"reason\":{\"kind\":\"completed\"}}"));
	return events;
}

/* The cursor in batches of any size gives exactly acp_update_replay's array, never more than asked. */
START_TEST(updates_replay_cursor_batches_equal_the_whole_replay)
{
	struct toolbox tb;
	json_t *events = replay_events(), *whole;

	toolbox_init(&tb);
	whole = acp_update_replay(events, &tb);
	ck_assert_uint_eq(json_array_size(whole), 8);	/* 3 user blocks, reasoning, text, 2 calls, text */
	for (size_t max = 1; max <= json_array_size(whole) + 1; max++) {
		struct acp_replay r;
		json_t *all = json_array(), *batch = json_array();
		size_t n, calls = 0;
		acp_replay_init(&r, acp_replay_array_pull, &(struct acp_replay_array){ events, 0, json_array_size(events) }, &tb);
		while ((n = acp_replay_next(&r, max, batch)) > 0) {
			ck_assert_uint_le(n, max);
			ck_assert_uint_eq(json_array_size(batch), n);
			json_array_extend(all, batch);
			json_array_clear(batch);
			calls++;
		}
		ck_assert(acp_replay_done(&r));
		ck_assert_uint_eq(acp_replay_next(&r, max, batch), 0);	/* done stays done */
		ck_assert_uint_eq(calls, (json_array_size(whole) + max - 1) / max);
		ck_assert_msg(json_equal(all, whole), "batches of %zu differ from the whole replay", max);
		acp_replay_free(&r);
		json_decref(all);
		json_decref(batch);
	}
	json_decref(whole);
	json_decref(events);
	toolbox_free(&tb);
}
END_TEST

/* A cursor replays the events there were when it was made: later ones reach the client live. */
START_TEST(updates_replay_cursor_stops_at_the_events_it_started_with)
{
	struct toolbox tb;
	json_t *events = replay_events(), *whole, *out = json_array();
	struct acp_replay r;

	toolbox_init(&tb);
	whole = acp_update_replay(events, &tb);
	acp_replay_init(&r, acp_replay_array_pull, &(struct acp_replay_array){ events, 0, json_array_size(events) }, &tb);
	ck_assert_uint_eq(acp_replay_next(&r, 2, out), 2);
	json_array_append_new(events, ev("assistant/message", "{\"turn\":2,\"step\":1,\"id\":\"a4\",\"content\":[{\"type\":\"text\",\"text\":\"late\"}]}"));
	while (acp_replay_next(&r, 3, out) > 0)
		;
	ck_assert(json_equal(out, whole));
	acp_replay_free(&r);
	json_decref(out);
	json_decref(whole);
	json_decref(events);
	toolbox_free(&tb);
}
END_TEST

/* An empty log, and one whose events show nothing, are done at once. */
START_TEST(updates_replay_cursor_empty)
{
	struct toolbox tb;
	json_t *events = json_array(), *out = json_array();
	struct acp_replay r;

	toolbox_init(&tb);
	acp_replay_init(&r, acp_replay_array_pull, &(struct acp_replay_array){ events, 0, json_array_size(events) }, &tb);
	ck_assert(acp_replay_done(&r));
	ck_assert_uint_eq(acp_replay_next(&r, 10, out), 0);
	acp_replay_free(&r);
	json_array_append_new(events, ev("turn/start", "{\"turn\":1}"));
	json_array_append_new(events, ev("user/message", "{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"n\"}],\"source\":{\"kind\":\"relay\"}}"));
	acp_replay_init(&r, acp_replay_array_pull, &(struct acp_replay_array){ events, 0, json_array_size(events) }, &tb);
	ck_assert(!acp_replay_done(&r));
	ck_assert_uint_eq(acp_replay_next(&r, 10, out), 0);
	ck_assert(acp_replay_done(&r));
	ck_assert_uint_eq(json_array_size(out), 0);
	acp_replay_free(&r);
	json_decref(out);
	json_decref(events);
	toolbox_free(&tb);
}
END_TEST

/* The replay writes updates inside acp_update_prefix's bytes: the same line acp_update_msg's
 * message encodes to. */
START_TEST(updates_prefix_frames_like_the_envelope)
{
	static const char sid[] = "00000000-0000-4000-8000-0000000000ab";
	json_t *updates[] = {
		acp_update_chunk(0, "m1", "plain", 5),
		acp_update_chunk(1, "m\"2", "quote \" back \\ nl \n tab \t snow \xe2\x98\x83 ctl \x01", 37),
		acp_update_usage(12, 34000),
	};
	struct buf prefix;

	buf_init(&prefix);
	acp_update_prefix(&prefix, sid);
	for (size_t i = 0; i < sizeof(updates) / sizeof(updates[0]); i++) {
		struct buf mine;
		size_t n;
		json_t *msg = acp_update_msg(sid, json_incref(updates[i]));
		char *want = jenc_dumps(msg, &n);
		json_decref(msg);
		buf_init(&mine);
		buf_append(&mine, prefix.data, prefix.len);
		ck_assert_int_eq(jenc_append(&mine, updates[i]), 0);
		buf_puts(&mine, "}}");
		ck_assert_str_eq(mine.data, want);
		free(want);
		buf_free(&mine);
		json_decref(updates[i]);
	}
	buf_free(&prefix);
}
END_TEST

Suite *
updates_suite(void)
{
	Suite *s = suite_create("updates");
	TCase *tc = tcase_create("updates");

	tcase_add_test(tc, updates_live_tool_call_and_result);
	tcase_add_test(tc, updates_replay_shows_what_the_client_saw);
	tcase_add_test(tc, updates_chunk_repairs_invalid_utf8);
	tcase_add_test(tc, updates_tool_call_ids_are_unique_when_the_provider_reuses_its_ids);
	tcase_add_test(tc, updates_list_agents_raw_output_is_an_object);
	tcase_add_test(tc, updates_replay_cursor_batches_equal_the_whole_replay);
	tcase_add_test(tc, updates_replay_cursor_stops_at_the_events_it_started_with);
	tcase_add_test(tc, updates_replay_cursor_empty);
	tcase_add_test(tc, updates_prefix_frames_like_the_envelope);
	suite_add_tcase(s, tc);
	return s;
}
