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

/* Reads at most max + 1 bytes of path, a regular file: 0 with *text (owned) and *len; 1 when it
 * is not there (or not a file); -1 when it cannot be used (warned). */
static int
instr_load(const char *path, size_t max, char **text, size_t *len)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	size_t n = 0;
	char *b;

	if (fd < 0)
		return 1;
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

/* The file at abs, shown as shown, added to in within budget (*left bytes; NULL: the nested
 * file's own 32 KiB): its block appended to out. Returns 1 when the budget ran out here. */
static int
instr_add(struct agent_instructions *in, const char *abs, const char *shown, size_t *left, struct buf *out)
{
	size_t own = AGENT_INSTRUCTIONS_MAX, *budget = left ? left : &own, len, keep;
	char *text, hex[2 * SHA256_LEN + 1];
	int cut;

	if (instr_load(abs, *budget, &text, &len) != 0)
		return 0;
	/* a cut through a sequence at the end of what was read is the cut's, not the file's fault */
	keep = len > *budget ? utf8_boundary(text, len, *budget) : len;
	if (memchr(text, '\0', keep) || !utf8_valid(text, keep)) {
		log_warn("instructions %s: not UTF-8 text: left out", abs);
		free(text);
		return 0;
	}
	cut = len > *budget;
	if (cut) {
		if (*budget == 0)
			keep = 0;
		log_warn("instructions %s: cut at 32 KiB", abs);
	}
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
	char path[4200], shown[8400], rel[4096];
	int done = 0;

	memset(in, 0, sizeof(*in));
	in->files = json_array();
	in->dirs = json_object();
	in->workspace = xstrdup(workspace);
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
		done = instr_add(in, path, shown, &left, &out);
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
	/* from the root down to the workspace, a directory at a time */
	size_t rn = strlen(root);
	for (const char *p = workspace + rn; !done;) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%.*s", (int)(p - workspace), workspace);
		if (instr_file_of(dir[0] ? dir : "/", path, sizeof(path))) {
			instr_rel(workspace, dir[0] ? dir : "/", rel, sizeof(rel));
			snprintf(shown, sizeof(shown), "%s%s%s", rel, rel[0] ? "/" : "", strrchr(path, '/') + 1);
			done = instr_add(in, path, shown, &left, &out);
		}
		if (*p == '\0')
			break;
		p = strchr(p + 1, '/');
		if (p == NULL)
			p = workspace + strlen(workspace);
	}
	in->block = out.len ? buf_steal(&out) : NULL;
	buf_free(&out);
}

char *
agent_instructions_nested(struct agent_instructions *in, const char *path)
{
	char abs[4096], found[4096], rel[4096];
	struct buf out;
	size_t wn = strlen(in->workspace);

	if (path == NULL)
		return NULL;
	if (path[0] == '/')
		snprintf(abs, sizeof(abs), "%s", path);
	else
		snprintf(abs, sizeof(abs), "%s/%s", in->workspace, path);
	/* below the workspace only, and never through a .. (the tools confine; this is the text) */
	if (strncmp(abs, in->workspace, wn) != 0 || abs[wn] != '/' || strstr(abs, "/../") || strstr(abs, "/./"))
		return NULL;
	buf_init(&out);
	/* each directory strictly between the workspace and the file, outer first */
	for (char *p = strchr(abs + wn + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (!json_object_get(in->dirs, abs)) {
			json_object_set_new(in->dirs, abs, json_true());
			if (instr_file_of(abs, found, sizeof(found))) {
				instr_rel(in->workspace, abs, rel, sizeof(rel));
				char shown[4200];
				snprintf(shown, sizeof(shown), "%s/%s", rel, strrchr(found, '/') + 1);
				instr_add(in, found, shown, NULL, &out);
			}
		}
		*p = '/';
	}
	if (out.len)
		return buf_steal(&out);
	buf_free(&out);
	return NULL;
}

void
agent_instructions_free(struct agent_instructions *in)
{
	free(in->block);
	json_decref(in->files);
	json_decref(in->dirs);
	free(in->workspace);
	memset(in, 0, sizeof(*in));
}
