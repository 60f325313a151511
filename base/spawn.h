/*
 * Starting a child process the way every process we run is started (docs/contract.md §16.3 bash, §18 MCP
 * servers): its own session and process group (setsid), death with us (PR_SET_PDEATHSIG
 * SIGKILL), default signal dispositions and an empty mask, the given fds as 0, 1 and 2 and no
 * other, an optional working directory. The exec's failure comes back through a close-on-exec
 * pipe, so the caller knows at once whether the program started. The caller owns the pid: it
 * reaps it, and kills the group on every orderly path.
 */
#ifndef BASE_SPAWN_H
#define BASE_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

enum spawn_stage { SPAWN_OK, SPAWN_SETUP, SPAWN_CHDIR, SPAWN_EXEC };

/* Every pointer is borrowed for the call. */
struct spawn_opts {
	const char *path;		/* the program (spawn_find resolves a bare name) */
	char *const *argv;
	char *const *envp;
	const char *workdir;		/* NULL: ours */
	int fd[3];			/* the child's stdin, stdout, stderr; -1: /dev/null */
};

/*
 * Starts the child the way vfork does (it shares our memory until its exec; this thread waits)
 * and execs. Returns the pid, or -1 with *stage (where it failed) and *err (errno); a child that
 * failed has been reaped. Signals are blocked around the clone, so no handler of ours runs in
 * the child.
 */
pid_t spawn_start(const struct spawn_opts *o, enum spawn_stage *stage, int *err);
/* name with '/' as is, else the first executable of that name on path (NULL: our PATH), else NULL. Owned. */
char *spawn_find(const char *name, const char *path);
/*
 * Our environment minus every ACP_AGENT_* variable, with extra (n "NAME=value" strings,
 * borrowed) added or replacing ours. An owned array of borrowed strings: free() it only.
 */
char **spawn_env(char *const *extra, size_t n);
/* "SIGTERM", or "signal 40"; writes buf and returns it. */
const char *spawn_signame(int signo, char *buf, size_t size);

#endif
