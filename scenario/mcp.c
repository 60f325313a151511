/*
 * Scripted MCP servers (docs/contract.md §20.1): a scenario's top-level "mcp": {"<name>": "mcp/<name>.json"}
 * runs mock-mcp (tests/mock_mcp.c) on each script; a step string that is exactly
 * "{{mcp:<name>}}" becomes that server's stdio McpServer. mcpLog steps read a server's log, and
 * after the agent exits every mock-mcp it started must be gone (docs/contract.md §18: no orphans).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "scenario/internal.h"

/* Is s exactly "{{mcp:<name>}}" (no "}" in the name)? */
static int
scenario_mcp_is_ref(const char *s)
{
	size_t len = strlen(s);

	return len >= 9 && strncmp(s, "{{mcp:", 6) == 0 && strcspn(s + 6, "}") == len - 8 &&
	    strcmp(s + len - 2, "}}") == 0;
}

/* "{{mcp:<name>}}" exactly: the name's server entry (borrowed from r->mcp), else NULL. */
static const json_t *
scenario_mcp_ref(const struct scenario_run *r, const char *s, char *name, size_t cap)
{
	size_t len = strlen(s);

	if (!scenario_mcp_is_ref(s))
		return NULL;
	snprintf(name, cap, "%.*s", (int)(len - 8), s + 6);
	return json_object_get(r->mcp, name);
}

/* For "{{mcp:<name>}}": the stdio McpServer (docs/contract.md §20.1) that runs mock-mcp on the server's
 * script, a new reference; else NULL. */
json_t *
scenario_mcp_subst(const struct scenario_run *r, const char *s)
{
	char name[256];
	const json_t *srv = scenario_mcp_ref(r, s, name, sizeof(name));

	if (srv == NULL)
		return NULL;
	return json_pack("{s:s, s:s, s:[O], s:[{s:s, s:O}]}", "name", name, "command", r->opts->mcp_mock,
	    "args", json_object_get(srv, "script"), "env", "name", "MOCK_MCP_LOG", "value",
	    json_object_get(srv, "log"));
}

/*
 * Every "{{mcp:<name>}}" string in v must name a server of the scenario's "mcp"; the first
 * one that does not fails the scenario (before the agent starts).
 */
int
scenario_mcp_check_refs(struct scenario_run *r, const json_t *v)
{
	char name[256];

	if (json_is_string(v) && scenario_mcp_is_ref(json_string_value(v)) &&
	    scenario_mcp_ref(r, json_string_value(v), name, sizeof(name)) == NULL) {
		const char *k;
		json_t *x;
		struct buf have;
		buf_init(&have);
		json_object_foreach(r->mcp, k, x) buf_printf(&have, "%s%s", have.len ? ", " : "", k);
		scenario_fail(r, "%s: the scenario's \"mcp\" has no server \"%s\" (it has: %s)",
		    json_string_value(v), name, have.len ? have.data : "none");
		buf_free(&have);
		return -1;
	}
	if (json_is_object(v)) {
		const char *k;
		json_t *x;
		json_object_foreach((json_t *)v, k, x) if (scenario_mcp_check_refs(r, x) < 0) return -1;
	}
	if (json_is_array(v)) {
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x) if (scenario_mcp_check_refs(r, x) < 0) return -1;
	}
	return 0;
}

/*
 * The scenario's "mcp": {"<name>": "mcp/<name>.json"} (paths relative to the scenario), into
 * r->mcp (empty on entry): each script must exist; its mock-mcp logs to <tmp>/mcp/<name>.log.
 */
int
scenario_mcp_load(struct scenario_run *r)
{
	const json_t *spec = json_object_get(r->script, "mcp");
	const char *name;
	json_t *v;
	char path[1200], abs[PATH_MAX], logdir[400];

	if (spec == NULL)
		return 0;
	if (!json_is_object(spec))
		return scenario_fail(r, "\"mcp\" is not an object of server names and script paths");
	snprintf(logdir, sizeof(logdir), "%s/mcp", r->tmp);
	mkdir(logdir, 0700);
	json_object_foreach((json_t *)spec, name, v) {
		if (!json_is_string(v))
			return scenario_fail(r, "mcp server \"%s\": its script is not a path", name);
		if (name[0] == '\0' || strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != strlen(name))
			return scenario_fail(r, "mcp server \"%s\": a name is [A-Za-z0-9_.-]+", name);
		snprintf(path, sizeof(path), "%s/%s", r->dir, json_string_value(v));
		if (realpath(path, abs) == NULL)
			return scenario_fail(r, "mcp server \"%s\": %s: %s", name, path, strerror(errno));
		if (access(r->opts->mcp_mock, X_OK) < 0)
			return scenario_fail(r, "mcp server \"%s\": no mock-mcp at %s (--mock-mcp)", name,
			    r->opts->mcp_mock);
		char *log = xasprintf("%s/%s.log", logdir, name);
		json_object_set_new(r->mcp, name, json_pack("{s:s, s:s}", "script", abs, "log", log));
		free(log);
	}
	return 0;
}

/*
 * {"mcpLog": {"server": NAME, "contains": S, "count": N, "lacks": T, "timeoutMs": MS}}: waits
 * (MS, default 5 s, reading the agent meanwhile) until the server's mock-mcp log holds S at
 * least N times (default 1); "lacks" then checks at once that T is not there. S and T take
 * the {{...}} templates.
 */
int
scenario_mcp_log_step(struct scenario_run *r, const json_t *spec)
{
	const char *server = json_string_value(json_object_get(spec, "server"));
	const json_t *srv = server ? json_object_get(r->mcp, server) : NULL;
	const char *contains = json_string_value(json_object_get(spec, "contains"));
	const char *lacks = json_string_value(json_object_get(spec, "lacks"));
	const json_t *n = json_object_get(spec, "count"), *ms = json_object_get(spec, "timeoutMs");
	long count = json_is_integer(n) ? (long)json_integer_value(n) : 1;
	long wait = json_is_integer(ms) ? (long)json_integer_value(ms) : SCENARIO_MCP_LOG_WAIT_MS;
	const char *path = json_string_value(json_object_get(srv, "log"));
	long deadline = scenario_now_ms() + wait;
	char *want, *text = NULL;
	int rc = 0;

	if (srv == NULL)
		return scenario_fail(r, "mcpLog: the scenario's \"mcp\" has no server \"%s\"",
		    server ? server : "(none given)");
	if ((contains == NULL || *contains == '\0') && lacks == NULL)
		return scenario_fail(r, "mcpLog %s: the step needs a non-empty \"contains\" or a \"lacks\"", server);
	want = contains && *contains ? scenario_subst(r, contains) : NULL;
	for (;;) {
		long seen = 0;
		free(text);
		text = scenario_read_file(path);
		for (const char *p = text && want ? strstr(text, want) : NULL; p; p = strstr(p + strlen(want), want))
			seen++;
		if (want == NULL || seen >= count)
			break;
		if (scenario_now_ms() > deadline) {
			rc = scenario_fail(r, "mcpLog %s: \"%s\" seen %ld time(s), not %ld, within %ld ms (log: %s)",
			    server, want, seen, count, wait, path);
			break;
		}
		scenario_proc_read(r, 50);
	}
	if (rc == 0 && lacks) {
		char *t = scenario_subst(r, lacks);
		if (text && strstr(text, t))
			rc = scenario_fail(r, "mcpLog %s: \"%s\" is in the log (%s)", server, t, path);
		free(t);
	}
	free(text);
	free(want);
	return rc;
}

/* A live process running mock-mcp on this script (a zombie has no cmdline). */
static int
scenario_mcp_alive(pid_t pid, const char *script)
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
 * SCENARIO_MCP_GONE_WAIT_MS (docs/contract.md §18: no orphans). One left over is killed and, when check is
 * set, fails the scenario.
 */
int
scenario_mcp_check_gone(struct scenario_run *r, int check)
{
	const char *name;
	json_t *srv;
	int rc = 0;

	json_object_foreach(r->mcp, name, srv) {
		char *text = scenario_read_file(json_string_value(json_object_get(srv, "log")));
		for (const char *p = text ? strstr(text, "{\"event\":\"start\"") : NULL; p;
		     p = strstr(p + 1, "{\"event\":\"start\"")) {
			const char *pp = strstr(p, "\"pid\":");
			pid_t pid = pp ? (pid_t)strtol(pp + 6, NULL, 10) : 0;
			long deadline = scenario_now_ms() + SCENARIO_MCP_GONE_WAIT_MS;
			if (pid <= 0)
				continue;
			const char *script = json_string_value(json_object_get(srv, "script"));
			while (scenario_mcp_alive(pid, script) && scenario_now_ms() < deadline)
				usleep(10000);
			if (!scenario_mcp_alive(pid, script))
				continue;
			kill(pid, SIGKILL);
			for (deadline = scenario_now_ms() + SCENARIO_MCP_GONE_WAIT_MS;
			     scenario_mcp_alive(pid, script) && scenario_now_ms() < deadline;)
				usleep(10000);
			if (check)
				rc = scenario_fail(r, "mcp server \"%s\": mock-mcp pid %d outlived the agent", name,
				    (int)pid);
		}
		free(text);
	}
	return rc;
}
