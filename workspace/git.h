/*
 * git for isolated children (docs/contract.md §24): a child's worktree made, committed, removed and
 * added back. Each call runs git and waits for it, so it belongs on an offload thread, never on
 * the loop. Every git process is started as our other processes are (base/spawn.c: its own
 * group, killed if we die) and reaped here; a cancel flag set meanwhile kills its group.
 * Nothing here knows an agent: paths, ids and texts in, facts and reasons out.
 */
#ifndef WORKSPACE_GIT_H
#define WORKSPACE_GIT_H

#include <stdatomic.h>
#include <stddef.h>

#define GIT_WHY_MAX 512
#define GIT_DEADLINE_S 600

/* How git runs: path (NULL: our PATH) where git is looked for; cancel (NULL: none) stops it (its
 * group killed); date (NULL: now) the time of the commits it makes, as git reads it ("@<secs>
 * +0000": a deterministic run's). Every pointer borrowed; a NULL ctx is all NULL. Every run drops
 * the caller's GIT_DIR-like variables, turns off hooks, signing and fsmonitor, is stopped after
 * GIT_DEADLINE_S, and is ended SIGTERM first (git removes its lock files), SIGKILL 2 s later. */
struct git_ctx {
	const char *path;
	const atomic_int *cancel;
	const char *date;
	const char *ceiling;	/* GIT_CEILING_DIRECTORIES: git never looks above it (NULL: none) */
};

/* A child's worktree: every string owned. */
struct git_wt {
	char *repo;		/* the repository's top level */
	char *subdir;		/* the workspace's path inside it, "" at the top */
	char *branch;		/* acp-agent/<8 hex> */
	char *base;		/* the full commit id the branch starts from */
	char *path;		/* the worktree directory */
};

/* What a commit brought: the branch against its base. */
struct git_commit {
	char commit[64];	/* the branch's head, "" when nothing was committed */
	int files, insertions, deletions;
};

/*
 * Whether workspace lies in a git work tree whose repository has a commit, and git is on the
 * path: 0 with *repo and *subdir (owned), or -1 with why (the reason for
 * "worktree isolation needs a git repository: <why>").
 */
int git_wt_probe(const char *workspace, const struct git_ctx *ctx, char **repo, char **subdir,
    char *why);
/*
 * Makes child_id's worktree under dir (dir/<child_id>) on a new branch, from workspace's tracked
 * changes (git stash create) or HEAD. 0 with wt filled and *claim, or -1 with why (git's first
 * "fatal: " or "error: " line, else its last, or ours); then no branch or directory of ours is
 * left.
 * The claim (dir/.<child_id>.claim, naming the repository, branch and base) is written and locked
 * before git adds anything, and stays until git_wt_unclaim: a process that dies before the child
 * it was made for is published leaves it unlocked, and the next sweep removes what it names.
 */
int git_wt_create(const char *workspace, const char *repo, const char *subdir, const char *child_id, const char *dir,
    const struct git_ctx *ctx, struct git_wt *wt, int *claim, char *why);
/* The child is published (its log holds it): its claim goes. claim < 0 is nothing. */
void git_wt_unclaim(const char *dir, const char *child_id, int claim);
/* Adds wt's worktree back at wt->path on its branch (a cold resume). 0, or -1 with why. */
int git_wt_readd(const struct git_wt *wt, const struct git_ctx *ctx, char *why);
/* After a crash: the lock files a killed git left for wt (its worktree's index.lock and HEAD.lock,
 * its branch's ref lock; ours alone) are removed. Only while no git of ours can be at work on it.
 * Returns how many. */
int git_wt_unlock(const struct git_wt *wt);
/* Commits everything in the worktree (author and committer acp-agent <acp-agent@localhost>,
 * message as given, hooks skipped), nothing when nothing changed, and counts the branch against
 * its base. 0 with c, or -1 with why. */
int git_wt_commit(const struct git_wt *wt, const char *message, const struct git_ctx *ctx,
    struct git_commit *c, char *why);
/* The branch against its base when its worktree is gone (nothing to commit). 0 with c, or -1. */
int git_wt_count(const struct git_wt *wt, const struct git_ctx *ctx, struct git_commit *c, char *why);
/* Removes the worktree directory, and the branch when it has no commit beyond its base
 * (*branch_deleted). 0, or -1 with why. */
int git_wt_remove(const struct git_wt *wt, const struct git_ctx *ctx, int *branch_deleted, char *why);
/* Removes the worktree at path for good (its session is deleted): git's record and the directory,
 * the branch kept. 0 (also when there is none), or -1 with why, the directory left. */
int git_wt_discard(const char *path, char *why);
/* Whether the child of that id was published (its log exists): the sweep's question. */
typedef int git_published_fn(const char *child_id, void *arg);
/* The worktrees directory swept after a crash: each claim nobody holds goes, with the worktree
 * and branch it names when its child was never published; each directory git never finished
 * making (no .git file) and not touched in the last hour is removed, whole; one whose .git names a
 * git directory that is gone is left (it may hold work) and warned about. Returns how many
 * worktrees were removed. */
int git_wt_sweep(const char *dir, git_published_fn *published, void *arg);
void git_wt_free(struct git_wt *wt);

#endif
