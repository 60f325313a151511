/*
 * One `bash -c <command>` on the libev loop (docs/contract.md §16.3). The child runs in its own session and
 * process group (setsid), dies with us (PR_SET_PDEATHSIG SIGKILL: the shell only, the rest of its
 * group is killed by our owner on every orderly path), reads /dev/null, writes stdout and stderr
 * into one pipe in order, and gets our environment minus every ACP_AGENT_* variable and no other
 * fd. Every byte of output goes to a spill file (0600, created O_EXCL, kept in every case); the
 * text for the model keeps the first 8 KiB and the last 24 KiB of it with the omitted line
 *   "[… <n> bytes omitted; full output: <spill path>]"
 * on a line of its own between (head and tail cut on UTF-8 boundaries, invalid UTF-8 and NUL
 * bytes shown as U+FFFD). The end appends, on a line of its own: "[exit code: N]" for a
 * non-zero exit, "[killed by signal SIGTERM]" when a signal ended the shell, "[exit status
 * unknown]" when someone else reaped it (SIGCHLD ignored); a timeout appends nothing (the
 * caller renders "Error: " + err.msg, then a newline and the text when it is not empty).
 *
 * The exit is watched with a pidfd (a 20 ms waitid poll where there is none), so any loop works
 * and only our own children are waited for. When the shell has exited its pipe is drained, what
 * is left of its group (`sleep 100 &`) is SIGKILLed, and the group's members that are our
 * children are reaped: the shell always, its orphans too when the process is a child subreaper
 * (PR_SET_CHILD_SUBREAPER; without it they go to init). Nothing is left a zombie.
 *
 * Callbacks run from the loop, each as the last thing its watcher does: a callback may free or
 * cancel its proc. Nothing is called after ws_proc_cancel or ws_proc_free returns.
 */
#ifndef WORKSPACE_PROC_H
#define WORKSPACE_PROC_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include "base/buf.h"
#include "base/err.h"

#define WS_PROC_HEAD 8192		/* bytes of the output's start the model sees */
#define WS_PROC_TAIL 24576		/* bytes of its end */
#define WS_PROC_KILL_GRACE 2.0		/* seconds from SIGTERM to SIGKILL */
#define WS_PROC_PROGRESS 0.25		/* seconds between progress calls, at least */

struct ws_proc;

/* What a finished command gives its caller; every pointer is valid until ws_proc_free. */
struct ws_proc_result {
	const char *text;		/* the model's text (above), NUL-terminated */
	size_t len;
	int exit_code;			/* the shell's exit status; -1 when a signal ended it */
	int signo;			/* that signal, else 0 */
	int timed_out;			/* the timeout fired; err is TOOL_TIMEOUT */
	int killed;			/* we signalled the group: timeout or ws_proc_kill */
	const char *spill_path;		/* the whole output */
	uint64_t total_bytes;		/* bytes of output */
	const struct err *err;		/* NULL, or TOOL_TIMEOUT "command timed out after <s> s" */
};

typedef void ws_proc_done_fn(void *arg, struct ws_proc *p, const struct ws_proc_result *r);
/* text: the capped output so far (no end line), borrowed for the call. */
typedef void ws_proc_progress_fn(void *arg, struct ws_proc *p, const char *text, size_t len);

/* Every string is borrowed for the call of ws_proc_start. */
struct ws_proc_opts {
	const char *command;
	const char *workdir;		/* NULL: our cwd */
	const char *spill_dir;		/* an existing directory */
	const char *name;		/* spill file <spill_dir>/<name>.out; NULL: bash-XXXXXX.out */
	const char *shell;		/* NULL: bash from PATH, else /bin/bash */
	int64_t timeout_ms;		/* <= 0: none. On expiry SIGTERM, SIGKILL 2 s later */
	ws_proc_done_fn *done;		/* may be NULL */
	ws_proc_progress_fn *progress;	/* NULL: none (--deterministic); else at most every 250 ms
					 * while new output arrives */
	void *arg;
	int no_pidfd;			/* 1: the waitid poll even with pidfds (tests) */
};

/*
 * Starts the command; returns an owned proc (free with ws_proc_free) or NULL with e:
 * INVALID_ARGUMENT (no command or spill dir, a name with '/' or a leading '.'), PROC_SPILL_EXISTS
 * "spill file <p> already exists", PROC_SPILL_IO "cannot create spill file <p>: <why>",
 * PROC_SPAWN_FAILED "cannot enter workdir \"<d>\": <why>" / "cannot run <shell>: <why>" /
 * "cannot start bash: <why>". A spill file that cannot be written later (disk full) keeps the
 * run going and appends "[spill file incomplete: <why>]" to the text.
 */
struct ws_proc *ws_proc_start(struct ev_loop *loop, const struct ws_proc_opts *o, struct err *e);
/* SIGTERM to the group now, SIGKILL 2 s later if it lives; done still comes, with killed. */
void ws_proc_kill(struct ws_proc *p);
/* Like ws_proc_kill, but no callback ever runs again; free the proc whenever convenient. */
void ws_proc_cancel(struct ws_proc *p);
/*
 * Kills the group at once (SIGKILL) if the shell has not ended, reaps it (blocking, as a
 * SIGKILLed process ends at once) and frees everything; no callback runs. Returns the shell's
 * wait status when this call reaped it, else -1. NULL is fine.
 */
int ws_proc_free(struct ws_proc *p);

int ws_proc_running(const struct ws_proc *p);		/* the shell has not been reaped */
int ws_proc_pgid(const struct ws_proc *p);		/* = the shell's pid */
const char *ws_proc_spill_path(const struct ws_proc *p);
/*
 * Appends to out the capped output since the last take (all of it before the first), head,
 * omitted line and tail as above, no end line; then starts a new window. Background jobs read
 * with it: their unread output costs at most 32 KiB of memory, the rest is in the spill file.
 */
void ws_proc_take(struct ws_proc *p, struct buf *out);

/* The signal's name ("SIGKILL"), or "signal <n>" in buf. */
const char *ws_proc_signame(int signo, char *buf, size_t size);

#endif
