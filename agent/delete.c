/*
 * Deleting a root session and everything of its tree (docs/contract.md §27): the logs, the spill
 * directories, the children's worktrees (their branches kept).
 *
 * Crash-safe by a tombstone: <sessions>/.<root>.deleting, naming every id of the tree one per
 * line, is written (synced) and renamed into place before anything goes; then the root's log is
 * unlinked, which is the moment the session is gone for every reader. The rest (off the loop:
 * git) removes each id's worktree, spill directory and log, and the tombstone last. A process
 * killed anywhere leaves the session whole (no tombstone yet) or a tombstone the next start-up
 * finishes, never a tree whose root is listed with parts missing.
 */
#include "agent/agent_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/offload.h"
#include "base/xmalloc.h"
#include "session/corpus.h"
#include "session/id.h"
#include "workspace/git.h"

#define DELETE_SUFFIX ".deleting"

struct agent_delete {
	struct agent_rt *rt;
	char *state_dir, *dir;		/* <state>, <state>/sessions */
	char root[SESS_ID_LEN + 1];
	char **ids;			/* the tree, the root first */
	size_t n;
	agent_delete_done_fn *done;	/* NULL: a start-up's, nobody waits */
	void *arg;
	int failed;			/* something could not be removed (said in the log) */
};

static void
del_free(struct agent_delete *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->ids[i]);
	free(d->ids);
	free(d->state_dir);
	free(d->dir);
	free(d);
}

static void
del_add(struct agent_delete *d, const char *id)
{
	d->ids = xrealloc(d->ids, (d->n + 1) * sizeof(*d->ids));
	d->ids[d->n++] = xstrdup(id);
}

/* nftw's step of a removal. */
static int
del_rm_step(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 ? -1 : 0;
}

/* On a worker: every id's worktree, spill directory and log, then the tombstone. */
static void
del_run(void *arg, const atomic_int *cancel)
{
	struct agent_delete *d = arg;

	(void)cancel;	/* finished whatever: the tombstone says it is to be done */
	for (size_t i = d->n; i-- > 0;) {
		char why[GIT_WHY_MAX] = "", *p = xasprintf("%s/worktrees/%s", d->state_dir, d->ids[i]);
		struct stat st;
		if (git_wt_discard(p, why) < 0) {
			log_warn("delete %s: worktree %s: %s", d->root, p, why);
			d->failed = 1;
		}
		free(p);
		p = xasprintf("%s/spill/%s", d->state_dir, d->ids[i]);
		if (lstat(p, &st) == 0 && nftw(p, del_rm_step, 16, FTW_DEPTH | FTW_PHYS) < 0) {
			log_warn("delete %s: %s: %s", d->root, p, strerror(errno));
			d->failed = 1;
		}
		free(p);
		p = xasprintf("%s/%s.jsonl", d->dir, d->ids[i]);
		if (unlink(p) < 0 && errno != ENOENT) {
			log_warn("delete %s: %s: %s", d->root, p, strerror(errno));
			d->failed = 1;
		}
		free(p);
	}
	if (!d->failed) {
		char *t = xasprintf("%s/.%s" DELETE_SUFFIX, d->dir, d->root);
		unlink(t);
		free(t);
	}
}

static void
del_done(void *arg)
{
	struct agent_delete *d = arg;

	agent_rt_linger(d->rt, -1);
	/* the corpus sees the files gone (each entry re-read) */
	for (size_t i = 0; i < d->n; i++)
		(void)sess_corpus_get(d->rt->corpus, d->ids[i]);
	if (d->done)
		d->done(d->arg, NULL);
	else
		log_info("delete %s: finished after a restart (%zu session(s))", d->root, d->n);
	del_free(d);
}

static void
del_start(struct agent_delete *d)
{
	agent_rt_linger(d->rt, 1);	/* the exit waits for it */
	offload_start(d->rt->loop, d->rt->runq, del_run, del_done, d);
}

/* Whether another process holds id's log (a writer, or a viewer). */
static int
del_held(const char *dir, const char *id)
{
	char *p = xasprintf("%s/%s.jsonl", dir, id);
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), held = 0;

	free(p);
	if (fd < 0)
		return 0;
	held = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

struct agent_delete *
agent_rt_delete_plan(struct agent_rt *rt, const char *root, struct err *e)
{
	struct sess_entry *en = sess_corpus_get(rt->corpus, root);
	struct agent_delete *d;

	if (en == NULL || en->gone) {
		err_set(e, ERR_UNKNOWN_SESSION, "unknown session");
		return NULL;
	}
	if (en->parent) {
		err_set(e, ERR_CHILD_SESSION, "session %s is a subagent session: only its root session can be deleted",
		    root);
		return NULL;
	}
	d = xcalloc(1, sizeof(*d));
	d->rt = rt;
	d->state_dir = xstrdup(rt->env->state_dir);
	d->dir = xstrdup(rt->env->dir);
	snprintf(d->root, sizeof(d->root), "%s", root);
	/* the tree, breadth first from the corpus's lineage */
	del_add(d, root);
	for (size_t i = 0; i < d->n; i++) {
		size_t nk;
		struct sess_entry **kids = sess_corpus_children(rt->corpus, d->ids[i], &nk);
		for (size_t k = 0; k < nk; k++)
			if (!kids[k]->gone)
				del_add(d, kids[k]->id);
		free(kids);
	}
	/* nothing goes while another process holds any of it */
	for (size_t i = 0; i < d->n; i++) {
		if (agent_rt_get(rt, d->ids[i]) == NULL && del_held(d->dir, d->ids[i])) {
			err_set(e, ERR_SESSION_BUSY, "session %s is held by another process", d->ids[i]);
			del_free(d);
			return NULL;
		}
	}
	return d;
}

void
agent_delete_abandon(struct agent_delete *d)
{
	del_free(d);
}

int
agent_delete_go(struct agent_delete *d, agent_delete_done_fn *done, void *arg, struct err *e)
{
	struct agent_rt *rt = d->rt;
	struct buf tomb;
	char *t;
	int sync = rt->env->sync != SESS_SYNC_NONE;

	d->done = done;
	d->arg = arg;
	/* ours: stopped and closed (the root's ACP session was closed by the caller) */
	for (size_t i = d->n; i-- > 0;) {
		struct agent *a = agent_rt_get(rt, d->ids[i]);
		if (a)
			agent_release(a);
	}
	buf_init(&tomb);
	for (size_t i = 0; i < d->n; i++)
		buf_printf(&tomb, "%s\n", d->ids[i]);
	t = xasprintf("%s/.%s" DELETE_SUFFIX, d->dir, d->root);
	if (atomic_write(t, tomb.data, tomb.len, 0600, sync ? ATOMIC_SYNC : 0) < 0) {
		err_set(e, ERR_SESSION_LOG_IO, "cannot delete session %s: cannot write %s: %s", d->root, t, strerror(errno));
		free(t);
		buf_free(&tomb);
		del_free(d);
		return -1;
	}
	free(t);
	buf_free(&tomb);
	/* the moment it is gone: its log's name */
	t = xasprintf("%s/%s.jsonl", d->dir, d->root);
	if (unlink(t) < 0 && errno != ENOENT)
		log_warn("delete %s: %s: %s (the tombstone finishes it at the next start)", d->root, t, strerror(errno));
	free(t);
	if (sync) {
		int dfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			(void)fsync(dfd);
			close(dfd);
		}
	}
	(void)sess_corpus_get(rt->corpus, d->root);	/* gone from the listing from here */
	if (rt->env->faults.exit_in_delete) {
		log_warn("fault: exit-in-delete reached");
		_exit(3);
	}
	del_start(d);
	return 0;
}

void
agent_rt_finish_deletes(struct agent_rt *rt)
{
	DIR *dir = opendir(rt->env->dir);
	struct dirent *de;

	if (dir == NULL)
		return;
	while ((de = readdir(dir)) != NULL) {
		size_t len = strlen(de->d_name), sl = strlen(DELETE_SUFFIX);
		char root[SESS_ID_LEN + 1], line[128], *p;
		FILE *f;
		if (de->d_name[0] != '.' || len != 1 + SESS_ID_LEN + sl || strcmp(de->d_name + len - sl, DELETE_SUFFIX) != 0)
			continue;
		snprintf(root, sizeof(root), "%.*s", SESS_ID_LEN, de->d_name + 1);
		if (!sess_id_valid(root))
			continue;
		p = xasprintf("%s/%s", rt->env->dir, de->d_name);
		f = fopen(p, "re");
		free(p);
		if (f == NULL)
			continue;
		struct agent_delete *d = xcalloc(1, sizeof(*d));
		d->rt = rt;
		d->state_dir = xstrdup(rt->env->state_dir);
		d->dir = xstrdup(rt->env->dir);
		snprintf(d->root, sizeof(d->root), "%s", root);
		/* the tombstone is read from disk: only ids, the root first */
		while (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			if (sess_id_valid(line) && (d->n > 0 || strcmp(line, root) == 0))
				del_add(d, line);
		}
		fclose(f);
		if (d->n == 0)
			del_add(d, root);
		log_warn("delete %s: cut off by a crash; finishing it", root);
		del_start(d);
	}
	closedir(dir);
}
