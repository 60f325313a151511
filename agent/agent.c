/*
 * The turn/step state machine. Every transition runs from the run queue, never
 * re-entrantly: model callbacks and tool completions only record facts and
 * queue the next move. A failed append (the session log is broken) ends the
 * turn at once with a session_log_io error and writes nothing more.
 */
#include "agent/agent.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_types.h"
#include "agent/agent_int.h"
#include "agent/ask.h"
#include "agent/defaults.h"
#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

static void agent_step_begin(struct agent *a);
static void agent_types_refresh(struct agent *a);
static void agent_end_turn(struct agent *a, const char *kind, const char *cause, const char *msg,
    const char *code);

/* ---- runtime ---- */

void
agent_rt_init(struct agent_rt *rt, struct runq *q, struct sess_env *env, struct sess_store *store,
    struct sess_corpus *corpus, struct model *model)
{
	memset(rt, 0, sizeof(*rt));
	rt->runq = q;
	rt->env = env;
	rt->store = store;
	rt->corpus = corpus;
	rt->model = model;
	rt->max_steps = AGENT_DEFAULT_MAX_STEPS;
	rt->context_window = AGENT_DEFAULT_CONTEXT_WINDOW;
	rt->compact_at = AGENT_DEFAULT_COMPACT_AT;
	rt->max_depth = AGENT_DEFAULT_MAX_DEPTH;
	rt->max_active = AGENT_DEFAULT_MAX_ACTIVE;
	rt->start_mode = PERMIT_DEFAULT;
	rt->types_memo = agent_types_memo_new(AGENT_TYPES_RACY_S);
	map_init(&rt->agents);
}

struct agent_rt *
agent_rt_of(const struct agent *a)
{
	return a->rt;
}

struct sess *
agent_sess(const struct agent *a)
{
	return a->sess;
}

const struct toolbox *
agent_tools(const struct agent *a)
{
	return a->tools;
}

struct agent_hooks *
agent_hooks(struct agent *a)
{
	return &a->hooks;
}

enum agent_status
agent_status(const struct agent *a)
{
	return a->status;
}

int
agent_released(const struct agent *a)
{
	return a->released;
}

int
agent_turn(const struct agent *a)
{
	return a->turn;
}

int
agent_step(const struct agent *a)
{
	return a->step;
}

struct agent *
agent_rt_get(struct agent_rt *rt, const char *id)
{
	return map_get(&rt->agents, id);
}

void
agent_rt_set_exts(struct agent_rt *rt, const struct agent_ext *const *exts)
{
	rt->exts = exts;
}

/* Runs the hook of every extension that has one, in list order. */
#define AGENT_EXT_EACH(rt, hook, a) do {						\
	for (const struct agent_ext *const *x_ = (rt)->exts; x_ && *x_; x_++)		\
		if ((*x_)->hook)							\
			(*x_)->hook(a);							\
} while (0)

void
agent_rt_recover(struct agent *a)
{
	AGENT_EXT_EACH(a->rt, recover, a);
}

void
agent_worktree_leaving(struct agent *a)
{
	AGENT_EXT_EACH(a->rt, worktree_leaving, a);
}

int
agent_rt_idle(const struct agent_rt *rt)
{
	if (rt->working > 0)
		return 0;
	for (size_t i = 0; i < rt->nall; i++) {
		const struct agent *a = rt->all[i];
		if (a->released)
			continue;
		if (a->status == AGENT_RUNNING || a->kick_queued)
			return 0;
	}
	return 1;
}

static void
agent_inbox_free(struct agent *a)
{
	while (a->inbox) {
		struct agent_msg *m = a->inbox;
		a->inbox = m->next;
		json_decref(m->content);
		json_decref(m->source);
		free(m);
	}
	a->inbox_tail = NULL;
}

void
agent_rt_shutdown(struct agent_rt *rt)
{
	rt->shutting_down = 1;
	for (size_t i = 0; i < rt->nall; i++)
		if (!rt->all[i]->released && !rt->all[i]->finishing)
			agent_release(rt->all[i]);
}

static void
agent_destroy(struct agent *a)
{
	agent_inbox_free(a);
	buf_free(&a->text);
	buf_free(&a->reasoning);
	buf_free(&a->summary);
	agent_conv_free(&a->conv);
	free(a->advertised);
	free(a->label);
	json_decref(a->calls);
	agent_instructions_free(&a->instr);
	json_decref(a->instr_logged);
	agent_comp_free(&a->comp);
	agent_types_unref(a->types);
	for (size_t i = 0; i < a->nslots; i++)
		if (a->slots[i].free_fn)
			a->slots[i].free_fn(a->slots[i].state);
	free(a);
}

/* Frees a released agent nothing points at any more: the last unpin queued it. */
static void
agent_reap(void *arg)
{
	struct agent *a = arg;
	struct agent_rt *rt = a->rt;

	for (size_t i = rt->nall; i-- > 0;)
		if (rt->all[i] == a) {
			memmove(rt->all + i, rt->all + i + 1, (rt->nall - i - 1) * sizeof(*rt->all));
			rt->nall--;
			break;
		}
	agent_destroy(a);
}

static void
agent_reap_later(struct agent *a)
{
	if (!a->released || a->pins > 0 || a->reap_queued)
		return;
	a->reap_queued = 1;
	runq_push(a->rt->runq, agent_reap, a);
}

void
agent_push(struct agent *a, runq_fn *fn)
{
	a->pins++;
	runq_push(a->rt->runq, fn, a);
}

void
agent_push_after_sync(struct agent *a, runq_fn *fn)
{
	a->pins++;
	runq_push_after_sync(a->rt->runq, fn, a);
}

void
agent_push_next(struct agent *a, runq_fn *fn)
{
	a->pins++;
	runq_push_next(a->rt->runq, fn, a);
}

void
agent_unpin(struct agent *a)
{
	a->pins--;
	agent_reap_later(a);
}

/* Agents whose reap is still queued (a shutdown that stops the queue) go here. */
void
agent_rt_free(struct agent_rt *rt)
{
	for (size_t i = 0; i < rt->nall; i++)
		agent_destroy(rt->all[i]);
	free(rt->all);
	map_free(&rt->agents);
	agent_types_memo_free(rt->types_memo);
	memset(rt, 0, sizeof(*rt));
}

/* ---- creation ---- */

static void
agent_corpus_observer(void *arg, struct sess *s, const json_t *ev)
{
	struct agent *a = arg;

	agent_conv_fold(&a->conv, ev);
	sess_corpus_note_live(a->rt->corpus, s);
}

char *
agent_worktree_path(const struct agent_rt *rt, const char *id)
{
	return xasprintf("%s/worktrees/%s", rt->env->state_dir, id);
}

/* A child's composition from its descriptor event ev (borrowed; NULL: unreadable). */
static void
agent_compose_from(struct agent *a, const json_t *ev)
{
	struct sess_descriptor d;
	const char *why;

	agent_comp_free(&a->comp);
	if (ev && sess_descriptor_read(json_object_get(ev, "data"), &d, &why) == 0) {
		agent_comp_from_descriptor(&a->comp, &d);
		if (a->comp.wt)		/* where its worktree is, or is added back */
			a->comp.wt->path = agent_worktree_path(a->rt, sess_id(a->sess));
		return;
	}
	log_warn("agent %s: its descriptor does not pass its check (%s): it runs with no tools, read-only",
	    sess_id(a->sess), ev ? why : "unreadable");
	agent_comp_unreadable(&a->comp);
}

/* conv: the conversation rebuilt from s's events already (moved in), or NULL: rebuilt here. */
static struct agent *
agent_attach(struct agent_rt *rt, struct sess *s, struct agent_conv *conv, const struct toolbox *tools,
    const struct agent_hooks *hooks)
{
	struct agent *a = xcalloc(1, sizeof(*a));
	size_t i;
	json_t *ev;

	a->rt = rt;
	a->sess = s;
	a->tools = tools;
	if (hooks)
		a->hooks = *hooks;
	a->ordinal = -1;
	a->comp.ceiling = -1;
	buf_init(&a->text);
	buf_init(&a->reasoning);
	buf_init(&a->summary);
	if (conv) {
		a->conv = *conv;
		memset(conv, 0, sizeof(*conv));	/* the caller's is empty now */
	} else {
		agent_conv_init(&a->conv);
		agent_conv_from_sess(&a->conv, s);	/* from the latest compaction on */
	}
	/* By the type codes: the log is read back only for the one event that tells (docs/decisions.md, "Sessions off the heap"). */
	int turn_start = SESS_EV_TURN_START, step_start = SESS_EV_STEP_START, instr = SESS_EV_CONTEXT_INSTRUCTIONS;
	int descriptor = SESS_EV_SUBAGENT_DESCRIPTOR;
	int found = 0, composed = 0;
	for (i = sess_nev(s); i-- > 0;) {
		int t = sess_type_at(s, i);
		if (t == descriptor && !composed) {
			composed = 1;	/* the last one tells: the composition a cold resume rebuilds */
			agent_compose_from(a, (ev = sess_event_get(s, i)));
			json_decref(ev);
		}
		if (t == instr && a->instr_logged == NULL) {
			/* what the model was last told: a turn logs the set again only when it differs */
			if ((ev = sess_event_get(s, i)) != NULL)
				a->instr_logged = json_incref(json_object_get(json_object_get(ev, "data"), "files"));
			json_decref(ev);
		}
		if (t == turn_start && !found) {
			found = 1;	/* the last one tells */
			if ((ev = sess_event_get(s, i)) != NULL)
				a->turn = (int)json_integer_value(json_object_get(json_object_get(ev, "data"), "turn"));
			json_decref(ev);
		} else if (t == step_start) {
			a->requests++;
		}
	}
	map_put(&rt->agents, sess_id(s), a);
	if (rt->nall == rt->call) {
		rt->call = rt->call ? rt->call * 2 : 16;
		rt->all = xrealloc(rt->all, rt->call * sizeof(*rt->all));
	}
	rt->all[rt->nall++] = a;
	sess_observe(s, agent_corpus_observer, a);
	sess_corpus_note_live(rt->corpus, s);
	/* read when it starts (new, load, resume, child start, cold resume), never per request */
	agent_instructions_read(&a->instr, sess_header_str(s, "cwd") ? sess_header_str(s, "cwd") : "/", rt->home,
	    rt->config_home);
	if (a->instr_logged)
		agent_instructions_seed(&a->instr, a->instr_logged);
	if (sess_header_str(s, "parentSession") == NULL)
		agent_types_of(a);	/* a root's types: read when it starts (docs/contract.md §23.1) */
	else if (!composed)
		agent_comp_unreadable(&a->comp);	/* no descriptor (yet): nothing, until one says */
	return a;
}


/* A new session's createdAt; the first one of this process is remembered (agent_replay_ordinal). */
static int64_t
agent_created_now(struct agent_rt *rt)
{
	int64_t t = clock_now_ms(&rt->env->clock);

	if (rt->run_since == 0)
		rt->run_since = t;
	return t;
}

struct agent *
agent_new_root(struct agent_rt *rt, const char *cwd, const struct toolbox *tools,
    const struct agent_hooks *hooks)
{
	char id[SESS_ID_LEN + 1];
	struct sess_header_info info = { 0 };

	sess_ids_new(&rt->env->ids, id);
	info.id = id;
	info.created_at = agent_created_now(rt);
	info.cwd = cwd;
	return agent_attach(rt, sess_store_create(rt->store, &info), NULL, tools, hooks);
}

int
agent_publish_root(struct agent *a, const char *mode, const char *model, struct err *e)
{
	json_t *data = json_object();

	json_object_set_new(data, "mode", json_string(mode));
	json_object_set_new(data, "model", json_string(model));
	if (sess_append(a->sess, "session/created", data, e) == NULL)
		return -1;
	sess_checkpoint(a->sess);
	return 0;
}

struct agent *
agent_new_child(struct agent_rt *rt, const struct agent *parent, const struct toolbox *tools, const char *given_id,
    const char *cwd)
{
	char id[SESS_ID_LEN + 1];
	struct sess_header_info info = { 0 };
	struct agent *a;

	if (given_id)
		snprintf(id, sizeof(id), "%s", given_id);
	else
		sess_ids_new(&rt->env->ids, id);
	info.id = id;
	info.created_at = agent_created_now(rt);
	info.cwd = cwd ? cwd : sess_header_str(parent->sess, "cwd");
	info.depth = (int)json_integer_value(json_object_get(sess_header(parent->sess), "delegationDepth")) + 1;
	info.parent = agent_id(parent);
	info.origin = "subagent";
	a = agent_attach(rt, sess_store_create(rt->store, &info), NULL, tools, NULL);
	return a;
}

/* The text blocks of an assistant/message (borrowed), joined; NULL when it has none. */
static char *
agent_message_text(const json_t *ev)
{
	struct buf b;
	size_t k;
	json_t *blk;

	buf_init(&b);
	json_array_foreach(json_object_get(json_object_get(ev, "data"), "content"), k, blk) {
		if (strcmp(json_string_value(json_object_get(blk, "type")), "text") == 0)
			buf_puts(&b, json_string_value(json_object_get(blk, "text")));
	}
	if (b.len)
		return buf_steal(&b);
	buf_free(&b);
	return NULL;
}

char *
agent_final_text_of(const json_t *events)
{
	char *text = NULL;

	for (size_t i = json_array_size(events); i-- > 0 && text == NULL;) {
		json_t *ev = json_array_get(events, i);
		const char *t = json_string_value(json_object_get(ev, "type"));
		enum sess_ev et = sess_ev_of(t);
		if (et == SESS_EV_TURN_START)
			break;
		if (et == SESS_EV_ASSISTANT_MESSAGE)
			text = agent_message_text(ev);
	}
	return text;
}

char *
agent_final_text(const struct agent *a)
{
	struct sess *s = a->sess;
	int turn_start = SESS_EV_TURN_START, message = SESS_EV_ASSISTANT_MESSAGE;
	char *text = NULL;

	/* By the type codes: only the turn's messages are read (from the window, as a rule). */
	for (size_t i = sess_nev(s); i-- > 0 && text == NULL;) {
		int t = sess_type_at(s, i);
		if (t == turn_start)
			break;
		if (t == message) {
			json_t *ev = sess_event_get(s, i);
			if (ev)
				text = agent_message_text(ev);
			json_decref(ev);
		}
	}
	return text;
}

struct agent *
agent_load(struct agent_rt *rt, const char *id, const struct toolbox *tools,
    const struct agent_hooks *hooks, struct err *e)
{
	struct sess *s = sess_store_load(rt->store, id, e);

	if (s == NULL)
		return NULL;
	return agent_adopt(rt, s, tools, hooks);
}

struct agent *
agent_adopt(struct agent_rt *rt, struct sess *s, const struct toolbox *tools,
    const struct agent_hooks *hooks)
{
	return agent_adopt_conv(rt, s, NULL, tools, hooks);
}

void
agent_set_conv(struct agent *a, struct agent_conv *conv, size_t n)
{
	agent_conv_free(&a->conv);
	a->conv = *conv;
	memset(conv, 0, sizeof(*conv));
	if (n < sess_nev(a->sess)) {
		struct sess_cursor *cur = sess_cursor_new(a->sess, n, sess_nev(a->sess));
		agent_conv_fold_cursor(&a->conv, cur, NULL);
		sess_cursor_free(cur);
	}
}

struct agent *
agent_adopt_conv(struct agent_rt *rt, struct sess *s, struct agent_conv *conv, const struct toolbox *tools,
    const struct agent_hooks *hooks)
{
	clock_advance_past(&rt->env->clock, sess_last_time(s));
	return agent_attach(rt, s, conv, tools, hooks);
}

const char *
agent_id(const struct agent *a)
{
	return sess_id(a->sess);
}

const char *
agent_parent(const struct agent *a)
{
	return sess_header_str(a->sess, "parentSession");
}

void *
agent_state(const struct agent *a, const void *key)
{
	for (size_t i = 0; i < a->nslots; i++)
		if (a->slots[i].key == key)
			return a->slots[i].state;
	return NULL;
}

void
agent_state_set(struct agent *a, const void *key, void *state, void (*free_fn)(void *state))
{
	if (a->nslots == AGENT_SLOTS || agent_state(a, key)) {
		log_error("agent %s: extension state slot misuse", agent_id(a));
		abort();	/* a programming error: more extensions than slots, or a key set twice */
	}
	a->slots[a->nslots].key = key;
	a->slots[a->nslots].state = state;
	a->slots[a->nslots].free_fn = free_fn;
	a->nslots++;
}

/* ---- logging ---- */

/* Appends an event; on failure the session is broken and the caller stops. */
static int
agent_log(struct agent *a, const char *type, json_t *data)
{
	struct err e;

	err_clear(&e);
	if (sess_append(a->sess, type, data, &e) == NULL) {
		log_error("agent %s: %s", agent_id(a), e.msg);
		return -1;
	}
	return 0;
}

/* Logs context/instructions when the set given differs from the last one logged (an agent that
 * never had a file logs nothing). 0, or -1 (the log failed). */
static int
agent_log_instructions(struct agent *a)
{
	json_t *files = a->instr.files;

	if (a->instr_logged ? json_equal(a->instr_logged, files) : json_array_size(files) == 0)
		return 0;
	json_decref(a->instr_logged);
	a->instr_logged = json_deep_copy(files);
	/* a copy of its own: the set given grows after (nested files), the logged event must not */
	return agent_log(a, "context/instructions", xjson_pack("{s:o}", "files", json_deep_copy(files)));
}

int
agent_log_event(struct agent *a, const char *type, json_t *data)
{
	return agent_log(a, type, data);
}

int
agent_append(struct agent *a, const char *type, json_t *data)
{
	if (a->sess == NULL) {
		json_decref(data);
		return -1;
	}
	return agent_log(a, type, data);
}

static void
agent_fail_io(struct agent *a)
{
	agent_end_turn(a, "error", NULL, NULL, err_kind(ERR_SESSION_LOG_IO));
}

/* ---- inbox ---- */

static int
agent_msg_steerable(const struct agent_msg *m)
{
	const char *kind = json_string_value(json_object_get(m->source, "kind"));

	/* Human prompts are never steered into a running turn: they run as their own turn. */
	return kind == NULL || strcmp(kind, "user") != 0;
}

static struct agent_msg *
agent_inbox_pop(struct agent *a)
{
	struct agent_msg *m = a->inbox;

	if (m) {
		a->inbox = m->next;
		if (a->inbox == NULL)
			a->inbox_tail = NULL;
	}
	return m;
}

/* Appends a message as user/message; takes m. */
static int
agent_log_message(struct agent *a, struct agent_msg *m)
{
	json_t *data = xjson_pack("{s:s, s:O, s:O}", "id", m->id, "content", m->content, "source",
	    m->source);

	json_decref(m->content);
	json_decref(m->source);
	free(m);
	return agent_log(a, "user/message", data);
}

static void
agent_kick(void *arg)
{
	struct agent *a = arg;
	struct agent_msg *m;
	struct err e;

	agent_unpin(a);
	a->kick_queued = 0;
	if (a->released || a->status == AGENT_RUNNING || a->inbox == NULL)
		return;
	a->status = AGENT_RUNNING;
	AGENT_EXT_EACH(a->rt, turn_start, a);
	if (a->rt->watch && agent_parent(a))
		a->rt->watch->turn_start(a->rt->watch->arg, a);
	/* A write that failed and was cut back (a full disk) does not break the session for good:
	 * the next turn re-verifies the file and goes on. */
	err_clear(&e);
	if (sess_recover(a->sess, &e) < 0)
		log_warn("agent %s: %s", agent_id(a), e.msg);
	a->turn++;
	a->step = 0;
	a->steps_this_turn = 0;
	m = agent_inbox_pop(a);
	snprintf(a->first_msg, sizeof(a->first_msg), "%s", m->id);
	agent_types_refresh(a);
	if (agent_log_instructions(a) < 0 || agent_log(a, "turn/start", xjson_pack("{s:i}", "turn", a->turn)) < 0) {
		json_decref(m->content);
		json_decref(m->source);
		free(m);
		agent_fail_io(a);
		return;
	}
	if (agent_log_message(a, m) < 0) {
		agent_fail_io(a);
		return;
	}
	agent_step_begin(a);
}

static void
agent_schedule(struct agent *a)
{
	if (a->kick_queued || a->released)
		return;
	a->kick_queued = 1;
	agent_push(a, agent_kick);
}

void
agent_post(struct agent *a, json_t *content, json_t *source, char *out_id)
{
	struct agent_msg *m = xcalloc(1, sizeof(*m));

	sess_ids_new(&a->rt->env->ids, m->id);
	m->content = content;
	m->source = source;
	if (out_id)
		memcpy(out_id, m->id, SESS_ID_LEN + 1);
	if (a->inbox_tail)
		a->inbox_tail->next = m;
	else
		a->inbox = m;
	a->inbox_tail = m;
	if (a->status == AGENT_IDLE)
		agent_schedule(a);
	/* A running agent takes it at its next step boundary. */
}

int
agent_withdraw(struct agent *a, const char *msg_id)
{
	struct agent_msg **pp, *prev = NULL;

	for (pp = &a->inbox; *pp; prev = *pp, pp = &(*pp)->next) {
		struct agent_msg *m = *pp;
		if (strcmp(m->id, msg_id) != 0)
			continue;
		*pp = m->next;
		if (a->inbox_tail == m)
			a->inbox_tail = prev;
		json_decref(m->content);
		json_decref(m->source);
		free(m);
		return 1;
	}
	return 0;
}

/* ---- steps ---- */

static void
agent_sink_text(void *arg, const char *s, size_t n)
{
	struct agent *a = arg;

	buf_append(&a->text, s, n);
	if (a->hooks.delta)
		a->hooks.delta(a->hooks.arg, a, 0, a->msg_id, s, n);
	if (a->rt->watch && agent_parent(a))
		a->rt->watch->delta(a->rt->watch->arg, a, 0, a->msg_id, s, n);
}

static void
agent_sink_reasoning(void *arg, const char *s, size_t n)
{
	struct agent *a = arg;

	buf_append(&a->reasoning, s, n);
	if (a->hooks.delta)
		a->hooks.delta(a->hooks.arg, a, 1, a->msg_id, s, n);
	if (a->rt->watch && agent_parent(a))
		a->rt->watch->delta(a->rt->watch->arg, a, 1, a->msg_id, s, n);
}

static void
agent_sink_tool_call(void *arg, const char *call_id, const char *name, const char *args)
{
	struct agent *a = arg;
	size_t k = json_array_size(a->calls), i;
	json_t *c;
	int taken = call_id == NULL || call_id[0] == '\0';
	char *id;

	/* Everything downstream keys on the call id (results, repair, the client's toolCallId): a
	 * provider that gives none, an empty one or one already used in this message gets one made
	 * here; any other id stays the provider's, since the model reads it back. */
	json_array_foreach(a->calls, i, c) {
		if (!taken && strcmp(json_string_value(json_object_get(c, "callId")), call_id) == 0)
			taken = 1;
	}
	id = taken ? xasprintf("call_%d_%d_%zu", a->turn, a->step, k + 1) : xstrdup(call_id);

	json_array_append_new(a->calls, xjson_pack("{s:s, s:s, s:s}", "callId", id, "name", name ? name : "",
	    "arguments", args ? args : "{}"));
	free(id);
}

/* One text or reasoning part of an assistant message. */
static json_t *
agent_text_part(const char *type, const struct buf *text)
{
	return xjson_pack("{s:s, s:o}", "type", type, "text", xjson_text(text->data, text->len));
}

/* The assistant message of this step, as it stands. */
static json_t *
agent_assistant_content(struct agent *a, int with_calls)
{
	json_t *content = json_array();
	size_t i;
	json_t *c;

	if (a->reasoning.len)
		json_array_append_new(content, agent_text_part("reasoning", &a->reasoning));
	if (a->text.len)
		json_array_append_new(content, agent_text_part("text", &a->text));
	if (with_calls)
		json_array_foreach(a->calls, i, c) json_array_append_new(content,
		    xjson_pack("{s:s, s:O, s:O, s:O}", "type", "tool-call", "callId",
			json_object_get(c, "callId"), "name", json_object_get(c, "name"), "arguments",
			json_object_get(c, "arguments")));
	return content;
}

static void
agent_step_reset(struct agent *a)
{
	for (size_t i = 0; a->invs && i < a->ninv; i++) {
		struct tool_inv *inv = a->invs[i];
		tool_result_clear(&inv->result);
		tool_plan_clear(&inv->plan);
		if (inv->tool && inv->tool->hold)
			inv->tool->hold(inv->tool, -1);
		free(inv->call_id);
		json_decref(inv->args);
		free(inv);
	}
	free(a->invs);
	a->invs = NULL;
	a->ninv = a->nstarted = a->ncommitted = 0;
	a->request_queued = 0;
	buf_free(&a->text);
	buf_free(&a->reasoning);
	json_decref(a->calls);
	a->calls = NULL;
	a->req = NULL;
}

static int
agent_log_step_end(struct agent *a)
{
	return agent_log(a, "step/end", xjson_pack("{s:i, s:i}", "turn", a->turn, "step", a->step));
}

static void
agent_tools_progress(void *arg);

static void
agent_tool_done(struct tool_inv *inv)
{
	struct agent *a = inv->agent;

	if (!a->progress_queued) {
		a->progress_queued = 1;
		agent_push(a, agent_tools_progress);
	}
}

/* Runs a call whose checks passed; a call that completes at once is done now. */
static void
agent_tool_run(struct tool_inv *inv)
{
	struct tool_result r = { 0 };

	if (inv->tool == NULL)
		return;		/* its check failed it already */
	if (inv->tool->run(inv, inv->args, &r) == TOOL_DONE) {
		inv->result = r;
		inv->done = 1;
	}
}

/* After an allow (from the run queue): run, and tell the agent when it is done already. */
static void
agent_tool_run_allowed(struct tool_inv *inv)
{
	agent_tool_run(inv);
	if (inv->done)
		inv->on_done(inv);
}

/*
 * The checks before a call is announced, in docs/contract.md §20.1's order: arguments, then the tool's own
 * (confinement, the mode, observation, the diff), then the rules. 0: fill nothing more and run;
 * 1: ask first; -1: the call failed (its result is filled).
 */
static int
agent_tool_check(struct agent *a, struct tool_inv *inv, const char *name, const char *raw)
{
	struct err e;
	int rule;

	err_clear(&e);
	if (inv->tool == NULL) {
		tool_result_error(&inv->result, ERR_UNKNOWN_TOOL, "unknown tool \"%s\"", name);
		return -1;
	}
	inv->args = toolbox_check_args(a->tools, inv->tool, raw, &e);
	if (inv->args == NULL) {
		tool_result_error(&inv->result, e.code, "%s", e.msg);
		return -1;
	}
	if (inv->tool->cls == PERMIT_READ && inv->tool->prepare == NULL)
		return 0;
	inv->plan.verdict = permit_decide(agent_mode(a), inv->tool->cls);
	/* an edit in a worktree cannot touch the user's files: it asks for nothing but read-only's
	 * refusal (docs/contract.md §24) */
	if (inv->tool->cls == PERMIT_EDIT && inv->plan.verdict == PERMIT_ASK && agent_worktree_owner(a))
		inv->plan.verdict = PERMIT_ALLOW;
	if (inv->tool->prepare && inv->tool->prepare(inv, inv->args, &inv->plan, &inv->result) < 0)
		return -1;
	if (inv->plan.verdict == PERMIT_REFUSE) {
		tool_result_clear(&inv->result);
		tool_result_read_only(&inv->result, inv->tool);
		return -1;
	}
	if (inv->plan.verdict != PERMIT_ASK)
		return 0;
	rule = agent_ask_rule(a, inv->tool, &inv->plan);
	if (rule < 0) {
		agent_ask_rejected(inv);	/* a "reject always" rule: no ask */
		return -1;
	}
	return rule == 0;
}

/* Starts call i: the checks, tool/call (announced pending when it will ask), then ask or run. */
static int
agent_tool_start(struct agent *a, size_t i)
{
	struct tool_inv *inv = a->invs[i];
	json_t *c = json_array_get(a->calls, i);
	const char *name = json_string_value(json_object_get(c, "name"));
	const char *raw = json_string_value(json_object_get(c, "arguments"));
	int verdict = agent_tool_check(a, inv, name, raw);

	a->nstarted++;
	inv->asking = verdict == 1;	/* the observers of tool/call read it */
	json_t *ev = xjson_pack("{s:i, s:i, s:s, s:s, s:s}", "turn", a->turn, "step", a->step, "callId",
	    inv->call_id, "name", name, "arguments", raw);
	/* A tool that comes and goes leaves its title in the log, for a replay without it. */
	if (inv->tool && inv->tool->hold && inv->tool->title) {
		char *title = inv->tool->title(inv->tool, inv->args);
		json_object_set_new(ev, "title", json_string(title));
		free(title);
	}
	if (agent_log(a, "tool/call", ev) < 0)
		return -1;
	if (verdict < 0) {
		inv->done = 1;
		return 0;
	}
	if (verdict == 1) {
		if (agent_ask_start(a, inv, agent_tool_run_allowed) < 0)
			inv->done = 1;
		return 0;
	}
	agent_tool_run(inv);
	return 0;
}

const struct tool_inv *
agent_find_call(const struct agent *a, const char *call_id)
{
	for (size_t i = 0; i < a->ninv; i++)
		if (strcmp(a->invs[i]->call_id, call_id) == 0)
			return a->invs[i];
	return NULL;
}

static int
agent_commit_result(struct agent *a, size_t i)
{
	struct tool_inv *inv = a->invs[i];
	json_t *c = json_array_get(a->calls, i);

	/* Every tool's text to the model is capped (docs/contract.md §19), the whole of it spilled. */
	if (inv->result.text && a->rt->cap_text) {
		size_t len = strlen(inv->result.text);
		char name[160];
		snprintf(name, sizeof(name), "%s-%s-%s", json_string_value(json_object_get(c, "name")),
		    agent_id(a), inv->call_id);
		for (char *p = name; *p; p++)
			if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') && !(*p >= '0' && *p <= '9') &&
			    *p != '-' && *p != '_' && *p != '.')
				*p = '_';
		a->rt->cap_text(a, name, &inv->result.text, &len);
	}
	/* A read, write or edit below a directory with instructions of its own gives them, once. */
	if (inv->tool && inv->tool->file_arg && inv->result.error_code == ERR_NONE) {
		char *more = agent_instructions_nested(&a->instr, json_string_value(json_object_get(inv->args,
		    inv->tool->file_arg)));
		if (more) {
			char *t = xasprintf("%s%s", inv->result.text ? inv->result.text : "", more);
			free(inv->result.text);
			inv->result.text = t;
			free(more);
			if (agent_log_instructions(a) < 0)
				return -1;
		}
	}
	const char *text = inv->result.text ? inv->result.text : "";
	/* A tool's text may hold anything (a cut message, a file's bytes): repaired, never dropped. */
	json_t *data = xjson_pack("{s:i, s:i, s:s, s:O, s:[{s:s, s:o}], s:b}", "turn", a->turn, "step",
	    a->step, "callId", inv->call_id, "name", json_object_get(c, "name"), "content", "type",
	    "text", "text", xjson_text(text, strlen(text)), "isError", inv->result.error_code != ERR_NONE);

	if (inv->result.output)
		json_object_set(data, "output", inv->result.output);
	if (inv->result.error_code)
		json_object_set_new(data, "error", xjson_pack("{s:s}", "code", err_tool(inv->result.error_code)));
	if (inv->result.agent_id[0])
		json_object_set_new(data, "agentId", json_string(inv->result.agent_id));
	else if (inv->result.linked[0])
		json_object_set_new(data, "linkedSessionId", json_string(inv->result.linked));
	/* A child's asked call shows on its root: it ends there too (docs/contract.md §20.1). */
	if (inv->asked && agent_parent(a) && a->rt->client && !a->rt->shutting_down)
		a->rt->client->call_status(a->rt->client->self, inv,
		    inv->result.error_code != ERR_NONE ? "failed" : "completed");
	return agent_log(a, "tool/result", data);
}

static void
agent_tools_finished(struct agent *a)
{
	int last = a->steps_this_turn >= agent_max_steps(a);

	sess_checkpoint(a->sess);
	if (agent_log_step_end(a) < 0) {
		agent_fail_io(a);
		return;
	}
	agent_step_reset(a);
	if (last) {
		agent_end_turn(a, "max-steps", NULL, NULL, NULL);
		return;
	}
	agent_step_begin(a);
}

static void
agent_tools_progress(void *arg)
{
	struct agent *a = arg;

	agent_unpin(a);
	a->progress_queued = 0;
	if (a->released || a->invs == NULL || a->cancelling)
		return;
	for (;;) {
		while (a->ncommitted < a->ninv && a->invs[a->ncommitted]->done) {
			if (agent_commit_result(a, a->ncommitted) < 0) {
				agent_fail_io(a);
				return;
			}
			a->ncommitted++;
		}
		if (a->ncommitted == a->ninv) {
			agent_tools_finished(a);
			return;
		}
		/* Sequential calls: start the next once every earlier one is committed. */
		if (a->sequential && a->nstarted == a->ncommitted && a->nstarted < a->ninv) {
			if (agent_tool_start(a, a->nstarted) < 0) {
				agent_fail_io(a);
				return;
			}
			continue;
		}
		return;
	}
}

static void
agent_dispatch(struct agent *a)
{
	size_t n = json_array_size(a->calls);

	a->invs = xcalloc(n, sizeof(*a->invs));
	a->ninv = n;
	a->sequential = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *c = json_array_get(a->calls, i);
		struct tool_inv *inv = xcalloc(1, sizeof(*inv));
		inv->agent = a;
		inv->tool = agent_find_tool(a, json_string_value(json_object_get(c, "name")));
		if (inv->tool && inv->tool->hold)
			inv->tool->hold(inv->tool, 1);
		inv->call_id = xstrdup(json_string_value(json_object_get(c, "callId")));
		inv->on_done = agent_tool_done;
		a->invs[i] = inv;
		if (inv->tool && !inv->tool->concurrency_safe)
			a->sequential = 1;
	}
	if (a->sequential) {
		if (agent_tool_start(a, 0) < 0) {
			agent_fail_io(a);
			return;
		}
	} else {
		for (size_t i = 0; i < n; i++)
			if (agent_tool_start(a, i) < 0) {
				agent_fail_io(a);
				return;
			}
	}
	agent_tool_done(a->invs[0]);
}

static void
agent_sink_finish(void *arg, const char *finish, const json_t *usage)
{
	struct agent *a = arg;
	json_t *data;
	int has_calls = json_array_size(a->calls) > 0;

	a->req = NULL;
	data = xjson_pack("{s:i, s:i, s:s, s:o, s:s}", "turn", a->turn, "step", a->step, "id", a->msg_id,
	    "content", agent_assistant_content(a, 1), "finish", finish);
	if (usage)
		json_object_set(data, "usage", (json_t *)usage);
	if (agent_log(a, "assistant/message", data) < 0) {
		agent_fail_io(a);
		return;
	}
	/* The fold read the usage (when it is one it can read): the window's use now. */
	if (usage && a->conv.usage >= 0 && a->hooks.usage)
		a->hooks.usage(a->hooks.arg, a, a->conv.usage);
	if (has_calls) {
		agent_dispatch(a);
		return;
	}
	if (agent_log_step_end(a) < 0) {
		agent_fail_io(a);
		return;
	}
	agent_step_reset(a);
	if (strcmp(finish, "length") == 0) {
		agent_end_turn(a, "max-tokens", NULL, NULL, NULL);
	} else if (strcmp(finish, "refusal") == 0) {
		agent_end_turn(a, "refusal", NULL, NULL, NULL);
	} else if (a->inbox && agent_msg_steerable(a->inbox) && a->steps_this_turn < agent_max_steps(a)) {
		/* A message steered in while the model answered: one more step for it. */
		agent_step_begin(a);
	} else {
		agent_end_turn(a, "completed", NULL, NULL, NULL);
	}
}

static void
agent_sink_error(void *arg, const char *code, const char *msg)
{
	struct agent *a = arg;

	int overflow = strcmp(code, err_tool(ERR_MODEL_CONTEXT_LENGTH)) == 0 && !a->compact_tried &&
	    a->text.len == 0 && a->reasoning.len == 0;

	a->req = NULL;
	log_info("agent %s: model request failed: %s: %s", agent_id(a), code, msg);
	if ((a->text.len || a->reasoning.len) &&
	    agent_log(a, "assistant/message", xjson_pack("{s:i, s:i, s:s, s:o, s:s}", "turn", a->turn,
		"step", a->step, "id", a->msg_id, "content", agent_assistant_content(a, 0), "finish",
		"error")) < 0) {
		agent_fail_io(a);
		return;
	}
	if (agent_log_step_end(a) < 0) {
		agent_fail_io(a);
		return;
	}
	agent_step_reset(a);
	if (overflow) {
		/* Too long for the model: compact once, then the request again, as a new step. */
		agent_compact_begin(a, AGENT_COMPACT_OVERFLOW, a->compact_fixed);
		return;
	}
	agent_end_turn(a, "error", NULL, msg, code);
}

static size_t
agent_replay_ordinal(struct agent *a, const char *label)
{
	size_t n, rank = 0;
	struct sess_entry **all;
	const char *me = agent_id(a);
	int64_t created = json_integer_value(json_object_get(sess_header(a->sess), "createdAt"));

	if (a->ordinal >= 0)
		return (size_t)a->ordinal;
	all = sess_corpus_list(a->rt->corpus, &n);
	for (size_t i = 0; i < n; i++) {
		struct sess_entry *en = all[i];
		int same = label ? (en->label && strcmp(en->label, label) == 0 && en->parent)
				 : (en->parent == NULL && en->state == SESS_ENTRY_OK);
		if (!same || strcmp(en->id, me) == 0)
			continue;
		/* --record: a session from before this run is in no recording (docs/scenarios.md) */
		if (a->rt->rank_this_run && (a->rt->run_since == 0 || en->created_at < a->rt->run_since))
			continue;
		if (en->created_at < created || (en->created_at == created && strcmp(en->id, me) < 0))
			rank++;
	}
	free(all);
	a->ordinal = (long)rank;
	return rank;
}

static char *
agent_resolve_child(void *arg, const char *label)
{
	struct agent *a = arg;
	size_t n;
	struct sess_entry **all = sess_corpus_list(a->rt->corpus, &n);
	struct sess_entry *best = NULL;

	for (size_t i = 0; i < n; i++) {
		struct sess_entry *en = all[i];
		if (!en->parent || strcmp(en->parent, agent_id(a)) != 0 || !en->label ||
		    strcmp(en->label, label) != 0)
			continue;
		if (!best || en->created_at > best->created_at ||
		    (en->created_at == best->created_at && strcmp(en->id, best->id) > 0))
			best = en;
	}
	char *id = best ? xstrdup(best->id) : NULL;
	free(all);
	return id;
}

/* The label of the latest subagent/descriptor: each request reads only the events since the last. */
static const char *
agent_label(struct agent *a)
{
	int descriptor = SESS_EV_SUBAGENT_DESCRIPTOR;
	size_t n = sess_nev(a->sess);

	for (; a->label_scanned < n; a->label_scanned++) {
		if (sess_type_at(a->sess, a->label_scanned) != descriptor)
			continue;
		json_t *ev = sess_event_get(a->sess, a->label_scanned);
		const char *label = json_string_value(json_object_get(json_object_get(ev, "data"), "label"));
		free(a->label);
		a->label = label ? xstrdup(label) : NULL;
		json_decref(ev);
	}
	return a->label;
}

static void
agent_rt_kick(void *arg)
{
	(void)arg;	/* nothing: the drain that runs it ends with the settle hook */
}

void
agent_rt_linger(struct agent_rt *rt, int delta)
{
	rt->lingering += delta;
	if (delta < 0 && rt->lingering == 0 && rt->runq)
		runq_push(rt->runq, agent_rt_kick, NULL);
}

int
agent_rt_lingering(const struct agent_rt *rt)
{
	return rt->lingering;
}

int
agent_rt_session_params(struct agent_rt *rt, struct agent *a, const json_t *params, struct err *e)
{
	for (const struct agent_ext *const *x = rt->exts; x && *x; x++)
		if ((*x)->session_params && (*x)->session_params(a, params, e) < 0)
			return -1;
	return 0;
}

const struct tool *
agent_find_tool(struct agent *a, const char *name)
{
	const struct tool *t = name ? toolbox_find(a->tools, name) : NULL;

	for (const struct agent_ext *const *x = a->rt->exts; t == NULL && name && x && *x; x++) {
		const struct toolbox *tb = (*x)->toolbox ? (*x)->toolbox(a) : NULL;
		if (tb)
			t = toolbox_find(tb, name);
	}
	/* gone since the step's request advertised it (its server restarts): that tool answers */
	for (size_t i = 0; t == NULL && name && i < a->nadvertised; i++)
		if (strcmp(a->advertised[i]->name, name) == 0)
			t = a->advertised[i];
	/* outside its composition: as unknown as a tool that does not exist (docs/contract.md §23.2) */
	return t && agent_comp_allows(&a->comp, t->name) ? t : NULL;
}

/* Remembers the extension tools a request advertises (agent_find_tool's last resort). */
static void
agent_note_advertised(struct agent *a)
{
	a->nadvertised = 0;
	for (const struct agent_ext *const *x = a->rt->exts; x && *x; x++) {
		const struct toolbox *tb = (*x)->toolbox ? (*x)->toolbox(a) : NULL;
		if (tb == NULL || tb->n == 0)
			continue;
		a->advertised = xrealloc(a->advertised, (a->nadvertised + tb->n) * sizeof(*a->advertised));
		for (size_t i = 0; i < tb->n; i++)
			if (agent_comp_allows(&a->comp, tb->tools[i]->name))
				a->advertised[a->nadvertised++] = tb->tools[i];
	}
}

/* The types a's workspace has, as a tool's description ends (docs/contract.md §23.2): owned. */
static char *
agent_types_suffix(struct agent *a, const char *description)
{
	const struct agent_types *types = agent_types_of(a);
	struct buf b;

	buf_init(&b);
	buf_printf(&b, "%s\n\nAvailable agent types:", description);
	for (size_t i = 0; i < types->n; i++)
		buf_printf(&b, "\n- %s: %s", types->v[i].name, types->v[i].description);
	return buf_steal(&b);
}

/* The tools of tb a may have, appended to out as [{name, description, parameters}]. */
static void
agent_describe_box(struct agent *a, const struct toolbox *tb, json_t *out)
{
	for (size_t i = 0; i < tb->n; i++) {
		const struct tool *t = tb->tools[i];
		if (!agent_comp_allows(&a->comp, t->name))
			continue;
		char *desc = t->lists_types ? agent_types_suffix(a, t->description) : NULL;
		json_array_append_new(out, xjson_pack("{s:s, s:s, s:O}", "name", t->name, "description",
		    desc ? desc : t->description, "parameters", json_object_get(tb->schemas, t->name)));
		free(desc);
	}
}

json_t *
agent_describe_tools(struct agent *a)
{
	json_t *all = json_array();

	agent_describe_box(a, a->tools, all);
	for (const struct agent_ext *const *x = a->rt->exts; x && *x; x++) {
		const struct toolbox *tb = (*x)->toolbox ? (*x)->toolbox(a) : NULL;
		if (tb)
			agent_describe_box(a, tb, all);
	}
	return all;
}

/* Whether an extension holds the turn's first request (it releases it later). */
static int
agent_request_hold(struct agent *a)
{
	if (a->request_released)
		return 0;
	for (const struct agent_ext *const *x = a->rt->exts; x && *x; x++)
		if ((*x)->hold_request && (*x)->hold_request(a, a->steps_this_turn == 1)) {
			a->request_held = 1;
			return 1;
		}
	return 0;
}

static void agent_request(void *arg);

void
agent_request_release(struct agent *a)
{
	if (!a->request_held)
		return;
	a->request_held = 0;
	if (!a->request_queued || a->released)
		return;
	a->request_released = 1;
	agent_push_after_sync(a, agent_request);
}

/* After the checkpoint: ask the model. */
static void
agent_request(void *arg)
{
	struct agent *a = arg;
	static const struct model_sink sink_proto = { agent_sink_text, agent_sink_reasoning,
		agent_sink_tool_call, agent_sink_finish, agent_sink_error, NULL };
	struct model_sink sink = sink_proto;
	struct model_call call = { 0 };

	/* The step this was queued for may have been cancelled meanwhile (the loop serves I/O
	 * between run-queue slices), and a later step queued its own request. */
	agent_unpin(a);
	if (!a->request_queued || a->released || a->status != AGENT_RUNNING || a->cancelling)
		return;
	if (agent_request_hold(a))
		return;		/* still queued: agent_request_release sends it */
	a->request_released = 0;
	char *system = agent_system_prompt(a);
	json_t *tools = agent_describe_tools(a);

	agent_note_advertised(a);
	size_t fixed = agent_request_fixed(system, tools);

	a->compact_fixed = fixed;
	if (!a->compact_tried && agent_compact_due(a, fixed)) {
		/* The step stays queued: agent_compact_finished sends its request. */
		free(system);
		json_decref(tools);
		agent_compact_begin(a, AGENT_COMPACT_THRESHOLD, fixed);
		return;
	}
	a->request_queued = 0;
	char *script = agent_call_init(a, &call);

	sink.arg = a;
	call.script.position = (size_t)a->requests - 1;
	call.system = system;
	call.messages = a->conv.msgs;	/* the derived conversation: no walk of the log */
	call.tools = tools;
	a->req = a->rt->model->ops->start(a->rt->model, &call, &sink);
	free(script);
	free(system);
	json_decref(tools);
}

char *
agent_call_init(struct agent *a, struct model_call *call)
{
	const char *label = agent_parent(a) ? agent_label(a) : NULL;
	char *script = label ? xasprintf("label:%s", label) : xstrdup("root");

	call->agent_id = agent_id(a);
	call->parent_id = agent_parent(a);
	call->script.key = script;
	call->script.ordinal = agent_replay_ordinal(a, label);
	call->model = agent_model(a);
	call->cwd = sess_header_str(a->sess, "cwd");
	call->state_dir = a->rt->env->state_dir;
	call->script.resolve_child = agent_resolve_child;
	call->script.resolve_arg = a;
	return script;
}

void
agent_compact_finished(struct agent *a, enum agent_compact_why why, int ok, const char *error)
{
	if (why == AGENT_COMPACT_COMMAND) {
		agent_compact_done_fn *done = a->compact_done;
		void *arg = a->compact_arg;
		a->compact_done = NULL;
		a->status = AGENT_IDLE;
		if (done)
			done(arg, a, ok > 0 ? "completed" : "failed", ok > 0 ? NULL : error);
		if (a->inbox && !sess_failed(a->sess))
			agent_schedule(a);
		return;
	}
	if (ok < 0) {
		agent_fail_io(a);
		return;
	}
	if (why == AGENT_COMPACT_THRESHOLD) {
		/* Compacted or not, the request goes: the estimate may be pessimistic. */
		a->compact_tried = 1;
		agent_push_after_sync(a, agent_request);
		return;
	}
	if (ok == 0) {
		char *msg = xasprintf("the conversation is longer than the model's context window, and "
		    "compacting it failed: %s", error);
		agent_end_turn(a, "error", NULL, msg, err_tool(ERR_MODEL_CONTEXT_LENGTH));
		free(msg);
		return;
	}
	if (a->steps_this_turn >= agent_max_steps(a)) {
		agent_end_turn(a, "max-steps", NULL, NULL, NULL);
		return;
	}
	agent_step_begin(a);
	a->compact_tried = 1;		/* once: a second overflow ends the turn */
}

int
agent_compact(struct agent *a, agent_compact_done_fn *done, void *arg)
{
	char *system;
	json_t *tools;
	size_t fixed;

	if (a->status == AGENT_RUNNING || a->released)
		return -1;
	if (json_array_size(a->conv.msgs) <= (a->conv.through >= 0 ? 1u : 0u))
		return 1;
	system = agent_system_prompt(a);
	tools = agent_describe_tools(a);
	fixed = agent_request_fixed(system, tools);
	free(system);
	json_decref(tools);
	a->status = AGENT_RUNNING;
	a->compact_done = done;
	a->compact_arg = arg;
	agent_compact_begin(a, AGENT_COMPACT_COMMAND, fixed);
	return 0;
}

static void
agent_step_begin(struct agent *a)
{
	/* Steered messages join at the step boundary. */
	while (a->inbox && agent_msg_steerable(a->inbox) && a->step > 0)
		if (agent_log_message(a, agent_inbox_pop(a)) < 0) {
			agent_fail_io(a);
			return;
		}
	a->step++;
	a->steps_this_turn++;
	a->requests++;
	a->compact_tried = 0;
	a->calls = json_array();
	sess_ids_new(&a->rt->env->ids, a->msg_id);
	if (agent_log(a, "step/start", xjson_pack("{s:i, s:i}", "turn", a->turn, "step", a->step)) < 0) {
		agent_fail_io(a);
		return;
	}
	sess_checkpoint(a->sess);
	a->request_queued = 1;
	agent_push_after_sync(a, agent_request);
}

/* ---- turn end and cancel ---- */

static void
agent_end_turn(struct agent *a, const char *kind, const char *cause, const char *msg, const char *code)
{
	json_t *reason = xjson_pack("{s:s}", "kind", kind);
	char first[SESS_ID_LEN + 1];

	if (cause)
		json_object_set_new(reason, "cause", json_string(cause));
	if (msg)
		json_object_set_new(reason, "message", xjson_text(msg, strlen(msg)));
	if (!sess_failed(a->sess)) {
		if (agent_log(a, "turn/end", xjson_pack("{s:i, s:O}", "turn", a->turn, "reason", reason)) < 0)
			code = err_kind(ERR_SESSION_LOG_IO);
		sess_checkpoint(a->sess);
	} else {
		/* The client reads the cause: "No space left on device", a read-only file, ... */
		char *why = xasprintf("the session log cannot be written: %s", sess_failure(a->sess));
		code = err_kind(ERR_SESSION_LOG_IO);
		json_object_set_new(reason, "kind", json_string("error"));
		if (!msg)
			json_object_set_new(reason, "message", xjson_text(why, strlen(why)));	/* a path */
		free(why);
	}
	if (code)
		json_object_set_new(reason, "code", json_string(code));
	agent_step_reset(a);
	a->status = AGENT_IDLE;
	a->cancelling = 0;
	AGENT_EXT_EACH(a->rt, turn_end, a);
	if (a->rt->watch && agent_parent(a))
		a->rt->watch->turn_end(a->rt->watch->arg, a, reason);
	memcpy(first, a->first_msg, sizeof(first));
	if (a->hooks.turn_end)
		a->hooks.turn_end(a->hooks.arg, a, first, reason);
	json_decref(reason);
	/* An aborted turn parks the inbox: the next message wakes the agent. */
	if (strcmp(kind, "aborted") != 0 && a->inbox && !sess_failed(a->sess))
		agent_schedule(a);
}

void
agent_cancel(struct agent *a, const char *cause)
{
	if (agent_parent(a) == NULL && a->sess && strcmp(cause, "user") == 0)
		agent_ask_cancel_below(a);	/* the children's asks fail as cancelled calls */
	if (a->status != AGENT_RUNNING || a->cancelling)
		return;
	if (a->compact_why == AGENT_COMPACT_COMMAND) {
		/* A /compact outside any turn: it ends, cancelled; there is no turn to end. */
		agent_compact_done_fn *done = a->compact_done;
		void *arg = a->compact_arg;
		agent_compact_abort(a);
		a->compact_done = NULL;
		a->status = AGENT_IDLE;
		if (done)
			done(arg, a, "cancelled", NULL);
		return;
	}
	a->cancelling = 1;
	agent_compact_abort(a);		/* a summary request before the step's request */
	if (a->req) {
		a->rt->model->ops->cancel(a->rt->model, a->req);
		a->req = NULL;
		if ((a->text.len || a->reasoning.len) &&
		    agent_log(a, "assistant/message", xjson_pack("{s:i, s:i, s:s, s:o, s:s}", "turn", a->turn,
			"step", a->step, "id", a->msg_id, "content", agent_assistant_content(a, 0),
			"finish", "cancelled")) < 0)
			goto out;
		if (agent_log_step_end(a) < 0)
			goto out;
	} else if (a->request_queued) {
		/* The step began and its request had not left yet (or was held): the step still closes. */
		a->request_queued = 0;
		a->request_held = a->request_released = 0;
		if (agent_log_step_end(a) < 0)
			goto out;
	} else if (a->invs) {
		for (size_t i = 0; i < a->ninv; i++) {
			struct tool_inv *inv = a->invs[i];
			if (!inv->done && inv->asking)
				agent_ask_cancel(a, inv);
			else if (!inv->done && inv->cancel)
				inv->cancel(inv);
			if (!inv->done) {
				tool_result_clear(&inv->result);
				tool_result_error(&inv->result, ERR_CANCELLED, "the tool call was cancelled");
				inv->done = 1;
			}
		}
		while (a->ncommitted < a->ninv) {
			if (agent_commit_result(a, a->ncommitted) < 0)
				goto out;
			a->ncommitted++;
		}
		if (agent_log_step_end(a) < 0)
			goto out;
	}
out:
	agent_end_turn(a, "aborted", cause, NULL, NULL);
}

void
agent_cancel_tree(struct agent *a, const char *cause)
{
	struct agent_rt *rt = a->rt;
	char top[SESS_ID_LEN + 1];

	snprintf(top, sizeof(top), "%s", agent_id(a));
	/* by id, never by pointer: a cancel may release a one-shot child (later, from the queue) */
	for (size_t i = 0; i < rt->nall; i++) {
		struct agent *d = rt->all[i];
		if (d->released)
			continue;
		int hops = 0;
		for (struct agent *up = d; up && hops < 4096; up = agent_parent(up) ? agent_rt_get(rt, agent_parent(up)) : NULL,
		    hops++) {
			if (strcmp(agent_id(up), top) == 0) {
				agent_cancel(d, cause);
				break;
			}
		}
	}
}

const char *
agent_type_description(const struct sess_entry *en)
{
	return en && en->type_description ? en->type_description : AGENT_TYPE_GENERAL_DESCRIPTION;
}

json_t *
agent_additional_dirs(struct agent *a)
{
	struct agent *root = agent_root(a);
	struct sess *s;

	/* a child whose root is not live (a cold resume): the copy its own log got when it was made */
	s = agent_sess(root ? root : a);
	for (size_t i = s ? sess_nev(s) : 0; i-- > 0;) {
		if (sess_type_at(s, i) != SESS_EV_SESSION_ROOTS)
			continue;
		json_t *ev = sess_event_get(s, i), *dirs = NULL;
		if (ev)
			dirs = json_incref(json_object_get(json_object_get(ev, "data"), "directories"));
		json_decref(ev);
		return dirs;
	}
	return NULL;
}

const char *
agent_instructions_cut(const struct agent *a)
{
	return a->instr.cut;
}

const json_t *
agent_types_skipped(struct agent *a)
{
	return agent_types_of(a)->skipped;
}

const struct agent_types *
agent_types_of(struct agent *a)
{
	struct agent *root = agent_root(a);
	struct agent *owner = root && root->types ? root : a;

	if (owner->types == NULL) {
		const char *cwd = sess_header_str(owner->sess, "cwd");
		owner->types = agent_types_shared(a->rt->types_memo, cwd ? cwd : "/", a->rt->home, a->rt->config_home,
		    a->rt->tool_names);
	}
	return owner->types;
}

/* At a root's turn: its types again when a source directory changed (a stat each). */
static void
agent_types_refresh(struct agent *a)
{
	if (agent_parent(a) || a->types == NULL || !agent_types_stale(a->types))
		return;
	agent_types_unref(a->types);
	a->types = NULL;
	agent_types_of(a);
}

const char *
agent_type_name(const struct agent *a)
{
	return a->comp.type ? a->comp.type : "general";
}

int
agent_isolated(const struct agent *a)
{
	return a->comp.wt != NULL;
}

int
agent_in_worktrees(const struct agent *a)
{
	const char *cwd = a->sess ? sess_header_str(a->sess, "cwd") : NULL;
	const char *state = a->rt->env->state_dir;
	size_t n = strlen(state);

	return cwd && strncmp(cwd, state, n) == 0 && strncmp(cwd + n, "/worktrees/", 11) == 0;
}

struct agent *
agent_worktree_owner(struct agent *a)
{
	for (int hops = 0; a && hops < 4096; hops++) {
		if (a->comp.wt)
			return a;
		a = agent_parent(a) ? agent_rt_get(a->rt, agent_parent(a)) : NULL;
	}
	return NULL;
}

int
agent_max_steps(const struct agent *a)
{
	return a->comp.max_steps > 0 ? a->comp.max_steps : a->rt->max_steps;
}

void
agent_release(struct agent *a)
{
	if (a->released)
		return;
	agent_cancel(a, "disposed");
	a->released = 1;
	agent_inbox_free(a);
	map_del(&a->rt->agents, agent_id(a));
	char id[SESS_ID_LEN + 1];
	memcpy(id, agent_id(a), sizeof(id));
	AGENT_EXT_EACH(a->rt, release, a);	/* it still has its session */
	if (a->rt->watch && agent_parent(a))
		a->rt->watch->released(a->rt->watch->arg, a);
	sess_unobserve(a->sess, agent_corpus_observer, a);
	sess_store_release(a->rt->store, a->sess);
	a->sess = NULL;
	sess_corpus_note_released(a->rt->corpus, id);
	agent_reap_later(a);
}
