/*
 * glob and grep (docs/contract.md §16.1, §16.5): confined to the workspace, run off the loop (a search of a
 * big tree takes seconds), in a child process: a regexec that backtracks for ever (grep
 * '^(a*)(a*)(a*)\3\2\1$' over one line of 301 a's) never looks at a cancel flag, so a cancel
 * (or session/close, EOF, SIGTERM: each cancels the call) kills the child; the worker thread,
 * its owner, reaps it and returns at once, and the loop's join of that thread waits for nothing.
 * See base/isolate.h and docs/decisions.md. The result texts are workspace/glob.h's and
 * workspace/grep.h's.
 */
#include "tools/ws_search.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/isolate.h"
#include "base/log.h"
#include "base/offload.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "tools/tools.h"
#include "tools/workspace.h"
#include "workspace/glob.h"
#include "workspace/grep.h"

/*
 * One search in flight: everything the thread reads is its own copy. wake: an eventfd the cancel
 * writes to, so the thread stops waiting for the child at once (-1: it polls the flag).
 */
struct ws_search {
	struct tool_inv *inv;
	struct offload *job;
	int grep;
	char *root, *path, *pattern, *include;
	int deterministic;
	int wake;
	int inline_run;		/* no child could be started: the thread searched itself */
	struct buf out;
	struct err e;
	int rc;
};

static void
ws_search_free(struct ws_search *s)
{
	free(s->root);
	free(s->path);
	free(s->pattern);
	free(s->include);
	if (s->wake >= 0)
		close(s->wake);
	buf_free(&s->out);
	free(s);
}

/* The search itself, where it runs (the child, or the thread when there is no child). */
static int
ws_search_exec(const struct ws_search_req *q, const atomic_int *cancel, struct buf *out,
    struct err *e)
{
	if (q->grep) {
		struct ws_grep_opts o = { q->root, q->path, q->pattern, q->include, cancel };
		return ws_grep(&o, out, e);
	}
	struct ws_glob_opts o = { q->root, q->path, q->pattern, q->deterministic, cancel };
	return ws_glob(&o, out, e);
}

/* In the child: the search, sent back as rc, code, message length, message, text. */
static void
ws_search_child(void *arg, struct buf *out)
{
	const struct ws_search_req *q = arg;
	struct buf text;
	struct err e;
	int32_t head[3];

	buf_init(&text);
	err_clear(&e);
	head[0] = ws_search_exec(q, NULL, &text, &e);
	head[1] = (int32_t)e.code;
	head[2] = (int32_t)strlen(e.msg);
	buf_append(out, head, sizeof(head));
	buf_append(out, e.msg, (size_t)head[2]);
	buf_append(out, text.data ? text.data : "", text.len);
	buf_free(&text);
}

int
ws_search_isolated(const struct ws_search_req *q, const atomic_int *cancel, int wake_fd,
    struct buf *out, struct err *e, int *inline_run)
{
	struct buf raw;
	int32_t head[3];
	int status, rc;

	if (inline_run)
		*inline_run = 0;
	buf_init(&raw);
	rc = isolate_run(ws_search_child, (void *)q, &raw, cancel, wake_fd, &status);
	if (rc == 1) {
		buf_free(&raw);
		return err_set(e, ERR_CANCELLED, "search cancelled");
	}
	if (rc < 0 && status == -1) {
		/* No child (out of processes): search here; only the flag can stop it then. */
		buf_free(&raw);
		if (inline_run)
			*inline_run = 1;
		return ws_search_exec(q, cancel, out, e);
	}
	if (rc < 0 || raw.len < sizeof(head)) {
		buf_free(&raw);
		if (rc == 0 || !WIFSIGNALED(status))
			return err_set(e, ERR_INTERNAL,
			    "the search process ended without a result (status %d)",
			    rc == 0 ? 0 : WIFEXITED(status) ? WEXITSTATUS(status) : status);
		return err_set(e, ERR_INTERNAL, "the search process was killed by signal %d",
		    WTERMSIG(status));
	}
	memcpy(head, raw.data, sizeof(head));
	size_t rest = raw.len - sizeof(head);
	size_t msg_len = head[2] >= 0 && (size_t)head[2] <= rest ? (size_t)head[2] : 0;
	if (head[0] != 0) {
		enum err_code code = ERR_INTERNAL;

		if (head[1] > ERR_NONE && head[1] < ERR_COUNT)
			code = (enum err_code)head[1];
		err_set(e, code, "%.*s", (int)msg_len, raw.data + sizeof(head));
		rc = -1;
	} else {
		buf_append(out, raw.data + sizeof(head) + msg_len, rest - msg_len);
		rc = 0;
	}
	buf_free(&raw);
	return rc;
}

/* On the worker thread. */
static void
ws_search_work(void *arg, const atomic_int *cancel)
{
	struct ws_search *s = arg;
	struct ws_search_req q = { s->grep, s->root, s->path, s->pattern, s->include,
		s->deterministic };

	s->rc = ws_search_isolated(&q, cancel, s->wake, &s->out, &s->e, &s->inline_run);
}

/* Back on the loop. */
static void
ws_search_done(void *arg)
{
	struct ws_search *s = arg;
	struct tool_inv *inv = s->inv;
	struct tool_result r = { 0 };

	inv->state = NULL;
	inv->cancel = NULL;
	if (s->inline_run)
		log_warn("tools: %s: no search process could be started; it ran on a thread",
		    __func__);
	if (s->rc < 0)
		tool_result_error(&r, s->e.code, "%s", s->e.msg);
	else
		tool_result_set(&r, s->out.data ? s->out.data : "", NULL);
	ws_search_free(s);
	tool_inv_complete(inv, &r);
}

/* Wakes the thread (it kills and reaps the child, then returns), then joins it: no wait. */
static void
ws_search_cancel(struct tool_inv *inv)
{
	struct ws_search *s = inv->state;
	uint64_t one = 1;

	inv->state = NULL;
	if (s->wake >= 0 && write(s->wake, &one, sizeof(one)) < 0)
		log_warn("tools: %s: cannot wake the search: %s", __func__, strerror(errno));
	offload_cancel(s->job);
	ws_search_free(s);
}

static int
ws_search_run(struct tool_inv *inv, const json_t *args, struct tool_result *out, int grep)
{
	const char *path = json_string_value(json_object_get(args, "path"));
	struct ws_path where = { 0 };
	struct ws_state *st;
	struct ws_search *s;
	struct err e;

	err_clear(&e);
	if ((st = ws_state_path(inv->agent, path ? path : ".", 0, &where, &e)) == NULL) {
		tool_result_error(out, e.code, "%s", e.msg);
		return TOOL_DONE;
	}
	s = xcalloc(1, sizeof(*s));
	s->inv = inv;
	s->grep = grep;
	s->root = xstrdup(st->roots.root);
	s->path = xstrdup(where.abs);
	s->pattern = xstrdup(json_string_value(json_object_get(args, "pattern")));
	s->include = json_is_string(json_object_get(args, "include")) ?
	    xstrdup(json_string_value(json_object_get(args, "include"))) : NULL;
	s->deterministic = agent_rt_of(inv->agent)->env->clock.deterministic;
	s->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);	/* -1: the thread polls the flag */
	buf_init(&s->out);
	err_clear(&s->e);
	ws_path_free(&where);
	inv->state = s;
	inv->cancel = ws_search_cancel;
	s->job = offload_start(agent_rt_of(inv->agent)->loop, agent_rt_of(inv->agent)->runq, ws_search_work, ws_search_done, s);
	return TOOL_PENDING;
}

/* The path given, as locations (docs/contract.md §16.5: "path if given"). */
static int
ws_search_prepare(struct tool_inv *inv, const json_t *args, struct tool_plan *plan, struct tool_result *out)
{
	const char *path = json_string_value(json_object_get(args, "path"));
	struct ws_path where = { 0 };
	struct err e;

	if (path == NULL)
		return 0;
	err_clear(&e);
	if (ws_state_path(inv->agent, path, 0, &where, &e) == NULL) {
		tool_result_error(out, e.code, "%s", e.msg);
		return -1;
	}
	plan->locations = json_pack("[{s:s}]", "path", where.abs);
	ws_path_free(&where);
	return 0;
}

static char *
glob_title(const struct tool *t, const json_t *args)
{
	const char *p = json_string_value(json_object_get(args, "pattern"));

	(void)t;
	return xasprintf("Find %s", p ? p : "");
}

static int
glob_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	return ws_search_run(inv, args, out, 0);
}

const struct tool tool_glob = {
	.name = "glob",
	.description = "Find files (not directories) matching a glob; VCS directories skipped; at most 100 paths, "
	    "newest first.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"pattern\"],\"properties\":{"
	    "\"pattern\":{\"type\":\"string\",\"description\":\"e.g. \\\"**/*.c\\\"; without \\\"/\\\" it matches "
	    "basenames at any depth.\"},"
	    "\"path\":{\"type\":\"string\",\"description\":\"Directory to search. Default: workspace.\"}}}",
	.kind = "search",
	.result_doc = "One path per line, relative to the workspace, newest first (by path under `--deterministic`); "
	    "past 100, a last line `[100 of <n> files shown; narrow the pattern or path]`; none: `no files match "
	    "<pattern>`. Symlinks are not followed; `.git`, `.hg`, `.svn`, `.bzr`, `.jj` are skipped.",
	.concurrency_safe = 1,
	.title = glob_title,
	.run = glob_run,
	.cls = PERMIT_READ,
	.prepare = ws_search_prepare,
};

static char *
grep_title(const struct tool *t, const json_t *args)
{
	const char *p = json_string_value(json_object_get(args, "pattern"));
	const char *path = json_string_value(json_object_get(args, "path"));

	(void)t;
	if (path)
		return xasprintf("Grep \"%s\" in %s", p ? p : "", path);
	return xasprintf("Grep \"%s\"", p ? p : "");
}

static int
grep_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	return ws_search_run(inv, args, out, 1);
}

const struct tool tool_grep = {
	.name = "grep",
	.description = "Search file contents with a regular expression; matching lines with numbers, grouped by "
	    "file; at most 250 matches.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"pattern\"],\"properties\":{"
	    "\"pattern\":{\"type\":\"string\",\"description\":\"POSIX extended regular expression.\"},"
	    "\"path\":{\"type\":\"string\",\"description\":\"File or directory. Default: workspace.\"},"
	    "\"include\":{\"type\":\"string\",\"description\":\"One file-name glob, e.g. \\\"*.c\\\".\"}}}",
	.kind = "search",
	.result_doc = "A path line per file (relative to the workspace, in path order), then its matching lines as "
	    "`  <n>: <text>` (a line over 2000 bytes shows 2000 around its first match); past 250 lines, a last line "
	    "`[cut at 250 matching lines; narrow the pattern, path or include]`; none: `no matches for <pattern>`. "
	    "Binary files (a NUL in the first 8 KiB) are skipped.",
	.concurrency_safe = 1,
	.title = grep_title,
	.run = grep_run,
	.cls = PERMIT_READ,
	.prepare = ws_search_prepare,
};
