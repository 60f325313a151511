/*
 * The ACP server: the method table and line dispatch (JSON-RPC classification in acp/rpc.c), the
 * wait_idle waiters, and the loop plumbing (the sync pass, settling, shutdown, signals, the write
 * queue's marks). The session methods are in acp/session.c, the prompt flow in acp/prompt.c.
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

typedef json_t *acp_handler(struct acp_server *srv, struct acp_msg *m);

/*
 * Until the corpus index is complete (a worker builds it after start-up, session/corpus.h), a
 * request that may need it waits here with every line after it, so the order of answers is the
 * order of requests. initialize, authenticate and session/new need no stored session and pass
 * while nothing waits. Past ACP_HELD_MAX bytes stdin is paused.
 */
struct acp_held_line {
	struct acp_held_line *next;
	size_t len;
	char line[];
};

#define ACP_HELD_MAX (16u << 20)

/* ---- the client, as the runtime sees it (agent/client.h) ---- */

static void
acp_out_send(void *arg, json_t *msg)
{
	acp_send(arg, msg);
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

static json_t *
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
	return acp_result_new(m->id, xjson_pack(
	    "{s:i, s:{s:b, s:{s:b, s:b, s:b}, s:{s:b, s:b}, s:{s:{}, s:{}, s:{}}}, s:[], s:{s:s, s:s, s:s}}",
	    "protocolVersion", 1, "agentCapabilities", "loadSession", 1, "promptCapabilities", "image", 0,
	    "audio", 0, "embeddedContext", 1, "mcpCapabilities", "http", 1, "sse", 0,
	    "sessionCapabilities", "list", "resume", "close", "authMethods", "agentInfo", "name",
	    "acp-agent", "title", "acp-agent", "version", ACP_AGENT_VERSION));
}

static json_t *
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

static json_t *
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

static const struct acp_method {
	const char *name;
	acp_handler *fn;
	int notification;
} acp_methods[] = {
	{ "initialize", acp_m_initialize, 0 },
	{ "authenticate", acp_m_authenticate, 0 },
	{ "session/new", acp_m_session_new, 0 },
	{ "session/load", acp_m_session_load, 0 },
	{ "session/resume", acp_m_session_resume, 0 },
	{ "session/list", acp_m_session_list, 0 },
	{ "session/close", acp_m_session_close, 0 },
	{ "session/prompt", acp_m_session_prompt, 0 },
	{ "session/cancel", acp_m_session_cancel, 1 },
	{ "session/set_mode", acp_m_session_set_mode, 0 },
	{ "session/set_config_option", acp_m_session_set_config_option, 0 },
	{ "_acp_agent/wait_idle", acp_m_wait_idle, 0 },
};

static const struct acp_method *
acp_method_find(const char *name)
{
	for (size_t i = 0; i < sizeof(acp_methods) / sizeof(acp_methods[0]); i++)
		if (strcmp(acp_methods[i].name, name) == 0)
			return &acp_methods[i];
	return NULL;
}

/* 1 when the line is a request that the corpus index must be complete for. */
static int
acp_line_needs_corpus(const char *line, size_t len)
{
	json_t *j = json_loadb(line, len, 0, NULL);
	const char *method = json_string_value(json_object_get(j, "method"));
	int needs = method && json_object_get(j, "id") && strcmp(method, "initialize") != 0 &&
		    strcmp(method, "authenticate") != 0 && strcmp(method, "session/new") != 0;

	json_decref(j);
	return needs;
}

/* Holds the line (copied) when it must wait for the corpus; returns 1 then. */
static int
acp_line_hold(struct acp_server *srv, const char *line, size_t len)
{
	struct acp_held_line *h;

	if (srv->held == NULL && (sess_corpus_is_ready(&srv->corpus) || !acp_line_needs_corpus(line, len)))
		return 0;
	h = xmalloc(sizeof(*h) + len + 1);
	h->next = NULL;
	h->len = len;
	memcpy(h->line, line, len);
	h->line[len] = '\0';
	if (srv->held == NULL)
		srv->held_tail = &srv->held;
	*srv->held_tail = h;
	srv->held_tail = &h->next;
	srv->held_bytes += len;
	if (srv->held_bytes > ACP_HELD_MAX && !srv->held_paused) {
		srv->held_paused = 1;
		reader_pause(&srv->reader);
	}
	return 1;
}

static void acp_server_line_now(struct acp_server *srv, const char *line, size_t len);

/* Answers one held line per loop turn, in order; then stdin and EOF take their course. */
static void
acp_held_idle_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct acp_server *srv = w->data;
	struct acp_held_line *h = srv->held;

	(void)revents;
	if (h == NULL || srv->shutting_down) {
		ev_idle_stop(loop, w);	/* what is left is freed with the server */
		return;
	}
	srv->held = h->next;
	srv->held_bytes -= h->len;
	acp_server_line_now(srv, h->line, h->len);
	free(h);
	if (srv->held)
		return;
	ev_idle_stop(loop, w);
	if (srv->held_paused && !srv->shutting_down && !wq_full(&srv->wq))
		reader_resume(&srv->reader);
	srv->held_paused = 0;
	if (srv->eof_pending)
		acp_server_shutdown(srv);
}

static void
acp_on_corpus_ready(void *arg)
{
	struct acp_server *srv = arg;

	if (srv->held)
		ev_idle_start(srv->loop, &srv->held_idle);
}

/*
 * A request or notification about a session being loaded waits for the load (1), or a close
 * cancels it (1, answered); else 0.
 */
static int
acp_server_held(struct acp_server *srv, struct acp_msg *m, const char *line, size_t len)
{
	json_t *jsid = json_object_get(m->params, "sessionId");
	struct acp_load *l;

	if (!json_is_string(jsid) || acp_has_nul(jsid) || (l = acp_load_find(srv, json_string_value(jsid))) == NULL)
		return 0;
	return acp_load_hold(l, m, line, len);
}

void
acp_server_line(void *arg, const char *line, size_t len)
{
	struct acp_server *srv = arg;

	if (srv->shutting_down)
		return;
	if (srv->rec)
		record_client_line(srv->rec, line, len);
	acp_server_dispatch(srv, line, len);
}

void
acp_server_dispatch(struct acp_server *srv, const char *line, size_t len)
{
	if (srv->shutting_down)
		return;
	if (!acp_line_hold(srv, line, len))
		acp_server_line_now(srv, line, len);
	/* After the first answer (initialize's) is written: the index is built from now on. */
	sess_corpus_kick(&srv->corpus);
}

static void
acp_server_line_now(struct acp_server *srv, const char *line, size_t len)
{
	struct acp_msg m;
	json_t *reply = NULL;
	const struct acp_method *meth;
	enum acp_kind kind;

	if (srv->shutting_down)
		return;
	kind = acp_classify(line, len, &m, &reply);
	if ((kind == ACP_MSG_REQUEST || kind == ACP_MSG_NOTIFICATION) && srv->loads && srv->initialized &&
	    acp_server_held(srv, &m, line, len)) {
		acp_msg_free(&m);
		return;
	}
	switch (kind) {
	case ACP_MSG_INVALID:
		acp_send(srv, reply);
		return;
	case ACP_MSG_RESPONSE:
		if (json_is_null(m.id))
			log_info("acp: a response with id null was ignored");
		else if (!acp_outbound_answer(&srv->out, m.id, m.root))
			log_info("acp: a response to an unknown or finished request was ignored");
		break;
	case ACP_MSG_NOTIFICATION:
		meth = acp_method_find(m.method);
		if (meth && meth->notification && srv->initialized)
			meth->fn(srv, &m);
		else
			log_debug("acp: notification %s ignored", m.method);
		break;
	case ACP_MSG_REQUEST:
		meth = acp_method_find(m.method);
		if (meth == NULL || meth->notification) {
			reply = acp_error_new(m.id, ERR_METHOD_NOT_FOUND, "unknown method",
			    xjson_pack("{s:s}", "method", m.method));
		} else if (!srv->initialized && meth->fn != acp_m_initialize) {
			reply = acp_error_new(m.id, ERR_NOT_INITIALIZED,
			    "initialize must come first", NULL);
		} else if (m.params && !json_is_object(m.params)) {
			reply = acp_invalid_params(m.id, "params: expected an object");
		} else {
			json_t *empty = NULL;
			if (m.params == NULL)
				m.params = empty = json_object();
			reply = meth->fn(srv, &m);
			json_decref(empty);
		}
		if (reply)
			acp_send(srv, reply);
		break;
	}
	acp_msg_free(&m);
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
	for (size_t i = 0; i < srv->nall; i++)
		srv->all[i]->agent = NULL;
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
	for (size_t i = 0; i < srv->nall; i++)
		acp_session_drop_wait(srv->all[i]);
	runq_push(&srv->runq, acp_shutdown_task, srv);
}

static void
acp_on_eof(void *arg)
{
	struct acp_server *srv = arg;

	if (srv->rec)
		record_eof(srv->rec, srv->held == NULL && agent_rt_idle(&srv->rt));
	if (srv->held) {
		srv->eof_pending = 1;	/* the held requests are answered first */
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

/* --record DIR (SPEC §21): the recorder sees the model's replies, the client's lines and our
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

	if (!srv->shutting_down && !srv->held_paused)
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
	srv->load_offload_min = opts->deterministic ? (off_t)INT64_MAX : ACP_LOAD_OFFLOAD_MIN;
	runq_init(&srv->runq, loop);
	runq_set_sync(&srv->runq, acp_sync_pass, srv);
	runq_set_settle(&srv->runq, acp_settle, srv);
	if (sess_env_init(&srv->env, opts->state_dir, opts->sync, opts->deterministic, opts->faults, e) < 0)
		return -1;
	sess_store_init(&srv->store, &srv->env);
	sess_corpus_init(&srv->corpus, &srv->env);
	if (sess_corpus_start(&srv->corpus, loop, &srv->runq, acp_on_corpus_ready, srv, e) < 0)
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
	reader_init(&srv->reader, loop, in_fd, acp_server_line, acp_overlong, acp_on_eof, srv);
	ev_idle_init(&srv->held_idle, acp_held_idle_cb);
	srv->held_idle.data = srv;
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
	while (srv->waiters)
		acp_waiter_done(srv, srv->waiters, 0);
	if (srv->loop)
		ev_idle_stop(srv->loop, &srv->held_idle);
	while (srv->held) {
		struct acp_held_line *h = srv->held;
		srv->held = h->next;
		free(h);
	}
	acp_replays_free(srv);
	agent_rt_shutdown(&srv->rt);
	if (srv->model)
		srv->model->ops->report(srv->model);
	for (size_t i = 0; i < srv->nall; i++)
		acp_session_free(srv->all[i]);
	free(srv->all);
	map_free(&srv->sessions);
	runq_stop(&srv->runq);
	acp_outbound_free(&srv->out);	/* after the queue: a queued delivery still points at its entry */
	agent_rt_free(&srv->rt);
	model_free(srv->model);
	record_free(srv->rec);	/* after the model: its tap writes here */
	toolbox_free(&srv->tools);
	sess_store_free(&srv->store);
	sess_corpus_free(&srv->corpus);
	sess_env_free(&srv->env);
	reader_free(&srv->reader);
	wq_free(&srv->wq);
}
