/* Replacing a file whole (base/atomic.h). */
#include "base/atomic.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/xmalloc.h"

static int
atomic_write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
atomic_writeat(int dirfd, const char *name, const void *data, size_t len, mode_t mode, int flags)
{
	char tmp[64];
	struct timespec ts;
	int fd = -1, e, dfd, rc = 0;

	for (unsigned i = 0; i < 100 && fd < 0; i++) {
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(tmp, sizeof(tmp), ".acp-write-%ld-%lx", (long)getpid(),
		    (unsigned long)ts.tv_nsec ^ (i * 0x9e3779b9UL));
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0 && errno != EEXIST)
			return -1;
	}
	if (fd < 0)
		return -1;	/* errno: EEXIST */
	errno = 0;
	if ((flags & ATOMIC_MODE) && fchmod(fd, mode & 07777) != 0)
		goto fail;
	if (atomic_write_all(fd, data, len) != 0)
		goto fail;
	if ((flags & ATOMIC_SYNC) && fsync(fd) != 0)
		goto fail;
	e = close(fd);
	fd = -1;
	if (e != 0 || renameat(dirfd, tmp, dirfd, name) != 0)
		goto fail;
	if (flags & ATOMIC_SYNC) {
		/* The file is in place: a directory that cannot be synced is the caller's to report. */
		dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || fsync(dfd) != 0)
			rc = 1;
		if (dfd >= 0)
			close(dfd);
	}
	return rc;
fail:
	e = errno ? errno : EIO;
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	errno = e;
	return -1;
}

int
atomic_write(const char *path, const void *data, size_t len, mode_t mode, int flags)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? xstrndup(path, slash == path ? 1 : (size_t)(slash - path)) : xstrdup(".");
	int dfd, rc, e;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (dfd < 0)
		return -1;
	rc = atomic_writeat(dfd, slash ? slash + 1 : path, data, len, mode, flags);
	e = errno;
	close(dfd);
	errno = e;
	return rc;
}
