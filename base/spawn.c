/* Starting child processes: clone as vfork does, the child's set-up, exec, the failure pipe. */
#include "base/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/guard.h"
#include "base/xmalloc.h"

extern char **environ;

#define SPAWN_STACK ((size_t)64 * 1024)	/* the child's, between clone and exec */
/* Code run by the child on its own stack: ASan's stack bookkeeping (its poisoned frames, its
 * handling of a call that does not return) is the parent's, whose memory the child shares. */
#define SPAWN_CHILD_CODE __attribute__((no_sanitize("address", "undefined")))

struct spawn_fail {
	int stage;
	int err;
};

struct spawn_child {
	const struct spawn_opts *o;
	int fd[3];
	int st_w;
	pid_t parent;
	int maxfd;
};

/* Moves fd above the standard three, so the child's dup2 onto 0-2 never clobbers it. */
static int
spawn_fd_high(int fd)
{
	int high;

	if (fd < 0 || fd > 2)
		return fd;
	high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return high;
}

static void SPAWN_CHILD_CODE __attribute__((noreturn))
spawn_child_fail(const struct spawn_child *c, int stage)
{
	struct spawn_fail f = { stage, errno };
	ssize_t n = write(c->st_w, &f, sizeof(f));

	(void)n;
	_exit(127);
}

/*
 * The child between clone and exec. It shares our memory (CLONE_VM) while we wait for its exec:
 * async-signal-safe calls only, and it writes its own stack and errno alone (the errno of the
 * thread that waits; spawn_start reads it only on failure, from the status pipe).
 */
static void SPAWN_CHILD_CODE __attribute__((noreturn))
spawn_child(const struct spawn_child *c)
{
	struct sigaction sa;
	sigset_t none;
	int nul = -1;

	/* Handlers and ignored signals (SIGPIPE) of ours must not reach the program. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &sa, NULL);	/* glibc's reserved ones: EINVAL, harmless */
	/* Those glibc reserves (32, 33) may come in ignored (GNU make's children get them so) and an
	 * ignored signal stays ignored across exec: reset them with the system call itself. */
	struct { unsigned long handler, flags, restorer, mask; } kdfl = { 0 };	/* SIG_DFL is 0 */
	for (int sig = 32; sig < SIGRTMIN; sig++)
		syscall(SYS_rt_sigaction, sig, &kdfl, NULL, sizeof(kdfl.mask));
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (setsid() < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		spawn_child_fail(c, SPAWN_SETUP);
	if (getppid() != c->parent)
		_exit(127);	/* the parent died before the death signal was armed */
	for (int fd = 0; fd < 3; fd++) {
		int from = c->fd[fd];
		if (from < 0) {
			if (nul < 0 && (nul = open("/dev/null", O_RDWR)) < 0)
				spawn_child_fail(c, SPAWN_SETUP);
			from = nul;
		}
		if (dup2(from, fd) < 0)
			spawn_child_fail(c, SPAWN_SETUP);
		fcntl(fd, F_SETFD, 0);
	}
	if (c->o->workdir != NULL && chdir(c->o->workdir) < 0)
		spawn_child_fail(c, SPAWN_CHDIR);
	/* Every other fd ends at exec: CLOEXEC on all (the status pipe closes at exec, too). */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		for (int fd = 3; fd < c->maxfd; fd++)
			if (fd != c->st_w)
				close(fd);
	execve(c->o->path, c->o->argv, c->o->envp);
	spawn_child_fail(c, SPAWN_EXEC);
}

static int SPAWN_CHILD_CODE
spawn_child_entry(void *arg)
{
	spawn_child(arg);
	return 0;	/* not reached: spawn_child execs or exits */
}

pid_t
spawn_start(const struct spawn_opts *o, enum spawn_stage *stage, int *err)
{
	struct spawn_child c;
	struct spawn_fail f;
	struct rlimit rl;
	sigset_t all, old;
	void *stack;
	int st[2];
	ssize_t n;
	pid_t pid;

	*stage = SPAWN_SETUP;
	if (pipe2(st, O_CLOEXEC) < 0) {
		*err = errno;
		return -1;
	}
	memset(&c, 0, sizeof(c));
	c.o = o;
	for (int i = 0; i < 3; i++)
		c.fd[i] = o->fd[i];
	c.st_w = spawn_fd_high(st[1]);
	c.parent = getpid();
	c.maxfd = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
	/* The child's fds must not sit on 0-2 where an earlier dup2 would overwrite them. */
	for (int i = 0; i < 3; i++)
		if (c.fd[i] >= 0 && c.fd[i] <= 2 && c.fd[i] != i)
			c.fd[i] = fcntl(c.fd[i], F_DUPFD_CLOEXEC, 3);

	/*
	 * vfork's sharing, not fork's copy: a fork write-protects every page of a large process, and
	 * the loop thread then faults on each page it writes (tens of ms on a VM). The child runs on a
	 * stack of its own; this thread sleeps until its exec or exit.
	 */
	/* cppcheck-suppress invalidFunctionArg ; an anonymous mapping takes no fd: -1 is the rule */
	stack = mmap(NULL, SPAWN_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	/* its lowest page a guard: an overflow faults in the child, never writes our memory */
	if (stack != MAP_FAILED && mprotect(stack, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE) < 0) {
		munmap(stack, SPAWN_STACK);
		stack = MAP_FAILED;
	}
	if (stack == MAP_FAILED) {
		*err = errno;
		close(st[0]);
		close(c.st_w);
		for (int i = 0; i < 3; i++)
			if (c.fd[i] != o->fd[i])
				close(c.fd[i]);
		return -1;
	}
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = clone(spawn_child_entry, (char *)stack + SPAWN_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
	*err = errno;
	munmap(stack, SPAWN_STACK);
	guard_add(pid);		/* its group dies with us, even by SIGKILL (base/guard.h) */
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(c.st_w);
	for (int i = 0; i < 3; i++)
		if (c.fd[i] != o->fd[i])
			close(c.fd[i]);
	if (pid < 0) {
		close(st[0]);
		return -1;
	}
	/* EOF: the exec happened (CLOEXEC closed the pipe); a record: the child failed. */
	do
		n = read(st[0], &f, sizeof(f));
	while (n < 0 && errno == EINTR);
	*err = n < 0 ? errno : 0;
	close(st[0]);
	if (n == 0) {
		*stage = SPAWN_OK;
		return pid;
	}
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	guard_forget(pid);
	if (n == (ssize_t)sizeof(f)) {
		*stage = (enum spawn_stage)f.stage;
		*err = f.err;
	} else if (n > 0) {
		*err = EIO;	/* a short record */
	}
	return -1;
}

char *
spawn_find(const char *name, const char *path)
{
	char *dirs, *dir, *save = NULL;

	if (strchr(name, '/') != NULL)
		return xstrdup(name);
	if (path == NULL)
		path = getenv("PATH");
	dirs = xstrdup(path != NULL ? path : "/usr/bin:/bin");
	for (dir = strtok_r(dirs, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
		char *cand = xasprintf("%s/%s", dir, name);
		if (access(cand, X_OK) == 0) {
			free(dirs);
			return cand;
		}
		free(cand);
	}
	free(dirs);
	return NULL;
}

/* The length of the name part of "NAME=value" (the whole string when it has no '='). */
static size_t
spawn_env_key(const char *s)
{
	const char *eq = strchr(s, '=');

	return eq != NULL ? (size_t)(eq - s) : strlen(s);
}

char **
spawn_env(char *const *extra, size_t n)
{
	size_t have = 0, k = 0;
	char **envp;

	while (environ[have] != NULL)
		have++;
	envp = xcalloc(have + n + 1, sizeof(*envp));
	for (size_t i = 0; i < have; i++) {
		size_t kl = spawn_env_key(environ[i]);
		int replaced = 0;
		if (strncmp(environ[i], "ACP_AGENT_", 10) == 0)
			continue;
		for (size_t j = 0; j < n && !replaced; j++)
			replaced = spawn_env_key(extra[j]) == kl && strncmp(extra[j], environ[i], kl) == 0;
		if (!replaced)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < n; j++)
		envp[k++] = extra[j];
	envp[k] = NULL;
	return envp;
}

const char *
spawn_signame(int signo, char *buf, size_t size)
{
	const char *abbrev = sigabbrev_np(signo);

	if (abbrev != NULL)
		snprintf(buf, size, "SIG%s", abbrev);
	else
		snprintf(buf, size, "signal %d", signo);
	return buf;
}
