/*
 * Dispatch (docs/architecture.md, "ACP"): a line read from the client is classified (acp/rpc.c),
 * passes the ordering gate (acp/gate.c: dispatched now, or parked until what it waits for is
 * there), and a request or notification goes to its method; responses go to acp/outbound.c.
 * Parked lines come back through here when the gate releases them.
 */
#include <string.h>

#include "acp/internal.h"
#include "acp/rpc.h"
#include "base/log.h"
#include "base/xjson.h"

typedef json_t *acp_handler(struct acp_server *srv, struct acp_msg *m);

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
	{ "session/delete", acp_m_session_delete, 0 },
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


/*
 * A request or notification about a session being loaded waits for the load (1), or a close
 * cancels it (1, answered); else 0.
 */
static int
acp_dispatch_load_gate(struct acp_server *srv, struct acp_msg *m, const char *line, size_t len)
{
	json_t *jsid = json_object_get(m->params, "sessionId");
	struct acp_load *l;

	if (!json_is_string(jsid) || acp_has_nul(jsid) || (l = acp_load_find(srv, json_string_value(jsid))) == NULL)
		return 0;
	return acp_load_hold(l, m, line, len);
}

void
acp_dispatch(struct acp_server *srv, const char *line, size_t len)
{
	if (srv->shutting_down)
		return;
	if (!acp_gate_admit(srv, line, len))
		acp_dispatch_now(srv, line, len);
	/* After the first answer (initialize's) is written: the index is built from now on. */
	sess_corpus_kick(&srv->corpus);
}

void
acp_dispatch_now(struct acp_server *srv, const char *line, size_t len)
{
	struct acp_msg m;
	json_t *reply = NULL;
	const struct acp_method *meth;
	enum acp_kind kind;

	if (srv->shutting_down)
		return;
	kind = acp_classify(line, len, &m, &reply);
	if ((kind == ACP_MSG_REQUEST || kind == ACP_MSG_NOTIFICATION) && srv->loads && srv->initialized &&
	    acp_dispatch_load_gate(srv, &m, line, len)) {
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
