/* A stdio MCP server: the process, its three pipes, the exit and the shutdown ladder. */
#include "mcp/stdio.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/guard.h"
#include "base/log.h"
#include "base/reader.h"
#include "base/spawn.h"
#include "base/wq.h"
#include "base/xmalloc.h"

#define STDIO_POLL 0.02		/* seconds between waitpid polls without a pidfd */

struct stdio_tp {
	struct mcp_transport t;	/* first member */
	struct ev_loop *loop;
	char *name;
	pid_t pid;		/* 0 once reaped */
	int pid_fd;
	struct wq in;		/* the server's stdin */
	int in_open;
	struct reader out;	/* its output pipe */
	int out_open;
	ev_io err_io;		/* its stderr */
	int err_fd;
	struct buf err_line;	/* the stderr line being read */
	char tail[MCP_STDERR_KEEP];	/* a ring of the last bytes of stderr */
	size_t tail_len, tail_pos;
	ev_io exit_io;		/* the pidfd */
	ev_timer poll_tm;	/* no pidfd: waitpid polls */
	ev_timer ladder_tm;	/* close: SIGTERM, then SIGKILL */
	int ladder_step;
	int status;		/* the wait status, once reaped */
	int reported;
};

static void stdio_gone(struct stdio_tp *s);

static void
stdio_on_line(void *arg, const char *line, size_t len)
{
	struct stdio_tp *s = arg;
	json_error_t jerr;
	json_t *msg;

	if (len == 0)
		return;
	msg = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!json_is_object(msg)) {
		log_debug("[mcp:%s] not a JSON-RPC message, skipped: %.*s", s->name, (int)(len < 200 ? len : 200), line);
		json_decref(msg);
		return;
	}
	if (!s->reported)
		s->t.cb.message(s->t.cb.arg, msg);
	json_decref(msg);
}

static void
stdio_on_overlong(void *arg)
{
	struct stdio_tp *s = arg;

	log_warn("[mcp:%s] an output line over 64 MiB, skipped", s->name);
}

static void
stdio_on_out_eof(void *arg)
{
	struct stdio_tp *s = arg;

	/* The exit (pidfd) reports gone; a server that closed its output but lives on is left to it. */
	log_debug("[mcp:%s] output closed", s->name);
	(void)s;
}

static void
stdio_tail_add(struct stdio_tp *s, const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		s->tail[s->tail_pos] = p[i];
		s->tail_pos = (s->tail_pos + 1) % sizeof(s->tail);
		if (s->tail_len < sizeof(s->tail))
			s->tail_len++;
	}
}

static void
stdio_err_flush(struct stdio_tp *s)
{
	if (s->err_line.len > 0)
		log_debug("[mcp:%s] %.*s", s->name, (int)s->err_line.len, s->err_line.data);
	s->err_line.len = 0;
}

/* Reads what stderr has: 1 when it read some, 0 when nothing is there now (EAGAIN), -1 at EOF
 * or an error (the watcher is stopped, the fd closed). */
static int
stdio_err_read(struct stdio_tp *s)
{
	char chunk[4096];
	ssize_t n = read(s->err_fd, chunk, sizeof(chunk));

	if (n < 0 && errno == EINTR)
		return 1;
	if (n < 0 && errno == EAGAIN)
		return 0;
	if (n <= 0) {
		stdio_err_flush(s);
		ev_io_stop(s->loop, &s->err_io);
		close(s->err_fd);
		s->err_fd = -1;
		return -1;
	}
	stdio_tail_add(s, chunk, (size_t)n);
	for (ssize_t i = 0; i < n; i++) {
		if (chunk[i] == '\n')
			stdio_err_flush(s);
		else if (s->err_line.len < 4096)
			buf_append(&s->err_line, &chunk[i], 1);
	}
	return 1;
}

static void
stdio_err_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	stdio_err_read((struct stdio_tp *)((char *)w - offsetof(struct stdio_tp, err_io)));
}

static void
stdio_stop_watchers(struct stdio_tp *s)
{
	ev_io_stop(s->loop, &s->exit_io);
	ev_timer_stop(s->loop, &s->poll_tm);
	ev_timer_stop(s->loop, &s->ladder_tm);
}

/* Reaps the server (and whatever of its group is our child and dead); 1 when it has exited. */
static int
stdio_reap(struct stdio_tp *s, int block)
{
	int st;
	pid_t r;

	if (s->pid == 0)
		return 1;
	do
		r = waitpid(s->pid, &st, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 0;
	s->status = r > 0 ? st : 0;
	/* What is left of its group dies with it; its members that are our children (orphans come
	 * to us: the agent is a child subreaper) are reaped: SIGKILLed, they go at once. */
	kill(-s->pid, SIGKILL);
	while (waitpid(-s->pid, NULL, 0) > 0 || errno == EINTR)
		;
	guard_forget(s->pid);
	s->pid = 0;
	return 1;
}

static void
stdio_exited(struct stdio_tp *s)
{
	stdio_stop_watchers(s);
	/* Whatever it wrote before it died is still read and delivered. */
	if (s->out_open) {
		char chunk[65536];
		ssize_t n;
		while ((n = read(s->out.fd, chunk, sizeof(chunk))) > 0 && !s->reported)
			frame_feed(&s->out.frame, chunk, (size_t)n);
	}
	/* What is there now: a grandchild that kept the pipe open must not hold the loop. */
	while (s->err_fd >= 0 && stdio_err_read(s) > 0)
		;
	stdio_gone(s);
}

static void
stdio_exit_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct stdio_tp *s = (struct stdio_tp *)((char *)w - offsetof(struct stdio_tp, exit_io));

	(void)loop;
	(void)revents;
	if (stdio_reap(s, 0))
		stdio_exited(s);
}

static void
stdio_poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct stdio_tp *s = (struct stdio_tp *)((char *)w - offsetof(struct stdio_tp, poll_tm));

	(void)loop;
	(void)revents;
	if (stdio_reap(s, 0))
		stdio_exited(s);
}

static void
stdio_gone(struct stdio_tp *s)
{
	char reason[96], sig[32];

	if (s->reported)
		return;
	s->reported = 1;
	if (WIFSIGNALED(s->status))
		snprintf(reason, sizeof(reason), "killed by %s",
		    spawn_signame(WTERMSIG(s->status), sig, sizeof(sig)));
	else
		snprintf(reason, sizeof(reason), "exited with status %d", WEXITSTATUS(s->status));
	s->t.cb.gone(s->t.cb.arg, reason, 0);	/* last: the owner frees s */
}

static void
stdio_send(struct mcp_transport *t, const json_t *msg)
{
	struct stdio_tp *s = (struct stdio_tp *)t;

	if (s->in_open && !s->in.failed)
		wq_push(&s->in, msg);
}

static void
stdio_set_version(struct mcp_transport *t, const char *version)
{
	(void)t;
	(void)version;
}

static void
stdio_close_in(struct stdio_tp *s)
{
	if (!s->in_open)
		return;
	s->in_open = 0;
	wq_free(&s->in);
	close(s->in.fd);
}

static void
stdio_ladder_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct stdio_tp *s = (struct stdio_tp *)((char *)w - offsetof(struct stdio_tp, ladder_tm));

	(void)revents;
	if (s->pid == 0)
		return;
	if (s->ladder_step++ == 0) {
		kill(-s->pid, SIGTERM);
		ev_timer_set(w, MCP_STDIO_GRACE, 0.);
		ev_timer_start(loop, w);
	} else {
		kill(-s->pid, SIGKILL);
	}
}

static void
stdio_close(struct mcp_transport *t)
{
	struct stdio_tp *s = (struct stdio_tp *)t;

	stdio_close_in(s);
	if (s->pid == 0 || ev_is_active(&s->ladder_tm) || s->ladder_step > 0)
		return;
	ev_timer_set(&s->ladder_tm, MCP_STDIO_GRACE, 0.);
	ev_timer_start(s->loop, &s->ladder_tm);
}

static void
stdio_stderr_tail(const struct mcp_transport *t, struct buf *out)
{
	const struct stdio_tp *s = (const struct stdio_tp *)t;
	size_t start = (s->tail_pos + sizeof(s->tail) - s->tail_len) % sizeof(s->tail);

	for (size_t i = 0; i < s->tail_len; i++)
		buf_append(out, &s->tail[(start + i) % sizeof(s->tail)], 1);
}

static void
stdio_free(struct mcp_transport *t)
{
	struct stdio_tp *s = (struct stdio_tp *)t;

	if (s == NULL)
		return;
	stdio_stop_watchers(s);
	if (s->pid != 0) {
		kill(-s->pid, SIGKILL);
		stdio_reap(s, 1);	/* a SIGKILLed process is gone in microseconds */
	}
	stdio_close_in(s);
	if (s->out_open) {
		reader_free(&s->out);
		close(s->out.fd);
	}
	if (s->err_fd >= 0) {
		ev_io_stop(s->loop, &s->err_io);
		close(s->err_fd);
	}
	if (s->pid_fd >= 0)
		close(s->pid_fd);
	buf_free(&s->err_line);
	free(s->name);
	free(s);
}

static const struct mcp_transport_ops stdio_ops = {
	stdio_send, stdio_set_version, stdio_close, stdio_stderr_tail, stdio_free,
};

/* argv: command then args (strings only); envp extras from [{name, value}]. Owned arrays. */
static int
stdio_argv(const char *command, const json_t *args, const json_t *env, char ***argv, char ***extra,
    size_t *nextra, struct err *e)
{
	size_t n = json_array_size(args), i;
	const json_t *v;

	*argv = xcalloc(n + 2, sizeof(**argv));
	(*argv)[0] = xstrdup(command);
	json_array_foreach(args, i, v) {
		if (!json_is_string(v))
			return err_set(e, ERR_INVALID_PARAMS, "args[%zu]: expected a string", i);
		(*argv)[i + 1] = xstrdup(json_string_value(v));
	}
	*nextra = 0;
	*extra = xcalloc(json_array_size(env) + 1, sizeof(**extra));
	json_array_foreach(env, i, v) {
		const char *k = json_string_value(json_object_get(v, "name"));
		const char *val = json_string_value(json_object_get(v, "value"));
		if (k == NULL || val == NULL || k[0] == '\0' || strchr(k, '=') != NULL)
			return err_set(e, ERR_INVALID_PARAMS, "env[%zu]: expected {name, value} strings", i);
		(*extra)[(*nextra)++] = xasprintf("%s=%s", k, val);
	}
	return 0;
}

static void
stdio_strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

static pid_t
stdio_spawn(const char *command, char **argv, char **extra, size_t nextra, const char *cwd,
    const int fd[3], struct err *e)
{
	struct spawn_opts so;
	enum spawn_stage stage;
	const char *search = NULL;
	char *path, **envp;
	int why;
	pid_t pid;

	/* A PATH the editor gave the server is the one its command is looked up on. */
	for (size_t i = 0; i < nextra; i++)
		if (strncmp(extra[i], "PATH=", 5) == 0)
			search = extra[i] + 5;
	path = spawn_find(command, search);

	if (path == NULL)
		return err_set(e, ERR_MCP_START_FAILED, "cannot run %s: not found on PATH", command);
	envp = spawn_env(extra, nextra);
	memset(&so, 0, sizeof(so));
	so.path = path;
	so.argv = argv;
	so.envp = envp;
	so.workdir = cwd;
	memcpy(so.fd, fd, sizeof(so.fd));
	pid = spawn_start(&so, &stage, &why);
	free(envp);
	free(path);
	if (pid >= 0)
		return pid;
	if (stage == SPAWN_CHDIR)
		return err_set(e, ERR_MCP_START_FAILED, "cannot enter %s: %s", cwd, strerror(why));
	return err_set(e, ERR_MCP_START_FAILED, "cannot run %s: %s", command, strerror(why));
}

struct mcp_transport *
mcp_stdio_new(struct ev_loop *loop, const char *name, const char *command, const json_t *args,
    const json_t *env, const char *cwd, const struct mcp_transport_cb *cb, struct err *e)
{
	struct stdio_tp *s;
	char **argv = NULL, **extra = NULL;
	size_t nextra = 0;
	int in[2], out[2], er[2], child[3];
	pid_t pid;

	if (stdio_argv(command, args, env, &argv, &extra, &nextra, e) < 0) {
		stdio_strv_free(argv);
		stdio_strv_free(extra);
		return NULL;
	}
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(er, O_CLOEXEC) < 0) {
		/* Out of descriptors: nothing is worth keeping open for a server that cannot start. */
		err_set(e, ERR_MCP_START_FAILED, "cannot run %s: %s", command, strerror(errno));
		stdio_strv_free(argv);
		stdio_strv_free(extra);
		return NULL;
	}
	child[0] = in[0];
	child[1] = out[1];
	child[2] = er[1];
	pid = stdio_spawn(command, argv, extra, nextra, cwd, child, e);
	stdio_strv_free(argv);
	stdio_strv_free(extra);
	close(in[0]);
	close(out[1]);
	close(er[1]);
	if (pid < 0) {
		close(in[1]);
		close(out[0]);
		close(er[0]);
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	s->t.ops = &stdio_ops;
	s->t.cb = *cb;
	s->loop = loop;
	s->name = xstrdup(name);
	s->pid = pid;
	buf_init(&s->err_line);
	fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
	fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
	fcntl(er[0], F_SETFL, fcntl(er[0], F_GETFL) | O_NONBLOCK);
	wq_init(&s->in, loop, in[1]);
	s->in_open = 1;
	reader_init(&s->out, loop, out[0], stdio_on_line, stdio_on_overlong, stdio_on_out_eof, s);
	s->out_open = 1;
	s->err_fd = er[0];
	ev_io_init(&s->err_io, stdio_err_cb, er[0], EV_READ);
	ev_io_start(loop, &s->err_io);
	ev_init(&s->ladder_tm, stdio_ladder_cb);
	ev_init(&s->poll_tm, stdio_poll_cb);
	s->pid_fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (s->pid_fd >= 0) {
		ev_io_init(&s->exit_io, stdio_exit_cb, s->pid_fd, EV_READ);
		ev_io_start(loop, &s->exit_io);
	} else {
		ev_init(&s->exit_io, stdio_exit_cb);
		ev_timer_set(&s->poll_tm, STDIO_POLL, STDIO_POLL);
		ev_timer_start(loop, &s->poll_tm);
	}
	log_debug("[mcp:%s] started %s (pid %d)", name, command, (int)pid);
	return &s->t;
}

int
mcp_stdio_pid(const struct mcp_transport *t)
{
	return (int)((const struct stdio_tp *)t)->pid;
}
