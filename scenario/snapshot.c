/*
 * Snapshots (docs/contract.md §10.1, §10.4): the agent's output and session logs, normalised, against the
 * scenario's expected/; on a mismatch the unified diff (diff -ru) is printed and kept for
 * JUnit; --update rewrites expected/ instead.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "scenario/canon.h"
#include "scenario/internal.h"

/* A session file, ordered roots first, then by createdAt, then by id. */
struct scenario_sfile {
	char *path;
	int root;
	long long created;
	char id[64];
};

static int
scenario_snapshot_sfile_cmp(const void *pa, const void *pb)
{
	const struct scenario_sfile *a = pa, *b = pb;

	if (a->root != b->root)
		return b->root - a->root;
	if (a->created != b->created)
		return a->created < b->created ? -1 : 1;
	return strcmp(a->id, b->id);
}

/*
 * With "mergeChunks": consecutive text chunks of one message become one line, so a
 * snapshot does not depend on how the network happened to cut a stream. Returns a new array.
 */
static json_t *
scenario_snapshot_merge_chunks(const json_t *lines)
{
	json_t *out = json_array(), *prev = NULL;
	size_t i;
	json_t *l;

	json_array_foreach(lines, i, l) {
		json_t *m = json_loads(json_string_value(l), 0, NULL);
		json_t *u = json_object_get(json_object_get(m, "params"), "update");
		const char *kind = json_string_value(json_object_get(u, "sessionUpdate"));
		int chunk = kind && (strcmp(kind, "agent_message_chunk") == 0 || strcmp(kind, "agent_thought_chunk") == 0);
		json_t *pu = json_object_get(json_object_get(prev, "params"), "update");
		if (chunk && prev && json_equal(json_object_get(pu, "sessionUpdate"), json_object_get(u, "sessionUpdate")) &&
		    json_equal(json_object_get(pu, "messageId"), json_object_get(u, "messageId"))) {
			json_t *pc = json_object_get(pu, "content");
			char *joined = xasprintf("%s%s", json_string_value(json_object_get(pc, "text")),
			    json_string_value(json_object_get(json_object_get(u, "content"), "text")));
			json_object_set_new(pc, "text", json_string(joined));
			free(joined);
			json_decref(m);
			continue;
		}
		if (prev) {
			char *t = json_dumps(prev, JSON_COMPACT);
			json_array_append_new(out, json_string(t));
			free(t);
			json_decref(prev);
			prev = NULL;
		}
		if (chunk) {
			prev = m;
			continue;
		}
		json_array_append(out, l);
		json_decref(m);
	}
	if (prev) {
		char *t = json_dumps(prev, JSON_COMPACT);
		json_array_append_new(out, json_string(t));
		free(t);
		json_decref(prev);
	}
	return out;
}

/* The file at path, normalised line by line; owned (NULL when it cannot be opened). */
static char *
scenario_snapshot_file(struct scenario_canon *c, const char *path)
{
	FILE *fp = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	struct buf b;

	if (fp == NULL)
		return NULL;
	buf_init(&b);
	while ((n = getline(&line, &cap, fp)) > 0) {
		int nl = line[n - 1] == '\n';
		if (nl)
			line[n - 1] = '\0';
		char *cl = scenario_canon_line(c, line);
		buf_puts(&b, cl);
		buf_puts(&b, nl ? "\n" : "\n<no newline at end of file>\n");
		free(cl);
	}
	free(line);
	fclose(fp);
	return buf_steal(&b);
}

/* The session files of the state directory, sorted; *n set. Owned (paths too). */
static struct scenario_sfile *
scenario_snapshot_sessions(struct scenario_run *r, size_t *n)
{
	struct scenario_sfile *files = NULL;
	char sdir[400];
	struct dirent *de;
	DIR *d;

	*n = 0;
	snprintf(sdir, sizeof(sdir), "%s/sessions", r->state);
	if ((d = opendir(sdir)) == NULL)
		return NULL;
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (len < 7 || strcmp(de->d_name + len - 6, ".jsonl") != 0 || de->d_name[0] == '.')
			continue;
		files = xrealloc(files, (*n + 1) * sizeof(*files));
		struct scenario_sfile *f = &files[(*n)++];
		memset(f, 0, sizeof(*f));
		f->path = xasprintf("%s/%s", sdir, de->d_name);
		snprintf(f->id, sizeof(f->id), "%.*s", (int)(len - 6), de->d_name);
		FILE *fp = fopen(f->path, "r");
		char *line = NULL;
		size_t cap = 0;
		if (fp && getline(&line, &cap, fp) > 0) {
			json_t *h = json_loads(line, 0, NULL);
			f->root = h && !json_object_get(h, "parentSession");
			f->created = json_integer_value(json_object_get(h, "createdAt"));
			json_decref(h);
		}
		free(line);
		if (fp)
			fclose(fp);
	}
	closedir(d);
	if (*n)
		qsort(files, *n, sizeof(*files), scenario_snapshot_sfile_cmp);
	return files;
}

/* The normalised actual output: {"stdout.jsonl": text, "sessions/<n>.jsonl": text,
 * "requests.jsonl": text (with a mock)}; a new object. */
static json_t *
scenario_snapshot_actual(struct scenario_run *r)
{
	const char *paths[] = { r->cwd, r->state, r->tmp, r->dir, r->opts->mcp_mock, NULL };
	const char *names[] = { "{{cwd}}", "{{state}}", "{{tmp}}", "{{scenario}}", "{{mock-mcp}}", NULL };
	struct scenario_canon *c = scenario_canon_new(paths, names);
	json_t *out = json_object(), *l, *lines;
	struct scenario_sfile *files;
	size_t i, nf;
	struct buf b;
	char path[400], *text;

	scenario_canon_masks(c, r->masks, r->nmasks);

	lines = json_is_true(json_object_get(r->script, "mergeChunks")) ? scenario_snapshot_merge_chunks(r->lines)
									   : json_incref(r->lines);
	buf_init(&b);
	json_array_foreach(lines, i, l) {
		char *n = scenario_canon_line(c, json_string_value(l));
		buf_puts(&b, n);
		buf_puts(&b, "\n");
		free(n);
	}
	json_decref(lines);
	json_object_set_new(out, "stdout.jsonl", json_string(b.data ? b.data : ""));
	buf_free(&b);
	/* The mock's log is normalised before the session files: the order in which ids are met
	 * decides their <ID-n> tokens. */
	files = scenario_snapshot_sessions(r, &nf);
	snprintf(path, sizeof(path), "%s/mock.log", r->tmp);
	if ((text = scenario_snapshot_file(c, path)) != NULL) {
		json_object_set_new(out, "requests.jsonl", json_string(text));
		free(text);
	}
	for (i = 0; i < nf; i++) {
		char key[64];
		text = scenario_snapshot_file(c, files[i].path);
		snprintf(key, sizeof(key), "sessions/%zu.jsonl", i + 1);
		json_object_set_new(out, key, json_string(text ? text : ""));
		free(text);
		free(files[i].path);
	}
	free(files);
	scenario_canon_free(c);
	return out;
}

/* `diff -ru exp act`: printed on stdout as it comes and kept in r->diff. */
static void
scenario_snapshot_diff(struct scenario_run *r, const char *exp, const char *act)
{
	struct buf b;
	char chunk[65536];
	ssize_t n;
	int fds[2];
	pid_t pid;

	fflush(stdout);
	if (pipe(fds) < 0) {
		scenario_fail(r, "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execlp("diff", "diff", "-ru", exp, act, (char *)NULL);
		fprintf(stderr, "scenario: cannot run diff: %s\n", strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	buf_init(&b);
	while (pid > 0 && ((n = read(fds[0], chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))) {
		if (n <= 0)
			continue;
		fwrite(chunk, 1, (size_t)n, stdout);
		buf_append(&b, chunk, (size_t)n);
	}
	close(fds[0]);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	fflush(stdout);
	free(r->diff);
	r->diff = b.data ? buf_steal(&b) : xstrdup("");
}

/* actual: borrowed. Writes it under <tmp>/actual (and expected/ with --update); 1 when it
 * matches expected/. */
static int
scenario_snapshot_write(struct scenario_run *r, json_t *actual, const char *exp, const char *act)
{
	char path[800];
	const char *k;
	json_t *v;
	int same = 1;

	mkdir(act, 0700);
	snprintf(path, sizeof(path), "%s/sessions", act);
	mkdir(path, 0700);
	if (r->opts->update) {
		scenario_rmtree(exp);
		mkdir(exp, 0755);
		snprintf(path, sizeof(path), "%s/sessions", exp);
		mkdir(path, 0755);
	}
	json_object_foreach(actual, k, v) {
		snprintf(path, sizeof(path), "%s/%s", act, k);
		scenario_write_file(path, json_string_value(v));
		snprintf(path, sizeof(path), "%s/%s", exp, k);
		if (r->opts->update) {
			if (scenario_write_file(path, json_string_value(v)) < 0)
				return scenario_fail(r, "cannot write %s: %s", path, strerror(errno));
			continue;
		}
		char *want = scenario_read_file(path);
		if (want == NULL || strcmp(want, json_string_value(v)) != 0)
			same = 0;
		free(want);
	}
	/* An expected session file that no longer exists is a difference too. */
	snprintf(path, sizeof(path), "%s/sessions", exp);
	DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		char key[300];
		if (de->d_name[0] == '.')
			continue;
		snprintf(key, sizeof(key), "sessions/%s", de->d_name);
		if (!json_object_get(actual, key))
			same = 0;
	}
	if (d)
		closedir(d);
	return same;
}

/* Compares (or with --update writes) the scenario's snapshot; -1 on a mismatch. */
int
scenario_snapshot_check(struct scenario_run *r)
{
	char exp[600], act[600];
	struct stat st;
	json_t *actual = scenario_snapshot_actual(r);
	int same;

	snprintf(exp, sizeof(exp), "%s/expected", r->dir);
	snprintf(act, sizeof(act), "%s/actual", r->tmp);
	if (!r->opts->update && stat(exp, &st) < 0) {
		json_decref(actual);
		return scenario_fail(r, "no %s yet: run with --update to write it, then review it", exp);
	}
	same = scenario_snapshot_write(r, actual, exp, act);
	json_decref(actual);
	if (same < 0)
		return -1;
	if (!same && !r->opts->update) {
		scenario_snapshot_diff(r, exp, act);
		return scenario_fail(r, "output differs from %s (actual kept in %s)", exp, act);
	}
	return 0;
}

int
scenario_mask_load(struct scenario_run *r)
{
	const json_t *masks = json_object_get(r->script, "mask");
	json_t *m;
	size_t i;

	if (masks == NULL)
		return 0;
	if (!json_is_array(masks))
		return scenario_fail(r, "scenario.json: \"mask\" must be a list of regular expressions (ERE)");
	r->masks = xcalloc(json_array_size(masks) + 1, sizeof(*r->masks));
	json_array_foreach(masks, i, m) {
		char why[200];
		int rc;
		if (!json_is_string(m) || json_string_length(m) == 0)
			return scenario_fail(r, "scenario.json: mask %zu: expected a non-empty string", i + 1);
		if ((rc = regcomp(&r->masks[i], json_string_value(m), REG_EXTENDED)) != 0) {
			regerror(rc, &r->masks[i], why, sizeof(why));
			return scenario_fail(r, "scenario.json: mask %zu (%s): %s", i + 1, json_string_value(m), why);
		}
		r->nmasks++;
	}
	return 0;
}

void
scenario_mask_free(struct scenario_run *r)
{
	for (size_t i = 0; i < r->nmasks; i++)
		regfree(&r->masks[i]);
	free(r->masks);
	r->masks = NULL;
	r->nmasks = 0;
}

void
scenario_snapshot_partial(struct scenario_run *r)
{
	char exp[600], act[600], why[sizeof(r->failure)];
	struct stat st;
	json_t *actual;
	int same;

	snprintf(exp, sizeof(exp), "%s/expected", r->dir);
	snprintf(act, sizeof(act), "%s/actual", r->tmp);
	if (r->opts->update || stat(exp, &st) < 0 || json_array_size(r->lines) == 0)
		return;
	actual = scenario_snapshot_actual(r);
	same = scenario_snapshot_write(r, actual, exp, act);
	json_decref(actual);
	snprintf(why, sizeof(why), "%s", r->failure);
	if (same == 0) {
		printf("%s: what happened up to the failure, against %s:\n", r->name, exp);
		scenario_snapshot_diff(r, exp, act);
	}
	/* r->failure is set; scenario_fail would keep it: say where things are ourselves. */
	snprintf(r->failure, sizeof(r->failure), "%.700s (actual kept in %.250s%s)", why, act,
	    same == 0 ? "; the diff above shows where it went another way" : "");
}
