/* Capping a tool's text: head, the omitted line, tail; the whole text spilled. */
#include "tools/cap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/xmalloc.h"
#include "tools/workspace.h"

/* The omitted line and the tail take at most this much of the cap. */
#define CAP_LINE_MAX 512

/* n, moved back so that s[0, n) ends on a character boundary. */
static size_t
cap_cut_back(const char *s, size_t n)
{
	size_t k = n;

	while (k > 0 && k + 4 > n && ((unsigned char)s[k] & 0xc0) == 0x80)
		k--;
	return k;
}

/* Writes the whole text to a new spill file; its path (owned), or NULL with why set. */
static char *
cap_spill(struct agent *a, const char *name, const char *text, size_t len, char *why, size_t size)
{
	struct err e;
	struct ws_state *st;
	char *path = NULL;
	int fd = -1;

	err_clear(&e);
	if ((st = ws_state(a, &e)) == NULL || ws_state_spill(st, &e) < 0) {
		snprintf(why, size, "%s", e.msg);
		return NULL;
	}
	for (int i = 1; i < 100 && fd < 0; i++) {
		free(path);
		path = i == 1 ? xasprintf("%s/%s.out", st->spill, name) : xasprintf("%s/%s-%d.out", st->spill, name, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		snprintf(why, size, "cannot create %s: %s", path, strerror(errno));
		free(path);
		return NULL;
	}
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, text + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(why, size, "cannot write %s: %s", path, n < 0 ? strerror(errno) : "short write");
			close(fd);
			unlink(path);
			free(path);
			return NULL;
		}
		off += (size_t)n;
	}
	close(fd);
	return path;
}

void
tools_cap_text(struct agent *a, const char *name, char **text, size_t *len)
{
	const char *s = *text;
	size_t n = *len, head, tail_start, tail_len;
	char why[600];
	char *path;
	struct buf b;

	if (n <= TOOLS_CAP)
		return;
	head = cap_cut_back(s, TOOLS_CAP_HEAD);
	tail_len = TOOLS_CAP - TOOLS_CAP_HEAD - CAP_LINE_MAX;
	tail_start = n - tail_len;
	while (tail_start < n && ((unsigned char)s[tail_start] & 0xc0) == 0x80)
		tail_start++;
	path = cap_spill(a, name, s, n, why, sizeof(why));
	buf_init(&b);
	buf_append(&b, s, head);
	if (head > 0 && s[head - 1] != '\n')
		buf_puts(&b, "\n");
	if (path)
		buf_printf(&b, "[\xe2\x80\xa6 %zu bytes omitted; full output: %s]\n", tail_start - head, path);
	else
		buf_printf(&b, "[\xe2\x80\xa6 %zu bytes omitted; the spill failed: %.300s]\n", tail_start - head, why);
	buf_append(&b, s + tail_start, n - tail_start);
	free(path);
	free(*text);
	*len = b.len;
	*text = buf_steal(&b);
}
