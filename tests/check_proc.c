/* workspace/proc and workspace/jobs: bash -c on a real loop, its output, its end, its jobs. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/guard.h"
#include "base/spawn.h"
#include "base/xmalloc.h"
#include "tests/helpers.h"
#include "workspace/jobs.h"
#include "workspace/proc.h"

#define GUARD 30.0	/* seconds: a hung case fails instead of hanging; never a timing assert */

/* Per-test state (checked fixture: each test runs in its own fork). */
static struct {
	char dir[64], spill[128], path[256];
	struct ev_loop *loop;
	struct ws_proc *p;
	int done, progress, progress_at_cancel, free_in_done, go_on, runs;
	char *text, *last_progress, *spill_path;
	int exit_code, signo, timed_out, killed;
	uint64_t total;
	char err_code[64], err_msg[512];
	struct ws_jobs *jobs;
	struct buf events;		/* the jobs hooks' calls */
	int answers;
	char *answer;
	/* process state some tests change, restored for CK_FORK=no (valgrind) runs */
	struct rlimit fsize;
	sigset_t mask;
	struct sigaction pipe_sa, xfsz_sa, chld_sa, usr1_sa;
	struct rlimit nofile;
	mode_t umask;
	int stdin_fd;
} fx;

static void
setup(void)
{
	memset(&fx, 0, sizeof(fx));
	test_mkdtemp(fx.dir, sizeof(fx.dir));
	snprintf(fx.spill, sizeof(fx.spill), "%s/spill", fx.dir);
	ck_assert_int_eq(mkdir(fx.spill, 0700), 0);
	fx.loop = ev_loop_new(EVFLAG_AUTO);
	buf_init(&fx.events);
	getrlimit(RLIMIT_FSIZE, &fx.fsize);
	sigprocmask(SIG_SETMASK, NULL, &fx.mask);
	sigaction(SIGPIPE, NULL, &fx.pipe_sa);
	sigaction(SIGXFSZ, NULL, &fx.xfsz_sa);
	sigaction(SIGCHLD, NULL, &fx.chld_sa);
	sigaction(SIGUSR1, NULL, &fx.usr1_sa);
	getrlimit(RLIMIT_NOFILE, &fx.nofile);
	fx.umask = umask(077);
	umask(fx.umask);
	fx.stdin_fd = dup(0);
}

static void
teardown(void)
{
	ws_jobs_free(fx.jobs);
	ws_proc_free(fx.p);
	ev_loop_destroy(fx.loop);
	free(fx.text);
	free(fx.last_progress);
	free(fx.spill_path);
	free(fx.answer);
	buf_free(&fx.events);
	test_rmtree(fx.dir);
	setrlimit(RLIMIT_FSIZE, &fx.fsize);
	sigprocmask(SIG_SETMASK, &fx.mask, NULL);
	sigaction(SIGPIPE, &fx.pipe_sa, NULL);
	sigaction(SIGXFSZ, &fx.xfsz_sa, NULL);
	sigaction(SIGCHLD, &fx.chld_sa, NULL);
	sigaction(SIGUSR1, &fx.usr1_sa, NULL);
	setrlimit(RLIMIT_NOFILE, &fx.nofile);
	umask(fx.umask);
	dup2(fx.stdin_fd, 0);
	close(fx.stdin_fd);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	unsetenv("ACP_AGENT_X");
	unsetenv("ACP_AGENT_API_KEY");
	unsetenv("KEEP_ME");
	unsetenv("NOT_ACP_AGENT_Y");
}

static const char *
at(const char *name)
{
	snprintf(fx.path, sizeof(fx.path), "%s/%s", fx.dir, name);
	return fx.path;
}

static void
on_done(void *arg, struct ws_proc *p, const struct ws_proc_result *r)
{
	(void)arg;
	fx.done++;
	ck_assert_uint_eq(strlen(r->text), r->len);
	free(fx.text);
	fx.text = xstrdup(r->text);
	free(fx.spill_path);
	fx.spill_path = xstrdup(r->spill_path);
	fx.exit_code = r->exit_code;
	fx.signo = r->signo;
	fx.timed_out = r->timed_out;
	fx.killed = r->killed;
	fx.total = r->total_bytes;
	if (r->err != NULL) {
		snprintf(fx.err_code, sizeof(fx.err_code), "%s", err_tool(r->err->code));
		snprintf(fx.err_msg, sizeof(fx.err_msg), "%s", r->err->msg);
	}
	if (fx.free_in_done) {
		ck_assert_ptr_eq(p, fx.p);
		ws_proc_free(p);
		fx.p = NULL;
	}
}

/* Creates the file "go" once the progress shows "one\n": the command waits for it. */
static void
on_progress(void *arg, struct ws_proc *p, const char *text, size_t len)
{
	(void)arg;
	(void)p;
	fx.progress++;
	ck_assert_int_eq(fx.done, 0);
	ck_assert_uint_eq(strlen(text), len);
	free(fx.last_progress);
	fx.last_progress = xstrdup(text);
	if (fx.go_on && strcmp(text, "one\n") == 0)
		test_write_file(at("go"), "", 0);
}

static void
guard_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	*(int *)w->data = 1;
	ev_break(loop, EVBREAK_ALL);
}

static void
tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

/* Runs the loop until cond() holds; fails after GUARD seconds. */
static void
loop_until(int (*cond)(void))
{
	ev_timer guard, tick;
	int fired = 0;

	ev_timer_init(&guard, guard_cb, GUARD, 0.);
	guard.data = &fired;
	ev_timer_start(fx.loop, &guard);
	ev_timer_init(&tick, tick_cb, 0.01, 0.01);
	ev_timer_start(fx.loop, &tick);	/* wakes the loop to look at cond() now and then */
	while (!cond() && !fired)
		ev_run(fx.loop, EVRUN_ONCE);
	ev_timer_stop(fx.loop, &guard);
	ev_timer_stop(fx.loop, &tick);
	ck_assert_msg(!fired, "guard of %.0f s expired", GUARD);
}

static int
is_done(void)
{
	return fx.done > 0;
}

/*
 * The shell's `echo X > gc` creates the file before it writes to it: wait for
 * the whole line (its newline), not for the file.
 */
static int
gc_written(void)
{
	char *s = test_read_file(at("gc"), NULL);
	int whole = s != NULL && *s != '\0' && s[strlen(s) - 1] == '\n';

	free(s);
	return whole;
}

static int
not_running(void)
{
	return !ws_proc_running(fx.p);
}

static int
answered(void)
{
	return fx.answers > 0;
}

static struct ws_proc_opts
opts(const char *command)
{
	struct ws_proc_opts o;

	memset(&o, 0, sizeof(o));
	o.command = command;
	o.workdir = fx.dir;
	o.spill_dir = fx.spill;
	o.name = "call-1";
	o.done = on_done;
	return o;
}

static struct ws_proc *
start(const struct ws_proc_opts *o)
{
	struct err e;

	err_clear(&e);
	fx.p = ws_proc_start(fx.loop, o, &e);
	ck_assert_msg(fx.p != NULL, "start: %s %s", err_tool(e.code), e.msg);
	return fx.p;
}

/* Runs command to its end with the default options plus timeout_ms. */
static void
run(const char *command, int64_t timeout_ms)
{
	struct ws_proc_opts o = opts(command);
	char name[16];

	snprintf(name, sizeof(name), "run-%d", ++fx.runs);
	o.name = fx.runs == 1 ? "call-1" : name;
	o.timeout_ms = timeout_ms;
	start(&o);
	loop_until(is_done);
	ck_assert_int_eq(fx.done, 1);
}

static void
expect_start_error(const struct ws_proc_opts *o, const char *code, const char *msg)
{
	struct err e;

	err_clear(&e);
	ck_assert_ptr_null(ws_proc_start(fx.loop, o, &e));
	ck_assert_str_eq(err_tool(e.code), code);
	ck_assert_str_eq(e.msg, msg);
}

static pid_t
read_pid(const char *name)
{
	char *s = test_read_file(at(name), NULL);
	pid_t pid;

	ck_assert_ptr_nonnull(s);
	pid = (pid_t)atoi(s);
	free(s);
	ck_assert_int_gt(pid, 1);
	return pid;
}

static int
group_gone(pid_t pgid)
{
	return kill(-pgid, 0) < 0 && errno == ESRCH;
}

/* Dead: no such process, or a zombie some other parent has not reaped yet. */
static int
pid_dead(pid_t pid)
{
	char path[64], st[512];
	int fd, n;
	const char *rp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY)) < 0)
		return 1;
	n = (int)read(fd, st, sizeof(st) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	st[n] = '\0';
	rp = strrchr(st, ')');
	return rp != NULL && (rp[2] == 'Z' || rp[2] == 'X');
}

static void
assert_no_zombie(void)
{
	int st;
	pid_t r = waitpid(-1, &st, WNOHANG);

	ck_assert_msg(r == 0 || (r < 0 && errno == ECHILD), "a child was left to reap: %d", (int)r);
}

/* Orphans of the shell come to us, so the library's reap can be checked to the last one. */
static void
subreaper(void)
{
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
}

/* Long texts: a mismatch names its first differing byte instead of printing kilobytes. */
static void
text_eq(const char *got, const char *want)
{
	size_t i = 0;

	while (got[i] != '\0' && got[i] == want[i])
		i++;
	ck_assert_msg(got[i] == want[i],
	    "texts differ at byte %zu (lengths %zu, %zu): \"%.40s\" vs \"%.40s\"",
	    i, strlen(got), strlen(want), got + i, want + i);
}

/* A pattern without newlines: byte i of it. */
static char
pat(size_t i)
{
	return (char)('a' + (i * 7 + i / 26) % 26);
}

static char *
write_pattern(const char *name, size_t n)
{
	char *d = xmalloc(n + 1);

	for (size_t i = 0; i < n; i++)
		d[i] = pat(i);
	d[n] = '\0';
	test_write_file(at(name), d, n);
	return d;
}

/* The capped text of d[0, n) as docs/contract.md §16.3 has it. */
static char *
capped(const char *d, size_t n, const char *spill)
{
	struct buf b;

	buf_init(&b);
	if (n <= WS_PROC_HEAD + WS_PROC_TAIL) {
		buf_append(&b, d, n);
	} else {
		buf_append(&b, d, WS_PROC_HEAD);
		if (d[WS_PROC_HEAD - 1] != '\n')
			buf_puts(&b, "\n");
		buf_printf(&b, "[\xe2\x80\xa6 %zu bytes omitted; full output: %s]\n",
		    n - WS_PROC_HEAD - WS_PROC_TAIL, spill);
		buf_append(&b, d + n - WS_PROC_TAIL, WS_PROC_TAIL);
	}
	return buf_steal(&b);
}

START_TEST(proc_stdout_and_stderr_share_one_pipe_in_order)
{
	run("echo a; echo b >&2; echo c; printf d >&2", 0);
	ck_assert_str_eq(fx.text, "a\nb\nc\nd");
	ck_assert_int_eq(fx.exit_code, 0);
	ck_assert_int_eq(fx.signo, 0);
	ck_assert(!fx.timed_out && !fx.killed);
	ck_assert_uint_eq(fx.total, 7);
	ck_assert_str_eq(fx.err_code, "");
}
END_TEST

START_TEST(proc_nonzero_exit_appends_exit_code_line)
{
	run("echo hi; exit 3", 0);
	ck_assert_str_eq(fx.text, "hi\n[exit code: 3]");
	ck_assert_int_eq(fx.exit_code, 3);
	fx.p = (ws_proc_free(fx.p), NULL);
	fx.done = 0;
	run("printf x; exit 1", 0);
	ck_assert_str_eq(fx.text, "x\n[exit code: 1]");
	fx.p = (ws_proc_free(fx.p), NULL);
	fx.done = 0;
	struct ws_proc_opts o = opts("exit 255");
	o.name = "call-2";
	start(&o);
	loop_until(is_done);
	ck_assert_str_eq(fx.text, "[exit code: 255]");
}
END_TEST

START_TEST(proc_death_by_signal_renders_signal_name)
{
	run("echo going; kill -KILL $$", 0);
	ck_assert_str_eq(fx.text, "going\n[killed by signal SIGKILL]");
	ck_assert_int_eq(fx.exit_code, -1);
	ck_assert_int_eq(fx.signo, SIGKILL);
	ck_assert(!fx.killed);
}
END_TEST

START_TEST(proc_output_up_to_32k_is_whole)
{
	char *d = write_pattern("data", WS_PROC_HEAD + WS_PROC_TAIL);

	run("cat data", 0);
	ck_assert_uint_eq(strlen(fx.text), WS_PROC_HEAD + WS_PROC_TAIL);
	text_eq(fx.text, d);
	free(d);
}
END_TEST

START_TEST(proc_output_over_32k_keeps_head_and_tail_with_omitted_line)
{
	size_t sizes[] = { WS_PROC_HEAD + WS_PROC_TAIL + 1, 100000 };

	for (size_t k = 0; k < 2; k++) {
		char *d = write_pattern("data", sizes[k]), *want, name[16];
		struct ws_proc_opts o = opts("cat data");
		snprintf(name, sizeof(name), "call-%zu", k);
		o.name = name;
		fx.done = 0;
		start(&o);
		loop_until(is_done);
		want = capped(d, sizes[k], fx.spill_path);
		text_eq(fx.text, want);
		ck_assert_uint_eq(fx.total, sizes[k]);
		free(want);
		free(d);
		fx.p = (ws_proc_free(fx.p), NULL);
	}
	/* the exact omitted line of the first: one byte */
	ck_assert_ptr_nonnull(strstr(fx.text, "\n[\xe2\x80\xa6 67232 bytes omitted; full output: "));
}
END_TEST

START_TEST(proc_head_ending_in_newline_gets_no_blank_line)
{
	struct buf b;
	char *want;

	buf_init(&b);
	for (int i = 0; i < 1000; i++)
		buf_printf(&b, "%063d\n", i);	/* 64-byte lines: the head ends a line */
	test_write_file(at("data"), b.data, b.len);
	run("cat data", 0);
	want = capped(b.data, b.len, fx.spill_path);
	text_eq(fx.text, want);
	ck_assert_ptr_nonnull(strstr(fx.text, "0127\n[\xe2\x80\xa6 "));
	free(want);
	buf_free(&b);
}
END_TEST

START_TEST(proc_cuts_head_and_tail_on_utf8_boundaries)
{
	struct buf d, want;

	buf_init(&d);
	for (int i = 0; i < WS_PROC_HEAD - 1; i++)
		buf_puts(&d, "a");
	buf_puts(&d, "\xc3\xa9");		/* straddles the head's end */
	for (int i = 0; i < 1000; i++)
		buf_puts(&d, "b");
	buf_puts(&d, "\xe2\x82\xac");		/* its lead byte is just before the tail */
	for (int i = 0; i < WS_PROC_TAIL - 2; i++)
		buf_puts(&d, "c");
	test_write_file(at("data"), d.data, d.len);
	run("cat data", 0);
	buf_init(&want);
	buf_append(&want, d.data, WS_PROC_HEAD - 1);
	buf_printf(&want, "\n[\xe2\x80\xa6 1005 bytes omitted; full output: %s]\n", fx.spill_path);
	buf_append(&want, d.data + d.len - (WS_PROC_TAIL - 2), WS_PROC_TAIL - 2);
	text_eq(fx.text, want.data);
	buf_free(&want);
	buf_free(&d);
	fx.p = (ws_proc_free(fx.p), NULL);
	fx.done = 0;
	struct ws_proc_opts o = opts("printf 'x\\377y'");
	o.name = "call-2";
	start(&o);
	loop_until(is_done);
	ck_assert_str_eq(fx.text, "x\xef\xbf\xbdy");
	fx.p = (ws_proc_free(fx.p), NULL);
	fx.done = 0;
	o = opts("printf 'a\\0b'");
	o.name = "call-3";
	start(&o);
	loop_until(is_done);
	ck_assert_str_eq(fx.text, "a\xef\xbf\xbd" "b");	/* NUL too: the text is a C string */
	ck_assert_uint_eq(fx.total, 3);
}
END_TEST

START_TEST(proc_spill_file_holds_all_output_mode_0600)
{
	char *d = write_pattern("data", 200000), *s;
	struct stat st;
	size_t n;

	umask(0);
	run("cat data; echo tail >&2", 0);
	snprintf(fx.path, sizeof(fx.path), "%s/call-1.out", fx.spill);
	ck_assert_str_eq(fx.spill_path, fx.path);
	ck_assert_int_eq(stat(fx.spill_path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	s = test_read_file(fx.spill_path, &n);
	ck_assert_uint_eq(n, 200005);
	ck_assert_int_eq(memcmp(s, d, 200000), 0);
	ck_assert_str_eq(s + 200000, "tail\n");
	free(s);
	free(d);
	/* small output: the file is kept too */
	fx.p = (ws_proc_free(fx.p), NULL);
	fx.done = 0;
	struct ws_proc_opts o = opts("echo small");
	o.name = NULL;		/* a generated name */
	start(&o);
	loop_until(is_done);
	ck_assert_ptr_nonnull(strstr(fx.spill_path, "/spill/bash-"));
	s = test_read_file(fx.spill_path, NULL);
	ck_assert_str_eq(s, "small\n");
	ck_assert_int_eq(stat(fx.spill_path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	free(s);
}
END_TEST

START_TEST(proc_environment_drops_acp_agent_variables)
{
	setenv("ACP_AGENT_X", "secret", 1);
	setenv("ACP_AGENT_API_KEY", "sk-secret", 1);
	setenv("KEEP_ME", "yes", 1);
	setenv("NOT_ACP_AGENT_Y", "kept", 1);
	run("env", 0);
	ck_assert_ptr_nonnull(strstr(fx.text, "KEEP_ME=yes\n"));
	ck_assert_ptr_nonnull(strstr(fx.text, "NOT_ACP_AGENT_Y=kept\n"));
	ck_assert_ptr_null(strstr(fx.text, "secret"));
	ck_assert_ptr_null(strstr(fx.text, "\nACP_AGENT_"));
	ck_assert(strncmp(fx.text, "ACP_AGENT_", 10) != 0);
}
END_TEST

START_TEST(proc_stdin_is_dev_null_and_no_fd_leaks)
{
	char cmd[256];
	int leak = open("/dev/null", O_RDONLY);	/* no O_CLOEXEC: must not reach the child */
	int in[2];

	ck_assert_int_gt(leak, 2);
	/* Our stdin holds data: a child that inherited it would print it. */
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(write(in[1], "inherited\n", 10), 10);
	close(in[1]);
	ck_assert_int_eq(dup2(in[0], 0), 0);
	close(in[0]);
	snprintf(cmd, sizeof(cmd), "readlink /proc/$$/fd/0; cat; echo rc=$?; "
	    "[ -e /proc/$$/fd/%d ] && echo leaked || echo closed", leak);
	run(cmd, 0);
	ck_assert_str_eq(fx.text, "/dev/null\nrc=0\nclosed\n");
	close(leak);
}
END_TEST

START_TEST(proc_runs_in_workdir_own_session_and_group)
{
	char want[512], real[256];
	struct ws_proc_opts o;

	ck_assert_int_eq(mkdir(at("sub"), 0700), 0);
	ck_assert_ptr_nonnull(realpath(fx.path, real));
	o = opts("pwd; cut -d' ' -f5,6 /proc/$$/stat; echo $$");
	o.workdir = real;
	start(&o);
	loop_until(is_done);
	snprintf(want, sizeof(want), "%s\n%d %d\n%d\n", real, ws_proc_pgid(fx.p), ws_proc_pgid(fx.p),
	    ws_proc_pgid(fx.p));
	ck_assert_str_eq(fx.text, want);
}
END_TEST

#define GLIBC_RESERVED (3ULL << 31)	/* bits of signals 32 and 33 */

START_TEST(proc_child_gets_default_signals_and_empty_mask)
{
	unsigned long long blk, ign;
	sigset_t set;

	/* What the agent does: SIGPIPE ignored, stop signals blocked at shutdown. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGUSR1, SIG_IGN);
	run("grep -E '^Sig(Blk|Ign)' /proc/self/status", 0);
	ck_assert_int_eq(sscanf(fx.text, "SigBlk:\t%llx\nSigIgn:\t%llx", &blk, &ign), 2);
	ck_assert_uint_eq(blk, 0);
	/* glibc keeps signals 32 and 33 to itself: a disposition inherited for them stays */
	ck_assert_uint_eq(ign & ~GLIBC_RESERVED, 0);
}
END_TEST

START_TEST(proc_timeout_kills_the_group_grandchild_included)
{
	pid_t gc;

	subreaper();
	run("echo start; sleep 100 & echo $! > gc; sleep 100", 1000);
	ck_assert_str_eq(fx.text, "start\n");	/* partial output, no end line */
	ck_assert(fx.timed_out && fx.killed);
	ck_assert_str_eq(fx.err_code, "TOOL_TIMEOUT");
	ck_assert_str_eq(fx.err_msg, "command timed out after 1 s");
	gc = read_pid("gc");
	ck_assert(group_gone(ws_proc_pgid(fx.p)));
	ck_assert(group_gone(gc) || kill(gc, 0) < 0);
	ck_assert_int_eq(kill(gc, 0), -1);
	ck_assert_int_eq(errno, ESRCH);
	assert_no_zombie();
}
END_TEST

static pid_t dead_pid;

static int
dead_pid_dead(void)
{
	return pid_dead(dead_pid);
}

START_TEST(proc_timeout_kills_grandchild_without_subreaper)
{
	run("sleep 100 & echo $! > gc; sleep 100", 1500);
	ck_assert_str_eq(fx.err_msg, "command timed out after 1.5 s");
	dead_pid = read_pid("gc");
	loop_until(dead_pid_dead);	/* init reaps it, or not: dead either way */
	assert_no_zombie();
}
END_TEST

START_TEST(proc_timeout_sends_sigterm_first)
{
	run("trap 'echo term; exit 7' TERM; sleep 100 & wait", 1000);
	ck_assert(fx.timed_out);
	ck_assert_int_eq(fx.exit_code, 7);
	ck_assert_str_eq(fx.text, "term\n");
}
END_TEST

START_TEST(proc_timeout_sigkills_after_the_grace)
{
	subreaper();
	run("trap '' TERM; echo stubborn; sleep 100", 1000);
	ck_assert(fx.timed_out && fx.killed);
	ck_assert_int_eq(fx.signo, SIGKILL);
	ck_assert_str_eq(fx.text, "stubborn\n");
	ck_assert(group_gone(ws_proc_pgid(fx.p)));
	assert_no_zombie();
}
END_TEST

START_TEST(proc_shell_exit_completes_though_a_grandchild_holds_the_pipe)
{
	pid_t gc;

	subreaper();
	run("sleep 100 & echo $! > gc; echo done", 0);
	ck_assert_str_eq(fx.text, "done\n");
	ck_assert_int_eq(fx.exit_code, 0);
	gc = read_pid("gc");
	ck_assert(group_gone(ws_proc_pgid(fx.p)));
	ck_assert_int_eq(kill(gc, 0), -1);
	assert_no_zombie();
}
END_TEST

START_TEST(proc_progress_gives_capped_output_so_far)
{
	struct ws_proc_opts o = opts("echo one; while [ ! -e go ]; do sleep 0.02; done; echo two");

	o.progress = on_progress;
	fx.go_on = 1;
	start(&o);
	loop_until(is_done);
	ck_assert_int_ge(fx.progress, 1);
	ck_assert_str_eq(fx.text, "one\ntwo\n");
	ck_assert(strcmp(fx.last_progress, "one\n") == 0 || strcmp(fx.last_progress, "one\ntwo\n") == 0);
}
END_TEST

START_TEST(proc_cancel_kills_the_group_and_calls_nothing_after)
{
	struct ws_proc_opts o =
	    opts("echo x; sleep 100 & echo $! > gc; while :; do echo tick; sleep 0.05; done");
	pid_t pgid;

	subreaper();
	o.progress = on_progress;
	o.timeout_ms = 60000;
	start(&o);
	pgid = ws_proc_pgid(fx.p);
	loop_until(gc_written);
	ws_proc_cancel(fx.p);
	fx.progress_at_cancel = fx.progress;
	loop_until(not_running);
	ck_assert_int_eq(fx.done, 0);
	ck_assert_int_eq(fx.progress, fx.progress_at_cancel);
	ck_assert(group_gone(pgid));
	ck_assert_int_eq(kill(read_pid("gc"), 0), -1);
	assert_no_zombie();
	fx.p = (ws_proc_free(fx.p), NULL);
	ck_assert_int_eq(fx.done, 0);
}
END_TEST

START_TEST(proc_free_kills_and_reaps_at_once)
{
	struct ws_proc_opts o = opts("sleep 100 & echo $! > gc; sleep 100");
	pid_t pgid;
	int st;

	subreaper();
	start(&o);
	pgid = ws_proc_pgid(fx.p);
	loop_until(gc_written);
	st = ws_proc_free(fx.p);
	fx.p = NULL;
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	ck_assert(group_gone(pgid));
	assert_no_zombie();
	ev_run(fx.loop, EVRUN_NOWAIT);
	ck_assert_int_eq(fx.done, 0);
	ck_assert_int_eq(ws_proc_free(NULL), -1);
}
END_TEST

START_TEST(proc_cancel_then_free_kills_at_once)
{
	struct ws_proc_opts o = opts("trap '' TERM; sleep 100 & echo $! > gc; sleep 100");
	pid_t pgid;

	subreaper();
	start(&o);
	pgid = ws_proc_pgid(fx.p);
	loop_until(gc_written);
	ws_proc_cancel(fx.p);
	ws_proc_free(fx.p);
	fx.p = NULL;
	ck_assert(group_gone(pgid));
	assert_no_zombie();
	ck_assert_int_eq(fx.done, 0);
}
END_TEST

START_TEST(proc_done_may_free_its_proc)
{
	fx.free_in_done = 1;
	run("echo hi", 0);
	ck_assert_ptr_null(fx.p);
	ck_assert_str_eq(fx.text, "hi\n");
	assert_no_zombie();
}
END_TEST

START_TEST(proc_kill_sends_term_and_reports_killed)
{
	struct ws_proc_opts o = opts("echo up > gc; sleep 100");

	start(&o);
	loop_until(gc_written);
	ws_proc_kill(fx.p);
	loop_until(is_done);
	ck_assert(fx.killed && !fx.timed_out);
	ck_assert_int_eq(fx.signo, SIGTERM);
	ck_assert_str_eq(fx.text, "[killed by signal SIGTERM]");
	ck_assert_str_eq(fx.err_code, "");
}
END_TEST

START_TEST(proc_exit_watch_without_pidfd)
{
	struct ws_proc_opts o = opts("echo a; exit 2");

	o.no_pidfd = 1;
	start(&o);
	loop_until(is_done);
	ck_assert_str_eq(fx.text, "a\n[exit code: 2]");
	assert_no_zombie();
}
END_TEST

START_TEST(proc_relays_a_megabyte)
{
	char *s;
	size_t n;

	run("head -c 1000000 /dev/zero | tr '\\0' x", 0);
	ck_assert_uint_eq(fx.total, 1000000);
	ck_assert_uint_eq(strlen(fx.text), WS_PROC_HEAD + WS_PROC_TAIL + 1 +
	    strlen("[\xe2\x80\xa6 967232 bytes omitted; full output: ]\n") + strlen(fx.spill_path));
	ck_assert_ptr_nonnull(strstr(fx.text, "[\xe2\x80\xa6 967232 bytes omitted; full output: "));
	s = test_read_file(fx.spill_path, &n);
	ck_assert_uint_eq(n, 1000000);
	ck_assert_uint_eq(strspn(s, "x"), 1000000);
	free(s);
}
END_TEST

START_TEST(proc_start_errors)
{
	struct ws_proc_opts o = opts("true");
	char dir[256], msg[512], *s;

	o.command = NULL;
	expect_start_error(&o, "INVALID_ARGUMENT", "command is required");
	o = opts("true");
	o.spill_dir = NULL;
	expect_start_error(&o, "INVALID_ARGUMENT", "spill_dir is required");
	const char *bad[] = { "a/b", ".hidden", "" };
	for (int i = 0; i < 3; i++) {
		o = opts("true");
		o.name = bad[i];
		snprintf(msg, sizeof(msg), "invalid spill name \"%s\"", bad[i]);
		expect_start_error(&o, "INVALID_ARGUMENT", msg);
	}
	o = opts("true");
	snprintf(dir, sizeof(dir), "%s/nope", fx.dir);
	o.spill_dir = dir;
	snprintf(fx.path, sizeof(fx.path),
	    "cannot create spill file %s/nope/call-1.out: No such file or directory", fx.dir);
	expect_start_error(&o, "PROC_SPILL_IO", fx.path);
	o = opts("true");
	snprintf(dir, sizeof(dir), "%s/call-1.out", fx.spill);
	test_write_file(dir, "old", 3);
	snprintf(msg, sizeof(msg), "spill file %s already exists", dir);
	expect_start_error(&o, "PROC_SPILL_EXISTS", msg);
	s = test_read_file(dir, NULL);
	ck_assert_str_eq(s, "old");
	free(s);
}
END_TEST

START_TEST(proc_spawn_errors_leave_no_spill_file_and_no_child)
{
	struct ws_proc_opts o = opts("true");
	char dir[256], msg[512];

	snprintf(dir, sizeof(dir), "%s/missing", fx.dir);
	o.workdir = dir;
	snprintf(msg, sizeof(msg), "cannot enter workdir \"%s\": No such file or directory", dir);
	expect_start_error(&o, "PROC_SPAWN_FAILED", msg);
	snprintf(fx.path, sizeof(fx.path), "%s/call-1.out", fx.spill);
	ck_assert_int_eq(access(fx.path, F_OK), -1);
	o = opts("true");
	o.shell = "/nonexistent/bash";
	expect_start_error(&o, "PROC_SPAWN_FAILED",
	    "cannot run /nonexistent/bash: No such file or directory");
	ck_assert_int_eq(access(fx.path, F_OK), -1);
	assert_no_zombie();
}
END_TEST

/* Under valgrind a vfork is a fork (its own memory): what the next test counts is not ours there. */
static int
under_valgrind(void)
{
	char *maps = test_read_file("/proc/self/maps", NULL);
	int yes = maps != NULL && strstr(maps, "vgpreload") != NULL;

	free(maps);
	return yes;
}

START_TEST(proc_spawn_leaves_our_pages_writable)
{
	/* A fork write-protects every page of ours until the child execs, and the loop thread then
	 * faults once per page it writes: tens of ms for a large process on a VM. */
	const char *argv[] = { "true", NULL };
	size_t len = (size_t)32 << 20, pages = len / (size_t)sysconf(_SC_PAGESIZE);
	struct spawn_opts so = { .path = "/bin/true", .argv = (char *const *)argv, .envp = environ,
		.fd = { -1, -1, -1 } };
	enum spawn_stage stage;
	struct rusage before, after;
	/* cppcheck-suppress invalidFunctionArg ; an anonymous mapping takes no fd: -1 is the rule */
	char *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int err, st;
	pid_t pid;

	ck_assert_ptr_ne(mem, MAP_FAILED);
	madvise(mem, len, MADV_NOHUGEPAGE);	/* one fault per 4 KiB page, as counted below */
	memset(mem, 1, len);
	getrusage(RUSAGE_THREAD, &before);
	pid = spawn_start(&so, &stage, &err);
	ck_assert_int_gt(pid, 0);
	memset(mem, 2, len);
	getrusage(RUSAGE_THREAD, &after);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	guard_forget(pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!under_valgrind())
		ck_assert_uint_lt((size_t)(after.ru_minflt - before.ru_minflt), pages / 16);
	munmap(mem, len);
}
END_TEST

START_TEST(proc_out_of_fds_fails_cleanly)
{
	struct ws_proc_opts o = opts("true");
	struct rlimit rl = fx.nofile;
	int lowest = open("/dev/null", O_RDONLY);

	/* The spill file takes the last fd allowed; the pipes find none. */
	close(lowest);
	rl.rlim_cur = (rlim_t)lowest + 1;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	expect_start_error(&o, "PROC_SPAWN_FAILED", "cannot start bash: Too many open files");
	setrlimit(RLIMIT_NOFILE, &fx.nofile);
	snprintf(fx.path, sizeof(fx.path), "%s/call-1.out", fx.spill);
	ck_assert_int_eq(access(fx.path, F_OK), -1);
}
END_TEST

START_TEST(proc_status_reaped_elsewhere_is_unknown)
{
	signal(SIGCHLD, SIG_IGN);	/* the kernel reaps our children itself */
	run("echo hi; exit 3", 0);
	ck_assert_str_eq(fx.text, "hi\n[exit status unknown]");
	ck_assert_int_eq(fx.exit_code, -1);
	ck_assert_int_eq(fx.signo, 0);
}
END_TEST

START_TEST(proc_spill_write_failure_keeps_the_text_and_says_so)
{
	struct rlimit rl = { 4096, fx.fsize.rlim_max };	/* soft only: teardown raises it again */
	struct stat st;

	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	run("head -c 10000 /dev/zero | tr '\\0' y; exit 4", 0);
	ck_assert_uint_eq(fx.total, 10000);
	ck_assert_uint_eq(strspn(fx.text, "y"), 10000);
	ck_assert_str_eq(fx.text + 10000, "\n[spill file incomplete: File too large]\n[exit code: 4]");
	ck_assert_int_eq(stat(fx.spill_path, &st), 0);
	ck_assert_int_eq(st.st_size, 4096);
}
END_TEST

/* ---- jobs ---- */

static void
hook_started(void *arg, const char *id, const char *command)
{
	(void)arg;
	buf_printf(&fx.events, "started %s %s\n", id, command);
}

static void
hook_ended(void *arg, const char *id, int exit_code, const char *signal)
{
	(void)arg;
	buf_printf(&fx.events, "ended %s %d %s\n", id, exit_code, signal ? signal : "-");
}

static void
on_answer(void *arg, const char *text, size_t len)
{
	ck_assert_ptr_eq(arg, &fx);
	ck_assert_uint_eq(strlen(text), len);
	fx.answers++;
	free(fx.answer);
	fx.answer = xstrdup(text);
}

static void
jobs_new(void)
{
	struct ws_jobs_hooks h = { hook_started, hook_ended, NULL };

	fx.jobs = ws_jobs_new(fx.loop, fx.spill, &h);
}

static void
job_start(const char *command, const char *want_id)
{
	char id[WS_JOBS_ID_MAX];
	struct err e;

	err_clear(&e);
	ck_assert_msg(ws_jobs_start(fx.jobs, command, fx.dir, id, &e) == 0, "%s", e.msg);
	ck_assert_str_eq(id, want_id);
}

/* A read without wait; returns an owned text. */
static char *
job_read(const char *id)
{
	struct buf b;
	struct err e;

	buf_init(&b);
	err_clear(&e);
	ck_assert_int_eq(ws_jobs_output(fx.jobs, id, 0, 0, &b, NULL, NULL, NULL, &e), 0);
	return buf_steal(&b);
}

/* A read with wait that must be pending; the answer comes to fx.answer. */
static struct ws_jobs_wait *
job_wait(const char *id, int64_t timeout_ms)
{
	struct ws_jobs_wait *w = NULL;
	struct buf b;
	struct err e;

	buf_init(&b);
	err_clear(&e);
	fx.answers = 0;
	ck_assert_int_eq(ws_jobs_output(fx.jobs, id, 1, timeout_ms, &b, on_answer, &fx, &w, &e), 1);
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_eq(b.len, 0);
	buf_free(&b);
	return w;
}

START_TEST(jobs_output_since_last_read_with_status_lines)
{
	char *t;

	jobs_new();
	job_start("echo one; while [ ! -e go ]; do sleep 0.02; done; echo two; exit 3", "job-1");
	for (;;) {		/* until "one" has come: reads before it have no new output */
		t = job_read("job-1");
		if (strcmp(t, "[status: running]") != 0)
			break;
		free(t);
		ev_run(fx.loop, EVRUN_ONCE);
	}
	ck_assert_str_eq(t, "one\n[status: running]");
	free(t);
	t = job_read("job-1");
	ck_assert_str_eq(t, "[status: running]");
	free(t);
	test_write_file(at("go"), "", 0);
	job_wait("job-1", 60000);
	loop_until(answered);
	ck_assert_str_eq(fx.answer, "two\n[status: exited 3]");
	t = job_read("job-1");
	ck_assert_str_eq(t, "[status: exited 3]");
	free(t);
	snprintf(fx.path, sizeof(fx.path), "started job-1 echo one; while [ ! -e go ]; do sleep 0.02; "
	    "done; echo two; exit 3\nended job-1 3 -\n");
	ck_assert_str_eq(fx.events.data, fx.path);
	snprintf(fx.path, sizeof(fx.path), "%s/job-1.out", fx.spill);
	t = test_read_file(fx.path, NULL);
	ck_assert_str_eq(t, "one\ntwo\n");
	free(t);
}
END_TEST

START_TEST(jobs_wait_times_out_then_kill_reports_killed)
{
	struct buf b;
	struct err e;

	jobs_new();
	job_start("echo up; sleep 100", "job-1");
	job_wait("job-1", 1000);
	loop_until(answered);
	ck_assert(strcmp(fx.answer, "up\n[status: running]") == 0 ||
	    strcmp(fx.answer, "[status: running]") == 0);
	buf_init(&b);
	err_clear(&e);
	ck_assert_int_eq(ws_jobs_kill(fx.jobs, "job-1", &b, &e), 0);
	ck_assert_str_eq(b.data, "kill requested for job job-1");
	buf_free(&b);
	job_wait("job-1", 60000);
	loop_until(answered);
	ck_assert(strcmp(fx.answer, "up\n[status: killed]") == 0 ||
	    strcmp(fx.answer, "[status: killed]") == 0);
	ck_assert_ptr_nonnull(strstr(fx.events.data, "ended job-1 -1 SIGTERM\n"));
	/* an ended job: kill still answers, status stays */
	buf_init(&b);
	ck_assert_int_eq(ws_jobs_kill(fx.jobs, "job-1", &b, &e), 0);
	ck_assert_str_eq(b.data, "kill requested for job job-1");
	buf_free(&b);
	char *t = job_read("job-1");
	ck_assert_str_eq(t, "[status: killed]");
	free(t);
}
END_TEST

START_TEST(jobs_wait_on_an_ended_job_answers_at_once)
{
	struct buf b;
	struct err e;

	jobs_new();
	job_start("echo fin", "job-1");
	job_wait("job-1", 60000);
	loop_until(answered);
	ck_assert_str_eq(fx.answer, "fin\n[status: exited 0]");
	buf_init(&b);
	err_clear(&e);
	ck_assert_int_eq(ws_jobs_output(fx.jobs, "job-1", 1, 60000, &b, on_answer, &fx, NULL, &e), 0);
	ck_assert_str_eq(b.data, "[status: exited 0]");
	buf_free(&b);
}
END_TEST

static int
eight_ended(void)
{
	return strstr(fx.events.data ? fx.events.data : "", "ended job-8") != NULL;
}

START_TEST(jobs_at_most_eight_run_at_once)
{
	char id[WS_JOBS_ID_MAX], want[64];
	struct buf b;
	pid_t pgid;
	struct err e;

	subreaper();
	jobs_new();
	for (int i = 1; i <= WS_JOBS_MAX; i++) {
		snprintf(want, sizeof(want), "job-%d", i);
		job_start("sleep 100", want);
	}
	err_clear(&e);
	ck_assert_int_eq(ws_jobs_start(fx.jobs, "sleep 100", NULL, id, &e), -1);
	ck_assert_int_eq(e.code, ERR_JOB_LIMIT_REACHED);
	ck_assert_str_eq(e.msg, "at most 8 background jobs can run at once; stop one with job_kill");
	buf_init(&b);
	ck_assert_int_eq(ws_jobs_kill(fx.jobs, "job-8", &b, &e), 0);
	buf_free(&b);
	loop_until(eight_ended);
	job_start("echo $$ > gc; sleep 100", "job-9");
	loop_until(gc_written);
	pgid = read_pid("gc");
	ws_jobs_free(fx.jobs);
	fx.jobs = NULL;
	ck_assert(group_gone(pgid));
	assert_no_zombie();
	for (int i = 1; i <= 7; i++) {
		snprintf(want, sizeof(want), "ended job-%d -1 SIGKILL\n", i);
		ck_assert_ptr_nonnull(strstr(fx.events.data, want));
	}
	ck_assert_ptr_nonnull(strstr(fx.events.data, "ended job-9 -1 SIGKILL\n"));
}
END_TEST

START_TEST(jobs_kill_request_reports_killed_whatever_the_exit)
{
	struct buf b;
	struct err e;

	jobs_new();
	job_start("trap 'exit 0' TERM; echo up > gc; sleep 100 & wait", "job-1");
	loop_until(gc_written);
	buf_init(&b);
	err_clear(&e);
	ck_assert_int_eq(ws_jobs_kill(fx.jobs, "job-1", &b, &e), 0);
	buf_free(&b);
	job_wait("job-1", 60000);
	loop_until(answered);
	ck_assert_str_eq(fx.answer, "[status: killed]");
	ck_assert_ptr_nonnull(strstr(fx.events.data, "ended job-1 0 -\n"));	/* the real exit */
}
END_TEST

START_TEST(jobs_unknown_id_and_bad_arguments)
{
	struct buf b;
	struct err e;

	jobs_new();
	buf_init(&b);
	err_clear(&e);
	ck_assert_int_eq(ws_jobs_output(fx.jobs, "job-42", 0, 0, &b, NULL, NULL, NULL, &e), -1);
	ck_assert_int_eq(e.code, ERR_JOB_NOT_FOUND);
	ck_assert_str_eq(e.msg, "no job job-42");
	err_clear(&e);
	ck_assert_int_eq(ws_jobs_kill(fx.jobs, "job-42", &b, &e), -1);
	ck_assert_int_eq(e.code, ERR_JOB_NOT_FOUND);
	ck_assert_str_eq(e.msg, "no job job-42");
	ck_assert_uint_eq(b.len, 0);
	/* a wait needs a timeout and a callback */
	job_start("sleep 100", "job-1");
	err_clear(&e);
	ck_assert_int_eq(ws_jobs_output(fx.jobs, "job-1", 1, 0, &b, on_answer, &fx, NULL, &e), -1);
	ck_assert_int_eq(e.code, ERR_INVALID_ARGUMENT);
	ck_assert_str_eq(e.msg, "a wait needs a positive timeout_ms and a callback");
	err_clear(&e);
	ck_assert_int_eq(ws_jobs_output(fx.jobs, "job-1", 1, 1000, &b, NULL, NULL, NULL, &e), -1);
	ck_assert_int_eq(e.code, ERR_INVALID_ARGUMENT);
	ck_assert_uint_eq(b.len, 0);
	err_clear(&e);
	ck_assert_int_eq(ws_jobs_start(fx.jobs, NULL, NULL, (char[WS_JOBS_ID_MAX]){ 0 }, &e), -1);
	ck_assert_int_eq(e.code, ERR_INVALID_ARGUMENT);
	ck_assert_str_eq(e.msg, "command is required");
}
END_TEST

static int later;

static void
set_later(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	later = 1;
}

static int
is_later(void)
{
	return later;
}

START_TEST(jobs_free_kills_reaps_and_answers_no_wait)
{
	ev_timer tm;
	pid_t pgid;

	subreaper();
	jobs_new();
	job_start("sleep 100 & echo $$ > gc; sleep 100", "job-1");
	loop_until(gc_written);
	pgid = read_pid("gc");
	job_wait("job-1", 1000);
	ws_jobs_free(fx.jobs);
	fx.jobs = NULL;
	later = 0;
	ev_timer_init(&tm, set_later, 1.5, 0.);	/* past the wait's own timeout */
	ev_timer_start(fx.loop, &tm);
	loop_until(is_later);
	ck_assert_int_eq(fx.answers, 0);
	ck_assert(group_gone(pgid));
	assert_no_zombie();
	ck_assert_ptr_nonnull(strstr(fx.events.data, "ended job-1 -1 SIGKILL\n"));
}
END_TEST

START_TEST(jobs_cancelled_wait_never_answers)
{
	struct ws_jobs_wait *w;
	char *t;

	jobs_new();
	job_start("while [ ! -e go ]; do sleep 0.02; done; echo end", "job-1");
	w = job_wait("job-1", 60000);
	ws_jobs_wait_cancel(w);
	test_write_file(at("go"), "", 0);
	job_wait("job-1", 60000);	/* a second wait sees the end */
	loop_until(answered);
	ck_assert_int_eq(fx.answers, 1);
	ck_assert_str_eq(fx.answer, "end\n[status: exited 0]");
	t = job_read("job-1");
	ck_assert_str_eq(t, "[status: exited 0]");
	free(t);
}
END_TEST

START_TEST(jobs_unread_output_keeps_head_and_tail)
{
	char *d = write_pattern("data", 100000), *want;

	jobs_new();
	job_start("cat data", "job-1");
	job_wait("job-1", 60000);
	loop_until(answered);
	snprintf(fx.path, sizeof(fx.path), "%s/job-1.out", fx.spill);
	want = capped(d, 100000, fx.path);
	ck_assert_uint_eq(strlen(fx.answer), strlen(want) + strlen("\n[status: exited 0]"));
	ck_assert_int_eq(strncmp(fx.answer, want, strlen(want)), 0);
	ck_assert_str_eq(fx.answer + strlen(want), "\n[status: exited 0]");
	free(want);
	free(d);
}
END_TEST

START_TEST(jobs_ids_skip_existing_spill_files_and_failures_use_none)
{
	char id[WS_JOBS_ID_MAX], dir[256], *s;
	struct err e;

	snprintf(fx.path, sizeof(fx.path), "%s/job-1.out", fx.spill);
	test_write_file(fx.path, "earlier run", 11);
	jobs_new();
	snprintf(dir, sizeof(dir), "%s/missing", fx.dir);
	err_clear(&e);
	ck_assert_int_eq(ws_jobs_start(fx.jobs, "true", dir, id, &e), -1);
	ck_assert_int_eq(e.code, ERR_PROC_SPAWN_FAILED);
	job_start("true", "job-2");
	s = test_read_file(fx.path, NULL);
	ck_assert_str_eq(s, "earlier run");
	free(s);
	ck_assert_ptr_nonnull(strstr(fx.events.data, "started job-2 true\n"));
}
END_TEST

Suite *
proc_suite(void)
{
	Suite *s = suite_create("proc");
	TCase *tc = tcase_create("proc");
	TCase *tj = tcase_create("jobs");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, proc_stdout_and_stderr_share_one_pipe_in_order);
	tcase_add_test(tc, proc_nonzero_exit_appends_exit_code_line);
	tcase_add_test(tc, proc_death_by_signal_renders_signal_name);
	tcase_add_test(tc, proc_output_up_to_32k_is_whole);
	tcase_add_test(tc, proc_output_over_32k_keeps_head_and_tail_with_omitted_line);
	tcase_add_test(tc, proc_head_ending_in_newline_gets_no_blank_line);
	tcase_add_test(tc, proc_cuts_head_and_tail_on_utf8_boundaries);
	tcase_add_test(tc, proc_spill_file_holds_all_output_mode_0600);
	tcase_add_test(tc, proc_environment_drops_acp_agent_variables);
	tcase_add_test(tc, proc_stdin_is_dev_null_and_no_fd_leaks);
	tcase_add_test(tc, proc_runs_in_workdir_own_session_and_group);
	tcase_add_test(tc, proc_child_gets_default_signals_and_empty_mask);
	tcase_add_test(tc, proc_timeout_kills_the_group_grandchild_included);
	tcase_add_test(tc, proc_timeout_kills_grandchild_without_subreaper);
	tcase_add_test(tc, proc_timeout_sends_sigterm_first);
	tcase_add_test(tc, proc_timeout_sigkills_after_the_grace);
	tcase_add_test(tc, proc_shell_exit_completes_though_a_grandchild_holds_the_pipe);
	tcase_add_test(tc, proc_progress_gives_capped_output_so_far);
	tcase_add_test(tc, proc_cancel_kills_the_group_and_calls_nothing_after);
	tcase_add_test(tc, proc_free_kills_and_reaps_at_once);
	tcase_add_test(tc, proc_cancel_then_free_kills_at_once);
	tcase_add_test(tc, proc_done_may_free_its_proc);
	tcase_add_test(tc, proc_kill_sends_term_and_reports_killed);
	tcase_add_test(tc, proc_exit_watch_without_pidfd);
	tcase_add_test(tc, proc_relays_a_megabyte);
	tcase_add_test(tc, proc_start_errors);
	tcase_add_test(tc, proc_spawn_errors_leave_no_spill_file_and_no_child);
	tcase_add_test(tc, proc_spawn_leaves_our_pages_writable);
	tcase_add_test(tc, proc_spill_write_failure_keeps_the_text_and_says_so);
	tcase_add_test(tc, proc_out_of_fds_fails_cleanly);
	tcase_add_test(tc, proc_status_reaped_elsewhere_is_unknown);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(tj, setup, teardown);
	tcase_set_timeout(tj, 60);
	tcase_add_test(tj, jobs_output_since_last_read_with_status_lines);
	tcase_add_test(tj, jobs_wait_times_out_then_kill_reports_killed);
	tcase_add_test(tj, jobs_wait_on_an_ended_job_answers_at_once);
	tcase_add_test(tj, jobs_at_most_eight_run_at_once);
	tcase_add_test(tj, jobs_kill_request_reports_killed_whatever_the_exit);
	tcase_add_test(tj, jobs_unknown_id_and_bad_arguments);
	tcase_add_test(tj, jobs_free_kills_reaps_and_answers_no_wait);
	tcase_add_test(tj, jobs_cancelled_wait_never_answers);
	tcase_add_test(tj, jobs_unread_output_keeps_head_and_tail);
	tcase_add_test(tj, jobs_ids_skip_existing_spill_files_and_failures_use_none);
	suite_add_tcase(s, tj);
	return s;
}
