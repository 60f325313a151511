/*
 * The recorder's directory, its writer and its templating, and recording.json (SPEC §21, §7.2):
 * each reply lands in its agent's script at its position, so a replay hands every agent the
 * reply it got, whatever the order the agents asked in.
 */
#include "record/internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

int
record_check_dir(const char *dir, struct err *e)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	int empty = 1;

	if (stat(dir, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return err_set(e, ERR_USAGE, "%s: %s", dir, strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return err_set(e, ERR_USAGE, "%s exists and is not a directory", dir);
	if ((d = opendir(dir)) == NULL)
		return err_set(e, ERR_USAGE, "%s: %s", dir, strerror(errno));
	while (empty && (de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			empty = 0;
	closedir(d);
	if (!empty)
		return err_set(e, ERR_USAGE, "%s is not empty (a recording goes into a new or empty "
		    "directory)", dir);
	return 0;
}

/* mkdir -p of path's parent directories below r->dir. */
static void
record_mkdirs(const char *path)
{
	char *p = xstrdup(path);

	for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	free(p);
}

int
record_write(struct record *r, const char *name, const char *data, size_t len, unsigned mode)
{
	char *path = xasprintf("%s/%s", r->dir, name);
	char *tmp = xasprintf("%s.tmp", path);
	int fd, rc = 0;
	size_t off = 0;

	record_mkdirs(path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	while (fd >= 0 && off < len) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		off += (size_t)n;
	}
	if (fd < 0 || off < len || close(fd) < 0 || rename(tmp, path) < 0) {
		int saved = errno;
		if (!r->warned)
			log_warn("record: cannot write %s: %s (the recording is incomplete)", path, strerror(errno));
		r->warned = 1;
		if (fd >= 0 && off < len)
			close(fd);
		unlink(tmp);
		errno = saved;
		rc = -1;
	}
	free(tmp);
	free(path);
	return rc;
}

static int
record_name_char(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("_-~", c));
}

/* A path p at s, ending where a path name cannot go on (a '.' ends it unless a name follows). */
static int
record_path_at(const char *s, size_t left, const char *p, size_t plen)
{
	if (plen == 0 || plen > left || memcmp(s, p, plen) != 0)
		return 0;
	if (plen == left)
		return 1;
	if (s[plen] == '.')
		return plen + 1 == left || !(record_name_char(s[plen + 1]) || s[plen + 1] == '.');
	return !record_name_char(s[plen]);
}

char *
record_templ_str(const struct record *r, const char *s, size_t len, size_t *out_len)
{
	const char *paths[2] = { r->cwd, r->state }, *names[2] = { "{{cwd}}", "{{state}}" };
	size_t slen = r->secret ? strlen(r->secret) : 0;
	struct buf b;

	/* The longer path first: one may hold the other. */
	if (paths[0] && paths[1] && strlen(paths[1]) > strlen(paths[0])) {
		paths[0] = r->state, paths[1] = r->cwd;
		names[0] = "{{state}}", names[1] = "{{cwd}}";
	}
	buf_init(&b);
	for (size_t i = 0; i < len;) {
		size_t left = len - i, k;
		if (slen && left >= slen && memcmp(s + i, r->secret, slen) == 0) {
			buf_puts(&b, RECORD_REDACTED);
			i += slen;
			continue;
		}
		for (k = 0; k < 2; k++)
			if (paths[k] && record_path_at(s + i, left, paths[k], strlen(paths[k])))
				break;
		if (k < 2) {
			buf_puts(&b, names[k]);
			i += strlen(paths[k]);
			continue;
		}
		size_t n = json_array_size(r->sessions);
		for (k = 0; k < n; k++) {
			const char *id = json_string_value(json_array_get(r->sessions, k));
			if (left >= strlen(id) && memcmp(s + i, id, strlen(id)) == 0)
				break;
		}
		if (k < n) {
			buf_printf(&b, "{{session:%zu}}", k + 1);
			i += strlen(json_string_value(json_array_get(r->sessions, k)));
			continue;
		}
		buf_append(&b, s + i, 1);
		i++;
	}
	*out_len = b.len;
	if (b.data == NULL)
		return xstrdup("");
	return buf_steal(&b);
}

json_t *
record_templ(const struct record *r, const json_t *v)
{
	if (json_is_string(v)) {
		size_t n;
		char *s = record_templ_str(r, json_string_value(v), json_string_length(v), &n);
		json_t *out = xjson_text(s, n);
		free(s);
		return out;
	}
	if (json_is_object(v)) {
		json_t *o = json_object();
		const char *k;
		json_t *x;
		json_object_foreach((json_t *)v, k, x) json_object_set_new(o, k, record_templ(r, x));
		return o;
	}
	if (json_is_array(v)) {
		json_t *a = json_array();
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x) json_array_append_new(a, record_templ(r, x));
		return a;
	}
	return json_incref((json_t *)v);
}

int
record_has_uuid(const char *s)
{
	static const int groups[] = { 8, 4, 4, 4, 12 };

	for (; *s; s++) {
		const char *p = s;
		size_t g;
		for (g = 0; g < 5; g++) {
			int n = 0;
			while (n < groups[g] && isxdigit((unsigned char)p[n]))
				n++;
			if (n < groups[g] || (g < 4 && p[n] != '-'))
				break;
			p += n + (g < 4);
		}
		if (g == 5)
			return 1;
	}
	return 0;
}

/* ---- recording.json ---- */

/* The text of recording.json: one reply per line. Returns owned. */
static char *
record_recording_text(const struct record *r)
{
	const json_t *scripts = json_object_get(r->recording, "scripts");
	const json_t *model = json_object_get(r->recording, "model");
	struct buf b;
	size_t i;
	json_t *sc;

	buf_init(&b);
	buf_puts(&b, "{\"version\": 1,");
	if (model) {
		char *m = json_dumps(model, JSON_ENCODE_ANY);
		buf_printf(&b, " \"model\": %s,", m);
		free(m);
	}
	buf_puts(&b, " \"scripts\": [");
	json_array_foreach(scripts, i, sc) {
		char *agent = json_dumps(json_object_get(sc, "agent"), JSON_ENCODE_ANY);
		buf_printf(&b, "%s\n {\"agent\": %s", i ? "," : "", agent);
		free(agent);
		static const char *const lists[] = { "replies", "compactions" };
		for (size_t l = 0; l < 2; l++) {
			const json_t *arr = json_object_get(sc, lists[l]);
			size_t k;
			json_t *reply;
			if (arr == NULL)
				continue;
			buf_printf(&b, ", \"%s\": [", lists[l]);
			json_array_foreach(arr, k, reply) {
				char *t = json_dumps(reply, 0);
				buf_printf(&b, "%s\n  %s", k ? "," : "", t);
				free(t);
			}
			buf_puts(&b, "]");
		}
		buf_puts(&b, "}");
	}
	buf_puts(&b, "]}\n");
	return buf_steal(&b);
}

static int
record_write_recording(struct record *r)
{
	char *text = record_recording_text(r);
	int rc = record_write(r, "recording.json", text, strlen(text), 0644);

	free(text);
	return rc;
}

/* The ordinal-th script of key, made (with empty ones before it) when missing; borrowed. */
static json_t *
record_script(struct record *r, const char *key, size_t ordinal)
{
	json_t *scripts = json_object_get(r->recording, "scripts"), *sc = NULL;
	size_t seen = 0, i;

	json_array_foreach(scripts, i, sc) {
		if (strcmp(json_string_value(json_object_get(sc, "agent")), key) == 0 && seen++ == ordinal)
			return sc;
	}
	for (; seen <= ordinal; seen++) {
		sc = xjson_pack("{s:s, s:[]}", "agent", key, "replies");
		json_array_append_new(scripts, sc);
	}
	return sc;
}

/* Replaces whole occurrences of ids in s by their placeholders (pairs: id, placeholder). */
static char *
record_ids(const char *s, const char *const *pairs, size_t npairs)
{
	struct buf b;

	buf_init(&b);
	while (*s) {
		size_t k;
		for (k = 0; k < npairs; k++)
			if (pairs[2 * k] && *pairs[2 * k] &&
			    strncmp(s, pairs[2 * k], strlen(pairs[2 * k])) == 0)
				break;
		if (k < npairs) {
			buf_puts(&b, pairs[2 * k + 1]);
			s += strlen(pairs[2 * k]);
		} else {
			buf_append(&b, s, 1);
			s++;
		}
	}
	return b.data ? buf_steal(&b) : xstrdup("");
}

/* A reply's templated strings: text and reasoning get the key blanked and {{cwd}}; tool
 * arguments also {{self}}, {{parent}} and {{agent:<label>}} for the children the replay
 * provider resolves (SPEC §7.2). */
static json_t *
record_reply_templ(struct record *r, const struct record_reply *rr)
{
	struct record paths = { 0 };
	json_t *out = json_object(), *calls;
	const char *k;
	json_t *v;
	size_t npairs = 2, i;
	const char **pairs = xcalloc(2 * (2 + json_object_size(r->children)), sizeof(*pairs));
	char **owned = xcalloc(json_object_size(r->children) + 1, sizeof(*owned));
	size_t nowned = 0;

	/* Only what the replay provider fills: the key and the cwd (no state, no session ids). */
	paths.secret = r->secret;
	paths.cwd = r->cwd;
	pairs[0] = rr->agent_id, pairs[1] = "{{self}}";
	pairs[2] = rr->parent_id, pairs[3] = "{{parent}}";
	json_object_foreach(r->children, k, v) {
		const char *parent = json_string_value(json_object_get(v, "parent"));
		if (rr->agent_id == NULL || parent == NULL || strcmp(parent, rr->agent_id) != 0)
			continue;
		owned[nowned] = xasprintf("{{agent:%s}}", json_string_value(json_object_get(v, "label")));
		pairs[2 * npairs] = k;
		pairs[2 * npairs + 1] = owned[nowned++];
		npairs++;
	}
	json_object_foreach((json_t *)rr->reply, k, v) {
		if (strcmp(k, "tool_calls") != 0) {
			json_object_set_new(out, k, record_templ(&paths, v));
			continue;
		}
		calls = json_array();
		json_t *c;
		json_array_foreach(v, i, c) {
			json_t *nc = json_copy(c), *args = record_templ(&paths, json_object_get(c, "arguments"));
			char *text = json_is_string(args) ? xstrdup(json_string_value(args)) : json_dumps(args, JSON_COMPACT);
			char *filled = record_ids(text, pairs, npairs);
			json_t *back = json_is_string(args) ? NULL : json_loads(filled, 0, NULL);
			json_object_set_new(nc, "arguments", back ? back : json_string(filled));
			json_array_append_new(calls, nc);
			json_decref(args);
			free(text);
			free(filled);
		}
		json_object_set_new(out, k, calls);
	}
	for (i = 0; i < nowned; i++)
		free(owned[i]);
	free(owned);
	free(pairs);
	return out;
}

void
record_reply(struct record *r, const struct record_reply *rr)
{
	json_t *sc = record_script(r, rr->key, rr->ordinal);
	const char *list = rr->summary ? "compactions" : "replies";
	json_t *arr = json_object_get(sc, list);

	/* A child is known by its first reply: its parent's later replies name it by label. */
	if (rr->parent_id && rr->agent_id && strncmp(rr->key, "label:", 6) == 0 &&
	    !json_object_get(r->children, rr->agent_id))
		json_object_set_new(r->children, rr->agent_id, xjson_pack("{s:s, s:s}", "parent", rr->parent_id,
		    "label", rr->key + 6));
	if (arr == NULL) {
		arr = json_array();
		json_object_set_new(sc, list, arr);
	}
	/* A position never seen (a request this process did not make) keeps the replay honest. */
	while (json_array_size(arr) < rr->position)
		json_array_append_new(arr, xjson_pack("{s:{s:s, s:s}}", "error", "message",
		    "this request was not recorded", "code", "REPLAY_EXHAUSTED"));
	json_t *reply = record_reply_templ(r, rr);
	if (json_array_size(arr) == rr->position)
		json_array_append_new(arr, reply);
	else
		json_array_set_new(arr, rr->position, reply);
	record_write_recording(r);
}

/* ---- the directory ---- */

struct record *
record_open(const struct record_config *cfg, struct err *e)
{
	struct record *r;

	if (record_check_dir(cfg->dir, e) < 0) {
		char msg[sizeof(e->msg)];
		snprintf(msg, sizeof(msg), "%s", e->msg);
		snprintf(e->msg, sizeof(e->msg), "--record %.400s", msg);
		return NULL;
	}
	if (mkdir(cfg->dir, 0755) < 0 && errno != EEXIST) {
		err_set(e, ERR_USAGE, "--record %s: cannot create the directory: %s", cfg->dir, strerror(errno));
		return NULL;
	}
	r = xcalloc(1, sizeof(*r));
	r->dir = xstrdup(cfg->dir);
	r->state = cfg->state_dir ? xstrdup(cfg->state_dir) : NULL;
	r->secret = cfg->secret && *cfg->secret ? xstrdup(cfg->secret) : NULL;
	r->sessions = json_array();
	r->recording = xjson_pack("{s:i, s:[]}", "version", 1, "scripts");
	if (cfg->model)
		json_object_set_new(r->recording, "model", json_string(cfg->model));
	r->children = json_object();
	r->args = cfg->args ? json_deep_copy(cfg->args) : json_array();
	r->env = cfg->env ? json_deep_copy(cfg->env) : json_object();
	r->steps = json_array();
	r->waiting = json_array();
	r->loose = json_array();
	r->ready = json_array();
	r->asks = json_array();
	r->touched = json_object();
	/* Both files exist from the start: a directory we cannot write is said now, not later. */
	r->warned = 1;		/* no warning: this is an error */
	if (record_write_scenario(r) < 0 || record_write_recording(r) < 0) {
		err_set(e, ERR_USAGE, "--record %s: cannot write into the directory: %s", cfg->dir,
		    strerror(errno));
		record_free(r);
		return NULL;
	}
	r->warned = 0;
	return r;
}

void
record_free(struct record *r)
{
	if (r == NULL)
		return;
	free(r->dir);
	free(r->state);
	free(r->secret);
	free(r->cwd);
	json_decref(r->sessions);
	json_decref(r->recording);
	json_decref(r->children);
	json_decref(r->args);
	json_decref(r->env);
	json_decref(r->steps);
	json_decref(r->waiting);
	json_decref(r->loose);
	json_decref(r->ready);
	json_decref(r->asks);
	json_decref(r->touched);
	free(r);
}
