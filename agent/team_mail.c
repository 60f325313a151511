/* The Team's mailbox (docs/contract.md §9.4): queued in the Lead's log, delivered in order, acknowledged. */
#include "agent/agent_def.h"
#include "agent/team.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/subagent.h"
#include "agent/team_int.h"
#include "agent/view.h"
#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

static size_t
team_pending_for(struct team *t, const char *target)
{
	size_t n = 0, i;
	json_t *m;

	json_array_foreach(t->queued, i, m) n += strcmp(json_string_value(json_object_get(m, "targetName")), target) == 0;
	return n;
}

/* The session of the member called name ("lead": the Lead's), or NULL while it has none. */
static const char *
team_session_of(struct team *t, const char *name)
{
	struct team_member *m;

	if (name == NULL)
		return NULL;
	if (strcmp(name, "lead") == 0)
		return agent_id(t->lead);
	m = team_member(t, name);
	return m ? m->id : NULL;
}

/* The live agent a message for target goes to, resuming a stored teammate; NULL when not now. */
static struct agent *
team_target_agent(struct team *t, const char *target)
{
	struct team_member *m;
	struct agent *a;
	struct err e;

	if (strcmp(target, "lead") == 0)
		return t->lead;
	m = team_member(t, target);
	if (m == NULL || m->phase != TEAM_ACTIVE || m->id == NULL)
		return NULL;
	a = agent_rt_get(t->lead->rt, m->id);
	if (a)
		return a;
	err_clear(&e);
	a = subagent_resume(t->lead, m->id, &e);
	if (a == NULL)
		log_info("team: %s cannot be resumed now: %s", target, e.msg);
	return a;
}

/* Delivers queued messages in order; a target whose first message cannot go waits, the rest go on. */
void
team_pump(struct team *t)
{
	json_t *blocked = json_object();

	for (size_t i = 0; i < json_array_size(t->queued);) {
		json_t *m = json_array_get(t->queued, i);
		const char *target = json_string_value(json_object_get(m, "targetName"));
		struct agent *a = json_object_get(blocked, target) ? NULL : team_target_agent(t, target);
		if (a == NULL) {
			json_object_set_new(blocked, target, json_true());
			i++;
			continue;
		}
		char *head = xasprintf("Team message %s from %s:", json_string_value(json_object_get(m, "id")),
		    json_string_value(json_object_get(m, "senderName")));
		agent_post(a, xjson_pack("[{s:s, s:s}, {s:s, s:O}]", "type", "text", "text", head, "type", "text",
		    "text", json_object_get(m, "content")), xjson_pack("{s:s, s:O, s:O}", "kind", "team-message",
		    "messageId", json_object_get(m, "id"), "senderName", json_object_get(m, "senderName")), NULL);
		free(head);
		json_t *view = xjson_pack("[{s:s, s:O}]", "type", "text", "text", json_object_get(m, "content"));
		agent_view_in(a, team_session_of(t, json_string_value(json_object_get(m, "senderName"))),
		    json_string_value(json_object_get(m, "senderMessageId")), view);
		json_decref(view);
		subagent_note_delivered(a);
		team_write(t, "team/message/delivered", xjson_pack("{s:i, s:O, s:s}", "version", 1, "messageId",
		    json_object_get(m, "id"), "targetName", target), NULL);
		json_array_remove(t->queued, i);
	}
	json_decref(blocked);
}

json_t *
team_send(struct agent *caller, const char *target, const char *message, struct err *e)
{
	struct team *t = team_of(caller);
	const char *sender = team_caller_name(caller);
	struct team_member *m;
	char id[32];

	if (t == NULL || sender == NULL) {
		err_set(e, ERR_TEAM_MEMBER_NOT_FOUND, "this agent is not a member of a live team");
		return NULL;
	}
	if (strcmp(target, sender) == 0) {
		err_set(e, ERR_TEAM_SELF_MESSAGE, "a member cannot send a message to itself");
		return NULL;
	}
	m = strcmp(target, "lead") == 0 ? NULL : team_member(t, target);
	if (strcmp(target, "lead") != 0 && (m == NULL || m->phase == TEAM_FAILED)) {
		err_set(e, ERR_TEAM_MEMBER_NOT_FOUND, "no team member is called \"%.64s\"", target);
		return NULL;
	}
	if (strlen(message) > TEAM_MAX_MESSAGE) {
		err_set(e, ERR_TEAM_MESSAGE_TOO_LARGE, "the message is %zu bytes; the limit is %d", strlen(message),
		    TEAM_MAX_MESSAGE);
		return NULL;
	}
	if (team_pending_for(t, target) >= TEAM_MAX_PENDING) {
		err_set(e, ERR_TEAM_MAILBOX_FULL, "\"%s\" already has %d undelivered messages", target, TEAM_MAX_PENDING);
		return NULL;
	}
	snprintf(id, sizeof(id), "msg-%d", ++t->next_msg);
	json_t *msg = xjson_pack("{s:s, s:s, s:s, s:s}", "id", id, "senderName", sender, "targetName", target,
	    "content", message);
	/* The sender's view, then the queued message naming it; the target's view, when delivered
	 * (team_pump), names it too. In this order a crash between the two leaves a view of a message
	 * never queued, never a queued message naming an id a later view takes (docs/decisions.md). */
	char view_id[AGENT_VIEW_ID_LEN];
	json_t *view = xjson_pack("[{s:s, s:s}]", "type", "text", "text", message);
	agent_view_out(caller, team_session_of(t, target), view, view_id);
	json_decref(view);
	if (view_id[0])
		json_object_set_new(msg, "senderMessageId", json_string(view_id));
	if (team_write(t, "team/message/queued", xjson_pack("{s:i, s:O}", "version", 1, "message", msg), e) < 0) {
		json_decref(msg);
		return NULL;
	}
	json_array_append_new(t->queued, msg);
	team_pump(t);
	int still = 0;
	size_t i;
	json_t *q;
	json_array_foreach(t->queued, i, q) still |= strcmp(json_string_value(json_object_get(q, "id")), id) == 0;
	team_changed(t);
	return xjson_pack("{s:s, s:s}", "messageId", id, "status", still ? "queued" : "accepted");
}

/*
 * Queued mail retried once a teammate's release has freed a slot: right after the task that
 * released it, from the run queue, so a resume loads from disk outside that release.
 */
void
team_pump_task(void *arg)
{
	struct agent *lead = arg;
	struct team *t;

	agent_unpin(lead);
	if (lead->released || lead->rt->shutting_down || (t = team_of_lead(lead)) == NULL)
		return;
	if (json_array_size(t->queued))
		team_pump(t);
}
