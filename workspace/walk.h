/*
 * The tree walk under glob and grep (docs/contract.md §16.1). It visits regular files only, in path order
 * (bytewise strcmp of the whole path), and:
 * - never follows a symlink: a link to a file or to a directory is skipped, as `find -type f` and
 *   `grep -r` skip them, so a link can never lead a search out of the workspace;
 * - skips the VCS entries .git, .hg, .svn, .bzr and .jj, directories or files (a worktree's .git
 *   is a file), and devices, FIFOs and sockets;
 * - skips silently what it cannot open or read (a search shows what it can read);
 * - holds at most WS_WALK_FDS + 2 directories open (the fds are the process's): deeper ones are
 *   reopened one component at a time from the last one held, never through a symlink.
 * A start given explicitly is followed when it is a symlink and is searched even when its name
 * is a VCS one. No global state: one walk per call, on any thread; cancel is read between entries.
 */
#ifndef WORKSPACE_WALK_H
#define WORKSPACE_WALK_H

#include <stdatomic.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"

#define WS_WALK_FDS 32

/* A file being visited; every pointer is borrowed for the callback only. */
struct ws_walk_file {
	int dirfd;		/* its directory, open (openat); -1 for a start file: use path */
	const char *name;	/* its entry name (for a start file, its basename) */
	const char *path;	/* absolute path */
	const char *rel;	/* as shown: relative to the root, or absolute when outside it */
};

struct ws_walk_ops {
	/* May be NULL. A directory at depth (1: in the start directory) is next; 0 skips it. */
	int (*enter)(void *arg, const char *name, int depth);
	/* A regular file in a directory at depth (0: the start, or the start itself as a file).
	 * 0 goes on, 1 ends the walk (ws_walk returns 0), -1 ends it with e set. */
	int (*file)(void *arg, const struct ws_walk_file *f, int depth, struct err *e);
};

/*
 * Walks start (absolute; a directory, or also a regular file when allow_file) and prints paths
 * relative to root (absolute, no trailing slash but for "/"). Returns 0, or -1 with e:
 * FS_NOT_FOUND (start does not exist), INVALID_ARGUMENT (not a directory, or not a file either
 * when allow_file; unreadable), CANCELLED (*cancel became non-zero), or the callback's error.
 * root, start, ops: borrowed; arg: the callbacks'; cancel: may be NULL.
 */
int ws_walk(const char *root, const char *start, int allow_file, const struct ws_walk_ops *ops,
    void *arg, const atomic_int *cancel, struct err *e);

/* path as the walk shows it: a pointer into path past "<root>/", "." for root itself, else path. */
const char *ws_walk_rel(const char *root, const char *path);

/* Appends s[0..n) as text of one line: \n and \r shown as such, invalid UTF-8 as U+FFFD. */
void ws_walk_show(struct buf *out, const char *s, size_t n);	/* s: borrowed */

#endif
