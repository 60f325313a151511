/*
 * The ACP server's process: initialize, authenticate and the wait_idle waiters, and the loop
 * plumbing (the sync pass, settling, shutdown, signals, the write queue's marks, set-up and
 * teardown). Lines go to acp/dispatch.c; what waits is acp/gate.c's.
 * Order contract: a session/new response precedes the session's updates; all updates of a turn
 * precede its session/prompt response, which leaves only after the durability checkpoint (the
 * after-sync queue).
 */
#include "acp/server.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acp/internal.h"
#include "acp/rpc.h"
#include "acp/updates.h"
#include "base/log.h"
#include "base/version.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "tools/cap.h"
#include "tools/toolsets.h"

struct acp_waiter {
	ev_timer timer;		/* first member */
	struct acp_server *srv;
	json_t *id;
	struct acp_waiter *next;
};


/* ---- the client, as the runtime sees it (agent/client.h) ---- */

/* A request to the client about a session whose replay is out waits with what that replay holds
 * (a child's ask must not pass the child's announcement); a cancel of one still held withdraws it
 * there instead. Steals msg. */
static void
acp_out_send(void *arg, json_t *msg)
{
	struct acp_server *srv = arg;
	const json_t *params = json_object_get(msg, "params");
	const char *method = json_string_value(json_object_get(msg, "method"));
	const char *sid = json_string_value(json_object_get(params, "sessionId"));
	struct acp_session *as;

	if (json_object_get(msg, "id") && sid && (as = acp_held_by(srv, sid)) != NULL) {
		acp_hold(as, msg);
		return;
	}
	if (method && strcmp(method, "$/cancel_request") == 0 &&
	    acp_hold_withdraw(srv, json_object_get(params, "requestId"))) {
		json_decref(msg);
		return;
	}
	acp_send(srv, msg);
}

static long
acp_client_request(void *self, const char *sid, const char *method, json_t *params, long timeout_ms,
    agent_client_done *done, void *arg, struct err *e)
{
	struct acp_server *srv = self;
	struct acp_session *as = map_get(&srv->sessions, sid);

	if (as == NULL || as->agent == NULL || srv->shutting_down) {
		json_decref(params);
		err_set(e, ERR_CLIENT_ERROR, "the editor's session %s is not open", sid);
		return 0;
	}
	return acp_outbound_request(&srv->out, method, params, timeout_ms, done, arg);
}

static void
acp_client_cancel(void *self, long id)
{
	struct acp_server *srv = self;

	acp_child_ask_cancel(srv, id);
	acp_outbound_cancel(&srv->out, id);
}

static int
acp_client_can(void *self, const char *capability)
{
	struct acp_server *srv = self;

	if (strcmp(capability, "fs.readTextFile") == 0)
		return srv->client_fs_read;
	if (strcmp(capability, "fs.writeTextFile") == 0)
		return srv->client_fs_write;
	return 0;
}

/* ---- agent hooks ---- */


/* ---- methods ---- */

json_t *
acp_m_initialize(struct acp_server *srv, struct acp_msg *m)
{
	const json_t *caps = json_object_get(m->params, "clientCapabilities");
	const json_t *fs = json_object_get(caps, "fs");

	srv->initialized = 1;
	/* Kept per connection: a second initialize states them anew. */
	srv->client_fs_read = json_is_true(json_object_get(fs, "readTextFile"));
	srv->client_fs_write = json_is_true(json_object_get(fs, "writeTextFile"));
	/* Any object opts in (ACP v1: session.compaction: {}); absent or null does not. */
	srv->client_compaction = json_is_object(json_object_get(json_object_get(caps, "session"),
	    "compaction"));
	srv->client_notices = json_is_object(json_object_get(json_object_get(caps, "session"), "notices"));
	/* plan operations (docs/contract.md §26): {} opts in; absent or null keeps the legacy plan */
	srv->client_plan = json_is_object(json_object_get(caps, "plan"));
	srv->live.plan = srv->client_plan;
	if (srv->client_subagents != json_is_object(json_object_get(caps, "subagents")))
		acp_children_reset(srv);	/* observers and all: the new client is told afresh, or not at all */
	srv->client_subagents = json_is_object(json_object_get(caps, "subagents"));
	srv->rt.watch = srv->client_subagents ? &srv->watch : NULL;
	srv->live.subagents = srv->client_subagents;
	return acp_result_new(m->id, xjson_pack(
	    "{s:i, s:{s:b, s:{s:b, s:b, s:b}, s:{s:b, s:b}, s:{s:{}, s:{}, s:{}, s:{}, s:{}}}, s:[], s:{s:s, s:s, s:s}}",
	    "protocolVersion", 1, "agentCapabilities", "loadSession", 1, "promptCapabilities", "image", 1,
	    "audio", 0, "embeddedContext", 1, "mcpCapabilities", "http", 1, "sse", 0,
	    "sessionCapabilities", "list", "resume", "close", "delete", "additionalDirectories", "authMethods",
	    "agentInfo", "name",
	    "acp-agent", "title", "acp-agent", "version", ACP_AGENT_VERSION));
}

json_t *
acp_m_authenticate(struct acp_server *srv, struct acp_msg *m)
{
	(void)srv;
	return acp_result_new(m->id, json_object());
}

static void
acp_waiter_done(struct acp_server *srv, struct acp_waiter *w, int idle)
{
	struct acp_waiter **pp;

	for (pp = &srv->waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	ev_timer_stop(srv->loop, &w->timer);
	acp_send(srv, acp_result_new(w->id, xjson_pack("{s:b}", "idle", idle)));
	json_decref(w->id);
	free(w);
}

static void
acp_waiter_timeout(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct acp_waiter *w = (struct acp_waiter *)t;

	(void)loop;
	(void)revents;
	acp_waiter_done(w->srv, w, 0);
}

json_t *
acp_m_wait_idle(struct acp_server *srv, struct acp_msg *m)
{
	json_t *jt = json_object_get(m->params, "timeoutMs");
	struct acp_waiter *w;
	double timeout = 10.0;

	if (jt && (!json_is_integer(jt) || json_integer_value(jt) < 0))
		return acp_invalid_params(m->id, "timeoutMs: expected a non-negative integer");
	if (jt)
		timeout = (double)json_integer_value(jt) / 1000.0;
	w = xcalloc(1, sizeof(*w));
	w->srv = srv;
	w->id = json_incref(m->id ? m->id : json_null());
	ev_timer_init(&w->timer, acp_waiter_timeout, timeout, 0.);
	ev_timer_start(srv->loop, &w->timer);
	w->next = srv->waiters;
	srv->waiters = w;
	return NULL;		/* answered by the settle hook once idle */
}

void
acp_server_line(void *arg, const char *line, size_t len)
{
	struct acp_server *srv = arg;

	if (srv->shutting_down)
		return;
	if (srv->rec)
		record_client_line(srv->rec, line, len);
	acp_dispatch(srv, line, len);
}

/* A line from stdin: while it is dispatched, a handler may take the reader's buffer with it
 * (acp_take_line). */
static void
acp_reader_line(void *arg, const char *line, size_t len)
{
	struct acp_server *srv = arg;

	srv->reader_line = line;
	acp_server_line(arg, line, len);
	srv->reader_line = NULL;
}

char *
acp_take_line(struct acp_server *srv, const struct acp_msg *m)
{
	if (m->line == NULL || m->line != srv->reader_line)
		return NULL;	/* a copy (parked, held), or not from stdin */
	srv->reader_line = NULL;
	return frame_take(&srv->reader.frame);
}

static void
acp_overlong(void *arg)
{
	struct acp_server *srv = arg;

	acp_send(srv, acp_error_new(NULL, ERR_LINE_TOO_LONG,
	    "the line is longer than 64 MiB and was discarded", NULL));
}

/* ---- loop plumbing ---- */

static void
acp_sync_pass(void *arg)
{
	struct acp_server *srv = arg;

	sess_store_sync_due(&srv->store);
}

static void
acp_settle(void *arg)
{
	struct acp_server *srv = arg;

	if (srv->waiters && agent_rt_idle(&srv->rt) && srv->replays == NULL && srv->loads == NULL)
		while (srv->waiters)
			acp_waiter_done(srv, srv->waiters, 1);
	/* Exit waits for what outlives its agents (MCP servers shutting down, at most ~4 s). */
	if (srv->shutting_down == 2 && wq_pending(&srv->wq) == 0 && !agent_rt_lingering(&srv->rt))
		ev_break(srv->loop, EVBREAK_ALL);
}

static void
acp_shutdown_task(void *arg)
{
	struct acp_server *srv = arg;

	agent_rt_shutdown(&srv->rt);
	for (size_t i = 0; i < srv->nall; i++) {
		struct acp_session *as = srv->all[i];
		/* A prompt whose turn never began (it waited behind a turn the runtime started, a
		 * notice's) had no turn to end: it is answered cancelled, after what the turns ended with. */
		if (as->prompt_id && as->agent) {
			acp_prompt_answer_after_sync(as, acp_result_new(as->prompt_id, xjson_pack("{s:s}", "stopReason",
			    "cancelled")));
			json_decref(as->prompt_id);
			as->prompt_id = NULL;
		}
		as->agent = NULL;
	}
	srv->shutting_down = 2;
}

void
acp_server_shutdown(struct acp_server *srv)
{
	if (srv->shutting_down)
		return;
	srv->shutting_down = 1;
	reader_pause(&srv->reader);
	/* A replay would keep the run queue busy: it stops now; waiting prompts are cancelled. */
	acp_replays_stop(srv, NULL);
	acp_loads_stop(srv);	/* a load's worker stops at its next chunk; the load is not answered */
	/* every parked prompt is answered: one behind a cancelled turn after that turn's answer */
	for (size_t i = 0; i < srv->nall; i++)
		acp_gate_drop_prompt(srv->all[i], ACP_WAIT_NONE);
	runq_push(&srv->runq, acp_shutdown_task, srv);
}

static void
acp_on_eof(void *arg)
{
	struct acp_server *srv = arg;

	if (srv->rec)
		record_eof(srv->rec, acp_gate_empty(srv) && agent_rt_idle(&srv->rt));
	if (!acp_gate_empty(srv)) {
		srv->gate.eof_pending = 1;	/* the parked requests are answered first */
		return;
	}
	acp_server_shutdown(srv);
}

static void
acp_on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct acp_server *srv = w->data;

	(void)loop;
	(void)revents;
	log_info("acp: signal %d: shutting down", w->signum);
	acp_server_shutdown(srv);
}

/* model/'s tap to the recorder. */
static void
acp_record_reply(void *arg, const struct model_tap_reply *rep)
{
	struct record_reply rr = { rep->ref->key, rep->ref->ordinal, rep->ref->position, rep->summary,
		rep->agent_id, rep->parent_id, rep->reply };

	record_reply(arg, &rr);
}

/* --record DIR (docs/contract.md §21): the recorder sees the model's replies, the client's lines and our
 * messages (acp_server_line, acp_send), and the files the tools touch (rt.touch). */
static int
acp_record_start(struct acp_server *srv, const struct acp_options *opts, struct err *e)
{
	struct record_config rc = { opts->record_dir, srv->env.state_dir, opts->openai.api_key,
		model_id(srv->model), opts->record_args, opts->record_env };

	if ((srv->rec = record_open(&rc, e)) == NULL)
		return -1;
	srv->model = model_tap_new(srv->model, acp_record_reply, srv->rec);
	return 0;
}

static void
acp_on_high(void *arg)
{
	reader_pause(&((struct acp_server *)arg)->reader);
}

void
acp_on_low(void *arg)
{
	struct acp_server *srv = arg;

	if (!srv->shutting_down && !srv->gate.paused)
		reader_resume(&srv->reader);
	acp_replays_resume(srv);
}

static void
acp_on_write_error(void *arg)
{
	acp_server_shutdown(arg);
}

int
acp_server_init(struct acp_server *srv, struct ev_loop *loop, int in_fd, int proto_fd,
    const struct acp_options *opts, struct err *e)
{
	memset(srv, 0, sizeof(*srv));
	srv->loop = loop;
	srv->opts = *opts;
	map_init(&srv->sessions);
	map_init(&srv->noticed);
	acp_gate_init(srv);
	srv->load_offload_min = opts->deterministic ? (off_t)INT64_MAX : ACP_LOAD_OFFLOAD_MIN;
	runq_init(&srv->runq, loop);
	runq_set_sync(&srv->runq, acp_sync_pass, srv);
	runq_set_settle(&srv->runq, acp_settle, srv);
	if (sess_env_init(&srv->env, opts->state_dir, opts->sync, opts->deterministic, opts->faults, e) < 0)
		return -1;
	sess_store_init(&srv->store, &srv->env);
	sess_corpus_init(&srv->corpus, &srv->env);
	if (sess_corpus_start(&srv->corpus, loop, &srv->runq, acp_gate_corpus_ready, srv, e) < 0)
		return -1;
	if (strcmp(opts->model, "replay") == 0) {
		srv->model = model_replay_new(&srv->runq, opts->recording, e);
		if (srv->model == NULL)
			return -1;
	} else if (strcmp(opts->model, "builtin") == 0) {
		srv->model = model_builtin_new(&srv->runq);
	} else {
		srv->model = model_openai_new(&srv->runq, loop, &opts->openai, e);
		if (srv->model == NULL)
			return -1;
	}
	if (opts->record_dir && acp_record_start(srv, opts, e) < 0)
		return -1;
	srv->profile = toolsets_profile(opts->profile, opts->workspace);
	if (srv->profile == NULL)
		return err_set(e, ERR_USAGE, "\"%s\" is not default or team", opts->profile);
	toolbox_init(&srv->tools);
	acp_replay_init(&srv->live, NULL, NULL, NULL, &srv->tools);
	acp_children_init(srv);
	buf_init(&srv->prefix);
	toolsets_build(&srv->tools, srv->profile);
	agent_rt_init(&srv->rt, &srv->runq, &srv->env, &srv->store, &srv->corpus, srv->model);
	srv->rt.max_steps = opts->max_steps;
	if (opts->context_window > 0)
		srv->rt.context_window = opts->context_window;
	if (opts->compact_at > 0)
		srv->rt.compact_at = opts->compact_at;
	srv->rt.cap_text = tools_cap_text;
	srv->rt.max_depth = opts->max_depth;
	srv->rt.max_active = opts->max_active;
	srv->rt.loop = loop;
	/* A child's cold resume reads off the loop from the same size as a load (never deterministic:
	 * a scenario's output must not depend on a thread). */
	srv->rt.resume_offload_min = opts->deterministic ? 0 : (long long)ACP_LOAD_OFFLOAD_MIN;
	agent_rt_set_exts(&srv->rt, srv->profile->exts);
	srv->rt.start_mode = opts->start_mode;
	srv->rt.child_approvals_never = opts->child_approvals_never;
	/* the user's instructions file (docs/contract.md §25): the process's environment, read once */
	srv->rt.home = getenv("HOME");
	srv->rt.config_home = getenv("XDG_CONFIG_HOME");
	srv->tool_names = toolsets_names();
	agent_rt_sweep_worktrees(&srv->rt);	/* what a crash left of isolated children's worktrees */
	agent_rt_finish_deletes(&srv->rt);	/* and of deletions */
	srv->rt.tool_names = (const char *const *)srv->tool_names;
	/* a subagent call's model is checked against ACP_AGENT_MODELS, not under replay or builtin,
	 * whose model answers any name (docs/contract.md §23.2) */
	if (strcmp(model_id(srv->model), "replay") != 0 && strcmp(model_id(srv->model), "builtin") != 0)
		srv->rt.models = opts->models;
	if (srv->rec) {
		srv->rt.rank_this_run = 1;
		srv->rt.touch = record_touch;
		srv->rt.touch_arg = srv->rec;
	}
	acp_outbound_init(&srv->out, loop, &srv->runq, acp_out_send, srv);
	srv->client.request = acp_client_request;
	srv->client.cancel = acp_client_cancel;
	srv->client.can = acp_client_can;
	srv->client.ask = acp_ask;
	srv->client.call_status = acp_ask_call_status;
	srv->client.notice = acp_client_notice;
	srv->client.self = srv;
	srv->rt.client = &srv->client;
	wq_init(&srv->wq, loop, proto_fd);
	wq_pipe_room(&srv->wq, ACP_PIPE_ROOM);
	srv->wq.on_high = acp_on_high;
	srv->wq.on_low = acp_on_low;
	srv->wq.on_error = acp_on_write_error;
	srv->wq.arg = srv;
	reader_init(&srv->reader, loop, in_fd, acp_reader_line, acp_overlong, acp_on_eof, srv);
	ev_signal_init(&srv->sigint, acp_on_signal, SIGINT);
	ev_signal_init(&srv->sigterm, acp_on_signal, SIGTERM);
	srv->sigint.data = srv->sigterm.data = srv;
	ev_signal_start(loop, &srv->sigint);
	ev_signal_start(loop, &srv->sigterm);
	ev_unref(loop);
	ev_unref(loop);
	return 0;
}

void
acp_server_free(struct acp_server *srv)
{
	if (srv->loop) {
		ev_ref(srv->loop);
		ev_ref(srv->loop);
		ev_signal_stop(srv->loop, &srv->sigint);
		ev_signal_stop(srv->loop, &srv->sigterm);
	}
	acp_loads_stop(srv);
	acp_stores_free(srv);
	while (srv->waiters)
		acp_waiter_done(srv, srv->waiters, 0);
	acp_gate_free(srv);
	acp_replays_free(srv);
	agent_rt_shutdown(&srv->rt);
	if (srv->model)
		srv->model->ops->report(srv->model);
	for (size_t i = 0; i < srv->nall; i++)
		acp_session_free(srv->all[i]);
	free(srv->all);
	map_free(&srv->sessions);
	map_free(&srv->noticed);
	runq_stop(&srv->runq);
	acp_outbound_free(&srv->out);	/* after the queue: a queued delivery still points at its entry */
	agent_rt_free(&srv->rt);
	model_free(srv->model);
	record_free(srv->rec);	/* after the model: its tap writes here */
	acp_replay_free(&srv->live);
	acp_children_free(srv);
	buf_free(&srv->prefix);
	toolbox_free(&srv->tools);
	toolsets_names_free(srv->tool_names);
	sess_store_free(&srv->store);
	sess_corpus_free(&srv->corpus);
	sess_env_free(&srv->env);
	reader_free(&srv->reader);
	wq_free(&srv->wq);
}
