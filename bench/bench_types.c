/*
 * Agent types (docs/contract.md §23.1): what reading them costs a session. Two agents side by side,
 * one whose workspace and HOME hold 200 type files each (Claude Code's format, about 1 KB), one
 * whose hold none; session/new is sent to each in turn, ROUNDS times, and the medians of the round
 * trips are compared (the difference is what a root pays for 400 files when it starts: after the
 * first, a stat each, the runtime's memo holding what they said). Then the same without the memo:
 * every file opened, read and parsed (agent_types_load with none), in this process. Then,
 * in this process, the check a root turn makes when nothing changed (agent_types_stale: a stat per
 * source directory), per call.
 *
 *   bench_types AGENT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent_types.h"
#include "bench/util.h"
#include "tools/toolsets.h"

#define ROUNDS 300
#define FILES 200
#define STALE_CALLS 200000

static void
mkdirs(const char *path)
{
	char cmd[1200];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
	if (system(cmd) != 0)
		exit(1);
}

static void
type_files(const char *dir, const char *prefix)
{
	mkdirs(dir);
	for (int i = 0; i < FILES; i++) {
		char path[1200];
		snprintf(path, sizeof(path), "%s/%s-%03d.md", dir, prefix, i);
		FILE *f = fopen(path, "w");
		if (f == NULL)
			exit(1);
		fprintf(f, "---\nname: %s-%03d\ndescription: Reviews the %s part of the code for bugs, style and missing "
		    "tests; use it after a change there.\ntools: Read, Grep, Glob, Bash\nmodel: inherit\n"
		    "permissionMode: plan\nmaxTurns: 20\ncolor: blue\n---\n\n", prefix, i, prefix);
		for (int k = 0; k < 8; k++)
			fprintf(f, "%d. Read what changed and the files around it; list each problem with its file and line.\n",
			    k + 1);
		fclose(f);
		/* an hour old: a file that has not just changed (agent_types.h: a fresh one is read again) */
		struct timespec old[2];
		clock_gettime(CLOCK_REALTIME, &old[0]);
		old[0].tv_sec -= 3600;
		old[1] = old[0];
		if (utimensat(AT_FDCWD, path, old, 0) < 0)
			exit(1);
	}
	struct timespec old[2];	/* the directory too: a fresh one's files are checked again */
	clock_gettime(CLOCK_REALTIME, &old[0]);
	old[0].tv_sec -= 3600;
	old[1] = old[0];
	if (utimensat(AT_FDCWD, dir, old, 0) < 0)
		exit(1);
}

struct agent_proc {
	int pid;
	FILE *to, *from;
	int id;
};

static void
start(struct agent_proc *p, const char *agent, const char *home, const char *state)
{
	const char *argv[] = { agent, "--state-dir", state, "--model", "builtin", NULL };
	char line[65536];

	setenv("HOME", home, 1);
	unsetenv("XDG_CONFIG_HOME");
	p->pid = bench_spawn(argv, &p->to, &p->from);
	p->id = 1;
	fprintf(p->to, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,"
	    "\"clientCapabilities\":{}}}\n", p->id++);
	fflush(p->to);
	if (fgets(line, sizeof(line), p->from) == NULL)
		exit(1);
}

/* One session/new in ws, its answer read (the updates after it are left for the next read). */
static double
session_new(struct agent_proc *p, const char *ws)
{
	char line[65536], want[64];
	double t0 = bench_now_ms();

	fprintf(p->to, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"session/new\",\"params\":{\"cwd\":\"%s\","
	    "\"mcpServers\":[]}}\n", p->id, ws);
	fflush(p->to);
	snprintf(want, sizeof(want), "\"id\":%d,", p->id++);
	while (fgets(line, sizeof(line), p->from) != NULL) {
		if (strstr(line, want))
			return bench_now_ms() - t0;
	}
	exit(1);
}

static void
stop(struct agent_proc *p)
{
	fclose(p->to);
	while (fgetc(p->from) != EOF)
		;
	fclose(p->from);
	waitpid(p->pid, NULL, 0);
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
	char tmpl[] = "/tmp/bench-types-XXXXXX", p[1200], ws[200], home[200], bare_ws[200], bare_home[200];
	static double with[ROUNDS], without[ROUNDS];
	struct agent_proc a, b;

	if (argc != 2) {
		fprintf(stderr, "usage: bench_types AGENT\n");
		return 2;
	}
	char *dir = mkdtemp(tmpl);
	snprintf(ws, sizeof(ws), "%s/ws", dir);
	snprintf(home, sizeof(home), "%s/home", dir);
	snprintf(bare_ws, sizeof(bare_ws), "%s/bare-ws", dir);
	snprintf(bare_home, sizeof(bare_home), "%s/bare-home", dir);
	snprintf(p, sizeof(p), "%s/.acp-agent/agents", ws);
	type_files(p, "project");
	snprintf(p, sizeof(p), "%s/.claude/agents", home);
	type_files(p, "user");
	mkdirs(bare_ws);
	mkdirs(bare_home);
	snprintf(p, sizeof(p), "%s/state-a", dir);
	start(&a, argv[1], home, p);
	snprintf(p, sizeof(p), "%s/state-b", dir);
	start(&b, argv[1], bare_home, p);
	/* in turn, so that whatever else the machine does falls on both alike */
	for (int i = 0; i < ROUNDS; i++) {
		with[i] = session_new(&a, ws);
		without[i] = session_new(&b, bare_ws);
	}
	stop(&b);	/* first: b holds a copy of a's stdin (it was started after a) */
	stop(&a);
	double mw = median(with, ROUNDS), mo = median(without, ROUNDS);
	printf("session_new[400 type files]: %.3f ms (median of %d)\n", mw, ROUNDS);
	printf("session_new[no type files]: %.3f ms (median of %d)\n", mo, ROUNDS);
	printf("types_read_cost[session/new, 400 files]: %.3f ms more (target: under 2 ms)\n", mw - mo);

	/* the floor of a check that sees an edit in place: one stat per file (readdir and fstatat) */
	for (int i = 0; i < ROUNDS / 10; i++) {
		double t1 = bench_now_ms();
		char d1[1200];
		for (int src = 0; src < 2; src++) {
			snprintf(d1, sizeof(d1), src ? "%s/.claude/agents" : "%s/.acp-agent/agents", src ? home : ws);
			DIR *dd = opendir(d1);
			struct dirent *de;
			struct stat st;
			while ((de = readdir(dd)) != NULL)
				if (de->d_name[0] != '.' && fstatat(dirfd(dd), de->d_name, &st, 0) < 0)
					exit(1);
			closedir(dd);
		}
		with[i] = bench_now_ms() - t1;
	}
	printf("stat_floor[readdir and fstatat of the 400 files]: %.3f ms (median of %d)\n", median(with, ROUNDS / 10),
	    ROUNDS / 10);
	/* every file read: what a process's first session pays */
	struct agent_types t;
	char **known = toolsets_names();
	snprintf(p, sizeof(p), "%s/.config", home);
	for (int i = 0; i < ROUNDS / 10; i++) {
		double t1 = bench_now_ms();
		agent_types_load(&t, ws, home, p, (const char *const *)known, NULL);
		with[i] = bench_now_ms() - t1;
		agent_types_free(&t);
	}
	printf("types_load[400 files, all read and parsed]: %.3f ms (median of %d)\n", median(with, ROUNDS / 10),
	    ROUNDS / 10);
	/* the memo's way, in this process: a stat per file, nothing read */
	struct agent_types_memo *memo = agent_types_memo_new(AGENT_TYPES_RACY_S);
	for (int i = 0; i < ROUNDS / 10 + 1; i++) {
		double t1 = bench_now_ms();
		agent_types_load(&t, ws, home, p, (const char *const *)known, memo);
		if (i)
			with[i - 1] = bench_now_ms() - t1;
		agent_types_free(&t);
	}
	agent_types_memo_free(memo);
	printf("types_load[400 files, memo: a stat each]: %.3f ms (median of %d)\n", median(with, ROUNDS / 10),
	    ROUNDS / 10);
	/* a root turn when nothing changed: one stat per source directory */
	agent_types_load(&t, ws, home, p, (const char *const *)known, NULL);
	double t0 = bench_now_ms();
	int stale = 0;
	for (int i = 0; i < STALE_CALLS; i++)
		stale |= agent_types_stale(&t);
	double per = (bench_now_ms() - t0) * 1000.0 / STALE_CALLS;
	printf("types_stale_check[4 directories, unchanged]: %.2f us per root turn (target: under 50 us; %zu types%s)\n", per, t.n,
	    stale ? ", STALE: wrong" : "");
	agent_types_free(&t);
	toolsets_names_free(known);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	return system(p) == 0 && !stale ? 0 : 1;
}
