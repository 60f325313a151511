/*
 * The background jobs of one root session (docs/contract.md §16.3, `bash` with run_in_background): at most
 * WS_JOBS_MAX running at once, no timeout. Ids are "job-<n>": the first n, counting up, whose
 * spill file <spill dir>/job-<n>.out does not exist yet, so ids stay unique across restarts over
 * one spill dir. Every byte goes to that file; the unread output is kept as ws_proc_take keeps
 * it (all of it up to 32 KiB, beyond that its first 8 KiB and last 24 KiB with the omitted line
 * naming the spill file), and each read starts a new window. A read's text is that output, then
 * on a line of its own "[status: running]", "[status: exited N]" or "[status: killed]" (a signal
 * ended the shell, or a kill was requested). An ended job stays readable and stops counting.
 *
 * Callbacks (hooks and wait answers) run from the loop, each as the last thing its watcher does;
 * they may call any ws_jobs function, ws_jobs_free included.
 */
#ifndef WORKSPACE_JOBS_H
#define WORKSPACE_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include "base/buf.h"
#include "base/err.h"

#define WS_JOBS_MAX 8
#define WS_JOBS_ID_MAX 24		/* bytes of an id with its NUL */

struct ws_jobs;
struct ws_jobs_wait;

/* The lead's log lines (docs/contract.md §20.1); strings borrowed for the call; either may be NULL. */
struct ws_jobs_hooks {
	/* job/started {jobId, command} */
	void (*started)(void *arg, const char *job_id, const char *command);
	/* job/ended {jobId, exit}: exit_code >= 0 and signal NULL, or -1 and "SIGKILL" etc. */
	void (*ended)(void *arg, const char *job_id, int exit_code, const char *signal);
	void *arg;
};

/* A wait's answer: text borrowed for the call. */
typedef void ws_jobs_output_fn(void *arg, const char *text, size_t len);

/* Returns an owned set (free with ws_jobs_free); spill_dir and hooks are copied. */
struct ws_jobs *ws_jobs_new(struct ev_loop *loop, const char *spill_dir,
    const struct ws_jobs_hooks *h);
/*
 * Starts `bash -c command` in workdir (NULL: our cwd); the id goes to id (WS_JOBS_ID_MAX bytes).
 * 0, or -1 with e: JOB_LIMIT_REACHED "at most 8 background jobs can run at once; stop one with
 * job_kill", or ws_proc_start's errors (no id is used up then).
 */
int ws_jobs_start(struct ws_jobs *j, const char *command, const char *workdir, char *id,
    struct err *e);
/*
 * New output since the last read plus the status line. Without wait, or when the job has ended:
 * appends the text to out and returns 0. With wait on a running job: returns 1 and answers
 * through cb exactly once, when the job ends or after timeout_ms (> 0), unless
 * ws_jobs_wait_cancel(*wp) comes first. Unknown id: -1 with JOB_NOT_FOUND "no job <id>".
 */
int ws_jobs_output(struct ws_jobs *j, const char *id, int wait, int64_t timeout_ms,
    struct buf *out, ws_jobs_output_fn *cb, void *arg, struct ws_jobs_wait **wp, struct err *e);
/* Drops a pending wait; its callback never runs. */
void ws_jobs_wait_cancel(struct ws_jobs_wait *w);
/*
 * Asks a job to stop (SIGTERM to its group, SIGKILL 2 s later) and returns at once, appending
 * "kill requested for job <id>" to out (an ended job too). -1 with JOB_NOT_FOUND.
 */
int ws_jobs_kill(struct ws_jobs *j, const char *id, struct buf *out, struct err *e);
/*
 * Shutdown (and stdin EOF): SIGKILLs and reaps every running job's group, calls the ended hook
 * for each of them, drops pending waits without answering, frees everything. NULL is fine.
 */
void ws_jobs_free(struct ws_jobs *j);

#endif
