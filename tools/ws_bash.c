/*
 * bash, job_output and job_kill (docs/contract.md §16.1, §16.3, §16.5) over workspace/proc.c and
 * workspace/jobs.c: the workdir confined to the workspace, the output spilled under the root's
 * spill directory, progress to the client while a command runs (none under --deterministic),
 * the jobs of a root logged in its log (job/started, job/ended).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/utf8.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "tools/tools.h"
#include "tools/workspace.h"
#include "workspace/proc.h"

#define WS_BASH_TIMEOUT_MS 120000
#define WS_JOB_WAIT_MS 30000

/* The workdir, confined (the workspace root when none is given): owned, or NULL with e. */
static char *
ws_workdir(struct ws_state *st, const json_t *args, struct err *e)
{
	const char *w = json_string_value(json_object_get(args, "workdir"));
	struct ws_path where = { 0 };
	char *abs;

	if (w == NULL)
		return xstrdup(st->roots.root);
	if (ws_path_resolve(&st->roots, w, 1, &where, e) < 0)
		return NULL;
	abs = where.abs;
	where.abs = NULL;
	ws_path_free(&where);
	return abs;
}

/* ---- the root's jobs, logged in its log ---- */

static void
ws_job_started(void *arg, const char *job_id, const char *command)
{
	struct ws_state *st = arg;

	agent_append(st->root, "job/started", xjson_pack("{s:s, s:o}", "jobId", job_id, "command",
	    xjson_text(command, strlen(command))));
}

static void
ws_job_ended(void *arg, const char *job_id, int exit_code, const char *signal)
{
	struct ws_state *st = arg;
	json_t *data = xjson_pack("{s:s}", "jobId", job_id);

	json_object_set_new(data, "exit", signal ? json_null() : json_integer(exit_code));
	if (signal)
		json_object_set_new(data, "signal", json_string(signal));
	agent_append(st->root, "job/ended", data);
}

/* The jobs of a's tree, made on first use; NULL with e. */
static struct ws_jobs *
ws_jobs_of(struct agent *a, struct ws_state **stp, struct err *e)
{
	struct ws_state *st = ws_state(a, e);

	if (st == NULL || ws_state_spill(st, e) < 0)
		return NULL;
	if (agent_rt_of(a)->loop == NULL) {
		err_set(e, ERR_PROC_SPAWN_FAILED, "no event loop to run commands on");
		return NULL;
	}
	if (st->jobs == NULL) {
		struct ws_jobs_hooks h = { ws_job_started, ws_job_ended, st };
		st->jobs = ws_jobs_new(agent_rt_of(a)->loop, st->spill, &h);
	}
	*stp = st;
	return st->jobs;
}

/* ---- bash ---- */

static char *
bash_title(const struct tool *t, const json_t *args)
{
	const char *d = json_string_value(json_object_get(args, "description"));
	const char *c = json_string_value(json_object_get(args, "command"));
	const char *s = d && *d ? d : c ? c : "";
	size_t n = strcspn(s, "\n"), end = 0;
	int chars = 0;

	(void)t;
	/* At most 80 characters (docs/contract.md §16.5): stop at the lead byte of the 81st. */
	for (; end < n; end++)
		if (((unsigned char)s[end] & 0xC0) != 0x80 && chars++ == 80)
			break;
	return xstrndup(s, end);
}

/* The command as a fenced block, the first content of the call and its ask (docs/decisions.md). */
static json_t *
bash_content(const json_t *args)
{
	const json_t *c = json_object_get(args, "command");
	char *text;
	json_t *out;

	if (!json_is_string(c))
		return NULL;
	text = xasprintf("```sh\n%s\n```", json_string_value(c));
	out = xjson_pack("[{s:s, s:{s:s, s:o}}]", "type", "content", "content", "type", "text", "text",
	    xjson_text(text, strlen(text)));
	free(text);
	return out;
}

static int
bash_prepare(struct tool_inv *inv, const json_t *args, struct tool_plan *plan, struct tool_result *out)
{
	struct ws_state *st;
	struct err e;
	char *wd;

	err_clear(&e);
	if ((st = ws_state(inv->agent, &e)) == NULL || (wd = ws_workdir(st, args, &e)) == NULL) {
		tool_result_error(out, e.code, "%s", e.msg);
		return -1;
	}
	free(wd);
	plan->command = xstrdup(json_string_value(json_object_get(args, "command")));
	plan->content = bash_content(args);
	return 0;
}

static void
bash_progress(void *arg, struct ws_proc *p, const char *text, size_t len)
{
	struct tool_inv *inv = arg;
	struct agent *a = inv->agent;
	char *t = xstrndup(text, len);

	(void)p;
	if (agent_hooks(a)->tool_progress)
		agent_hooks(a)->tool_progress(agent_hooks(a)->arg, a, inv->call_id, NULL, t);
	free(t);
}

static void
bash_done(void *arg, struct ws_proc *p, const struct ws_proc_result *pr)
{
	struct tool_inv *inv = arg;
	struct tool_result r = { 0 };
	json_t *out = xjson_pack("{s:I, s:s, s:I}", "exitCode", (json_int_t)pr->exit_code, "spillPath",
	    pr->spill_path, "bytes", (json_int_t)pr->total_bytes);

	if (pr->signo)
		json_object_set_new(out, "signal", json_string("killed"));
	if (pr->err) {
		tool_result_error(&r, pr->err->code, "%s%s%s", pr->err->msg, pr->len ? "\n" : "", pr->text);
		json_decref(out);
	} else {
		tool_result_set(&r, pr->text, out);
	}
	inv->state = NULL;
	inv->cancel = NULL;
	ws_proc_free(p);
	tool_inv_complete(inv, &r);
}

static void
bash_cancel(struct tool_inv *inv)
{
	struct ws_proc *p = inv->state;

	inv->state = NULL;
	ws_proc_cancel(p);
	ws_proc_free(p);	/* SIGKILLs what is left of the group and reaps it */
}

static int
bash_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	struct agent *a = inv->agent;
	const json_t *tmo = json_object_get(args, "timeoutMs");
	struct ws_state *st = NULL;
	struct err e;
	char *wd;

	err_clear(&e);
	if (ws_jobs_of(a, &st, &e) == NULL || (wd = ws_workdir(st, args, &e)) == NULL) {
		tool_result_error(out, e.code, "%s", e.msg);
		return TOOL_DONE;
	}
	if (json_is_true(json_object_get(args, "run_in_background"))) {
		char id[WS_JOBS_ID_MAX], text[64];
		if (ws_jobs_start(st->jobs, json_string_value(json_object_get(args, "command")), wd, id, &e) < 0) {
			tool_result_error(out, e.code, "%s", e.msg);
		} else {
			snprintf(text, sizeof(text), "started job %s", id);
			tool_result_set(out, text, xjson_pack("{s:s}", "jobId", id));
		}
		free(wd);
		return TOOL_DONE;
	}
	struct ws_proc_opts o = { 0 };
	o.command = json_string_value(json_object_get(args, "command"));
	o.workdir = wd;
	o.spill_dir = st->spill;
	o.timeout_ms = tmo ? json_integer_value(tmo) : WS_BASH_TIMEOUT_MS;
	o.done = bash_done;
	o.progress = agent_rt_of(a)->env->clock.deterministic ? NULL : bash_progress;
	o.arg = inv;
	/* The spill file is named by the agent and the call (stable under --deterministic); a name
	 * taken already (the same call id after a restart) falls back to a random one. */
	char name[160];
	size_t k = (size_t)snprintf(name, sizeof(name), "bash-%.36s-", agent_id(a));
	for (const char *c = inv->call_id; *c && k + 1 < sizeof(name); c++)
		name[k++] = (isalnum((unsigned char)*c) || *c == '-' || *c == '_') ? *c : '_';
	name[k] = '\0';
	o.name = name;
	struct ws_proc *p = ws_proc_start(agent_rt_of(a)->loop, &o, &e);
	if (p == NULL && e.code == ERR_PROC_SPILL_EXISTS) {
		err_clear(&e);
		o.name = NULL;
		p = ws_proc_start(agent_rt_of(a)->loop, &o, &e);
	}
	free(wd);
	if (p == NULL) {
		tool_result_error(out, e.code, "%s", e.msg);
		return TOOL_DONE;
	}
	inv->state = p;
	inv->cancel = bash_cancel;
	return TOOL_PENDING;
}

const struct tool tool_bash = {
	.name = "bash",
	.description = "Run a command with bash -c in a fresh shell (use workdir, not cd). Non-zero exits end with "
	    "[exit code: N]. Long output keeps head and tail; the full output is saved to a reported file. Use "
	    "run_in_background for servers, then job_output/job_kill.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"command\",\"description\"],"
	    "\"properties\":{\"command\":{\"type\":\"string\",\"description\":\"The command.\"},"
	    "\"description\":{\"type\":\"string\",\"description\":\"5-10 words shown to the user, e.g. \\\"Show "
	    "working tree status\\\".\"},"
	    "\"timeoutMs\":{\"type\":\"integer\",\"minimum\":1000,\"maximum\":600000,\"description\":\"Default "
	    "120000, max 600000; killed on expiry.\"},"
	    "\"workdir\":{\"type\":\"string\",\"description\":\"Directory inside the workspace. Default: "
	    "workspace.\"},"
	    "\"run_in_background\":{\"type\":\"boolean\",\"description\":\"Return a job id at once; no "
	    "timeout.\"}}}",
	.kind = "execute",
	.title = bash_title,
	.run = bash_run,
	.cls = PERMIT_EXEC,
	.prepare = bash_prepare,
};

/* ---- job_output and job_kill ---- */

static const char *
job_arg(const json_t *args)
{
	const char *id = json_string_value(json_object_get(args, "job_id"));

	return id ? id : "";
}

static char *
job_output_title(const struct tool *t, const json_t *args)
{
	(void)t;
	return xasprintf("Job %s output", job_arg(args));
}

static void
job_output_answer(void *arg, const char *text, size_t len)
{
	struct tool_inv *inv = arg;
	struct tool_result r = { 0 };
	char *t = xstrndup(text, len);

	inv->state = NULL;
	inv->cancel = NULL;
	tool_result_set(&r, t, NULL);
	free(t);
	tool_inv_complete(inv, &r);
}

static void
job_output_cancel(struct tool_inv *inv)
{
	struct ws_jobs_wait *w = inv->state;

	inv->state = NULL;
	ws_jobs_wait_cancel(w);
}

static int
job_output_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	const json_t *tmo = json_object_get(args, "timeout_ms");
	struct ws_state *st = NULL;
	struct ws_jobs_wait *w = NULL;
	struct buf text;
	struct err e;
	int rc;

	err_clear(&e);
	if (ws_jobs_of(inv->agent, &st, &e) == NULL) {
		tool_result_error(out, e.code, "%s", e.msg);
		return TOOL_DONE;
	}
	buf_init(&text);
	rc = ws_jobs_output(st->jobs, json_string_value(json_object_get(args, "job_id")),
	    json_is_true(json_object_get(args, "wait")), tmo ? json_integer_value(tmo) : WS_JOB_WAIT_MS, &text,
	    job_output_answer, inv, &w, &e);
	if (rc == 1) {
		buf_free(&text);
		inv->state = w;
		inv->cancel = job_output_cancel;
		return TOOL_PENDING;
	}
	if (rc < 0)
		tool_result_error(out, e.code, "%s", e.msg);
	else
		tool_result_set(out, text.data ? text.data : "", NULL);
	buf_free(&text);
	return TOOL_DONE;
}

const struct tool tool_job_output = {
	.name = "job_output",
	.description = "Output of a background job since the last read, ending with [status: running|exited "
	    "N|killed].",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"job_id\"],\"properties\":{"
	    "\"job_id\":{\"type\":\"string\",\"description\":\"Id returned by bash.\"},"
	    "\"wait\":{\"type\":\"boolean\",\"description\":\"Block until the job ends or timeout_ms passes.\"},"
	    "\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1000,\"maximum\":600000,\"description\":\"Default "
	    "30000, max 600000.\"}}}",
	.kind = "execute",
	.concurrency_safe = 1,
	.title = job_output_title,
	.run = job_output_run,
	.cls = PERMIT_READ,
};

static char *
job_kill_title(const struct tool *t, const json_t *args)
{
	(void)t;
	return xasprintf("Kill job %s", job_arg(args));
}

static int
job_kill_prepare(struct tool_inv *inv, const json_t *args, struct tool_plan *plan, struct tool_result *out)
{
	(void)inv, (void)args, (void)out;
	plan->command = xstrdup("job_kill");	/* one rule for every kill: "exec:job_kill" */
	return 0;
}

static int
job_kill_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	struct ws_state *st = NULL;
	struct buf text;
	struct err e;
	const char *reason = json_string_value(json_object_get(args, "reason"));

	err_clear(&e);
	if (ws_jobs_of(inv->agent, &st, &e) == NULL) {
		tool_result_error(out, e.code, "%s", e.msg);
		return TOOL_DONE;
	}
	if (reason)
		log_info("agent %s: job_kill %s: %s", agent_id(inv->agent),
		    json_string_value(json_object_get(args, "job_id")), reason);
	buf_init(&text);
	if (ws_jobs_kill(st->jobs, json_string_value(json_object_get(args, "job_id")), &text, &e) < 0)
		tool_result_error(out, e.code, "%s", e.msg);
	else
		tool_result_set(out, text.data ? text.data : "", NULL);
	buf_free(&text);
	return TOOL_DONE;
}

const struct tool tool_job_kill = {
	.name = "job_kill",
	.description = "Stop a background job; returns at once.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"job_id\"],\"properties\":{"
	    "\"job_id\":{\"type\":\"string\",\"description\":\"Id returned by bash.\"},"
	    "\"reason\":{\"type\":\"string\",\"description\":\"Optional, logged.\"}}}",
	.kind = "execute",
	.title = job_kill_title,
	.run = job_kill_run,
	.cls = PERMIT_EXEC,
	.prepare = job_kill_prepare,
};
