/* Reading one session file's index facts: header, first lines, last line. */
#include "session/entry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/utf8.h"
#include "base/xmalloc.h"
#include "session/descriptor.h"
#include "session/event.h"

#define ENTRY_HEAD_BYTES 65536
#define ENTRY_TAIL_BYTES 8192
/* A version 3 descriptor carries its type's instructions (up to 64 KiB, escaped): the line after
 * the header may be longer than the head; it is read whole up to this. */
#define ENTRY_DESCRIPTOR_BYTES ((size_t)512 * 1024)
/* How far back sess_last_turn_end looks: a last turn longer than this has no end it can see. */
#define ENTRY_LAST_END_BYTES (64 << 10)

void
sess_entry_clear(struct sess_entry *en)
{
	free(en->cwd);
	free(en->parent);
	free(en->origin);
	free(en->title);
	free(en->label);
	free(en->mode);
	free(en->agent_type);
	free(en->type_description);
	free(en->model);
	free(en->branch);
	en->cwd = en->parent = en->origin = en->title = en->label = en->mode = NULL;
	en->agent_type = en->type_description = en->model = en->branch = NULL;
}

char *
sess_title_from_text(const char *text)
{
	size_t len = strcspn(text, "\r\n"), i = 0, chars = 0;

	while (i < len && chars < 80) {
		size_t l = utf8_seq_len((const unsigned char *)text + i, len - i);
		i += l ? l : 1;
		chars++;
	}
	return xstrndup(text, i);
}

static char *
sess_entry_dup_opt(const json_t *j)
{
	return json_is_string(j) ? xstrdup(json_string_value(j)) : NULL;
}

int
sess_entry_from_header(struct sess_entry *en, const json_t *h)
{
	struct err e;

	err_clear(&e);
	if (sess_header_check(h, &e) < 0) {
		en->state = e.code == ERR_SESSION_UNSUPPORTED ? SESS_ENTRY_UNSUPPORTED
									: SESS_ENTRY_CORRUPT;
		/* A newer header may still say whose child it is. */
		if (json_is_string(json_object_get(h, "parentSession")))
			en->parent = sess_entry_dup_opt(json_object_get(h, "parentSession"));
		en->origin = sess_entry_dup_opt(json_object_get(h, "origin"));
		en->created_at = json_integer_value(json_object_get(h, "createdAt"));
		return -1;
	}
	if (strcmp(json_string_value(json_object_get(h, "id")), en->id) != 0) {
		/* <a>.jsonl holding session b lies about what it is: not listed, not loaded. */
		en->state = SESS_ENTRY_CORRUPT;
		return -1;
	}
	en->state = SESS_ENTRY_OK;
	en->created_at = json_integer_value(json_object_get(h, "createdAt"));
	en->depth = (int)json_integer_value(json_object_get(h, "delegationDepth"));
	en->cwd = sess_entry_dup_opt(json_object_get(h, "cwd"));
	en->parent = sess_entry_dup_opt(json_object_get(h, "parentSession"));
	en->origin = sess_entry_dup_opt(json_object_get(h, "origin"));
	return 0;
}

void
sess_entry_note_event(struct sess_entry *en, const json_t *ev)
{
	const char *type = json_string_value(json_object_get(ev, "type"));
	const json_t *data = json_object_get(ev, "data");

	enum sess_ev et = sess_ev_of(type);

	if (type == NULL)
		return;
	if (en->title == NULL && et == SESS_EV_USER_MESSAGE) {
		const char *kind = json_string_value(json_object_get(json_object_get(data, "source"), "kind"));
		const json_t *first = json_array_get(json_object_get(data, "content"), 0);
		const char *text = json_string_value(json_object_get(first, "text"));
		if (kind && strcmp(kind, "user") == 0 && text)
			en->title = sess_title_from_text(text);
	} else if (et == SESS_EV_SUBAGENT_DESCRIPTOR) {
		/* Identity fold: last wins; a descriptor that does not pass its check is no identity. */
		struct sess_descriptor d;
		const char *why;
		char **facts[] = { &en->label, &en->mode, &en->agent_type, &en->type_description, &en->model, &en->branch };
		for (size_t i = 0; i < sizeof(facts) / sizeof(facts[0]); i++) {
			free(*facts[i]);
			*facts[i] = NULL;
		}
		if (sess_descriptor_read(data, &d, &why) == 0) {
			en->mode = xstrdup(d.mode);
			en->label = d.label ? xstrdup(d.label) : NULL;
			en->agent_type = d.agent_type ? xstrdup(d.agent_type) : NULL;
			en->type_description = d.type_description ? xstrdup(d.type_description) : NULL;
			en->model = d.model ? xstrdup(d.model) : NULL;
			en->branch = d.iso_branch ? xstrdup(d.iso_branch) : NULL;
		}
	} else if (et == SESS_EV_WORKTREE_CREATED && en->branch) {
		/* added back on its branch (it exists again) */
		const char *b = json_string_value(json_object_get(data, "branch"));
		if (b && strncmp(b, "acp-agent/", 10) == 0 && strlen(b) <= 64) {
			free(en->branch);
			en->branch = xstrdup(b);
		}
	} else if (et == SESS_EV_WORKTREE_REMOVED && en->branch && json_is_true(json_object_get(data, "branchDeleted"))) {
		free(en->branch);
		en->branch = xstrdup("");
	}
}

ssize_t
sess_pread_all(int fd, char *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, off + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* Activity: the time of the last complete line of the file (fd, size bytes). */
static void
sess_entry_read_tail(struct sess_entry *en, int fd, off_t size)
{
	off_t off = size > ENTRY_TAIL_BYTES ? size - ENTRY_TAIL_BYTES : 0;
	char tail[ENTRY_TAIL_BYTES + 1];
	ssize_t t = sess_pread_all(fd, tail, ENTRY_TAIL_BYTES, off);
	char *end, *start;

	if (t <= 0)
		return;
	tail[t] = '\0';
	/* an isolated child's branch: its last worktree event the tail holds says whether it is there */
	for (char *p = en->branch ? tail : NULL; p && (p = strstr(p, "\"type\":\"worktree/")) != NULL; p++) {
		char *ls = memrchr(tail, '\n', (size_t)(p - tail)), *le = strchr(p, '\n');
		if (ls == NULL || le == NULL)
			continue;	/* the tail's first, cut line, or its last, unfinished one */
		json_t *j = sess_json_parse_line(ls + 1, (size_t)(le - ls - 1));
		if (j)
			sess_entry_note_event(en, j);
		json_decref(j);
	}
	end = memrchr(tail, '\n', (size_t)t);
	if (end == NULL)
		return;
	*end = '\0';
	start = memrchr(tail, '\n', (size_t)(end - tail));
	start = start ? start + 1 : tail;
	json_t *j = sess_json_parse_line(start, (size_t)(end - start));
	if (json_is_integer(json_object_get(j, "time")))
		en->updated_at = json_integer_value(json_object_get(j, "time"));
	else if (json_is_integer(json_object_get(j, "createdAt")))
		en->updated_at = json_integer_value(json_object_get(j, "createdAt"));
	json_decref(j);
}

/* The descriptor line at off that the head cut short, read whole (when it ends within the bound). */
static void
sess_entry_read_descriptor(struct sess_entry *en, int fd, off_t off)
{
	char *line = xmalloc(ENTRY_DESCRIPTOR_BYTES);
	ssize_t n = sess_pread_all(fd, line, ENTRY_DESCRIPTOR_BYTES, off);
	char *nl = n > 0 ? memchr(line, '\n', (size_t)n) : NULL;

	if (nl) {
		json_t *j = sess_json_parse_line(line, (size_t)(nl - line));
		if (j)
			sess_entry_note_event(en, j);
		json_decref(j);
	}
	free(line);
}

void
sess_entry_read(const char *dir, struct sess_entry *en)
{
	char path[4096];
	int fd;
	struct stat st;
	char *head = NULL;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s.jsonl", dir, en->id);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	sess_entry_clear(en);
	en->state = SESS_ENTRY_UNAVAILABLE;
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto out;
	en->size = st.st_size;
	en->mtime = st.st_mtim;
	en->updated_at = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
	head = xmalloc(ENTRY_HEAD_BYTES + 1);
	n = sess_pread_all(fd, head, ENTRY_HEAD_BYTES, 0);
	if (n < 0)
		goto out;
	head[n] = '\0';
	en->state = SESS_ENTRY_CORRUPT;
	char *p = head, *nl;
	int line = 0;
	while ((nl = memchr(p, '\n', (size_t)(head + n - p))) != NULL) {
		size_t len = (size_t)(nl - p);
		/* Past the header only two kinds of line matter: skip the rest unparsed. */
		if (line > 0 && !memmem(p, len, "\"subagent/descriptor\"", 21) &&
		    (en->title || !memmem(p, len, "\"user/message\"", 14))) {
			line++;
			p = nl + 1;
			continue;
		}
		json_t *j = sess_json_parse_line(p, len);
		if (line++ == 0) {
			int ok = j ? sess_entry_from_header(en, j) : -1;
			json_decref(j);
			if (ok < 0)
				goto out;
		} else if (j) {
			sess_entry_note_event(en, j);
			json_decref(j);
		}
		p = nl + 1;
	}
	if (line == 0)
		goto out;
	if (line == 1 && p < head + n && memmem(p, (size_t)(head + n - p), "\"subagent/descriptor\"", 21))
		sess_entry_read_descriptor(en, fd, (off_t)(p - head));
	if (st.st_size > n || line > 1)
		sess_entry_read_tail(en, fd, st.st_size);
out:
	free(head);
	close(fd);
}

int
sess_entry_order(const void *pa, const void *pb)
{
	const struct sess_entry *a = *(struct sess_entry *const *)pa, *b = *(struct sess_entry *const *)pb;

	if (a->created_at != b->created_at)
		return a->created_at < b->created_at ? -1 : 1;
	return strcmp(a->id, b->id);
}

/* The end of the last turn a tail holds: its reason's kind into kind; 1, or 0 when no turn/end
 * line is in it. */
static int
sess_tail_last_end(char *tail, size_t n, char *kind, size_t size)
{
	char *end = tail + n;

	while (end > tail) {
		char *start = memrchr(tail, '\n', (size_t)(end - tail));
		char *line = start ? start + 1 : tail;
		if (memmem(line, (size_t)(end - line), "\"type\":\"turn/end\"", 17)) {
			json_t *j = sess_json_parse_line(line, (size_t)(end - line));
			const char *k = json_string_value(json_object_get(json_object_get(json_object_get(j, "data"),
			    "reason"), "kind"));
			if (k)
				snprintf(kind, size, "%s", k);
			json_decref(j);
			if (k)
				return 1;
		}
		if (start == NULL)
			break;
		end = start;
	}
	return 0;
}

int
sess_last_turn_end(const char *path, char *kind, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	char *tail;
	ssize_t t;
	int found = 0;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		off_t off = st.st_size > ENTRY_LAST_END_BYTES ? st.st_size - ENTRY_LAST_END_BYTES : 0;
		tail = xmalloc(ENTRY_LAST_END_BYTES + 1);
		t = sess_pread_all(fd, tail, ENTRY_LAST_END_BYTES, off);
		/* the first line may be cut by the window: only whole lines after it are read */
		if (t > 0) {
			char *nl = off > 0 ? memchr(tail, '\n', (size_t)t) : NULL;
			char *from = off == 0 ? tail : nl ? nl + 1 : NULL;
			if (from)
				found = sess_tail_last_end(from, (size_t)(tail + t - from), kind, size);
		}
		free(tail);
	}
	close(fd);
	return found;
}

