/* The list_agents tool (docs/contract.md §6.5). */
#include <stdlib.h>
#include <string.h>

#include "agent/subagent.h"
#include "base/buf.h"
#include "base/xmalloc.h"
#include "tools/tools.h"

char *
list_agents_render(const json_t *entries, int descendants)
{
	struct buf b;
	size_t i;
	json_t *en;

	if (json_array_size(entries) == 0)
		return xstrdup("(no subagents)");
	buf_init(&b);
	buf_reserve(&b, json_array_size(entries) * 80);
	json_array_foreach(entries, i, en) {
		int child = strcmp(json_string_value(json_object_get(en, "kind")), "child") == 0;
		if (i)
			buf_append(&b, "\n", 1);
		buf_puts(&b, json_string_value(json_object_get(en, "id")));
		if (child) {
			buf_puts(&b, " [");
			buf_puts(&b, json_string_value(json_object_get(en, "status")));
			buf_puts(&b, "]");
		} else {
			buf_puts(&b, " [diagnostic: ");
			buf_puts(&b, json_string_value(json_object_get(en, "reason")));
			buf_puts(&b, "]");
		}
		if (descendants)
			buf_printf(&b, " parent=%s depth=%lld", json_string_value(json_object_get(en, "parent")),
			    (long long)json_integer_value(json_object_get(en, "depth")));
		if (child) {
			const char *type = json_string_value(json_object_get(en, "agentType"));
			const char *branch = json_string_value(json_object_get(en, "branch"));
			int typed = type && strcmp(type, "general") != 0;
			buf_puts(&b, " \xe2\x80\x94 ");
			buf_puts(&b, json_string_value(json_object_get(en, "label")));
			if (typed || branch)
				buf_printf(&b, " (%s%s%s%s)", typed ? type : "", typed && branch ? ", " : "",
				    branch ? "branch " : "", branch ? branch : "");
		}
	}
	return buf_steal(&b);
}

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
		tool_result_error(out, e.code ? e.code : ERR_SESSION_LOG_IO, "%s", e.msg);
		return TOOL_DONE;
	}
	text = list_agents_render(entries, descendants);
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
	.raw_key = "agents",
	.concurrency_safe = 1,
	.title = list_agents_title,
	.run = list_agents_run,
};
