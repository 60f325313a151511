/* The recorder's directory: the check, the atomic writer, open and free (docs/contract.md §21). */
#include "record/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/atomic.h"
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
	int rc = 0;

	record_mkdirs(path);
	if (atomic_write(path, data, len, (mode_t)mode, 0) < 0) {
		int saved = errno;
		if (!r->warned)
			log_warn("record: cannot write %s: %s (the recording is incomplete)", path, strerror(errno));
		r->warned = 1;
		errno = saved;
		rc = -1;
	}
	free(path);
	return rc;
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
