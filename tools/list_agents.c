/* The list_agents tool (SPEC §6.5). */
#include <stdlib.h>
#include <string.h>

#include "agent/subagent.h"
#include "base/xmalloc.h"
#include "tools/tools.h"

static char *
list_agents_title(const struct tool *t, const json_t *args)
{
	(void)t;
	(void)args;
	return xstrdup("List agents");
}

static int
list_agents_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	const char *scope = json_string_value(json_object_get(args, "scope"));
	int descendants = scope && strcmp(scope, "descendants") == 0;
	struct err e;
	json_t *entries;
	char *text;

	err_clear(&e);
	entries = subagent_list(inv->agent, descendants, &e);
	if (entries == NULL) {
		tool_result_error(out, e.code ? e.code : "SESSION_LOG_IO", "%s", e.msg);
		return TOOL_DONE;
	}
	text = subagent_render_list(entries, descendants);
	tool_result_set(out, text, entries);
	free(text);
	return TOOL_DONE;
}

const struct tool tool_list_agents = {
	.name = "list_agents",
	.description =
	    "List subagents you started, with their ids, labels, and status. running means it is working; "
	    "inactive means it is not currently working. You will be notified when a subagent finishes; "
	    "there is no need to keep checking its status. Use send_message to continue the conversation.",
	.schema =
	    "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
	    "\"scope\":{\"type\":\"string\",\"enum\":[\"children\",\"descendants\"],\"description\":"
	    "\"children (default) lists direct children, which accept send_message in any status. "
	    "descendants lists the whole tree below you with each entry's parent session id and depth; "
	    "entries deeper than 1 accept only interrupt_agent.\"}}}",
	.kind = "search",
	.concurrency_safe = 1,
	.title = list_agents_title,
	.run = list_agents_run,
};
