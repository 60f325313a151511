/*
 * Agent CPU per step on a long session (docs/decisions.md, "Long conversations"): a stored session of N finished turns (10 KB
 * each) is loaded, its first prompt compacts it (the 128k window is far exceeded), and then
 * STEPS one-step prompts run; the agent's CPU (utime + stime of its process) over those prompts,
 * per step, is compared between a 1 MB and a 100 MB session. After the compaction a request is
 * built from the conversation since the summary, so the figure should not grow with the log.
 * Then the 1 MB session again in a workspace whose AGENTS.md is 32 KiB (docs/contract.md §25):
 * the instructions are read when the agent starts, not per request, so a step costs what it
 * cost without them (their bytes are copied into each request's system prompt, nothing more).
 *
 *   bench_step AGENT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/util.h"

#define STEPS 300
#define SID "00000000-0000-4000-8000-0000000000b5"

static char *dir;

/* The agent's CPU so far, in ms: its loop thread's time on a CPU in ns (schedstat), else utime + stime
 * in clock ticks (10 ms each: too coarse for a step of 0.1 ms over a few hundred steps). */
static double
cpu_ms(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long ut = 0, st = 0;
	unsigned long long ns;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	if ((f = fopen(path, "r")) != NULL) {
		int ok = fscanf(f, "%llu", &ns) == 1;
		fclose(f);
		if (ok)
			return (double)ns / 1e6;
	}

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "r")) == NULL || fgets(buf, sizeof(buf), f) == NULL)
		exit(1);
	fclose(f);
	char *p = strrchr(buf, ')') + 2;
	for (int field = 3; field < 14; field++)
		p = strchr(p, ' ') + 1;
	sscanf(p, "%lu %lu", &ut, &st);
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static void
write_log(const char *path, int turns, const char *cwd)
{
	FILE *f = fopen(path, "w");
	char pad[2001];
	long seq = 0;

	memset(pad, 'x', 2000);
	pad[2000] = '\0';
	fprintf(f, "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":1,\"cwd\":\"%s\","
	    "\"delegationDepth\":0}\n", SID, cwd);
	for (int t = 1; t <= turns; t++) {
		fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"turn/start\",\"data\":{\"turn\":%d}}\n", seq, seq + 10, t);
		seq++;
		fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"user/message\",\"data\":{\"id\":\"m%d\",\"content\":"
		    "[{\"type\":\"text\",\"text\":\"%s\"}],\"source\":{\"kind\":\"user\"}}}\n", seq, seq + 10, t, pad);
		seq++;
		for (int k = 0; k < 4; k++) {
			fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"assistant/message\",\"data\":{\"turn\":%d,"
			    "\"step\":1,\"id\":\"a%d-%d\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],"
			    "\"finish\":\"stop\"}}\n", seq, seq + 10, t, t, k, pad);
			seq++;
		}
		fprintf(f, "{\"seq\":%ld,\"time\":%ld,\"type\":\"turn/end\",\"data\":{\"turn\":%d,\"reason\":"
		    "{\"kind\":\"completed\"}}}\n", seq, seq + 10, t);
		seq++;
	}
	fclose(f);
}

/* Loads a session of turns, compacts it, runs STEPS prompts: the agent's CPU per step in ms. */
static double
run(const char *agent, const char *rec, int turns, const char *cwd, double *load_ms)
{
	char state[512], path[600], line[1 << 16];
	double c0 = 0, t0 = bench_now_ms();
	int next = 3;

	snprintf(state, sizeof(state), "%s/state-%d-%zu", dir, turns, strlen(cwd));
	snprintf(path, sizeof(path), "%s/sessions", state);
	mkdir(state, 0700);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", state, SID);
	write_log(path, turns, cwd);
	const char *argv[] = { agent, "--model", "replay", "--recording", rec, "--state-dir", state,
		"--sync", "none", "--tools", "none", NULL };
	FILE *to, *from;
	pid_t pid = bench_spawn(argv, &to, &from);

	fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/load\",\"params\":{\"sessionId\":\"%s\",\"cwd\":\"%s\","
	    "\"mcpServers\":[]}}\n", SID, cwd);
	fflush(to);
	while (fgets(line, sizeof(line), from)) {
		char want[64];
		if (strstr(line, "\"id\":2,\"result\"")) {
			*load_ms = bench_now_ms() - t0;
		} else {
			snprintf(want, sizeof(want), "\"id\":%d,\"result\"", next - 1);
			if (next == 3 || strstr(line, want) == NULL)
				continue;
		}
		if (strstr(line, "\"error\"")) {
			fprintf(stderr, "bench_step: %.300s\n", line);
			exit(1);
		}
		if (next == 4)
			c0 = cpu_ms(pid);	/* the first prompt (the compaction) is done */
		if (next == 4 + STEPS)
			break;
		fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"%s\","
		    "\"prompt\":[{\"type\":\"text\",\"text\":\"step %d\"}]}}\n", next, SID, next);
		fflush(to);
		next++;
	}
	double c1 = cpu_ms(pid);
	fclose(to);
	fclose(from);
	waitpid(pid, NULL, 0);
	if (next != 4 + STEPS) {
		fprintf(stderr, "bench_step: only %d prompts answered\n", next - 4);
		exit(1);
	}
	return (c1 - c0) / STEPS;
}

int
main(int argc, char **argv)
{
	char tmpl[] = "/tmp/bench-step-XXXXXX", rec[600];
	double small, big, small_load = 0, big_load = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: bench_step AGENT\n");
		return 2;
	}
	dir = mkdtemp(tmpl);
	snprintf(rec, sizeof(rec), "%s/rec.json", dir);
	FILE *f = fopen(rec, "w");
	fputs("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[", f);
	for (int i = 0; i < STEPS + 1; i++)
		fprintf(f, "%s{\"text\":\"A short answer for step %d.\"}", i ? "," : "", i);
	fputs("],\"compactions\":[{\"text\":\"The long conversation, summarised.\"}]}]}", f);
	fclose(f);
	/* a workspace with 32 KiB of instructions, and an empty one beside it */
	char ws[600], none[600], md[700];
	snprintf(ws, sizeof(ws), "%s/ws", dir);
	snprintf(none, sizeof(none), "%s/none", dir);
	mkdir(ws, 0700);
	mkdir(none, 0700);
	snprintf(md, sizeof(md), "%s/AGENTS.md", ws);
	f = fopen(md, "w");
	static const char rule[] = "Build with make; run make test before you finish; keep lines short.\n";
	for (size_t n = 0; n + sizeof(rule) - 1 <= (size_t)32 * 1024; n += sizeof(rule) - 1)
		fputs(rule, f);
	fclose(f);
	small = run(argv[1], rec, 100, none, &small_load);
	big = run(argv[1], rec, 10000, none, &big_load);
	double instr_load = 0, instr = run(argv[1], rec, 100, ws, &instr_load);
	printf("step_cpu[1 MB session]: %.3f ms per step (load %.0f ms)\n", small, small_load);
	printf("step_cpu[100 MB session]: %.3f ms per step (load %.0f ms)\n", big, big_load);
	printf("ratio[step_cpu 100 MB / 1 MB]: %.2fx\n", small > 0 ? big / small : 0.0);
	printf("step_cpu[1 MB session, 32 KiB of AGENTS.md]: %.3f ms per step (load %.0f ms)\n", instr, instr_load);
	printf("ratio[step_cpu with instructions / without]: %.2fx\n", small > 0 ? instr / small : 0.0);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : 1;
}
