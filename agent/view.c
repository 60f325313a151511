/* Messages between agents, logged as each session sees them (agent/view.h). */
#include "agent/view.h"

#include <stdio.h>

#include "agent/agent_def.h"
#include "base/log.h"
#include "base/xjson.h"
#include "session/store.h"

/* The id the next view logged on s gets. */
static void
view_next_id(struct sess *s, char id[AGENT_VIEW_ID_LEN])
{
	snprintf(id, AGENT_VIEW_ID_LEN, "msg-%zu", sess_views(s) + 1);
}

/* Logs one view on s: {messageId, senderSessionId, recipientSessionId, <peer_key>?, content}.
 * 0, or -1 (warned; nothing more of this delivery should name the view). */
static int
view_log(struct sess *s, const char *id, const char *from, const char *to, const char *peer_key,
    const char *peer_id, const json_t *content)
{
	json_t *data = xjson_pack("{s:s, s:s}", "messageId", id, "senderSessionId", from);
	struct err e;

	if (to)
		json_object_set_new(data, "recipientSessionId", json_string(to));
	if (peer_key && peer_id && *peer_id)
		json_object_set_new(data, peer_key, json_string(peer_id));
	json_object_set_new(data, "content", json_deep_copy(content));
	err_clear(&e);
	if (sess_append(s, "message/view", data, &e) == NULL) {
		log_warn("agent %s: the view %s of a message is not logged: %s", sess_id(s), id, e.msg);
		return -1;
	}
	return 0;
}

void
agent_view_pair(struct agent *from, struct agent *to, const json_t *content)
{
	char out[AGENT_VIEW_ID_LEN], in[AGENT_VIEW_ID_LEN];

	if (from->sess == NULL || to->sess == NULL)
		return;
	view_next_id(from->sess, out);
	view_next_id(to->sess, in);
	/* Both ids are taken before either is logged; nothing runs between the two appends. */
	if (view_log(from->sess, out, agent_id(from), agent_id(to), "recipientMessageId", in, content) < 0)
		out[0] = '\0';
	view_log(to->sess, in, agent_id(from), agent_id(to), "senderMessageId", out, content);
}

void
agent_view_out(struct agent *from, const char *to_id, const json_t *content, char id_out[AGENT_VIEW_ID_LEN])
{
	char id[AGENT_VIEW_ID_LEN] = "";

	if (from->sess) {
		view_next_id(from->sess, id);
		if (view_log(from->sess, id, agent_id(from), to_id, NULL, NULL, content) < 0)
			id[0] = '\0';
	}
	if (id_out)
		snprintf(id_out, AGENT_VIEW_ID_LEN, "%s", id);
}

void
agent_view_in(struct agent *to, const char *from_id, const char *from_msg, const json_t *content)
{
	char id[AGENT_VIEW_ID_LEN];

	if (to->sess == NULL || from_id == NULL)
		return;
	view_next_id(to->sess, id);
	view_log(to->sess, id, from_id, agent_id(to), "senderMessageId", from_msg, content);
}
