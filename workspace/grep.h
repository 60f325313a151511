/*
 * grep (docs/contract.md §16.1): lines of files under a path that match a POSIX extended regular expression.
 *
 * Matching: regcomp(REG_EXTENDED | REG_NEWLINE) in the process's locale (bytes in the C locale,
 * which the agent keeps); one line at a time, as `grep -E` matches: a match never spans a
 * newline, and a pattern holding one is INVALID_ARGUMENT. A '{' that opens no interval is a
 * literal '{', as GNU grep reads it ("struct s {"; POSIX leaves it undefined, regcomp refuses).
 * A pattern without any of .[]()*+?{}|^$\ is a literal, found with memmem, with the same
 * results as the regex. Otherwise the longest literal run every match must hold (if any) is
 * searched first, and only the lines holding it go to regexec.
 *
 * Files: path may be a file or a directory; include (NULL: none) is one fnmatch glob on the
 * basename ("*.c"; with a '/' it is INVALID_ARGUMENT); a file with a NUL byte in its first
 * 8 KiB is binary and skipped. The walk is ws_walk's (workspace/walk.h):
 * symlinks never followed, VCS entries skipped, unreadable files skipped silently. Files and
 * their lines come in path order, always (so --deterministic changes nothing here).
 *
 * Result text (ws_grep), no trailing newline:
 *     src/a.c
 *       12: the matching line
 *       40: another
 *     src/b.c
 *       3: ...
 * A path line (relative to the root; \n, \r and invalid UTF-8 shown as by ws_walk_show) heads
 * each file's lines; each line is "  <n>: <text>" with a trailing CR dropped and invalid UTF-8
 * as U+FFFD. A line over WS_GREP_LINE_MAX bytes shows WS_GREP_LINE_MAX bytes around its first
 * match, the rest as "[… <n> bytes]" before and after. At most WS_GREP_MAX lines; when more
 * match, a last line `[cut at 250 matching lines; narrow the pattern, path or include]` (the
 * search stops there, so no total is given). No match: exactly `no matches for <pattern>`.
 *
 * Bounded work per file: the memory a search holds is at most WS_GREP_LINE_CAP bytes of a file,
 * however long its lines. A line longer than that (a minified bundle, a file with no newline at
 * all) is matched on its first WS_GREP_LINE_CAP bytes only, as if it ended there ('$' does not
 * match at the cut); the rest is read past in chunks, and a hit on such a line ends in
 * "[… over <n> bytes]". Such lines are counted, and the text ends with a note
 *     [2 lines longer than 1 MiB were searched in their first 1 MiB only; the first: a.js:1]
 * (also after `no matches for <pattern>`), so a miss past the cut is never silent. A file is read
 * up to the size it had when it was opened (one that reports size 0, as /proc's, up to
 * WS_GREP_LINE_CAP): a file that keeps growing cannot keep a search going.
 *
 * Synchronous, thread-safe, no global state: run it on a worker; *cancel non-zero stops it
 * between files and between reads (at most WS_GREP_LINE_CAP bytes each; CANCELLED). A regexec
 * call itself cannot be stopped (a pattern with back-references can take exponential time on
 * one line): a caller that must be able to stop a search runs it in a process it can kill
 * (tools/ws_search.c does, through base/isolate.h).
 */
#ifndef WORKSPACE_GREP_H
#define WORKSPACE_GREP_H

#include <stdatomic.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"

#define WS_GREP_MAX 250
#define WS_GREP_LINE_MAX 2000
#define WS_GREP_LINE_CAP ((size_t)1024 * 1024)	/* bytes of one line searched (and held) */

/* What a search met besides its hits; filled from zero by the call. */
struct ws_grep_stats {
	size_t long_lines;	/* lines over WS_GREP_LINE_CAP, searched in their head only */
	char *long_rel;		/* owned (free it): the first one's file as shown, or NULL */
	size_t long_line_no;	/* ... and its line number */
	size_t buf_max;		/* the most bytes the read buffer held room for */
};

/* Borrowed for the call. */
struct ws_grep_opts {
	const char *root;		/* workspace root, absolute: paths show relative to it */
	const char *path;		/* absolute file or directory to search (confined) */
	const char *pattern;		/* POSIX ERE */
	const char *include;		/* basename glob, or NULL */
	const atomic_int *cancel;	/* may be NULL */
};

/* One matching line; borrowed for the callback. */
struct ws_grep_hit {
	const char *rel;	/* the file as shown */
	size_t file_no;		/* rises by one per file searched: a new value starts a new file */
	size_t line_no;		/* 1-based */
	const char *line;	/* the line's bytes, without its newline (a CR stays) */
	size_t len;
	size_t so, eo;		/* the first match in it: line[so..eo) */
	int clipped;		/* the line goes on past len == WS_GREP_LINE_CAP (not searched) */
};

/* Called for every matching line in order; 0 goes on, 1 stops. */
typedef int ws_grep_fn(void *arg, const struct ws_grep_hit *h);

/*
 * Every matching line, uncapped and uncut (the raw form: tests, other callers). 0, or -1 with
 * e: INVALID_ARGUMENT (the regcomp error, a newline in the pattern, include, path neither file
 * nor directory), FS_NOT_FOUND, CANCELLED.
 */
int ws_grep_each(const struct ws_grep_opts *o, ws_grep_fn *fn, void *arg, struct err *e);
/* The same, and what the search met besides its hits into *stats (filled from zero, also on an
 * error; free stats->long_rel). */
int ws_grep_each_stats(const struct ws_grep_opts *o, ws_grep_fn *fn, void *arg,
    struct ws_grep_stats *stats, struct err *e);
/* The result text appended to out (initialised by the caller); errors as ws_grep_each's. */
int ws_grep(const struct ws_grep_opts *o, struct buf *out, struct err *e);

#endif
