/* The workspace extension: the per-tree state of the eight tools, and the extension itself. */
#include "tools/workspace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/ask.h"
#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "tools/tools.h"

/* The key of the state among the root's extension state. */
static const char ws_key;

static void
ws_state_free(void *p)
{
	struct ws_state *st = p;

	size_t pos = 0;
	void *v;

	ws_jobs_free(st->jobs);
	ws_obs_free(&st->obs);
	while (map_next(&st->editor, &pos, NULL, &v)) {
		struct ws_text *t = v;
		free(t->text);
		free(t);
	}
	map_free(&st->editor);
	ws_roots_free(&st->roots);
	free(st->spill);
	free(st);
}

/* The tree's additional directories as more roots of st (again, when they change). A directory
 * gone since it was given is left out, and said. */
static void
ws_state_set_dirs(struct ws_state *st, struct agent *holder)
{
	json_t *dirs = agent_additional_dirs(holder), *d;
	size_t i;
	struct err e;

	for (size_t k = 0; k < st->roots.nextra; k++)
		free(st->roots.extra[k]);
	st->roots.nextra = 0;
	/* read from a log: what a request would be refused stays out (an absolute directory, not
	 * "/", still the realpath it was when given: not a link made since) */
	json_array_foreach(dirs, i, d) {
		const char *p = json_string_value(d);
		char *real = p && p[0] == '/' ? realpath(p, NULL) : NULL;
		err_clear(&e);
		if (real == NULL || strcmp(real, p) != 0 || strcmp(real, "/") == 0)
			log_warn("workspace %s: additional directory %s left out: it is not the directory it was", st->roots.root,
			    p ? p : "(not a path)");
		else if (ws_roots_add(&st->roots, p, &e) < 0)
			log_warn("workspace %s: additional directory left out: %s", st->roots.root, e.msg);
		free(real);
	}
	json_decref(dirs);
}

struct ws_state *
ws_state(struct agent *a, struct err *e)
{
	struct agent *holder = agent_worktree_owner(a);
	struct ws_state *st;

	/* An isolated child's tree works in its worktree (docs/contract.md §24): confined there. */
	if (holder == NULL)
		holder = agent_root(a);
	/* A child whose root is not live (a cold resume after the root closed) keeps its own. */
	if (holder == NULL || agent_sess(holder) == NULL)
		holder = a;
	st = agent_state(holder, &ws_key);
	if (st)
		return st;
	st = xcalloc(1, sizeof(*st));
	st->root = holder;
	st->spill = xasprintf("%s/spill/%s", agent_rt_of(holder)->env->state_dir, agent_id(holder));
	if (ws_roots_init(&st->roots, sess_header_str(agent_sess(holder), "cwd"), st->spill, e) < 0) {
		free(st->spill);
		free(st);
		return NULL;
	}
	ws_state_set_dirs(st, holder);
	ws_obs_init(&st->obs);
	map_init(&st->editor);
	agent_state_set(holder, &ws_key, st, ws_state_free);
	return st;
}

struct ws_state *
ws_state_path(struct agent *a, const char *path, int for_write, struct ws_path *where, struct err *e)
{
	struct ws_state *st = ws_state(a, e);

	if (st == NULL || ws_path_resolve(&st->roots, path, for_write, where, e) < 0)
		return NULL;
	ws_state_touch(a, st, where);
	return st;
}

void
ws_state_touch(struct agent *a, const struct ws_state *st, const struct ws_path *where)
{
	if (agent_rt_of(a)->touch && where->abs && !where->read_only && where->rel != where->abs)
		agent_rt_of(a)->touch(agent_rt_of(a)->touch_arg, st->roots.root, where->abs);
}

int
ws_state_spill(struct ws_state *st, struct err *e)
{
	char *parent = xasprintf("%s/spill", agent_rt_of(st->root)->env->state_dir);
	int rc = 0;

	if ((mkdir(parent, 0700) < 0 && errno != EEXIST) || (mkdir(st->spill, 0700) < 0 && errno != EEXIST))
		rc = err_set(e, ERR_PROC_SPILL_IO, "cannot create the spill directory %s: %s", st->spill,
		    strerror(errno));
	free(parent);
	return rc;
}

int
ws_state_sync_flags(const struct agent *a)
{
	return agent_rt_of(a)->env->sync == SESS_SYNC_NONE ? 0 : WS_WRITE_SYNC;
}

const char *
ws_state_sid(struct agent *a)
{
	struct agent *root = agent_root(a);

	return root ? agent_id(root) : NULL;
}

/* One additionalDirectories entry (docs/contract.md §27): an absolute path of an existing directory,
 * neither "/" nor the workspace; its realpath (owned), or NULL with e. */
static char *
ws_dir_check(const json_t *v, size_t i, const char *workspace, struct err *e)
{
	const char *p = json_string_value(v);
	char *real;
	struct stat st;

	if (p == NULL || strlen(p) != json_string_length(v)) {
		err_set(e, ERR_INVALID_PARAMS, "additionalDirectories[%zu]: expected a path", i);
		return NULL;
	}
	if (p[0] != '/') {
		err_set(e, ERR_INVALID_PARAMS, "additionalDirectories[%zu]: \"%.300s\" is not an absolute path", i, p);
		return NULL;
	}
	if ((real = realpath(p, NULL)) == NULL || stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
		err_set(e, ERR_INVALID_PARAMS, "additionalDirectories[%zu]: \"%.300s\" is not an existing directory", i, p);
		free(real);
		return NULL;
	}
	if (strcmp(real, "/") == 0 || (workspace && strcmp(real, workspace) == 0)) {
		err_set(e, ERR_INVALID_PARAMS, "additionalDirectories[%zu]: \"%.300s\" is %s", i, p,
		    strcmp(real, "/") == 0 ? "the root directory" : "the workspace itself");
		free(real);
		return NULL;
	}
	return real;
}

/* session/new, load, resume: additionalDirectories checked (a NULL); for a root, logged when they
 * differ from its last and given to its tree. Absent: a stored root keeps its own. */
static int
ws_session_params(struct agent *a, const json_t *params, struct err *e)
{
	const json_t *dirs = json_object_get(params, "additionalDirectories");
	const char *cwd = json_string_value(json_object_get(params, "cwd"));
	char *workspace = cwd ? realpath(cwd, NULL) : NULL;
	json_t *real = json_array(), *v, *old;
	size_t i;
	int rc = 0;

	if (dirs == NULL || json_is_null(dirs))
		goto out;
	if (!json_is_array(dirs)) {
		rc = err_set(e, ERR_INVALID_PARAMS, "additionalDirectories: expected an array of paths");
		goto out;
	}
	json_array_foreach(dirs, i, v) {
		char *r = ws_dir_check(v, i, workspace, e);
		if (r == NULL && a == NULL) {
			rc = -1;
			goto out;
		}
		if (r == NULL) {
			/* checked before; gone since (a load read off the loop meanwhile): left out, said,
			 * and the other extensions still run */
			log_warn("session %s: %s: left out", agent_id(a), e->msg);
			err_clear(e);
			continue;
		}
		json_array_append_new(real, json_string(r));
		free(r);
	}
	if (a == NULL || agent_parent(a))
		goto out;
	old = agent_additional_dirs(a);
	if (!json_equal(old, real) && (json_array_size(real) > 0 || old != NULL) &&
	    agent_append(a, "session/roots", xjson_pack("{s:O}", "directories", real)) == 0) {
		struct ws_state *st = agent_state(a, &ws_key);
		if (st && st->root == a)
			ws_state_set_dirs(st, a);
	}
	json_decref(old);
out:
	json_decref(real);
	free(workspace);
	return rc;
}

/* A root released: its jobs die with it (docs/contract.md §16.3); the record goes at the reap. */
static void
ws_release(struct agent *a)
{
	struct ws_state *st = agent_parent(a) ? NULL : agent_state(a, &ws_key);

	if (st) {
		ws_jobs_free(st->jobs);
		st->jobs = NULL;
	}
}

/* An isolated agent's worktree is committed and removed: the jobs of its tree (held by it) die
 * first, as a root's do at its release; the tree's record stays for its next residency. */
static void
ws_worktree_leaving(struct agent *a)
{
	struct ws_state *st = agent_state(a, &ws_key);

	if (st && st->root == a) {
		ws_jobs_free(st->jobs);
		st->jobs = NULL;
	}
}

static const struct tool *const ws_tools[] = {
	&tool_read, &tool_write, &tool_edit, &tool_glob, &tool_grep, &tool_bash, &tool_job_output,
	&tool_job_kill, NULL,
};

const struct agent_ext workspace_ext = {
	.name = "workspace",
	.tools = ws_tools,
	.release = ws_release,
	.worktree_leaving = ws_worktree_leaving,
	.session_params = ws_session_params,
};
