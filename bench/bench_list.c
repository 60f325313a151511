/*
 * list_agents over N stored children (docs/contract.md §12: under 20 ms at 10,000, independent of
 * the children's log length). Generates a state directory, indexes it like start-up
 * does, then times the listing (median of 21 runs; the first, which builds every entry's
 * object, is also given) and reports RSS after indexing. `bench_list N` runs one size;
 * BENCH_SPLIT=1 prints each run's parts and its page faults.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include "agent/agent_def.h"
#include "session/store_def.h"	/* looks inside */	/* looks inside */
#include "agent/subagent.h"
#include "bench/util.h"
#include "tools/tools.h"
#include "tools/toolsets.h"

static long
rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

static long
minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static void
generate(const char *dir, int n, int events)
{
	char path[512];
	const char *root = "00000000-0000-4000-8000-100000000000";
	FILE *f;

	snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", dir, root);
	f = fopen(path, "w");
	fprintf(f, "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":1,\"cwd\":\"/w\",\"delegationDepth\":0}\n", root);
	fclose(f);
	for (int i = 0; i < n; i++) {
		char id[40];
		snprintf(id, sizeof(id), "00000000-0000-4000-8000-2%011x", i);
		snprintf(path, sizeof(path), "%s/sessions/%s.jsonl", dir, id);
		f = fopen(path, "w");
		fprintf(f, "{\"type\":\"session\",\"version\":1,\"id\":\"%s\",\"createdAt\":%d,\"cwd\":\"/w\","
		    "\"delegationDepth\":1,\"parentSession\":\"%s\",\"origin\":\"subagent\"}\n", id, 10 + i, root);
		fprintf(f, "{\"seq\":0,\"time\":%d,\"type\":\"subagent/descriptor\",\"data\":{\"version\":2,"
		    "\"mode\":\"continuable\",\"provider\":\"in-process\",\"label\":\"child %d\"}}\n", 10 + i, i);
		for (int k = 1; k < events; k++)
			fprintf(f, "{\"seq\":%d,\"time\":%d,\"type\":\"step/start\",\"data\":{\"turn\":1,\"step\":%d}}\n", k,
			    10 + i, k);
		fclose(f);
	}
}

static void
bench(int n, int events)
{
	char dir[] = "/tmp/acp-bench-XXXXXX", cmd[600];
	struct sess_env env;
	struct sess_store store;
	struct sess_corpus corpus;
	struct agent_rt rt;
	struct runq q;
	struct toolbox tb;
	struct err e;
	double t[21], t0, first = 0;
	const char *reps_env = getenv("BENCH_REPS");
	int reps = reps_env ? atoi(reps_env) : 21;
	long rss_before = rss_kb();

	if (mkdtemp(dir) == NULL)
		return;
	err_clear(&e);
	if (sess_env_init(&env, dir, SESS_SYNC_NONE, 0, NULL, &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return;
	}
	generate(dir, n, events);
	runq_init(&q, NULL);
	sess_store_init(&store, &env);
	sess_corpus_init(&corpus, &env);
	t0 = bench_now_ms();
	sess_corpus_scan(&corpus, &e);
	double scan = bench_now_ms() - t0;
	long rss_after = rss_kb();
	toolbox_init(&tb);
	toolsets_build(&tb, toolsets_profile("default", 0));
	agent_rt_init(&rt, &q, &env, &store, &corpus, NULL);
	struct agent fake;
	struct sess sess;
	memset(&fake, 0, sizeof(fake));
	memset(&sess, 0, sizeof(sess));
	snprintf(sess.id, sizeof(sess.id), "00000000-0000-4000-8000-100000000000");
	fake.rt = &rt;
	fake.sess = &sess;
	size_t count = 0;
	if (reps < 21)
		reps = 21;
	for (int r = 0; r < reps; r++) {
		long f0 = minflt();
		t0 = bench_now_ms();
		json_t *l = subagent_list(&fake, 0, &e);
		double t1 = bench_now_ms();
		char *text = list_agents_render(l, 0);
		double t2 = bench_now_ms();
		/* The call ends with the rendered text; freeing the output is not on its path. */
		t[r % 21] = t2 - t0;
		if (r == 0)
			first = t2 - t0;
		long f1 = minflt();
		size_t listed = json_array_size(l);
		json_decref(l);
		if (getenv("BENCH_SPLIT"))
			printf("list %.2f render %.2f free %.2f (page faults %ld)\n", t1 - t0, t2 - t1,
			    bench_now_ms() - t2, f1 - f0);
		count = listed;
		free(text);
	}
	qsort(t, 21, sizeof(t[0]), bench_cmp_double);
	double td[21], dfirst = 0;
	for (int r = 0; r < 21; r++) {
		t0 = bench_now_ms();
		json_t *l = subagent_list(&fake, 1, &e);
		char *text = list_agents_render(l, 1);
		td[r] = bench_now_ms() - t0;
		if (r == 0)
			dfirst = td[r];
		free(text);
		json_decref(l);
	}
	qsort(td, 21, sizeof(td[0]), bench_cmp_double);
	printf("list_agents[descendants, %d children]: median %.3f ms (first %.3f ms)\n", n, td[10], dfirst);
	double tc[21];
	for (int r = 0; r < 21; r++) {
		size_t k;
		t0 = bench_now_ms();
		free(sess_corpus_children(&corpus, sess.id, &k));
		tc[r] = bench_now_ms() - t0;
	}
	qsort(tc, 21, sizeof(tc[0]), bench_cmp_double);
	printf("  (of which the corpus revalidation: %.3f ms)\n", tc[10]);
	printf("list_agents: %5d stored children (%3d events each): median %7.3f ms (first %.3f ms; listed "
	    "%zu; index build %.1f ms; RSS %ld kB -> %ld kB)\n", n, events, t[10], first, count, scan, rss_before,
	    rss_after);
	agent_rt_free(&rt);
	toolbox_free(&tb);
	sess_corpus_free(&corpus);
	sess_store_free(&store);
	sess_env_free(&env);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", dir);
}

int
main(int argc, char **argv)
{
	int sizes[] = { 10, 1000, 10000, 100000 };

	if (argc > 1) {		/* one size, for profiling */
		bench(atoi(argv[1]), 2);
		return 0;
	}
	for (int i = 0; i < 4; i++)
		bench(sizes[i], 10);
	/* Log length must not matter: the same 100 children with 10 and with 10,000 events each. */
	bench(100, 10);
	bench(100, 10000);
	printf("target: under 20 ms at 10,000 children, independent of log length\n");
	return 0;
}
