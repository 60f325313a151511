/* The guardian: see base/guard.h. */
#include "base/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* One message: a group to keep (add 1) or to drop (add 0); under PIPE_BUF, so writes are whole. */
struct guard_msg {
	pid_t pgid;
	int add;
};

static int guard_fd = -1;	/* the pipe's write end; -1: no guardian */

/* The guardian itself: its table of groups, until the pipe ends. Never returns. */
static void __attribute__((noreturn))
guard_main(int rfd)
{
	pid_t *groups = NULL;
	size_t n = 0, cap = 0;
	struct guard_msg m;
	sigset_t none;
	int nul;

	/* Its own session: a signal to the agent's group (an editor stopping it) leaves the
	 * guardian to do its work; the signals a terminal or a parent sends are ignored. */
	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	prctl(PR_SET_NAME, "acp-agent-guard");
	/* Nothing of the agent's stays open here (its protocol stream must end when it does). */
	if ((nul = open("/dev/null", O_RDWR)) >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
	}
	if (rfd != 3 && dup2(rfd, 3) == 3)
		rfd = 3;
	if (syscall(SYS_close_range, 4U, ~0U, 0U) < 0)
		for (int fd = 4; fd < 65536; fd++)
			close(fd);
	for (;;) {
		ssize_t r = read(rfd, &m, sizeof(m));
		if (r < 0 && errno == EINTR)
			continue;
		if (r != (ssize_t)sizeof(m))
			break;	/* EOF: the agent is gone (or a torn message, which it never writes) */
		if (m.add) {
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				pid_t *g = realloc(groups, ncap * sizeof(*g));
				if (g == NULL)
					continue;	/* that group is not guarded; the rest still are */
				groups = g;
				cap = ncap;
			}
			groups[n++] = m.pgid;
			continue;
		}
		for (size_t i = 0; i < n; i++)
			if (groups[i] == m.pgid) {
				groups[i] = groups[--n];
				break;
			}
	}
	for (size_t i = 0; i < n; i++)
		kill(-groups[i], SIGKILL);
	free(groups);
	_exit(0);
}

int
guard_start(struct err *e)
{
	int p[2];
	sigset_t all, old;
	pid_t pid;

	if (guard_fd >= 0)
		return 0;
	if (pipe2(p, O_CLOEXEC) < 0)
		return err_set(e, ERR_INTERNAL, "the guardian's pipe: %s", strerror(errno));
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		guard_main(p[0]);
	}
	int saved = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		return err_set(e, ERR_INTERNAL, "cannot start the guardian: %s", strerror(saved));
	}
	guard_fd = p[1];
	return 0;
}

static void
guard_send(pid_t pgid, int add)
{
	struct guard_msg m;
	ssize_t r;

	if (guard_fd < 0 || pgid <= 1)
		return;
	memset(&m, 0, sizeof(m));
	m.pgid = pgid;
	m.add = add;
	do
		r = write(guard_fd, &m, sizeof(m));
	while (r < 0 && errno == EINTR);
}

void
guard_add(pid_t pgid)
{
	guard_send(pgid, 1);
}

void
guard_forget(pid_t pgid)
{
	guard_send(pgid, 0);
}
