/*
 * The prompt flow: session/prompt and session/cancel, the hooks a root agent calls (deltas,
 * progress, turn ends), and the held session/prompt responses that leave after the sync.
 */
#include "acp/server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acp/commands.h"
#include "acp/images.h"
#include "acp/internal.h"
#include "acp/rpc.h"
#include "acp/updates.h"
#include "agent/turnend.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "session/entry.h"
#include "session/evtype.h"

void
acp_hook_delta(void *arg, struct agent *a, int reasoning, const char *msg_id, const char *s, size_t n)
{
	struct acp_session *as = arg;

	(void)a;
	acp_send_update(as->srv, as->id, acp_update_chunk(reasoning, msg_id, s, n));
}

void
acp_hook_tool_progress(void *arg, struct agent *a, const char *call_id, const char *child_id,
    const char *text)
{
	struct acp_session *as = arg;
	char *tcid;

	/* A client that shows children as sessions sees the child's own stream instead. */
	if (child_id && as->srv->client_subagents)
		return;
	tcid = acp_tool_call_id(agent_turn(a), agent_step(a), call_id);	/* the call is in a's current step */
	const struct tool_inv *inv = agent_find_call(a, call_id);
	/* content replaces: what the call showed first (bash's command) stays above its output */
	acp_send_update(as->srv, as->id, acp_update_progress(tcid, child_id, text, inv ? inv->plan.content : NULL));
	free(tcid);
}

void
acp_hook_usage(void *arg, struct agent *a, long long used)
{
	struct acp_session *as = arg;

	acp_send_update(as->srv, as->id, acp_update_usage(used, agent_rt_of(a)->context_window));
}

void
acp_hook_compaction(void *arg, struct agent *a, const char *id, const char *status, const char *text)
{
	struct acp_session *as = arg;
	int failed = strcmp(status, "failed") == 0;

	(void)a;
	if (as->srv->client_compaction) {
		acp_send_update(as->srv, as->id, acp_update_compaction(id, status,
		    strcmp(status, "completed") == 0 ? text : NULL, failed ? text : NULL));
	} else if (strcmp(status, "in_progress") == 0) {
		char mid[SESS_ID_LEN + 1];
		sess_ids_new(&as->srv->env.ids, mid);
		acp_send_update(as->srv, as->id, acp_update_chunk(1, mid, ACP_COMPACTING,
		    strlen(ACP_COMPACTING)));
	}
}

/* By id: the session may be closed and reaped, or opened again, before it runs. */
struct acp_reply_task {
	struct acp_server *srv;
	char sid[SESS_ID_LEN + 1];
	json_t *reply;
};

/* Sends a held session/prompt response (after the sync) and starts a queued prompt. */
static void
acp_reply_task_run(void *arg)
{
	struct acp_reply_task *t = arg;
	struct acp_session *as = map_get(&t->srv->sessions, t->sid);

	if (as && as->replays) {
		/* The turn's updates are held behind a replay: so is its answer, and what it queued. */
		acp_hold(as, t->reply);
		free(t);
		return;
	}
	acp_send(t->srv, t->reply);
	free(t);
	if (as)
		acp_gate_after_cancelled(as);
}

static json_t *
acp_prompt_reply(const json_t *id, const json_t *reason)
{
	const char *stop = turn_end_of(json_string_value(json_object_get(reason, "kind")))->stop_reason;

	if (stop == NULL) {
		const char *msg = json_string_value(json_object_get(reason, "message"));
		const char *code = json_string_value(json_object_get(reason, "code"));
		char *details = xasprintf("turn failed: %s", msg ? msg : "unknown error");
		json_t *r = acp_error_new(id, code && strcmp(code, err_kind(ERR_SESSION_LOG_IO)) == 0 ?
		    ERR_SESSION_LOG_IO : ERR_TURN_FAILED, details, NULL);
		free(details);
		return r;
	}
	return acp_result_new(id, xjson_pack("{s:s}", "stopReason", stop));
}

void
acp_prompt_answer_after_sync(struct acp_session *as, json_t *reply)
{
	struct acp_reply_task *t = xmalloc(sizeof(*t));

	t->srv = as->srv;
	memcpy(t->sid, as->id, sizeof(t->sid));
	t->reply = reply;
	runq_push_after_sync(&as->srv->runq, acp_reply_task_run, t);
}

void
acp_hook_turn_end(void *arg, struct agent *a, const char *first_msg, const json_t *reason)
{
	struct acp_session *as = arg;
	struct acp_reply_task *t;

	(void)a;
	if (as->prompt_id == NULL || as->prompt_msg[0] == '\0' || strcmp(first_msg, as->prompt_msg) != 0)
		return;		/* a turn the runtime started on its own */
	t = xmalloc(sizeof(*t));
	t->srv = as->srv;
	memcpy(t->sid, as->id, sizeof(t->sid));
	/* A cancelled prompt is cancelled, whatever the turn's last state was. */
	if (as->cancelled)
		t->reply = acp_result_new(as->prompt_id, xjson_pack("{s:s}", "stopReason", "cancelled"));
	else
		t->reply = acp_prompt_reply(as->prompt_id, reason);
	json_decref(as->prompt_id);
	as->prompt_id = NULL;
	as->cancelled = 0;
	runq_push_after_sync(&as->srv->runq, acp_reply_task_run, t);
}

void
acp_send_event_update(struct acp_server *srv, const char *sid, struct agent *a, const json_t *ev)
{
	struct acp_replay *r = &srv->live;
	const struct tool_inv *inv = NULL;

	snprintf(r->sid, sizeof(r->sid), "%s", sid);	/* its plan's id */
	if (!acp_update_live(r, ev))
		return;
	/* A call of ours in flight: its checks said whether it asks first, and what it shows. */
	if (a && sess_ev_of(json_string_value(json_object_get(ev, "type"))) == SESS_EV_TOOL_CALL)
		inv = agent_find_call(a, json_string_value(json_object_get(json_object_get(ev, "data"), "callId")));
	if (inv && (inv->asking || inv->plan.locations || inv->plan.content)) {
		json_t *u = json_loadb(r->out.data, r->out.len, JSON_ALLOW_NUL, NULL);
		if (u == NULL)
			return;		/* cannot be: the bytes are jenc's */
		if (inv->asking)
			json_object_set_new(u, "status", json_string("pending"));
		if (inv->plan.locations)
			json_object_set(u, "locations", inv->plan.locations);
		if (inv->plan.content)
			json_object_set(u, "content", inv->plan.content);
		acp_send_update(srv, sid, u);
		return;
	}
	acp_send_update_raw(srv, sid, r->out.data, r->out.len);
}

/* The first prompt of a person's in a root session names it (docs/contract.md §27): its title, as
 * session/list shows it, and the time. */
static void
acp_title_update(struct acp_session *as, const json_t *ev)
{
	const json_t *data = json_object_get(ev, "data");
	const char *kind = json_string_value(json_object_get(json_object_get(data, "source"), "kind"));
	const char *text = json_string_value(json_object_get(json_array_get(json_object_get(data, "content"), 0), "text"));
	char iso[32], *title;

	if (kind == NULL || strcmp(kind, "user") != 0 || text == NULL)
		return;
	as->titled = 1;
	title = sess_title_from_text(text);
	clock_iso8601(json_integer_value(json_object_get(ev, "time")), iso, sizeof(iso));
	acp_send_update(as->srv, as->id, xjson_pack("{s:s, s:s, s:s}", "sessionUpdate", "session_info_update", "title",
	    title, "updatedAt", iso));
	free(title);
}

void
acp_observe_event(void *arg, struct sess *s, const json_t *ev)
{
	struct acp_session *as = arg;

	(void)s;
	acp_send_event_update(as->srv, as->id, as->agent, ev);
	if (!as->titled && sess_ev_of(json_string_value(json_object_get(ev, "type"))) == SESS_EV_USER_MESSAGE)
		acp_title_update(as, ev);
}

/* A /compact ends (agent_compact's done): a line for the person, then the prompt's answer. */
static void
acp_compact_done(void *arg, struct agent *a, const char *status, const char *error)
{
	struct acp_session *as = arg;
	struct acp_reply_task *t;
	char *text = NULL;

	(void)a;
	if (as->prompt_id == NULL)
		return;
	if (strcmp(status, "completed") == 0)
		text = xstrdup(ACP_COMPACT_DONE);
	else if (strcmp(status, "failed") == 0)
		text = xasprintf(ACP_COMPACT_FAILED, error ? error : "unknown error");
	if (text) {
		char mid[SESS_ID_LEN + 1];
		sess_ids_new(&as->srv->env.ids, mid);
		acp_send_update(as->srv, as->id, acp_update_chunk(0, mid, text, strlen(text)));
		free(text);
	}
	t = xmalloc(sizeof(*t));
	t->srv = as->srv;
	memcpy(t->sid, as->id, sizeof(t->sid));
	t->reply = acp_result_new(as->prompt_id, xjson_pack("{s:s}", "stopReason",
	    as->cancelled || strcmp(status, "cancelled") == 0 ? "cancelled" : "end_turn"));
	json_decref(as->prompt_id);
	as->prompt_id = NULL;
	as->cancelled = 0;
	runq_push_after_sync(&as->srv->runq, acp_reply_task_run, t);
}

/* Checks a prompt's content blocks; returns an error text or NULL. */
static const char *
acp_check_prompt(const json_t *prompt, char *buf, size_t size)
{
	size_t i;
	json_t *blk;

	if (!json_is_array(prompt))
		return "prompt: expected an array of content blocks";
	json_array_foreach(prompt, i, blk) {
		const char *type = json_string_value(json_object_get(blk, "type"));
		if (type == NULL) {
			snprintf(buf, size, "prompt[%zu]: expected a content block with a type", i);
			return buf;
		}
		if (strcmp(type, "text") == 0) {
			if (!json_is_string(json_object_get(blk, "text"))) {
				snprintf(buf, size, "prompt[%zu].text: expected a string", i);
				return buf;
			}
		} else if (strcmp(type, "resource") == 0) {
			if (!json_is_object(json_object_get(blk, "resource"))) {
				snprintf(buf, size, "prompt[%zu].resource: expected an object", i);
				return buf;
			}
		} else if (strcmp(type, "resource_link") == 0) {
			if (!json_is_string(json_object_get(blk, "uri"))) {
				snprintf(buf, size, "prompt[%zu].uri: expected a string", i);
				return buf;
			}
		} else if (strcmp(type, "image") == 0) {
			if (!acp_image_check(blk, i, buf, size))
				return buf;
		} else {
			snprintf(buf, size, "prompt[%zu]: content type \"%.20s\" is not supported", i, type);
			return buf;
		}
	}
	return NULL;
}

/* Posts a prompt to the session's agent; steals id and prompt. */
void
acp_prompt_start(struct acp_session *as, json_t *id, json_t *prompt)
{
	as->prompt_id = id;
	as->cancelled = 0;
	agent_post(as->agent, prompt, xjson_pack("{s:s}", "kind", "user"), as->prompt_msg);
}

void
acp_client_notice(void *self, const char *sid, const char *title, const char *description)
{
	struct acp_server *srv = self;
	struct acp_session *as = map_get(&srv->sessions, sid);
	char mid[SESS_ID_LEN + 1];
	char *line;

	if (as == NULL || as->agent == NULL)
		return;
	if (srv->client_notices) {
		acp_send_update(srv, as->id, acp_update_notice("warning", title, description));
		return;
	}
	line = description ? xasprintf("%s: %s", title, description) : xstrdup(title);
	sess_ids_new(&srv->env.ids, mid);
	acp_send_update(srv, as->id, acp_update_chunk(0, mid, line, strlen(line)));
	free(line);
}

/* Runs a checked prompt on an idle session: a slash command answers now, else a turn starts. */
json_t *
acp_prompt_begin(struct acp_session *as, json_t *id, const json_t *prompt)
{
	struct acp_server *srv = as->srv;

	if (acp_commands_match(prompt) && acp_commands_is_compact(acp_commands_match(prompt))) {
		const char *busy = NULL;
		switch (agent_compact(as->agent, acp_compact_done, as)) {
		case 0:
			as->prompt_id = json_incref(id ? id : json_null());
			as->prompt_msg[0] = '\0';	/* no turn: acp_compact_done answers it */
			as->cancelled = 0;
			return NULL;
		case 1:
			busy = ACP_COMPACT_NOTHING;
			break;
		default:
			busy = ACP_COMPACT_BUSY;
			break;
		}
		char mid[SESS_ID_LEN + 1];
		sess_ids_new(&srv->env.ids, mid);
		acp_send_update(srv, as->id, acp_update_chunk(0, mid, busy, strlen(busy)));
		return acp_result_new(id, xjson_pack("{s:s}", "stopReason", "end_turn"));
	}
	if (acp_commands_match(prompt)) {
		char *text = acp_commands_run(as, acp_commands_match(prompt));
		char mid[SESS_ID_LEN + 1];
		sess_ids_new(&srv->env.ids, mid);
		acp_send_update(srv, as->id, acp_update_chunk(0, mid, text, strlen(text)));
		free(text);
		return acp_result_new(id, xjson_pack("{s:s}", "stopReason", "end_turn"));
	}
	acp_prompt_start(as, json_incref(id ? id : json_null()), json_deep_copy(prompt));
	return NULL;		/* answered when its turn ends */
}

json_t *
acp_m_session_prompt(struct acp_server *srv, struct acp_msg *m)
{
	json_t *reply = NULL, *prompt = json_object_get(m->params, "prompt");
	struct acp_session *as = acp_live_session(srv, m, &reply);
	struct acp_image *imgs;
	size_t nimgs;
	char buf[160];
	const char *bad;
	struct err e;

	if (as == NULL)
		return reply;
	if ((bad = acp_check_prompt(prompt, buf, sizeof(buf))) != NULL)
		return acp_invalid_params(m->id, bad);
	if (acp_commands_match(prompt) && acp_has_nul(json_object_get(json_array_get(prompt, 0), "text")))
		return acp_invalid_params(m->id, "prompt: a slash command must not contain \\u0000");
	if ((as->prompt_id && !as->cancelled) || as->parked.why != ACP_WAIT_NONE)
		return acp_invalid_params(m->id, "a prompt is already in flight for this session");
	/* Images are stored off the loop. A long line from stdin goes with them, whole (the reader's
	 * buffer, taken): a large image is decoded where it lies in it, on the worker. */
	char *line = acp_images_spanned(prompt, &m->spans) ? acp_take_line(srv, m) : NULL;
	err_clear(&e);
	if (acp_images_decode(prompt, &m->spans, line != NULL, &imgs, &nimgs, &e) < 0) {
		free(line);
		return acp_error_new(m->id, e.code, e.msg, NULL);
	}
	if (nimgs > 0)
		return acp_store_start(as, m->id, prompt, imgs, nimgs, line);
	free(line);
	return acp_prompt_run(as, m->id, prompt);
}

json_t *
acp_prompt_run(struct acp_session *as, json_t *id, const json_t *prompt)
{
	if (as->replays && as->prompt_id == NULL) {
		/* The session is being loaded: the prompt runs once the replay and its response are out. */
		if (acp_gate_park_prompt(as, ACP_WAIT_REPLAY, id, prompt) < 0)
			return acp_invalid_params(id, "a prompt is already in flight for this session");
		return NULL;
	}
	if (as->prompt_id) {
		if (as->cancelled && acp_gate_park_prompt(as, ACP_WAIT_CANCEL, id, prompt) == 0)
			return NULL;
		return acp_invalid_params(id, "a prompt is already in flight for this session");
	}
	return acp_prompt_begin(as, id, prompt);
}

json_t *
acp_m_session_cancel(struct acp_server *srv, struct acp_msg *m)
{
	const char *sid = json_string_value(json_object_get(m->params, "sessionId"));
	struct acp_session *as = sid ? map_get(&srv->sessions, sid) : NULL;

	if (acp_has_nul(json_object_get(m->params, "sessionId"))) {
		/* A notification gets no answer: a sessionId cut at its NUL must not cancel another. */
		log_warn("acp: session/cancel with \\u0000 in its sessionId ignored");
		return NULL;
	}
	if (as && as->agent) {
		acp_gate_drop_prompt(as, ACP_WAIT_REPLAY);
		acp_gate_drop_prompt(as, ACP_WAIT_STORE);	/* answered now; its images stay stored */
		acp_session_cancel(as);
	} else if (sid == NULL || !acp_child_cancel(srv, sid))
		log_info("acp: session/cancel for unknown session ignored");
	return NULL;
}
