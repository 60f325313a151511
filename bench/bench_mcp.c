/*
 * MCP through the agent (docs/contract.md §18), against the scripted stdio server (tests/mock_mcp.c):
 *
 * 1. The round trip of a tools/call through the agent, over a direct call. The agent runs one
 *    turn whose step holds N echo calls and one job_kill (not concurrency-safe: the step runs
 *    its calls one after another), and the same turn with N + 1 job_kill calls (no process:
 *    JOB_NOT_FOUND). The difference per call is what an MCP call costs in the agent, pipe round
 *    trip and server included; the direct figure is our C client (mcp/client.c, in this
 *    process) calling the same server N times in a row. Overhead = agent - direct, per call.
 * 2. Start-up and session/new with 5 configured servers (each sleeps 1 s before it reads): the
 *    initialize answer and the session/new answer, against the same with none.
 * Medians of 5 runs.
 *
 *   bench_mcp AGENT MOCK_MCP
 */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ev.h>

#include "base/xjson.h"
#include "bench/util.h"
#include "mcp/client.h"

#define CALLS 2000
#define RUNS 5

static char *dir;
static const char *mock;

struct timing {
	double init_ms, new_ms, turn_ms;
};

/* One agent run: initialize, session/new with servers (a JSON array), and a prompt when rec is set. */
static struct timing
run(const char *agent, const char *rec, const char *servers)
{
	struct timing t = { 0, 0, 0 };
	char state[512], line[1 << 16];
	double t0, tnew = 0, tp = 0;

	snprintf(state, sizeof(state), "%s/state-%d", dir, rand());
	const char *with_rec[] = { agent, "--model", "replay", "--recording", rec, "--state-dir", state, "--sync",
		"none", "--permission-mode", "full-access", "--deterministic", NULL };
	const char *builtin[] = { agent, "--model", "builtin", "--state-dir", state, "--sync", "none",
		"--deterministic", NULL };
	FILE *to, *from;
	t0 = bench_now_ms();
	pid_t pid = bench_spawn(rec ? with_rec : builtin, &to, &from);
	fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n");
	fflush(to);
	while (fgets(line, sizeof(line), from)) {
		if (getenv("BENCH_DEBUG"))
			fprintf(stderr, "<< %.160s\n", line);
		if (strstr(line, "\"id\":1,\"result\"")) {
			t.init_ms = bench_now_ms() - t0;
			tnew = bench_now_ms();
			fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"%s\","
			    "\"mcpServers\":%s}}\n", dir, servers);
			fflush(to);
			continue;
		}
		char *sid = strstr(line, "\"id\":2,\"result\":{\"sessionId\":\"");
		if (sid) {
			t.new_ms = bench_now_ms() - tnew;
			if (rec == NULL)
				break;
			sid += strlen("\"id\":2,\"result\":{\"sessionId\":\"");
			sid[36] = '\0';
			tp = bench_now_ms();
			fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"%s\","
			    "\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}}\n", sid);
			fflush(to);
			continue;
		}
		if (strstr(line, "\"id\":3,\"result\"")) {
			t.turn_ms = bench_now_ms() - tp;
			break;
		}
	}
	fclose(to);
	fclose(from);
	waitpid(pid, NULL, 0);
	return t;
}

/* The recording: one step of n echo calls (or none) and CALLS + 1 - n job_kill calls. */
static void
write_rec(const char *path, int echoes)
{
	FILE *f = fopen(path, "w");

	fputs("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"tool_calls\":[", f);
	for (int i = 0; i <= CALLS; i++) {
		if (i < echoes)
			fprintf(f, "%s{\"name\":\"mcp__m__echo\",\"arguments\":{\"i\":%d}}", i ? "," : "", i);
		else
			fprintf(f, "%s{\"name\":\"job_kill\",\"arguments\":{\"job_id\":\"job-%d\"}}", i ? "," : "", i);
	}
	fputs("]},{\"text\":\"done\"}]}]}", f);
	fclose(f);
}

/* The direct figure: CALLS sequential echo calls from our client in this process, in ms. */
struct direct {
	struct ev_loop *loop;
	struct mcp_client *c;
	int left, ready, stopped;
	json_t *args;
	double t0, t1;
};

static void direct_next(struct direct *d);

static void
direct_state(void *arg, struct mcp_client *c)
{
	struct direct *d = arg;

	if (mcp_client_state(c) == MCP_READY && !d->ready) {
		d->ready = 1;
		d->t0 = bench_now_ms();
		direct_next(d);
	}
}

static void
direct_done(void *arg, const json_t *result, const struct err *e)
{
	struct direct *d = arg;

	if (result == NULL) {
		fprintf(stderr, "bench_mcp: direct call failed: %s\n", e->msg);
		exit(1);
	}
	direct_next(d);
}

static void
direct_next(struct direct *d)
{
	struct err e;

	if (d->left-- == 0) {
		d->t1 = bench_now_ms();
		ev_break(d->loop, EVBREAK_ALL);
		return;
	}
	err_clear(&e);
	if (mcp_client_call(d->c, "echo", d->args, direct_done, d, &e) == NULL) {
		fprintf(stderr, "bench_mcp: %s\n", e.msg);
		exit(1);
	}
}

static void
direct_stopped(void *arg)
{
	struct direct *d = arg;

	d->stopped = 1;
	ev_break(d->loop, EVBREAK_ALL);
}

static double
direct(const char *script)
{
	struct direct d;
	struct mcp_limits lim;
	struct mcp_config cfg;
	struct mcp_client_cb cb = { direct_state, &d };
	struct err e;
	json_t *server = xjson_pack("{s:s, s:s, s:[s]}", "name", "m", "command", mock, "args", script);

	memset(&d, 0, sizeof(d));
	d.loop = ev_loop_new(EVFLAG_AUTO);
	d.left = CALLS;
	d.args = xjson_pack("{s:i}", "i", 1);
	err_clear(&e);
	if (mcp_config_parse(server, &cfg, &e) < 0)
		exit(1);
	mcp_limits_default(&lim);
	d.c = mcp_client_new(d.loop, &cfg, dir, &lim, &cb);
	mcp_client_start(d.c);
	ev_run(d.loop, 0);
	if (!d.ready || d.left >= 0) {
		fprintf(stderr, "bench_mcp: the direct client never finished (%s)\n", mcp_client_reason(d.c));
		exit(1);
	}
	mcp_client_stop(d.c, direct_stopped, &d);
	while (!d.stopped)
		ev_run(d.loop, EVRUN_ONCE);
	mcp_config_free(&cfg);
	json_decref(server);
	json_decref(d.args);
	ev_loop_destroy(d.loop);
	return d.t1 - d.t0;
}

static double
median(double *v)
{
	qsort(v, RUNS, sizeof(double), bench_cmp_double);
	return v[RUNS / 2];
}

int
main(int argc, char **argv)
{
	char tmpl[] = "/tmp/bench-mcp-XXXXXX", rec_mcp[600], rec_plain[600], script[600], slow[600];
	char one[2048], five[8192];
	double with[RUNS], without[RUNS], dir_ms[RUNS], init0[RUNS], init5[RUNS], new0[RUNS], new5[RUNS];
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: bench_mcp AGENT MOCK_MCP\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	mock = realpath(argv[2], NULL);
	if (mock == NULL) {
		fprintf(stderr, "bench_mcp: no mock at %s\n", argv[2]);
		return 2;
	}
	dir = mkdtemp(tmpl);
	snprintf(rec_mcp, sizeof(rec_mcp), "%s/rec-mcp.json", dir);
	snprintf(rec_plain, sizeof(rec_plain), "%s/rec-plain.json", dir);
	snprintf(script, sizeof(script), "%s/echo.json", dir);
	snprintf(slow, sizeof(slow), "%s/slow.json", dir);
	write_rec(rec_mcp, CALLS);
	write_rec(rec_plain, 0);
	f = fopen(script, "w");
	fputs("{\"tools\": [{\"name\": \"echo\", \"inputSchema\": {\"type\": \"object\"}}]}", f);
	fclose(f);
	f = fopen(slow, "w");
	fputs("{\"start\": {\"sleepMs\": 1000}, \"tools\": [{\"name\": \"echo\"}]}", f);
	fclose(f);
	snprintf(one, sizeof(one), "[{\"name\":\"m\",\"command\":\"%s\",\"args\":[\"%s\"],\"env\":[]}]", mock, script);
	snprintf(five, sizeof(five), "[");
	for (int i = 0; i < 5; i++)
		snprintf(five + strlen(five), sizeof(five) - strlen(five),
		    "%s{\"name\":\"s%d\",\"command\":\"%s\",\"args\":[\"%s\"],\"env\":[]}", i ? "," : "", i, mock, slow);
	strcat(five, "]");
	for (int i = 0; i < RUNS; i++) {
		struct timing a = run(argv[1], rec_mcp, one), b = run(argv[1], rec_plain, one);
		struct timing s0 = run(argv[1], NULL, "[]"), s5 = run(argv[1], NULL, five);
		with[i] = a.turn_ms;
		without[i] = b.turn_ms;
		dir_ms[i] = direct(script);
		init0[i] = s0.init_ms;
		init5[i] = s5.init_ms;
		new0[i] = s0.new_ms;
		new5[i] = s5.new_ms;
	}
	double agent_us = (median(with) - median(without)) / CALLS * 1000.;
	double direct_us = median(dir_ms) / CALLS * 1000.;
	printf("mcp call[%d sequential echo calls]: %.1f us per call through the agent, %.1f us direct; "
	    "overhead %.1f us (target under 50 us)\n", CALLS, agent_us, direct_us, agent_us - direct_us);
	printf("mcp start-up: initialize %.2f ms with 5 servers configured, %.2f ms without; "
	    "session/new %.2f ms with 5 (each starting for 1 s), %.2f ms without\n",
	    median(init5), median(init0), median(new5), median(new0));
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
