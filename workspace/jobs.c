/* Background jobs: ids, the running cap, reads since the last read, waits, kill, shutdown. */
#include "workspace/jobs.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/xmalloc.h"
#include "workspace/proc.h"

#define JOBS_NAME_TRIES 10000	/* job-<n> names skipped because their spill file exists */

struct ws_job;

/* One pending read with wait; its timer answers (the timeout, or at once once the job ends). */
struct ws_jobs_wait {
	ev_timer timer;			/* first member: the callback casts back */
	struct ws_jobs_wait *next;
	struct ws_job *job;
	ws_jobs_output_fn *cb;
	void *arg;
};

/*
 * One job. proc is the running command, kept after its end until the output has been read
 * (the unread window lives in it), then freed: an ended, read job is its id and status only.
 */
struct ws_job {
	struct ws_job *next;
	struct ws_jobs *jobs;
	char id[WS_JOBS_ID_MAX];
	struct ws_proc *proc;
	int ended, kill_requested;
	int exit_code, signo;		/* once ended: as in struct ws_proc_result */
	struct ws_jobs_wait *waiters;
};

/* The jobs of one root session, in start order; next_n is the next job-<n> to try. */
struct ws_jobs {
	struct ev_loop *loop;
	char *spill_dir;
	struct ws_jobs_hooks hooks;
	struct ws_job *head, **tail;
	unsigned long next_n;
};

struct ws_jobs *
ws_jobs_new(struct ev_loop *loop, const char *spill_dir, const struct ws_jobs_hooks *h)
{
	struct ws_jobs *j = xcalloc(1, sizeof(*j));

	j->loop = loop;
	j->spill_dir = xstrdup(spill_dir);
	if (h != NULL)
		j->hooks = *h;
	j->tail = &j->head;
	j->next_n = 1;
	return j;
}

static struct ws_job *
jobs_find(const struct ws_jobs *j, const char *id, struct err *e)
{
	for (struct ws_job *jb = j->head; jb != NULL; jb = jb->next)
		if (id != NULL && strcmp(jb->id, id) == 0)
			return jb;
	err_set(e, ERR_JOB_NOT_FOUND, "no job %s", id != NULL ? id : "(null)");
	return NULL;
}

/* The new output and the status line; frees the proc once an ended job has been read. */
static void
job_render(struct ws_job *jb, struct buf *out)
{
	size_t start = out->len;

	if (jb->proc != NULL)
		ws_proc_take(jb->proc, out);
	if (out->len > start && out->data[out->len - 1] != '\n')
		buf_puts(out, "\n");
	if (!jb->ended)
		buf_puts(out, "[status: running]");
	else if (jb->signo != 0 || jb->kill_requested || jb->exit_code < 0)
		buf_puts(out, "[status: killed]");
	else
		buf_printf(out, "[status: exited %d]", jb->exit_code);
	if (jb->ended && jb->proc != NULL) {
		ws_proc_free(jb->proc);
		jb->proc = NULL;
	}
}

static void
wait_unlink(struct ws_jobs_wait *w)
{
	struct ws_jobs_wait **pp;

	for (pp = &w->job->waiters; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	ev_timer_stop(w->job->jobs->loop, &w->timer);
}

static void
wait_fire(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct ws_jobs_wait *w = (struct ws_jobs_wait *)t;
	ws_jobs_output_fn *cb = w->cb;
	void *arg = w->arg;
	struct buf b;

	(void)loop;
	(void)revents;
	buf_init(&b);
	job_render(w->job, &b);
	wait_unlink(w);
	free(w);
	cb(arg, b.data, b.len);		/* last: it may free the jobs */
	buf_free(&b);
}

/* The proc's end: record it, answer the waits from their timers, then the hook. */
static void
job_done(void *arg, struct ws_proc *p, const struct ws_proc_result *r)
{
	struct ws_job *jb = arg;
	struct ws_jobs *j = jb->jobs;
	char sig[32];

	(void)p;
	jb->ended = 1;
	jb->exit_code = r->exit_code;
	jb->signo = r->signo;
	for (struct ws_jobs_wait *w = jb->waiters; w != NULL; w = w->next) {
		ev_timer_stop(j->loop, &w->timer);
		ev_timer_set(&w->timer, 0., 0.);
		ev_timer_start(j->loop, &w->timer);
	}
	if (j->hooks.ended != NULL)
		j->hooks.ended(j->hooks.arg, jb->id, r->exit_code,
		    r->signo != 0 ? ws_proc_signame(r->signo, sig, sizeof(sig)) : NULL);
}

int
ws_jobs_start(struct ws_jobs *j, const char *command, const char *workdir, char *id,
    struct err *e)
{
	struct ws_proc_opts o;
	struct ws_job *jb;
	size_t running = 0;
	struct err tmp;

	for (jb = j->head; jb != NULL; jb = jb->next)
		running += !jb->ended;
	if (running >= WS_JOBS_MAX)
		return err_set(e, ERR_JOB_LIMIT_REACHED,
		    "at most %d background jobs can run at once; stop one with job_kill", WS_JOBS_MAX);
	jb = xcalloc(1, sizeof(*jb));
	jb->jobs = j;
	memset(&o, 0, sizeof(o));
	o.command = command;
	o.workdir = workdir;
	o.spill_dir = j->spill_dir;
	o.name = jb->id;
	o.done = job_done;
	o.arg = jb;
	for (int i = 0; i < JOBS_NAME_TRIES && jb->proc == NULL; i++) {
		snprintf(jb->id, sizeof(jb->id), "job-%lu", j->next_n);
		err_clear(&tmp);
		jb->proc = ws_proc_start(j->loop, &o, &tmp);
		if (jb->proc == NULL && tmp.code != ERR_PROC_SPILL_EXISTS)
			break;
		j->next_n++;
	}
	if (jb->proc == NULL) {
		err_set(e, tmp.code, "%s", tmp.msg);
		free(jb);
		return -1;
	}
	*j->tail = jb;
	j->tail = &jb->next;
	memcpy(id, jb->id, sizeof(jb->id));
	if (j->hooks.started != NULL)
		j->hooks.started(j->hooks.arg, jb->id, command);
	return 0;
}

int
ws_jobs_output(struct ws_jobs *j, const char *id, int wait, int64_t timeout_ms,
    struct buf *out, ws_jobs_output_fn *cb, void *arg, struct ws_jobs_wait **wp, struct err *e)
{
	struct ws_job *jb = jobs_find(j, id, e);
	struct ws_jobs_wait *w;

	if (jb == NULL)
		return -1;
	if (!wait || jb->ended) {
		job_render(jb, out);
		return 0;
	}
	if (timeout_ms <= 0 || cb == NULL)
		return err_set(e, ERR_INVALID_ARGUMENT, "a wait needs a positive timeout_ms and a callback");
	w = xcalloc(1, sizeof(*w));
	w->job = jb;
	w->cb = cb;
	w->arg = arg;
	ev_timer_init(&w->timer, wait_fire, (double)timeout_ms / 1000., 0.);
	ev_timer_start(j->loop, &w->timer);
	w->next = jb->waiters;
	jb->waiters = w;
	if (wp != NULL)
		*wp = w;
	return 1;
}

void
ws_jobs_wait_cancel(struct ws_jobs_wait *w)
{
	if (w == NULL)
		return;
	wait_unlink(w);
	free(w);
}

int
ws_jobs_kill(struct ws_jobs *j, const char *id, struct buf *out, struct err *e)
{
	struct ws_job *jb = jobs_find(j, id, e);

	if (jb == NULL)
		return -1;
	if (!jb->ended) {
		jb->kill_requested = 1;
		ws_proc_kill(jb->proc);
	}
	buf_printf(out, "kill requested for job %s", jb->id);
	return 0;
}

void
ws_jobs_free(struct ws_jobs *j)
{
	struct ws_job *jb, *next;
	char sig[32];

	if (j == NULL)
		return;
	for (jb = j->head; jb != NULL; jb = next) {
		struct ws_jobs_wait *w, *wn;
		next = jb->next;
		for (w = jb->waiters; w != NULL; w = wn) {
			wn = w->next;
			ev_timer_stop(j->loop, &w->timer);
			free(w);
		}
		jb->waiters = NULL;
		if (jb->proc != NULL && !jb->ended) {
			int st = ws_proc_free(jb->proc);
			int code = st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
			int signo = st >= 0 && WIFSIGNALED(st) ? WTERMSIG(st) : st < 0 ? SIGKILL : 0;
			if (j->hooks.ended != NULL)
				j->hooks.ended(j->hooks.arg, jb->id, code,
				    signo != 0 ? ws_proc_signame(signo, sig, sizeof(sig)) : NULL);
		} else {
			ws_proc_free(jb->proc);
		}
		free(jb);
	}
	free(j->spill_dir);
	free(j);
}
