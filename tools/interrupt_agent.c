/* The interrupt_agent tool (docs/contract.md §6.8). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/subagent.h"
#include "base/xmalloc.h"
#include "tools/tools.h"

static char *
interrupt_agent_title(const struct tool *t, const json_t *args)
{
	const char *id = json_string_value(json_object_get(args, "agent_id"));

	(void)t;
	return xasprintf("Interrupt %s", id ? id : "");
}

static int
interrupt_agent_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	const char *target = json_string_value(json_object_get(args, "agent_id"));
	struct err e;
	json_t *output;
	char *text;

	err_clear(&e);
	if (subagent_interrupt(inv->agent, target, &e) < 0) {
		tool_result_error(out, e.code, "%s", e.msg);
		return TOOL_DONE;
	}
	text = xasprintf("interrupt requested for agent %s", target);
	output = json_object();		/* constant keys and values: nothing here can fail */
	json_object_set_new_nocheck(output, "accepted", json_true());
	tool_result_set(out, text, output);
	snprintf(out->agent_id, sizeof(out->agent_id), "%s", target);
	free(text);
	return TOOL_DONE;
}

const struct tool tool_interrupt_agent = {
	.name = "interrupt_agent",
	.description =
	    "Ask a subagent to stop its current work. This call returns without waiting for it to stop. "
	    "You can continue a direct child's conversation later with send_message. Subagents it started "
	    "will keep running.",
	.schema =
	    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"agent_id\"],"
	    "\"properties\":{"
	    "\"agent_id\":{\"type\":\"string\",\"description\":\"The id of an agent created under you: your "
	    "direct child or a deeper descendant.\"}}}",
	.kind = "other",
	.concurrency_safe = 0,
	.title = interrupt_agent_title,
	.run = interrupt_agent_run,
};
