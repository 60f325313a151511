/*
 * Work that may never come back, in a child process that can be killed. A thread cannot be
 * stopped inside a call that does not look at a flag (regexec on a back-reference pattern can
 * backtrack for longer than anyone waits), but a process can: isolate_run forks, the child runs
 * fn and sends the bytes it produced back through a pipe, and the caller collects them. On a
 * cancel the caller SIGKILLs the child and reaps it before returning: the call is the child's
 * one owner, and no path leaves it running or unreaped. Should our whole process die first,
 * PR_SET_PDEATHSIG kills the child with the thread that forked it.
 *
 * isolate_run blocks: call it on a worker thread (base/offload.h), never on the loop.
 *
 * The child is a fork, without exec, of a threaded process: fn may use malloc (glibc's fork
 * leaves it usable), the file system and libc's pure functions (regex, fnmatch), and must take
 * no lock another thread may hold (no log_*, no stdio, nothing the loop touches). It runs with
 * every signal blocked, stdin and stdout on /dev/null and no other fd of ours but stderr.
 */
#ifndef BASE_ISOLATE_H
#define BASE_ISOLATE_H

#include <stdatomic.h>

#include "base/buf.h"

#define ISOLATE_MAX ((size_t)64 * 1024 * 1024)	/* the most bytes a child may send back */

/* In the child: appends its result to out (initialised); the child then ends. */
typedef void isolate_fn(void *arg, struct buf *out);

/*
 * Runs fn(arg, out) in a child process and waits for it, or for a cancel: *cancel non-zero (read
 * every 10 ms when there is no wake_fd, else every 100 ms) or wake_fd readable (an eventfd or a
 * pipe the canceller writes to; -1 for none; never read here). Returns
 *    0  the child's bytes appended to out;
 *    1  cancelled: the child was killed and reaped;
 *   -1  no result: *status is the child's wait status when it ended without a whole one (or sent
 *       more than ISOLATE_MAX bytes: then it was killed), or -1 when no child could be started
 *       (errno says why; the caller may do the work itself).
 * cancel may be NULL; status may be NULL.
 */
int isolate_run(isolate_fn *fn, void *arg, struct buf *out, const atomic_int *cancel, int wake_fd,
    int *status);

#endif
