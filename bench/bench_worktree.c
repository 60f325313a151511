/*
 * An isolated child's worktree (docs/contract.md §24) against git alone: a repository of FILES
 * files of 10 KB (100 MB) is made once; then, in turn, ROUNDS times each, `git worktree add -b`
 * alone (the floor: the checkout is the work) and what the runtime does before a child exists
 * (git_wt_probe and git_wt_create: rev-parse thrice, stash create, the branch checks, the add),
 * each worktree removed again between rounds (not timed). Medians, and the ratio.
 *
 *   bench_worktree
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench/util.h"
#include "workspace/git.h"

#define FILES 10000
#define ROUNDS 5

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
main(void)
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
		int deleted;
		snprintf(id, sizeof(id), "%08x-0000-4000-8000-00000000000%d", 0x1a2b3c40 + i, i);
		t0 = bench_now_ms();
		if (git_wt_probe(repo, NULL, &r, &sub, why) < 0 || git_wt_create(repo, r, sub, id, dir, NULL, &wt, why) < 0) {
			fprintf(stderr, "bench_worktree: %s\n", why);
			return 1;
		}
		ours[i] = bench_now_ms() - t0;
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
	snprintf(cmd, sizeof(cmd), "rm -rf %s", base);
	run(cmd);
	return 0;
}
