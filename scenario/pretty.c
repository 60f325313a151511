/*
 * --pretty (make demo): the conversation as a person reads it, printed while the scenario
 * plays: the client's prompts and methods, the agent's streamed text and thoughts, its tool
 * calls and results, and turn ends.
 */
#include <stdio.h>
#include <string.h>

#include "scenario/internal.h"

/* A string member's text, or what stands for it when it is missing. */
static const char *
scenario_pretty_str(const json_t *v, const char *missing)
{
	const char *s = json_string_value(v);

	return s ? s : missing;
}

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
		printf("\nclient > prompt: %s\n", json_is_string(json_object_get(first, "text")) ?
		    json_string_value(json_object_get(first, "text")) :
		    scenario_pretty_str(json_object_get(first, "type"), "(empty)"));
	} else if (strcmp(method, "_acp_agent/wait_idle") != 0) {
		printf("client > %s\n", method);
	}
}

/* The result of a response: what it tells a reader. */
static void
scenario_pretty_result(struct scenario_run *r, const json_t *res)
{
	if (json_object_get(res, "stopReason")) {
		printf("agent < turn ended: %s\n", scenario_pretty_str(json_object_get(res, "stopReason"), "?"));
		r->pretty_between = 1;
	} else if (json_object_get(res, "sessionId")) {
		printf("agent < session %s\n", scenario_pretty_str(json_object_get(res, "sessionId"), "?"));
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
		buf_puts(&r->pretty_text, scenario_pretty_str(json_object_get(json_object_get(u, "content"), "text"), ""));
		json_decref(msg);
		return;
	}
	scenario_pretty_flush(r);
	if (kind && strcmp(kind, "tool_call") == 0) {
		printf("  agent calls: %s\n", scenario_pretty_str(json_object_get(u, "title"), "(untitled)"));
	} else if (kind && strcmp(kind, "tool_call_update") == 0) {
		json_t *c = json_array_get(json_object_get(u, "content"), 0);
		const char *text = json_string_value(json_object_get(json_object_get(c, "content"), "text"));
		const char *status = scenario_pretty_str(json_object_get(u, "status"), "updated");
		if (text)
			printf("  tool %s: %s\n", status, text);
		else if (c)
			printf("  tool %s (%s)\n", status, scenario_pretty_str(json_object_get(c, "type"), "content"));
		else
			printf("  tool %s\n", status);
	} else if (kind && strcmp(kind, "available_commands_update") == 0) {
		json_t *cmds = json_object_get(u, "availableCommands"), *cmd;
		size_t i;
		printf("  (the agent advertises its slash commands:");
		json_array_foreach(cmds, i, cmd)
			printf("%s /%s", i ? "," : "", scenario_pretty_str(json_object_get(cmd, "name"), "?"));
		printf(")\n");
	} else if (kind) {
		printf("  (update: %s)\n", kind);
	} else if (json_object_get(msg, "error")) {
		json_t *err = json_object_get(msg, "error");
		const json_t *details = json_object_get(json_object_get(err, "data"), "details");
		printf("agent < error %lld: %s\n", (long long)json_integer_value(json_object_get(err, "code")),
		    json_is_string(details) ? json_string_value(details) :
		    scenario_pretty_str(json_object_get(err, "message"), "(no message)"));
	} else if (json_object_get(msg, "result")) {
		scenario_pretty_result(r, json_object_get(msg, "result"));
	}
	json_decref(msg);
}
