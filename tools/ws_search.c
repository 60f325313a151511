/*
 * glob and grep (SPEC §16.1, §16.5): confined to the workspace, run off the loop (a search of a
 * big tree takes seconds), cancelled between files. The result texts are workspace/glob.h's and
 * workspace/grep.h's.
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/offload.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "tools/tools.h"
#include "tools/workspace.h"
#include "workspace/glob.h"
#include "workspace/grep.h"

/* One search in flight: everything the thread reads is its own copy. */
struct ws_search {
	struct tool_inv *inv;
	struct offload *job;
	int grep;
	char *root, *path, *pattern, *include;
	int deterministic;
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
	buf_free(&s->out);
	free(s);
}

/* On the worker thread. */
static void
ws_search_work(void *arg, const atomic_int *cancel)
{
	struct ws_search *s = arg;

	if (s->grep) {
		struct ws_grep_opts o = { s->root, s->path, s->pattern, s->include, cancel };
		s->rc = ws_grep(&o, &s->out, &s->e);
	} else {
		struct ws_glob_opts o = { s->root, s->path, s->pattern, s->deterministic, cancel };
		s->rc = ws_glob(&o, &s->out, &s->e);
	}
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
	if (s->rc < 0)
		tool_result_error(&r, s->e.code, "%s", s->e.msg);
	else
		tool_result_set(&r, s->out.data ? s->out.data : "", NULL);
	ws_search_free(s);
	tool_inv_complete(inv, &r);
}

static void
ws_search_cancel(struct tool_inv *inv)
{
	struct ws_search *s = inv->state;

	inv->state = NULL;
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
	s->deterministic = inv->agent->rt->env->clock.deterministic;
	buf_init(&s->out);
	err_clear(&s->e);
	ws_path_free(&where);
	inv->state = s;
	inv->cancel = ws_search_cancel;
	s->job = offload_start(inv->agent->rt->loop, inv->agent->rt->runq, ws_search_work, ws_search_done, s);
	return TOOL_PENDING;
}

/* The path given, as locations (SPEC §16.5: "path if given"). */
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
