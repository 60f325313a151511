/*
 * A scenario's state/ and home/ copied into the run's temp dir (docs/scenarios.md): directories
 * and regular files are copied as such. A symbolic link to a directory (state/sessions linked to
 * somewhere else made the agent write outside the temp dir) is refused, and so are fifos and
 * devices. A link to anything else is kept as a link with its target, as hostile logs need
 * (scenarios/hostile-state-dir): the agent opens every session file O_NOFOLLOW, so such a link
 * is a file it refuses, never a way out.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scenario/internal.h"

/* Copies the regular file from to to (created, mode kept); -1 with errno. */
static int
scenario_copy_file(const char *from, const char *to, mode_t mode)
{
	char chunk[65536];
	ssize_t n = 0;
	int in = open(from, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), out;

	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode & 0777);
	if (out < 0) {
		int e = errno;
		close(in);
		errno = e;
		return -1;
	}
	while ((n = read(in, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR)) {
		for (ssize_t off = 0; n > 0 && off < n;) {
			ssize_t w = write(out, chunk + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				n = -1;
				break;
			}
			off += w;
		}
		if (n < 0)
			break;
	}
	int e = errno;
	close(in);
	if (close(out) < 0 && n == 0)
		return -1;
	errno = e;
	return n < 0 ? -1 : 0;
}

/* A symbolic link at from, made again at to unless it leads to a directory. */
static int
scenario_copy_link(struct scenario_run *r, const char *from, const char *to)
{
	char target[PATH_MAX];
	struct stat st;
	ssize_t n = readlink(from, target, sizeof(target) - 1);

	if (n < 0)
		return scenario_fail(r, "cannot read the link %s: %s", from, strerror(errno));
	target[n] = '\0';
	if (stat(from, &st) == 0 && S_ISDIR(st.st_mode))
		return scenario_fail(r, "%s is a symbolic link to a directory (%s): a scenario's state/ and home/ "
		    "hold their directories themselves", from, target);
	if (symlink(target, to) < 0)
		return scenario_fail(r, "cannot make the link %s: %s", to, strerror(errno));
	return 0;
}

int
scenario_copy_tree(struct scenario_run *r, const char *from, const char *to)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int rc = 0;

	if ((d = opendir(from)) == NULL)
		return scenario_fail(r, "cannot read %s: %s", from, strerror(errno));
	if (mkdir(to, 0700) < 0 && errno != EEXIST) {
		closedir(d);
		return scenario_fail(r, "cannot create %s: %s", to, strerror(errno));
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		char src[PATH_MAX], dst[PATH_MAX];
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(src, sizeof(src), "%s/%s", from, de->d_name) >= sizeof(src) ||
		    (size_t)snprintf(dst, sizeof(dst), "%s/%s", to, de->d_name) >= sizeof(dst))
			rc = scenario_fail(r, "%s/%s: the path is too long", from, de->d_name);
		else if (lstat(src, &st) < 0)
			rc = scenario_fail(r, "cannot read %s: %s", src, strerror(errno));
		else if (S_ISLNK(st.st_mode))
			rc = scenario_copy_link(r, src, dst);
		else if (S_ISDIR(st.st_mode))
			rc = scenario_copy_tree(r, src, dst);
		else if (!S_ISREG(st.st_mode))
			rc = scenario_fail(r, "%s is not a regular file (a scenario's state/ and home/ hold files only)", src);
		else if (scenario_copy_file(src, dst, st.st_mode) < 0)
			rc = scenario_fail(r, "cannot copy %s to %s: %s", src, dst, strerror(errno));
	}
	closedir(d);
	return rc;
}
