/* git for isolated children (workspace/git.h). */
#include "workspace/git.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/guard.h"
#include "base/log.h"
#include "base/spawn.h"
#include "base/xmalloc.h"

#define GIT_ARGS_MAX 16
#define GIT_CLAIM_ID_MAX 64	/* a child id, as a claim's name carries it */
#define GIT_OUT_MAX ((size_t)1 << 20)	/* more output than any call here prints */

static int git_rm_step(const char *path, const struct stat *st, int flag, struct FTW *ftw);
static int git_wt_listed(const char *path);

/* One git run: its exit status (128 + the signal when killed), its output, and its reason. */
struct git_res {
	int status;
	struct buf out;
	char why[GIT_WHY_MAX];
};

/* The reason a git run gives: its first "fatal: " or "error: " line, else its last line. */
static void
git_reason(const char *err, size_t n, char *why)
{
	const char *p = err, *end = err + n, *last = NULL;
	size_t last_n = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if ((len > 7 && strncmp(p, "fatal: ", 7) == 0) || (len > 7 && strncmp(p, "error: ", 7) == 0)) {
			snprintf(why, GIT_WHY_MAX, "%.*s", (int)len, p);
			return;
		}
		if (len) {
			last = p;
			last_n = len;
		}
		p += len + 1;
	}
	if (last)
		snprintf(why, GIT_WHY_MAX, "%.*s", (int)last_n, last);
}

/* Reads what is ready on fd into b (up to max); 0 at its end. */
static int
git_drain(int fd, struct buf *b, size_t max)
{
	char chunk[4096];
	ssize_t n = read(fd, chunk, sizeof(chunk));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : 0;
	if (n > 0 && b->len < max)
		buf_append(b, chunk, b->len + (size_t)n > max ? max - b->len : (size_t)n);
	return n > 0;
}

/*
 * Runs git with args (after "git", NULL-terminated) in cwd and waits for it. 0 when it ran
 * (r->status, r->out, r->why from its stderr), -1 when it could not be started (r->why).
 */
static int
git_runv(const char *cwd, const struct git_ctx *ctx, struct git_res *r, const char *const *args)
{
	static const struct git_ctx none = { NULL, NULL, NULL, NULL };
	const char *extra[10] = { "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_AUTHOR_NAME=acp-agent",
		"GIT_AUTHOR_EMAIL=acp-agent@localhost", "GIT_COMMITTER_NAME=acp-agent",
		"GIT_COMMITTER_EMAIL=acp-agent@localhost" };
	size_t nextra = 6;
	char adate[96], cdate[96], ceil[4200];
	if (ctx == NULL)
		ctx = &none;
	const atomic_int *cancel = ctx->cancel;
	if (ctx->date) {	/* a fixed time for the commits made (deterministic runs) */
		snprintf(adate, sizeof(adate), "GIT_AUTHOR_DATE=%s", ctx->date);
		snprintf(cdate, sizeof(cdate), "GIT_COMMITTER_DATE=%s", ctx->date);
		extra[nextra++] = adate;
		extra[nextra++] = cdate;
	}
	if (ctx->ceiling) {
		snprintf(ceil, sizeof(ceil), "GIT_CEILING_DIRECTORIES=%s", ctx->ceiling);
		extra[nextra++] = ceil;
	}
	char *git = spawn_find("git", ctx->path), *argv[GIT_ARGS_MAX + 10];
	int out[2], err[2], saved, open_fds = 2, st;
	enum spawn_stage stage;
	struct spawn_opts so = { 0 };
	struct buf errb;
	char **envp;
	pid_t pid;
	size_t n = 0;

	r->status = -1;
	r->why[0] = '\0';
	buf_init(&r->out);
	if (git == NULL) {
		snprintf(r->why, GIT_WHY_MAX, "git is not on PATH");
		return -1;
	}
	/* the user's hooks, signing and fsmonitor are not for an agent's worktree */
	static const char *const pre[] = { "git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", "-c",
		"core.fsmonitor=false" };
	for (; n < sizeof(pre) / sizeof(pre[0]); n++)
		argv[n] = (char *)pre[n];
	for (size_t k = 0; args[k] && n < GIT_ARGS_MAX + 8; k++)
		argv[n++] = (char *)args[k];
	argv[n] = NULL;
	if (pipe2(out, O_CLOEXEC) < 0) {
		snprintf(r->why, GIT_WHY_MAX, "cannot run git: %s", strerror(errno));
		free(git);
		return -1;
	}
	if (pipe2(err, O_CLOEXEC) < 0) {
		snprintf(r->why, GIT_WHY_MAX, "cannot run git: %s", strerror(errno));
		close(out[0]);
		close(out[1]);
		free(git);
		return -1;
	}
	envp = spawn_env((char *const *)extra, nextra);
	/* a GIT_DIR or GIT_INDEX_FILE of the caller's would point git at another repository */
	static const char *const drop[] = { "GIT_DIR=", "GIT_WORK_TREE=", "GIT_INDEX_FILE=", "GIT_COMMON_DIR=",
		"GIT_OBJECT_DIRECTORY=", "GIT_ALTERNATE_OBJECT_DIRECTORIES=", "GIT_NAMESPACE=", "GIT_PREFIX=" };
	size_t w = 0;
	for (size_t k = 0; envp[k]; k++) {
		int keep = 1;
		for (size_t d = 0; d < sizeof(drop) / sizeof(drop[0]) && keep; d++)
			keep = strncmp(envp[k], drop[d], strlen(drop[d])) != 0;
		if (keep)
			envp[w++] = envp[k];
	}
	envp[w] = NULL;
	so.path = git;
	so.argv = argv;
	so.envp = envp;
	so.workdir = cwd;
	so.fd[0] = -1;
	so.fd[1] = out[1];
	so.fd[2] = err[1];
	pid = spawn_start(&so, &stage, &saved);
	close(out[1]);
	close(err[1]);
	free(envp);
	free(git);
	if (pid < 0) {
		close(out[0]);
		close(err[0]);
		snprintf(r->why, GIT_WHY_MAX, stage == SPAWN_CHDIR ? "cannot enter %s: %s" : "cannot run git%.0s: %s",
		    cwd ? cwd : "", strerror(saved));
		return -1;
	}
	buf_init(&errb);
	struct pollfd pf[2] = { { out[0], POLLIN, 0 }, { err[0], POLLIN, 0 } };
	struct timespec t0, now;
	long stopping_ms = -1;		/* when the SIGTERM went, ms after t0 */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (open_fds > 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
		if (stopping_ms < 0 && ((cancel && atomic_load(cancel)) || ms > (long)GIT_DEADLINE_S * 1000)) {
			kill(-pid, SIGTERM);	/* its group; git removes its lock files on TERM, not on KILL */
			stopping_ms = ms;
		} else if (stopping_ms >= 0 && ms - stopping_ms > 2000) {
			kill(-pid, SIGKILL);
		}
		if (poll(pf, 2, 100) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (!git_drain(pf[i].fd, i ? &errb : &r->out, i ? (size_t)65536 : GIT_OUT_MAX)) {
				close(pf[i].fd);
				pf[i].fd = -1;
				open_fds--;
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);
	pid_t wp;
	while ((wp = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
		;
	if (wp < 0)
		st = 255 << 8;	/* reaped by someone else (SIGCHLD ignored): taken as a failure */
	/* whatever it left in its group (a hook's child) goes with it; the guardian forgets it */
	kill(-pid, SIGKILL);
	guard_forget(pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	if (errb.len)
		git_reason(errb.data, errb.len, r->why);
	buf_free(&errb);
	if (r->status != 0 && r->why[0] == '\0') {
		const char *sub = args[0] ? args[1] : NULL;
		snprintf(r->why, GIT_WHY_MAX, "git %s%s%s exited with status %d", args[0] ? args[0] : "", sub ? " " : "",
		    sub ? sub : "", r->status);
	}
	return 0;
}

/* git_runv with the arguments listed, NULL last. */
static int
git_run(const char *cwd, const struct git_ctx *ctx, struct git_res *r, ...)
{
	const char *args[GIT_ARGS_MAX + 1];
	size_t n = 0;
	va_list ap;

	va_start(ap, r);
	while (n < GIT_ARGS_MAX && (args[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	args[n] = NULL;
	return git_runv(cwd, ctx, r, args);
}

/* The first line of r's output (owned; "" for none). */
static char *
git_line(const struct git_res *r)
{
	size_t n = r->out.len;

	if (n == 0)
		return xstrdup("");
	const char *nl = memchr(r->out.data, '\n', n);
	return xstrndup(r->out.data, nl ? (size_t)(nl - r->out.data) : n);
}

/* Runs a git that must succeed: 0, or -1 with why (its reason). */
#define GIT_MUST(cwd, ctx, r, why, ...)                                                    \
	((git_run(cwd, ctx, r, __VA_ARGS__, (const char *)NULL) < 0 || (r)->status != 0) ?     \
	    (snprintf(why, GIT_WHY_MAX, "%s", (r)->why), buf_free(&(r)->out), -1) : 0)

int
git_wt_probe(const char *workspace, const struct git_ctx *ctx, char **repo, char **subdir,
    char *why)
{
	struct git_res r;

	*repo = *subdir = NULL;
	if (GIT_MUST(workspace, ctx, &r, why, "rev-parse", "--show-toplevel") < 0)
		return -1;
	*repo = git_line(&r);
	buf_free(&r.out);
	if (GIT_MUST(workspace, ctx, &r, why, "rev-parse", "--show-prefix") < 0)
		goto fail;
	*subdir = git_line(&r);
	buf_free(&r.out);
	size_t n = strlen(*subdir);
	if (n && (*subdir)[n - 1] == '/')
		(*subdir)[n - 1] = '\0';
	if (git_run(workspace, ctx, &r, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", (const char *)NULL) < 0) {
		snprintf(why, GIT_WHY_MAX, "%s", r.why);
		goto fail;
	}
	buf_free(&r.out);
	if (r.status != 0) {
		snprintf(why, GIT_WHY_MAX, "the repository has no commit yet");
		goto fail;
	}
	return 0;
fail:
	free(*repo);
	free(*subdir);
	*repo = *subdir = NULL;
	return -1;
}

/* Makes base/rel's missing directories (rel relative, no ".."). 0, or -1 with why. */
static int
git_wt_mkdirs(const char *base, const char *rel, char *why)
{
	char *p = xasprintf("%s/%s", base, rel);

	for (char *c = p + strlen(base) + 1;; c++) {
		if (*c != '/' && *c != '\0')
			continue;
		char was = *c;
		*c = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			snprintf(why, GIT_WHY_MAX, "cannot make %s: %s", p, strerror(errno));
			free(p);
			return -1;
		}
		*c = was;
		if (was == '\0')
			break;
	}
	free(p);
	return 0;
}

/* Whether refs/heads/<branch> exists: 1, 0 (git said no such ref), or -1 when git could not tell
 * (it did not run, or failed otherwise: a repository gone), with why when why is not NULL. */
static int
git_branch_state(const char *repo, const struct git_ctx *ctx, const char *branch, char *why)
{
	struct git_res r;
	char *ref = xasprintf("refs/heads/%s", branch);
	int state = -1;

	if (git_run(repo, ctx, &r, "rev-parse", "--verify", "--quiet", ref, (const char *)NULL) == 0) {
		state = r.status == 0 ? 1 : r.status == 1 ? 0 : -1;
		if (state < 0 && why)
			snprintf(why, GIT_WHY_MAX, "cannot tell whether %.100s exists: %.380s", branch, r.why);
		buf_free(&r.out);
	} else if (why) {
		snprintf(why, GIT_WHY_MAX, "cannot tell whether %.100s exists: %.380s", branch, r.why);
	}
	free(ref);
	return state;
}

/* Whether refs/heads/<branch> surely exists. */
static int
git_has_branch(const char *repo, const struct git_ctx *ctx, const char *branch)
{
	return git_branch_state(repo, ctx, branch, NULL) == 1;
}

/* The claim of child_id's worktree, written and locked under a temporary name, then renamed into
 * place, so a sweep never sees it unlocked while we live. Its fd, or -1 with why. */
static int
git_claim_make(const char *dir, const char *child_id, const struct git_wt *wt, char *why)
{
	char *tmp = xasprintf("%s/.%s.claim.tmp", dir, child_id), *final = xasprintf("%s/.%s.claim", dir, child_id);
	int fd;

	unlink(tmp);	/* a dead process's, for this id (ids are unique; a deterministic run reuses them) */
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0 || flock(fd, LOCK_EX) < 0 || dprintf(fd, "%s\n%s\n%s\n", wt->repo, wt->branch, wt->base) < 0 ||
	    rename(tmp, final) < 0) {
		snprintf(why, GIT_WHY_MAX, "cannot write %s: %s", final, strerror(errno));
		if (fd >= 0) {
			unlink(tmp);
			close(fd);
		}
		fd = -1;
	}
	free(tmp);
	free(final);
	return fd;
}

void
git_wt_unclaim(const char *dir, const char *child_id, int claim)
{
	char *path;

	if (claim < 0)
		return;
	path = xasprintf("%s/.%s.claim", dir, child_id);
	unlink(path);
	free(path);
	close(claim);
}

int
git_wt_create(const char *workspace, const char *repo, const char *subdir, const char *child_id, const char *dir,
    const struct git_ctx *ctx, struct git_wt *wt, int *claim, char *why)
{
	struct git_res r;
	struct stat st;
	char *base;

	*claim = -1;
	memset(wt, 0, sizeof(*wt));
	/* the user's tracked edits, as a commit nobody references, else HEAD */
	if (GIT_MUST(workspace, ctx, &r, why, "stash", "create") < 0)
		return -1;
	base = git_line(&r);
	buf_free(&r.out);
	if (*base == '\0') {
		free(base);
		if (GIT_MUST(workspace, ctx, &r, why, "rev-parse", "--verify", "HEAD^{commit}") < 0)
			return -1;
		base = git_line(&r);
		buf_free(&r.out);
	}
	wt->base = base;
	wt->repo = xstrdup(repo);
	wt->subdir = xstrdup(subdir);
	wt->branch = xasprintf("acp-agent/%.8s", child_id);
	if (git_has_branch(repo, ctx, wt->branch)) {
		free(wt->branch);
		wt->branch = xasprintf("acp-agent/%s", child_id);
	}
	wt->path = xasprintf("%s/%s", dir, child_id);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(why, GIT_WHY_MAX, "cannot make %s: %s", dir, strerror(errno));
		goto fail;
	}
	if (lstat(wt->path, &st) == 0) {
		/* not ours to remove: nothing of this call made it */
		snprintf(why, GIT_WHY_MAX, "%s exists already", wt->path);
		goto fail;
	}
	if (git_has_branch(repo, ctx, wt->branch)) {
		snprintf(why, GIT_WHY_MAX, "the branch %s exists already", wt->branch);
		goto fail;
	}
	if ((*claim = git_claim_make(dir, child_id, wt, why)) < 0)
		goto fail;
	if (GIT_MUST(repo, ctx, &r, why, "worktree", "add", "--quiet", "-b", wt->branch, wt->path, wt->base) < 0) {
add_failed:;
		/* whatever the failed add left of ours: its directory, its branch, git's record (not
		 * stopped by a cancel: half a cleanup is worse) */
		struct git_ctx quiet = { ctx ? ctx->path : NULL, NULL, NULL, ctx ? ctx->ceiling : NULL };
		char *rm = NULL;
		struct git_res q;
		if (lstat(wt->path, &st) == 0)
			rm = wt->path;
		/* -f twice: a killed add leaves its worktree locked ("initializing") */
		if (rm && git_run(repo, &quiet, &q, "worktree", "remove", "-f", "-f", rm, (const char *)NULL) == 0)
			buf_free(&q.out);
		if (git_run(repo, &quiet, &q, "worktree", "prune", (const char *)NULL) == 0)
			buf_free(&q.out);
		/* the branch only if this add made it: it did not exist before, and it is still at base */
		char *tip = NULL;
		if (git_has_branch(repo, &quiet, wt->branch) &&
		    git_run(repo, &quiet, &q, "rev-parse", "--verify", "--quiet", wt->branch, (const char *)NULL) == 0) {
			tip = git_line(&q);
			buf_free(&q.out);
		}
		if (tip && strcmp(tip, wt->base) == 0 &&
		    git_run(repo, &quiet, &q, "branch", "-D", wt->branch, (const char *)NULL) == 0)
			buf_free(&q.out);
		free(tip);
		/* what could not be undone stays claimed: the next start-up's sweep tries again */
		if (lstat(wt->path, &st) == 0 || git_has_branch(repo, &quiet, wt->branch)) {
			log_warn("worktree %s: not all of a failed add could be undone; left for the next start", wt->path);
			close(*claim);
			*claim = -1;
		}
		goto fail;
	}
	buf_free(&r.out);
	/* the workspace's directory may hold nothing git tracks: it exists in the worktree all the same */
	if (*subdir && git_wt_mkdirs(wt->path, subdir, why) < 0)
		goto add_failed;
	return 0;
fail:
	git_wt_unclaim(dir, child_id, *claim);
	*claim = -1;
	git_wt_free(wt);
	return -1;
}

int
git_wt_readd(const struct git_wt *wt, const struct git_ctx *ctx, char *why)
{
	struct git_res r;
	struct stat st;

	if (lstat(wt->path, &st) == 0) {
		/* left by a crash: ours if git lists it on the branch */
		if (git_run(wt->path, ctx, &r, "rev-parse", "--abbrev-ref", "HEAD", (const char *)NULL) == 0 &&
		    r.status == 0) {
			char *head = git_line(&r);
			int ours = strcmp(head, wt->branch) == 0;
			free(head);
			buf_free(&r.out);
			if (ours)
				return 0;
		} else {
			buf_free(&r.out);
		}
		snprintf(why, GIT_WHY_MAX, "%s exists and is not the worktree of %s", wt->path, wt->branch);
		return -1;
	}
	if (git_run(wt->repo, ctx, &r, "worktree", "prune", (const char *)NULL) == 0)
		buf_free(&r.out);
	if (git_has_branch(wt->repo, ctx, wt->branch)) {
		if (GIT_MUST(wt->repo, ctx, &r, why, "worktree", "add", "--quiet", wt->path, wt->branch) < 0)
			return -1;
	} else if (GIT_MUST(wt->repo, ctx, &r, why, "worktree", "add", "--quiet", "-b", wt->branch, wt->path,
		       wt->base) < 0) {
		return -1;	/* deleted when it had no commit: made again from its base */
	}
	buf_free(&r.out);
	if (*wt->subdir && git_wt_mkdirs(wt->path, wt->subdir, why) < 0)
		return -1;
	return 0;
}

/* Removes name in dir when it is a regular file; 1 when it went. */
static int
git_unlink_lock(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	struct stat st;
	int gone = lstat(p, &st) == 0 && S_ISREG(st.st_mode) && unlink(p) == 0;

	if (gone)
		log_warn("git: removed %s, left by a git that was killed", p);
	free(p);
	return gone;
}

/* The git directory a worktree's .git file names, and the common directory that names (owned,
 * NULL when not read). */
static void
git_wt_dirs(const char *path, char **gitdir, char **common)
{
	char *dotgit = xasprintf("%s/.git", path), line[4096];
	FILE *f = fopen(dotgit, "re");

	*gitdir = *common = NULL;
	free(dotgit);
	if (f == NULL)
		return;
	if (fgets(line, sizeof(line), f) && strncmp(line, "gitdir: ", 8) == 0) {
		line[strcspn(line, "\n")] = '\0';
		*gitdir = line[8] == '/' ? xstrdup(line + 8) : xasprintf("%s/%s", path, line + 8);
	}
	fclose(f);
	if (*gitdir == NULL)
		return;
	char *cfile = xasprintf("%s/commondir", *gitdir);
	if ((f = fopen(cfile, "re")) != NULL) {
		if (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			*common = line[0] == '/' ? xstrdup(line) : xasprintf("%s/%s", *gitdir, line);
		}
		fclose(f);
	}
	free(cfile);
}

int
git_wt_discard(const char *path, char *why)
{
	char *gitdir, *common;
	struct git_res r;
	struct stat st;
	int listed;

	if (lstat(path, &st) < 0)
		return 0;
	git_wt_dirs(path, &gitdir, &common);
	if (common && git_run(common, NULL, &r, "worktree", "remove", "-f", "-f", path, (const char *)NULL) == 0) {
		if (r.status != 0)
			snprintf(why, GIT_WHY_MAX, "%s", r.why);
		buf_free(&r.out);
		if (git_run(common, NULL, &r, "worktree", "prune", (const char *)NULL) == 0)
			buf_free(&r.out);
	}
	free(gitdir);
	free(common);
	if (lstat(path, &st) < 0)
		return 0;
	/* git did not (or could not: no repository): whole, unless git still has it */
	listed = git_wt_listed(path);
	if (listed <= 0 && nftw(path, git_rm_step, 16, FTW_DEPTH | FTW_PHYS) == 0)
		return 0;
	if (why[0] == '\0')
		snprintf(why, GIT_WHY_MAX, "%s could not be removed", path);
	return -1;
}

int
git_wt_unlock(const struct git_wt *wt)
{
	char *gd, *common, *ref;
	int n = 0;

	git_wt_dirs(wt->path, &gd, &common);
	if (gd) {
		/* the worktree's own: its index and HEAD */
		n += git_unlink_lock(gd, "index.lock");
		n += git_unlink_lock(gd, "HEAD.lock");
	}
	/* the branch's ref, in the repository's common directory */
	if (common && strncmp(wt->branch, "acp-agent/", 10) == 0 && strstr(wt->branch, "..") == NULL) {
		ref = xasprintf("refs/heads/%s.lock", wt->branch);
		n += git_unlink_lock(common, ref);
		free(ref);
	}
	free(common);
	free(gd);
	return n;
}

int
git_wt_commit(const struct git_wt *wt, const char *message, const struct git_ctx *ctx,
    struct git_commit *c, char *why)
{
	struct git_res r;
	char *head;

	memset(c, 0, sizeof(*c));
	if (GIT_MUST(wt->path, ctx, &r, why, "add", "-A") < 0)
		return -1;
	buf_free(&r.out);
	if (git_run(wt->path, ctx, &r, "diff", "--cached", "--quiet", (const char *)NULL) < 0) {
		snprintf(why, GIT_WHY_MAX, "%s", r.why);
		return -1;
	}
	buf_free(&r.out);
	if (r.status == 1) {
		/* the message as given, whatever it is (a label of spaces would be no message) */
		if (GIT_MUST(wt->path, ctx, &r, why, "commit", "--no-verify", "--quiet", "--cleanup=verbatim",
			"--allow-empty-message", "-m", message) < 0)
			return -1;
		buf_free(&r.out);
		if (GIT_MUST(wt->path, ctx, &r, why, "rev-parse", "HEAD") < 0)
			return -1;
		head = git_line(&r);
		buf_free(&r.out);
		snprintf(c->commit, sizeof(c->commit), "%s", head);	/* this settlement's commit only */
		free(head);
	} else if (r.status != 0) {
		snprintf(why, GIT_WHY_MAX, "%s", r.why);
		return -1;
	}
	return git_wt_count(wt, ctx, c, why);
}

int
git_wt_count(const struct git_wt *wt, const struct git_ctx *ctx, struct git_commit *c, char *why)
{
	struct git_res r;
	char *range;

	c->files = c->insertions = c->deletions = 0;
	switch (git_branch_state(wt->repo, ctx, wt->branch, why)) {
	case 0:
		return 0;	/* deleted already (it had no commit): nothing to count */
	case -1:
		return -1;
	default:
		break;
	}
	/* the whole branch against its base: what a merge would bring, as one line of totals
	 * (" 3 files changed, 10 insertions(+), 2 deletions(-)"; nothing when nothing changed) */
	range = xasprintf("%s..%s", wt->base, wt->branch);
	if (GIT_MUST(wt->repo, ctx, &r, why, "diff", "--shortstat", range) < 0) {
		free(range);
		return -1;
	}
	free(range);
	for (const char *p = r.out.data; p && *p;) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p) {
			p++;
			continue;
		}
		while (*end == ' ')
			end++;
		if (strncmp(end, "file", 4) == 0)
			c->files = (int)v;
		else if (strncmp(end, "insertion", 9) == 0)
			c->insertions = (int)v;
		else if (strncmp(end, "deletion", 8) == 0)
			c->deletions = (int)v;
		p = end;
	}
	buf_free(&r.out);
	return 0;
}

int
git_wt_remove(const struct git_wt *wt, const struct git_ctx *ctx, int *branch_deleted, char *why)
{
	struct git_res r;
	struct stat st;
	char *range, *count;

	*branch_deleted = 0;
	if (lstat(wt->path, &st) == 0) {
		if (GIT_MUST(wt->repo, ctx, &r, why, "worktree", "remove", "--force", wt->path) < 0)
			return -1;
		buf_free(&r.out);
	}
	if (git_run(wt->repo, ctx, &r, "worktree", "prune", (const char *)NULL) == 0)
		buf_free(&r.out);
	switch (git_branch_state(wt->repo, ctx, wt->branch, why)) {
	case 0:
		*branch_deleted = 1;	/* deleted already: an earlier removal's, whose log was cut */
		return 0;
	case -1:
		return -1;
	default:
		break;
	}
	range = xasprintf("%s..%s", wt->base, wt->branch);
	if (GIT_MUST(wt->repo, ctx, &r, why, "rev-list", "--count", range) < 0) {
		free(range);
		return -1;
	}
	free(range);
	count = git_line(&r);
	buf_free(&r.out);
	if (strcmp(count, "0") == 0) {
		free(count);
		if (GIT_MUST(wt->repo, ctx, &r, why, "branch", "-D", wt->branch) < 0)
			return -1;
		buf_free(&r.out);
		*branch_deleted = 1;
		return 0;
	}
	free(count);
	return 0;
}

/* nftw's step of a removal: files, links and directories (after their contents) alike. */
static int
git_rm_step(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 ? -1 : 0;
}

/* 1 when the worktree at path has a .git file naming a git directory there, 0 when its .git names
 * one that is gone, -1 when it has no .git file (git never finished making it). */
static int
git_wt_listed(const char *path)
{
	char *dotgit = xasprintf("%s/.git", path), line[4096];
	FILE *f = fopen(dotgit, "re");
	struct stat st;
	int listed = 0;

	free(dotgit);
	if (f == NULL)
		return -1;
	if (fgets(line, sizeof(line), f) && strncmp(line, "gitdir: ", 8) == 0) {
		line[strcspn(line, "\n")] = '\0';
		/* worktree.useRelativePaths writes it relative to the worktree */
		char *gd = line[8] == '/' ? xstrdup(line + 8) : xasprintf("%s/%s", path, line + 8);
		listed = stat(gd, &st) == 0 && S_ISDIR(st.st_mode);
		free(gd);
	}
	fclose(f);
	return listed;
}

/* Whether name is a child id as we make them (36 of lowercase hex and '-'): a claim's name is read
 * from disk, and what it names is removed. */
static int
git_claim_id_ok(const char *id, size_t len)
{
	if (len != 36)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f') || id[i] == '-'))
			return 0;
	return 1;
}

/* A claim's content, read from disk: an absolute repository, an acp-agent/ branch, a full commit
 * id, one per line. 0 with the three (owned), or -1. */
static int
git_claim_read(int fd, char **repo, char **branch, char **base)
{
	char text[4096 + 256], *save = NULL, *r, *b, *c;
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
	size_t hex;

	if (n <= 0)
		return -1;
	text[n] = '\0';
	r = strtok_r(text, "\n", &save);
	b = strtok_r(NULL, "\n", &save);
	c = strtok_r(NULL, "\n", &save);
	if (r == NULL || b == NULL || c == NULL || strtok_r(NULL, "\n", &save) != NULL || r[0] != '/' ||
	    strncmp(b, "acp-agent/", 10) != 0 || strstr(b, "..") != NULL || b[10] == '\0')
		return -1;
	hex = strspn(c, "0123456789abcdef");
	if ((hex != 40 && hex != 64) || c[hex] != '\0')
		return -1;
	*repo = xstrdup(r);
	*branch = xstrdup(b);
	*base = xstrdup(c);
	return 0;
}

/* The worktree a dead process made for a child never published: its directory, git's record and
 * the branch while it is still at its base. 1 when nothing of it is left, 0 when some is. */
static int
git_claim_undo(const char *dir, const char *id, int fd, int *removed)
{
	struct git_wt wt = { 0 };
	struct git_res q;
	struct stat st;
	char *tip = NULL;
	int gone, existed;

	if (git_claim_read(fd, &wt.repo, &wt.branch, &wt.base) < 0) {
		log_warn("worktree claim %s/.%s.claim: not a claim of ours; left as it is", dir, id);
		return 0;
	}
	wt.path = xasprintf("%s/%s", dir, id);
	existed = lstat(wt.path, &st) == 0;
	if (existed &&
	    git_run(wt.repo, NULL, &q, "worktree", "remove", "-f", "-f", wt.path, (const char *)NULL) == 0)
		buf_free(&q.out);
	if (lstat(wt.path, &st) == 0 && git_wt_listed(wt.path) < 0)
		nftw(wt.path, git_rm_step, 16, FTW_DEPTH | FTW_PHYS);	/* git never finished it */
	if (git_run(wt.repo, NULL, &q, "worktree", "prune", (const char *)NULL) == 0)
		buf_free(&q.out);
	if (git_has_branch(wt.repo, NULL, wt.branch) &&
	    git_run(wt.repo, NULL, &q, "rev-parse", "--verify", "--quiet", wt.branch, (const char *)NULL) == 0) {
		tip = git_line(&q);
		buf_free(&q.out);
	}
	if (tip && strcmp(tip, wt.base) == 0 &&
	    git_run(wt.repo, NULL, &q, "branch", "-D", wt.branch, (const char *)NULL) == 0)
		buf_free(&q.out);
	free(tip);
	gone = lstat(wt.path, &st) < 0;
	if (gone && existed) {
		log_info("worktree %s: made for a child that never started; removed", wt.path);
		(*removed)++;
	}
	else
		log_warn("worktree %s: made for a child that never started, and not removable; left as it is", wt.path);
	git_wt_free(&wt);
	return gone;
}

/* The claims in dir nobody holds: undone when their child was never published, else dropped.
 * Returns how many worktrees went. */
static int
git_claims_sweep(const char *dir, git_published_fn *published, void *arg)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int removed = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name), idlen;
		int tmp = len > 11 && strcmp(de->d_name + len - 10, ".claim.tmp") == 0;
		if (de->d_name[0] != '.' || (!tmp && (len < 7 || strcmp(de->d_name + len - 6, ".claim") != 0)))
			continue;
		idlen = len - 1 - (tmp ? 10 : 6);
		if (!git_claim_id_ok(de->d_name + 1, idlen))
			continue;	/* not a name of ours: never acted on */
		char id[GIT_CLAIM_ID_MAX + 1], *path = xasprintf("%s/%s", dir, de->d_name);
		struct stat a, b;
		snprintf(id, sizeof(id), "%.*s", (int)idlen, de->d_name + 1);
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		/* held: its process lives and is making it now; the name must still be this file (a
		 * claim renamed over it since is another's) */
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &a) == 0 && lstat(path, &b) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
			int undone = 1;
			if (!tmp && !published(id, arg))
				undone = git_claim_undo(dir, id, fd, &removed);
			if (undone)
				unlink(path);	/* a temporary one names nothing git made yet */
		}
		if (fd >= 0)
			close(fd);
		free(path);
	}
	closedir(d);
	return removed;
}

int
git_wt_sweep(const char *dir, git_published_fn *published, void *arg)
{
	int removed = git_claims_sweep(dir, published, arg);
	DIR *d = opendir(dir);
	struct dirent *de;

	if (d == NULL)
		return removed;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char *path = xasprintf("%s/%s", dir, de->d_name);
		struct stat st;
		/* Only what git never finished making, and not in the last hour (another process on this
		 * state directory may be making it now). A worktree whose git directory is gone (a
		 * moved or unmounted repository) may hold work: it is left, and said. */
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			int listed = git_wt_listed(path);
			if (listed < 0 && st.st_mtime < time(NULL) - 3600 &&
			    nftw(path, git_rm_step, 16, FTW_DEPTH | FTW_PHYS) == 0)
				removed++;
			else if (listed == 0)
				log_warn("worktree %s: its repository's record of it is gone; left as it is", path);
		}
		free(path);
	}
	closedir(d);
	return removed;
}

void
git_wt_free(struct git_wt *wt)
{
	free(wt->repo);
	free(wt->subdir);
	free(wt->branch);
	free(wt->base);
	free(wt->path);
	memset(wt, 0, sizeof(*wt));
}
