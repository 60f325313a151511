/* Project instructions (instructions.h; docs/contract.md §25). */
#include "agent/instructions.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/sha256.h"
#include "base/utf8.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

/* Reads at most max + 1 bytes of path, a regular file whose real path is under confine (NULL:
 * anywhere; the user's own file): 0 with *text (owned) and *len; 1 when it is not there (or not a
 * file); -1 when it cannot be used (warned). A repository's AGENTS.md that is a link to a file
 * outside it (a key, a token) is never put in a prompt. */
static int
instr_load(const char *path, const char *confine, size_t max, char **text, size_t *len)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	size_t n = 0;
	char *b;

	if (fd < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			log_warn("instructions %s: cannot be opened: %s", path, strerror(errno));
		return 1;
	}
	if (confine) {
		char *real = realpath(path, NULL);
		size_t cn = strlen(confine);
		int inside = real && strncmp(real, confine, cn) == 0 && (real[cn] == '/' || cn == 1);
		free(real);
		if (!inside) {
			log_warn("instructions %s: leads outside %s: left out", path, confine);
			close(fd);
			return -1;
		}
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 1;
	}
	b = xmalloc(max + 2);
	while (n <= max) {
		ssize_t r = read(fd, b + n, max + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			log_warn("instructions %s: cannot be read: %s", path, strerror(errno));
			close(fd);
			free(b);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = '\0';
	*text = b;
	*len = n;
	return 0;
}

/* The file at abs (confined to confine, instr_load), shown as shown, added to in within budget
 * (*left bytes; NULL: the nested file's own 32 KiB): its block appended to out. Returns 1 when the
 * budget ran out here. */
static int
instr_add(struct agent_instructions *in, const char *abs, const char *confine, const char *shown, size_t *left,
    struct buf *out)
{
	size_t own = AGENT_INSTRUCTIONS_MAX, *budget = left ? left : &own, len, keep;
	char *text, hex[2 * SHA256_LEN + 1];
	int cut;

	if (instr_load(abs, confine, *budget, &text, &len) != 0)
		return 0;
	/* cut before the character the budget ends in (whole characters only, never past it); the
	 * check is of what is kept: a sequence the read cut is the cut's, not the file's fault */
	keep = len;
	if (len > *budget)
		for (keep = *budget; keep > 0 && ((unsigned char)text[keep] & 0xC0) == 0x80;)
			keep--;
	if (memchr(text, '\0', keep) || !utf8_valid(text, keep)) {
		log_warn("instructions %s: not UTF-8 text: left out", abs);
		free(text);
		return 0;
	}
	cut = len > *budget;
	if (cut)
		log_warn("instructions %s: cut at 32 KiB", abs);
	if (cut && left && in->cut == NULL)
		in->cut = xstrdup(abs);		/* a client with notices is told (docs/contract.md §27) */
	buf_printf(out, "\n\n# Instructions from %s\n", shown);
	buf_append(out, text, keep);
	if (cut)
		buf_printf(out, "\n%s", AGENT_INSTRUCTIONS_CUT);
	sha256_hex(text, keep, hex);
	json_array_append_new(in->files, xjson_pack("{s:s, s:I, s:s}", "path", shown, "bytes", (json_int_t)keep,
	    "sha256", hex));
	*budget -= keep;
	free(text);
	return cut;
}

/* path (absolute) without empty, "." and ".." parts, into out (size bytes); -1 when it does not fit. */
static int
instr_normalize(const char *path, char *out, size_t size)
{
	size_t n = 0;
	const char *p = path;

	if (size < 2)
		return -1;
	while (*p) {
		const char *e;
		size_t len;
		while (*p == '/')
			p++;
		e = strchr(p, '/');
		len = e ? (size_t)(e - p) : strlen(p);
		if (len == 0 || (len == 1 && p[0] == '.')) {
			/* nothing */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;	/* the slash before it */
		} else {
			if (n + 1 + len + 1 > size)
				return -1;
			out[n++] = '/';
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return 0;
}

/* The instruction file of dir, AGENTS.md or else CLAUDE.md, into path (size bytes); 0 when none. */
static int
instr_file_of(const char *dir, char *path, size_t size)
{
	static const char *const names[] = { "AGENTS.md", "CLAUDE.md" };
	struct stat st;

	for (size_t i = 0; i < 2; i++) {
		snprintf(path, size, "%s/%s", dir, names[i]);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			return 1;
	}
	return 0;
}

/* dir shown relative to the workspace ws (both absolute, normalized): "" for ws itself, "../.."
 * for ancestors, "a/b" below; into out. */
static void
instr_rel(const char *ws, const char *dir, char *out, size_t size)
{
	size_t wn = strlen(ws), dn = strlen(dir);

	if (strcmp(ws, dir) == 0) {
		snprintf(out, size, "%s", "");
	} else if (dn > wn && strncmp(dir, ws, wn) == 0 && (dir[wn] == '/' || wn == 1)) {
		snprintf(out, size, "%s", dir + wn + (wn > 1));
	} else {
		/* an ancestor: one .. per component of ws below dir */
		size_t n = 0, up = 0;
		for (const char *p = ws + (dn == 1 ? 0 : dn); *p; p++)
			up += *p == '/';
		out[0] = '\0';
		for (size_t i = 0; i < up && n + 4 < size; i++)
			n += (size_t)snprintf(out + n, size - n, "%s..", i ? "/" : "");
	}
}

void
agent_instructions_read(struct agent_instructions *in, const char *workspace, const char *home,
    const char *config_home)
{
	struct buf out;
	size_t left = AGENT_INSTRUCTIONS_MAX;
	char path[4200], shown[8400], rel[4096], ws[4096];
	int done = 0;

	memset(in, 0, sizeof(*in));
	in->files = json_array();
	in->dirs = json_object();
	/* one spelling of the workspace (a trailing slash, a //, a . or .. in what the client sent) */
	if (instr_normalize(workspace, ws, sizeof(ws)) < 0)
		snprintf(ws, sizeof(ws), "%s", "/");
	workspace = ws;
	in->workspace = xstrdup(ws);
	buf_init(&out);
	/* the user's file */
	if (config_home && *config_home)
		snprintf(path, sizeof(path), "%s/acp-agent/AGENTS.md", config_home);
	else if (home && *home)
		snprintf(path, sizeof(path), "%s/.config/acp-agent/AGENTS.md", home);
	else
		path[0] = '\0';
	if (path[0]) {
		size_t hn = home ? strlen(home) : 0;
		if (hn > 1 && strncmp(path, home, hn) == 0 && path[hn] == '/')
			snprintf(shown, sizeof(shown), "~%s", path + hn);
		else
			snprintf(shown, sizeof(shown), "%s", path);
		done = instr_add(in, path, NULL, shown, &left, &out);
	}
	/* the repository root: the nearest ancestor holding .git; none, the workspace itself */
	char root[4096];
	struct stat st;
	snprintf(root, sizeof(root), "%s", workspace);
	for (;;) {
		snprintf(path, sizeof(path), "%s/.git", root);
		if (lstat(path, &st) == 0)
			break;
		char *slash = strrchr(root, '/');
		if (slash == NULL || slash == root) {
			snprintf(root, sizeof(root), "%s", workspace);	/* no repository */
			break;
		}
		*slash = '\0';
	}
	/* from the root down to the workspace, a directory at a time; each file must really be in
	 * the repository (a link out of it is left out) */
	char *confine = realpath(root, NULL);
	size_t rn = strlen(root);
	for (const char *p = workspace + rn; !done;) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%.*s", (int)(p - workspace), workspace);
		if (instr_file_of(dir[0] ? dir : "/", path, sizeof(path))) {
			instr_rel(workspace, dir[0] ? dir : "/", rel, sizeof(rel));
			snprintf(shown, sizeof(shown), "%s%s%s", rel, rel[0] ? "/" : "", strrchr(path, '/') + 1);
			done = instr_add(in, path, confine ? confine : root, shown, &left, &out);
		}
		if (*p == '\0')
			break;
		p = strchr(p + 1, '/');
		if (p == NULL)
			p = workspace + strlen(workspace);
	}
	free(confine);
	in->block = out.len ? buf_steal(&out) : NULL;
	buf_free(&out);
}

char *
agent_instructions_nested(struct agent_instructions *in, const char *path)
{
	char spelled[8200], abs[4096], found[4096], rel[4096];
	struct buf out;
	size_t wn = strlen(in->workspace);

	if (path == NULL)
		return NULL;
	if (path[0] == '/')
		snprintf(spelled, sizeof(spelled), "%s", path);
	else
		snprintf(spelled, sizeof(spelled), "%s/%s", in->workspace, path);
	/* below the workspace only (the tools confined the call; this is about its text) */
	if (instr_normalize(spelled, abs, sizeof(abs)) < 0 || strncmp(abs, in->workspace, wn) != 0 ||
	    (abs[wn] != '/' && wn > 1))
		return NULL;
	char *confine = realpath(in->workspace, NULL);
	size_t left = AGENT_INSTRUCTIONS_MAX;	/* one call's files together, as the prompt's */
	int full = 0;
	buf_init(&out);
	/* each directory strictly between the workspace and the file, outer first; once the budget is
	 * spent, the deeper ones are left for a later call (not looked at yet) */
	for (char *p = strchr(abs + wn + 1, '/'); p && !full && left > 0; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (!json_object_get(in->dirs, abs)) {
			json_object_set_new(in->dirs, abs, json_true());
			if (instr_file_of(abs, found, sizeof(found))) {
				instr_rel(in->workspace, abs, rel, sizeof(rel));
				char shown[4200];
				snprintf(shown, sizeof(shown), "%s/%s", rel, strrchr(found, '/') + 1);
				full = instr_add(in, found, confine ? confine : in->workspace, shown, &left, &out);
			}
		}
		*p = '/';
	}
	free(confine);
	if (out.len)
		return buf_steal(&out);
	buf_free(&out);
	return NULL;
}

void
agent_instructions_seed(struct agent_instructions *in, const json_t *logged)
{
	size_t i, j;
	const json_t *f, *g;

	json_array_foreach((json_t *)logged, i, f) {
		const char *path = json_string_value(json_object_get(f, "path"));
		const char *slash = path ? strrchr(path, '/') : NULL;
		int prompt = 0;
		if (path == NULL || slash == NULL || path[0] == '/' || path[0] == '~' || strncmp(path, "../", 3) == 0)
			continue;
		json_array_foreach(in->files, j, g) prompt |= json_equal(json_object_get(g, "path"), json_object_get(f, "path"));
		if (prompt)
			continue;
		/* a nested file given before: its directory was looked at, and it stays in the set */
		char *dir = xasprintf("%s/%.*s", in->workspace, (int)(slash - path), path);
		char norm[4096];
		if (instr_normalize(dir, norm, sizeof(norm)) == 0 && !json_object_get(in->dirs, norm)) {
			json_object_set_new(in->dirs, norm, json_true());
			json_array_append_new(in->files, json_deep_copy(f));
		}
		free(dir);
	}
}

void
agent_instructions_free(struct agent_instructions *in)
{
	free(in->block);
	json_decref(in->files);
	json_decref(in->dirs);
	free(in->workspace);
	free(in->cut);
	memset(in, 0, sizeof(*in));
}
