/* The replay provider (docs/contract.md §7.2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "model/model.h"
#include "tests/helpers.h"

struct got {
	struct buf text, reasoning;
	json_t *calls;
	char finish[32];
	char error_code[64];
	char error[600];
	int text_chunks;
	size_t max_chunk;
	long long usage;	/* prompt + completion tokens the finish reported, or -1 */
};

static int req_summary;		/* the next request() is a summary request */

static void
g_text(void *arg, const char *s, size_t n)
{
	struct got *g = arg;

	buf_append(&g->text, s, n);
	g->text_chunks++;
	if (n > g->max_chunk)
		g->max_chunk = n;
}

static void
g_reasoning(void *arg, const char *s, size_t n)
{
	buf_append(&((struct got *)arg)->reasoning, s, n);
}

static void
g_call(void *arg, const char *id, const char *name, const char *args)
{
	struct got *g = arg;

	(void)id;
	json_array_append_new(g->calls, json_pack("{s:s, s:s}", "name", name, "arguments", args));
}

static void
g_finish(void *arg, const char *finish, const json_t *usage)
{
	struct got *g = arg;

	snprintf(g->finish, 32, "%s", finish);
	g->usage = usage ? json_integer_value(json_object_get(usage, "prompt_tokens")) +
	    json_integer_value(json_object_get(usage, "completion_tokens")) : -1;
}

static void
g_error(void *arg, const char *code, const char *msg)
{
	struct got *g = arg;

	snprintf(g->error_code, sizeof(g->error_code), "%s", code);
	snprintf(g->error, sizeof(g->error), "%s", msg);
}

static char dir[64];

static struct model *
load(const char *text, struct runq *q, struct err *e)
{
	char path[128];

	test_mkdtemp(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/rec.json", dir);
	test_write_file(path, text, strlen(text));
	runq_init(q, NULL);
	err_clear(e);
	return model_replay_new(q, path, e);
}

static char *
resolve(void *arg, const char *label)
{
	(void)arg;
	return strcmp(label, "helper") == 0 ? strdup("00000000-0000-4000-8000-00000000c0de") : NULL;
}

static void
request(struct model *m, struct runq *q, const char *script, size_t ordinal, size_t position,
    const char *last, struct got *g)
{
	struct model_sink sink = { g_text, g_reasoning, g_call, g_finish, g_error, g };
	json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", last);
	json_t *tools = json_array();
	struct model_call call = { .agent_id = "00000000-0000-4000-8000-000000000001",
		.parent_id = "00000000-0000-4000-8000-000000000009", .system = "sys",
		.messages = msgs, .tools = tools, .script = { .key = script, .ordinal = ordinal,
		.position = position, .resolve_child = resolve }, .summary = req_summary };

	memset(g, 0, sizeof(*g));
	g->calls = json_array();
	m->ops->start(m, &call, &sink);
	ck_assert_str_eq(g->finish, "");	/* never calls back from inside start */
	runq_drain(q);
	json_decref(msgs);
	json_decref(tools);
}

static void
got_free(struct got *g)
{
	buf_free(&g->text);
	buf_free(&g->reasoning);
	json_decref(g->calls);
}

/* A long reply streams in slices, one run-queue task each: what was queued behind its first
 * slice (a cancel read from stdin) runs before the rest, which then never comes. */
static struct model *slice_model;
static struct model_req *slice_req;

static void
slice_cancel(void *arg)
{
	(void)arg;
	slice_model->ops->cancel(slice_model, slice_req);
}

START_TEST(replay_long_reply_streams_in_slices_a_cancel_gets_between)
{
	size_t big = 1u << 20;
	char *text = malloc(big + 1);
	struct model_sink sink;
	struct runq q;
	struct err e;
	struct got g;
	json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", "go"), *tools = json_array();
	struct model_call call = { .agent_id = "00000000-0000-4000-8000-000000000001", .system = "sys",
		.messages = msgs, .tools = tools, .script = { .key = "root" } };

	memset(text, 'x', big);
	text[big] = '\0';
	json_t *rec = json_pack("{s:i, s:[{s:s, s:[{s:s}, {s:s}]}]}", "version", 1, "scripts", "agent", "root",
	    "replies", "text", text, "text", text);
	char *rtext = json_dumps(rec, 0);
	slice_model = load(rtext, &q, &e);
	ck_assert_ptr_nonnull(slice_model);
	memset(&g, 0, sizeof(g));
	g.calls = json_array();
	sink = (struct model_sink){ g_text, g_reasoning, g_call, g_finish, g_error, &g };
	/* uncancelled: all of it, in order, then the finish */
	slice_model->ops->start(slice_model, &call, &sink);
	runq_drain(&q);
	ck_assert_uint_eq(g.text.len, big);
	ck_assert_str_eq(g.finish, "stop");
	got_free(&g);
	/* cancelled behind its first slice: a part came, no finish, nothing after */
	memset(&g, 0, sizeof(g));
	g.calls = json_array();
	call.script.position = 1;
	slice_req = slice_model->ops->start(slice_model, &call, &sink);
	runq_push(&q, slice_cancel, NULL);
	runq_drain(&q);
	ck_assert_uint_gt(g.text.len, 0);
	ck_assert_uint_lt(g.text.len, big);
	ck_assert_str_eq(g.finish, "");
	got_free(&g);
	model_free(slice_model);
	json_decref(rec);
	json_decref(msgs);
	json_decref(tools);
	free(rtext);
	free(text);
}
END_TEST

START_TEST(replay_streams_text_in_16_byte_utf8_chunks)
{
	struct runq q;
	struct err e;
	struct got g;
	struct model *m = load("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"reasoning\":\"hm\",\"text\":\"abcdefghijklmn\\u00e9\\u00e9 and more text here\"}]}]}", &q, &e);

	ck_assert_msg(m != NULL, "%s", e.msg);
	request(m, &q, "root", 0, 0, "hi", &g);
	ck_assert_str_eq(g.text.data, "abcdefghijklmn\xc3\xa9\xc3\xa9 and more text here");
	ck_assert_str_eq(g.reasoning.data, "hm");
	ck_assert_uint_le(g.max_chunk, 16);
	ck_assert_int_gt(g.text_chunks, 2);
	ck_assert_str_eq(g.finish, "stop");
	got_free(&g);
	model_free(m);
	test_rmtree(dir);
}
END_TEST

START_TEST(replay_tool_calls_resolve_placeholders)
{
	struct runq q;
	struct err e;
	struct got g;
	struct model *m = load("{\"version\":1,\"scripts\":[{\"agent\":\"label:kid\",\"replies\":[],\"x\":1},"
	    "{\"agent\":\"label:kid\",\"replies\":[{\"tool_calls\":[{\"name\":\"send_message\",\"arguments\":"
	    "{\"agent_id\":\"{{agent:helper}}\",\"message\":\"from {{self}} to {{parent}} {{agent:none}}\"}}]}]}]}",
	    &q, &e);

	ck_assert_msg(m != NULL, "%s", e.msg);
	request(m, &q, "label:kid", 1, 0, "x", &g);
	ck_assert_str_eq(g.finish, "tool_calls");
	json_t *args = json_loads(json_string_value(json_object_get(json_array_get(g.calls, 0), "arguments")), 0, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(args, "agent_id")), "00000000-0000-4000-8000-00000000c0de");
	ck_assert_str_eq(json_string_value(json_object_get(args, "message")),
	    "from 00000000-0000-4000-8000-000000000001 to 00000000-0000-4000-8000-000000000009 {{agent:none}}");
	json_decref(args);
	got_free(&g);
	model_free(m);
	test_rmtree(dir);
}
END_TEST

START_TEST(replay_error_expect_and_exhaustion)
{
	struct runq q;
	struct err e;
	struct got g;
	struct model *m = load("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"error\":{\"message\":\"boom\",\"code\":\"X\"}},{\"expect\":\"needle\",\"text\":\"ok\"}]}]}", &q, &e);

	ck_assert_msg(m != NULL, "%s", e.msg);
	request(m, &q, "root", 0, 0, "hi", &g);
	ck_assert_str_eq(g.error_code, "X");
	ck_assert_str_eq(g.error, "boom");
	got_free(&g);
	request(m, &q, "root", 0, 1, "no match here", &g);
	ck_assert_str_eq(g.error_code, "REPLAY_MISMATCH");
	got_free(&g);
	request(m, &q, "root", 0, 1, "a needle inside", &g);
	ck_assert_str_eq(g.text.data, "ok");
	got_free(&g);
	request(m, &q, "root", 0, 2, "hi", &g);
	ck_assert_str_eq(g.error_code, "REPLAY_EXHAUSTED");
	got_free(&g);
	request(m, &q, "root", 1, 0, "hi", &g);		/* no second root script */
	ck_assert_str_eq(g.error_code, "REPLAY_EXHAUSTED");
	got_free(&g);
	model_free(m);
	test_rmtree(dir);
}
END_TEST

/* docs/contract.md §19: a summary request takes the script's compactions in order and moves no reply. */
START_TEST(replay_summary_requests_take_compactions_and_usage_passes)
{
	struct runq q;
	struct err e;
	struct got g;
	struct model *m = load("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"text\":\"reply\",\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}],"
	    "\"compactions\":[{\"text\":\"S1\"},{\"error\":{\"message\":\"no summary\"}}]}]}", &q, &e);

	ck_assert_msg(m != NULL, "%s", e.msg);
	req_summary = 1;
	request(m, &q, "root", 0, 0, "hi", &g);
	ck_assert_str_eq(g.text.data, "S1");
	got_free(&g);
	request(m, &q, "root", 0, 1, "hi", &g);
	ck_assert_str_eq(g.error, "no summary");
	got_free(&g);
	request(m, &q, "root", 0, 2, "hi", &g);
	ck_assert_str_eq(g.error_code, "REPLAY_EXHAUSTED");
	ck_assert_ptr_nonnull(strstr(g.error, "no compaction reply left"));
	got_free(&g);
	req_summary = 0;
	request(m, &q, "root", 0, 0, "hi", &g);	/* the replies are where they were */
	ck_assert_str_eq(g.text.data, "reply");
	ck_assert_int_eq(g.usage, 9);
	got_free(&g);
	model_free(m);
	test_rmtree(dir);
}
END_TEST

/* builtin's summary (docs/contract.md §19): the first 200 characters of each message but the instruction. */
START_TEST(builtin_summary_is_deterministic_and_overflow_is_recognised)
{
	char long_text[700];
	memset(long_text, 0, sizeof(long_text));
	for (int i = 0; i < 250; i++)
		strcat(long_text, "\xc3\xa9");		/* 250 two-byte characters */
	json_t *msgs = json_pack("[{s:s, s:s}, {s:s, s:s, s:[{s:{s:s}}]}, {s:s, s:s}]", "role", "user", "content",
	    long_text, "role", "assistant", "content", "", "tool_calls", "function", "name", "read", "role", "user",
	    "content", "Summarise");
	char *sum = model_builtin_summary(msgs);
	char want[700];
	snprintf(want, sizeof(want), "user: %.400s\nassistant:  [read]", long_text);
	ck_assert_str_eq(sum, want);
	free(sum);
	json_decref(msgs);
	ck_assert(model_context_overflow("This model's maximum CONTEXT length is 8192 tokens"));
	ck_assert(model_context_overflow("context_length_exceeded"));
	ck_assert(!model_context_overflow("Invalid value for model"));
	ck_assert(!model_context_overflow("the context is fine"));
	ck_assert(!model_context_overflow(NULL));
}
END_TEST

START_TEST(replay_hang_answers_nothing_until_cancelled)
{
	struct runq q;
	struct err e;
	struct got g = { 0 };
	struct model *m = load("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"hang\":true}]}]}",
	    &q, &e);
	struct model_sink sink = { g_text, g_reasoning, g_call, g_finish, g_error, &g };
	json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", "x");
	struct model_call call = { .agent_id = "a", .messages = msgs, .script.key = "root" };

	ck_assert_ptr_nonnull(m);
	struct model_req *r = m->ops->start(m, &call, &sink);
	runq_drain(&q);
	ck_assert_str_eq(g.finish, "");
	ck_assert_str_eq(g.error_code, "");
	m->ops->cancel(m, r);
	runq_drain(&q);
	ck_assert_str_eq(g.finish, "");
	json_decref(msgs);
	model_free(m);
	test_rmtree(dir);
}
END_TEST

/* At exit, unused replies are reported (docs/contract.md §7.2): one warning per script, captured here. */
START_TEST(replay_reports_unused_replies)
{
	struct runq q;
	struct err e;
	struct got g;
	struct model *m = load("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"text\":\"a\"},{\"text\":\"b\"},{\"text\":\"c\"}]},"
	    "{\"agent\":\"label:kid\",\"replies\":[]}]}", &q, &e);

	ck_assert_msg(m != NULL, "%s", e.msg);
	request(m, &q, "root", 0, 0, "hi", &g);
	got_free(&g);
	test_log_capture_start();
	m->ops->report(m);
	char *said = test_log_capture_stop();
	ck_assert_str_eq(said, "acp-agent: warn: replay: script 1 (\"root\"): 2 of 3 replies unused\n");
	free(said);
	model_free(m);
	test_rmtree(dir);
}
END_TEST

/* docs/contract.md §3.2 lets a client send U+0000; a recording's texts may hold it too, whole. */
START_TEST(replay_keeps_nul_in_texts)
{
	static const char want[] = "before\0after, and more than sixteen bytes";
	struct runq q;
	struct err e;
	struct got g;
	struct model *m = load("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"reasoning\":\"r\\u0000s\",\"text\":\"before\\u0000after, and more than sixteen bytes\"},"
	    "{\"expect\":\"x\\u0000y\",\"tool_calls\":[{\"name\":\"t\",\"arguments\":"
	    "{\"m\":\"{{self}}\\u0000{{parent}}\"}}]}]}]}", &q, &e);

	ck_assert_msg(m != NULL, "%s", e.msg);
	request(m, &q, "root", 0, 0, "hi", &g);
	ck_assert_uint_eq(g.text.len, sizeof(want) - 1);
	ck_assert_mem_eq(g.text.data, want, sizeof(want) - 1);
	ck_assert_uint_eq(g.reasoning.len, 3);
	ck_assert_mem_eq(g.reasoning.data, "r\0s", 3);
	got_free(&g);
	request(m, &q, "root", 0, 1, "x only", &g);	/* the needle's tail counts */
	ck_assert_str_eq(g.error_code, "REPLAY_MISMATCH");
	got_free(&g);
	json_t *msgs = json_pack("[{s:s, s:s%}]", "role", "user", "content", "a x\0y b", (size_t)7);
	struct model_sink sink = { g_text, g_reasoning, g_call, g_finish, g_error, &g };
	struct model_call call = { .agent_id = "A", .parent_id = "P", .messages = msgs,
		.script = { .key = "root", .position = 1 } };
	memset(&g, 0, sizeof(g));
	g.calls = json_array();
	m->ops->start(m, &call, &sink);
	runq_drain(&q);
	ck_assert_str_eq(g.error_code, "");
	const json_t *raw = json_object_get(json_array_get(g.calls, 0), "arguments");
	json_t *args = json_loads(json_string_value(raw), JSON_ALLOW_NUL, NULL);
	const json_t *mv = json_object_get(args, "m");
	ck_assert_uint_eq(json_string_length(mv), 3);	/* both placeholders filled, the NUL kept */
	ck_assert_mem_eq(json_string_value(mv), "A\0P", 3);
	json_decref(args);
	json_decref(msgs);
	got_free(&g);
	model_free(m);
	test_rmtree(dir);
}
END_TEST

/* A FIFO would block start-up in open(2) until some writer came; it is refused at once. */
START_TEST(replay_refuses_a_file_that_is_not_regular)
{
	char path[128];
	struct runq q;
	struct err e;

	test_mkdtemp(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	runq_init(&q, NULL);
	err_clear(&e);
	ck_assert_ptr_null(model_replay_new(&q, path, &e));
	ck_assert_int_eq(e.code, ERR_INVALID_RECORDING);
	ck_assert_msg(strstr(e.msg, "not a regular file") != NULL, "%s", e.msg);
	err_clear(&e);
	ck_assert_ptr_null(model_replay_new(&q, dir, &e));
	ck_assert_msg(strstr(e.msg, "not a regular file") != NULL, "%s", e.msg);
	snprintf(path, sizeof(path), "%s/absent.json", dir);
	err_clear(&e);
	ck_assert_ptr_null(model_replay_new(&q, path, &e));
	ck_assert_msg(strstr(e.msg, "cannot open recording") && strstr(e.msg, "No such file") &&
	    !strstr(e.msg, "line -1"), "%s", e.msg);
	test_rmtree(dir);
}
END_TEST

static void
assert_bad(const char *text, const char *needle)
{
	struct runq q;
	struct err e;
	struct model *m = load(text, &q, &e);

	ck_assert_ptr_null(m);
	ck_assert_int_eq(e.code, ERR_INVALID_RECORDING);
	ck_assert_msg(strstr(e.msg, needle) != NULL, "\"%s\" lacks \"%s\"", e.msg, needle);
	test_rmtree(dir);
}

START_TEST(replay_rejects_malformed_recordings)
{
	assert_bad("not json", "recording");
	assert_bad("[]", "must be a JSON object");
	assert_bad("{\"version\":2,\"scripts\":[]}", "version");
	assert_bad("{\"version\":1}", "scripts");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"boss\",\"replies\":[]}]}", "\"agent\"");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\"}]}", "replies");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"txt\":\"x\"}]}]}",
	    "unknown field \"txt\"");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"finish\":\"done\"}]}]}",
	    "finish");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"tool_calls\":[{}]}]}]}",
	    "name");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"error\":{}}]}]}",
	    "message");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[3]}]}", "object");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"usage\":{\"prompt_tokens\":1}}]}]}",
	    "usage");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"usage\":"
	    "{\"prompt_tokens\":-1,\"completion_tokens\":0}}]}]}", "usage");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[],\"compactions\":{}}]}",
	    "\"compactions\" must be an array");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[],\"compactions\":"
	    "[{\"tool_calls\":[{\"name\":\"x\"}]}]}]}", "no \"tool_calls\"");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[],\"compactions\":"
	    "[{\"txt\":1}]}]}", "compactions[0]");
	/* Names and codes reach the agent as C strings: U+0000 in them is refused. */
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\\u0000x\",\"replies\":[]}]}",
	    "\"agent\"");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"tool_calls\":"
	    "[{\"name\":\"a\\u0000b\"}]}]}]}", "must not contain");
	/* What a --record recording adds (docs/contract.md §21): a provider call id, the model's name. */
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"tool_calls\":"
	    "[{\"id\":7,\"name\":\"a\"}]}]}]}", "tool_calls[0].id must be a string");
	assert_bad("{\"version\":1,\"model\":\"\",\"scripts\":[]}", "\"model\" must be a non-empty string");
	assert_bad("{\"version\":1,\"model\":1,\"scripts\":[]}", "\"model\" must be a non-empty string");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":"
	    "[{\"finish\":\"stop\\u0000\"}]}]}", "finish");
	assert_bad("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"error\":"
	    "{\"message\":\"a\\u0000b\"}}]}]}", "must not contain");
}
END_TEST

Suite *
replay_suite(void)
{
	Suite *s = suite_create("replay");
	TCase *tc = tcase_create("replay");

	tcase_add_test(tc, replay_streams_text_in_16_byte_utf8_chunks);
	tcase_add_test(tc, replay_long_reply_streams_in_slices_a_cancel_gets_between);
	tcase_add_test(tc, replay_tool_calls_resolve_placeholders);
	tcase_add_test(tc, replay_error_expect_and_exhaustion);
	tcase_add_test(tc, replay_hang_answers_nothing_until_cancelled);
	tcase_add_test(tc, replay_summary_requests_take_compactions_and_usage_passes);
	tcase_add_test(tc, builtin_summary_is_deterministic_and_overflow_is_recognised);
	tcase_add_test(tc, replay_rejects_malformed_recordings);
	tcase_add_test(tc, replay_keeps_nul_in_texts);
	tcase_add_test(tc, replay_reports_unused_replies);
	tcase_add_test(tc, replay_refuses_a_file_that_is_not_regular);
	suite_add_tcase(s, tc);
	return s;
}
