/* The chat's pure parts (docs/contract.md §21): the renderer, the diff, the keys of an ask. */
#include <string.h>

#include "chat/ask.h"
#include "chat/diff.h"
#include "chat/render.h"
#include "tests/helpers.h"

static json_t *
js(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);

	ck_assert_msg(j != NULL, "bad test JSON: %s", jerr.text);
	return j;
}

/* Renders each update (a JSON array of update objects) into out. */
static void
render_all(struct chat_render *r, const char *updates, struct buf *out)
{
	json_t *a = js(updates), *u;
	size_t i;

	json_array_foreach(a, i, u)
		chat_render_update(r, u, out);
	json_decref(a);
}

static void
diff_of(const char *old_text, const char *new_text, const char *want)
{
	struct buf out;

	buf_init(&out);
	chat_diff(old_text, new_text, &out);
	ck_assert_str_eq(out.data ? out.data : "", want);
	buf_free(&out);
}

START_TEST(chat_diff_one_change_with_context)
{
	diff_of("a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nd\nE\nf\ng\nh\n",
	    "@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n");
	diff_of("same\n", "same\n", "");
	/* A new file: everything added, the old side empty. */
	diff_of(NULL, "x\ny", "@@ -0,0 +1,2 @@\n+x\n+y\n");
	/* A line added in the middle, found by the common subsequence, not a rewrite. */
	diff_of("1\n2\n3\n", "1\n2\nnew\n3\n", "@@ -1,3 +1,4 @@\n 1\n 2\n+new\n 3\n");
}
END_TEST

START_TEST(chat_diff_far_changes_make_two_hunks)
{
	const char *old_text = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n";
	const char *new_text = "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n";

	diff_of(old_text, new_text,
	    "@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+twelve\n");
	/* Closer than twice the context: one hunk. */
	diff_of("1\n2\n3\n4\n5\n6\n7\n", "one\n2\n3\n4\n5\n6\nseven\n",
	    "@@ -1,7 +1,7 @@\n-1\n+one\n 2\n 3\n 4\n 5\n 6\n-7\n+seven\n");
}
END_TEST

START_TEST(chat_ask_keys_follow_the_option_kinds)
{
	json_t *all = js("[{\"optionId\":\"allow\",\"name\":\"Allow\",\"kind\":\"allow_once\"},"
	    "{\"optionId\":\"allow_always\",\"name\":\"Always allow \\\"git status …\\\"\",\"kind\":\"allow_always\"},"
	    "{\"optionId\":\"reject\",\"name\":\"Reject\",\"kind\":\"reject_once\"},"
	    "{\"optionId\":\"reject_always\",\"name\":\"Always reject \\\"git status …\\\"\",\"kind\":\"reject_always\"}]");
	/* A command with `|` gets no always options (docs/contract.md §17.3): A and R are not offered. */
	json_t *two = js("[{\"optionId\":\"yes\",\"name\":\"Allow\",\"kind\":\"allow_once\"},"
	    "{\"optionId\":\"no\",\"name\":\"Reject\",\"kind\":\"reject_once\"}]");
	struct buf b;

	ck_assert_str_eq(json_string_value(json_object_get(chat_ask_option(all, 'a'), "optionId")), "allow");
	ck_assert_str_eq(json_string_value(json_object_get(chat_ask_option(all, 'A'), "optionId")), "allow_always");
	ck_assert_str_eq(json_string_value(json_object_get(chat_ask_option(all, 'r'), "optionId")), "reject");
	ck_assert_str_eq(json_string_value(json_object_get(chat_ask_option(all, 'R'), "optionId")), "reject_always");
	ck_assert_ptr_null(chat_ask_option(all, 'x'));
	ck_assert_str_eq(json_string_value(json_object_get(chat_ask_option(two, 'a'), "optionId")), "yes");
	ck_assert_str_eq(json_string_value(json_object_get(chat_ask_option(two, 'r'), "optionId")), "no");
	ck_assert_ptr_null(chat_ask_option(two, 'A'));
	ck_assert_ptr_null(chat_ask_option(two, 'R'));
	buf_init(&b);
	chat_ask_menu(two, &b);
	ck_assert_str_eq(b.data, "[a] Allow  [r] Reject");
	buf_free(&b);
	chat_ask_keys(two, &b);
	ck_assert_str_eq(b.data, "a or r");
	buf_free(&b);
	chat_ask_keys(all, &b);
	ck_assert_str_eq(b.data, "a, A, r or R");
	buf_free(&b);
	ck_assert_int_eq(chat_ask_line_key(" A "), 'A');
	ck_assert_int_eq(chat_ask_line_key("allow"), 0);
	ck_assert_int_eq(chat_ask_line_key(""), 0);
	json_decref(all);
	json_decref(two);
}
END_TEST

START_TEST(chat_render_streams_text_and_thoughts_plain)
{
	struct chat_render r;
	struct buf out;

	chat_render_init(&r, 0);
	buf_init(&out);
	render_all(&r, "["
	    "{\"sessionUpdate\":\"agent_thought_chunk\",\"content\":{\"type\":\"text\",\"text\":\"Let me \"},\"messageId\":\"m1\"},"
	    "{\"sessionUpdate\":\"agent_thought_chunk\",\"content\":{\"type\":\"text\",\"text\":\"think.\"},\"messageId\":\"m1\"},"
	    "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"Hello \"},\"messageId\":\"m1\"},"
	    "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"world.\"},\"messageId\":\"m1\"},"
	    "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"A notice.\"},\"messageId\":\"m2\"},"
	    "{\"sessionUpdate\":\"usage_update\",\"used\":10,\"size\":100}]", &out);
	ck_assert_str_eq(out.data, "thinking: Let me think.\nHello world.\nA notice.");
	chat_render_turn_end(&r, "end_turn", &out);
	ck_assert_str_eq(out.data, "thinking: Let me think.\nHello world.\nA notice.\n");
	chat_render_turn_end(&r, "cancelled", &out);
	chat_render_turn_end(&r, "max_turn_requests", &out);
	ck_assert_ptr_nonnull(strstr(out.data, "\n(cancelled)\n(turn ended: max_turn_requests)\n"));
	ck_assert_ptr_null(strchr(out.data, '\033'));
	buf_free(&out);
	chat_render_free(&r);
}
END_TEST

START_TEST(chat_render_colours_only_on_a_terminal)
{
	struct chat_render r;
	struct buf out;
	const char *ups = "["
	    "{\"sessionUpdate\":\"agent_thought_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hmm\"}},"
	    "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\",\"title\":\"Edit a.txt\",\"kind\":\"edit\",\"status\":\"in_progress\"},"
	    "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"c1\",\"status\":\"completed\",\"content\":"
	    "[{\"type\":\"diff\",\"path\":\"/w/a.txt\",\"oldText\":\"alpha\\n\",\"newText\":\"ALPHA\\n\"}]}]";

	chat_render_init(&r, 1);
	buf_init(&out);
	render_all(&r, ups, &out);
	ck_assert_ptr_nonnull(strstr(out.data, "\033[2mthinking: \033[0m\033[2mhmm\033[0m\n"));
	ck_assert_ptr_nonnull(strstr(out.data, "\033[31m-alpha\033[0m\n"));
	ck_assert_ptr_nonnull(strstr(out.data, "\033[32m+ALPHA\033[0m\n"));
	buf_free(&out);
	chat_render_free(&r);

	chat_render_init(&r, 0);
	render_all(&r, ups, &out);
	ck_assert_str_eq(out.data, "thinking: hmm\n[running] Edit a.txt\n[done] Edit a.txt\n"
	    "  --- /w/a.txt\n  +++ /w/a.txt\n  @@ -1,1 +1,1 @@\n  -alpha\n  +ALPHA\n");
	buf_free(&out);
	chat_render_free(&r);
}
END_TEST

START_TEST(chat_render_tool_calls_by_id_with_status)
{
	struct chat_render r;
	struct buf out;

	chat_render_init(&r, 0);
	buf_init(&out);
	render_all(&r, "["
	    "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\",\"title\":\"Read a.txt\",\"kind\":\"read\",\"status\":\"in_progress\"},"
	    "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c2\",\"title\":\"List agents\",\"kind\":\"search\",\"status\":\"in_progress\"},"
	    "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"c2\",\"status\":\"failed\",\"content\":"
	    "[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"Error: nope\"}}]},"
	    "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"c1\",\"status\":\"completed\",\"content\":"
	    "[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"1\\n2\\n3\\n4\\n5\\n6\\n7\\n8\\n9\\n10\"}}]}]",
	    &out);
	ck_assert_str_eq(out.data, "[running] Read a.txt\n[running] List agents\n[failed] List agents\n"
	    "  Error: nope\n[done] Read a.txt\n  1\n  2\n  3\n  4\n  5\n  6\n  7\n  8\n  ... (2 more lines)\n");
	buf_free(&out);
	chat_render_free(&r);
	/* one line left out: "line", not "lines" */
	chat_render_init(&r, 0);
	buf_init(&out);
	render_all(&r, "["
	    "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\",\"title\":\"Read a.txt\",\"kind\":\"read\",\"status\":\"in_progress\"},"
	    "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"c1\",\"status\":\"completed\",\"content\":"
	    "[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"1\\n2\\n3\\n4\\n5\\n6\\n7\\n8\\n9\"}}]}]",
	    &out);
	ck_assert_str_eq(out.data, "[running] Read a.txt\n[done] Read a.txt\n  1\n  2\n  3\n  4\n  5\n  6\n  7\n  8\n"
	    "  ... (1 more line)\n");
	buf_free(&out);
	chat_render_free(&r);
}
END_TEST

START_TEST(chat_render_child_progress_shows_what_is_new)
{
	struct chat_render r;
	struct buf out;

	chat_render_init(&r, 0);
	buf_init(&out);
	/* docs/contract.md §3.4: each progress update carries the child's text so far, replacing the last. */
	render_all(&r, "["
	    "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\",\"title\":\"Delegate: count\",\"kind\":\"other\",\"status\":\"in_progress\"},"
	    "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"c1\",\"status\":\"in_progress\",\"content\":"
	    "[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"[List agents]\\n\"}}],\"_meta\":{\"acpAgent\":{\"agentId\":\"x\"}}},"
	    "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"c1\",\"status\":\"in_progress\",\"content\":"
	    "[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"[List agents]\\n4\"}}]},"
	    "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"c1\",\"status\":\"in_progress\",\"content\":"
	    "[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"[List agents]\\n42 files\\n\"}}]},"
	    "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"c1\",\"status\":\"completed\",\"content\":"
	    "[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"42 files\"}}]}]", &out);
	ck_assert_str_eq(out.data, "[running] Delegate: count\n  | [List agents]\n  | 42 files\n"
	    "[done] Delegate: count\n  42 files\n");
	buf_free(&out);
	chat_render_free(&r);
}
END_TEST

START_TEST(chat_render_ask_shows_command_diff_and_keys_once)
{
	struct chat_render r;
	struct buf out;
	json_t *ask = js("{\"sessionId\":\"s\",\"toolCall\":{\"toolCallId\":\"c1\",\"title\":\"Edit a.txt\",\"kind\":\"edit\","
	    "\"status\":\"pending\",\"rawInput\":{\"file_path\":\"a.txt\"},\"content\":[{\"type\":\"diff\",\"path\":\"/w/a.txt\","
	    "\"oldText\":\"alpha\\nbeta\\n\",\"newText\":\"ALPHA\\nbeta\\n\"}]},\"options\":["
	    "{\"optionId\":\"allow\",\"name\":\"Allow\",\"kind\":\"allow_once\"},"
	    "{\"optionId\":\"allow_always\",\"name\":\"Allow all edits in this workspace\",\"kind\":\"allow_always\"},"
	    "{\"optionId\":\"reject\",\"name\":\"Reject\",\"kind\":\"reject_once\"}]}");
	json_t *bash = js("{\"sessionId\":\"s\",\"toolCall\":{\"toolCallId\":\"c2\",\"title\":\"List\",\"kind\":\"execute\","
	    "\"status\":\"pending\",\"rawInput\":{\"command\":\"ls | wc -l\"}},\"options\":["
	    "{\"optionId\":\"allow\",\"name\":\"Allow\",\"kind\":\"allow_once\"},"
	    "{\"optionId\":\"reject\",\"name\":\"Reject\",\"kind\":\"reject_once\"}]}");

	chat_render_init(&r, 0);
	buf_init(&out);
	/* The pending tool_call is shown by the ask that follows it. */
	render_all(&r, "[{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\",\"title\":\"Edit a.txt\",\"kind\":\"edit\","
	    "\"status\":\"pending\",\"content\":[{\"type\":\"diff\",\"path\":\"/w/a.txt\",\"oldText\":\"alpha\\nbeta\\n\","
	    "\"newText\":\"ALPHA\\nbeta\\n\"}]}]", &out);
	ck_assert_uint_eq(out.len, 0);
	chat_render_ask(&r, ask, NULL, &out);
	chat_render_answer(&r, "Allow", &out);
	render_all(&r, "[{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"c1\",\"status\":\"in_progress\"},"
	    "{\"sessionUpdate\":\"tool_call_update\",\"toolCallId\":\"c1\",\"status\":\"completed\",\"content\":"
	    "[{\"type\":\"diff\",\"path\":\"/w/a.txt\",\"oldText\":\"alpha\\nbeta\\n\",\"newText\":\"ALPHA\\nbeta\\n\"}]}]", &out);
	ck_assert_str_eq(out.data, "permission: Edit a.txt\n  --- /w/a.txt\n  +++ /w/a.txt\n  @@ -1,2 +1,2 @@\n"
	    "  -alpha\n  +ALPHA\n   beta\n  [a] Allow  [A] Allow all edits in this workspace  [r] Reject\n"
	    "answered: Allow\n[running] Edit a.txt\n[done] Edit a.txt\n");
	buf_free(&out);
	chat_render_ask(&r, bash, NULL, &out);
	ck_assert_str_eq(out.data, "permission: List\n  $ ls | wc -l\n  [a] Allow  [r] Reject\n");
	buf_free(&out);
	json_decref(ask);
	json_decref(bash);
	chat_render_free(&r);
}
END_TEST

START_TEST(chat_render_history_plan_mode_and_errors)
{
	struct chat_render r;
	struct buf out;
	json_t *err = js("{\"code\":-32603,\"message\":\"Internal error\",\"data\":{\"details\":\"turn failed: boom\"}}");

	chat_render_init(&r, 0);
	buf_init(&out);
	render_all(&r, "["
	    "{\"sessionUpdate\":\"user_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hi\"},\"messageId\":\"u1\"},"
	    "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"hello\"},\"messageId\":\"a1\"},"
	    "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\",\"title\":\"List agents\",\"kind\":\"search\",\"status\":\"completed\","
	    "\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"(no subagents)\"}}]},"
	    "{\"sessionUpdate\":\"plan\",\"entries\":[{\"content\":\"read\",\"priority\":\"high\",\"status\":\"completed\"},"
	    "{\"content\":\"edit\",\"priority\":\"high\",\"status\":\"in_progress\"},{\"content\":\"test\",\"priority\":\"low\",\"status\":\"pending\"}]},"
	    "{\"sessionUpdate\":\"plan\",\"entries\":[]},"
	    "{\"sessionUpdate\":\"current_mode_update\",\"currentModeId\":\"accept-edits\"},"
	    "{\"sessionUpdate\":\"available_commands_update\",\"availableCommands\":[{\"name\":\"agents\"},{\"name\":\"mode\"}]},"
	    "{\"sessionUpdate\":\"compaction_update\",\"compactionId\":\"compaction-1\",\"status\":\"in_progress\"},"
	    "{\"sessionUpdate\":\"compaction_update\",\"compactionId\":\"compaction-1\",\"status\":\"failed\",\"error\":\"too big\"},"
	    "{\"sessionUpdate\":\"some_future_kind\",\"x\":1}]", &out);
	chat_render_prompt_sent(&r, "next", 0, &out);
	chat_render_error(&r, err, &out);
	ck_assert_str_eq(out.data, "> hi\nhello\n[done] List agents\n  (no subagents)\nplan:\n  [x] read\n"
	    "  [>] edit\n  [ ] test\nplan: cleared\n(mode: accept-edits)\ncommands: /agents /mode\n"
	    "(compacting the conversation)\n(compaction failed: too big)\n> next\n"
	    "error: Internal error: turn failed: boom\n");
	json_decref(err);
	buf_free(&out);
	chat_render_free(&r);
}
END_TEST

/* Escape sequences and control bytes from the agent, a file or the model reach the terminal shown,
 * never acted on (a file setting the background red, a reply moving the cursor); the chat's own
 * colours still do. */
START_TEST(chat_render_shows_control_bytes_never_acts_on_them)
{
	struct chat_render r;
	struct buf out, b;

	chat_render_init(&r, 1);
	buf_init(&out);
	render_all(&r, "["
	    "{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"\\u001b[41mred\\u001b[0m \\u0007bell\\r\\u001b[2Aup\\u007f\\u009b31m\\n\"},\"messageId\":\"a1\"},"
	    "{\"sessionUpdate\":\"tool_call\",\"toolCallId\":\"c1\",\"title\":\"Read \\u001b]0;pwned\\u0007\",\"kind\":\"read\",\"status\":\"completed\","
	    "\"content\":[{\"type\":\"content\",\"content\":{\"type\":\"text\",\"text\":\"\\u001b[2J\\u001bcfile\"}}]}]", &out);
	ck_assert_ptr_null(memchr(out.data, '\a', out.len));
	ck_assert_ptr_null(memchr(out.data, '\r', out.len));
	ck_assert_ptr_nonnull(strstr(out.data, "^[[41mred^[[0m ^Gbell^M^[[2Aup^?^[[31m"));
	ck_assert_ptr_nonnull(strstr(out.data, "Read ^[]0;pwned^G"));
	ck_assert_ptr_nonnull(strstr(out.data, "^[[2J^[cfile"));
	/* every ESC left is one of ours: a colour or its reset */
	for (const char *p = out.data; (p = strchr(p, '\033')) != NULL; p++)
		ck_assert_msg(strncmp(p, "\033[0m", 4) == 0 || strncmp(p, "\033[1m", 4) == 0 || strncmp(p, "\033[2m", 4) == 0 ||
		    strncmp(p, "\033[3", 3) == 0, "a foreign escape: %.20s", p);
	buf_free(&out);
	chat_render_free(&r);
	/* the helper alone: tabs and newlines stay, a lone UTF-8 character too */
	buf_init(&b);
	chat_safe_append(&b, "a\tb\nc\xc3\xa9\x01", 8);
	ck_assert_uint_eq(b.len, 9);
	ck_assert_int_eq(memcmp(b.data, "a\tb\nc\xc3\xa9^A", 9), 0);
	buf_free(&b);
}
END_TEST

Suite *
chat_suite(void)
{
	Suite *s = suite_create("chat");
	TCase *tc = tcase_create("chat");

	tcase_add_test(tc, chat_diff_one_change_with_context);
	tcase_add_test(tc, chat_render_shows_control_bytes_never_acts_on_them);
	tcase_add_test(tc, chat_diff_far_changes_make_two_hunks);
	tcase_add_test(tc, chat_ask_keys_follow_the_option_kinds);
	tcase_add_test(tc, chat_render_streams_text_and_thoughts_plain);
	tcase_add_test(tc, chat_render_colours_only_on_a_terminal);
	tcase_add_test(tc, chat_render_tool_calls_by_id_with_status);
	tcase_add_test(tc, chat_render_child_progress_shows_what_is_new);
	tcase_add_test(tc, chat_render_ask_shows_command_diff_and_keys_once);
	tcase_add_test(tc, chat_render_history_plan_mode_and_errors);
	suite_add_tcase(s, tc);
	return s;
}
