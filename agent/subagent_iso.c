/*
 * Isolated children (docs/contract.md §24): a child whose workspace is its own git worktree. The
 * worktree is made before the child exists (its call pending meanwhile), committed and removed
 * when the child settles (a one-shot child: when its run ends, before its result goes back), and
 * added back before the next request of a later turn. Every git step runs on an offload thread
 * (workspace/git.c); here is what happens on the loop before and after.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/subagent_int.h"
#include "agent/view.h"
#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "workspace/git.h"

/* A deterministic run's commits are dated by its clock, so their ids repeat (scenarios); else "". */
static void
iso_date(struct agent_rt *rt, char *out, size_t size)
{
	out[0] = '\0';
	if (rt->env->clock.deterministic)
		snprintf(out, size, "@%lld +0000", (long long)(clock_now_ms(&rt->env->clock) / 1000));
}

/* ---- making the worktree, before the child ---- */

struct iso_make {
	struct agent_rt *rt;
	struct tool_inv *inv;
	char *description, *prompt, *type, *model;
	int background;
	subagent_finish_fn *finish;
	subagent_started_fn *started;
	/* a teammate's: its first message, and who takes the child (instead of started) */
	json_t *content, *source;
	subagent_spawned_fn *spawned;
	void *spawned_arg;
	char id[SESS_ID_LEN + 1];
	char *workspace, *dir;
	char date[32];			/* a deterministic run's commit time, or "" */
	/* the thread's results */
	struct git_wt wt;
	int claim;			/* the worktree's claim until the child is published (workspace/git.h) */
	int cancelled;			/* the call went: what git made goes, nothing is told */
	int ok;
	enum err_code code;
	char why[GIT_WHY_MAX + 64];
	struct offload *job;
};

static void
iso_make_free(struct iso_make *m)
{
	free(m->description);
	free(m->prompt);
	free(m->type);
	free(m->model);
	free(m->workspace);
	free(m->dir);
	json_decref(m->content);
	json_decref(m->source);
	if (m->claim >= 0)
		close(m->claim);	/* never here: each path below unclaims or drops */
	git_wt_free(&m->wt);
	free(m);
}

/* A worktree nobody will use: removed off the loop; the process waits for it before it exits. */
struct iso_drop {
	struct agent_rt *rt;
	struct git_wt wt;
	char *dir;
	char id[SESS_ID_LEN + 1];
	int claim;		/* goes once the worktree is removed */
};

static void
iso_drop_run(void *arg, const atomic_int *cancel)
{
	struct iso_drop *d = arg;
	char why[GIT_WHY_MAX];
	int deleted;

	(void)cancel;	/* finished whatever: half a removal is worse than a slow exit */
	if (git_wt_remove(&d->wt, NULL, &deleted, why) < 0) {
		log_warn("worktree %s: not removed: %s", d->wt.path, why);
		close(d->claim);	/* the claim stays: the next start-up's sweep tries again */
	} else {
		git_wt_unclaim(d->dir, d->id, d->claim);
	}
}

static void
iso_drop_done(void *arg)
{
	struct iso_drop *d = arg;

	agent_rt_linger(d->rt, -1);
	git_wt_free(&d->wt);
	free(d->dir);
	free(d);
}

/* m's worktree, made for a child that will not be: removed, then its claim. */
static void
iso_drop(struct agent_rt *rt, struct iso_make *m)
{
	struct iso_drop *d = xcalloc(1, sizeof(*d));

	d->rt = rt;
	d->wt = m->wt;
	memset(&m->wt, 0, sizeof(m->wt));
	d->dir = xstrdup(m->dir);
	memcpy(d->id, m->id, sizeof(d->id));
	d->claim = m->claim;
	m->claim = -1;
	agent_rt_linger(rt, 1);
	offload_start(rt->loop, rt->runq, iso_drop_run, iso_drop_done, d);
}

static void
iso_make_run(void *arg, const atomic_int *cancel)
{
	struct iso_make *m = arg;
	char *repo, *subdir, why[GIT_WHY_MAX];
	struct git_ctx ctx = { NULL, cancel, m->date[0] ? m->date : NULL, m->dir };

	if (git_wt_probe(m->workspace, &ctx, &repo, &subdir, why) < 0) {
		m->code = ERR_ISOLATION_UNAVAILABLE;
		snprintf(m->why, sizeof(m->why), "worktree isolation needs a git repository: %s", why);
		return;
	}
	if (git_wt_create(m->workspace, repo, subdir, m->id, m->dir, &ctx, &m->wt, &m->claim, why) < 0) {
		m->code = ERR_ISOLATION_FAILED;
		snprintf(m->why, sizeof(m->why), "%s", why);
	} else {
		m->ok = 1;
	}
	free(repo);
	free(subdir);
}

/* No child: whoever waits for it is told why; m goes. */
static void
iso_make_failed(struct iso_make *m, const struct err *e)
{
	if (m->spawned)
		m->spawned(m->spawned_arg, NULL, e);
	else
		m->started(m->inv, NULL, e);
	iso_make_free(m);
}

/* The worktree is made (or not): the child, or the call's error. */
static void
iso_make_done(void *arg)
{
	struct iso_make *m = arg;
	struct tool_inv *inv = m->inv;
	struct agent *child;
	struct err e;

	if (m->cancelled) {
		agent_rt_linger(m->rt, -1);
		if (m->ok)
			iso_drop(m->rt, m);
		iso_make_free(m);
		return;
	}
	inv->cancel = NULL;
	inv->state = NULL;
	err_clear(&e);
	if (!m->ok) {
		err_set(&e, m->code, "%s", m->why);
		iso_make_failed(m, &e);
		return;
	}
	if (m->rt->env->faults.exit_after_worktree) {
		log_warn("fault: exit-after-worktree reached");
		_exit(3);
	}
	child = sub_new_child(inv->agent, m->description, m->background, m->type, m->model, inv, m->id, &m->wt, &e);
	if (child == NULL) {
		if (m->wt.path)
			iso_drop(m->rt, m);	/* the capacity filled meanwhile, or the log failed */
		iso_make_failed(m, &e);
		return;
	}
	git_wt_unclaim(m->dir, m->id, m->claim);	/* published: its log owns the worktree now */
	m->claim = -1;
	if (m->spawned) {
		agent_view_in(child, agent_id(inv->agent), NULL, m->content);	/* its first prompt */
		agent_post(child, m->content, m->source, NULL);
		m->content = m->source = NULL;
		m->spawned(m->spawned_arg, child, NULL);
		iso_make_free(m);
		return;
	}
	sub_start_child(inv, child, m->prompt, m->background, m->finish);
	if (m->background)
		m->started(inv, agent_id(child), NULL);
	iso_make_free(m);
}

/* The call is cancelled while the worktree is made: git is stopped (SIGTERM), and its thread
 * undoes what it made without the loop waiting; the done removes a worktree that was complete.
 * The exit waits for both. */
static void
iso_make_cancel(struct tool_inv *inv)
{
	struct iso_make *m = inv->state;

	inv->state = NULL;
	if (m == NULL)
		return;
	m->cancelled = 1;
	m->inv = NULL;
	agent_rt_linger(m->rt, 1);
	offload_stop(m->job);
	if (m->spawned) {
		struct err e;
		err_clear(&e);
		err_set(&e, ERR_CANCELLED, "the call was cancelled while its worktree was made");
		m->spawned(m->spawned_arg, NULL, &e);
		m->spawned = NULL;
	}
}

int
sub_iso_make(struct tool_inv *inv, const char *description, const char *prompt, int background,
    const struct subagent_kind *kind, subagent_finish_fn *finish, subagent_started_fn *started, struct err *e)
{
	struct agent *parent = inv->agent;
	struct agent_rt *rt = parent->rt;
	struct iso_make *m;
	const char *cwd = sess_header_str(parent->sess, "cwd");

	(void)e;
	m = xcalloc(1, sizeof(*m));
	m->rt = rt;
	m->inv = inv;
	m->claim = -1;
	m->description = xstrdup(description ? description : "");
	m->prompt = xstrdup(prompt ? prompt : "");
	m->type = kind && kind->type ? xstrdup(kind->type) : NULL;
	m->model = kind && kind->model ? xstrdup(kind->model) : NULL;
	m->background = background;
	m->finish = finish;
	m->started = started;
	sess_ids_new(&rt->env->ids, m->id);
	m->workspace = xstrdup(cwd ? cwd : "/");
	m->dir = xasprintf("%s/worktrees", rt->env->state_dir);
	iso_date(rt, m->date, sizeof(m->date));
	inv->state = m;
	inv->cancel = iso_make_cancel;
	m->job = offload_start(rt->loop, rt->runq, iso_make_run, iso_make_done, m);
	return 1;
}

int
sub_iso_spawn(struct tool_inv *inv, const char *label, json_t *content, json_t *source,
    const struct subagent_kind *kind, subagent_spawned_fn *done, void *arg)
{
	struct iso_make *m;
	struct err e;

	err_clear(&e);
	sub_iso_make(inv, label, "", 1, kind, NULL, NULL, &e);
	m = inv->state;
	m->content = content;
	m->source = source;
	m->spawned = done;
	m->spawned_arg = arg;
	return 1;
}

int
sub_iso_created(struct agent *child, struct err *e)
{
	const struct git_wt *wt = child->comp.wt;

	if (sess_append(child->sess, "worktree/created", xjson_pack("{s:s, s:s, s:s}", "path", wt->path, "branch",
		wt->branch, "base", wt->base), e) == NULL)
		return -1;
	sub_state(child)->iso = SUB_ISO_PRESENT;
	return 0;
}

/* ---- committing and removing it, adding it back ---- */

enum iso_op { ISO_SETTLE, ISO_READD };

struct iso_job {
	struct agent_rt *rt;
	char id[SESS_ID_LEN + 1];
	enum iso_op op;
	struct git_wt wt;		/* a copy */
	char *message;
	char *ceiling;			/* <state-dir>/worktrees: git never looks above it */
	char date[32];
	/* the thread's results */
	int recovering;			/* its last process died: a killed git's locks may be left */
	int ok, committed, branch_deleted;
	struct git_commit c;
	char why[GIT_WHY_MAX];
};

static void
iso_job_free(struct iso_job *j)
{
	git_wt_free(&j->wt);
	free(j->message);
	free(j->ceiling);
	free(j);
}

static void
iso_job_run(void *arg, const atomic_int *cancel)
{
	struct iso_job *j = arg;
	struct stat st;
	struct git_ctx ctx = { NULL, cancel, j->date[0] ? j->date : NULL, j->ceiling };

	if (j->op == ISO_READD) {
		j->ok = git_wt_readd(&j->wt, &ctx, j->why) == 0;
		return;
	}
	/* a worktree a crash left, or this residency's: everything in it committed, then it goes */
	if (lstat(j->wt.path, &st) == 0) {
		if (j->recovering)
			git_wt_unlock(&j->wt);
		if (git_wt_commit(&j->wt, j->message, &ctx, &j->c, j->why) < 0)
			return;
		j->committed = 1;
	} else if (git_wt_count(&j->wt, &ctx, &j->c, j->why) < 0) {
		return;
	}
	j->ok = git_wt_remove(&j->wt, &ctx, &j->branch_deleted, j->why) == 0;
}

static void
iso_work_line(struct sub_state *st, const struct iso_job *j)
{
	free(st->iso_work);
	if (!j->ok)
		st->iso_work = xasprintf("Its worktree could not be committed and removed (%s); it stays at %s.", j->why,
		    j->wt.path);
	else if (j->c.files == 0)
		st->iso_work = xstrdup("It changed no files.");
	else
		st->iso_work = xasprintf("Its work is on branch %s: %d file(s) changed, +%d -%d.", j->wt.branch, j->c.files,
		    j->c.insertions, j->c.deletions);
}

static void iso_ensure(struct agent *a);

static void
iso_job_done(void *arg)
{
	struct iso_job *j = arg;
	struct agent *a = agent_rt_get(j->rt, j->id);
	struct sub_state *st;
	struct err e;

	j->rt->working--;
	if (j->op == ISO_SETTLE)
		agent_rt_linger(j->rt, -1);
	st = a ? agent_state(a, &subagent_ext) : NULL;
	if (a == NULL || a->released || st == NULL || st->iso_arg != j) {
		/* released meanwhile: what git did is not logged; the parent's next load settles it
		 * again from its log (subagent_redeliver) */
		iso_job_free(j);
		return;
	}
	a->finishing = 0;
	st->iso_job = NULL;
	st->iso_arg = NULL;
	err_clear(&e);
	if (j->op == ISO_READD) {
		if (!j->ok)
			log_error("subagent %s: its worktree could not be added back: %s", j->id, j->why);
		if (!j->ok || sub_iso_created(a, &e) < 0)
			st->iso = SUB_ISO_PRESENT;	/* its tools say what is missing */
		if (a->request_held)
			agent_request_release(a);
		else
			sub_settle_again(a);	/* the turn that waited was cancelled meanwhile */
		iso_job_free(j);
		return;
	}
	if (!j->ok)
		log_error("subagent %s: worktree %s: %s", j->id, j->wt.path, j->why);
	if (j->ok && (sess_append(a->sess, "worktree/committed", xjson_pack("{s:s, s:i, s:i, s:i}", "commit",
		j->c.commit, "files", (json_int_t)j->c.files, "insertions", (json_int_t)j->c.insertions, "deletions",
		(json_int_t)j->c.deletions), &e) == NULL || sess_append(a->sess, "worktree/removed",
		xjson_pack("{s:b}", "branchDeleted", j->branch_deleted), &e) == NULL))
		log_error("subagent %s: %s", j->id, e.msg);
	iso_work_line(st, j);
	st->iso = SUB_ISO_ABSENT;
	iso_job_free(j);
	if (a->rt->shutting_down) {
		/* the process exits: its settlement is logged now, then it goes as the shutdown would
		 * have let it */
		sub_settle_at_exit(a);
		agent_release(a);
		return;
	}
	if (st->mode == SUBAGENT_ONESHOT) {
		sub_oneshot_finished(a);
		return;
	}
	if (a->request_held)
		iso_ensure(a);		/* a turn began meanwhile: its worktree back first */
	else
		sub_settle_again(a);
}

static void
iso_start(struct agent *a, enum iso_op op)
{
	struct sub_state *st = sub_state(a);
	struct iso_job *j = xcalloc(1, sizeof(*j));
	const struct git_wt *wt = a->comp.wt;

	j->rt = a->rt;
	snprintf(j->id, sizeof(j->id), "%s", agent_id(a));
	j->op = op;
	j->wt.repo = xstrdup(wt->repo);
	j->wt.subdir = xstrdup(wt->subdir);
	j->wt.branch = xstrdup(wt->branch);
	j->wt.base = xstrdup(wt->base);
	j->wt.path = xstrdup(wt->path);
	j->message = xstrdup(*sub_label(a) ? sub_label(a) : agent_id(a));
	iso_date(a->rt, j->date, sizeof(j->date));
	j->ceiling = xasprintf("%s/worktrees", a->rt->env->state_dir);
	j->recovering = st->iso == SUB_ISO_UNKNOWN;	/* loaded, not made or added back here */
	st->iso = SUB_ISO_BUSY;
	st->iso_arg = j;
	a->rt->working++;	/* the run is not idle until it is done */
	if (op == ISO_SETTLE) {
		agent_rt_linger(a->rt, 1);	/* a commit is never cut off: the exit waits for it */
		a->finishing = 1;		/* and logs it */
	}
	st->iso_job = offload_start(a->rt->loop, a->rt->runq, iso_job_run, iso_job_done, j);
}

/* The worktree there before the held request goes. */
static void
iso_ensure(struct agent *a)
{
	struct sub_state *st = sub_state(a);

	if (st->iso == SUB_ISO_PRESENT)
		agent_request_release(a);
	else if (st->iso != SUB_ISO_BUSY)
		iso_start(a, ISO_READD);
}

int
sub_iso_settle(struct agent *a)
{
	struct sub_state *st = sub_state(a);

	if (a->comp.wt == NULL || st->iso == SUB_ISO_ABSENT)
		return 0;
	if (st->iso != SUB_ISO_BUSY) {
		agent_worktree_leaving(a);	/* its jobs, first: nothing writes while it is committed */
		iso_start(a, ISO_SETTLE);
	}
	return 1;
}

int
sub_iso_hold(struct agent *a, int first)
{
	struct sub_state *st;

	(void)first;
	if (a->comp.wt == NULL)
		return 0;
	st = sub_state(a);
	if (st->iso == SUB_ISO_PRESENT)
		return 0;
	if (st->iso != SUB_ISO_BUSY)
		iso_start(a, ISO_READD);
	return 1;
}

void
sub_iso_release(struct agent *a)
{
	struct sub_state *st = agent_state(a, &subagent_ext);
	struct offload *job;
	struct iso_job *j;

	if (st == NULL || st->iso_job == NULL)
		return;
	job = st->iso_job;
	j = st->iso_arg;
	st->iso_job = NULL;
	st->iso_arg = NULL;
	if (j->op == ISO_SETTLE)
		return;		/* it finishes (lingering): its done finds the agent gone and only frees */
	offload_cancel(job);	/* adding back: joined; the next turn adds it again */
	a->rt->working--;
	iso_job_free(j);
}

/* ---- after a crash: worktrees nobody can use ---- */

struct iso_sweep {
	struct agent_rt *rt;
	struct sess_env *env;	/* borrowed, read only: its paths are fixed while the process runs */
	char *dir;
	int removed;
};

/* On the sweep's thread: the env's paths are read-only once the process runs. */
static int
iso_published(const char *child_id, void *arg)
{
	char *path = sess_env_path(arg, child_id);
	int yes = access(path, F_OK) == 0 || errno != ENOENT;	/* unsure is published: never undo */

	free(path);
	return yes;
}

static void
iso_sweep_run(void *arg, const atomic_int *cancel)
{
	struct iso_sweep *w = arg;

	(void)cancel;
	w->removed = git_wt_sweep(w->dir, iso_published, w->env);
}

static void
iso_sweep_done(void *arg)
{
	struct iso_sweep *w = arg;

	if (w->removed)
		log_info("worktrees: %d left by a crash removed from %s", w->removed, w->dir);
	agent_rt_linger(w->rt, -1);
	free(w->dir);
	free(w);
}

void
agent_rt_sweep_worktrees(struct agent_rt *rt)
{
	struct iso_sweep *w = xcalloc(1, sizeof(*w));

	w->rt = rt;
	w->env = rt->env;
	w->dir = xasprintf("%s/worktrees", rt->env->state_dir);
	agent_rt_linger(rt, 1);
	offload_start(rt->loop, rt->runq, iso_sweep_run, iso_sweep_done, w);
}
