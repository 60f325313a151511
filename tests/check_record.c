/* The recorder (docs/contract.md §21, §20.1): scenario steps, templating, answers, the fixture, the tap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "model/model.h"
#include "record/record.h"
#include "tests/helpers.h"

static char dir[64];

static struct record *
open_rec(const char *secret)
{
	char path[128];
	struct record_config cfg = { 0 };
	struct record *r;
	struct err e;

	test_mkdtemp(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/rec", dir);
	cfg.dir = path;
	cfg.state_dir = "/st/state";
	cfg.secret = secret;
	cfg.model = "m-1";
	err_clear(&e);
	r = record_open(&cfg, &e);
	ck_assert_msg(r != NULL, "%s", e.msg);
	return r;
}

static void
client(struct record *r, const char *line)
{
	record_client_line(r, line, strlen(line));
}

static void
agent(struct record *r, const char *text)
{
	json_t *m = json_loads(text, 0, NULL);

	ck_assert_ptr_nonnull(m);
	record_agent_msg(r, m);
	json_decref(m);
}

/* The file's text (owned). */
static char *
slurp(const char *name)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/rec/%s", dir, name);
	return test_read_file(path, NULL);
}

/* scenario.json's steps, each as compact JSON, one per line (owned). */
static char *
steps(void)
{
	char *text = slurp("scenario.json");
	json_t *sc = json_loads(text, 0, NULL), *st;
	size_t i, cap = 1;
	char *out;

	ck_assert_ptr_nonnull(sc);
	out = calloc(1, 1);
	json_array_foreach(json_object_get(sc, "steps"), i, st) {
		char *s = json_dumps(st, JSON_COMPACT);
		cap += strlen(s) + 1;
		out = realloc(out, cap);
		strcat(out, s);
		strcat(out, "\n");
		free(s);
	}
	json_decref(sc);
	free(text);
	return out;
}

static void
init_new(struct record *r)
{
	client(r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}");
	agent(r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
	client(r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"/w/proj\","
	    "\"mcpServers\":[{\"name\":\"gh\",\"command\":\"x\",\"args\":[],\"env\":[{\"name\":\"TOKEN\","
	    "\"value\":\"ghp_secret\"}]},{\"type\":\"http\",\"name\":\"h\",\"url\":\"http://x\","
	    "\"headers\":[{\"name\":\"Authorization\",\"value\":\"Bearer abc\"}]}]}}");
	agent(r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"sessionId\":\"0f0e0d0c-0b0a-4000-8000-000000000001\"}}");
}

START_TEST(record_templates_paths_sessions_and_the_key)
{
	struct record *r = open_rec("sk-live-123");
	char *s;

	init_new(r);
	client(r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":"
	    "\"0f0e0d0c-0b0a-4000-8000-000000000001\",\"prompt\":[{\"type\":\"text\",\"text\":"
	    "\"see /w/proj/a.txt, /w/project, /w/proj. and /st/state/spill; key sk-live-123\"}]}}");
	s = steps();
	ck_assert_ptr_nonnull(strstr(s, "\"sessionId\":\"{{session:1}}\""));
	ck_assert_ptr_nonnull(strstr(s, "see {{cwd}}/a.txt, /w/project, {{cwd}}. and {{state}}/spill; key <redacted>"));
	ck_assert_ptr_nonnull(strstr(s, "\"cwd\":\"{{cwd}}\""));
	/* MCP env and header values never reach the file; the names do. */
	ck_assert_ptr_null(strstr(s, "ghp_secret"));
	ck_assert_ptr_null(strstr(s, "Bearer abc"));
	ck_assert_ptr_nonnull(strstr(s, "{\"name\":\"TOKEN\",\"value\":\"<redacted>\"}"));
	ck_assert_ptr_nonnull(strstr(s, "{\"name\":\"Authorization\",\"value\":\"<redacted>\"}"));
	/* Ids are kept: the replay's responses carry the live ones. */
	ck_assert_ptr_nonnull(strstr(s, "\"id\":3"));
	free(s);
	record_free(r);
	test_rmtree(dir);
}
END_TEST

START_TEST(record_marks_requests_not_waited_for)
{
	struct record *r = open_rec(NULL);
	char *s;

	init_new(r);
	client(r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":"
	    "\"0f0e0d0c-0b0a-4000-8000-000000000001\",\"prompt\":[]}}");
	client(r, "{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":"
	    "\"0f0e0d0c-0b0a-4000-8000-000000000001\"}}");
	agent(r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"stopReason\":\"cancelled\"}}");
	client(r, "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"session/set_mode\",\"params\":{}}");
	client(r, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"session/list\",\"params\":{}}");
	record_eof(r, 0);
	s = steps();
	/* The prompt did not wait; the cancel is a notify; the next step waits for the prompt's answer. */
	ck_assert_ptr_nonnull(strstr(s, "\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"{{session:1}}\","
	    "\"prompt\":[]}},\"await\":false}\n{\"notify\":{\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\""));
	ck_assert_ptr_nonnull(strstr(s, "\n{\"waitFor\":\"\\\"id\\\":3,\\\"result\\\"\"}\n{\"send\":{\"jsonrpc\":\"2.0\",\"id\":\"s\""));
	/* set_mode had no answer before the list; the list none before EOF (no waitIdle: not idle). */
	ck_assert_ptr_nonnull(strstr(s, "\"id\":\"s\",\"method\":\"session/set_mode\",\"params\":{}},\"await\":false}"));
	ck_assert_ptr_nonnull(strstr(s, "\"id\":5,\"method\":\"session/list\",\"params\":{}},\"await\":false}\n{\"eof\":true}\n"));
	ck_assert_ptr_null(strstr(s, "waitIdle"));
	free(s);
	record_free(r);
	test_rmtree(dir);
}
END_TEST

START_TEST(record_answers_go_before_the_step_they_follow)
{
	struct record *r = open_rec(NULL);
	char *s;

	init_new(r);
	client(r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":"
	    "\"0f0e0d0c-0b0a-4000-8000-000000000001\",\"prompt\":[]}}");
	agent(r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/request_permission\",\"params\":{\"sessionId\":"
	    "\"0f0e0d0c-0b0a-4000-8000-000000000001\",\"toolCall\":{\"toolCallId\":\"call-1-1-x\",\"title\":\"Edit a\"}}}");
	/* A child's call id holds its (untemplated) id: the title is the match. */
	agent(r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/request_permission\",\"params\":{\"sessionId\":"
	    "\"0f0e0d0c-0b0a-4000-8000-000000000001\",\"toolCall\":{\"toolCallId\":"
	    "\"0f0e0d0c-0b0a-4000-8000-0000000000c1/call_1\",\"title\":\"[kid] Run ls\"}}}");
	agent(r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"fs/read_text_file\",\"params\":{\"sessionId\":"
	    "\"0f0e0d0c-0b0a-4000-8000-000000000001\",\"path\":\"/w/proj/a\"}}");
	client(r, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"reject\"}}}");
	client(r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"allow\"}}}");
	client(r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32002,\"message\":\"not found\"}}");
	client(r, "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}");	/* not asked: nothing */
	agent(r, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"stopReason\":\"end_turn\"}}");
	record_eof(r, 1);
	s = steps();
	ck_assert_ptr_nonnull(strstr(s, "\"cwd\":\"{{cwd}}\"")); /* session/new first, */
	ck_assert_ptr_nonnull(strstr(s, "}}}\n"
	    "{\"answer\":{\"method\":\"session/request_permission\",\"match\":\"\\\"title\\\":\\\"[kid] Run ls\\\"\","
	    "\"result\":{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"reject\"}}}}\n"
	    "{\"answer\":{\"method\":\"session/request_permission\",\"match\":\"\\\"toolCallId\\\":\\\"call-1-1-x\\\"\","
	    "\"result\":{\"outcome\":{\"outcome\":\"selected\",\"optionId\":\"allow\"}}}}\n"
	    "{\"answerError\":{\"method\":\"fs/read_text_file\",\"match\":\"\\\"path\\\":\\\"{{cwd}}/a\\\"\","
	    "\"error\":{\"code\":-32002,\"message\":\"not found\"}}}\n"
	    "{\"send\":{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\""));
	ck_assert_ptr_nonnull(strstr(s, "\"prompt\":[]}}}\n{\"waitIdle\":true}\n{\"eof\":true}\n"));
	ck_assert_ptr_null(strstr(s, "\"id\":99"));
	free(s);
	record_free(r);
	test_rmtree(dir);
}
END_TEST

START_TEST(record_bad_lines_replay_as_sent)
{
	struct record *r = open_rec(NULL);
	char *s;

	client(r, "{not json");
	s = steps();
	ck_assert_str_eq(s, "{\"sendRaw\":\"{not json\"}\n");
	free(s);
	record_free(r);
	test_rmtree(dir);
}
END_TEST

static void
reply(struct record *r, const char *key, size_t ordinal, size_t position, int summary, const char *agent_id,
    const char *parent_id, const char *text)
{
	json_t *j = json_loads(text, 0, NULL);
	struct record_reply rr = { key, ordinal, position, summary, agent_id, parent_id, j };

	ck_assert_ptr_nonnull(j);
	record_reply(r, &rr);
	json_decref(j);
}

START_TEST(record_places_replies_by_script_and_position)
{
	struct record *r = open_rec("sk-live-123");
	char *s;

	init_new(r);
	/* The second "kid" child asks first: the first gets an empty script ahead of it. */
	reply(r, "label:kid", 1, 0, 0, "c2", "p1", "{\"text\":\"second kid\"}");
	reply(r, "root", 0, 0, 0, "p1", NULL, "{\"tool_calls\":[{\"id\":\"t1\",\"name\":\"read\",\"arguments\":"
	    "{\"file_path\":\"/w/proj/a\",\"note\":\"sk-live-123\"}}]}");
	reply(r, "label:kid", 0, 0, 0, "c1", "p1", "{\"tool_calls\":[{\"name\":\"send_message\",\"arguments\":"
	    "\"{\\\"agent_id\\\":\\\"p1\\\",\\\"from\\\":\\\"c1\\\"}\"}]}");
	reply(r, "root", 0, 2, 0, "p1", NULL, "{\"tool_calls\":[{\"name\":\"send_message\",\"arguments\":"
	    "{\"agent_id\":\"c2\"}}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}");
	reply(r, "root", 0, 0, 1, "p1", NULL, "{\"text\":\"summary of /w/proj\"}");
	s = slurp("recording.json");
	ck_assert_str_eq(s, "{\"version\": 1, \"model\": \"m-1\", \"scripts\": [\n"
	    " {\"agent\": \"label:kid\", \"replies\": [\n"
	    "  {\"tool_calls\": [{\"name\": \"send_message\", \"arguments\": \"{\\\"agent_id\\\":\\\"{{parent}}\\\",\\\"from\\\":\\\"{{self}}\\\"}\"}]}]},\n"
	    " {\"agent\": \"label:kid\", \"replies\": [\n"
	    "  {\"text\": \"second kid\"}]},\n"
	    " {\"agent\": \"root\", \"replies\": [\n"
	    "  {\"tool_calls\": [{\"id\": \"t1\", \"name\": \"read\", \"arguments\": {\"file_path\": \"{{cwd}}/a\", \"note\": \"<redacted>\"}}]},\n"
	    "  {\"error\": {\"message\": \"this request was not recorded\", \"code\": \"REPLAY_EXHAUSTED\"}},\n"
	    "  {\"tool_calls\": [{\"name\": \"send_message\", \"arguments\": {\"agent_id\": \"{{agent:kid}}\"}}], "
	    "\"usage\": {\"prompt_tokens\": 5, \"completion_tokens\": 1}}], \"compactions\": [\n"
	    "  {\"text\": \"summary of {{cwd}}\"}]}]}\n");
	free(s);
	record_free(r);
	test_rmtree(dir);
}
END_TEST

START_TEST(record_workspace_keeps_first_touches_up_to_8_mib)
{
	struct record *r = open_rec("sk-live-123");
	char ws[128], path[200], *s;
	struct stat st;
	size_t big = RECORD_WORKSPACE_MAX - 4;	/* with run.sh's 8 bytes: over */
	char *data = malloc(big);

	snprintf(ws, sizeof(ws), "%s/ws", dir);
	mkdir(ws, 0755);
	snprintf(path, sizeof(path), "%s/sub", ws);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/sub/run.sh", ws);
	test_write_file(path, "echo hi\n", 8);
	chmod(path, 0750);
	record_touch(r, ws, path);
	test_write_file(path, "changed\n", 8);
	record_touch(r, ws, path);	/* not the first touch: the fixture keeps the old text */
	s = slurp("workspace/sub/run.sh");
	ck_assert_str_eq(s, "echo hi\n");
	free(s);
	snprintf(path, sizeof(path), "%s/rec/workspace/sub/run.sh", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0750);
	/* A directory, an absent file, the root itself, a path outside: nothing. */
	record_touch(r, ws, ws);
	snprintf(path, sizeof(path), "%s/sub", ws);
	record_touch(r, ws, path);
	snprintf(path, sizeof(path), "%s/none", ws);
	record_touch(r, ws, path);
	record_touch(r, ws, "/etc/hostname");
	/* The key: left out. */
	test_log_capture_start();
	snprintf(path, sizeof(path), "%s/.env", ws);
	test_write_file(path, "KEY=sk-live-123\n", 16);
	record_touch(r, ws, path);
	/* Past 8 MiB in all: left out; one that still fits goes in. */
	memset(data, 'x', big);
	snprintf(path, sizeof(path), "%s/big", ws);
	test_write_file(path, data, big);
	record_touch(r, ws, path);
	snprintf(path, sizeof(path), "%s/big2", ws);
	test_write_file(path, data, 3);
	record_touch(r, ws, path);
	free(data);
	s = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(s, "record: .env left out of workspace/ (it holds the API key)"));
	ck_assert_ptr_nonnull(strstr(s, "record: big left out of workspace/ (over 8 MiB in all)"));
	ck_assert_ptr_null(strstr(s, "big2"));
	free(s);
	snprintf(path, sizeof(path), "%s/rec/workspace", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/rec/workspace/sub/none", dir);
	ck_assert_int_ne(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/rec/workspace/.env", dir);
	ck_assert_int_ne(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/rec/workspace/big", dir);
	ck_assert_int_ne(stat(path, &st), 0);
	snprintf(path, sizeof(path), "%s/rec/workspace/big2", dir);
	ck_assert_int_eq(stat(path, &st), 0);
	record_free(r);
	test_rmtree(dir);
}
END_TEST

START_TEST(record_refuses_a_dir_that_is_not_empty)
{
	char path[128];
	struct err e;
	struct record_config cfg = { 0 };

	test_mkdtemp(dir, sizeof(dir));
	err_clear(&e);
	snprintf(path, sizeof(path), "%s/new", dir);
	ck_assert_int_eq(record_check_dir(path, &e), 0);
	ck_assert_int_eq(record_check_dir(dir, &e), 0);	/* empty */
	snprintf(path, sizeof(path), "%s/f", dir);
	test_write_file(path, "x", 1);
	ck_assert_int_eq(record_check_dir(dir, &e), -1);
	ck_assert_int_eq(e.code, ERR_USAGE);
	ck_assert_ptr_nonnull(strstr(e.msg, "not empty"));
	err_clear(&e);
	ck_assert_int_eq(record_check_dir(path, &e), -1);
	ck_assert_ptr_nonnull(strstr(e.msg, "not a directory"));
	err_clear(&e);
	snprintf(path, sizeof(path), "%s/f/sub", dir);
	cfg.dir = path;
	ck_assert_ptr_null(record_open(&cfg, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "--record"));
	test_rmtree(dir);
}
END_TEST

/* ---- the tap ---- */

static json_t *tapped;

static void
tap_fn(void *arg, const struct model_tap_reply *rep)
{
	(void)arg;
	json_array_append_new(tapped, json_pack("{s:s, s:i, s:i, s:b, s:s, s:O}", "key", rep->ref->key, "ordinal",
	    (int)rep->ref->ordinal, "position", (int)rep->ref->position, "summary", rep->summary, "agent",
	    rep->agent_id, "reply", rep->reply));
}

static int finished, failed;
static char seen_id[32];

static void s_text(void *a, const char *s, size_t n) { (void)a; (void)s; (void)n; }
static void s_call(void *a, const char *id, const char *name, const char *args)
{
	(void)a; (void)name; (void)args;
	snprintf(seen_id, sizeof(seen_id), "%s", id ? id : "(none)");
}
static void s_finish(void *a, const char *f, const json_t *u) { (void)a; (void)f; (void)u; finished++; }
static void s_error(void *a, const char *c, const char *m) { (void)a; (void)c; (void)m; failed++; }

START_TEST(tap_hands_each_reply_over_in_replay_form)
{
	static const char rec[] = "{\"version\":1,\"model\":\"deep-1\",\"scripts\":[{\"agent\":\"root\",\"replies\":["
	    "{\"reasoning\":\"r\",\"text\":\"in {{cwd}}\",\"tool_calls\":[{\"id\":\"call_9\",\"name\":\"read\","
	    "\"arguments\":{\"file_path\":\"{{cwd}}/a\"}}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}},"
	    "{\"text\":\"cut\",\"finish\":\"length\"},"
	    "{\"error\":{\"message\":\"boom\",\"code\":\"MODEL_ERROR\"}},"
	    "{\"text\":\"partial\",\"hang\":true}]}]}";
	struct model_sink sink = { s_text, s_text, s_call, s_finish, s_error, NULL };
	json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", "hi"), *tools = json_array();
	struct model_call call = { .agent_id = "a1", .system = "s", .messages = msgs, .tools = tools,
		.cwd = "/w/p", .script = { .key = "root" } };
	struct runq q;
	struct err e;
	struct model *inner, *m;
	struct model_req *req;
	char *got;

	runq_init(&q, NULL);
	err_clear(&e);
	inner = model_replay_new_buf(&q, rec, sizeof(rec) - 1, &e);
	ck_assert_msg(inner != NULL, "%s", e.msg);
	ck_assert_str_eq(model_id(inner), "deep-1");
	tapped = json_array();
	m = model_tap_new(inner, tap_fn, NULL);
	ck_assert_str_eq(model_id(m), "deep-1");
	for (size_t i = 0; i < 4; i++) {
		call.script.position = i;
		req = m->ops->start(m, &call, &sink);
		runq_drain(&q);
		if (i == 0)
			ck_assert_str_eq(seen_id, "call_9");	/* the provider's id reaches the agent */
	}
	m->ops->cancel(m, req);
	ck_assert_int_eq(finished, 2);
	ck_assert_int_eq(failed, 1);
	got = json_dumps(tapped, JSON_COMPACT);
	ck_assert_str_eq(got, "["
	    "{\"key\":\"root\",\"ordinal\":0,\"position\":0,\"summary\":false,\"agent\":\"a1\",\"reply\":"
	    "{\"reasoning\":\"r\",\"text\":\"in /w/p\",\"tool_calls\":[{\"id\":\"call_9\",\"name\":\"read\","
	    "\"arguments\":{\"file_path\":\"/w/p/a\"}}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}},"
	    "{\"key\":\"root\",\"ordinal\":0,\"position\":1,\"summary\":false,\"agent\":\"a1\",\"reply\":"
	    "{\"text\":\"cut\",\"finish\":\"length\"}},"
	    "{\"key\":\"root\",\"ordinal\":0,\"position\":2,\"summary\":false,\"agent\":\"a1\",\"reply\":"
	    "{\"error\":{\"message\":\"boom\",\"code\":\"MODEL_ERROR\"}}},"
	    "{\"key\":\"root\",\"ordinal\":0,\"position\":3,\"summary\":false,\"agent\":\"a1\",\"reply\":"
	    "{\"text\":\"partial\",\"hang\":true}}]");
	free(got);
	json_decref(tapped);
	json_decref(msgs);
	json_decref(tools);
	model_free(m);
	runq_stop(&q);
}
END_TEST

Suite *
record_suite(void)
{
	Suite *s = suite_create("record");
	TCase *tc = tcase_create("record");

	tcase_add_test(tc, record_templates_paths_sessions_and_the_key);
	tcase_add_test(tc, record_marks_requests_not_waited_for);
	tcase_add_test(tc, record_answers_go_before_the_step_they_follow);
	tcase_add_test(tc, record_bad_lines_replay_as_sent);
	tcase_add_test(tc, record_places_replies_by_script_and_position);
	tcase_add_test(tc, record_workspace_keeps_first_touches_up_to_8_mib);
	tcase_add_test(tc, record_refuses_a_dir_that_is_not_empty);
	tcase_add_test(tc, tap_hands_each_reply_over_in_replay_form);
	suite_add_tcase(s, tc);
	return s;
}
