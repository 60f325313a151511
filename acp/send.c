/*
 * Everything the server sends goes out here (docs/architecture.md, "ACP"): whole messages, the
 * session/update notifications (from a tree, or from bytes a replay wrote), the messages a
 * session's replay holds back, and the common error replies. With --record each message is
 * recorded as it leaves.
 */
#include <string.h>

#include "acp/internal.h"
#include "acp/rpc.h"
#include "base/jenc.h"
#include "base/xjson.h"

void
acp_send(struct acp_server *srv, json_t *msg)
{
	if (srv->rec)
		record_agent_msg(srv->rec, msg);
	wq_push(&srv->wq, msg);
	json_decref(msg);
}

/* A session/update notification; steals update. */
json_t *
acp_update_msg(const char *sid, json_t *update)
{
	return acp_notification_new("session/update", xjson_pack("{s:s, s:o}", "sessionId", sid, "update", update));
}

void
acp_update_prefix(struct buf *b, const char *sid)
{
	buf_puts(b, "{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":");
	jenc_string(b, sid, strlen(sid));
	buf_puts(b, ",\"update\":");
}

void
acp_send_update_bytes(struct acp_server *srv, const struct buf *prefix, const char *sid, const char *s, size_t n)
{
	if (srv->rec) {
		json_t *u = json_loadb(s, n, JSON_ALLOW_NUL, NULL);
		if (u)
			acp_send(srv, acp_update_msg(sid, u));
		return;
	}
	wq_push_bytes(&srv->wq, prefix->data, prefix->len, s, n, "}}", 2);
}

/* A message about a session that is being replayed waits until the replay is out (steals msg). */
void
acp_hold(struct acp_session *as, json_t *msg)
{
	if (as->held == NULL)
		as->held = json_array();
	json_array_append_new(as->held, msg);
}

int
acp_hold_withdraw(struct acp_server *srv, const json_t *id)
{
	size_t pos = 0;
	const char *key;
	void *v;

	if (!json_is_integer(id))
		return 0;
	while (map_next(&srv->sessions, &pos, &key, &v)) {
		struct acp_session *as = v;
		size_t i;
		json_t *msg;
		json_array_foreach(as->held, i, msg) {
			if (json_object_get(msg, "method") && json_equal(json_object_get(msg, "id"), id)) {
				json_array_remove(as->held, i);
				return 1;
			}
		}
	}
	return 0;
}

/* The session whose replay in flight holds what is sent on sid: sid's own, or for a child shown as
 * a session, its root's (its announcement waits there, so nothing of it may pass it); or NULL. */
struct acp_session *
acp_root_session(struct acp_server *srv, const char *sid)
{
	struct acp_session *as = map_get(&srv->sessions, sid);
	struct agent *a;

	if (as == NULL && (a = agent_rt_get(&srv->rt, sid)) != NULL) {
		for (int hops = 0; a && agent_parent(a) && hops < 4096; hops++)
			a = agent_rt_get(&srv->rt, agent_parent(a));
		as = a ? map_get(&srv->sessions, agent_id(a)) : NULL;
	}
	return as;
}

struct acp_session *
acp_held_by(struct acp_server *srv, const char *sid)
{
	struct acp_session *as = srv->client_subagents ? acp_root_session(srv, sid) : map_get(&srv->sessions, sid);

	return as && as->replays ? as : NULL;
}

void
acp_send_update(struct acp_server *srv, const char *sid, json_t *update)
{
	struct acp_session *as = acp_held_by(srv, sid);
	json_t *msg = acp_update_msg(sid, update);

	if (as)
		acp_hold(as, msg);
	else
		acp_send(srv, msg);
}

void
acp_send_update_raw(struct acp_server *srv, const char *sid, const char *s, size_t n)
{
	if (acp_held_by(srv, sid)) {	/* held until the replay is out, as a tree */
		json_t *u = json_loadb(s, n, JSON_ALLOW_NUL, NULL);
		if (u)
			acp_send_update(srv, sid, u);
		return;
	}
	srv->prefix.len = 0;
	acp_update_prefix(&srv->prefix, sid);
	acp_send_update_bytes(srv, &srv->prefix, sid, s, n);
}

json_t *
acp_invalid_params(const json_t *id, const char *details)
{
	return acp_error_new(id, ERR_INVALID_PARAMS, details, NULL);
}

json_t *
acp_unknown_session(const json_t *id, const char *sid)
{
	return acp_error_new(id, ERR_UNKNOWN_SESSION, "unknown session",
	    xjson_pack("{s:s}", "sessionId", sid));
}

/* An error from the session layer as a JSON-RPC error. */
json_t *
acp_session_error(const json_t *id, const char *sid, const struct err *e)
{
	if (e->code == ERR_UNKNOWN_SESSION)
		return acp_unknown_session(id, sid);
	if (e->code == ERR_INVALID_PARAMS)
		return acp_invalid_params(id, e->msg);
	return acp_error_new(id, e->code ? e->code : ERR_INTERNAL, e->msg,
	    xjson_pack("{s:s}", "sessionId", sid));
}
