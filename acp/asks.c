/*
 * Permission asks on the wire (docs/contract.md §17.3, §17.4, §20.1): session/request_permission on the
 * root's ACP session, a child's call announced there first as "<child id>/<call id>", and the
 * asked call's status updates. The policy and the answer's meaning are agent/ask.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "acp/internal.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

/* The live root agent above a, or NULL. */
static struct agent *
acp_ask_root(struct agent *a)
{
	for (int hops = 0; a && agent_parent(a) && hops < 4096; hops++)
		a = agent_rt_get(agent_rt_of(a), agent_parent(a));
	return a && agent_parent(a) == NULL ? a : NULL;
}

/* Whether inv's agent is a child the client shows as a session of its own (docs/contract.md §22.2):
 * its asks go on its session, with its own toolCallId, as a root's do on the root's. */
static int
acp_ask_on_child(const struct acp_server *srv, const struct tool_inv *inv)
{
	return srv->client_subagents && agent_parent(inv->agent) != NULL;
}

/* The toolCallId inv shows under on its root's session (or its own); owned. */
static char *
acp_ask_call_id(const struct acp_server *srv, const struct tool_inv *inv)
{
	struct agent *a = inv->agent;

	if (agent_parent(a) && !acp_ask_on_child(srv, inv))
		return xasprintf("%s/%s", agent_id(a), inv->call_id);
	return acp_tool_call_id(agent_turn(a), agent_step(a), inv->call_id);
}

/* {toolCallId, title, kind, status: "pending", rawInput, locations?, content?, _meta?}: new ref. */
static json_t *
acp_ask_tool_call(struct acp_server *srv, const struct tool_inv *inv)
{
	struct agent *a = inv->agent;
	char *tcid = acp_ask_call_id(srv, inv);
	char *title = inv->tool->title ? inv->tool->title(inv->tool, inv->args) : xstrdup(inv->tool->name);
	int flat = agent_parent(a) && !acp_ask_on_child(srv, inv);
	json_t *tc;

	if (flat) {
		struct sess_entry *en = map_get(&srv->corpus.by_id, agent_id(a));
		char *t = xasprintf("[%s] %s", en && en->label ? en->label : agent_id(a), title);
		free(title);
		title = t;
	}
	tc = xjson_pack("{s:s, s:o, s:s, s:s, s:O}", "toolCallId", tcid, "title", xjson_text(title, strlen(title)),
	    "kind", inv->tool->kind ? inv->tool->kind : "other", "status", "pending", "rawInput",
	    inv->args ? inv->args : json_null());
	if (inv->plan.locations)
		json_object_set(tc, "locations", inv->plan.locations);
	if (inv->plan.content)
		json_object_set(tc, "content", inv->plan.content);
	if (flat)
		json_object_set_new(tc, "_meta", xjson_pack("{s:{s:s}}", "acpAgent", "agentId", agent_id(a)));
	free(tcid);
	free(title);
	return tc;
}

long
acp_ask(void *self, struct tool_inv *inv, json_t *options, agent_client_done *done, void *arg, struct err *e)
{
	struct acp_server *srv = self;
	struct agent *root = acp_ask_root(inv->agent);
	struct acp_session *as = root ? map_get(&srv->sessions, agent_id(root)) : NULL;
	json_t *tc;

	if (as == NULL || as->agent == NULL || srv->shutting_down) {
		json_decref(options);
		err_set(e, ERR_CLIENT_ERROR, "the root session of %s is not open in the editor", agent_id(inv->agent));
		return 0;
	}
	tc = acp_ask_tool_call(srv, inv);
	if (acp_ask_on_child(srv, inv))	/* on the child's own session, where its tool/call went out pending */
		return acp_child_ask(srv, inv->agent, xjson_pack("{s:s, s:o, s:o}", "sessionId", agent_id(inv->agent),
		    "toolCall", tc, "options", options), done, arg);
	/* A root's own call was announced pending by its tool/call; a child's shows here first. */
	if (agent_parent(inv->agent)) {
		json_t *u = json_deep_copy(tc);
		json_object_set_new(u, "sessionUpdate", json_string("tool_call"));
		acp_send_update(srv, as->id, u);
	}
	return acp_outbound_request(&srv->out, "session/request_permission", xjson_pack("{s:s, s:o, s:o}",
	    "sessionId", as->id, "toolCall", tc, "options", options), 0, done, arg);
}

void
acp_ask_call_status(void *self, struct tool_inv *inv, const char *status)
{
	struct acp_server *srv = self;
	struct agent *root = acp_ask_root(inv->agent);
	struct acp_session *as = root ? map_get(&srv->sessions, agent_id(root)) : NULL;
	char *tcid;
	json_t *u;

	if (as == NULL || as->agent == NULL)
		return;
	tcid = acp_ask_call_id(srv, inv);
	u = xjson_pack("{s:s, s:s, s:s}", "sessionUpdate", "tool_call_update", "toolCallId", tcid, "status", status);
	/* A failed call says why, as a root's own does: the child's error text (docs/decisions.md, "Asks, steering and failures"). */
	if (strcmp(status, "failed") == 0 && inv->result.text)
		json_object_set_new(u, "content", xjson_pack("[{s:s, s:{s:s, s:o}}]", "type", "content", "content",
		    "type", "text", "text", xjson_text(inv->result.text, strlen(inv->result.text))));
	free(tcid);
	if (acp_ask_on_child(srv, inv)) {
		acp_send_update(srv, agent_id(inv->agent), u);
		return;
	}
	if (agent_parent(inv->agent))
		json_object_set_new(u, "_meta", xjson_pack("{s:{s:s}}", "acpAgent", "agentId", agent_id(inv->agent)));
	acp_send_update(srv, as->id, u);
}
