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
	int *locks;			/* the tree's logs, held (LOCK_EX) until they are unlinked */
	size_t nlocks;
	int tomb;			/* the tombstone, held while the deletion runs, or -1 */
};

static void
del_free(struct agent_delete *d)
{
	for (size_t i = 0; i < d->nlocks; i++)
		close(d->locks[i]);
	free(d->locks);
	if (d->tomb >= 0)
		close(d->tomb);
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

/* On a worker: what could not be removed, said (strerror_r: strerror is not the thread's own). */
static void
del_warn(struct agent_delete *d, const char *path, int err)
{
	char buf[128];

	log_warn("delete %s: %s: %s", d->root, path, strerror_r(err, buf, sizeof(buf)));
	d->failed = 1;
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
			del_warn(d, p, errno);
		}
		free(p);
		p = xasprintf("%s/%s.jsonl", d->dir, d->ids[i]);
		if (unlink(p) < 0 && errno != ENOENT) {
			del_warn(d, p, errno);
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

/* Holds id's log (LOCK_EX) for d: 0, or -1 when another holds it (a writer, or a viewer); a log
 * that is not there is nothing to hold. */
static int
del_lock(struct agent_delete *d, const char *id)
{
	char *p = xasprintf("%s/%s.jsonl", d->dir, id);
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	free(p);
	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return -1;
	}
	d->locks = xrealloc(d->locks, (d->nlocks + 1) * sizeof(*d->locks));
	d->locks[d->nlocks++] = fd;
	return 0;
}

static struct agent_delete *
del_new(struct agent_rt *rt, const char *root)
{
	struct agent_delete *d = xcalloc(1, sizeof(*d));

	d->rt = rt;
	d->tomb = -1;
	d->state_dir = xstrdup(rt->env->state_dir);
	d->dir = xstrdup(rt->env->dir);
	snprintf(d->root, sizeof(d->root), "%s", root);
	return d;
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
	d = del_new(rt, root);
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
	/* nothing goes while another process holds any of it; from here no other can take it */
	for (size_t i = 0; i < d->n; i++) {
		if (agent_rt_get(rt, d->ids[i]) == NULL && del_lock(d, d->ids[i]) < 0) {
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

/* fsyncs the sessions directory (when logs are synced at all). */
static void
del_sync_dir(const struct agent_delete *d)
{
	int dfd;

	if (d->rt->env->sync == SESS_SYNC_NONE || (dfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	(void)fsync(dfd);
	close(dfd);
}

int
agent_delete_mark(struct agent_delete *d, struct err *e)
{
	struct buf tomb;
	char *t, *log;
	int rc = 0;

	buf_init(&tomb);
	for (size_t i = 0; i < d->n; i++)
		buf_printf(&tomb, "%s\n", d->ids[i]);
	t = xasprintf("%s/.%s" DELETE_SUFFIX, d->dir, d->root);
	log = xasprintf("%s/%s.jsonl", d->dir, d->root);
	if (atomic_write(t, tomb.data, tomb.len, 0600, d->rt->env->sync != SESS_SYNC_NONE ? ATOMIC_SYNC : 0) < 0) {
		rc = err_set(e, ERR_SESSION_LOG_IO, "cannot delete session %s: cannot write %s: %s", d->root, t,
		    strerror(errno));
	} else if (unlink(log) < 0 && errno != ENOENT) {
		/* still whole: the tombstone goes again, nothing else was touched */
		rc = err_set(e, ERR_SESSION_LOG_IO, "cannot delete session %s: %s: %s", d->root, log, strerror(errno));
		unlink(t);
	} else {
		/* the moment it is gone for every reader; the tombstone held: a start-up leaves it to us */
		if ((d->tomb = open(t, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) >= 0 && flock(d->tomb, LOCK_EX | LOCK_NB) < 0) {
			close(d->tomb);
			d->tomb = -1;
		}
		del_sync_dir(d);
		(void)sess_corpus_get(d->rt->corpus, d->root);
	}
	free(t);
	free(log);
	buf_free(&tomb);
	if (rc < 0)
		del_free(d);
	return rc;
}

void
agent_delete_go(struct agent_delete *d, agent_delete_done_fn *done, void *arg)
{
	struct agent_rt *rt = d->rt;

	d->done = done;
	d->arg = arg;
	/* ours: stopped and closed (the root's ACP session was closed by the caller); their logs held */
	for (size_t i = d->n; i-- > 0;) {
		struct agent *a = agent_rt_get(rt, d->ids[i]);
		if (a) {
			agent_release(a);
			(void)del_lock(d, d->ids[i]);
		}
	}
	if (rt->env->faults.exit_in_delete) {
		log_warn("fault: exit-in-delete reached");
		_exit(3);
	}
	del_start(d);
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
		int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		free(p);
		/* held: another process is deleting it now */
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0 || (f = fdopen(fd, "r")) == NULL) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		struct agent_delete *d = del_new(rt, root);
		d->tomb = dup(fd);
		/* the tombstone is read from disk: only ids, the root first */
		while (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			if (sess_id_valid(line) && (d->n > 0 || strcmp(line, root) == 0))
				del_add(d, line);
		}
		fclose(f);
		if (d->n == 0)
			del_add(d, root);
		/* its ids are never given again (a deterministic run counts), and its root is gone now,
		 * before anything can list or load it */
		for (size_t i = 0; i < d->n; i++)
			sess_ids_seen(&rt->env->ids, d->ids[i]);
		p = xasprintf("%s/%s.jsonl", rt->env->dir, root);
		unlink(p);
		free(p);
		del_sync_dir(d);
		if (sess_corpus_is_ready(rt->corpus))
			(void)sess_corpus_get(rt->corpus, root);	/* a scan at start-up had it */
		log_warn("delete %s: an earlier deletion did not finish; finishing it", root);
		del_start(d);
	}
	closedir(dir);
}
