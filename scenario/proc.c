/*
 * The agent process of a scenario: started on pipes with the scenario's args and env, its
 * stdout read line by line (the agent's requests answered from the registered answers), and
 * stopped by closing stdin or by a signal, with the exit status the step expects.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "scenario/internal.h"

#define SCENARIO_PROC_ARGV_MAX 64

/* In the child: the agent's environment, then exec; never returns. */
static void
scenario_proc_exec(struct scenario_run *r, const char *rec)
{
	json_t *args = json_object_get(r->script, "args"), *env = json_object_get(r->script, "env");
	const char *argv[SCENARIO_PROC_ARGV_MAX];
	const char *valgrind = getenv("VALGRIND");
	const char *k;
	json_t *v;
	size_t i;
	int n = 0;

	/* The agent starts with the signals an editor gives it, however the runner was started
	 * (a background job of sh ignores INT and QUIT, and an ignored one stays ignored). */
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	if (chdir(r->cwd) < 0)
		_exit(126);
	setenv("HOME", r->home, 1);
	setenv("XDG_CONFIG_HOME", r->config, 1);
	json_object_foreach(env, k, v) setenv(k, json_string_value(v), 1);
	json_object_foreach(r->env_extra, k, v) setenv(k, json_string_value(v), 1);
	if (r->mock_pid > 0) {
		char url[64];
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", r->mock_port);
		setenv("ACP_AGENT_BASE_URL", url, 1);
		setenv("ACP_AGENT_API_KEY", SCENARIO_MOCK_KEY, 1);
		setenv("ACP_AGENT_MODEL", "mock-model", 1);
		if (!getenv("ACP_AGENT_RETRY_BASE_MS"))
			setenv("ACP_AGENT_RETRY_BASE_MS", "5", 1);
	}
	if (valgrind && *valgrind && strcmp(valgrind, "0") != 0) {
		argv[n++] = "valgrind";
		argv[n++] = "-q";
		argv[n++] = "--error-exitcode=99";
		argv[n++] = "--leak-check=full";
		argv[n++] = "--errors-for-leak-kinds=definite,indirect";
	}
	argv[n++] = r->opts->agent;
	argv[n++] = "--deterministic";
	argv[n++] = "--model";
	argv[n++] = "replay";
	argv[n++] = "--recording";
	argv[n++] = rec;
	argv[n++] = "--state-dir";
	argv[n++] = r->state;
	if (r->mock_pid > 0) {
		argv[n++] = "--model";
		argv[n++] = "openai";
	}
	json_array_foreach(args, i, v) if (n < SCENARIO_PROC_ARGV_MAX - 2) argv[n++] = json_string_value(v);
	argv[n] = NULL;
	execvp(argv[0], (char *const *)argv);
	_exit(127);
}

int
scenario_proc_start(struct scenario_run *r)
{
	int in[2], out[2];
	char rec[600], logpath[400];

	snprintf(rec, sizeof(rec), "%s/recording.json", r->dir);
	snprintf(logpath, sizeof(logpath), "%s/stderr.log", r->tmp);
	if (pipe(in) < 0)
		return scenario_fail(r, "pipe: %s", strerror(errno));
	if (pipe(out) < 0) {
		close(in[0]);
		close(in[1]);
		return scenario_fail(r, "pipe: %s", strerror(errno));
	}
	fflush(NULL);
	r->pid = fork();
	if (r->pid == 0) {
		int logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (logfd >= 0)
			dup2(logfd, 2);
		close(in[1]);
		close(out[0]);
		scenario_proc_exec(r, rec);
	}
	close(in[0]);
	close(out[1]);
	if (r->pid < 0) {
		close(in[1]);
		close(out[0]);
		r->pid = 0;
		return scenario_fail(r, "fork: %s", strerror(errno));
	}
	/* Not inherited by a later agent or mock: only this one holds them. */
	fcntl(in[1], F_SETFD, FD_CLOEXEC);
	fcntl(out[0], F_SETFD, FD_CLOEXEC);
	r->to_agent = in[1];
	r->from_agent = out[0];
	fcntl(r->from_agent, F_SETFL, O_NONBLOCK);
	return 0;
}

/*
 * A request from the agent (fs, permission) is answered from the registered answers: the first
 * unused one of its method whose match is a substring of its compact params (docs/contract.md §10.2, §20.1).
 * One with no answer fails the scenario.
 */
static void
scenario_proc_answer(struct scenario_run *r, const json_t *msg)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	char *params = json_dumps(json_object_get(msg, "params"), JSON_COMPACT | JSON_ENCODE_ANY);
	size_t i;
	json_t *a;

	json_array_foreach(r->answers, i, a) {
		const char *match = json_string_value(json_object_get(a, "match"));
		if (json_is_true(json_object_get(a, "used")) ||
		    strcmp(json_string_value(json_object_get(a, "method")), method) != 0 ||
		    (match && (params == NULL || strstr(params, match) == NULL)))
			continue;
		json_object_set_new(a, "used", json_true());
		if (json_is_true(json_object_get(a, "hold"))) {
			free(params);	/* left unanswered: a later sendRaw answers it, or nothing does */
			return;
		}
		json_t *reply = json_pack("{s:s, s:O}", "jsonrpc", "2.0", "id", json_object_get(msg, "id"));
		if (json_object_get(a, "error"))
			json_object_set(reply, "error", json_object_get(a, "error"));
		else
			json_object_set(reply, "result", json_object_get(a, "result"));
		char *line = json_dumps(reply, JSON_COMPACT);
		size_t len = strlen(line);
		line = xrealloc(line, len + 2);
		memcpy(line + len, "\n", 2);
		scenario_proc_write(r, line, len + 1);
		free(line);
		json_decref(reply);
		free(params);
		return;
	}
	scenario_fail(r, "the agent sent %s with no registered answer: %.300s", method, params ? params : "");
	free(params);
}

/* Reads what the agent has written, waiting up to ms; returns -1 at EOF. */
int
scenario_proc_read(struct scenario_run *r, int ms)
{
	struct pollfd p = { .fd = r->from_agent, .events = POLLIN };
	char chunk[65536];
	ssize_t n;
	char *nl;

	if (r->from_agent < 0)
		return -1;
	if (poll(&p, 1, ms) <= 0)
		return 0;
	n = read(r->from_agent, chunk, sizeof(chunk));
	if (n <= 0) {
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		close(r->from_agent);
		r->from_agent = -1;
		return -1;
	}
	buf_append(&r->in, chunk, (size_t)n);
	while ((nl = memchr(r->in.data, '\n', r->in.len)) != NULL) {
		char *line = xstrndup(r->in.data, (size_t)(nl - r->in.data));
		json_t *js = json_string(line);
		json_array_append_new(r->lines, js ? js : json_string("<invalid utf-8>"));
		if (r->trace)
			fprintf(r->trace, "<< %s\n", line);
		scenario_pretty_agent(r, line);
		buf_consume(&r->in, (size_t)(nl - r->in.data) + 1);
		json_t *m = json_loads(line, 0, NULL);
		free(line);
		if (m && json_is_string(json_object_get(m, "method")) && json_object_get(m, "id"))
			scenario_proc_answer(r, m);
		json_decref(m);
	}
	return 0;
}

/*
 * Ends the agent: sig, or else closes its stdin; reads its output to the end and reaps it.
 * An exit status other than expect_exit fails the scenario.
 */
int
scenario_proc_stop(struct scenario_run *r, int expect_exit, int sig)
{
	long deadline = scenario_now_ms() + SCENARIO_WAIT_MS;
	int st = 0;

	if (r->pid <= 0)
		return 0;
	if (sig)
		kill(r->pid, sig);
	else if (r->to_agent >= 0) {
		close(r->to_agent);
		r->to_agent = -1;
	}
	while (scenario_proc_read(r, 50) == 0 && scenario_now_ms() < deadline)
		;
	while (waitpid(r->pid, &st, WNOHANG) == 0) {
		if (scenario_now_ms() > deadline) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, &st, 0);
			r->pid = 0;
			return scenario_fail(r, "the agent did not exit after stdin closed");
		}
		usleep(10000);
	}
	r->pid = 0;
	if (r->from_agent >= 0) {
		close(r->from_agent);
		r->from_agent = -1;
	}
	if (r->to_agent >= 0) {
		close(r->to_agent);
		r->to_agent = -1;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != expect_exit)
		return scenario_fail(r, "the agent exited with status %d, not %d (see %s/stderr.log)",
		    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), expect_exit, r->tmp);
	return 0;
}

int
scenario_proc_write(struct scenario_run *r, const char *data, size_t len)
{
	size_t done = 0;

	if (r->trace) {
		fputs(">> ", r->trace);
		fwrite(data, 1, len, r->trace);
	}
	while (done < len) {
		ssize_t n = write(r->to_agent, data + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return scenario_fail(r, "write to agent: %s", strerror(errno));
		done += (size_t)n;
		scenario_proc_read(r, 0);	/* keep the agent's stdout moving */
	}
	return 0;
}
