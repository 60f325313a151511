/* The subagent tool (docs/contract.md §6.3): its texts, its result, and the prompt section that presents it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/subagent.h"
#include "agent/turnend.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "tools/tools.h"

void
delegation_prompt(const struct agent *a, struct buf *b)
{
	(void)a;
	buf_puts(b,
	    "\n\nDelegation: use the subagent tool to delegate self-contained tasks. Background is "
	    "the default. Start independent delegations together, in one message. You are told "
	    "when a background subagent finishes, so use list_agents to recall your subagents, not "
	    "to poll them. Continue a subagent's conversation with send_message.");
}

static char *
subagent_title(const struct tool *t, const json_t *args)
{
	const char *d = json_string_value(json_object_get(args, "description"));
	const char *type = json_string_value(json_object_get(args, "agent_type"));

	(void)t;
	if (type && strcmp(type, "general") != 0)
		return xasprintf("Delegate (%s): %s", type, d ? d : "");
	return xasprintf("Delegate: %s", d ? d : "");
}

/* A foreground run's end as its call's result: the child's final text, or why it has none. */
static void
subagent_finish(struct tool_inv *inv, struct agent *child, const json_t *reason)
{
	const struct turn_end *end = turn_end_of(json_string_value(json_object_get(reason, "kind")));
	const char *cause = json_string_value(json_object_get(reason, "message"));
	char *final = agent_final_text(child);
	struct tool_result r = { 0 };
	const char *msg = end->foreground;
	char *full;

	if (end->code == ERR_NONE) {
		/* an isolated child's line about its work after its text (docs/contract.md §24) */
		const char *work = subagent_work(child);
		char *text = work ? xasprintf("%s%s%s", final ? final : "", final && *final ? "\n" : "", work) : NULL;
		tool_result_set(&r, text ? text : final ? final : "", xjson_pack("{s:s, s:s}", "kind", "foreground", "output",
		    final ? final : ""));
		free(text);
		goto out;
	}
	if (msg == NULL && cause)
		full = xasprintf("subagent run failed: %s", cause);
	else
		full = xstrdup(msg ? msg : "subagent run failed");
	if (final && *final) {
		char *with = xasprintf("%s\nPartial output before the run ended:\n%s", full, final);
		free(full);
		full = with;
	}
	if (subagent_work(child)) {
		char *with = xasprintf("%s\n%s", full, subagent_work(child));
		free(full);
		full = with;
	}
	tool_result_error(&r, end->code, "%s", full);
	free(full);
out:
	snprintf(r.agent_id, sizeof(r.agent_id), "%s", agent_id(child));
	free(final);
	tool_inv_complete(inv, &r);
}

/* A background child's start as its call's result: its id, or why it could not start. */
static void
subagent_started_result(struct tool_result *out, const char *id, const struct err *e)
{
	char text[80];

	if (id == NULL) {
		tool_result_error(out, e ? e->code : ERR_INTERNAL, "%s", e ? e->msg : "the subagent did not start");
		return;
	}
	snprintf(text, sizeof(text), "started subagent %s", id);
	tool_result_set(out, text, xjson_pack("{s:s, s:s}", "kind", "continuable", "subagentId", id));
	snprintf(out->agent_id, sizeof(out->agent_id), "%s", id);
}

/* An isolated child's call, once its worktree is made (or could not be). */
static void
subagent_started(struct tool_inv *inv, const char *id, const struct err *e)
{
	struct tool_result r = { 0 };

	subagent_started_result(&r, id, e);
	tool_inv_complete(inv, &r);
}

static int
subagent_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	const json_t *bg = json_object_get(args, "run_in_background");
	int background = bg == NULL || json_is_true(bg);
	char id[SESS_ID_LEN + 1];
	struct subagent_kind kind = { json_string_value(json_object_get(args, "agent_type")),
		json_string_value(json_object_get(args, "model")), json_string_value(json_object_get(args, "isolation")) };
	struct err e;
	int rc;

	err_clear(&e);
	rc = subagent_start(inv, json_string_value(json_object_get(args, "description")),
	    json_string_value(json_object_get(args, "prompt")), background, &kind, subagent_finish, subagent_started, id,
	    &e);
	if (rc < 0) {
		tool_result_error(out, e.code, "%s", e.msg);
		return TOOL_DONE;
	}
	if (rc > 0 || !background)
		return TOOL_PENDING;
	subagent_started_result(out, id, NULL);
	return TOOL_DONE;
}

const struct tool tool_subagent = {
	.name = "subagent",
	.description =
	    "Delegate a self-contained task to a subagent: a separate agent with its own context that "
	    "returns its result, not its intermediate steps. It does not see this conversation, so give "
	    "it a complete, standalone prompt. By default it runs in the background: the call returns a "
	    "durable subagent id at once, you are sent a notice with its outcome when it finishes, and "
	    "send_message continues the same child conversation later. Set run_in_background to false "
	    "only when your next action needs the result; the call then waits and returns the result.",
	.schema =
	    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"description\",\"prompt\"],"
	    "\"properties\":{"
	    "\"description\":{\"type\":\"string\",\"description\":\"A short (3-5 word) description of the "
	    "delegated task, for display.\"},"
	    "\"prompt\":{\"type\":\"string\",\"description\":\"The complete, self-contained task for the "
	    "subagent. It does not share this conversation's context, so include everything it needs.\"},"
	    "\"run_in_background\":{\"type\":\"boolean\",\"description\":\"Run in the background and return a "
	    "durable subagent id at once (default true). Set false to wait for the result.\"},"
	    "\"agent_type\":{\"type\":\"string\",\"description\":\"" TOOL_AGENT_TYPE_DOC "\"},"
	    "\"model\":{\"type\":\"string\",\"description\":\"" TOOL_MODEL_DOC "\"},"
	    "\"isolation\":{\"type\":\"string\",\"enum\":[\"none\",\"worktree\"],\"description\":\"" TOOL_ISOLATION_DOC
	    "\"}}}",
	.kind = "other",
	.links_agent = 1,
	.lists_types = 1,
	.concurrency_safe = 1,
	.title = subagent_title,
	.run = subagent_run,
};
