/* Benchmark helpers. */
#include "bench/util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double
bench_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int
bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
bench_spawn(const char *const argv[], FILE **to, FILE **from)
{
	int in[2], out[2];
	pid_t pid;

	if (pipe(in) < 0 || pipe(out) < 0 || (pid = fork()) < 0)
		exit(1);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);	/* else the child holds its own stdin open and never sees EOF */
		close(out[0]);
		close(out[1]);
		int devnull = open("/dev/null", O_WRONLY);
		if (!getenv("BENCH_DEBUG"))
			dup2(devnull, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	*to = fdopen(in[1], "w");
	*from = fdopen(out[0], "r");
	return pid;
}

long
bench_proc_kb(int pid, const char *field)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, field, strlen(field)) == 0)
			kb = strtol(line + strlen(field), NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

int
bench_wait_port(const char *port_file)
{
	FILE *f;
	int p = 0;

	for (int i = 0; i < 1000 && p == 0; i++) {
		if ((f = fopen(port_file, "r")) != NULL) {
			if (fscanf(f, "%d", &p) != 1)
				p = 0;
			fclose(f);
		}
		if (p == 0)
			usleep(10000);
	}
	return p;
}
