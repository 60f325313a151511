/* The runner's small helpers: failures, time, child commands, whole files. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scenario/internal.h"

/* Records the scenario's first failure; always -1. */
int
scenario_fail(struct scenario_run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->failure[0])
		return -1;
	va_start(ap, fmt);
	vsnprintf(r->failure, sizeof(r->failure), fmt, ap);
	va_end(ap);
	return -1;
}

long
scenario_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs argv (looked up on PATH) to its end; its exit status, or -1. */
int
scenario_spawn_wait(const char *const argv[])
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

char *
scenario_read_file(const char *path)
{
	struct buf b;

	buf_init(&b);
	if (buf_append_file(&b, path) < 0) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

int
scenario_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return -1;
	fputs(text, f);
	return fclose(f);
}

int
scenario_rmtree(const char *path)
{
	const char *argv[] = { "rm", "-rf", path, NULL };

	return scenario_spawn_wait(argv);
}
