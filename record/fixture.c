/*
 * workspace/ (docs/contract.md §21): the content each file a workspace tool touched had before its first
 * touch, at its path under the workspace, its mode kept. Regular files only; at most
 * RECORD_WORKSPACE_MAX bytes in all: a file past that, or one that holds the API key, is left
 * out and named in a warning (stderr).
 */
#include "record/internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/xmalloc.h"

void
record_touch(void *arg, const char *root, const char *abs)
{
	struct record *r = arg;
	size_t n = strlen(root);
	const char *rel;
	struct stat st;
	struct buf b;

	if (r->eof || json_object_get(r->touched, abs))
		return;
	json_object_set_new(r->touched, abs, json_true());
	if (strncmp(abs, root, n) != 0 || abs[n] != '/' || abs[n + 1] == '\0')
		return;		/* the root itself, or outside it (spill files) */
	rel = abs + n + 1;
	if (lstat(abs, &st) < 0 || !S_ISREG(st.st_mode))
		return;		/* absent (a file the session creates), a directory, a link */
	if ((size_t)st.st_size > RECORD_WORKSPACE_MAX - r->ws_bytes) {
		log_warn("record: %s left out of workspace/ (over %u MiB in all)", rel, RECORD_WORKSPACE_MAX >> 20);
		return;
	}
	buf_init(&b);
	if (buf_append_file(&b, abs) < 0) {
		buf_free(&b);
		return;
	}
	if (r->secret && b.len && memmem(b.data, b.len, r->secret, strlen(r->secret))) {
		log_warn("record: %s left out of workspace/ (it holds the API key)", rel);
		buf_free(&b);
		return;
	}
	char *name = xasprintf("workspace/%s", rel);
	if (record_write(r, name, b.data ? b.data : "", b.len, st.st_mode & 0777) == 0)
		r->ws_bytes += b.len;
	free(name);
	buf_free(&b);
}
