/* Agent types from their files (agent_types.h; docs/contract.md §23.1). */
#include "agent/agent_types.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/permit.h"
#include "base/buf.h"
#include "base/frontmatter.h"
#include "base/log.h"
#include "base/utf8.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "session/descriptor.h"

/* The built-in types' texts (docs/prompts.md pins them; the descriptions are in agent_types.h). */
#define TYPE_EXPLORE_INSTRUCTIONS \
	"You explore a codebase for the agent that started you. Search with glob and grep, read what matters, and " \
	"answer with what you found: file paths with line numbers, the relevant code quoted briefly, and what it " \
	"means for the question you were given. Say plainly what you could not find. Do not guess."

/* Claude Code's tool names, and ours (docs/contract.md §23.1); compared case-insensitively. */
static const struct {
	const char *claude, *ours;
} type_tool_names[] = {
	{ "read", "read" }, { "write", "write" }, { "edit", "edit" }, { "multiedit", "edit" }, { "glob", "glob" },
	{ "grep", "grep" }, { "bash", "bash" }, { "task", "subagent" }, { "agent", "subagent" },
	{ "todowrite", "todo_write" },
};

/* A file's reason to be skipped: NULL when it passes. */
struct type_file {
	const char *path;
	char why[256];
};

static int
type_skip(struct type_file *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f->why, sizeof(f->why), fmt, ap);
	va_end(ap);
	return -1;
}

/* A key as snake_case: "disallowedTools" -> "disallowed_tools". */
static void
type_key(const char *k, char *out, size_t size)
{
	size_t n = 0;

	for (; *k && n + 2 < size; k++) {
		if (isupper((unsigned char)*k)) {
			if (n)
				out[n++] = '_';
			out[n++] = (char)tolower((unsigned char)*k);
		} else {
			out[n++] = *k;
		}
	}
	out[n] = '\0';
}

/* A key given twice under two spellings (or maxTurns and max_steps): the name of the second, or
 * NULL. Which one to believe cannot be told, so the file is skipped. */
static const char *
type_twice(const json_t *fields)
{
	const char *k, *k2;
	const json_t *v, *v2;
	char a[80], b[80];

	json_object_foreach((json_t *)fields, k, v) {
		type_key(k, a, sizeof(a));
		if (strcmp(a, "max_steps") == 0)
			snprintf(a, sizeof(a), "max_turns");
		json_object_foreach((json_t *)fields, k2, v2) {
			if (k2 == k)
				break;
			type_key(k2, b, sizeof(b));
			if (strcmp(b, "max_steps") == 0)
				snprintf(b, sizeof(b), "max_turns");
			if (strcmp(a, b) == 0)
				return k;
		}
	}
	return NULL;
}

/* The value of key (snake_case) in fields, whatever its spelling there. */
static const json_t *
type_field(const json_t *fields, const char *key)
{
	const char *k;
	const json_t *v;
	char norm[80];

	json_object_foreach((json_t *)fields, k, v) {
		type_key(k, norm, sizeof(norm));
		if (strcmp(norm, key) == 0)
			return v;
	}
	return NULL;
}

/* A C0 or C1 control character, or DEL: no place in a one-line text. */
static int
type_has_control(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f || (p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F))
			return 1;
	return 0;
}

static int
type_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64 || !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

/* A tools list (a comma list or an array) as our names, in a new array; warns of the names it drops. */
static json_t *
type_tools(struct type_file *f, const json_t *v, const char *const *known)
{
	json_t *items = json_array(), *out = json_array();
	size_t i;
	json_t *it;

	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		while (*s) {
			const char *c = strchr(s, ',');
			size_t n = c ? (size_t)(c - s) : strlen(s);
			json_array_append_new(items, json_stringn(s, n));
			s += n + (c != NULL);
		}
	} else {
		json_array_extend(items, (json_t *)v);
	}
	json_array_foreach(items, i, it) {
		char name[128];
		const char *s = json_string_value(it);
		size_t n;
		if (s == NULL)
			continue;
		while (*s == ' ' || *s == '\t')
			s++;
		n = strlen(s);
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (n == 0)
			continue;
		if (n >= sizeof(name) || memchr(s, '\0', n)) {
			log_warn("agent type %s: a tool name longer than %zu characters is ignored", f->path, sizeof(name) - 1);
			continue;
		}
		memcpy(name, s, n);
		name[n] = '\0';
		const char *ours = NULL;
		for (size_t k = 0; k < sizeof(type_tool_names) / sizeof(type_tool_names[0]) && !ours; k++)
			if (strcasecmp(name, type_tool_names[k].claude) == 0)
				ours = type_tool_names[k].ours;
		for (size_t k = 0; known && known[k] && !ours; k++)
			if (strcmp(name, known[k]) == 0)
				ours = known[k];
		/* an MCP name or a prefix is kept as it is when a descriptor can hold it (tool names are
		 * letters, digits, _ - .) */
		if (ours == NULL && strncmp(name, "mcp__", 5) == 0 && sess_descriptor_tool_ok(name))
			ours = name;
		if (ours == NULL && n > 1 && name[n - 1] == '*' && sess_descriptor_tool_ok(name))
			ours = name;	/* a prefix: matched when the child's tools are composed */
		if (ours == NULL) {
			char shown[160];
			size_t sn = 0;
			for (size_t k = 0; name[k] && sn + 5 < sizeof(shown); k++)
				sn += (size_t)snprintf(shown + sn, sizeof(shown) - sn,
				    (unsigned char)name[k] < 0x20 || name[k] == 0x7f ? "\\x%02x" : "%c", (unsigned char)name[k]);
			log_warn("agent type %s: tool \"%s\" is not a tool here: ignored", f->path, shown);
			continue;
		}
		int dup = 0;
		size_t j;
		json_t *o;
		json_array_foreach(out, j, o) dup |= strcmp(json_string_value(o), ours) == 0;
		if (!dup)
			json_array_append_new(out, json_string(ours));
	}
	json_decref(items);
	return out;
}

/* Reads a type file (name in the directory dfd) into *ty: 0, or -1 with f->why. */
static int
type_read(struct type_file *f, int dfd, const char *file_name, const char *const *known, struct agent_type *ty,
    struct stat *read_st)
{
	int fd = openat(dfd, file_name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char *data;
	ssize_t got;
	size_t len = 0, cap, body;
	json_t *fields;
	char why[200];
	const json_t *v;

	memset(ty, 0, sizeof(*ty));
	ty->ceiling = -1;
	if (fd < 0)
		return type_skip(f, "cannot be opened: %s", strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return type_skip(f, "not a regular file");
	}
	*read_st = st;
	if (st.st_size > (off_t)AGENT_TYPE_FILE_MAX) {
		close(fd);
		return type_skip(f, "larger than %zu KiB", AGENT_TYPE_FILE_MAX / 1024);
	}
	/* Sized by the stat (one byte more shows a file that grew meanwhile; a file read short, cut
	 * meanwhile or on a file system that reads short, is not taken for whole). */
	cap = (size_t)st.st_size + 1;
	data = xmalloc(AGENT_TYPE_FILE_MAX + 2 < cap + 1 ? AGENT_TYPE_FILE_MAX + 2 : cap + 1);
	while (len < cap && (got = read(fd, data + len, cap - len)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int err = errno;
			free(data);
			close(fd);
			return type_skip(f, "cannot be read: %s", strerror(err));
		}
		len += (size_t)got;
	}
	close(fd);
	if (len != (size_t)st.st_size) {
		free(data);
		return type_skip(f, "changed while it was read");
	}
	data[len] = '\0';
	if (memchr(data, '\0', len) || !utf8_valid(data, len)) {
		free(data);
		return type_skip(f, "not UTF-8 text");
	}
	if (frontmatter_parse(data, len, &fields, &body, why, sizeof(why)) < 0) {
		free(data);
		return type_skip(f, "%s", why);
	}
	if (type_twice(fields)) {
		type_skip(f, "the key %.64s is given twice, in two spellings", type_twice(fields));
		json_decref(fields);
		free(data);
		return -1;
	}
	/* the name: the front matter's, else the file's, lower-cased */
	{
		char name[80];
		const char *given = json_string_value(type_field(fields, "name"));
		size_t n = given && *given ? strlen(given) : strlen(file_name) - 3;
		if (n >= sizeof(name)) {
			json_decref(fields);
			free(data);
			return type_skip(f, "the name is longer than 64 characters");
		}
		memcpy(name, given && *given ? given : file_name, n);
		name[n] = '\0';
		for (size_t k = 0; k < n; k++)
			name[k] = (char)tolower((unsigned char)name[k]);
		if (!type_name_valid(name)) {
			json_decref(fields);
			free(data);
			return type_skip(f, "the name \"%.64s\" is not [a-z0-9][a-z0-9_-]{0,63}", name);
		}
		ty->name = xstrdup(name);
	}
	v = type_field(fields, "description");
	if (!json_is_string(v) || json_string_length(v) == 0) {
		json_decref(fields);
		free(data);
		free(ty->name);
		return type_skip(f, "no description");
	}
	size_t chars = 0;
	for (const char *c = json_string_value(v); *c; c++)
		chars += ((unsigned char)*c & 0xC0) != 0x80;	/* characters, not bytes */
	if (chars > AGENT_TYPE_DESCRIPTION_MAX || type_has_control(json_string_value(v))) {
		json_decref(fields);
		free(data);
		free(ty->name);
		return type_skip(f, chars > AGENT_TYPE_DESCRIPTION_MAX ?
		    "the description is longer than 1024 characters" : "the description is not one line of text");
	}
	ty->description = xstrdup(json_string_value(v));
	/* the rest decides what a child of this type may do: a value that is not understood skips
	 * the file, so a typo never leaves a type with more than its author meant */
	const char *bad = NULL;
	if ((v = type_field(fields, "permission_mode")) != NULL) {
		const char *m = json_string_value(v);
		enum permit_mode pm;
		if (m == NULL)
			bad = "permissionMode is not a word";
		else if (strcmp(m, "plan") == 0)
			ty->ceiling = PERMIT_READ_ONLY;
		else if (strcmp(m, "acceptEdits") == 0)
			ty->ceiling = PERMIT_ACCEPT_EDITS;
		else if (strcmp(m, "bypassPermissions") == 0 || strcmp(m, "dontAsk") == 0 || strcmp(m, "auto") == 0)
			ty->ceiling = -1;
		else if (permit_mode_parse(m, &pm) == 0)
			ty->ceiling = (int)pm;
		else
			bad = "permissionMode is not read-only, default, accept-edits or full-access";
	}
	v = type_field(fields, "max_turns");
	if (v == NULL)
		v = type_field(fields, "max_steps");
	if (v && bad == NULL) {
		const char *s = json_string_value(v);
		char *end = NULL;
		long n = s ? strtol(s, &end, 10) : 0;
		if (s == NULL || end == s || *end || n < 1 || n > 100000)
			bad = "maxTurns is not a positive integer";
		else
			ty->max_steps = (int)n;
	}
	if ((v = type_field(fields, "isolation")) != NULL && bad == NULL) {
		const char *s = json_string_value(v);
		if (s && strcmp(s, "worktree") == 0)
			ty->worktree = 1;
		else if (s == NULL || strcmp(s, "none") != 0)
			bad = "isolation is not none or worktree";
	}
	if (bad == NULL && body < len && len - body > AGENT_TYPE_BODY_MAX)
		bad = "the instructions are longer than 64 KiB";
	if (bad) {
		json_decref(fields);
		free(data);
		free(ty->name);
		free(ty->description);
		return type_skip(f, "%s", bad);
	}
	if ((v = type_field(fields, "tools")) != NULL && (json_is_array(v) || json_string_length(v) > 0))
		ty->tools = type_tools(f, v, known);
	if ((v = type_field(fields, "disallowed_tools")) != NULL && (json_is_array(v) || json_string_length(v) > 0))
		ty->denied = type_tools(f, v, known);
	if ((v = type_field(fields, "model")) != NULL) {
		const char *m = json_string_value(v);
		if (m == NULL || type_has_control(m) || strlen(m) > 128)
			log_warn("agent type %s: the model is not a model id: the parent's is used", f->path);
		else if (strcmp(m, "sonnet") == 0 || strcmp(m, "opus") == 0 || strcmp(m, "haiku") == 0)
			log_warn("agent type %s: model %s is Claude Code's alias: the parent's model is used", f->path, m);
		else if (*m && strcmp(m, "inherit") != 0)
			ty->model = xstrdup(m);
	}
	/* the instructions: the body without its leading blank lines and trailing white space */
	{
		const char *b = data + body;
		size_t n = len - body;
		while (n && (*b == '\n' || *b == '\r')) {
			b++;
			n--;
		}
		while (n && isspace((unsigned char)b[n - 1]))
			n--;
		ty->instructions = xstrndup(b, n);
	}
	ty->path = xstrdup(f->path);
	json_decref(fields);
	free(data);
	return 0;
}

static void
type_clear(struct agent_type *ty)
{
	free(ty->name);
	free(ty->description);
	free(ty->path);
	free(ty->instructions);
	json_decref(ty->tools);
	json_decref(ty->denied);
	free(ty->model);
}

static int
type_cmp(const void *a, const void *b)
{
	return strcmp(((const struct agent_type *)a)->name, ((const struct agent_type *)b)->name);
}

static int
type_str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static struct agent_type *
type_find(struct agent_types *t, const char *name)
{
	size_t k = (size_t)map_get(&t->names, name);

	return k ? &t->v[k - 1] : NULL;
}

static void
type_add(struct agent_types *t, struct agent_type *ty)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->v = xrealloc(t->v, t->cap * sizeof(*t->v));
	}
	t->v[t->n++] = *ty;
	map_put(&t->names, ty->name, (void *)t->n);
}

static void
type_skipped(struct agent_types *t, const char *path, const char *why, int warn)
{
	if (warn)
		log_warn("agent type %s: %s", path, why);
	/* a file's name and what it said are any bytes: kept as repaired text */
	json_array_append_new(t->skipped, xjson_pack("{s:o, s:o}", "path", xjson_text(path, strlen(path)), "reason",
	    xjson_text(why, strlen(why))));
}

/* s copied, NULL kept. */
static char *
type_dup_str(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* A copy of src that owns its strings (the lists are shared: never changed once read). */
static void
type_dup(struct agent_type *dst, const struct agent_type *src)
{
	*dst = *src;
	dst->name = type_dup_str(src->name);
	dst->description = type_dup_str(src->description);
	dst->path = type_dup_str(src->path);
	dst->instructions = type_dup_str(src->instructions);
	dst->model = type_dup_str(src->model);
	/* the lists are never changed once read: shared */
	dst->tools = json_incref(src->tools);
	dst->denied = json_incref(src->denied);
}

/* ---- the memo ---- */

/* A file of a source directory as a stat showed it when it was read. */
struct agent_types_seen {
	char *name;			/* owned: its name in the directory */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

/* f as name and st say. */
static void
seen_set(struct agent_types_seen *f, const char *name, const struct stat *st)
{
	f->name = xstrdup(name);
	f->dev = st->st_dev;
	f->ino = st->st_ino;
	f->size = st->st_size;
	f->mtime = st->st_mtim;
	f->ctime = st->st_ctim;
}

/* Whether st shows the file as it was (an edit changes the change time even when the
 * modification time is set back). */
static int
seen_same(const struct agent_types_seen *f, const struct stat *st)
{
	return f->dev == st->st_dev && f->ino == st->st_ino && f->size == st->st_size &&
	    f->mtime.tv_sec == st->st_mtim.tv_sec && f->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	    f->ctime.tv_sec == st->st_ctim.tv_sec && f->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

struct memo_file {
	struct agent_types_seen id;	/* its name and stat */
	int ok;
	int moved;			/* its strings belong to a newer reading's entry now */
	struct agent_type ty;		/* owned, when ok */
	char *why;			/* owned, when not */
};

struct memo_dir {
	struct memo_file *v;		/* owned, in name order (the order read) */
	size_t n, cap;
};

struct agent_types_memo {
	struct map dirs;		/* directory path -> struct memo_dir * (owned) */
	struct map sets;		/* "<workspace>\n<home>\n<config>" -> struct agent_types * (a reference) */
	int racy_s;
};

/* Frees a directory's reading (entries moved to a newer one are not its own any more). */
static void
memo_dir_free(struct memo_dir *d)
{
	if (d == NULL)
		return;
	for (size_t i = 0; i < d->n; i++) {
		if (d->v[i].moved)
			continue;
		free(d->v[i].id.name);
		if (d->v[i].ok)
			type_clear(&d->v[i].ty);
		free(d->v[i].why);
	}
	free(d->v);
	free(d);
}

struct agent_types_memo *
agent_types_memo_new(int racy_s)
{
	struct agent_types_memo *m = xcalloc(1, sizeof(*m));

	map_init(&m->dirs);
	map_init(&m->sets);
	m->racy_s = racy_s;
	return m;
}

void
agent_types_memo_free(struct agent_types_memo *m)
{
	size_t pos = 0;
	void *v;

	if (m == NULL)
		return;
	while (map_next(&m->dirs, &pos, NULL, &v))
		memo_dir_free(v);
	map_free(&m->dirs);
	pos = 0;
	while (map_next(&m->sets, &pos, NULL, &v))
		agent_types_unref(v);
	map_free(&m->sets);
	free(m);
}

/* bsearch's order of a directory's entries: by name. */
static int
memo_name_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct memo_file *)elem)->id.name);
}

/* The entry of d for name whose stat is still st, or NULL. */
static struct memo_file *
memo_hit(struct memo_dir *d, const char *name, const struct stat *st)
{
	struct memo_file *f = d ? bsearch(name, d->v, d->n, sizeof(*d->v), memo_name_cmp) : NULL;

	return f && seen_same(&f->id, st) ? f : NULL;
}

/* A new entry at the end of d, uninitialised. */
static struct memo_file *
memo_slot(struct memo_dir *d)
{
	if (d->n == d->cap) {
		d->cap = d->cap ? d->cap * 2 : 16;
		d->v = xrealloc(d->v, d->cap * sizeof(*d->v));
	}
	return &d->v[d->n++];
}

/* A hit kept for the next reading: moved, not copied (the old slot still names it, for the
 * search, until the old reading is freed). */
static void
memo_move(struct memo_dir *d, struct memo_file *hit)
{
	*memo_slot(d) = *hit;
	hit->moved = 1;
}

/* A file changed in the last seconds may change again within its time stamp's granularity (the
 * kernel's clock tick) without its stat showing it: not to be trusted to its stat (git's "racily
 * clean" entries). A later change sets a newer mtime, so an older one is safe. */
static int
type_racy(const struct agent_types_memo *m, const struct stat *st)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return st->st_mtim.tv_sec >= now.tv_sec - m->racy_s;
}

/* Keeps what name said under st in d, unless st is too recent to vouch for it: 1 when kept. */
static int
memo_note(const struct agent_types_memo *m, struct memo_dir *d, const char *name, const struct stat *st,
    const struct agent_type *ty, const char *why)
{
	struct memo_file *f;

	if (type_racy(m, st))
		return 0;
	f = memo_slot(d);
	memset(f, 0, sizeof(*f));
	seen_set(&f->id, name, st);
	f->ok = ty != NULL;
	if (ty)
		type_dup(&f->ty, ty);
	else
		f->why = xstrdup(why);
	return 1;
}

/* Notes in t's directory d the file name as st shows it: what validates a shared set. */
static void
type_seen(struct agent_types_dir *d, const char *name, const struct stat *st)
{
	if ((d->nseen & (d->nseen - 1)) == 0)	/* at 0, 1, 2, 4, ...: doubles */
		d->seen = xrealloc(d->seen, (d->nseen ? d->nseen * 2 : 1) * sizeof(*d->seen));
	seen_set(&d->seen[d->nseen++], name, st);
}

/* The *.md files of source dir i, in name order; a file whose stat is what memo saw is not read. */
static void
type_read_dir(struct agent_types *t, int i, const char *const *known, struct agent_types_memo *memo)
{
	struct agent_types_dir *d = &t->dirs[i];
	struct stat st;
	DIR *dir;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct memo_dir *old, *now = NULL;

	if (d->path == NULL || stat(d->path, &st) < 0 || !S_ISDIR(st.st_mode))
		return;
	old = memo ? map_get(&memo->dirs, d->path) : NULL;
	if (memo && type_racy(memo, &st))
		t->unpinned = 1;	/* a file added within its mtime's tick would not show */
	d->exists = 1;
	d->mtime = st.st_mtim;
	if ((dir = opendir(d->path)) == NULL) {
		log_warn("agent types: %s cannot be read: %s", d->path, strerror(errno));
		return;
	}
	while ((de = readdir(dir)) != NULL) {
		size_t len = strlen(de->d_name);
		if (len < 4 || strcmp(de->d_name + len - 3, ".md") != 0 || de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			names = xrealloc(names, cap * sizeof(*names));
		}
		names[n++] = xstrdup(de->d_name);
	}
	if (n > 1)
		qsort(names, n, sizeof(*names), type_str_cmp);
	if (memo) {
		now = xcalloc(1, sizeof(*now));
		now->cap = n ? n : 1;
		now->v = xmalloc(now->cap * sizeof(*now->v));
	}
	for (size_t k = 0; k < n; k++) {
		char *path = xasprintf("%s/%s", d->path, names[k]);
		struct type_file f = { path, "" };
		struct agent_type ty;
		struct stat fst;
		struct memo_file *hit = NULL;
		int rc, read_now = 1;
		if (memo && fstatat(dirfd(dir), names[k], &fst, 0) == 0 && S_ISREG(fst.st_mode) &&
		    (hit = memo_hit(old, names[k], &fst)) != NULL) {
			read_now = 0;
			if (hit->ok)
				type_dup(&ty, &hit->ty);
			else
				snprintf(f.why, sizeof(f.why), "%s", hit->why);
			rc = hit->ok ? 0 : -1;
		} else {
			struct stat read_st;
			read_st.st_mode = 0;
			rc = type_read(&f, dirfd(dir), names[k], known, &ty, &read_st);
			/* what was read, under the stat it was read with (a regular file's only); another
			 * entry (x.md a directory) under its own stat; one that cannot be stat'ed (a
			 * dangling link) is seen again only when the directory changes */
			if (now && S_ISREG(read_st.st_mode)) {
				if (memo_note(memo, now, names[k], &read_st, rc == 0 ? &ty : NULL, f.why))
					type_seen(d, names[k], &read_st);
				else
					t->unpinned = 1;
			} else if (now && fstatat(dirfd(dir), names[k], &fst, 0) == 0) {
				type_seen(d, names[k], &fst);
			}
		}
		if (hit) {
			memo_move(now, hit);
			type_seen(d, names[k], &fst);
		}
		if (rc < 0) {
			type_skipped(t, path, f.why, read_now);
		} else if (type_find(t, ty.name)) {
			char *why = xasprintf("the name %s is already defined by %s", ty.name, type_find(t, ty.name)->path);
			type_skipped(t, path, why, 1);
			free(why);
			type_clear(&ty);
		} else {
			type_add(t, &ty);
		}
		free(path);
		free(names[k]);
	}
	closedir(dir);
	free(names);
	if (memo) {
		/* the directory as it is now: files gone since are forgotten */
		map_put(&memo->dirs, d->path, now);
		memo_dir_free(old);
	}
}

static void
type_builtin(struct agent_types *t, const char *name, const char *description, const char *instructions,
    json_t *tools, int ceiling)
{
	struct agent_type ty = { 0 };

	if (type_find(t, name)) {	/* a file redefined it */
		json_decref(tools);
		return;
	}
	ty.name = xstrdup(name);
	ty.description = xstrdup(description);
	ty.instructions = xstrdup(instructions);
	ty.tools = tools;
	ty.ceiling = ceiling;
	type_add(t, &ty);
}

void
agent_types_load(struct agent_types *t, const char *workspace, const char *home, const char *config_home,
    const char *const *known, struct agent_types_memo *memo)
{
	memset(t, 0, sizeof(*t));
	map_init(&t->names);
	t->skipped = json_array();
	t->dirs[0].path = xasprintf("%s/.acp-agent/agents", workspace);
	t->dirs[1].path = xasprintf("%s/.claude/agents", workspace);
	if (config_home && *config_home)
		t->dirs[2].path = xasprintf("%s/acp-agent/agents", config_home);
	else if (home && *home)
		t->dirs[2].path = xasprintf("%s/.config/acp-agent/agents", home);
	if (home && *home)
		t->dirs[3].path = xasprintf("%s/.claude/agents", home);
	/* a workspace that is the home: its .claude/agents is read once, as the workspace's */
	for (int i = 1; i < AGENT_TYPE_SOURCES; i++)
		for (int j = 0; j < i && t->dirs[i].path; j++)
			if (t->dirs[j].path && strcmp(t->dirs[i].path, t->dirs[j].path) == 0) {
				free(t->dirs[i].path);
				t->dirs[i].path = NULL;
			}
	for (int i = 0; i < AGENT_TYPE_SOURCES; i++)
		type_read_dir(t, i, known, memo);
	type_builtin(t, "general", AGENT_TYPE_GENERAL_DESCRIPTION, "", NULL, -1);
	type_builtin(t, "explore", AGENT_TYPE_EXPLORE_DESCRIPTION, TYPE_EXPLORE_INSTRUCTIONS,
	    xjson_pack("[s, s, s, s]", "read", "glob", "grep", "todo_write"), PERMIT_READ_ONLY);
	if (t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), type_cmp);
	for (size_t i = 0; i < t->n; i++)	/* the indexes after the sort */
		map_put(&t->names, t->v[i].name, (void *)(i + 1));
}

int
agent_types_stale(const struct agent_types *t)
{
	for (int i = 0; i < AGENT_TYPE_SOURCES; i++) {
		const struct agent_types_dir *d = &t->dirs[i];
		struct stat st;
		int exists;
		if (d->path == NULL)
			continue;
		exists = stat(d->path, &st) == 0 && S_ISDIR(st.st_mode);
		if (exists != d->exists || (exists && (st.st_mtim.tv_sec != d->mtime.tv_sec ||
		    st.st_mtim.tv_nsec != d->mtime.tv_nsec)))
			return 1;
	}
	return 0;
}

const struct agent_type *
agent_types_get(const struct agent_types *t, const char *name)
{
	return type_find((struct agent_types *)t, name);
}

void
agent_types_free(struct agent_types *t)
{
	for (size_t i = 0; i < t->n; i++)
		type_clear(&t->v[i]);
	free(t->v);
	map_free(&t->names);
	json_decref(t->skipped);
	for (int i = 0; i < AGENT_TYPE_SOURCES; i++) {
		free(t->dirs[i].path);
		for (size_t k = 0; k < t->dirs[i].nseen; k++)
			free(t->dirs[i].seen[k].name);
		free(t->dirs[i].seen);
	}
	memset(t, 0, sizeof(*t));
}

/* Whether every source directory and every file of t still has the stat t was read with. */
static int
types_still(const struct agent_types *t)
{
	if (t->unpinned || agent_types_stale(t))
		return 0;
	for (int i = 0; i < AGENT_TYPE_SOURCES; i++) {
		const struct agent_types_dir *d = &t->dirs[i];
		int dfd;
		if (d->nseen == 0)
			continue;
		if ((dfd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			return 0;
		for (size_t k = 0; k < d->nseen; k++) {
			const struct agent_types_seen *f = &d->seen[k];
			struct stat st;
			if (fstatat(dfd, f->name, &st, 0) < 0 || !seen_same(f, &st)) {
				close(dfd);
				return 0;
			}
		}
		close(dfd);
	}
	return 1;
}

/* Keeps the memo bounded: sets nobody else holds go past MEMO_SETS; past MEMO_DIRS directories,
 * every file's parse is forgotten (read again when next met). */
#define MEMO_SETS 16
#define MEMO_DIRS 64
static void
memo_trim(struct agent_types_memo *m)
{
	size_t pos = 0;
	const char *k;
	void *v;

	if (m->sets.len >= MEMO_SETS) {
		struct map kept;
		map_init(&kept);
		while (map_next(&m->sets, &pos, &k, &v)) {
			if (((struct agent_types *)v)->refs > 1)
				map_put(&kept, k, v);
			else
				agent_types_unref(v);
		}
		map_free(&m->sets);
		m->sets = kept;
	}
	if (m->dirs.len >= MEMO_DIRS) {
		pos = 0;
		while (map_next(&m->dirs, &pos, NULL, &v))
			memo_dir_free(v);
		map_free(&m->dirs);
		map_init(&m->dirs);
	}
}

struct agent_types *
agent_types_shared(struct agent_types_memo *memo, const char *workspace, const char *home, const char *config_home,
    const char *const *known)
{
	char *key = xasprintf("%s\n%s\n%s", workspace, home ? home : "", config_home ? config_home : "");
	struct agent_types *t, *fresh;

	memo_trim(memo);
	t = map_get(&memo->sets, key);
	if (t && types_still(t)) {
		t->refs++;
		free(key);
		return t;
	}
	fresh = xcalloc(1, sizeof(*fresh));
	agent_types_load(fresh, workspace, home, config_home, known, memo);
	fresh->refs = 2;	/* the memo's and the caller's */
	if (t)
		agent_types_unref(t);
	map_put(&memo->sets, key, fresh);
	free(key);
	return fresh;
}

void
agent_types_unref(struct agent_types *t)
{
	if (t == NULL || --t->refs > 0)
		return;
	agent_types_free(t);
	free(t);
}
