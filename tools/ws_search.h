/*
 * The search behind the glob and grep tools (tools/ws_search.c), apart from the tool plumbing so
 * that tests can run it as the tools do.
 */
#ifndef TOOLS_WS_SEARCH_H
#define TOOLS_WS_SEARCH_H

#include <stdatomic.h>

#include "base/buf.h"
#include "base/err.h"

/* One search; every pointer borrowed for the call. */
struct ws_search_req {
	int grep;			/* 1: workspace/grep.h's ws_grep, 0: glob.h's ws_glob */
	const char *root, *path, *pattern;
	const char *include;		/* grep's basename glob, or NULL */
	int deterministic;		/* glob's order */
};

/*
 * Runs q in a child process (base/isolate.h) and waits: blocking, for a worker thread. A cancel
 * (*cancel non-zero, or wake_fd readable; either may be absent) kills the child wherever it is,
 * a regexec included, and returns CANCELLED once it is reaped. 0 with the result text appended
 * to out, or -1 with e: the search's own errors, CANCELLED, or INTERNAL (the search process died
 * without a result). When no process can be started the search runs on the calling thread
 * (*inline_run set; may be NULL): then only the flag stops it, between files and reads.
 */
int ws_search_isolated(const struct ws_search_req *q, const atomic_int *cancel, int wake_fd,
    struct buf *out, struct err *e, int *inline_run);

#endif
