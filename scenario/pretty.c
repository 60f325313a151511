/*
 * --pretty (make demo): the conversation as a person reads it, printed while the scenario
 * plays: the client's prompts and methods, the agent's streamed text and thoughts, its tool
 * calls and results, and turn ends.
 */
#include <stdio.h>
#include <string.h>

#include "scenario/internal.h"

void
scenario_pretty_flush(struct scenario_run *r)
{
	if (r->pretty_text.len) {
		printf("  agent %s: %s\n", r->pretty_kind, r->pretty_text.data);
		buf_free(&r->pretty_text);
	}
}

/* A message the client sends. msg: borrowed. */
void
scenario_pretty_client(struct scenario_run *r, const json_t *msg)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *params = json_object_get(msg, "params");

	if (!r->opts->pretty || !method)
		return;
	scenario_pretty_flush(r);
	if (strcmp(method, "session/prompt") == 0) {
		r->pretty_between = 0;
		json_t *first = json_array_get(json_object_get(params, "prompt"), 0);
		printf("\nclient > prompt: %s\n", json_string_value(json_object_get(first, "text")));
	} else if (strcmp(method, "_acp_agent/wait_idle") != 0) {
		printf("client > %s\n", method);
	}
}

/* The result of a response: what it tells a reader. */
static void
scenario_pretty_result(struct scenario_run *r, const json_t *res)
{
	if (json_object_get(res, "stopReason")) {
		printf("agent < turn ended: %s\n", json_string_value(json_object_get(res, "stopReason")));
		r->pretty_between = 1;
	} else if (json_object_get(res, "sessionId")) {
		printf("agent < session %s\n", json_string_value(json_object_get(res, "sessionId")));
	} else if (json_object_get(res, "sessions")) {
		printf("agent < %zu session(s) listed\n", json_array_size(json_object_get(res, "sessions")));
	} else if (json_object_get(res, "agentInfo")) {
		printf("agent < initialized (protocol %lld)\n",
		    (long long)json_integer_value(json_object_get(res, "protocolVersion")));
	}
}

/* A line the agent wrote. */
void
scenario_pretty_agent(struct scenario_run *r, const char *line)
{
	json_t *msg, *u;
	const char *kind;

	if (!r->opts->pretty || (msg = json_loads(line, 0, NULL)) == NULL)
		return;
	u = json_object_get(json_object_get(msg, "params"), "update");
	kind = json_string_value(json_object_get(u, "sessionUpdate"));
	if (kind && r->pretty_between == 1 && strcmp(kind, "available_commands_update") != 0) {
		scenario_pretty_flush(r);
		printf("\n(a subagent's notice reached the agent, which starts a turn on its own)\n");
		r->pretty_between = 2;
	}
	if (kind && (strcmp(kind, "agent_message_chunk") == 0 || strcmp(kind, "agent_thought_chunk") == 0)) {
		const char *k = strcmp(kind, "agent_message_chunk") == 0 ? "says" : "thinks";
		if (r->pretty_kind && strcmp(r->pretty_kind, k) != 0)
			scenario_pretty_flush(r);
		r->pretty_kind = k;
		buf_puts(&r->pretty_text, json_string_value(json_object_get(json_object_get(u, "content"), "text")));
		json_decref(msg);
		return;
	}
	scenario_pretty_flush(r);
	if (kind && strcmp(kind, "tool_call") == 0) {
		printf("  agent calls: %s\n", json_string_value(json_object_get(u, "title")));
	} else if (kind && strcmp(kind, "tool_call_update") == 0) {
		json_t *c = json_array_get(json_object_get(u, "content"), 0);
		printf("  tool %s: %s\n", json_string_value(json_object_get(u, "status")),
		    json_string_value(json_object_get(json_object_get(c, "content"), "text")));
	} else if (kind && strcmp(kind, "available_commands_update") == 0) {
		printf("  (the agent advertises its slash commands: /agents, /send, /interrupt)\n");
	} else if (kind) {
		printf("  (update: %s)\n", kind);
	} else if (json_object_get(msg, "error")) {
		json_t *err = json_object_get(msg, "error");
		printf("agent < error %lld: %s\n", (long long)json_integer_value(json_object_get(err, "code")),
		    json_string_value(json_object_get(json_object_get(err, "data"), "details")));
	} else if (json_object_get(msg, "result")) {
		scenario_pretty_result(r, json_object_get(msg, "result"));
	}
	json_decref(msg);
}
