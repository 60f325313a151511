/*
 * The cost of a task list update (docs/contract.md §26), tool call to ACP update: one turn of N
 * sequential todo_write calls of 5 entries each (each logged as plan/updated and sent as
 * plan_update to a client with clientCapabilities.plan), against one turn of N job_kill calls
 * (cheap: no process, JOB_NOT_FOUND), both in full-access with --sync none. The difference per
 * call is what todo_write adds over a tool that does nothing; the whole per call, what a call of
 * it costs the agent (the ask benchmark's method). Median of 5 runs each.
 *
 *   bench_plan AGENT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/util.h"

#define CALLS 2000
#define RUNS 5

static char *dir;

/* One run: the turn's wall time in ms; *plans the plan_update lines read. */
static double
run(const char *agent, const char *rec, size_t *plans)
{
	char state[512], line[1 << 16];
	double t0 = 0, t1 = 0;

	snprintf(state, sizeof(state), "%s/state-%d", dir, rand());
	const char *argv[] = { agent, "--model", "replay", "--recording", rec, "--state-dir", state, "--sync",
		"none", "--permission-mode", "full-access", "--deterministic", NULL };
	FILE *to, *from;
	pid_t pid = bench_spawn(argv, &to, &from);
	*plans = 0;
	fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,"
	    "\"clientCapabilities\":{\"plan\":{}}}}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"%s\",\"mcpServers\":[]}}\n", dir);
	fflush(to);
	while (fgets(line, sizeof(line), from)) {
		char *sid = strstr(line, "\"id\":2,\"result\":{\"sessionId\":\"");
		if (sid) {
			sid += strlen("\"id\":2,\"result\":{\"sessionId\":\"");
			sid[36] = '\0';
			t0 = bench_now_ms();
			fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"%s\","
			    "\"prompt\":[{\"type\":\"text\",\"text\":\"go\"}]}}\n", sid);
			fflush(to);
			continue;
		}
		if (strstr(line, "\"sessionUpdate\":\"plan_update\""))
			(*plans)++;
		if (strstr(line, "\"id\":3,\"result\"")) {
			t1 = bench_now_ms();
			break;
		}
	}
	fclose(to);
	fclose(from);
	waitpid(pid, NULL, 0);
	return t1 - t0;
}

/* A recording of one turn of CALLS calls of tool (todo_write: 5 entries, one in progress). */
static void
recording(const char *path, int todo)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		exit(1);
	fputs("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"tool_calls\":[", f);
	for (int i = 0; i < CALLS; i++) {
		if (!todo) {
			fprintf(f, "%s{\"name\":\"job_kill\",\"arguments\":{\"job_id\":\"job-%d\"}}", i ? "," : "", i);
			continue;
		}
		fprintf(f, "%s{\"name\":\"todo_write\",\"arguments\":{\"todos\":[", i ? "," : "");
		for (int k = 0; k < 5; k++)
			fprintf(f, "%s{\"content\":\"Step %d of the work, round %d\",\"status\":\"%s\"}", k ? "," : "", k, i,
			    k < i % 5 ? "completed" : k == i % 5 ? "in_progress" : "pending");
		fputs("]}}", f);
	}
	fputs("]},{\"text\":\"done\"}]}]}", f);
	fclose(f);
}

int
main(int argc, char **argv)
{
	char tmpl[] = "/tmp/bench-plan-XXXXXX", todo_rec[600], noop_rec[600];
	double todo[RUNS], noop[RUNS];
	size_t plans, none;

	if (argc != 2) {
		fprintf(stderr, "usage: bench_plan AGENT\n");
		return 2;
	}
	dir = mkdtemp(tmpl);
	snprintf(todo_rec, sizeof(todo_rec), "%s/todo.json", dir);
	snprintf(noop_rec, sizeof(noop_rec), "%s/noop.json", dir);
	recording(todo_rec, 1);
	recording(noop_rec, 0);
	for (int i = 0; i < RUNS; i++) {
		todo[i] = run(argv[1], todo_rec, &plans);
		noop[i] = run(argv[1], noop_rec, &none);
		if (plans != CALLS) {
			fprintf(stderr, "bench_plan: %zu plan updates read, %d expected\n", plans, CALLS);
			return 1;
		}
	}
	qsort(todo, RUNS, sizeof(double), bench_cmp_double);
	qsort(noop, RUNS, sizeof(double), bench_cmp_double);
	printf("plan[%d todo_write calls]: %.1f ms, %.3f ms per call (tool call to plan_update; target under 0.2 ms); "
	    "%.3f ms more than a call that does nothing (job_kill: %.1f ms)\n", CALLS, todo[RUNS / 2],
	    todo[RUNS / 2] / CALLS, (todo[RUNS / 2] - noop[RUNS / 2]) / CALLS, noop[RUNS / 2]);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
