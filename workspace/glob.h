/*
 * glob (docs/contract.md §16.1): files (not directories) whose path under dir matches a pattern.
 *
 * Pattern: fnmatch(3) segments split at '/', without FNM_PERIOD (`*` matches a leading dot, as
 * `find -name` does). A segment "**" matches any number of directories, none included: the
 * segments "**" and "*.c" match a.c and x/y/a.c; a last segment "**" matches every file below.
 * A pattern without '/' matches basenames at any depth ("*.c" is those two segments). Empty
 * and "." segments are dropped ("./src//a.c" is "src/a.c"); INVALID_ARGUMENT for an empty
 * pattern, a leading '/', a ".." segment or more than 64 segments. The walk is ws_walk's
 * (workspace/walk.h): symlinks are never followed (a link to a file is not listed), VCS entries
 * are skipped, and directories no match can lie under are not entered.
 *
 * Result text (ws_glob): one path per line, relative to the root, no trailing newline; at most
 * WS_GLOB_MAX paths, newest first (mtime, ties by path), or by path when deterministic. When more
 * matched, a last line `[100 of <n> files shown; narrow the pattern or path]`. No match: exactly
 * `no files match <pattern>`. A newline or CR in a name shows as \n or \r, invalid UTF-8 as
 * U+FFFD, so the text is valid UTF-8 and one line is one file.
 *
 * Synchronous, thread-safe, no global state: run it on a worker; *cancel non-zero stops it
 * between entries (CANCELLED).
 */
#ifndef WORKSPACE_GLOB_H
#define WORKSPACE_GLOB_H

#include <stdatomic.h>

#include "base/buf.h"
#include "base/err.h"
#include "workspace/walk.h"

#define WS_GLOB_MAX 100

/* Borrowed for the call. */
struct ws_glob_opts {
	const char *root;		/* workspace root, absolute: paths show relative to it */
	const char *dir;		/* absolute directory to search (already confined) */
	const char *pattern;
	int deterministic;		/* order by path instead of newest first */
	const atomic_int *cancel;	/* may be NULL */
};

/* Called for every match, in path order (f: borrowed for the call); 0 goes on, 1 stops. */
typedef int ws_glob_fn(void *arg, const struct ws_walk_file *f);

/*
 * Every match, uncapped (the raw form: tests, other callers). 0, or -1 with e: INVALID_ARGUMENT
 * (pattern, dir not a directory), FS_NOT_FOUND, CANCELLED.
 */
int ws_glob_each(const struct ws_glob_opts *o, ws_glob_fn *fn, void *arg, struct err *e);
/* The result text appended to out (initialised by the caller); errors as ws_glob_each's. */
int ws_glob(const struct ws_glob_opts *o, struct buf *out, struct err *e);

#endif
