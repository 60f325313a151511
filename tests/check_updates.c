/* The event -> session/update mapping (docs/contract.md §3.4, §3.5). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/internal.h"
#include "acp/updates.h"
#include "base/jenc.h"
#include "session/event.h"
#include "tools/tools.h"
#include "tools/toolsets.h"
#include "tests/helpers.h"

static json_t *
ev(const char *type, const char *data)
{
	json_t *d = json_loads(data, 0, NULL);

	ck_assert_ptr_nonnull(d);
	return json_pack("{s:i, s:i, s:s, s:o}", "seq", 0, "time", 0, "type", type, "data", d);
}

/* The live update of ev through a renderer of its own. */
static json_t *
live(const json_t *e, const struct toolbox *tb)
{
	struct acp_replay r;
	json_t *u;

	acp_replay_init(&r, NULL, NULL, NULL, tb);
	u = acp_update_live(&r, e) ? json_loadb(r.out.data, r.out.len, JSON_ALLOW_NUL, NULL) : NULL;
	acp_replay_free(&r);
	return u;
}

START_TEST(updates_live_tool_call_and_result)
{
	struct toolbox tb;
	json_t *e1 = ev("tool/call", "{\"turn\":1,\"step\":1,\"callId\":\"c1\",\"name\":\"x\",\"arguments\":\"{\\\"a\\\":1}\"}");
	json_t *e2 = ev("tool/result", "{\"turn\":1,\"step\":1,\"callId\":\"c1\",\"name\":\"x\",\"content\":[{\"type\":\"text\",\"text\":\"Error: nope\"}],\"isError\":true,\"error\":{\"code\":\"UNKNOWN_TOOL\"}}");
	json_t *e3 = ev("step/start", "{\"turn\":1,\"step\":1}");
	json_t *u;

	toolbox_init(&tb);
	u = live(e1, &tb);
	ck_assert_str_eq(json_string_value(json_object_get(u, "sessionUpdate")), "tool_call");
	ck_assert_str_eq(json_string_value(json_object_get(u, "status")), "in_progress");
	ck_assert_str_eq(json_string_value(json_object_get(u, "kind")), "other");
	ck_assert_str_eq(json_string_value(json_object_get(u, "title")), "x");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(u, "rawInput"), "a")), 1);
	json_decref(u);
	u = live(e2, &tb);
	ck_assert_str_eq(json_string_value(json_object_get(u, "sessionUpdate")), "tool_call_update");
	ck_assert_str_eq(json_string_value(json_object_get(u, "status")), "failed");
	json_t *c = json_array_get(json_object_get(u, "content"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(c, "type")), "content");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(c, "content"), "text")), "Error: nope");
	json_decref(u);
	ck_assert_ptr_null(live(e3, &tb));
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

/* toolCallIds are the runtime's (docs/contract.md §20): a provider that reuses "call_0" in every turn still gives
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
		u[2 * (t - 1)] = live(json_array_get(events, json_array_size(events) - 1), &tb);
		snprintf(buf, sizeof(buf), "{\"turn\":%d,\"step\":1,\"callId\":\"call_0\",\"name\":\"x\",\"content\":"
		    "[{\"type\":\"text\",\"text\":\"ok\"}],\"isError\":false}", t);
		json_array_append_new(events, ev("tool/result", buf));
		u[2 * (t - 1) + 1] = live(json_array_get(events, json_array_size(events) - 1), &tb);
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
	toolbox_add(&tb, &tool_list_agents);	/* the wrapping is the tool's (struct tool raw_key) */
	u = live(e, &tb);
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
		acp_replay_init(&r, acp_replay_array_pull, NULL, &(struct acp_replay_array){ events, 0, json_array_size(events) }, &tb);
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
	acp_replay_init(&r, acp_replay_array_pull, NULL, &(struct acp_replay_array){ events, 0, json_array_size(events) }, &tb);
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
	acp_replay_init(&r, acp_replay_array_pull, NULL, &(struct acp_replay_array){ events, 0, json_array_size(events) }, &tb);
	ck_assert(acp_replay_done(&r));
	ck_assert_uint_eq(acp_replay_next(&r, 10, out), 0);
	acp_replay_free(&r);
	json_array_append_new(events, ev("turn/start", "{\"turn\":1}"));
	json_array_append_new(events, ev("user/message", "{\"id\":\"m\",\"content\":[{\"type\":\"text\",\"text\":\"n\"}],\"source\":{\"kind\":\"relay\"}}"));
	acp_replay_init(&r, acp_replay_array_pull, NULL, &(struct acp_replay_array){ events, 0, json_array_size(events) }, &tb);
	ck_assert(acp_replay_done(&r));	/* nothing to show: done before a read */
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

/* ---- the replay from lines: the same bytes as the trees' ---- */

/* A source over lines (borrowed; not NUL-terminated for the reader: each is given with its length). */
struct line_src {
	char **lines;
	size_t *lens;
	size_t n, next;
};

static const char *
line_pull(void *arg, size_t *len, json_t **ev)
{
	struct line_src *src = arg;

	*ev = NULL;
	if (src->next == src->n)
		return NULL;
	*len = src->lens[src->next];
	return src->lines[src->next++];
}

/* A line the bytes could not render, checked as the session cursor checks it (sess_cursor_tree):
 * parsed, then the envelope and payload, against the seq the line says. */
static json_t *
line_tree(void *arg, const char *line, size_t len)
{
	json_t *ev = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
	struct err e;

	(void)arg;
	err_clear(&e);
	if (ev && sess_event_check(ev, json_integer_value(json_object_get(ev, "seq")), &e) < 0) {
		json_decref(ev);
		return NULL;
	}
	return ev;
}

/* Replays the lines both ways and holds the bytes equal; returns how many updates came from
 * lines (not trees). compaction: the client takes compaction updates and children as sessions
 * (message views show). */
static size_t
replay_both(char **lines, size_t *lens, size_t n, const struct toolbox *tb, int compaction, const char *what,
    size_t *all)
{
	json_t *events = json_array(), *whole;
	struct line_src src = { lines, lens, n, 0 };
	struct acp_replay r;
	const char *bytes;
	size_t len, i = 0, raw = 0;

	for (size_t k = 0; k < n; k++) {
		json_t *e = json_loadb(lines[k], lens[k], JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, NULL);
		ck_assert_msg(e != NULL, "%s: line %zu does not parse", what, k);
		json_array_append_new(events, e);
	}
	{
		struct acp_replay t;
		struct acp_replay_array a = { events, 0, json_array_size(events) };
		whole = json_array();
		acp_replay_init(&t, acp_replay_array_pull, NULL, &a, tb);
		t.compaction = t.subagents = compaction;
		while (acp_replay_next(&t, SIZE_MAX, whole) > 0)
			;
		acp_replay_free(&t);
	}
	acp_replay_init(&r, line_pull, line_tree, &src, tb);
	r.compaction = r.subagents = compaction;
	while (acp_replay_next_update(&r, &bytes, &len)) {
		char *want;
		size_t wn;
		ck_assert_msg(i < json_array_size(whole), "%s: more updates from lines than from trees", what);
		want = jenc_dumps(json_array_get(whole, i), &wn);
		ck_assert_msg(len == wn && memcmp(bytes, want, wn) == 0, "%s: update %zu: %.*s\nwant %s", what, i,
		    (int)len, bytes, want);
		free(want);
		i++;
	}
	raw = i - r.checked;
	ck_assert_msg(i == json_array_size(whole), "%s: %zu updates from lines, %zu from trees", what, i,
	    json_array_size(whole));
	*all += i;
	acp_replay_free(&r);
	json_decref(whole);
	json_decref(events);
	return raw;
}

/* Lines as a writer might have written them, each shown both ways; most go from their bytes. */
START_TEST(updates_replay_from_lines_equals_trees)
{
	static const char *const lines[] = {
		"{\"seq\":0,\"time\":1,\"type\":\"user/message\",\"data\":{\"id\":\"m1\",\"content\":[{\"type\":\"text\",\"text\":\"hi \\\"you\\\"\\n\\u001F\"},{\"type\":\"image\",\"mimeType\":\"image/png\",\"blob\":\"abababababababababababababababababababababababababababababababab\",\"bytes\":1}],\"source\":{\"kind\":\"user\"}}}",
		/* another writer's escapes and spaces: the bytes jenc writes, not these */
		"{ \"seq\" : 1, \"time\":1, \"type\":\"user/message\", \"data\":{ \"id\":\"m2\", \"content\":[ {\"type\":\"text\", \"text\":\"caf\\u00e9 \\/ \\u001f \\ud83d\\ude00\"} ], \"source\":{\"kind\":\"user\"} } }",
		"{\"seq\":2,\"time\":1,\"type\":\"user/message\",\"data\":{\"id\":\"m3\",\"content\":[{\"type\":\"text\",\"text\":\"notice\"}],\"source\":{\"kind\":\"subagent-settled\"}}}",
		"{\"seq\":3,\"time\":1,\"type\":\"user/message\",\"data\":{\"id\":\"m4\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"source\":{\"kind\":\"us\\u0065r\"}}}",
		"{\"seq\":4,\"time\":1,\"type\":\"assistant/message\",\"data\":{\"turn\":1,\"step\":1,\"id\":\"a1\",\"content\":[{\"type\":\"reasoning\",\"text\":\"think\"},{\"type\":\"text\",\"text\":\"say \\u00e9\"},{\"type\":\"tool-call\",\"callId\":\"c\\u0031\",\"name\":\"read\",\"arguments\":\"{\\\"path\\\": \\\"a.txt\\\"}\"},{\"type\":\"tool-call\",\"callId\":\"c2\",\"name\":\"edit\",\"arguments\":\"{\\\"path\\\":\\\"b\\\"}\"},{\"type\":\"tool-call\",\"callId\":\"c3\",\"name\":\"list_agents\",\"arguments\":\"not json\"},{\"type\":\"tool-call\",\"callId\":\"c4\",\"name\":\"mcp_x\",\"arguments\":\"{}\"}],\"finish\":\"tool-calls\"}}",
		"{\"seq\":5,\"time\":1,\"type\":\"tool/call\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c4\",\"name\":\"mcp_x\",\"arguments\":\"{}\",\"title\":\"Remote thing\"}}",
		"{\"seq\":6,\"time\":1,\"type\":\"tool/result\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c1\",\"name\":\"read\",\"content\":[{\"type\":\"text\",\"text\":\"READ\"}],\"isError\":false,\"output\":{\"path\":\"a.txt\",\"lines\":3}}}",
		"{\"seq\":7,\"time\":1,\"type\":\"tool/result\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c2\",\"name\":\"edit\",\"content\":[{\"type\":\"text\",\"text\":\"edited\"}],\"isError\":false,\"output\":{\"diff\":{\"type\":\"diff\",\"path\":\"/w/b\",\"oldText\":\"a\",\"newText\":\"b\"}}}}",
		"{\"seq\":8,\"time\":1,\"type\":\"tool/result\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c3\",\"name\":\"list_agents\",\"content\":[{\"type\":\"text\",\"text\":\"none\"}],\"isError\":false,\"output\":[{\"id\":\"x\"}],\"agentId\":\"00000000-0000-4000-8000-0000000000ab\"}}",
		"{\"seq\":9,\"time\":1,\"type\":\"tool/result\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c4\",\"name\":\"mcp_x\",\"content\":[{\"type\":\"text\",\"text\":\"Error: no\"}],\"isError\":true,\"error\":{\"code\":\"TOOL_FAILED\",\"n\":-0}}}",
		"{\"seq\":10,\"time\":1,\"type\":\"tool/result\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c9\",\"name\":\"grep\",\"content\":[{\"type\":\"text\",\"text\":\"r\"}],\"isError\":false,\"output\":{\"ratio\":1.50,\"big\":1234567890123456789}}}",
		"{\"seq\":11,\"time\":1,\"type\":\"context/compacted\",\"data\":{\"id\":\"k1\",\"summary\":\"so far\",\"through\":10}}",
		"{\"seq\":12,\"time\":1,\"type\":\"assistant/message\",\"data\":{\"turn\":2,\"step\":1,\"id\":\"a2\",\"content\":[{\"type\":\"text\",\"text\":\"nul \\u0000 in it\"}],\"finish\":\"stop\"}}",
		"{\"seq\":13,\"time\":1,\"type\":\"tool/result\",\"data\":{\"turn\":2,\"step\":1,\"callId\":\"c1\",\"name\":\"x\",\"content\":[{\"type\":\"text\",\"text\":\"Error: E\"}],\"isError\":true,\"error\":{\"code\":\"E\"}}}",
		"{\"seq\":14,\"time\":1,\"type\":\"message/view\",\"data\":{\"messageId\":\"msg-1\",\"senderSessionId\":\"00000000-0000-4000-8000-0000000000ab\",\"recipientSessionId\":\"00000000-0000-4000-8000-0000000000ac\",\"recipientMessageId\":\"msg-2\",\"content\":[{\"type\":\"text\",\"text\":\"go \\u00e9\"}]}}",
		/* a view as another writer spaces it, without the other view's id */
		"{\"seq\":15, \"time\":1, \"type\":\"message/view\", \"data\":{ \"content\":[ {\"type\":\"text\", \"text\":\"back\"} ], \"messageId\":\"msg-2\", \"senderSessionId\":\"00000000-0000-4000-8000-0000000000ac\" } }",
		"{\"seq\":16,\"time\":1,\"type\":\"turn/end\",\"data\":{\"turn\":2,\"reason\":{\"kind\":\"completed\"}}}",
	};
	size_t n = sizeof(lines) / sizeof(lines[0]), lens[32], raw, all = 0;
	char *copy[32];
	struct toolbox tb;

	toolbox_init(&tb);
	toolsets_build(&tb, toolsets_profile("default", 1));
	for (size_t k = 0; k < n; k++) {
		copy[k] = (char *)lines[k];
		lens[k] = strlen(lines[k]);
	}
	raw = replay_both(copy, lens, n, &tb, 1, "lines", &all);
	ck_assert_uint_ge(raw, 8);
	/* a read's text past 4 KiB: cut at a character, from the line too */
	{
		struct buf b;
		char *l[2];
		size_t ln[2];
		buf_init(&b);
		buf_puts(&b, "{\"seq\":0,\"time\":1,\"type\":\"assistant/message\",\"data\":{\"id\":\"a\",\"content\":[{\"type\":\"tool-call\",\"callId\":\"r\",\"name\":\"read\",\"arguments\":\"{}\"}]}}");
		ln[0] = b.len;
		buf_puts(&b, "{\"seq\":1,\"time\":1,\"type\":\"tool/result\",\"data\":{\"callId\":\"r\",\"name\":\"read\",\"content\":[{\"type\":\"text\",\"text\":\"");
		for (int k = 0; k < 1400; k++)
			buf_puts(&b, k % 7 ? "\xe2\x98\x83" : "\\n");
		buf_puts(&b, "\"}],\"isError\":false}}");
		l[0] = b.data;
		l[1] = b.data + ln[0];
		ln[1] = b.len - ln[0];
		ck_assert_uint_eq(replay_both(l, ln, 2, &tb, 0, "read", &all), 1);
		buf_free(&b);
	}
	toolbox_free(&tb);
}
END_TEST

/* A line changed behind the lease into a payload the tree functions cannot take (a block with no
 * type, a result with no name): the bytes refuse it, its tree is checked again and refused, and
 * the replay ends there with what came before it out; nothing crashes. */
START_TEST(updates_replay_ends_at_a_lying_line)
{
	static const char *const lines[] = {
		"{\"seq\":0,\"time\":1,\"type\":\"user/message\",\"data\":{\"id\":\"m1\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],\"source\":{\"kind\":\"user\"}}}",
		"{\"seq\":1,\"time\":1,\"type\":\"assistant/message\",\"data\":{\"turn\":1,\"step\":1,\"id\":\"a1\",\"content\":[{\"text\":\"no type\"}],\"finish\":\"stop\"}}",
		"{\"seq\":2,\"time\":1,\"type\":\"user/message\",\"data\":{\"id\":\"m2\",\"content\":[{\"type\":\"text\",\"text\":\"never\"}],\"source\":{\"kind\":\"user\"}}}",
	};
	/* each second line lies in another way the payload check refuses; the bytes must not render it */
	static const char *const liars[] = {
		"{\"seq\":1,\"time\":1,\"type\":\"assistant/message\",\"data\":{\"turn\":1,\"step\":1,\"id\":\"a1\",\"content\":[{\"text\":\"no type\"}],\"finish\":\"stop\"}}",
		"{\"seq\":1,\"time\":1,\"type\":\"tool/result\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"isError\":false}}",
		"{\"seq\":1,\"time\":1,\"type\":\"tool/result\",\"data\":{\"turn\":1.5,\"step\":1,\"callId\":\"c\",\"name\":\"x\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"isError\":false}}",
		"{\"seq\":1,\"time\":1,\"type\":\"user/message\",\"data\":{\"id\":\"m9\",\"content\":[{\"type\":\"text\",\"text\":\"x\"}],\"source\":{\"kind\":5}}}",
		"{\"seq\":1,\"time\":1,\"type\":\"tool/call\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c\",\"name\":\"x\",\"arguments\":\"{}\",\"title\":5}}",
		"{\"seq\":1,\"time\":1,\"type\":\"tool/result\",\"data\":{\"turn\":1,\"step\":1,\"callId\":\"c\",\"name\":\"x\",\"content\":[{\"type\":\"text\",\"text\":5}],\"isError\":false}}",
	};
	char *l[3];
	size_t lens[3];
	struct toolbox tb;

	toolbox_init(&tb);
	for (size_t variant = 0; variant < sizeof(liars) / sizeof(liars[0]); variant++) {
		struct line_src src = { l, lens, 3, 0 };
		struct acp_replay r;
		const char *bytes;
		size_t len, n = 0;
		for (int k = 0; k < 3; k++) {
			l[k] = (char *)(k == 1 ? liars[variant] : lines[k]);
			lens[k] = strlen(l[k]);
		}
		acp_replay_init(&r, line_pull, line_tree, &src, &tb);
		while (acp_replay_next_update(&r, &bytes, &len)) {
			ck_assert_ptr_nonnull(strstr(bytes, "\"hi\""));	/* only the first line's */
			n++;
		}
		ck_assert_msg(n == 1, "liar %zu: %zu updates", variant, n);
		ck_assert(acp_replay_done(&r));
		ck_assert_msg(src.next == 2, "liar %zu: read %zu lines", variant, src.next);	/* no further */
		acp_replay_free(&r);
	}
	toolbox_free(&tb);
}
END_TEST

struct every_log {
	struct toolbox tb[2];
	size_t raw, all;
};

/* One scenario log, line by line as it was written, replayed both ways under both profiles' tools:
 * its checked prefix (a lying log stops there), with the snapshot's <time> a time again. */
static void
replay_log(const char *path, void *arg)
{
	struct every_log *x = arg;
	char *line = NULL, *lines[4096];
	size_t cap = 0, lens[4096], n = 0;
	ssize_t got;
	FILE *f;

	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	while ((got = getline(&line, &cap, f)) > 0 && n < 4096) {
		struct err e;
		json_t *j;
		int bad;
		if (strncmp(line, "{\"seq\":", 7) != 0)
			continue;	/* the header */
		lens[n] = (size_t)got - (line[got - 1] == '\n');
		char *t = strstr(line, "\"time\":\"<time>\"");
		if (t) {
			memcpy(t, "\"time\":0       ", 15);
			memmove(t + 8, t + 15, (size_t)got + 1 - (size_t)(t + 15 - line));
			lens[n] -= 7;
		}
		err_clear(&e);
		j = json_loadb(line, lens[n], JSON_ALLOW_NUL, NULL);
		bad = j == NULL || sess_event_check(j, (int64_t)n, &e) < 0;
		json_decref(j);
		if (bad)
			break;
		lines[n] = strndup(line, lens[n]);
		n++;
	}
	free(line);
	fclose(f);
	for (int k = 0; k < 2; k++)
		x->raw += replay_both(lines, lens, n, &x->tb[k], k, path, &x->all);
	for (size_t k = 0; k < n; k++)
		free(lines[k]);
}

/* Every committed scenario log, line by line as it was written, under both profiles' tools. */
START_TEST(updates_replay_from_lines_equals_trees_on_every_scenario_log)
{
	struct every_log x = { .raw = 0, .all = 0 };

	toolbox_init(&x.tb[0]);
	toolsets_build(&x.tb[0], toolsets_profile("default", 1));
	toolbox_init(&x.tb[1]);
	toolsets_build(&x.tb[1], toolsets_profile("team", 1));
	ck_assert_uint_gt(test_each_scenario_log(replay_log, &x), 50);
	/* a few go the tree's way (compactions, logged titles); the rest from their lines */
	ck_assert_uint_gt(x.raw, 1000);
	ck_assert_uint_ge(x.raw * 10, x.all * 9);
	toolbox_free(&x.tb[0]);
	toolbox_free(&x.tb[1]);
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
	tcase_add_test(tc, updates_replay_from_lines_equals_trees);
	tcase_add_test(tc, updates_replay_from_lines_equals_trees_on_every_scenario_log);
	tcase_add_test(tc, updates_replay_ends_at_a_lying_line);
	suite_add_tcase(s, tc);
	return s;
}
