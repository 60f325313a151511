/* Test helpers. */
#include "tests/helpers.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"

void
test_mkdtemp(char *buf, size_t size)
{
	snprintf(buf, size, "/tmp/acp-check-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(buf));
}

void
test_rmtree(const char *path)
{
	pid_t pid = fork();

	if (pid == 0) {
		execlp("rm", "rm", "-rf", path, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

void
test_write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

char *
test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct buf b;
	char chunk[4096];
	size_t n;

	if (f == NULL)
		return NULL;
	buf_init(&b);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_append(&b, chunk, n);
	fclose(f);
	if (len)
		*len = b.len;
	return buf_steal(&b);
}
