/*
 * The MCP client over the stdio transport (mcp/client.c, mcp/stdio.c), against the scripted
 * server (tests/mock_mcp.c, built beside check_all): the handshake, the tool list, calls, their
 * errors and timeouts, restarts, the failures, shutdown; over a transport made here, an HTTP
 * session the server ends and a stop that waits for a closing transport. And mcp_config_parse's
 * every refusal.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "base/xjson.h"
#include "mcp/client.h"
#include "mcp/stdio.h"
#include "tests/helpers.h"
#include "tools/cap.h"

struct fix {
	struct ev_loop *loop;
	char dir[64];
	char script[128], log[128];
	struct mcp_client *c;
	int reports;
	enum mcp_state last;
	int stopped;
	/* the last call's end */
	int done;
	json_t *result;
	struct err err;
};

static void
fix_state(void *arg, struct mcp_client *c)
{
	struct fix *f = arg;

	f->reports++;
	f->last = mcp_client_state(c);
}

static void
fix_call_done(void *arg, const json_t *result, const struct err *e)
{
	struct fix *f = arg;

	f->done = 1;
	json_decref(f->result);
	f->result = result ? json_deep_copy(result) : NULL;
	err_clear(&f->err);
	if (e)
		f->err = *e;
}

static void
fix_stopped(void *arg)
{
	((struct fix *)arg)->stopped = 1;
}

static void
fix_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	*(int *)w->data = 1;
}

/* Runs the loop until *flag is set or seconds pass; 1 when the flag was set. */
static int
fix_run_until(struct fix *f, const int *flag, double seconds)
{
	ev_timer t;
	int expired = 0;

	ev_timer_init(&t, fix_timeout, seconds, 0.);
	t.data = &expired;
	ev_timer_start(f->loop, &t);
	while (!*flag && !expired)
		ev_run(f->loop, EVRUN_ONCE);
	ev_timer_stop(f->loop, &t);
	return *flag;
}

static int
fix_state_is(struct fix *f, enum mcp_state want, double seconds)
{
	int hit = 0;
	ev_timer t;
	int expired = 0;

	ev_timer_init(&t, fix_timeout, seconds, 0.);
	t.data = &expired;
	ev_timer_start(f->loop, &t);
	while (!(hit = f->c && mcp_client_state(f->c) == want) && !expired)
		ev_run(f->loop, EVRUN_ONCE);
	ev_timer_stop(f->loop, &t);
	return hit;
}

/* The mock binary beside this one. */
static void
fix_mock_path(char *out, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	ck_assert_int_gt(n, 0);
	self[n] = '\0';
	slash = strrchr(self, '/');
	ck_assert_uint_lt((size_t)(slash - self) + sizeof("/mock-mcp"), size);
	memcpy(slash, "/mock-mcp", sizeof("/mock-mcp"));
	memcpy(out, self, strlen(self) + 1);
}

static void
fix_start(struct fix *f, const char *script, const struct mcp_limits *lim)
{
	struct mcp_limits dl;
	struct mcp_config cfg;
	struct mcp_client_cb cb = { fix_state, f };
	char mock[PATH_MAX];
	struct err e;
	json_t *server;

	memset(f, 0, sizeof(*f));
	signal(SIGPIPE, SIG_IGN);	/* as acp-agent's main: a dead server's stdin is EPIPE, not a signal */
	f->loop = ev_loop_new(EVFLAG_AUTO);
	test_mkdtemp(f->dir, sizeof(f->dir));
	snprintf(f->script, sizeof(f->script), "%s/s.json", f->dir);
	snprintf(f->log, sizeof(f->log), "%s/mock.log", f->dir);
	test_write_file(f->script, script, strlen(script));
	fix_mock_path(mock, sizeof(mock));
	server = xjson_pack("{s:s, s:s, s:[s], s:[{s:s, s:s}]}", "name", "t", "command", mock, "args",
	    f->script, "env", "name", "MOCK_MCP_LOG", "value", f->log);
	err_clear(&e);
	ck_assert_int_eq(mcp_config_parse(server, &cfg, &e), 0);
	json_decref(server);
	if (lim == NULL) {
		mcp_limits_default(&dl);
		dl.backoff_first = 0.05;
		lim = &dl;
	}
	f->c = mcp_client_new(f->loop, &cfg, f->dir, lim, &cb);
	mcp_config_free(&cfg);
	mcp_client_start(f->c);
}

static void
fix_finish(struct fix *f)
{
	if (f->c) {
		mcp_client_stop(f->c, fix_stopped, f);
		f->c = NULL;
		ck_assert(fix_run_until(f, &f->stopped, 10.));
	}
	json_decref(f->result);
	ev_loop_destroy(f->loop);
	test_rmtree(f->dir);
}

/* The mock's log contains needle (waits up to 5 s for it). */
static int
fix_log_has(struct fix *f, const char *needle)
{
	for (int i = 0; i < 250; i++) {
		char *log = test_read_file(f->log, NULL);
		int hit = log && strstr(log, needle) != NULL;
		free(log);
		if (hit)
			return 1;
		ev_run(f->loop, EVRUN_NOWAIT);
		usleep(20000);
	}
	return 0;
}

#define TOOLS2 "\"tools\": [{\"name\": \"echo\", \"inputSchema\": {\"type\": \"object\"}}, " \
	"{\"name\": \"b\", \"description\": \"B\", \"inputSchema\": {\"properties\": {}}}, " \
	"{\"name\": \"tasks\", \"execution\": {\"taskSupport\": \"required\"}}]"

START_TEST(mcp_handshake_and_paged_list)
{
	struct fix f;
	const struct mcp_tool *t;
	size_t n;

	fix_start(&f, "{" TOOLS2 ", \"pageSize\": 1}", NULL);
	ck_assert_int_eq(mcp_client_state(f.c), MCP_STARTING);
	ck_assert(mcp_client_starting(f.c));
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	ck_assert(!mcp_client_starting(f.c));
	t = mcp_client_tools(f.c, &n);
	ck_assert_uint_eq(n, 2);	/* the task-only tool is left out */
	ck_assert_str_eq(t[0].name, "echo");
	ck_assert_str_eq(t[1].name, "b");
	ck_assert_str_eq(t[1].description, "B");
	ck_assert_ptr_nonnull(strstr(t[1].schema, "\"type\":\"object\""));	/* forced */
	ck_assert(fix_log_has(&f, "\"protocolVersion\":\"2025-11-25\""));
	ck_assert(fix_log_has(&f, "\"clientInfo\":{\"name\":\"acp-agent\""));
	ck_assert(fix_log_has(&f, "\"method\":\"notifications/initialized\""));
	ck_assert(fix_log_has(&f, "\"cursor\":\"cursor-2\""));	/* the third page was asked */
	fix_finish(&f);
}
END_TEST

START_TEST(mcp_old_versions_pass_unknown_ones_fail)
{
	struct fix f;

	fix_start(&f, "{\"protocolVersion\": \"2024-11-05\"}", NULL);
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	fix_finish(&f);
	fix_start(&f, "{\"protocolVersion\": \"1999-01-01\"}", NULL);
	ck_assert(fix_state_is(&f, MCP_FAILED, 10.));
	ck_assert_str_eq(mcp_client_reason(f.c), "unsupported protocol version \"1999-01-01\"");
	fix_finish(&f);
}
END_TEST

START_TEST(mcp_no_tools_capability_lists_nothing)
{
	struct fix f;
	size_t n;

	fix_start(&f, "{\"capabilities\": {}, " TOOLS2 "}", NULL);
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	mcp_client_tools(f.c, &n);
	ck_assert_uint_eq(n, 0);
	ck_assert(fix_log_has(&f, "notifications/initialized"));
	{
		char *log = test_read_file(f.log, NULL);
		ck_assert_ptr_null(strstr(log, "tools/list"));
		free(log);
	}
	fix_finish(&f);
}
END_TEST

START_TEST(mcp_handshake_failures)
{
	struct fix f;
	struct mcp_limits lim;

	fix_start(&f, "{\"initialize\": {\"error\": {\"code\": -32000, \"message\": \"nope\"}}}", NULL);
	ck_assert(fix_state_is(&f, MCP_FAILED, 10.));
	ck_assert_str_eq(mcp_client_reason(f.c), "initialize failed: -32000: nope");
	fix_finish(&f);

	mcp_limits_default(&lim);
	lim.startup_ms = 200;
	fix_start(&f, "{\"initialize\": {\"hang\": true}}", &lim);
	ck_assert(fix_state_is(&f, MCP_FAILED, 10.));
	ck_assert_str_eq(mcp_client_reason(f.c), "no answer to initialize within 0.2 s");
	fix_finish(&f);
	/* initialize is never cancelled */
	{
		char *log = test_read_file(f.log, NULL);
		ck_assert_ptr_null(log ? strstr(log, "notifications/cancelled") : NULL);
		free(log);
	}

	fix_start(&f, "{\"initialize\": {\"stderr\": \"bad config\\n\", \"exit\": 3}}", NULL);
	ck_assert(fix_state_is(&f, MCP_FAILED, 10.));
	ck_assert_str_eq(mcp_client_reason(f.c), "exited with status 3: bad config");
	fix_finish(&f);
}
END_TEST

START_TEST(mcp_command_not_found_fails)
{
	struct mcp_limits lim;
	struct mcp_config cfg;
	struct mcp_client_cb cb = { NULL, NULL };
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	json_t *server = xjson_pack("{s:s, s:s}", "name", "x", "command", "no-such-mcp-server-here");
	struct mcp_client *c;
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(mcp_config_parse(server, &cfg, &e), 0);
	mcp_limits_default(&lim);
	c = mcp_client_new(loop, &cfg, "/", &lim, &cb);
	mcp_client_start(c);
	ck_assert_int_eq(mcp_client_state(c), MCP_FAILED);
	ck_assert_str_eq(mcp_client_reason(c), "cannot run no-such-mcp-server-here: not found on PATH");
	ck_assert_ptr_null(mcp_client_call(c, "x", server, fix_call_done, NULL, &e));
	ck_assert_int_eq(e.code, ERR_MCP_NOT_READY);
	ck_assert_str_eq(e.msg, "MCP server \"x\" is failed: cannot run no-such-mcp-server-here: not found on PATH");
	mcp_client_free(c);
	mcp_config_free(&cfg);
	json_decref(server);
	ev_loop_destroy(loop);
}
END_TEST

/* A PATH in the server's ACP env is where its command is found. */
START_TEST(mcp_command_found_on_the_editors_path)
{
	struct mcp_limits lim;
	struct mcp_config cfg;
	struct mcp_client_cb cb = { NULL, NULL };
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	char dir[64], bin[128], script[128], mock[PATH_MAX];
	struct mcp_client *c;
	struct err e;
	json_t *server;

	test_mkdtemp(dir, sizeof(dir));
	fix_mock_path(mock, sizeof(mock));
	snprintf(bin, sizeof(bin), "%s/my-mcp", dir);
	snprintf(script, sizeof(script), "%s/s.json", dir);
	ck_assert_int_eq(symlink(mock, bin), 0);
	test_write_file(script, "{}", 2);
	server = xjson_pack("{s:s, s:s, s:[s], s:[{s:s, s:s}]}", "name", "p", "command", "my-mcp", "args", script,
	    "env", "name", "PATH", "value", dir);
	err_clear(&e);
	ck_assert_int_eq(mcp_config_parse(server, &cfg, &e), 0);
	mcp_limits_default(&lim);
	c = mcp_client_new(loop, &cfg, dir, &lim, &cb);
	mcp_client_start(c);
	for (int i = 0; i < 500 && mcp_client_state(c) == MCP_STARTING; i++)
		ev_run(loop, EVRUN_ONCE);
	ck_assert_msg(mcp_client_state(c) == MCP_READY, "%s", mcp_client_reason(c));
	mcp_client_free(c);
	mcp_config_free(&cfg);
	json_decref(server);
	ev_loop_destroy(loop);
	test_rmtree(dir);
}
END_TEST

START_TEST(mcp_calls_results_and_errors)
{
	struct fix f;
	json_t *args = xjson_pack("{s:s}", "msg", "hi");
	struct err e;

	fix_start(&f, "{\"tools\": [{\"name\": \"echo\"}, {\"name\": \"bad\"}], \"calls\": {\"bad\": "
	    "[{\"error\": {\"code\": -32602, \"message\": \"no such thing\"}}, {\"result\": 5}]}}", NULL);
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	err_clear(&e);
	ck_assert_ptr_nonnull(mcp_client_call(f.c, "echo", args, fix_call_done, &f, &e));
	ck_assert(fix_run_until(&f, &f.done, 10.));
	ck_assert_int_eq(f.err.code, ERR_NONE);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(f.result, "content"), 0),
	    "text")), "{\"msg\":\"hi\"}");

	f.done = 0;
	ck_assert_ptr_nonnull(mcp_client_call(f.c, "bad", args, fix_call_done, &f, &e));
	ck_assert(fix_run_until(&f, &f.done, 10.));
	ck_assert_int_eq(f.err.code, ERR_MCP_PROTOCOL_ERROR);
	ck_assert_str_eq(f.err.msg, "-32602: no such thing");

	f.done = 0;
	ck_assert_ptr_nonnull(mcp_client_call(f.c, "bad", args, fix_call_done, &f, &e));
	ck_assert(fix_run_until(&f, &f.done, 10.));
	ck_assert_int_eq(f.err.code, ERR_MCP_PROTOCOL_ERROR);
	ck_assert_str_eq(f.err.msg, "the server answered no result object");
	json_decref(args);
	fix_finish(&f);
}
END_TEST

START_TEST(mcp_call_timeout_and_cancel_send_cancelled)
{
	struct fix f;
	struct mcp_limits lim;
	json_t *args = json_object();
	struct mcp_call *call;
	struct err e;

	mcp_limits_default(&lim);
	lim.call_ms = 200;
	fix_start(&f, "{\"tools\": [{\"name\": \"slow\"}], \"calls\": {\"slow\": {\"hang\": true}}}", &lim);
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	err_clear(&e);
	ck_assert_ptr_nonnull(mcp_client_call(f.c, "slow", args, fix_call_done, &f, &e));
	ck_assert(fix_run_until(&f, &f.done, 10.));
	ck_assert_int_eq(f.err.code, ERR_MCP_TIMEOUT);
	ck_assert_str_eq(f.err.msg, "MCP server \"t\" did not answer within 0.2 s");
	ck_assert(fix_log_has(&f, "\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3,\"reason\":\"timed out\"}"));

	f.done = 0;
	call = mcp_client_call(f.c, "slow", args, fix_call_done, &f, &e);
	ck_assert_ptr_nonnull(call);
	mcp_call_cancel(call, "cancelled");
	ck_assert(fix_log_has(&f, "{\"requestId\":4,\"reason\":\"cancelled\"}"));
	ck_assert(!f.done);	/* a cancelled call never calls back */
	json_decref(args);
	fix_finish(&f);
}
END_TEST

START_TEST(mcp_exit_mid_call_and_restart)
{
	struct fix f;
	json_t *args = json_object();
	struct err e;
	int pid1;

	fix_start(&f, "{\"tools\": [{\"name\": \"boom\"}], \"calls\": {\"boom\": "
	    "{\"stderr\": \"going down\\n\", \"exit\": 7}}}", NULL);
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	err_clear(&e);
	ck_assert_ptr_nonnull(mcp_client_call(f.c, "boom", args, fix_call_done, &f, &e));
	ck_assert(fix_run_until(&f, &f.done, 10.));
	ck_assert_int_eq(f.err.code, ERR_MCP_SERVER_EXITED);
	ck_assert_str_eq(f.err.msg, "MCP server \"t\" exited with status 7\ngoing down\n");
	ck_assert_int_eq(f.last, MCP_EXITED);
	ck_assert(mcp_client_starting(f.c));	/* a restart is on its way */
	pid1 = f.reports;
	/* restarted after the backoff (0.05 s here): ready again */
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	ck_assert_int_gt(f.reports, pid1);
	ck_assert(fix_log_has(&f, "\"launch\":2"));
	json_decref(args);
	fix_finish(&f);
}
END_TEST

START_TEST(mcp_restarts_give_up_after_the_tries)
{
	struct fix f;
	struct mcp_limits lim;

	/* every launch dies right after the handshake: ready, exited, then every restart fails */
	mcp_limits_default(&lim);
	lim.backoff_first = 0.01;
	lim.backoff_max = 0.02;
	lim.max_tries = 3;
	fix_start(&f, "{\"crashLaunches\": 100, \"crashAt\": \"tools/list\", \"crashExit\": 9}", &lim);
	ck_assert(fix_state_is(&f, MCP_FAILED, 10.));
	ck_assert_str_eq(mcp_client_reason(f.c), "exited with status 9: mock-mcp: crashing at tools/list, as crashLaunches says");
	fix_finish(&f);

	/* ready, then it exits mid-call, and every restart dies at once: failed after the tries */
	fix_start(&f, "{\"tools\": [{\"name\": \"a\"}], \"calls\": {\"a\": {\"exit\": 4}}}", &lim);
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	test_write_file(f.script, "{\"bogus\": 1}", strlen("{\"bogus\": 1}"));	/* the mock refuses it: exit 2 at start */
	{
		json_t *args = json_object();
		struct err e;
		err_clear(&e);
		ck_assert_ptr_nonnull(mcp_client_call(f.c, "a", args, fix_call_done, &f, &e));
		json_decref(args);
	}
	ck_assert(fix_run_until(&f, &f.done, 10.));
	ck_assert(fix_state_is(&f, MCP_FAILED, 10.));
	ck_assert_msg(strncmp(mcp_client_reason(f.c), "exited with status 2", 20) == 0, "%s", mcp_client_reason(f.c));
	ck_assert_msg(strstr(mcp_client_reason(f.c), "; gave up after 3 restarts") != NULL, "%s", mcp_client_reason(f.c));
	fix_finish(&f);
}
END_TEST

START_TEST(mcp_list_changed_relists)
{
	struct fix f;
	json_t *args = json_object();
	const struct mcp_tool *t;
	struct err e;
	size_t n;
	int before;

	fix_start(&f, "{\"tools\": [{\"name\": \"a\"}], \"toolLists\": {\"more\": [{\"name\": \"a\"}, {\"name\": \"z\"}]}, "
	    "\"calls\": {\"a\": {\"text\": \"ok\", \"listChanged\": \"more\"}}}", NULL);
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	mcp_client_tools(f.c, &n);
	ck_assert_uint_eq(n, 1);
	before = f.reports;
	err_clear(&e);
	ck_assert_ptr_nonnull(mcp_client_call(f.c, "a", args, fix_call_done, &f, &e));
	ck_assert(fix_run_until(&f, &f.done, 10.));
	for (int i = 0; i < 200 && f.reports == before; i++)
		ev_run(f.loop, EVRUN_ONCE);
	t = mcp_client_tools(f.c, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(t[1].name, "z");
	json_decref(args);
	fix_finish(&f);
}
END_TEST

/* A list_changed that comes while a re-list is read is read after it, even when that re-list fails. */
START_TEST(mcp_list_changed_during_a_failed_relist_is_read)
{
	struct fix f;
	json_t *args = json_object();
	struct err e;
	size_t n;

	fix_start(&f, "{\"tools\": [{\"name\": \"a\"}], \"toolLists\": {\"more\": [{\"name\": \"a\"}, {\"name\": \"z\"}]}, "
	    "\"listFailures\": [2], \"calls\": {\"a\": {\"text\": \"ok\", \"listChanged\": \"more\", \"listChangedBurst\": 1}}}", NULL);
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	err_clear(&e);
	ck_assert_ptr_nonnull(mcp_client_call(f.c, "a", args, fix_call_done, &f, &e));
	ck_assert(fix_run_until(&f, &f.done, 10.));
	/* the first re-list fails; the second notification's re-list brings z */
	for (int i = 0; i < 400 && (mcp_client_tools(f.c, &n), n) < 2; i++)
		ev_run(f.loop, EVRUN_ONCE);
	mcp_client_tools(f.c, &n);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(mcp_client_state(f.c), MCP_READY);
	json_decref(args);
	fix_finish(&f);
}
END_TEST

START_TEST(mcp_server_requests_and_noise)
{
	struct fix f;
	json_t *args = json_object();
	struct err e;

	fix_start(&f, "{\"start\": {\"stdout\": \"hello, not json\"}, \"tools\": [{\"name\": \"p\"}, {\"name\": \"u\"}], "
	    "\"calls\": {\"p\": {\"request\": {\"method\": \"ping\"}}, \"u\": {\"request\": {\"method\": \"sampling/createMessage\"}}}}",
	    NULL);
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	err_clear(&e);
	ck_assert_ptr_nonnull(mcp_client_call(f.c, "p", args, fix_call_done, &f, &e));
	ck_assert(fix_run_until(&f, &f.done, 10.));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(f.result, "content"), 0),
	    "text")), "{\"result\":{}}");
	f.done = 0;
	ck_assert_ptr_nonnull(mcp_client_call(f.c, "u", args, fix_call_done, &f, &e));
	ck_assert(fix_run_until(&f, &f.done, 10.));
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(json_array_get(json_object_get(f.result,
	    "content"), 0), "text")), "-32601"));
	json_decref(args);
	fix_finish(&f);
}
END_TEST

START_TEST(mcp_stop_ends_the_process)
{
	struct fix f;
	char *log;
	int pid = 0;

	fix_start(&f, "{}", NULL);
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	ck_assert(fix_log_has(&f, "\"event\":\"start\""));
	log = test_read_file(f.log, NULL);
	ck_assert(sscanf(strstr(log, "\"pid\":") + 6, "%d", &pid) == 1);
	free(log);
	fix_finish(&f);	/* stdin closed: the mock exits at EOF; stopped is called */
	ck_assert_int_eq(kill(pid, 0), -1);
	ck_assert_int_eq(errno, ESRCH);	/* reaped, not a zombie */
}
END_TEST

/*
 * A transport made here (lim.open), for what a process cannot show on cue: an HTTP session that
 * the server ends (gone, expired), a transport that takes its time to close. It answers
 * initialize and tools/list from the loop (never from inside send), and reports gone when told.
 */
struct ft_world {
	int opens, frees;
	int expire_list;		/* the open (1-based) whose tools/list ends the session */
	int slow_close;			/* close reports nothing until ft_close_now */
	struct ft *last;
};

struct ft {
	struct mcp_transport t;
	struct ft_world *w;
	struct ev_loop *loop;
	ev_timer tm;
	json_t *inbox;
	int nth, closed, gone, expire;
	const char *gone_reason;
};

static void
ft_deliver(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct ft *f = w->data;
	struct mcp_transport_cb cb = f->t.cb;

	(void)loop;
	(void)revents;
	while (!f->gone && json_array_size(f->inbox)) {
		json_t *m = json_incref(json_array_get(f->inbox, 0));
		json_array_remove(f->inbox, 0);
		cb.message(cb.arg, m);	/* may free f: then the inbox is empty and gone unset */
		json_decref(m);
		if (f->t.cb.arg == NULL)
			return;
	}
	if (f->gone_reason && !f->gone) {
		f->gone = 1;
		cb.gone(cb.arg, f->gone_reason, f->expire);	/* the owner frees f */
	}
}

static void
ft_kick(struct ft *f)
{
	ev_timer_stop(f->loop, &f->tm);
	ev_timer_set(&f->tm, 0., 0.);
	ev_timer_start(f->loop, &f->tm);
}

static void
ft_send(struct mcp_transport *t, const json_t *msg)
{
	struct ft *f = (struct ft *)t;
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *id = json_object_get(msg, "id");

	if (f->gone_reason || method == NULL || id == NULL)
		return;
	if (strcmp(method, "initialize") == 0) {
		json_array_append_new(f->inbox, xjson_pack("{s:s, s:O, s:{s:s, s:{s:{}}}}", "jsonrpc", "2.0", "id", id,
		    "result", "protocolVersion", "2025-11-25", "capabilities", "tools"));
	} else if (strcmp(method, "tools/list") == 0 && f->nth == f->w->expire_list) {
		f->gone_reason = "session expired";	/* an HTTP 404 for the session */
		f->expire = 1;
	} else if (strcmp(method, "tools/list") == 0) {
		json_array_append_new(f->inbox, xjson_pack("{s:s, s:O, s:{s:[{s:s, s:{s:s}}]}}", "jsonrpc", "2.0",
		    "id", id, "result", "tools", "name", "a", "inputSchema", "type", "object"));
	}
	ft_kick(f);
}

static void
ft_set_version(struct mcp_transport *t, const char *version)
{
	(void)t;
	(void)version;
}

static void
ft_close(struct mcp_transport *t)
{
	struct ft *f = (struct ft *)t;

	f->closed = 1;
	if (f->w->slow_close)
		return;
	if (f->gone_reason == NULL)
		f->gone_reason = "closed";
	ft_kick(f);
}

static void
ft_stderr_tail(const struct mcp_transport *t, struct buf *out)
{
	(void)t;
	(void)out;
}

static void
ft_free(struct mcp_transport *t)
{
	struct ft *f = (struct ft *)t;

	ev_timer_stop(f->loop, &f->tm);
	json_decref(f->inbox);
	if (f->w->last == f)
		f->w->last = NULL;
	f->w->frees++;
	free(f);
}

static const struct mcp_transport_ops ft_ops = { ft_send, ft_set_version, ft_close, ft_stderr_tail, ft_free };

static struct ev_loop *ft_loop;

static struct mcp_transport *
ft_open(void *arg, const struct mcp_config *cfg, const struct mcp_transport_cb *cb, struct err *e)
{
	struct ft_world *w = arg;
	struct ft *f = calloc(1, sizeof(*f));

	(void)cfg;
	(void)e;
	f->t.ops = &ft_ops;
	f->t.cb = *cb;
	f->w = w;
	f->loop = ft_loop;
	f->inbox = json_array();
	f->nth = ++w->opens;
	ev_timer_init(&f->tm, ft_deliver, 0., 0.);
	f->tm.data = f;
	w->last = f;
	return &f->t;
}

/* A client over the transport made here, started; lim's other fields are the caller's. */
static void
ft_client_start(struct fix *f, struct ft_world *w, struct mcp_limits *lim)
{
	struct mcp_client_cb cb = { fix_state, f };
	struct mcp_config cfg = { 0 };

	memset(f, 0, sizeof(*f));
	f->loop = ft_loop = ev_loop_new(EVFLAG_AUTO);
	test_mkdtemp(f->dir, sizeof(f->dir));
	lim->open = ft_open;
	lim->open_arg = w;
	cfg.name = (char[]){ "h" };
	f->c = mcp_client_new(f->loop, &cfg, f->dir, lim, &cb);
	mcp_client_start(f->c);
}

/* The session ends (gone, expired) in the first start's listing and later when ready: a new
 * one is begun at once each time, never after the backoff (a day here) and never failed. */
START_TEST(mcp_an_ended_session_is_begun_again_at_once)
{
	struct fix f;
	struct mcp_limits lim;
	struct ft_world w = { 0 };

	mcp_limits_default(&lim);
	lim.backoff_first = lim.backoff_max = 86400.;
	w.expire_list = 1;
	ft_client_start(&f, &w, &lim);
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	ck_assert_int_eq(w.opens, 2);
	/* ready: the server ends the session; the next listing is on the third transport */
	w.expire_list = 3;
	w.last->gone_reason = "session expired";
	w.last->expire = 1;
	ft_kick(w.last);
	ck_assert(fix_state_is(&f, MCP_EXITED, 10.));
	ck_assert(fix_state_is(&f, MCP_READY, 10.));	/* 3 expired at its listing, 4 is ready */
	ck_assert_int_eq(w.opens, 4);
	ck_assert_int_eq(w.frees, 3);
	fix_finish(&f);
	ck_assert_int_eq(w.frees, 4);
}
END_TEST

/* A start that failed leaves its transport closing; a stop waits for it instead of freeing it
 * (a process then killed at once, its ladder cut short). */
START_TEST(mcp_stop_waits_for_a_transport_still_closing)
{
	struct fix f;
	struct mcp_limits lim;
	struct ft_world w = { 0 };

	mcp_limits_default(&lim);
	lim.startup_ms = 1;		/* no answer to initialize in time: the first start fails */
	w.slow_close = 1;
	ft_client_start(&f, &w, &lim);
	w.last->gone_reason = NULL;
	ev_timer_stop(f.loop, &w.last->tm);	/* initialize is never answered */
	json_array_clear(w.last->inbox);
	ck_assert(fix_state_is(&f, MCP_FAILED, 10.));
	ck_assert(w.last->closed);
	ck_assert(!mcp_client_idle(f.c));	/* its process is still closing */
	mcp_client_stop(f.c, fix_stopped, &f);
	f.c = NULL;
	for (int i = 0; i < 5; i++)
		ev_run(f.loop, EVRUN_NOWAIT);
	ck_assert_int_eq(f.stopped, 0);
	ck_assert_int_eq(w.frees, 0);
	w.last->gone_reason = "killed by SIGTERM";	/* the ladder's end */
	ft_kick(w.last);
	ck_assert(fix_run_until(&f, &f.stopped, 10.));
	ck_assert_int_eq(w.frees, 1);
	fix_finish(&f);
}
END_TEST

/* Calls failing together (the server went) whose end cancels another of them: that one's end
 * does not run, and nothing is touched after it is freed (ASan). */
struct two_calls {
	struct mcp_call *other;
	int ends_a, ends_b;
};

static void
two_a_done(void *arg, const json_t *result, const struct err *e)
{
	struct two_calls *t = arg;

	(void)result;
	(void)e;
	t->ends_a++;
	if (t->other)
		mcp_call_cancel(t->other, "no longer wanted");
	t->other = NULL;
}

static void
two_b_done(void *arg, const json_t *result, const struct err *e)
{
	(void)result;
	(void)e;
	((struct two_calls *)arg)->ends_b++;
}

START_TEST(mcp_a_failing_call_may_cancel_another)
{
	struct fix f;
	struct mcp_limits lim;
	struct ft_world w = { 0 };
	struct two_calls t = { 0 };
	json_t *args = json_object();
	struct err e;

	mcp_limits_default(&lim);
	lim.backoff_first = lim.backoff_max = 86400.;
	ft_client_start(&f, &w, &lim);
	ck_assert(fix_state_is(&f, MCP_READY, 10.));
	err_clear(&e);
	/* b first, then a: the batch ends the newest first, so a's end comes before b's */
	ck_assert_ptr_nonnull(t.other = mcp_client_call(f.c, "a", args, two_b_done, &t, &e));
	ck_assert_ptr_nonnull(mcp_client_call(f.c, "a", args, two_a_done, &t, &e));
	w.last->gone_reason = "exited with status 1";
	ft_kick(w.last);
	ck_assert(fix_state_is(&f, MCP_EXITED, 10.));
	ck_assert_int_eq(t.ends_a, 1);
	ck_assert_int_eq(t.ends_b, 0);
	json_decref(args);
	fix_finish(&f);
}
END_TEST

START_TEST(mcp_config_refusals)
{
	static const struct {
		const char *json, *msg;
	} cases[] = {
		{ "5", "mcpServers: expected objects" },
		{ "{}", "mcpServers: name: expected a non-empty string" },
		{ "{\"name\": \"\", \"command\": \"x\"}", "mcpServers: name: expected a non-empty string" },
		{ "{\"name\": \"a\", \"type\": 1}", "mcpServers: type: expected a string" },
		{ "{\"name\": \"a\", \"type\": \"ws\"}", "mcpServers: type: unknown transport \"ws\"" },
		{ "{\"name\": \"a\"}", "mcpServers: command: expected a non-empty string" },
		{ "{\"name\": \"a\", \"command\": \"x\", \"args\": [1]}", "mcpServers: args: expected an array of strings" },
		{ "{\"name\": \"a\", \"command\": \"x\", \"args\": \"-v\"}", "mcpServers: args: expected an array of strings" },
		{ "{\"name\": \"a\", \"command\": \"x\", \"env\": {}}", "mcpServers: env: expected an array" },
		{ "{\"name\": \"a\", \"command\": \"x\", \"env\": [{\"name\": \"A\"}]}",
		    "mcpServers: env[0]: expected {name, value} strings" },
		{ "{\"name\": \"a\", \"type\": \"http\"}", "mcpServers: url: expected an http(s) URL" },
		{ "{\"name\": \"a\", \"type\": \"http\", \"url\": \"ftp://x\"}", "mcpServers: url: expected an http(s) URL" },
		{ "{\"name\": \"a\", \"type\": \"http\", \"url\": \"http://x\", \"headers\": [{\"value\": \"v\"}]}",
		    "mcpServers: headers[0]: expected {name, value} strings" },
		{ "{\"name\": \"a\", \"type\": \"sse\", \"url\": \"http://x\"}", "the sse transport is not supported" },
		/* a NUL would cut the C text: "tr\u0000ue" must not run tr */
		{ "{\"name\": \"a\", \"command\": \"tr\\u0000ue\"}", "mcpServers: command: must not contain \\u0000" },
		{ "{\"name\": \"a\\u0000b\", \"command\": \"x\"}", "mcpServers: name: must not contain \\u0000" },
		{ "{\"name\": \"a\", \"command\": \"x\", \"args\": [\"-v\", \"a\\u0000b\"]}",
		    "mcpServers: args: must not contain \\u0000" },
		{ "{\"name\": \"a\", \"command\": \"x\", \"env\": [{\"name\": \"A\", \"value\": \"1\\u00002\"}]}",
		    "mcpServers: env[0]: must not contain \\u0000" },
		{ "{\"name\": \"a\", \"type\": \"http\", \"url\": \"http://x\\u0000y\"}",
		    "mcpServers: url: must not contain \\u0000" },
	};
	struct mcp_config cfg;
	struct err e;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = json_loads(cases[i].json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		err_clear(&e);
		ck_assert_msg(mcp_config_parse(j, &cfg, &e) == -1, "case %zu accepted", i);
		ck_assert_str_eq(e.msg, cases[i].msg);
		json_decref(j);
	}
	{
		json_t *j = json_loads("{\"name\": \"a\", \"type\": \"stdio\", \"command\": \"x\", \"args\": [\"-v\"], "
		    "\"env\": [{\"name\": \"K\", \"value\": \"V\"}]}", 0, NULL);
		err_clear(&e);
		ck_assert_int_eq(mcp_config_parse(j, &cfg, &e), 0);
		ck_assert(!cfg.http);
		ck_assert_str_eq(cfg.command, "x");
		mcp_config_free(&cfg);
		json_decref(j);
		j = json_loads("{\"name\": \"h\", \"type\": \"http\", \"url\": \"https://x/mcp\"}", 0, NULL);
		ck_assert_int_eq(mcp_config_parse(j, &cfg, &e), 0);
		ck_assert(cfg.http);
		ck_assert_uint_eq(json_array_size(cfg.headers), 0);
		mcp_config_free(&cfg);
		json_decref(j);
	}
}
END_TEST

/* Every tool's text is capped at 256 KiB (docs/contract.md §19): head, the omitted line, tail; all spilled. */
START_TEST(cap_keeps_head_and_tail_and_spills_the_whole)
{
	struct test_runtime T;
	struct toolbox tb;
	struct agent *a;
	size_t n = 300 * 1024, len, small_len = 10;
	char *text = malloc(n + 1), *small = strdup("0123456789"), *copy, *spilled, *line, path[300];

	test_runtime_start(&T, "{\"version\": 1, \"scripts\": []}");
	toolbox_init(&tb);
	a = agent_new_root(&T.rt, T.dir, &tb, NULL);
	for (size_t i = 0; i < n; i++)
		text[i] = (char)('a' + i % 26);
	memcpy(text + TOOLS_CAP_HEAD - 1, "\xc3\xa9", 2);	/* an é across the head's cut */
	text[n] = '\0';
	copy = strdup(text);
	len = n;
	tools_cap_text(a, "mcp-x-c1", &text, &len);
	ck_assert_uint_le(len, TOOLS_CAP);
	ck_assert_uint_eq(strlen(text), len);
	ck_assert(memcmp(text, copy, TOOLS_CAP_HEAD - 1) == 0);	/* the head stops before the é */
	ck_assert_int_eq(text[TOOLS_CAP_HEAD - 1], '\n');
	line = text + TOOLS_CAP_HEAD;
	ck_assert(strncmp(line, "[\xe2\x80\xa6 ", 4) == 0);
	snprintf(path, sizeof(path), "%s/spill/%s/mcp-x-c1.out", T.state, agent_id(a));
	ck_assert_ptr_nonnull(strstr(line, path));
	ck_assert(strcmp(text + len - 1000, copy + n - 1000) == 0);	/* the tail is the end */
	spilled = test_read_file(path, NULL);
	ck_assert_str_eq(spilled, copy);
	free(spilled);
	/* the same name again: a new file beside it */
	free(text);
	text = strdup(copy);
	len = n;
	tools_cap_text(a, "mcp-x-c1", &text, &len);
	ck_assert_ptr_nonnull(strstr(text, "mcp-x-c1-2.out"));
	/* a text within the cap is left alone */
	tools_cap_text(a, "mcp-x-c2", &small, &small_len);
	ck_assert_str_eq(small, "0123456789");
	free(text);
	free(copy);
	free(small);
	test_runtime_finish(&T);
	toolbox_free(&tb);
}
END_TEST

Suite *
mcp_suite(void)
{
	Suite *s = suite_create("mcp");
	TCase *tc = tcase_create("client");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, mcp_handshake_and_paged_list);
	tcase_add_test(tc, mcp_old_versions_pass_unknown_ones_fail);
	tcase_add_test(tc, mcp_no_tools_capability_lists_nothing);
	tcase_add_test(tc, mcp_handshake_failures);
	tcase_add_test(tc, mcp_command_not_found_fails);
	tcase_add_test(tc, mcp_command_found_on_the_editors_path);
	tcase_add_test(tc, mcp_calls_results_and_errors);
	tcase_add_test(tc, mcp_call_timeout_and_cancel_send_cancelled);
	tcase_add_test(tc, mcp_exit_mid_call_and_restart);
	tcase_add_test(tc, mcp_restarts_give_up_after_the_tries);
	tcase_add_test(tc, mcp_list_changed_relists);
	tcase_add_test(tc, mcp_list_changed_during_a_failed_relist_is_read);
	tcase_add_test(tc, mcp_server_requests_and_noise);
	tcase_add_test(tc, mcp_stop_ends_the_process);
	tcase_add_test(tc, mcp_an_ended_session_is_begun_again_at_once);
	tcase_add_test(tc, mcp_stop_waits_for_a_transport_still_closing);
	tcase_add_test(tc, mcp_a_failing_call_may_cancel_another);
	tcase_add_test(tc, mcp_config_refusals);
	tcase_add_test(tc, cap_keeps_head_and_tail_and_spills_the_whole);
	suite_add_tcase(s, tc);
	return s;
}
