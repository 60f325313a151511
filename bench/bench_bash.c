/*
 * The bash tool's output relay: 100 MB through workspace/proc (the spill file and the 8 + 24 KiB
 * head/tail, on a libev loop) against the same producer piped into `cat > file`, in the same
 * run; median of RUNS each, interleaved. Two producers: `head -c | tr` (the tool's own case)
 * and `cat` of a 100 MB file in the page cache (the relay's ceiling), the latter also against a
 * plain `cat file > file` with no pipe at all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "bench/util.h"
#include "workspace/proc.h"

#define BYTES 100000000
#define RUNS 5

struct run {
	int done;
	uint64_t total;
};

static void
on_done(void *arg, struct ws_proc *p, const struct ws_proc_result *r)
{
	struct run *run = arg;

	(void)p;
	run->done = 1;
	run->total = r->total_bytes;
}

static long
file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* One relay through ws_proc; seconds, or -1. */
static double
relay_once(struct ev_loop *loop, const char *dir, const char *producer, int i)
{
	struct ws_proc_opts o;
	struct run run = { 0, 0 };
	struct ws_proc *p;
	struct err e;
	char name[32];
	double t0, secs;

	memset(&o, 0, sizeof(o));
	snprintf(name, sizeof(name), "relay-%d", i);
	o.command = producer;
	o.spill_dir = dir;
	o.name = name;
	o.done = on_done;
	o.arg = &run;
	err_clear(&e);
	t0 = bench_now_ms();
	if ((p = ws_proc_start(loop, &o, &e)) == NULL) {
		fprintf(stderr, "bench_bash: %s\n", e.msg);
		return -1;
	}
	while (!run.done)
		ev_run(loop, EVRUN_ONCE);
	secs = (bench_now_ms() - t0) / 1e3;
	if (run.total != BYTES || file_size(ws_proc_spill_path(p)) != BYTES) {
		fprintf(stderr, "bench_bash: relayed %llu bytes\n", (unsigned long long)run.total);
		secs = -1;
	}
	unlink(ws_proc_spill_path(p));
	ws_proc_free(p);
	return secs;
}

/* The producer into cat > file (pipe: 1) or producer > file; seconds, or -1. */
static double
cat_once(const char *dir, const char *producer, int pipe, int i)
{
	char cmd[512], path[256];
	double t0, secs;

	snprintf(path, sizeof(path), "%s/cat-%d", dir, i);
	snprintf(cmd, sizeof(cmd), "%s %s > %s", producer, pipe ? "| cat" : "", path);
	t0 = bench_now_ms();
	if (system(cmd) != 0)
		return -1;
	secs = (bench_now_ms() - t0) / 1e3;
	if (file_size(path) != BYTES)
		secs = -1;
	unlink(path);
	return secs;
}

static double
median(double *v)
{
	qsort(v, RUNS, sizeof(double), bench_cmp_double);
	return v[RUNS / 2];
}

/* Measures one producer; 0, or -1 when a run failed. */
static int
bench(struct ev_loop *loop, const char *dir, const char *name, const char *producer, int plain)
{
	double ours[RUNS], cat[RUNS], direct[RUNS];

	for (int i = 0; i < RUNS; i++) {
		ours[i] = relay_once(loop, dir, producer, i);
		cat[i] = cat_once(dir, producer, 1, i);
		direct[i] = plain ? cat_once(dir, producer, 0, i) : 1;
		if (ours[i] < 0 || cat[i] < 0 || direct[i] < 0)
			return -1;
	}
	median(ours);
	median(cat);
	printf("bash_relay[%s]: %.0f MB/s (median of %d: %.3f s, min %.3f, max %.3f; %d bytes to the "
	       "spill file and the head/tail)\n", name, BYTES / ours[RUNS / 2] / 1e6, RUNS,
	    ours[RUNS / 2], ours[0], ours[RUNS - 1], BYTES);
	printf("cat_to_file[%s]: %.0f MB/s (median of %d: %.3f s, min %.3f, max %.3f; "
	       "producer | cat > file)\n",
	    name, BYTES / cat[RUNS / 2] / 1e6, RUNS, cat[RUNS / 2], cat[0], cat[RUNS - 1]);
	printf("ratio[bash relay vs cat > file, %s]: %.2fx the time (target: within 2x)\n", name,
	    ours[RUNS / 2] / cat[RUNS / 2]);
	if (plain)
		printf("ratio[bash relay vs %s > file, no pipe]: %.2fx the time (%.3f s)\n", name,
		    ours[RUNS / 2] / median(direct), direct[RUNS / 2]);
	return 0;
}

int
main(void)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);	/* the default one reaps every child */
	char dir[] = "/tmp/bench-bash-XXXXXX", big[64], producer[128], line[101];
	FILE *f;
	int rc = 0;

	if (mkdtemp(dir) == NULL) {
		perror("bench_bash: mkdtemp");
		return 1;
	}
	snprintf(big, sizeof(big), "%s/big", dir);
	if ((f = fopen(big, "w")) == NULL)
		return 1;
	memset(line, 'a', 99);
	line[99] = '\n';
	line[100] = '\0';
	for (int i = 0; i < BYTES / 100; i++)
		fputs(line, f);
	fclose(f);
	snprintf(producer, sizeof(producer), "cat %s", big);
	if (bench(loop, dir, "tr", "head -c 100000000 /dev/zero | tr '\\0' a", 0) < 0 ||
	    bench(loop, dir, "cat file", producer, 1) < 0)
		rc = 1;
	unlink(big);
	rmdir(dir);
	ev_loop_destroy(loop);
	return rc;
}
