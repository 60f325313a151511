/* Content-addressed files (base/blob.h). */
#include "base/blob.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic.h"
#include "base/xmalloc.h"

int
blob_name_valid(const char *name)
{
	size_t i;

	for (i = 0; i < BLOB_NAME_LEN; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return 0;
	return name[i] == '\0';
}

/* fsyncs the directory that holds dir. */
static void
blob_sync_parent(const char *dir)
{
	const char *slash = strrchr(dir, '/');
	char *parent = slash && slash != dir ? xstrndup(dir, (size_t)(slash - dir)) : xstrdup(slash ? "/" : ".");
	int fd;

	if ((fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		fsync(fd);
		close(fd);
	}
	free(parent);
}

/* Whether dir/name holds the len bytes its name is the digest of (read 64 KiB at a time). */
static int
blob_holds(const char *dir, const char *name, size_t len)
{
	unsigned char chunk[64 << 10];
	struct sha256 s;
	struct err e;
	size_t got = 0;
	ssize_t n;
	int fd;

	err_clear(&e);
	if ((fd = blob_open(dir, name, len, &e)) < 0)
		return 0;
	sha256_init(&s);
	while (got < len) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		sha256_update(&s, chunk, (size_t)n);
		got += (size_t)n;
	}
	close(fd);
	return got == len && blob_check(name, &s);
}

int
blob_put(const char *dir, const void *data, size_t len, int sync, char name[BLOB_NAME_LEN + 1], struct err *e)
{
	struct stat st;
	char *path;
	int rc;

	sha256_hex(data, len, name);
	if (mkdir(dir, 0700) == 0) {
		if (sync)
			blob_sync_parent(dir);	/* the directory's own entry, before a log names a blob in it */
	} else if (errno != EEXIST) {
		return err_set(e, ERR_INTERNAL, "the image cannot be stored: %s: %s", dir, strerror(errno));
	}
	path = xasprintf("%s/%s", dir, name);
	if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == len && blob_holds(dir, name, len)) {
		free(path);
		return 0;	/* stored before: the name is the content (and a damaged one is written again) */
	}
	rc = atomic_write(path, data, len, 0600, ATOMIC_MODE | (sync ? ATOMIC_SYNC : 0));
	if (rc < 0) {
		err_set(e, ERR_INTERNAL, "the image cannot be stored: %s: %s", path, strerror(errno));
		free(path);
		return -1;
	}
	free(path);
	return 0;
}

int
blob_open(const char *dir, const char *name, size_t bytes, struct err *e)
{
	struct stat st;
	char *path;
	int fd;

	if (!blob_name_valid(name))
		return err_set(e, ERR_INTERNAL, "image blob \"%.80s\" is not a SHA-256 name", name);
	path = xasprintf("%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return err_set(e, ERR_INTERNAL, "image blob %s cannot be opened: %s", name, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != bytes) {
		close(fd);
		return err_set(e, ERR_INTERNAL, "image blob %s is not the %zu bytes it was stored with", name, bytes);
	}
	return fd;
}

int
blob_check(const char *name, struct sha256 *s)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char d[SHA256_LEN];
	char got[BLOB_NAME_LEN + 1];
	size_t i;

	sha256_final(s, d);
	for (i = 0; i < SHA256_LEN; i++) {
		got[(size_t)2 * i] = hex[d[i] >> 4];
		got[(size_t)2 * i + 1] = hex[d[i] & 15];
	}
	got[BLOB_NAME_LEN] = '\0';
	return strcmp(got, name) == 0;
}

unsigned char *
blob_read(const char *dir, const char *name, size_t bytes, struct err *e)
{
	unsigned char *data;
	struct sha256 s;
	size_t got = 0;
	int fd = blob_open(dir, name, bytes, e);

	if (fd < 0)
		return NULL;
	data = xmalloc(bytes ? bytes : 1);
	while (got < bytes) {
		ssize_t n = read(fd, data + got, bytes - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err_set(e, ERR_INTERNAL, "image blob %s cannot be read: %s", name, n < 0 ? strerror(errno) : "short file");
			close(fd);
			free(data);
			return NULL;
		}
		got += (size_t)n;
	}
	close(fd);
	sha256_init(&s);
	sha256_update(&s, data, bytes);
	if (!blob_check(name, &s)) {
		err_set(e, ERR_INTERNAL, "image blob %s does not hold the bytes it is named by", name);
		free(data);
		return NULL;
	}
	return data;
}
