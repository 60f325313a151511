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
#include <unistd.h>

#include "agent/permit.h"
#include "base/buf.h"
#include "base/frontmatter.h"
#include "base/log.h"
#include "base/utf8.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

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
		if (ours == NULL && strncmp(name, "mcp__", 5) == 0 && !type_has_control(name))
			ours = name;
		if (ours == NULL && n > 1 && name[n - 1] == '*' && !type_has_control(name))
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

/* Reads a type file into *ty: 0, or -1 with f->why. */
static int
type_read(struct type_file *f, const char *file_name, const char *const *known, struct agent_type *ty)
{
	int fd = open(f->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char *data;
	ssize_t got;
	size_t len = 0, body;
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
	if (st.st_size > (off_t)AGENT_TYPE_FILE_MAX) {
		close(fd);
		return type_skip(f, "larger than %zu KiB", AGENT_TYPE_FILE_MAX / 1024);
	}
	data = xmalloc(AGENT_TYPE_FILE_MAX + 2);
	while (len <= AGENT_TYPE_FILE_MAX && (got = read(fd, data + len, AGENT_TYPE_FILE_MAX + 1 - len)) != 0) {
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
	if (len > AGENT_TYPE_FILE_MAX) {
		free(data);
		return type_skip(f, "larger than %zu KiB", AGENT_TYPE_FILE_MAX / 1024);	/* it grew */
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
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->v[i].name, name) == 0)
			return &t->v[i];
	return NULL;
}

static void
type_add(struct agent_types *t, struct agent_type *ty)
{
	t->v = xrealloc(t->v, (t->n + 1) * sizeof(*t->v));
	t->v[t->n++] = *ty;
}

static void
type_skipped(struct agent_types *t, const char *path, const char *why)
{
	log_warn("agent type %s: %s", path, why);
	/* a file's name and what it said are any bytes: kept as repaired text */
	json_array_append_new(t->skipped, xjson_pack("{s:o, s:o}", "path", xjson_text(path, strlen(path)), "reason",
	    xjson_text(why, strlen(why))));
}

/* The *.md files of source dir i, in name order. */
static void
type_read_dir(struct agent_types *t, int i, const char *const *known)
{
	struct agent_types_dir *d = &t->dirs[i];
	struct stat st;
	DIR *dir;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;

	if (d->path == NULL || stat(d->path, &st) < 0 || !S_ISDIR(st.st_mode))
		return;
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
	closedir(dir);
	if (n > 1)
		qsort(names, n, sizeof(*names), type_str_cmp);
	for (size_t k = 0; k < n; k++) {
		char *path = xasprintf("%s/%s", d->path, names[k]);
		struct type_file f = { path, "" };
		struct agent_type ty;
		if (type_read(&f, names[k], known, &ty) < 0) {
			type_skipped(t, path, f.why);
		} else if (type_find(t, ty.name)) {
			char *why = xasprintf("the name %s is already defined by %s", ty.name, type_find(t, ty.name)->path);
			type_skipped(t, path, why);
			free(why);
			type_clear(&ty);
		} else {
			type_add(t, &ty);
		}
		free(path);
		free(names[k]);
	}
	free(names);
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
    const char *const *known)
{
	memset(t, 0, sizeof(*t));
	t->skipped = json_array();
	t->dirs[0].path = xasprintf("%s/.acp-agent/agents", workspace);
	t->dirs[1].path = xasprintf("%s/.claude/agents", workspace);
	if (config_home && *config_home)
		t->dirs[2].path = xasprintf("%s/acp-agent/agents", config_home);
	else if (home && *home)
		t->dirs[2].path = xasprintf("%s/.config/acp-agent/agents", home);
	if (home && *home)
		t->dirs[3].path = xasprintf("%s/.claude/agents", home);
	for (int i = 0; i < AGENT_TYPE_SOURCES; i++)
		type_read_dir(t, i, known);
	type_builtin(t, "general", AGENT_TYPE_GENERAL_DESCRIPTION, "", NULL, -1);
	type_builtin(t, "explore", AGENT_TYPE_EXPLORE_DESCRIPTION, TYPE_EXPLORE_INSTRUCTIONS,
	    xjson_pack("[s, s, s, s]", "read", "glob", "grep", "todo_write"), PERMIT_READ_ONLY);
	if (t->n > 1)
		qsort(t->v, t->n, sizeof(*t->v), type_cmp);
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
	json_decref(t->skipped);
	for (int i = 0; i < AGENT_TYPE_SOURCES; i++)
		free(t->dirs[i].path);
	memset(t, 0, sizeof(*t));
}
