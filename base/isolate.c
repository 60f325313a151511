/* Killable work: fork, run in the child, collect its bytes through a pipe; kill, reap on cancel. */
#include "base/isolate.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ISOLATE_READ ((size_t)64 * 1024)

/* Writes all of p[0..n) to fd; 0, or -1. Every signal is blocked, so no EINTR. */
static int
isolate_write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Closes every fd from lo up to hi (inclusive). */
static void
isolate_close_from(unsigned lo, unsigned hi)
{
	struct rlimit rl;
	unsigned max;

	if (lo > hi || syscall(SYS_close_range, lo, hi, 0U) == 0)
		return;
	/* Kernels before 5.9: one by one, up to the fd limit. */
	max = 65536;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < max)
		max = (unsigned)rl.rlim_cur;
	for (unsigned fd = lo; fd <= hi && fd < max; fd++)
		close((int)fd);
}

/*
 * The child: dies with the thread that forked it, keeps only stderr and its pipe (fds 0 and 1
 * are the protocol's: /dev/null here), runs fn and sends a length, then the bytes.
 */
static void __attribute__((noreturn))
isolate_child(isolate_fn *fn, void *arg, int w, pid_t parent)
{
	struct buf out;
	uint64_t len;
	int nul;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(127);	/* cannot die with us, or we died before it was armed */
	if (w < 3 && (w = fcntl(w, F_DUPFD, 3)) < 0)
		_exit(127);
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0)
		_exit(127);
	isolate_close_from(3, (unsigned)w - 1);
	isolate_close_from((unsigned)w + 1, ~0U);
	buf_init(&out);
	fn(arg, &out);
	len = out.len;
	if (isolate_write_all(w, (const char *)&len, sizeof(len)) < 0 ||
	    isolate_write_all(w, out.data ? out.data : "", out.len) < 0)
		_exit(1);
	_exit(0);
}

/* Kills the child (SIGKILL cannot be caught or blocked) and reaps it; its wait status. */
static int
isolate_kill(pid_t pid)
{
	int st = 0;

	kill(pid, SIGKILL);	/* not reaped yet: pid is still ours */
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

/* Whether the caller asked us to stop: the flag, or a byte on the wake fd. */
static int
isolate_cancelled(const atomic_int *cancel, const struct pollfd *wake)
{
	if (cancel && atomic_load(cancel))
		return 1;
	return wake && (wake->revents & (POLLIN | POLLHUP | POLLERR));
}

int
isolate_run(isolate_fn *fn, void *arg, struct buf *out, const atomic_int *cancel, int wake_fd,
    int *status)
{
	struct buf raw;
	sigset_t all, old;
	int p[2], st = 0, rc = -1, ended = 0, dummy;
	pid_t parent = getpid(), pid;

	if (status == NULL)
		status = &dummy;
	*status = -1;
	if (isolate_cancelled(cancel, NULL))
		return 1;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	/* No handler of ours may run in the child: every signal stays blocked there. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		isolate_child(fn, arg, p[1], parent);
	}
	int fork_errno = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		errno = fork_errno;
		return -1;
	}
	buf_init(&raw);
	for (;;) {
		struct pollfd fds[2] = { { p[0], POLLIN, 0 }, { wake_fd, POLLIN, 0 } };
		int n = poll(fds, wake_fd >= 0 ? 2 : 1, wake_fd >= 0 ? 100 : 10);

		if (n < 0 && errno != EINTR)
			break;	/* cannot wait: treated as a death below */
		if (isolate_cancelled(cancel, wake_fd >= 0 && n > 0 ? &fds[1] : NULL)) {
			rc = 1;
			break;
		}
		if (n <= 0 || !(fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		buf_reserve(&raw, ISOLATE_READ);
		ssize_t r = read(p[0], raw.data + raw.len, ISOLATE_READ);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;	/* cannot read: killed below, as a death */
		if (r == 0) {
			ended = 1;	/* EOF: the child closed its end, that is, it ended */
			break;
		}
		raw.len += (size_t)r;
		raw.data[raw.len] = '\0';
		if (raw.len > ISOLATE_MAX + sizeof(uint64_t))
			break;
	}
	close(p[0]);
	if (ended) {
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		/*
		 * The bytes decide, not the status: a whole record was written before the
		 * child's _exit (under valgrind its leak report may turn that 0 into 1; with
		 * SIGCHLD ignored waitpid says ECHILD).
		 */
		uint64_t len = 0;
		if (raw.len >= sizeof(len))
			memcpy(&len, raw.data, sizeof(len));
		if (raw.len >= sizeof(len) && len == raw.len - sizeof(len)) {
			buf_append(out, raw.data + sizeof(len), (size_t)len);
			rc = 0;
		} else {
			*status = st;
		}
	} else {
		st = isolate_kill(pid);
		if (rc != 1)
			*status = st;
	}
	buf_free(&raw);
	return rc;
}
