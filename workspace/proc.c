/* One bash -c on the loop: spawn, output relay to the spill file and the head/tail, exit. */
#include "workspace/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/guard.h"
#include "base/spawn.h"
#include "base/utf8.h"
#include "base/xmalloc.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#define PROC_CHUNK 65536		/* one read(2) */
#define PROC_READS 16			/* reads per wakeup: 1 MiB, then other watchers run */
#define PROC_DRAIN_READS 64		/* reads after the exit, a writer left behind bounded */
#define PROC_PIPE_SIZE (1 << 20)	/* fewer wakeups for a fast writer; best effort */
#define PROC_POLL 0.02			/* seconds between waitid polls without a pidfd */


/*
 * The model's window on the output: the first WS_PROC_HEAD bytes, then a ring of the last
 * WS_PROC_TAIL bytes after them. While bytes <= HEAD + TAIL the two hold the whole window.
 */
struct proc_cap {
	char head[WS_PROC_HEAD];
	size_t head_len;
	char tail[WS_PROC_TAIL];
	size_t tail_pos;		/* where the next byte goes */
	size_t tail_len;		/* bytes held; < TAIL means no wrap yet, data at [0, tail_len) */
	uint64_t bytes;			/* bytes in this window */
};

/*
 * One command. pid stays the group id after the reap (`reaped`); until then the shell is our
 * unreaped child, so the group id cannot be reused and signalling -pid is safe. The fds are -1
 * once closed; every watcher is initialised at start, so stopping any of them is always fine.
 */
struct ws_proc {
	ev_io out_io;			/* first member: the output callback casts back */
	ev_io exit_io;			/* the pidfd */
	ev_timer poll_tm;		/* no pidfd: waitid polls */
	ev_timer timeout_tm;
	ev_timer grace_tm;		/* SIGKILL after SIGTERM */
	ev_timer progress_tm;
	struct ev_loop *loop;
	pid_t pid;
	int out_fd, pid_fd, spill_fd;
	int spill_errno;		/* first failed spill write, else 0 */
	int status;			/* wait status once reaped and known */
	int reaped, status_known, finished, timed_out, killed, quiet, dirty;
	int64_t timeout_ms;
	char *spill_path;
	struct proc_cap cap;
	uint64_t total;
	struct err err;
	struct buf text;		/* the result's text once finished */
	struct ws_proc_result res;
	ws_proc_done_fn *done;
	ws_proc_progress_fn *progress;
	void *arg;
};

const char *
ws_proc_signame(int signo, char *buf, size_t size)
{
	return spawn_signame(signo, buf, size);
}

/* Creates the spill file (0600, O_EXCL); -1 with e. */
static int
proc_spill_open(struct ws_proc *p, const struct ws_proc_opts *o, struct err *e)
{
	int fd;

	if (o->name == NULL) {
		p->spill_path = xasprintf("%s/bash-XXXXXX.out", o->spill_dir);
		fd = mkostemps(p->spill_path, 4, O_CLOEXEC);
	} else {
		p->spill_path = xasprintf("%s/%s.out", o->spill_dir, o->name);
		fd = open(p->spill_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	}
	if (fd < 0 && errno == EEXIST)
		return err_set(e, ERR_PROC_SPILL_EXISTS, "spill file %s already exists", p->spill_path);
	if (fd < 0)
		return err_set(e, ERR_PROC_SPILL_IO, "cannot create spill file %s: %s", p->spill_path,
		    strerror(errno));
	fchmod(fd, 0600);	/* whatever the umask */
	p->spill_fd = fd;
	return 0;
}

static void
cap_reset(struct proc_cap *c)
{
	c->head_len = c->tail_pos = c->tail_len = 0;
	c->bytes = 0;
}

static void
cap_add(struct proc_cap *c, const char *d, size_t n)
{
	c->bytes += n;
	if (c->head_len < WS_PROC_HEAD) {
		size_t k = n < WS_PROC_HEAD - c->head_len ? n : WS_PROC_HEAD - c->head_len;
		memcpy(c->head + c->head_len, d, k);
		c->head_len += k;
		d += k;
		n -= k;
	}
	if (n >= WS_PROC_TAIL) {
		memcpy(c->tail, d + n - WS_PROC_TAIL, WS_PROC_TAIL);
		c->tail_pos = 0;
		c->tail_len = WS_PROC_TAIL;
		return;
	}
	while (n > 0) {
		size_t k = n < WS_PROC_TAIL - c->tail_pos ? n : WS_PROC_TAIL - c->tail_pos;
		memcpy(c->tail + c->tail_pos, d, k);
		c->tail_pos = (c->tail_pos + k) % WS_PROC_TAIL;
		c->tail_len = c->tail_len + k > WS_PROC_TAIL ? WS_PROC_TAIL : c->tail_len + k;
		d += k;
		n -= k;
	}
}

/* Appends s[0, n) with invalid UTF-8 and NUL bytes as U+FFFD: the text is a C string. */
static void
append_repaired(struct buf *out, const char *s, size_t n)
{
	size_t len, at = 0;
	char *fixed = utf8_repair(s, n, &len), *nul;

	while ((nul = memchr(fixed + at, '\0', len - at)) != NULL) {
		buf_append(out, fixed + at, (size_t)(nul - fixed) - at);
		buf_puts(out, "\xef\xbf\xbd");
		at = (size_t)(nul - fixed) + 1;
	}
	buf_append(out, fixed + at, len - at);
	free(fixed);
}

/* The length of head[0, n) without a UTF-8 sequence the cut at n splits. */
static size_t
cap_head_cut(const char *s, size_t n)
{
	for (size_t k = 1; k <= 4 && k <= n; k++) {
		unsigned char b = (unsigned char)s[n - k];
		size_t want;
		if ((b & 0xc0) == 0x80)
			continue;
		want = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
		return want > k ? n - k : n;
	}
	return n;
}

static void
cap_render(const struct proc_cap *c, const char *spill_path, struct buf *out)
{
	char *tail = xmalloc(WS_PROC_TAIL);
	size_t tl = c->tail_len, start = 0, h;

	/* Unroll the ring: oldest byte first. */
	if (tl < WS_PROC_TAIL) {
		memcpy(tail, c->tail, tl);
	} else {
		memcpy(tail, c->tail + c->tail_pos, WS_PROC_TAIL - c->tail_pos);
		memcpy(tail + WS_PROC_TAIL - c->tail_pos, c->tail, c->tail_pos);
	}
	if (c->bytes <= WS_PROC_HEAD + WS_PROC_TAIL) {
		char *all = xmalloc(c->head_len + tl + 1);
		memcpy(all, c->head, c->head_len);
		memcpy(all + c->head_len, tail, tl);
		append_repaired(out, all, c->head_len + tl);
		free(all);
		free(tail);
		return;
	}
	h = cap_head_cut(c->head, c->head_len);
	while (start < 3 && start < tl && ((unsigned char)tail[start] & 0xc0) == 0x80)
		start++;
	append_repaired(out, c->head, h);
	if (h > 0 && c->head[h - 1] != '\n')
		buf_puts(out, "\n");
	buf_printf(out, "[\xe2\x80\xa6 %llu bytes omitted; full output: %s]\n",
	    (unsigned long long)(c->bytes - h - (tl - start)), spill_path);
	append_repaired(out, tail + start, tl - start);
	free(tail);
}

static void
proc_end_line(struct buf *b, const char *line)
{
	if (b->len > 0 && b->data[b->len - 1] != '\n')
		buf_puts(b, "\n");
	buf_puts(b, line);
}

/* Takes one chunk of output: spill file, head/tail, progress. */
static void
proc_output(struct ws_proc *p, const char *d, size_t n)
{
	size_t off = 0;

	while (p->spill_errno == 0 && off < n) {
		ssize_t w = write(p->spill_fd, d + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			p->spill_errno = errno;
		else
			off += (size_t)w;
	}
	cap_add(&p->cap, d, n);
	p->total += n;
	if (p->progress != NULL && !p->quiet) {
		p->dirty = 1;
		if (!ev_is_active(&p->progress_tm)) {
			ev_timer_set(&p->progress_tm, WS_PROC_PROGRESS, WS_PROC_PROGRESS);
			ev_timer_start(p->loop, &p->progress_tm);
		}
	}
}

static void
proc_close_out(struct ws_proc *p)
{
	if (p->out_fd < 0)
		return;
	ev_io_stop(p->loop, &p->out_io);
	close(p->out_fd);
	p->out_fd = -1;
}

/* Reads at most max chunks, until the pipe would block; closes it at EOF. */
static void
proc_read(struct ws_proc *p, int max)
{
	char chunk[PROC_CHUNK];

	for (int i = 0; i < max && p->out_fd >= 0; i++) {
		ssize_t n = read(p->out_fd, chunk, sizeof(chunk));
		if (n > 0)
			proc_output(p, chunk, (size_t)n);
		else if (n < 0 && errno == EINTR)
			i--;
		else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		else
			proc_close_out(p);	/* EOF, or an error that ends the relay */
	}
}

static void
proc_out_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	proc_read((struct ws_proc *)w, PROC_READS);
}

/*
 * Kills what is left of the group and reaps the group's members that are our children, the
 * shell among them (blocking: after SIGKILL they end at once). The shell is unreaped until
 * here, so -pid still names its group.
 */
static void
proc_reap(struct ws_proc *p)
{
	int st;
	pid_t r;

	if (p->reaped)
		return;
	kill(-p->pid, SIGKILL);
	while ((r = waitpid(-p->pid, &st, 0)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;	/* ECHILD: none left */
		if (r == p->pid) {
			p->status = st;
			p->status_known = 1;
		}
	}
	guard_forget(p->pid);	/* the group is gone: nothing for the guardian to kill */
	p->reaped = 1;
}

static void
proc_stop_watchers(struct ws_proc *p)
{
	ev_io_stop(p->loop, &p->exit_io);
	ev_timer_stop(p->loop, &p->poll_tm);
	ev_timer_stop(p->loop, &p->timeout_tm);
	ev_timer_stop(p->loop, &p->grace_tm);
	ev_timer_stop(p->loop, &p->progress_tm);
	proc_close_out(p);
	if (p->pid_fd >= 0)
		close(p->pid_fd);
	p->pid_fd = -1;
}

/* The shell has exited: drain, kill the rest, reap, render, and call done last. */
static void
proc_finish(struct ws_proc *p)
{
	char line[64], sig[32];

	proc_read(p, PROC_DRAIN_READS);
	proc_close_out(p);
	proc_reap(p);
	proc_stop_watchers(p);
	if (p->spill_fd >= 0)
		close(p->spill_fd);
	p->spill_fd = -1;
	p->finished = 1;

	buf_init(&p->text);
	cap_render(&p->cap, p->spill_path, &p->text);
	if (p->spill_errno != 0) {
		snprintf(line, sizeof(line), "[spill file incomplete: %s]", strerror(p->spill_errno));
		proc_end_line(&p->text, line);
	}
	p->res.exit_code = -1;
	if (p->status_known && WIFEXITED(p->status)) {
		p->res.exit_code = WEXITSTATUS(p->status);
		snprintf(line, sizeof(line), "[exit code: %d]", p->res.exit_code);
		if (p->res.exit_code != 0 && !p->timed_out)
			proc_end_line(&p->text, line);
	} else if (p->status_known && WIFSIGNALED(p->status)) {
		p->res.signo = WTERMSIG(p->status);
		snprintf(line, sizeof(line), "[killed by signal %s]",
		    ws_proc_signame(p->res.signo, sig, sizeof(sig)));
		if (!p->timed_out)
			proc_end_line(&p->text, line);
	} else if (!p->timed_out) {
		proc_end_line(&p->text, "[exit status unknown]");	/* reaped elsewhere */
	}
	if (p->text.data == NULL)
		buf_puts(&p->text, "");
	p->res.text = p->text.data;
	p->res.len = p->text.len;
	p->res.timed_out = p->timed_out;
	p->res.killed = p->killed;
	p->res.spill_path = p->spill_path;
	p->res.total_bytes = p->total;
	p->res.err = p->err.code != ERR_NONE ? &p->err : NULL;
	if (!p->quiet && p->done != NULL)
		p->done(p->arg, p, &p->res);
}

/* Has the shell exited? Peeks (WNOWAIT): the reap waits for proc_reap. */
static void
proc_check_exit(struct ws_proc *p)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
		if (errno == EINTR)
			return;
		p->reaped = 1;	/* ECHILD: reaped by someone else (SIGCHLD ignored); status unknown */
	} else if (si.si_pid == 0) {
		return;		/* still running */
	}
	proc_finish(p);
}

static void
proc_exit_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	proc_check_exit((struct ws_proc *)((char *)w - offsetof(struct ws_proc, exit_io)));
}

static void
proc_poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	proc_check_exit((struct ws_proc *)((char *)w - offsetof(struct ws_proc, poll_tm)));
}

/* SIGTERM to the group now, SIGKILL after the grace unless it has ended by then. */
static void
proc_term(struct ws_proc *p)
{
	if (p->finished || p->reaped)
		return;
	p->killed = 1;
	kill(-p->pid, SIGTERM);
	if (!ev_is_active(&p->grace_tm)) {
		ev_timer_set(&p->grace_tm, WS_PROC_KILL_GRACE, 0.);
		ev_timer_start(p->loop, &p->grace_tm);
	}
}

static void
proc_grace_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct ws_proc *p = (struct ws_proc *)((char *)w - offsetof(struct ws_proc, grace_tm));

	(void)loop;
	(void)revents;
	if (!p->reaped)
		kill(-p->pid, SIGKILL);
}

static void
proc_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct ws_proc *p = (struct ws_proc *)((char *)w - offsetof(struct ws_proc, timeout_tm));

	(void)loop;
	(void)revents;
	p->timed_out = 1;
	err_set(&p->err, ERR_TOOL_TIMEOUT, "command timed out after %g s", (double)p->timeout_ms / 1000.);
	proc_term(p);
}

static void
proc_progress_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct ws_proc *p = (struct ws_proc *)((char *)w - offsetof(struct ws_proc, progress_tm));
	ws_proc_progress_fn *fn = p->progress;
	void *arg = p->arg;
	struct buf b;

	(void)revents;
	if (!p->dirty || p->quiet) {
		ev_timer_stop(loop, w);	/* restarted by the next output: calls stay 250 ms apart */
		return;
	}
	p->dirty = 0;
	buf_init(&b);
	cap_render(&p->cap, p->spill_path, &b);
	fn(arg, p, b.data != NULL ? b.data : "", b.len);	/* last: it may free p */
	buf_free(&b);
}

static int
proc_check_opts(const struct ws_proc_opts *o, struct err *e)
{
	if (o->command == NULL)
		return err_set(e, ERR_INVALID_ARGUMENT, "command is required");
	if (o->spill_dir == NULL)
		return err_set(e, ERR_INVALID_ARGUMENT, "spill_dir is required");
	if (o->name != NULL && (o->name[0] == '\0' || o->name[0] == '.' ||
	    strchr(o->name, '/') != NULL || strlen(o->name) > 200))
		return err_set(e, ERR_INVALID_ARGUMENT, "invalid spill name \"%s\"", o->name);
	return 0;
}

/* Forks and execs; returns the pid, or -1 with e (the child has been reaped). */
static pid_t
proc_spawn(struct ws_proc *p, const struct ws_proc_opts *o, struct err *e)
{
	const char *name = o->shell != NULL ? o->shell : "bash";
	char *argv[] = { (char *)"bash", (char *)"-c", (char *)o->command, NULL };
	struct spawn_opts so;
	enum spawn_stage stage;
	char *shell, **envp;
	int out[2], saved;
	pid_t pid;

	if (pipe2(out, O_CLOEXEC) < 0)
		return err_set(e, ERR_PROC_SPAWN_FAILED, "cannot start bash: %s", strerror(errno));
	if ((shell = spawn_find(name, NULL)) == NULL)
		shell = xasprintf("/bin/%s", name);
	envp = spawn_env(NULL, 0);
	memset(&so, 0, sizeof(so));
	so.path = shell;
	so.argv = argv;
	so.envp = envp;
	so.workdir = o->workdir;
	so.fd[0] = -1;
	so.fd[1] = so.fd[2] = out[1];
	pid = spawn_start(&so, &stage, &saved);
	close(out[1]);
	free(envp);
	if (pid < 0) {
		close(out[0]);
		if (stage == SPAWN_CHDIR)
			err_set(e, ERR_PROC_SPAWN_FAILED, "cannot enter workdir \"%s\": %s", o->workdir,
			    strerror(saved));
		else if (stage == SPAWN_EXEC)
			err_set(e, ERR_PROC_SPAWN_FAILED, "cannot run %s: %s", shell, strerror(saved));
		else
			err_set(e, ERR_PROC_SPAWN_FAILED, "cannot start bash: %s", strerror(saved));
		free(shell);
		return -1;
	}
	free(shell);
	p->out_fd = out[0];
	return pid;
}

struct ws_proc *
ws_proc_start(struct ev_loop *loop, const struct ws_proc_opts *o, struct err *e)
{
	struct ws_proc *p;
	int flags;

	if (proc_check_opts(o, e) < 0)
		return NULL;
	p = xcalloc(1, sizeof(*p));
	p->loop = loop;
	p->out_fd = p->pid_fd = p->spill_fd = -1;
	p->timeout_ms = o->timeout_ms;
	p->done = o->done;
	p->progress = o->progress;
	p->arg = o->arg;
	err_clear(&p->err);
	buf_init(&p->text);
	ev_init(&p->out_io, proc_out_cb);
	ev_init(&p->exit_io, proc_exit_cb);
	ev_init(&p->poll_tm, proc_poll_cb);
	ev_init(&p->timeout_tm, proc_timeout_cb);
	ev_init(&p->grace_tm, proc_grace_cb);
	ev_init(&p->progress_tm, proc_progress_cb);
	if (proc_spill_open(p, o, e) < 0) {
		free(p->spill_path);
		free(p);
		return NULL;
	}
	if ((p->pid = proc_spawn(p, o, e)) < 0) {
		close(p->spill_fd);
		unlink(p->spill_path);
		free(p->spill_path);
		free(p);
		return NULL;
	}
	flags = fcntl(p->out_fd, F_GETFL);
	fcntl(p->out_fd, F_SETFL, flags | O_NONBLOCK);
	fcntl(p->out_fd, F_SETPIPE_SZ, PROC_PIPE_SIZE);
	ev_io_set(&p->out_io, p->out_fd, EV_READ);
	ev_io_start(loop, &p->out_io);
	if (!o->no_pidfd)
		p->pid_fd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (p->pid_fd >= 0) {
		fcntl(p->pid_fd, F_SETFD, FD_CLOEXEC);
		ev_io_set(&p->exit_io, p->pid_fd, EV_READ);
		ev_io_start(loop, &p->exit_io);
	} else {
		ev_timer_set(&p->poll_tm, PROC_POLL, PROC_POLL);
		ev_timer_start(loop, &p->poll_tm);
	}
	if (o->timeout_ms > 0) {
		ev_now_update(loop);	/* the timeout counts from now, not from the loop's last wakeup */
		ev_timer_set(&p->timeout_tm, (double)o->timeout_ms / 1000., 0.);
		ev_timer_start(loop, &p->timeout_tm);
	}
	return p;
}

void
ws_proc_kill(struct ws_proc *p)
{
	proc_term(p);
}

void
ws_proc_cancel(struct ws_proc *p)
{
	p->quiet = 1;
	ev_timer_stop(p->loop, &p->progress_tm);
	ev_timer_stop(p->loop, &p->timeout_tm);
	proc_term(p);
}

int
ws_proc_free(struct ws_proc *p)
{
	int st = -1;

	if (p == NULL)
		return -1;
	if (!p->reaped) {
		proc_reap(p);
		if (p->status_known)
			st = p->status;
	}
	proc_stop_watchers(p);
	if (p->spill_fd >= 0)
		close(p->spill_fd);
	buf_free(&p->text);
	free(p->spill_path);
	free(p);
	return st;
}

int
ws_proc_running(const struct ws_proc *p)
{
	return !p->reaped;
}

int
ws_proc_pgid(const struct ws_proc *p)
{
	return p->pid;
}

const char *
ws_proc_spill_path(const struct ws_proc *p)
{
	return p->spill_path;
}

void
ws_proc_take(struct ws_proc *p, struct buf *out)
{
	cap_render(&p->cap, p->spill_path, out);
	cap_reset(&p->cap);
}
