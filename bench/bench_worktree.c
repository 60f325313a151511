/*
 * An isolated child's worktree (docs/contract.md §24) against git alone: a repository of FILES
 * files of 10 KB (100 MB) is made once; then, in turn, ROUNDS times each, `git worktree add -b`
 * alone (the floor: the checkout is the work) and what the runtime does before a child exists
 * (git_wt_probe and git_wt_create: rev-parse thrice, stash create, the branch checks, the add),
 * each worktree removed again between rounds (not timed). Medians, and the ratio.
 * Then the loop while git works: one agent, session A starts an isolated child in that repository
 * (the worktree made, the child's file committed, the worktree removed, all off the loop) while
 * session B is prompted over and over (replay answers at once); the longest gap between two of
 * B's messages from A's prompt to A's last answer, against the same without A (the load
 * benchmark's method), GAP_RUNS times, each in a fresh state directory.
 *
 *   bench_worktree [AGENT]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>
#include <sys/wait.h>

#include "bench/util.h"
#include "workspace/git.h"

#define B_REPLIES 20000

static char line[1 << 20];

/* B prompted until stop_after_ms (0: until A's last answer, "noted"): its longest gap, in ms. */
static double
gaps(FILE *to, FILE *from, const char *sid_a, const char *sid_b, int with_a, double window_ms, int *id)
{
	double t0 = bench_now_ms(), last = t0, worst = 0;
	int waiting = (*id)++, a_done = !with_a;

	if (with_a)
		fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"%s\","
		    "\"prompt\":[{\"type\":\"text\",\"text\":\"delegate\"}]}}\n", (*id)++, sid_a);
	fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"%s\","
	    "\"prompt\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n", waiting, sid_b);
	fflush(to);
	while (fgets(line, sizeof(line), from)) {
		double now = bench_now_ms();
		char want[48];
		snprintf(want, sizeof(want), "\"id\":%d,", waiting);
		if (with_a && strstr(line, sid_a) && strstr(line, "noted"))
			a_done = 1;
		if (strstr(line, sid_b) || strstr(line, want)) {
			if (now - last > worst)
				worst = now - last;
			last = now;
		}
		if (!strstr(line, want))
			continue;
		if (a_done && (with_a || now - t0 >= window_ms))
			return worst;
		waiting = (*id)++;
		fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/prompt\",\"params\":{\"sessionId\":"
		    "\"%s\",\"prompt\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n", waiting, sid_b);
		fflush(to);
	}
	return -1;
}

/* session/new in cwd: its id into sid. */
static void
new_session(FILE *to, FILE *from, const char *cwd, int *id, char sid[40])
{
	char want[48];

	fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/new\",\"params\":{\"cwd\":\"%s\","
	    "\"mcpServers\":[]}}\n", *id, cwd);
	fflush(to);
	snprintf(want, sizeof(want), "\"id\":%d,", (*id)++);
	while (fgets(line, sizeof(line), from))
		if (strstr(line, want)) {
			const char *p = strstr(line, "\"sessionId\":\"");
			snprintf(sid, 40, "%.36s", p ? p + 13 : "");
			return;
		}
	exit(1);
}

/* The loop's longest gaps with and without an isolated child at work: with into *with, without
 * into *without. */
static void
loop_gap(const char *agent, const char *base, const char *repo, double *with, double *without)
{
	char rec[300], state[300], sa[40], sb[40];
	FILE *f, *to, *from;
	int id = 1;

	snprintf(rec, sizeof(rec), "%s/rec.json", base);
	snprintf(state, sizeof(state), "%s/state", base);
	f = fopen(rec, "w");
	if (f == NULL)
		exit(1);
	fputs("{\"version\":1,\"scripts\":[{\"agent\":\"root\",\"replies\":[{\"tool_calls\":[{\"name\":\"subagent\","
	    "\"arguments\":{\"description\":\"w\",\"prompt\":\"p\",\"isolation\":\"worktree\"}}]},{\"text\":\"started\"},"
	    "{\"text\":\"noted\"}]},{\"agent\":\"root\",\"replies\":[", f);
	for (int i = 0; i < B_REPLIES; i++)
		fprintf(f, "%s{\"text\":\"ok\"}", i ? "," : "");
	fputs("]},{\"agent\":\"label:w\",\"replies\":[{\"tool_calls\":[{\"name\":\"write\",\"arguments\":"
	    "{\"file_path\":\"new.txt\",\"content\":\"x\\n\"}}]},{\"text\":\"done\"}]}]}", f);
	fclose(f);
	const char *argv[] = { agent, "--model", "replay", "--recording", rec, "--state-dir", state, NULL };
	int pid = bench_spawn(argv, &to, &from);
	fprintf(to, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n", id++);
	fflush(to);
	if (fgets(line, sizeof(line), from) == NULL)
		exit(1);
	new_session(to, from, repo, &id, sa);
	new_session(to, from, "/tmp", &id, sb);
	double t0 = bench_now_ms();
	*with = gaps(to, from, sa, sb, 1, 0, &id);
	double took = bench_now_ms() - t0;
	*without = gaps(to, from, sa, sb, 0, took, &id);
	fclose(to);
	while (fgets(line, sizeof(line), from))
		;
	fclose(from);
	waitpid(pid, NULL, 0);
}

#define FILES 10000
#define ROUNDS 5
#define GAP_RUNS 5

static void
run(const char *cmd)
{
	if (system(cmd) != 0) {
		fprintf(stderr, "bench_worktree: failed: %s\n", cmd);
		exit(1);
	}
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return v[n / 2];
}

int
main(int argc, char **argv)
{
	char tmpl[] = "/tmp/bench-worktree-XXXXXX", cmd[1400], repo[200], dir[200];
	double alone[ROUNDS], ours[ROUNDS];
	char *base = mkdtemp(tmpl);

	snprintf(repo, sizeof(repo), "%s/repo", base);
	snprintf(dir, sizeof(dir), "%s/worktrees", base);
	/* 100 directories of 100 files, each 100 lines of 100 characters (10 KB), written by one awk */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && cd %s && git init -q && awk 'BEGIN { srand(1); "
	    "for (d = 0; d < 100; d++) { system(\"mkdir -p d\" d); for (f = 0; f < 100; f++) { fn = \"d\" d \"/f\" f \".txt\"; "
	    "for (l = 0; l < 100; l++) { s = \"\"; for (c = 0; c < 10; c++) s = s sprintf(\"%%09d \", int(rand() * 1e9)); "
	    "print s > fn } close(fn) } } }' && git add -A && git -c user.name=b -c user.email=b@b commit -q -m files",
	    repo, repo);
	double t0 = bench_now_ms();
	run(cmd);
	printf("worktree_repo[%d files, 100 MB]: made in %.0f ms\n", FILES, bench_now_ms() - t0);
	for (int i = 0; i < ROUNDS; i++) {
		snprintf(cmd, sizeof(cmd), "cd %s && git worktree add -q -b alone%d %s/alone%d HEAD", repo, i, dir, i);
		t0 = bench_now_ms();
		run(cmd);
		alone[i] = bench_now_ms() - t0;
		snprintf(cmd, sizeof(cmd), "cd %s && git worktree remove --force %s/alone%d && git branch -q -D alone%d", repo,
		    dir, i, i);
		run(cmd);

		char id[64], *r, *sub, why[GIT_WHY_MAX];
		struct git_wt wt;
		int deleted, claim;
		snprintf(id, sizeof(id), "%08x-0000-4000-8000-00000000000%d", 0x1a2b3c40 + i, i);
		t0 = bench_now_ms();
		if (git_wt_probe(repo, NULL, &r, &sub, why) < 0 || git_wt_create(repo, r, sub, id, dir, NULL, &wt, &claim, why) < 0) {
			fprintf(stderr, "bench_worktree: %s\n", why);
			return 1;
		}
		ours[i] = bench_now_ms() - t0;
		git_wt_unclaim(dir, id, claim);
		free(r);
		free(sub);
		if (git_wt_remove(&wt, NULL, &deleted, why) < 0) {
			fprintf(stderr, "bench_worktree: %s\n", why);
			return 1;
		}
		git_wt_free(&wt);
	}
	double a = median(alone, ROUNDS), o = median(ours, ROUNDS);
	printf("worktree_add[git worktree add alone]: %.0f ms (median of %d)\n", a, ROUNDS);
	printf("worktree_add[the runtime's probe and create]: %.0f ms (median of %d)\n", o, ROUNDS);
	printf("ratio[worktree runtime / git alone]: %.2fx (target 1.3x)\n", a > 0 ? o / a : 0.0);
	if (argc > 1) {
		double with[GAP_RUNS], without[GAP_RUNS];
		for (int i = 0; i < GAP_RUNS; i++) {
			snprintf(cmd, sizeof(cmd), "rm -rf %s/state %s/worktrees", base, base);
			run(cmd);
			loop_gap(argv[1], base, repo, &with[i], &without[i]);
			printf("worktree_loop_gap[run %d]: %.1f ms; without it %.1f ms\n", i + 1, with[i], without[i]);
		}
		printf("worktree_loop_gap[another session, while a child's worktree is made, committed and removed]: "
		    "%.1f ms (median of %d; target 20 ms); without it %.1f ms\n", median(with, GAP_RUNS), GAP_RUNS,
		    median(without, GAP_RUNS));
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	run(cmd);
	return 0;
}
