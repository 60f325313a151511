/*
 * The mock OpenAI-compatible server (tests/mock_openai.c) of a scenario with "mock": started on
 * a loopback port before the agent, which then runs --model openai against it; stopped after.
 */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scenario/internal.h"

int
scenario_mock_start(struct scenario_run *r, const char *script)
{
	char spath[600], log[400], port[400];
	long deadline = scenario_now_ms() + SCENARIO_WAIT_MS;
	FILE *f;

	if (r->opts->mock == NULL || access(r->opts->mock, X_OK) < 0)
		return scenario_fail(r, "this scenario needs the mock model server: no mock-openai at %s (--mock)",
		    r->opts->mock ? r->opts->mock : "(none)");
	snprintf(spath, sizeof(spath), "%s/%s", r->dir, script);
	snprintf(log, sizeof(log), "%s/mock.log", r->tmp);
	snprintf(port, sizeof(port), "%s/mock.port", r->tmp);
	fflush(NULL);
	r->mock_pid = fork();
	if (r->mock_pid == 0) {
		execl(r->opts->mock, r->opts->mock, "--script", spath, "--log", log, "--port-file", port, (char *)NULL);
		_exit(127);
	}
	if (r->mock_pid < 0) {
		r->mock_pid = 0;
		return scenario_fail(r, "fork: the mock model server did not start");
	}
	while ((f = fopen(port, "r")) == NULL) {
		if (waitpid(r->mock_pid, NULL, WNOHANG) == r->mock_pid) {
			r->mock_pid = 0;	/* reaped: it exited */
			return scenario_fail(r, "the mock model server exited before it wrote its port");
		}
		if (scenario_now_ms() > deadline)
			return scenario_fail(r, "the mock model server did not start");
		usleep(2000);
	}
	if (fscanf(f, "%d", &r->mock_port) != 1)
		r->mock_port = 0;
	fclose(f);
	return r->mock_port ? 0 : scenario_fail(r, "the mock model server wrote no port");
}

void
scenario_mock_stop(struct scenario_run *r)
{
	if (r->mock_pid <= 0)
		return;
	kill(r->mock_pid, SIGTERM);
	waitpid(r->mock_pid, NULL, 0);
	r->mock_pid = 0;
}
