/*
 * The guardian (docs/decisions.md, "Nothing outlives the agent"): a small process the agent
 * starts before it serves, in its own session, holding the read end of a pipe whose write end
 * only the agent has. Every process group spawn_start makes is registered with it, and forgotten
 * once its owner has killed and reaped it. When the agent dies, even by SIGKILL, the pipe reads
 * EOF and the guardian SIGKILLs every group still registered, then exits: a grandchild that
 * PR_SET_PDEATHSIG (the direct child's only) would miss dies too.
 *
 * The write end is the process's one piece of state besides the loop: set once by guard_start,
 * read by guard_add and guard_forget; without a guardian both do nothing (unit tests, the
 * scenario runner).
 */
#ifndef BASE_GUARD_H
#define BASE_GUARD_H

#include <sys/types.h>

#include "base/err.h"

/* Forks the guardian; 0, or -1 with e (the agent then runs without one). */
int guard_start(struct err *e);
/* The process group pgid is ours until guard_forget; the guardian kills it if we die first. */
void guard_add(pid_t pgid);
void guard_forget(pid_t pgid);

#endif
