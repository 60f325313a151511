/* The JSONL writer. */
#include "session/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/jenc.h"
#include "base/log.h"
#include "base/xmalloc.h"

int
sess_sync_parse(const char *s, enum sess_sync *out)
{
	if (strcmp(s, "none") == 0)
		*out = SESS_SYNC_NONE;
	else if (strcmp(s, "turn") == 0)
		*out = SESS_SYNC_TURN;
	else if (strcmp(s, "always") == 0)
		*out = SESS_SYNC_ALWAYS;
	else
		return -1;
	return 0;
}

static int
sess_mkdir(const char *path, struct err *e)
{
	struct stat st;

	if (mkdir(path, 0700) == 0)
		return 0;
	if (errno != EEXIST)
		return err_set(e, ERR_SESSION_LOG_IO, "cannot create %s: %s", path, strerror(errno));
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return err_set(e, ERR_SESSION_LOG_IO, "%s is not a directory", path);
	return 0;
}

static int
sess_mkdirs(const char *path, struct err *e)
{
	char *p = xstrdup(path);
	int rc = 0;

	for (char *s = p + 1; *s && rc == 0; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			rc = err_set(e, ERR_SESSION_LOG_IO, "cannot create %s: %s", p, strerror(errno));
		*s = '/';
	}
	if (rc == 0)
		rc = sess_mkdir(p, e);
	free(p);
	return rc;
}

int
sess_env_init(struct sess_env *env, const char *state_dir, enum sess_sync sync, int deterministic,
    const char *faults, struct err *e)
{
	memset(env, 0, sizeof(*env));
	if (sess_faults_parse(&env->faults, faults, e) < 0)
		return -1;
	/* Absolute: what is made from it (a child's worktree, its header's cwd) outlives our cwd. */
	if (state_dir[0] == '/') {
		env->state_dir = xstrdup(state_dir);
	} else {
		char *cwd = getcwd(NULL, 0);
		if (cwd == NULL)
			return err_set(e, ERR_SESSION_LOG_IO, "cannot resolve the state directory %s: %s", state_dir,
			    strerror(errno));
		env->state_dir = xasprintf("%s/%s", cwd, state_dir);
		free(cwd);
	}
	env->dir = xasprintf("%s/sessions", env->state_dir);
	env->sync = sync;
	clock_init(&env->clock, deterministic);
	sess_ids_init(&env->ids, deterministic);
	if (sess_mkdirs(env->state_dir, e) < 0 || sess_mkdir(env->dir, e) < 0)
		return -1;
	return 0;
}

void
sess_env_free(struct sess_env *env)
{
	sess_ids_close(&env->ids);
	free(env->state_dir);
	free(env->dir);
	env->state_dir = env->dir = NULL;
}

char *
sess_env_path(const struct sess_env *env, const char *id)
{
	return xasprintf("%s/%s.jsonl", env->dir, id);
}

struct sess_log *
sess_log_new(struct sess_env *env, const char *id, const json_t *header)
{
	struct sess_log *lg = xcalloc(1, sizeof(*lg));
	char *h = jenc_dumps(header, NULL);

	lg->env = env;
	snprintf(lg->id, sizeof(lg->id), "%s", id);
	lg->path = sess_env_path(env, id);
	lg->fd = -1;
	lg->header_line = xasprintf("%s\n", h);
	free(h);
	return lg;
}

/* Marks lg failed with its cause (what the client will read); always -1 with e. */
static int sess_log_fail(struct sess_log *lg, int recoverable, struct err *e, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int
sess_log_fail(struct sess_log *lg, int recoverable, struct err *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(lg->why, sizeof(lg->why), fmt, ap);
	va_end(ap);
	lg->failed = 1;
	lg->recoverable = recoverable;
	return err_set(e, ERR_SESSION_LOG_IO, "%s", lg->why);
}

/* Writes all of data at the current offset; the injected short write lives here. */
static int
sess_log_write_all(struct sess_log *lg, int fd, const char *data, size_t len)
{
	size_t done = 0;

	if (lg->env->faults.short_write) {
		lg->env->faults.short_write = 0;
		if (write(fd, data, len / 2) < 0)
			return -1;
		errno = EIO;
		return -1;
	}
	while (done < len) {
		ssize_t n = write(fd, data + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

static int
sess_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc;

	if (fd < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

/* Header and first lines go to a temp file, synced, then linked into place. */
static int
sess_log_publish(struct sess_log *lg, const char *data, size_t len, struct err *e)
{
	char *tmp = xasprintf("%s/.%s.tmp-%ld", lg->env->dir, lg->id, (long)getpid());
	size_t hlen = strlen(lg->header_line);
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	int saved;

	if (fd < 0) {
		err_set(e, ERR_SESSION_LOG_IO, "cannot create %s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || sess_log_write_all(lg, fd, lg->header_line, hlen) < 0 ||
	    sess_log_write_all(lg, fd, data, len) < 0 ||
	    (lg->env->sync != SESS_SYNC_NONE && (lg->env->syncs++, fdatasync(fd) < 0)) || link(tmp, lg->path) < 0)
		goto fail;
	unlink(tmp);
	if (lg->env->sync != SESS_SYNC_NONE &&
	    (lg->env->faults.dir_sync_fail ? (lg->env->faults.dir_sync_fail = 0, errno = EIO, -1)
					    : sess_fsync_dir(lg->env->dir)) < 0) {
		/* Not durably published: take the name back, so nothing half-made stays. */
		saved = errno;
		unlink(lg->path);
		close(fd);
		free(tmp);
		return sess_log_fail(lg, 0, e, "cannot publish session %s: directory sync failed: %s", lg->id,
		    strerror(saved));
	}
	free(tmp);
	lg->fd = fd;
	lg->good = (off_t)(hlen + len);
	free(lg->header_line);
	lg->header_line = NULL;
	return 0;
fail:
	saved = errno;
	close(fd);
	unlink(tmp);
	free(tmp);
	/* Nothing was published: a later append may try again. */
	return sess_log_fail(lg, 1, e, "cannot publish session %s: %s", lg->id, strerror(saved));
}

struct sess_log *
sess_log_open(struct sess_env *env, const char *id, struct err *e)
{
	struct sess_log *lg;
	char *path = sess_env_path(env, id);
	int readonly = 0;
	int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0 && (errno == EACCES || errno == EROFS || errno == EPERM)) {
		int why = errno;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		readonly = why;
	}
	if (fd < 0) {
		err_set(e, errno == ENOENT ? ERR_UNKNOWN_SESSION : ERR_SESSION_LOG_IO, "cannot open %s: %s",
		    path, strerror(errno));
		free(path);
		return NULL;
	}
	/* A read-only log is only viewed: viewers share it; a writer excludes them and they it. */
	if (flock(fd, (readonly ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		err_set(e, errno == EWOULDBLOCK ? ERR_SESSION_BUSY : ERR_SESSION_LOG_IO,
		    "session %s is held by another process", id);
		close(fd);
		free(path);
		return NULL;
	}
	lg = xcalloc(1, sizeof(*lg));
	lg->env = env;
	snprintf(lg->id, sizeof(lg->id), "%s", id);
	lg->path = path;
	lg->fd = fd;
	if (readonly) {
		lg->readonly = 1;
		sess_log_fail(lg, 0, NULL, "session %s is read-only: %s: %s", id, path, strerror(readonly));
	}
	return lg;
}

int
sess_log_adopt(struct sess_log *lg, off_t good, struct err *e)
{
	lg->good = good;
	if (lg->readonly)
		return 0;	/* a torn tail stays on disk; nothing is written after it */
	if (ftruncate(lg->fd, good) < 0 || lseek(lg->fd, good, SEEK_SET) < 0)
		return err_set(e, ERR_SESSION_LOG_IO, "cannot repair %s: %s", lg->path, strerror(errno));
	return 0;
}

int
sess_log_append(struct sess_log *lg, const char *data, size_t len, struct err *e)
{
	if (lg->failed)
		return err_set(e, ERR_SESSION_LOG_IO, "%s", lg->why);
	if (lg->fd < 0) {
		if (sess_log_publish(lg, data, len, e) < 0)
			return -1;
	} else if (sess_log_write_all(lg, lg->fd, data, len) < 0) {
		int saved = errno, cut = 1;
		/* Cut the partial line so no later event lands on top of a hole. */
		if (ftruncate(lg->fd, lg->good) < 0 || lseek(lg->fd, lg->good, SEEK_SET) < 0) {
			log_error("sess: %s: truncate-back failed: %s", lg->id, strerror(errno));
			cut = 0;
		}
		return sess_log_fail(lg, cut, e, "cannot append to session %s: %s", lg->id, strerror(saved));
	} else {
		lg->good += (off_t)len;
	}
	lg->dirty = 1;
	if (lg->env->sync == SESS_SYNC_ALWAYS)
		return sess_log_sync(lg, e);
	return 0;
}

int
sess_log_sync(struct sess_log *lg, struct err *e)
{
	if (lg->fd < 0 || !lg->dirty || lg->env->sync == SESS_SYNC_NONE) {
		lg->dirty = 0;
		return 0;
	}
	/* After a failed sync what reached the disk is unknown: that log stays failed. */
	if (lg->env->faults.sync_fail) {
		lg->env->faults.sync_fail = 0;
		return sess_log_fail(lg, 0, e, "cannot sync session %s: %s", lg->id, strerror(EIO));
	}
	lg->env->syncs++;
	if (fdatasync(lg->fd) < 0)
		return sess_log_fail(lg, 0, e, "cannot sync session %s: %s", lg->id, strerror(errno));
	lg->dirty = 0;
	return 0;
}

int
sess_log_recover(struct sess_log *lg, struct err *e)
{
	struct stat st;
	char last;

	if (!lg->failed)
		return 0;
	if (!lg->recoverable)
		return err_set(e, ERR_SESSION_LOG_IO, "%s", lg->why);
	if (lg->fd >= 0) {
		/* The file must end where the last good line ends, on its newline. */
		if (fstat(lg->fd, &st) < 0 || st.st_size != lg->good ||
		    (lg->good > 0 && (pread(lg->fd, &last, 1, lg->good - 1) != 1 || last != '\n')) ||
		    lseek(lg->fd, lg->good, SEEK_SET) < 0) {
			lg->recoverable = 0;
			return err_set(e, ERR_SESSION_LOG_IO, "%s (the file no longer ends on the last good line)",
			    lg->why);
		}
	}
	log_info("sess: %s: writing again after: %s", lg->id, lg->why);
	lg->failed = lg->recoverable = 0;
	lg->why[0] = '\0';
	return 0;
}

int
sess_log_published(const struct sess_log *lg)
{
	return lg->fd >= 0;
}

void
sess_log_free(struct sess_log *lg)
{
	if (lg == NULL)
		return;
	if (lg->fd >= 0)
		close(lg->fd);
	free(lg->path);
	free(lg->header_line);
	free(lg);
}
