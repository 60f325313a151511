/*
 * The scenario runner (SPEC §10): plays scenario.json against bin/acp-agent
 * step by step, normalises the output and the session files, compares them
 * with expected/, and ends with "N passed, N failed". UPDATE_SNAPSHOTS=1
 * rewrites expected/; --pretty prints a readable conversation (make demo).
 * A scenario's "mcp" servers are scripts for tests/mock_mcp.c (--mock-mcp, by
 * default mock-mcp beside this binary), handed to the agent as {{mcp:<name>}}.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/xmalloc.h"
#include "tests/canon.h"

#define WAIT_MS 15000
#define MCP_LOG_WAIT_MS 5000	/* an mcpLog step's default wait */
#define MCP_GONE_WAIT_MS 2000	/* after the agent exits, its mock-mcp processes have this long */

#define MOCK_KEY "sk-test-not-a-real-key-42"

struct run {
	const char *agent;
	const char *mock;		/* the mock-openai binary */
	const char *mcp_mock;		/* the mock-mcp binary (absolute) */
	json_t *mcp;			/* {name: {"script": abs path, "log": abs path}} from "mcp" */
	pid_t mock_pid;
	int mock_port;
	const char *dir;		/* scenario directory */
	char name[256];
	char tmp[256], state[300], cwd[300];
	json_t *script;
	pid_t pid;
	int to_agent, from_agent;
	struct buf in;			/* unread agent output */
	json_t *lines;			/* every agent line (strings), all processes */
	size_t wait_cursor;		/* waitFor scans lines from here */
	json_t *sessions;		/* session ids returned by session/new */
	json_t *answers;		/* registered answers to the agent's requests: {method, match, result|error, used} */
	json_t *env_extra;		/* env set by restart steps, on top of the script's */
	long next_id;
	FILE *trace;
	int pretty;
	struct buf pretty_text;		/* agent text being streamed (pretty mode) */
	const char *pretty_kind;
	int pretty_between;		/* no prompt in flight: updates come from a runtime turn */
	char failure[1024];
};

static int
run_fail(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
run_fail(struct run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->failure[0])
		return -1;
	va_start(ap, fmt);
	vsnprintf(r->failure, sizeof(r->failure), fmt, ap);
	va_end(ap);
	return -1;
}

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
spawn_wait(const char *const argv[])
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

/* ---- pretty printing (make demo) ---- */

static void
pretty_flush(struct run *r)
{
	if (r->pretty_text.len) {
		printf("  agent %s: %s\n", r->pretty_kind, r->pretty_text.data);
		buf_free(&r->pretty_text);
	}
}

static void
pretty_client(struct run *r, const json_t *msg)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *params = json_object_get(msg, "params");

	if (!r->pretty || !method)
		return;
	pretty_flush(r);
	if (strcmp(method, "session/prompt") == 0) {
		r->pretty_between = 0;
		json_t *first = json_array_get(json_object_get(params, "prompt"), 0);
		printf("\nclient > prompt: %s\n", json_string_value(json_object_get(first, "text")));
	} else if (strcmp(method, "_acp_agent/wait_idle") != 0) {
		printf("client > %s\n", method);
	}
}

static void
pretty_agent(struct run *r, const char *line)
{
	json_t *msg = json_loads(line, 0, NULL), *u;
	const char *kind;

	if (!r->pretty || msg == NULL)
		goto out;
	u = json_object_get(json_object_get(msg, "params"), "update");
	kind = json_string_value(json_object_get(u, "sessionUpdate"));
	if (kind && r->pretty_between == 1 && strcmp(kind, "available_commands_update") != 0) {
		pretty_flush(r);
		printf("\n(a subagent's notice reached the agent, which starts a turn on its own)\n");
		r->pretty_between = 2;
	}
	if (kind && (strcmp(kind, "agent_message_chunk") == 0 || strcmp(kind, "agent_thought_chunk") == 0)) {
		const char *k = strcmp(kind, "agent_message_chunk") == 0 ? "says" : "thinks";
		if (r->pretty_kind && strcmp(r->pretty_kind, k) != 0)
			pretty_flush(r);
		r->pretty_kind = k;
		buf_puts(&r->pretty_text, json_string_value(json_object_get(json_object_get(u, "content"), "text")));
		goto out;
	}
	pretty_flush(r);
	if (kind && strcmp(kind, "tool_call") == 0) {
		printf("  agent calls: %s\n", json_string_value(json_object_get(u, "title")));
	} else if (kind && strcmp(kind, "tool_call_update") == 0) {
		json_t *c = json_array_get(json_object_get(u, "content"), 0);
		printf("  tool %s: %s\n", json_string_value(json_object_get(u, "status")),
		    json_string_value(json_object_get(json_object_get(c, "content"), "text")));
	} else if (kind && strcmp(kind, "available_commands_update") == 0) {
		printf("  (the agent advertises its slash commands: /agents, /send, /interrupt)\n");
	} else if (kind) {
		printf("  (update: %s)\n", kind);
	} else if (json_object_get(msg, "error")) {
		json_t *err = json_object_get(msg, "error");
		printf("agent < error %lld: %s\n", (long long)json_integer_value(json_object_get(err, "code")),
		    json_string_value(json_object_get(json_object_get(err, "data"), "details")));
	} else if (json_object_get(msg, "result")) {
		json_t *res = json_object_get(msg, "result");
		if (json_object_get(res, "stopReason")) {
			printf("agent < turn ended: %s\n", json_string_value(json_object_get(res, "stopReason")));
			r->pretty_between = 1;
		}
		else if (json_object_get(res, "sessionId"))
			printf("agent < session %s\n", json_string_value(json_object_get(res, "sessionId")));
		else if (json_object_get(res, "sessions"))
			printf("agent < %zu session(s) listed\n", json_array_size(json_object_get(res, "sessions")));
		else if (json_object_get(res, "agentInfo"))
			printf("agent < initialized (protocol %lld)\n",
			    (long long)json_integer_value(json_object_get(res, "protocolVersion")));
	}
out:
	json_decref(msg);
}

/* ---- the agent process ---- */

static int
agent_start(struct run *r)
{
	int in[2], out[2];
	json_t *args = json_object_get(r->script, "args"), *env = json_object_get(r->script, "env");
	char rec[600], logpath[400];
	const char *valgrind = getenv("VALGRIND");

	snprintf(rec, sizeof(rec), "%s/recording.json", r->dir);
	snprintf(logpath, sizeof(logpath), "%s/stderr.log", r->tmp);
	if (pipe(in) < 0 || pipe(out) < 0)
		return run_fail(r, "pipe: %s", strerror(errno));
	r->pid = fork();
	if (r->pid == 0) {
		const char *argv[64];
		int n = 0;
		const char *k;
		json_t *v;
		size_t i;
		int logfd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (logfd >= 0)
			dup2(logfd, 2);
		close(in[1]);
		close(out[0]);
		/* The agent starts with the signals an editor gives it, however the runner was started
		 * (a background job of sh ignores INT and QUIT, and an ignored one stays ignored). */
		signal(SIGINT, SIG_DFL);
		signal(SIGQUIT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		if (chdir(r->cwd) < 0)
			_exit(126);
		json_object_foreach(env, k, v) setenv(k, json_string_value(v), 1);
		json_object_foreach(r->env_extra, k, v) setenv(k, json_string_value(v), 1);
		if (r->mock_pid > 0) {
			char url[64];
			snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", r->mock_port);
			setenv("ACP_AGENT_BASE_URL", url, 1);
			setenv("ACP_AGENT_API_KEY", MOCK_KEY, 1);
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
		argv[n++] = r->agent;
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
		json_array_foreach(args, i, v) if (n < 62) argv[n++] = json_string_value(v);
		argv[n] = NULL;
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	r->to_agent = in[1];
	r->from_agent = out[0];
	fcntl(r->from_agent, F_SETFL, O_NONBLOCK);
	return 0;
}

static int agent_write(struct run *r, const char *data, size_t len);

/*
 * A request from the agent (fs, permission) is answered from the registered answers: the first
 * unused one of its method whose match is a substring of its compact params (SPEC §10.2, §20.1).
 * One with no answer fails the scenario.
 */
static void
agent_request(struct run *r, const json_t *msg)
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
		json_t *reply = json_pack("{s:s, s:O}", "jsonrpc", "2.0", "id", json_object_get(msg, "id"));
		if (json_object_get(a, "error"))
			json_object_set(reply, "error", json_object_get(a, "error"));
		else
			json_object_set(reply, "result", json_object_get(a, "result"));
		char *line = json_dumps(reply, JSON_COMPACT);
		size_t len = strlen(line);
		line = xrealloc(line, len + 2);
		memcpy(line + len, "\n", 2);
		agent_write(r, line, len + 1);
		free(line);
		json_decref(reply);
		free(params);
		return;
	}
	run_fail(r, "the agent sent %s with no registered answer: %.300s", method, params ? params : "");
	free(params);
}

/* Reads what the agent has written, waiting up to ms; returns -1 at EOF. */
static int
agent_read(struct run *r, int ms)
{
	struct pollfd p = { .fd = r->from_agent, .events = POLLIN };
	char chunk[65536];
	ssize_t n;

	if (r->from_agent < 0)
		return -1;
	if (poll(&p, 1, ms) <= 0)
		return 0;
	n = read(r->from_agent, chunk, sizeof(chunk));
	if (n <= 0) {
		if (n < 0 && errno == EAGAIN)
			return 0;
		close(r->from_agent);
		r->from_agent = -1;
		return -1;
	}
	buf_append(&r->in, chunk, (size_t)n);
	char *nl;
	while ((nl = memchr(r->in.data, '\n', r->in.len)) != NULL) {
		char *line = xstrndup(r->in.data, (size_t)(nl - r->in.data));
		json_t *js = json_string(line);
		json_array_append_new(r->lines, js ? js : json_string("<invalid utf-8>"));
		if (r->trace)
			fprintf(r->trace, "<< %s\n", line);
		pretty_agent(r, line);
		buf_consume(&r->in, (size_t)(nl - r->in.data) + 1);
		json_t *m = json_loads(line, 0, NULL);
		free(line);
		if (m && json_is_string(json_object_get(m, "method")) && json_object_get(m, "id"))
			agent_request(r, m);
		json_decref(m);
	}
	return 0;
}

static int
agent_stop_expect(struct run *r, int expect_exit, int sig)
{
	long deadline = now_ms() + WAIT_MS;
	int st = 0;

	if (r->pid <= 0)
		return 0;
	if (sig)
		kill(r->pid, sig);
	else if (r->to_agent >= 0) {
		close(r->to_agent);
		r->to_agent = -1;
	}
	while (agent_read(r, 50) == 0 && now_ms() < deadline)
		;
	while (waitpid(r->pid, &st, WNOHANG) == 0) {
		if (now_ms() > deadline) {
			kill(r->pid, SIGKILL);
			waitpid(r->pid, &st, 0);
			r->pid = 0;
			return run_fail(r, "the agent did not exit after stdin closed");
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
		return run_fail(r, "the agent exited with status %d, not %d (see %s/stderr.log)",
		    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), expect_exit, r->tmp);
	return 0;
}

static int
agent_stop(struct run *r)
{
	return agent_stop_expect(r, 0, 0);
}

static int
agent_write(struct run *r, const char *data, size_t len)
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
			return run_fail(r, "write to agent: %s", strerror(errno));
		done += (size_t)n;
		agent_read(r, 0);	/* keep the agent's stdout moving */
	}
	return 0;
}

/* ---- the mock model server ---- */

static int
mock_start(struct run *r, const char *script)
{
	char spath[600], log[400], port[400];
	long deadline = now_ms() + WAIT_MS;
	FILE *f;

	snprintf(spath, sizeof(spath), "%s/%s", r->dir, script);
	snprintf(log, sizeof(log), "%s/mock.log", r->tmp);
	snprintf(port, sizeof(port), "%s/mock.port", r->tmp);
	r->mock_pid = fork();
	if (r->mock_pid == 0) {
		execl(r->mock, r->mock, "--script", spath, "--log", log, "--port-file", port, (char *)NULL);
		_exit(127);
	}
	while ((f = fopen(port, "r")) == NULL) {
		if (now_ms() > deadline)
			return run_fail(r, "the mock model server did not start");
		usleep(2000);
	}
	if (fscanf(f, "%d", &r->mock_port) != 1)
		r->mock_port = 0;
	fclose(f);
	return r->mock_port ? 0 : run_fail(r, "the mock model server wrote no port");
}

static void
mock_stop(struct run *r)
{
	if (r->mock_pid <= 0)
		return;
	kill(r->mock_pid, SIGTERM);
	waitpid(r->mock_pid, NULL, 0);
}

/* ---- steps ---- */

static char *
subst(struct run *r, const char *s)
{
	struct buf b;

	buf_init(&b);
	while (*s) {
		if (strncmp(s, "{{cwd}}", 7) == 0) {
			buf_puts(&b, r->cwd);
			s += 7;
		} else if (strncmp(s, "{{session:", 10) == 0 && strstr(s, "}}")) {
			long n = strtol(s + 10, NULL, 10);
			const char *id = json_string_value(json_array_get(r->sessions, (size_t)(n - 1)));
			buf_puts(&b, id ? id : "<no-such-session>");
			s = strstr(s, "}}") + 2;
		} else {
			buf_append(&b, s, 1);
			s++;
		}
	}
	return buf_steal(&b);
}

/* Is s exactly "{{mcp:<name>}}" (no "}" in the name)? */
static int
is_mcp_ref(const char *s)
{
	size_t len = strlen(s);

	return len >= 9 && strncmp(s, "{{mcp:", 6) == 0 && strcspn(s + 6, "}") == len - 8 &&
	    strcmp(s + len - 2, "}}") == 0;
}

/* "{{mcp:<name>}}" exactly: the name's server entry (borrowed from r->mcp), else NULL. */
static const json_t *
mcp_ref(const struct run *r, const char *s, char *name, size_t cap)
{
	size_t len = strlen(s);

	if (!is_mcp_ref(s))
		return NULL;
	snprintf(name, cap, "%.*s", (int)(len - 8), s + 6);
	return json_object_get(r->mcp, name);
}

/* The stdio McpServer (SPEC §20.1) that runs mock-mcp on the server's script; new reference. */
static json_t *
mcp_server(const struct run *r, const char *name, const json_t *srv)
{
	return json_pack("{s:s, s:s, s:[O], s:[{s:s, s:O}]}", "name", name, "command", r->mcp_mock,
	    "args", json_object_get(srv, "script"), "env", "name", "MOCK_MCP_LOG", "value",
	    json_object_get(srv, "log"));
}

/*
 * Every "{{mcp:<name>}}" string in v must name a server of the scenario's "mcp"; the first
 * one that does not fails the scenario (before the agent starts).
 */
static int
mcp_check_refs(struct run *r, const json_t *v)
{
	char name[256];

	if (json_is_string(v) && is_mcp_ref(json_string_value(v)) &&
	    mcp_ref(r, json_string_value(v), name, sizeof(name)) == NULL) {
		const char *k;
		json_t *x;
		struct buf have;
		buf_init(&have);
		json_object_foreach(r->mcp, k, x) buf_printf(&have, "%s%s", have.len ? ", " : "", k);
		run_fail(r, "%s: the scenario's \"mcp\" has no server \"%s\" (it has: %s)",
		    json_string_value(v), name, have.len ? have.data : "none");
		buf_free(&have);
		return -1;
	}
	if (json_is_object(v)) {
		const char *k;
		json_t *x;
		json_object_foreach((json_t *)v, k, x) if (mcp_check_refs(r, x) < 0) return -1;
	}
	if (json_is_array(v)) {
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x) if (mcp_check_refs(r, x) < 0) return -1;
	}
	return 0;
}

static json_t *
subst_json(struct run *r, json_t *v)
{
	char name[256];
	const json_t *srv;

	if (json_is_string(v) && (srv = mcp_ref(r, json_string_value(v), name, sizeof(name))))
		return mcp_server(r, name, srv);
	if (json_is_string(v) && json_string_length(v) == strlen(json_string_value(v))) {
		char *s = subst(r, json_string_value(v));
		json_t *o = json_string(s);
		free(s);
		return o;
	}
	if (json_is_object(v)) {
		json_t *o = json_object();
		const char *k;
		json_t *x;
		json_object_foreach(v, k, x) json_object_set_new(o, k, subst_json(r, x));
		return o;
	}
	if (json_is_array(v)) {
		json_t *a = json_array();
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x) json_array_append_new(a, subst_json(r, x));
		return a;
	}
	return json_incref(v);
}

/* Waits for the response with this id; returns it (borrowed from lines) or NULL. */
static json_t *
wait_response(struct run *r, const json_t *id, size_t from)
{
	long deadline = now_ms() + WAIT_MS;
	size_t i = from;

	for (;;) {
		for (; i < json_array_size(r->lines); i++) {
			json_t *m = json_loads(json_string_value(json_array_get(r->lines, i)), 0, NULL);
			int hit = m && !json_object_get(m, "method") && json_object_get(m, "id") &&
			    (id == NULL || json_equal(json_object_get(m, "id"), id));
			if (hit)
				return m;	/* caller frees */
			json_decref(m);
		}
		if (now_ms() > deadline) {
			run_fail(r, "timed out waiting for a response");
			return NULL;
		}
		if (agent_read(r, 100) < 0) {
			run_fail(r, "the agent closed stdout while a response was awaited");
			return NULL;
		}
	}
}

static int
step_send(struct run *r, json_t *msg, int notify, int nowait)
{
	json_t *m = subst_json(r, msg), *resp;
	size_t from = json_array_size(r->lines);
	char *line;
	int rc = 0;

	if (!json_object_get(m, "jsonrpc"))
		json_object_set_new(m, "jsonrpc", json_string("2.0"));
	if (!notify && !json_object_get(m, "id"))
		json_object_set_new(m, "id", json_integer(++r->next_id));
	pretty_client(r, m);
	line = json_dumps(m, JSON_COMPACT);
	size_t len = strlen(line);
	line = xrealloc(line, len + 2);
	memcpy(line + len, "\n", 2);
	rc = agent_write(r, line, len + 1);
	free(line);
	if (rc == 0 && !notify && !nowait) {
		resp = wait_response(r, json_object_get(m, "id"), from);
		if (resp == NULL) {
			rc = -1;
		} else {
			const char *method = json_string_value(json_object_get(m, "method"));
			json_t *sid = json_object_get(json_object_get(resp, "result"), "sessionId");
			if (method && strcmp(method, "session/new") == 0 && json_is_string(sid))
				json_array_append(r->sessions, sid);
			json_decref(resp);
		}
	}
	json_decref(m);
	return rc;
}

static int
step_raw(struct run *r, const char *data, size_t len, int wait)
{
	size_t from = json_array_size(r->lines);
	int rc = agent_write(r, data, len);
	json_t *resp;

	if (rc == 0 && wait) {
		resp = wait_response(r, NULL, from);
		if (resp == NULL)
			return -1;
		json_decref(resp);
	}
	return rc;
}

static int
step_wait_for(struct run *r, const char *needle)
{
	long deadline = now_ms() + WAIT_MS;
	char *n = subst(r, needle);

	for (;;) {
		for (; r->wait_cursor < json_array_size(r->lines); r->wait_cursor++) {
			if (strstr(json_string_value(json_array_get(r->lines, r->wait_cursor)), n)) {
				r->wait_cursor++;
				free(n);
				return 0;
			}
		}
		if (now_ms() > deadline || agent_read(r, 100) < 0) {
			run_fail(r, "waitFor \"%s\": not seen", n);
			free(n);
			return -1;
		}
	}
}

static char *read_file(const char *path);

/*
 * {"mcpLog": {"server": NAME, "contains": S, "count": N, "lacks": T, "timeoutMs": MS}}: waits
 * (MS, default 5 s, reading the agent meanwhile) until the server's mock-mcp log holds S at
 * least N times (default 1); "lacks" then checks at once that T is not there. S and T take
 * the {{...}} templates.
 */
static int
step_mcp_log(struct run *r, const json_t *spec)
{
	const char *server = json_string_value(json_object_get(spec, "server"));
	const json_t *srv = server ? json_object_get(r->mcp, server) : NULL;
	const char *contains = json_string_value(json_object_get(spec, "contains"));
	const char *lacks = json_string_value(json_object_get(spec, "lacks"));
	const json_t *n = json_object_get(spec, "count"), *ms = json_object_get(spec, "timeoutMs");
	long count = json_is_integer(n) ? (long)json_integer_value(n) : 1;
	long wait = json_is_integer(ms) ? (long)json_integer_value(ms) : MCP_LOG_WAIT_MS;
	const char *path = json_string_value(json_object_get(srv, "log"));
	long deadline = now_ms() + wait;
	char *want, *text = NULL;
	int rc = 0;

	if (srv == NULL)
		return run_fail(r, "mcpLog: the scenario's \"mcp\" has no server \"%s\"", server ? server : "(none given)");
	if ((contains == NULL || *contains == '\0') && lacks == NULL)
		return run_fail(r, "mcpLog %s: the step needs a non-empty \"contains\" or a \"lacks\"", server);
	want = contains && *contains ? subst(r, contains) : NULL;
	for (;;) {
		long seen = 0;
		free(text);
		text = read_file(path);
		for (const char *p = text && want ? strstr(text, want) : NULL; p; p = strstr(p + strlen(want), want))
			seen++;
		if (want == NULL || seen >= count)
			break;
		if (now_ms() > deadline) {
			rc = run_fail(r, "mcpLog %s: \"%s\" seen %ld time(s), not %ld, within %ld ms (log: %s)",
			    server, want, seen, count, wait, path);
			break;
		}
		agent_read(r, 50);
	}
	if (rc == 0 && lacks) {
		char *t = subst(r, lacks);
		if (text && strstr(text, t))
			rc = run_fail(r, "mcpLog %s: \"%s\" is in the log (%s)", server, t, path);
		free(t);
	}
	free(text);
	free(want);
	return rc;
}

static long
proc_hwm_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

/*
 * {"burst": {"count": N, "method": M, "stallMs": S, "maxRssMb": R}}: N requests in one stream
 * while the runner stops reading for S ms; every response must come back, in order, and the
 * agent's peak RSS must stay under R MB. The responses stay out of the snapshot.
 */
static int
step_burst(struct run *r, const json_t *spec)
{
	long n = (long)json_integer_value(json_object_get(spec, "count"));
	const char *method = json_string_value(json_object_get(spec, "method"));
	long stall = (long)json_integer_value(json_object_get(spec, "stallMs"));
	long max_rss = (long)json_integer_value(json_object_get(spec, "maxRssMb"));
	struct buf out, in;
	size_t off = 0;
	long next = 1, deadline = now_ms() + 120000, resume = now_ms() + stall;
	int flags = fcntl(r->to_agent, F_GETFL);

	buf_init(&out);
	buf_init(&in);
	for (long i = 1; i <= n; i++)
		buf_printf(&out, "{\"jsonrpc\":\"2.0\",\"id\":\"b%ld\",\"method\":\"%s\",\"params\":{}}\n", i,
		    method ? method : "authenticate");
	fcntl(r->to_agent, F_SETFL, flags | O_NONBLOCK);
	while (next <= n && now_ms() < deadline) {
		struct pollfd p[2] = { { r->to_agent, POLLOUT, 0 }, { r->from_agent, POLLIN, 0 } };
		int reading = now_ms() >= resume;
		poll(p, 2, 20);
		if (off < out.len && (p[0].revents & POLLOUT)) {
			ssize_t w = write(r->to_agent, out.data + off, out.len - off);
			if (w > 0)
				off += (size_t)w;
		}
		if (!reading || !(p[1].revents & (POLLIN | POLLHUP)))
			continue;
		char chunk[65536];
		ssize_t got = read(r->from_agent, chunk, sizeof(chunk));
		if (got <= 0)
			break;
		buf_append(&in, chunk, (size_t)got);
		char *nl;
		while ((nl = memchr(in.data, '\n', in.len)) != NULL) {
			char want[48];
			snprintf(want, sizeof(want), "\"id\":\"b%ld\"", next);
			*nl = '\0';
			if (strstr(in.data, "\"id\":\"b")) {
				if (strstr(in.data, want) == NULL) {
					run_fail(r, "burst: response %ld out of order: %.80s", next, in.data);
					goto out;
				}
				next++;
			}
			buf_consume(&in, (size_t)(nl - in.data) + 1);
		}
	}
	if (next <= n)
		run_fail(r, "burst: only %ld of %ld responses came back", next - 1, n);
	long hwm = proc_hwm_kb(r->pid);
	fprintf(stderr, "[burst: %ld requests answered in order; agent peak RSS %ld kB]\n", next - 1, hwm);
	/* Sanitizer and valgrind builds say nothing about the real footprint. */
	if (max_rss && hwm > max_rss * 1024 && !getenv("SCENARIO_NO_RSS_LIMIT"))
		run_fail(r, "burst: agent peak RSS %ld kB over %ld MB", hwm, max_rss);
out:
	fcntl(r->to_agent, F_SETFL, flags);
	buf_free(&out);
	buf_free(&in);
	return r->failure[0] ? -1 : 0;
}

static int
hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

static int
step_run(struct run *r, json_t *step)
{
	json_t *v;

	if ((v = json_object_get(step, "send")))
		return step_send(r, v, 0, json_is_true(json_object_get(step, "noWait")));
	if ((v = json_object_get(step, "answer")) || (v = json_object_get(step, "answerError"))) {
		/* Registered before it is needed; used once, in order. */
		json_t *a = subst_json(r, v);
		if (!json_is_string(json_object_get(a, "method"))) {
			json_decref(a);
			return run_fail(r, "an answer step needs a method");
		}
		json_object_set_new(a, "used", json_false());
		json_array_append_new(r->answers, a);
		return 0;
	}
	if ((v = json_object_get(step, "notify")))
		return step_send(r, v, 1, 0);
	if ((v = json_object_get(step, "sendRaw"))) {
		char *s = subst(r, json_string_value(v));
		size_t len = strlen(s);
		s = xrealloc(s, len + 2);
		memcpy(s + len, "\n", 2);
		int rc = step_raw(r, s, len + 1, json_is_true(json_object_get(step, "waitResponse")));
		free(s);
		return rc;
	}
	if ((v = json_object_get(step, "sendHex"))) {
		const char *h = json_string_value(v);
		struct buf b;
		buf_init(&b);
		for (; h[0] && h[1]; h += 2) {
			while (*h == ' ')
				h++;
			char byte = (char)(hexval(h[0]) * 16 + hexval(h[1]));
			buf_append(&b, &byte, 1);
		}
		int rc = step_raw(r, b.data, b.len, json_is_true(json_object_get(step, "waitResponse")));
		buf_free(&b);
		return rc;
	}
	if ((v = json_object_get(step, "burst")))
		return step_burst(r, v);
	if ((v = json_object_get(step, "mcpLog")))
		return step_mcp_log(r, v);
	if ((v = json_object_get(step, "waitFor")))
		return step_wait_for(r, json_string_value(v));
	if (json_object_get(step, "waitIdle")) {
		json_t *m = json_pack("{s:s, s:{s:i}}", "method", "_acp_agent/wait_idle", "params",
		    "timeoutMs", 10000);
		int rc = step_send(r, m, 0, 0);
		json_decref(m);
		return rc;
	}
	int expect = (int)json_integer_value(json_object_get(step, "expectExit"));
	if (json_object_get(step, "restart")) {
		if (r->pid > 0 && agent_stop_expect(r, expect, 0) < 0)
			return -1;
		if (json_is_object(json_object_get(step, "env")))
			json_object_update(r->env_extra, json_object_get(step, "env"));
		return agent_start(r);
	}
	if (json_object_get(step, "eof"))
		return agent_stop_expect(r, expect, 0);
	if ((v = json_object_get(step, "kill"))) {
		static const struct { const char *name; int sig; } sigs[] = {
			{ "TERM", SIGTERM }, { "INT", SIGINT }, { "HUP", SIGHUP }, { "QUIT", SIGQUIT },
		};
		const char *name = json_string_value(v) ? json_string_value(v) : "TERM";
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			if (strcmp(name, sigs[i].name) == 0)
				return agent_stop_expect(r, expect, sigs[i].sig);
		return run_fail(r, "kill: \"%s\" is not TERM, INT, HUP or QUIT", name);
	}
	if ((v = json_object_get(step, "sleepMs"))) {
		long until = now_ms() + (long)json_integer_value(v);
		while (now_ms() < until)
			agent_read(r, 10);
		return 0;
	}
	return run_fail(r, "unknown step %s", json_dumps(step, JSON_COMPACT));
}

/* ---- snapshots ---- */

struct sfile {
	char *path;
	int root;
	long long created;
	char id[64];
};

static int
sfile_cmp(const void *pa, const void *pb)
{
	const struct sfile *a = pa, *b = pb;

	if (a->root != b->root)
		return b->root - a->root;
	if (a->created != b->created)
		return a->created < b->created ? -1 : 1;
	return strcmp(a->id, b->id);
}

/*
 * With "mergeChunks": consecutive text chunks of one message become one line, so a
 * snapshot does not depend on how the network happened to cut a stream.
 */
static json_t *
merge_chunks(const json_t *lines)
{
	json_t *out = json_array(), *prev = NULL;
	size_t i;
	json_t *l;

	json_array_foreach(lines, i, l) {
		json_t *m = json_loads(json_string_value(l), 0, NULL);
		json_t *u = json_object_get(json_object_get(m, "params"), "update");
		const char *kind = json_string_value(json_object_get(u, "sessionUpdate"));
		int chunk = kind && (strcmp(kind, "agent_message_chunk") == 0 || strcmp(kind, "agent_thought_chunk") == 0);
		json_t *pu = json_object_get(json_object_get(prev, "params"), "update");
		if (chunk && prev && json_equal(json_object_get(pu, "sessionUpdate"), json_object_get(u, "sessionUpdate")) &&
		    json_equal(json_object_get(pu, "messageId"), json_object_get(u, "messageId"))) {
			json_t *pc = json_object_get(pu, "content");
			char *joined = xasprintf("%s%s", json_string_value(json_object_get(pc, "text")),
			    json_string_value(json_object_get(json_object_get(u, "content"), "text")));
			json_object_set_new(pc, "text", json_string(joined));
			free(joined);
			json_decref(m);
			continue;
		}
		if (prev) {
			char *t = json_dumps(prev, JSON_COMPACT);
			json_array_append_new(out, json_string(t));
			free(t);
			json_decref(prev);
			prev = NULL;
		}
		if (chunk) {
			prev = m;
			continue;
		}
		json_array_append(out, l);
		json_decref(m);
	}
	if (prev) {
		char *t = json_dumps(prev, JSON_COMPACT);
		json_array_append_new(out, json_string(t));
		free(t);
		json_decref(prev);
	}
	return out;
}

/* Produces the normalised actual output: "stdout.jsonl" and "sessions/<n>.jsonl" texts. */
static json_t *
actual_outputs(struct run *r)
{
	const char *paths[] = { r->cwd, r->state, r->tmp, r->dir, r->mcp_mock, NULL };
	const char *names[] = { "{{cwd}}", "{{state}}", "{{tmp}}", "{{scenario}}", "{{mock-mcp}}", NULL };
	struct canon *c = canon_new(paths, names);
	json_t *out = json_object();
	struct buf b;
	size_t i;
	json_t *l;
	char sdir[400];
	DIR *d;
	struct dirent *de;
	struct sfile *files = NULL;
	size_t nf = 0;

	json_t *lines = json_is_true(json_object_get(r->script, "mergeChunks")) ? merge_chunks(r->lines)
									       : json_incref(r->lines);
	buf_init(&b);
	json_array_foreach(lines, i, l) {
		char *n = canon_line(c, json_string_value(l));
		buf_puts(&b, n);
		buf_puts(&b, "\n");
		free(n);
	}
	json_decref(lines);
	json_object_set_new(out, "stdout.jsonl", json_string(b.data ? b.data : ""));
	buf_free(&b);
	snprintf(sdir, sizeof(sdir), "%s/sessions", r->state);
	if ((d = opendir(sdir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			size_t len = strlen(de->d_name);
			if (len < 7 || strcmp(de->d_name + len - 6, ".jsonl") != 0 || de->d_name[0] == '.')
				continue;
			files = xrealloc(files, (nf + 1) * sizeof(*files));
			struct sfile *f = &files[nf++];
			memset(f, 0, sizeof(*f));
			f->path = xasprintf("%s/%s", sdir, de->d_name);
			snprintf(f->id, sizeof(f->id), "%.*s", (int)(len - 6), de->d_name);
			FILE *fp = fopen(f->path, "r");
			char *line = NULL;
			size_t cap = 0;
			if (fp && getline(&line, &cap, fp) > 0) {
				json_t *h = json_loads(line, 0, NULL);
				f->root = h && !json_object_get(h, "parentSession");
				f->created = json_integer_value(json_object_get(h, "createdAt"));
				json_decref(h);
			}
			free(line);
			if (fp)
				fclose(fp);
		}
		closedir(d);
	}
	snprintf(sdir, sizeof(sdir), "%s/mock.log", r->tmp);
	FILE *ml = fopen(sdir, "r");
	if (ml) {
		char *line = NULL;
		size_t cap = 0;
		ssize_t n;
		buf_init(&b);
		while ((n = getline(&line, &cap, ml)) > 0) {
			if (line[n - 1] == '\n')
				line[n - 1] = '\0';
			char *cl = canon_line(c, line);
			buf_puts(&b, cl);
			buf_puts(&b, "\n");
			free(cl);
		}
		free(line);
		fclose(ml);
		json_object_set_new(out, "requests.jsonl", json_string(b.data ? b.data : ""));
		buf_free(&b);
	}
	snprintf(sdir, sizeof(sdir), "%s/sessions", r->state);
	if (nf)
		qsort(files, nf, sizeof(*files), sfile_cmp);
	for (i = 0; i < nf; i++) {
		FILE *fp = fopen(files[i].path, "r");
		char *line = NULL, key[64];
		size_t cap = 0;
		ssize_t n;
		buf_init(&b);
		while (fp && (n = getline(&line, &cap, fp)) > 0) {
			int nl = line[n - 1] == '\n';
			if (nl)
				line[n - 1] = '\0';
			char *cl = canon_line(c, line);
			buf_puts(&b, cl);
			buf_puts(&b, nl ? "\n" : "\n<no newline at end of file>\n");
			free(cl);
		}
		free(line);
		if (fp)
			fclose(fp);
		snprintf(key, sizeof(key), "sessions/%zu.jsonl", i + 1);
		json_object_set_new(out, key, json_string(b.data ? b.data : ""));
		buf_free(&b);
		free(files[i].path);
	}
	free(files);
	canon_free(c);
	return out;
}

static char *
read_file(const char *path)
{
	struct buf b;

	buf_init(&b);
	if (buf_append_file(&b, path) < 0) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

static int
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static int
compare(struct run *r, json_t *actual, int update)
{
	char exp[600], act[600], path[800];
	const char *k;
	json_t *v;
	int same = 1;

	snprintf(exp, sizeof(exp), "%s/expected", r->dir);
	snprintf(act, sizeof(act), "%s/actual", r->tmp);
	if (update) {
		const char *rm[] = { "rm", "-rf", exp, NULL };
		spawn_wait(rm);
	}
	mkdir(act, 0700);
	snprintf(path, sizeof(path), "%s/sessions", act);
	mkdir(path, 0700);
	if (update) {
		mkdir(exp, 0755);
		snprintf(path, sizeof(path), "%s/sessions", exp);
		mkdir(path, 0755);
	}
	json_object_foreach(actual, k, v) {
		snprintf(path, sizeof(path), "%s/%s", act, k);
		write_file(path, json_string_value(v));
		snprintf(path, sizeof(path), "%s/%s", exp, k);
		if (update) {
			write_file(path, json_string_value(v));
			continue;
		}
		char *want = read_file(path);
		if (want == NULL || strcmp(want, json_string_value(v)) != 0)
			same = 0;
		free(want);
	}
	/* An expected session file that no longer exists is a difference too. */
	snprintf(path, sizeof(path), "%s/sessions", exp);
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		char key[300];
		if (de->d_name[0] == '.')
			continue;
		snprintf(key, sizeof(key), "sessions/%s", de->d_name);
		if (!json_object_get(actual, key))
			same = 0;
	}
	if (d)
		closedir(d);
	if (!same && !update) {
		fflush(stdout);
		const char *diff[] = { "diff", "-ru", exp, act, NULL };
		spawn_wait(diff);
		return run_fail(r, "output differs from %s (actual kept in %s)", exp, act);
	}
	return 0;
}

static int
rmtree(const char *path)
{
	const char *argv[] = { "rm", "-rf", path, NULL };

	return spawn_wait(argv);
}

/*
 * The scenario's "mcp": {"<name>": "mcp/<name>.json"} (paths relative to the scenario): each
 * script must exist; its mock-mcp logs to <tmp>/mcp/<name>.log.
 */
static int
mcp_load(struct run *r)
{
	const json_t *spec = json_object_get(r->script, "mcp");
	const char *name;
	json_t *v;
	char path[1200], abs[PATH_MAX], logdir[400];

	r->mcp = json_object();
	if (spec == NULL)
		return 0;
	if (!json_is_object(spec))
		return run_fail(r, "\"mcp\" is not an object of server names and script paths");
	snprintf(logdir, sizeof(logdir), "%s/mcp", r->tmp);
	mkdir(logdir, 0700);
	json_object_foreach((json_t *)spec, name, v) {
		if (!json_is_string(v))
			return run_fail(r, "mcp server \"%s\": its script is not a path", name);
		if (name[0] == '\0' || strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != strlen(name))
			return run_fail(r, "mcp server \"%s\": a name is [A-Za-z0-9_.-]+", name);
		snprintf(path, sizeof(path), "%s/%s", r->dir, json_string_value(v));
		if (realpath(path, abs) == NULL)
			return run_fail(r, "mcp server \"%s\": %s: %s", name, path, strerror(errno));
		if (access(r->mcp_mock, X_OK) < 0)
			return run_fail(r, "mcp server \"%s\": no mock-mcp at %s (--mock-mcp)", name, r->mcp_mock);
		char *log = xasprintf("%s/%s.log", logdir, name);
		json_object_set_new(r->mcp, name, json_pack("{s:s, s:s}", "script", abs, "log", log));
		free(log);
	}
	return 0;
}

/* A live process running mock-mcp on this script (a zombie has no cmdline). */
static int
mcp_alive(pid_t pid, const char *script)
{
	char path[64], cmd[4096];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if ((fd = open(path, O_RDONLY)) >= 0) {
		n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
	}
	if (n <= 0)
		return 0;
	cmd[n] = '\0';
	const char *base = strrchr(cmd, '/'), *arg = cmd + strlen(cmd) + 1;
	return strcmp(base ? base + 1 : cmd, "mock-mcp") == 0 && arg < cmd + n && strcmp(arg, script) == 0;
}

/*
 * After the agent exits, every mock-mcp it started (the logs' start events) is gone within
 * MCP_GONE_WAIT_MS (SPEC §18: no orphans). One left over is killed and, when check is set,
 * fails the scenario.
 */
static int
mcp_check_gone(struct run *r, int check)
{
	const char *name;
	json_t *srv;
	int rc = 0;

	json_object_foreach(r->mcp, name, srv) {
		char *text = read_file(json_string_value(json_object_get(srv, "log")));
		for (const char *p = text ? strstr(text, "{\"event\":\"start\"") : NULL; p;
		     p = strstr(p + 1, "{\"event\":\"start\"")) {
			const char *pp = strstr(p, "\"pid\":");
			pid_t pid = pp ? (pid_t)strtol(pp + 6, NULL, 10) : 0;
			long deadline = now_ms() + MCP_GONE_WAIT_MS;
			if (pid <= 0)
				continue;
			const char *script = json_string_value(json_object_get(srv, "script"));
			while (mcp_alive(pid, script) && now_ms() < deadline)
				usleep(10000);
			if (!mcp_alive(pid, script))
				continue;
			kill(pid, SIGKILL);
			for (deadline = now_ms() + MCP_GONE_WAIT_MS; mcp_alive(pid, script) && now_ms() < deadline;)
				usleep(10000);
			if (check)
				rc = run_fail(r, "mcp server \"%s\": mock-mcp pid %d outlived the agent", name, (int)pid);
		}
		free(text);
	}
	return rc;
}

static int
run_scenario(const char *agent, const char *mock, const char *mcp_mock, const char *dirarg,
    const char *traces, int pretty, int update)
{
	struct run r;
	char path[600], dir[512];
	json_error_t jerr;
	json_t *steps, *step;
	size_t i;
	int rc = 0;

	memset(&r, 0, sizeof(r));
	if (realpath(dirarg, dir) == NULL) {
		fprintf(stderr, "scenario %s: %s\n", dirarg, strerror(errno));
		return -1;
	}
	r.agent = agent;
	r.mock = mock;
	r.mcp_mock = mcp_mock;
	r.dir = dir;
	r.pretty = pretty;
	r.to_agent = r.from_agent = -1;
	snprintf(r.name, sizeof(r.name), "%s", strrchr(dir, '/') + 1);
	snprintf(path, sizeof(path), "%s/scenario.json", dir);
	r.script = json_load_file(path, JSON_ALLOW_NUL, &jerr);
	if (r.script == NULL) {
		fprintf(stderr, "scenario %s: %s: %s\n", r.name, path, jerr.text);
		return -1;
	}
	/* SCENARIO_TMPDIR: where the scenario's temp dir goes (a test that expects failures cleans it) */
	const char *tmpdir = getenv("SCENARIO_TMPDIR");
	snprintf(r.tmp, sizeof(r.tmp), "%.120s/acp-scenario-%.60s-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp", r.name);
	if (mkdtemp(r.tmp) == NULL) {
		fprintf(stderr, "scenario %s: mkdtemp: %s\n", r.name, strerror(errno));
		json_decref(r.script);
		return -1;
	}
	snprintf(r.state, sizeof(r.state), "%s/state", r.tmp);
	snprintf(r.cwd, sizeof(r.cwd), "%s/work", r.tmp);
	mkdir(r.state, 0700);
	mkdir(r.cwd, 0700);
	struct stat st;
	/* A workspace/ of the scenario is the agent's cwd (SPEC §21): copied, symlinks as links. */
	snprintf(path, sizeof(path), "%s/workspace", dir);
	if (stat(path, &st) == 0) {
		char src[620];
		snprintf(src, sizeof(src), "%s/.", path);
		const char *cp[] = { "cp", "-a", src, r.cwd, NULL };
		spawn_wait(cp);
	}
	snprintf(path, sizeof(path), "%s/state", dir);
	if (stat(path, &st) == 0) {
		char src[620];
		snprintf(src, sizeof(src), "%s/.", path);
		const char *cp[] = { "cp", "-R", src, r.state, NULL };
		spawn_wait(cp);
	}
	if (traces) {
		mkdir(traces, 0755);
		snprintf(path, sizeof(path), "%s/%s.trace", traces, r.name);
		r.trace = fopen(path, "w");
	}
	r.lines = json_array();
	r.sessions = json_array();
	r.answers = json_array();
	r.env_extra = json_object();
	buf_init(&r.in);
	if (pretty)
		printf("== scenario %s ==\n", r.name);
	if (json_is_string(json_object_get(r.script, "mock"))) {
		if (r.mock == NULL)
			rc = run_fail(&r, "this scenario needs --mock");
		else
			rc = mock_start(&r, json_string_value(json_object_get(r.script, "mock")));
	}
	steps = json_object_get(r.script, "steps");
	if (rc == 0)
		rc = mcp_load(&r);
	if (rc == 0)
		rc = mcp_check_refs(&r, steps);
	if (rc == 0)
		rc = agent_start(&r);
	json_array_foreach(steps, i, step) {
		if (rc < 0)
			break;
		rc = step_run(&r, step);
	}
	if (rc == 0 && r.pid > 0)
		rc = agent_stop(&r);
	else if (r.pid > 0) {
		kill(r.pid, SIGKILL);
		waitpid(r.pid, NULL, 0);
	}
	mock_stop(&r);
	if (mcp_check_gone(&r, rc == 0) < 0)
		rc = -1;
	json_t *ans;
	json_array_foreach(r.answers, i, ans) {
		if (rc == 0 && !json_is_true(json_object_get(ans, "used")))
			rc = run_fail(&r, "the answer for %s (match \"%s\") was never used",
			    json_string_value(json_object_get(ans, "method")),
			    json_string_value(json_object_get(ans, "match")) ? json_string_value(json_object_get(ans, "match")) : "");
	}
	if (r.mock_pid > 0 && rc == 0) {
		/* The key goes to the server and nowhere else. */
		snprintf(path, sizeof(path), "%s/stderr.log", r.tmp);
		char *err = read_file(path);
		if (err && strstr(err, MOCK_KEY))
			rc = run_fail(&r, "the API key appears in the agent's stderr");
		free(err);
	}
	if (pretty) {
		pretty_flush(&r);
		snprintf(path, sizeof(path), "%s/sessions", r.state);
		DIR *d = opendir(path);
		struct dirent *de;
		while (d && (de = readdir(d)) != NULL) {
			char f[900];
			if (de->d_name[0] == '.')
				continue;
			snprintf(f, sizeof(f), "%s/%s", path, de->d_name);
			if (stat(f, &st) == 0)
				printf("session log %s: %lld bytes\n", de->d_name, (long long)st.st_size);
		}
		if (d)
			closedir(d);
	}
	if (r.trace)
		fclose(r.trace);
	if (rc == 0 && !pretty) {
		json_t *actual = actual_outputs(&r);
		rc = compare(&r, actual, update);
		json_decref(actual);
	}
	if (rc < 0)
		fprintf(stderr, "FAIL %s: %s\n", r.name, r.failure);
	else
		rmtree(r.tmp);
	buf_free(&r.in);
	buf_free(&r.pretty_text);
	json_decref(r.lines);
	json_decref(r.sessions);
	json_decref(r.answers);
	json_decref(r.env_extra);
	json_decref(r.mcp);
	json_decref(r.script);
	return rc;
}

int
main(int argc, char **argv)
{
	const char *agent = "bin/acp-agent", *traces = NULL, *mock = NULL;
	char mock_abs[512], mcp_abs[PATH_MAX], self[PATH_MAX];
	const char *mcp_mock = NULL;
	const char *upd = getenv("UPDATE_SNAPSHOTS");
	int pretty = 0, update = upd && *upd && strcmp(upd, "0") != 0;
	int passed = 0, failed = 0;
	char agent_abs[512];

	signal(SIGPIPE, SIG_IGN);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--agent") == 0 && i + 1 < argc) {
			agent = argv[++i];
		} else if (strcmp(argv[i], "--mock") == 0 && i + 1 < argc) {
			mock = realpath(argv[++i], mock_abs) ? mock_abs : NULL;
		} else if (strcmp(argv[i], "--mock-mcp") == 0 && i + 1 < argc) {
			/* a missing binary fails only the scenarios that use it, naming this path */
			mcp_mock = realpath(argv[i + 1], mcp_abs) ? mcp_abs : argv[i + 1];
			i++;
		} else if (strcmp(argv[i], "--traces") == 0 && i + 1 < argc) {
			traces = argv[++i];
		} else if (strcmp(argv[i], "--pretty") == 0) {
			pretty = 1;
		} else if (strcmp(argv[i], "--update") == 0) {
			update = 1;
		} else {
			if (realpath(agent, agent_abs) == NULL) {
				fprintf(stderr, "scenario-runner: %s: %s\n", agent, strerror(errno));
				return 2;
			}
			if (mcp_mock == NULL) {
				/* mock-mcp beside this binary */
				ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
				self[n > 0 ? n : 0] = '\0';
				char *slash = strrchr(self, '/');
				snprintf(mcp_abs, sizeof(mcp_abs), "%.*s/mock-mcp", slash ? (int)(slash - self) : 1,
				    slash ? self : ".");
				mcp_mock = mcp_abs;
			}
			if (run_scenario(agent_abs, mock, mcp_mock, argv[i], traces, pretty, update) == 0) {
				passed++;
				if (!pretty)
					fputc('.', stderr);
			} else {
				failed++;
			}
		}
	}
	if (!pretty)
		fprintf(stderr, "\n");
	fflush(stdout);
	printf("scenarios: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
