/*
 * Process benchmarks: start-up to the initialize response and peak RSS of an ACP agent
 * command (ours or a peer), median of 21 runs with min and max.
 *
 *   bench_proc NAME CMD [ARGS...]    prints "startup[NAME]: ..." and "peak_rss[NAME]: ..."
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/util.h"

#define RUNS 21

/* One run: ms to the first response line, peak RSS in kB; -1 on failure. */
static int
run_once(char **argv, double *ms, long *rss)
{
	int in[2], out[2], st;
	struct rusage ru;
	const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1,"
			   "\"clientCapabilities\":{}}}\n";
	char buf[65536];
	double t0;
	pid_t pid;
	int ok = 0;

	if (pipe(in) < 0 || pipe(out) < 0)
		return -1;
	t0 = bench_now_ms();
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		int devnull = open("/dev/null", 1);
		if (devnull >= 0)
			dup2(devnull, 2);
		close(in[1]);
		close(out[0]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (write(in[1], init, strlen(init)) < 0)
		ok = -1;
	size_t have = 0;
	while (ok == 0) {
		struct pollfd p = { out[0], POLLIN, 0 };
		if (poll(&p, 1, 20000) <= 0) {
			ok = -1;
			break;
		}
		ssize_t n = read(out[0], buf + have, sizeof(buf) - 1 - have);
		if (n <= 0) {
			ok = -1;
			break;
		}
		have += (size_t)n;
		buf[have] = '\0';
		if (strstr(buf, "\"id\":1") && strchr(buf, '\n'))
			break;
	}
	*ms = bench_now_ms() - t0;
	close(in[1]);
	/* Give it a moment to exit on EOF; peers that linger are stopped. */
	memset(&ru, 0, sizeof(ru));
	pid_t done = 0;
	for (int i = 0; i < 100 && (done = wait4(pid, &st, WNOHANG, &ru)) == 0; i++)
		usleep(10000);
	if (done == 0) {
		kill(pid, SIGKILL);
		wait4(pid, &st, 0, &ru);
	}
	*rss = ru.ru_maxrss;
	close(out[0]);
	return ok;
}

int
main(int argc, char **argv)
{
	double t[RUNS];
	long r[RUNS];
	int okruns = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: bench_proc NAME CMD [ARGS...]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < RUNS; i++) {
		if (run_once(argv + 2, &t[okruns], &r[okruns]) == 0)
			okruns++;
	}
	if (okruns == 0) {
		printf("startup[%s]: FAILED (no initialize response)\n", argv[1]);
		return 1;
	}
	double rs[RUNS];
	for (int i = 0; i < okruns; i++)
		rs[i] = (double)r[i];
	qsort(t, (size_t)okruns, sizeof(double), bench_cmp_double);
	qsort(rs, (size_t)okruns, sizeof(double), bench_cmp_double);
	printf("startup[%s]: %.2f ms median (min %.2f, max %.2f, %d runs)\n", argv[1], t[okruns / 2], t[0],
	    t[okruns - 1], okruns);
	printf("peak_rss[%s]: %.0f kB median (min %.0f, max %.0f)\n", argv[1], rs[okruns / 2], rs[0],
	    rs[okruns - 1]);
	return 0;
}
