/* The subagent tool (SPEC §6.3). */
#include <stdlib.h>
#include <string.h>

#include "agent/subagent.h"
#include "base/xmalloc.h"
#include "tools/tools.h"

static char *
subagent_title(const struct tool *t, const json_t *args)
{
	const char *d = json_string_value(json_object_get(args, "description"));

	(void)t;
	return xasprintf("Delegate: %s", d ? d : "");
}

static int
subagent_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	const json_t *bg = json_object_get(args, "run_in_background");

	return subagent_start(inv, json_string_value(json_object_get(args, "description")),
	    json_string_value(json_object_get(args, "prompt")), bg == NULL || json_is_true(bg), out);
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
	    "durable subagent id at once (default true). Set false to wait for the result.\"}}}",
	.kind = "other",
	.concurrency_safe = 1,
	.title = subagent_title,
	.run = subagent_run,
};
