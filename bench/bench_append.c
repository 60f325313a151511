/*
 * Append throughput per sync policy (docs/contract.md §12: >= 200,000 events/s with --sync none; with
 * --sync turn one sync per checkpoint, not per event), against dd writing the same bytes with
 * the same number of syncs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "session/store.h"
#include "session/store_def.h"	/* looks inside */

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
bench(enum sess_sync sync, const char *name, long n, int per_turn)
{
	char dir[] = "/tmp/acp-bench-append-XXXXXX", cmd[512];
	struct sess_env env;
	struct sess_store store;
	struct sess_header_info info = { .id = "00000000-0000-4000-8000-000000000001", .created_at = 1, .cwd = "/w" };
	struct err e;
	double t0, secs, dd;
	long bytes, turns = 0;

	if (mkdtemp(dir) == NULL)
		return;
	err_clear(&e);
	sess_env_init(&env, dir, sync, 1, NULL, &e);
	sess_store_init(&store, &env);
	struct sess *s = sess_store_create(&store, &info);
	t0 = now_s();
	for (long i = 0; i < n; i++) {
		sess_append(s, "step/start", json_pack("{s:i, s:i}", "turn", (int)(i / per_turn) + 1, "step",
		    (int)(i % per_turn) + 1), &e);
		if ((i + 1) % per_turn == 0) {
			/* One turn's checkpoint: the grouped sync pass before the loop sleeps. */
			sess_checkpoint(s);
			sess_store_sync_due(&store);
			turns++;
		}
	}
	secs = now_s() - t0;
	bytes = (long)s->log->good;
	long syncs = env.syncs;
	/* The limit: dd writing the same bytes in the same number of writes and syncs. */
	long bs = bytes / n;
	if (sync == SESS_SYNC_ALWAYS)
		snprintf(cmd, sizeof(cmd), "dd if=/dev/zero of=%s/dd bs=%ld count=%ld oflag=dsync 2>/dev/null", dir, bs, n);
	else if (sync == SESS_SYNC_TURN)
		snprintf(cmd, sizeof(cmd), "for i in $(seq %ld); do dd if=/dev/zero bs=%ld count=%d oflag=append "
		    "conv=notrunc,fdatasync of=%s/dd 2>/dev/null; done", turns, bs, per_turn, dir);
	else
		snprintf(cmd, sizeof(cmd), "dd if=/dev/zero of=%s/dd bs=%ld count=%ld 2>/dev/null", dir, bs, n);
	t0 = now_s();
	if (system(cmd) != 0)
		fprintf(stderr, "dd failed\n");
	dd = now_s() - t0;
	printf("append[%s]: %.0f events/s (%ld events, %ld bytes, %.3f s; %ld syncs = %.3f per turn of %d events)\n",
	    name, n / secs, n, bytes, secs, syncs, turns ? (double)syncs / turns : 0.0, per_turn);
	printf("ratio[append %s vs dd same bytes and syncs]: %.2fx the time (dd %.3f s)\n", name, secs / dd, dd);
	sess_store_free(&store);
	sess_env_free(&env);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup failed\n");
}

int
main(void)
{
	bench(SESS_SYNC_NONE, "none", 200000, 10);
	bench(SESS_SYNC_TURN, "turn", 20000, 10);
	bench(SESS_SYNC_ALWAYS, "always", 2000, 10);
	printf("target: >= 200000 events/s with --sync none; --sync turn: 1 sync per checkpoint\n");
	return 0;
}
