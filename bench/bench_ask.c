/*
 * The cost of a permission round trip (docs/contract.md §17.3) in agent time: one turn of N sequential
 * job_kill calls (cheap: no process, JOB_NOT_FOUND), run with --permission-mode default (every
 * call asks; this process answers "allow" the moment it reads the request) and with full-access
 * (no ask). The difference per call is what an ask adds beyond the client's answer: the agent's
 * work plus one pipe round trip, so an upper bound. Median of 5 runs each.
 *
 *   bench_ask AGENT
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/util.h"

#define CALLS 2000
#define RUNS 5

static char *dir;

/* One run: the turn's wall time in ms, answering every ask. */
static double
run(const char *agent, const char *mode, const char *rec)
{
	char state[512], line[1 << 16];
	size_t have = 0;
	double t0 = 0, t1 = 0;

	snprintf(state, sizeof(state), "%s/state-%s-%d", dir, mode, rand());
	const char *argv[] = { agent, "--model", "replay", "--recording", rec, "--state-dir", state, "--sync",
		"none", "--permission-mode", mode, "--deterministic", NULL };
	FILE *to, *from;
	pid_t pid = bench_spawn(argv, &to, &from);
	fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"%s\",\"mcpServers\":[]}}\n", dir);
	fflush(to);
	while (fgets(line, sizeof(line), from)) {
		if (getenv("BENCH_DEBUG"))
			fprintf(stderr, "<< %.120s\n", line);
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
		if (strstr(line, "\"method\":\"session/request_permission\"")) {
			long id = strtol(strstr(line, "\"id\":") + 5, NULL, 10);
			fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"result\":{\"outcome\":{\"outcome\":\"selected\","
			    "\"optionId\":\"allow\"}}}\n", id);
			fflush(to);
			have++;
			continue;
		}
		if (strstr(line, "\"id\":3,\"result\"")) {
			t1 = bench_now_ms();
			break;
		}
	}
	fclose(to);
	fclose(from);
	waitpid(pid, NULL, 0);
	if (strcmp(mode, "default") == 0 && have != CALLS) {
		fprintf(stderr, "bench_ask: %zu asks answered, %d expected\n", have, CALLS);
		exit(1);
	}
	return t1 - t0;
}

int
main(int argc, char **argv)
{
	char tmpl[] = "/tmp/bench-ask-XXXXXX", rec[600];
	double asked[RUNS], plain[RUNS];

	if (argc != 2) {
		fprintf(stderr, "usage: bench_ask AGENT\n");
		return 2;
	}
	dir = mkdtemp(tmpl);
	snprintf(rec, sizeof(rec), "%s/rec.json", dir);
	FILE *f = fopen(rec, "w");
	fputs("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"tool_calls\":[", f);
	for (int i = 0; i < CALLS; i++)
		fprintf(f, "%s{\"name\":\"job_kill\",\"arguments\":{\"job_id\":\"job-%d\"}}", i ? "," : "", i);
	fputs("]},{\"text\":\"done\"}]}]}", f);
	fclose(f);
	for (int i = 0; i < RUNS; i++) {
		asked[i] = run(argv[1], "default", rec);
		plain[i] = run(argv[1], "full-access", rec);
	}
	qsort(asked, RUNS, sizeof(double), bench_cmp_double);
	qsort(plain, RUNS, sizeof(double), bench_cmp_double);
	double per = (asked[RUNS / 2] - plain[RUNS / 2]) / CALLS;
	printf("ask[%d calls asked]: %.1f ms; unasked %.1f ms; %.3f ms per round trip (target under 0.2 ms)\n",
	    CALLS, asked[RUNS / 2], plain[RUNS / 2], per);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
