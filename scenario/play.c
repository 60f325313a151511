/*
 * One scenario, start to end (docs/contract.md §10, §21): a fresh temp dir with the state directory (the
 * scenario's state/ copied in) and the cwd (its workspace/ copied in), the mock servers, the
 * agent and the steps, then the checks after exit and the snapshot.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/xmalloc.h"
#include "scenario/internal.h"

/*
 * Copies the scenario's sub into to, when it has one: workspace/ keeps its symlinks as links
 * (cp -a: confinement scenarios need them); state/ and home/ are copied as plain files, a link
 * refused (scenario/copy.c).
 */
static int
scenario_play_copy(struct scenario_run *r, const char *sub, const char *to, int links)
{
	char path[600], src[620];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", r->dir, sub);
	if (lstat(path, &st) < 0)
		return 0;
	if (!S_ISDIR(st.st_mode))
		return scenario_fail(r, "%s is not a directory", path);
	if (!links)
		return scenario_copy_tree(r, path, to);
	snprintf(src, sizeof(src), "%s/.", path);
	const char *cp[] = { "cp", "-a", src, to, NULL };
	if (scenario_spawn_wait(cp) != 0)
		return scenario_fail(r, "cannot copy %s to %s", path, to);
	return 0;
}

/* The temp dir, cwd and state dir; scenario.json read. -1 when the scenario cannot start. */
static int
scenario_play_setup(struct scenario_run *r)
{
	char path[600];
	json_error_t jerr;
	struct stat st;
	/* SCENARIO_TMPDIR: where the scenario's temp dir goes (a test that expects failures cleans it) */
	const char *tmpdir = getenv("SCENARIO_TMPDIR");

	if (!tmpdir || !*tmpdir)
		tmpdir = getenv("TMPDIR");
	snprintf(path, sizeof(path), "%s/scenario.json", r->dir);
	if (stat(path, &st) < 0)
		return scenario_fail(r, "%s: %s (a scenario directory holds scenario.json)", path, strerror(errno));
	r->script = json_load_file(path, JSON_ALLOW_NUL, &jerr);
	if (r->script == NULL)
		return scenario_fail(r, "%s:%d: %s", path, jerr.line, jerr.text);
	if (!json_is_object(r->script) || !json_is_array(json_object_get(r->script, "steps")))
		return scenario_fail(r, "%s: not an object with \"steps\": [...]", path);
	snprintf(path, sizeof(path), "%s/recording.json", r->dir);
	if (!json_is_string(json_object_get(r->script, "mock")) && stat(path, &st) < 0)
		return scenario_fail(r, "%s: %s (the replay model's recording)", path, strerror(errno));
	snprintf(r->tmp, sizeof(r->tmp), "%.120s/acp-scenario-%.60s-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp",
	    r->name);
	if (mkdtemp(r->tmp) == NULL) {
		int e = errno;
		r->tmp[0] = '\0';
		return scenario_fail(r, "mkdtemp: %s", strerror(e));
	}
	snprintf(r->state, sizeof(r->state), "%s/state", r->tmp);
	snprintf(r->cwd, sizeof(r->cwd), "%s/work", r->tmp);
	/* The agent's HOME and XDG_CONFIG_HOME: fresh, so nothing of the user's own reaches a
	 * replay; the scenario's home/ is copied in (docs/scenarios.md). */
	snprintf(r->home, sizeof(r->home), "%s/home", r->tmp);
	snprintf(r->config, sizeof(r->config), "%s/home/.config", r->tmp);
	mkdir(r->state, 0700);
	mkdir(r->cwd, 0700);
	mkdir(r->home, 0700);
	if (scenario_play_copy(r, "workspace", r->cwd, 1) < 0 || scenario_play_copy(r, "state", r->state, 0) < 0 ||
	    scenario_play_copy(r, "home", r->home, 0) < 0)
		return -1;
	if (mkdir(r->config, 0700) < 0 && errno != EEXIST)
		return scenario_fail(r, "cannot create %s: %s", r->config, strerror(errno));
	if (scenario_mask_load(r) < 0)
		return -1;
	if (r->opts->traces) {
		mkdir(r->opts->traces, 0755);
		snprintf(path, sizeof(path), "%s/%s.trace", r->opts->traces, r->name);
		if ((r->trace = fopen(path, "we")) == NULL)
			return scenario_fail(r, "%s: %s", path, strerror(errno));
	}
	return 0;
}

/* --pretty: the session logs' sizes, after the conversation. */
static void
scenario_play_pretty_end(struct scenario_run *r)
{
	char path[400];
	struct dirent *de;
	struct stat st;
	DIR *d;

	scenario_pretty_flush(r);
	snprintf(path, sizeof(path), "%s/sessions", r->state);
	if ((d = opendir(path)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char f[900];
		if (de->d_name[0] == '.')
			continue;
		snprintf(f, sizeof(f), "%s/%s", path, de->d_name);
		if (stat(f, &st) == 0)
			printf("session log %s: %lld bytes\n", de->d_name, (long long)st.st_size);
	}
	closedir(d);
}

/* The agent started, the steps played, the agent ended; -1 on the first failure. */
static int
scenario_play_steps(struct scenario_run *r)
{
	json_t *steps = json_object_get(r->script, "steps"), *step;
	size_t i;

	if (json_is_string(json_object_get(r->script, "mock")) &&
	    scenario_mock_start(r, json_string_value(json_object_get(r->script, "mock"))) < 0)
		return -1;
	if (scenario_mcp_load(r) < 0 || scenario_mcp_check_refs(r, steps) < 0 || scenario_proc_start(r) < 0)
		return -1;
	json_array_foreach(steps, i, step) {
		if (!json_is_object(step))
			return scenario_fail(r, "step %zu is not an object", i + 1);
		if (scenario_step_run(r, step) < 0 || r->failure[0])
			return -1;
	}
	return r->pid > 0 ? scenario_proc_stop(r, 0, 0) : 0;
}

/* The agent's first warning about its replay (a reply unused, a script exhausted), which says
 * why a run went another way than its recording; owned, or NULL. */
static char *
scenario_play_cause(struct scenario_run *r)
{
	char path[400], *err, *line, *end, *out = NULL;

	snprintf(path, sizeof(path), "%s/stderr.log", r->tmp);
	if ((err = scenario_read_file(path)) == NULL)
		return NULL;
	if ((line = strstr(err, "replay: ")) != NULL) {
		if ((end = strchr(line, '\n')) != NULL)
			*end = '\0';
		out = xstrdup(line);
	}
	free(err);
	return out;
}

/* After the agent: every registered answer used, and the mock's key in no output. */
static int
scenario_play_after(struct scenario_run *r)
{
	json_t *ans;
	size_t i;

	json_array_foreach(r->answers, i, ans) {
		if (!json_is_true(json_object_get(ans, "used"))) {
			json_t *m = json_object_get(ans, "match");
			char *match = m ? json_dumps(m, JSON_ENCODE_ANY) : NULL;
			char *cause = scenario_play_cause(r);
			scenario_fail(r, "the answer for %s (match %s) was never used: no such request came%s%s",
			    json_string_value(json_object_get(ans, "method")), match ? match : "(any)",
			    cause ? "; the agent said: " : "", cause ? cause : "");
			free(match);
			free(cause);
			return -1;
		}
	}
	if (r->mock_port > 0) {
		/* The key goes to the server and nowhere else. */
		char path[400];
		snprintf(path, sizeof(path), "%s/stderr.log", r->tmp);
		char *err = scenario_read_file(path);
		int leak = err && strstr(err, SCENARIO_MOCK_KEY);
		free(err);
		if (leak)
			return scenario_fail(r, "the API key appears in the agent's stderr");
	}
	return 0;
}

void
scenario_play(const struct scenario_opts *o, const char *dirarg, struct scenario_result *res)
{
	struct scenario_run r;
	char dir[PATH_MAX], parent[PATH_MAX], classname[256] = "scenario";
	long start = scenario_now_ms();
	const char *base;
	char *slash;
	int rc;

	memset(&r, 0, sizeof(r));
	r.opts = o;
	r.to_agent = r.from_agent = -1;
	r.lines = json_array();
	r.sessions = json_array();
	r.answers = json_array();
	r.env_extra = json_object();
	r.mcp = json_object();
	buf_init(&r.in);
	buf_init(&r.pretty_text);
	/* The name: the directory's last component, trailing slashes aside. */
	snprintf(dir, sizeof(dir), "%s", dirarg);
	while (strlen(dir) > 1 && dir[strlen(dir) - 1] == '/')
		dir[strlen(dir) - 1] = '\0';
	base = strrchr(dir, '/');
	snprintf(r.name, sizeof(r.name), "%.200s", base ? base + 1 : dir);
	if (realpath(dirarg, dir) == NULL) {
		rc = scenario_fail(&r, "%s: %s", dirarg, strerror(errno));
		goto done;
	}
	if (strlen(dir) > 400) {
		rc = scenario_fail(&r, "%.60s...: the path is over 400 bytes long", dir);
		goto done;
	}
	r.dir = dir;
	snprintf(parent, sizeof(parent), "%s", dir);
	if ((slash = strrchr(parent, '/')) != NULL)
		*slash = '\0';
	base = strrchr(parent, '/');
	snprintf(classname, sizeof(classname), "%.200s", base && base[1] ? base + 1 : "scenario");
	if (o->pretty)
		printf("== scenario %s ==\n", r.name);
	rc = scenario_play_setup(&r);
	if (rc == 0)
		rc = scenario_play_steps(&r);
	if (r.pid > 0) {
		kill(r.pid, SIGKILL);
		waitpid(r.pid, NULL, 0);
		r.pid = 0;
	}
	if (r.to_agent >= 0)
		close(r.to_agent);
	if (r.from_agent >= 0)
		close(r.from_agent);
	scenario_mock_stop(&r);
	if (scenario_mcp_check_gone(&r, rc == 0) < 0)
		rc = -1;
	if (rc == 0 && r.script)
		rc = scenario_play_after(&r);
	if (o->pretty && r.script)
		scenario_play_pretty_end(&r);
	if (r.trace)
		fclose(r.trace);
	if (rc == 0 && !o->pretty)
		rc = scenario_snapshot_check(&r);
	else if (rc < 0 && r.script && r.tmp[0] && !o->pretty)
		scenario_snapshot_partial(&r);
done:
	if (rc < 0 || r.failure[0])
		fprintf(stderr, "FAIL %s: %s\n", r.name, r.failure);
	else if (r.tmp[0])
		scenario_rmtree(r.tmp);
	res->name = xstrdup(r.name);
	res->classname = xstrdup(classname);
	res->ok = !(rc < 0 || r.failure[0]);
	res->secs = (double)(scenario_now_ms() - start) / 1000.0;
	res->failure = res->ok ? NULL : xstrdup(r.failure);
	res->diff = r.diff;
	buf_free(&r.in);
	buf_free(&r.pretty_text);
	json_decref(r.lines);
	json_decref(r.sessions);
	json_decref(r.answers);
	json_decref(r.env_extra);
	json_decref(r.mcp);
	json_decref(r.script);
	scenario_mask_free(&r);
}
