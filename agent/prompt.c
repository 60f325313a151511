/* The system prompt, built from sections (SPEC §4; docs/prompts.md shows the text). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "base/buf.h"
#include "base/clock.h"

char *
agent_system_prompt(const struct agent *a)
{
	struct buf b;
	char date[32];
	const char *cwd = sess_header_str(a->sess, "cwd");
	const char *parent = agent_parent(a);
	int64_t created = json_integer_value(json_object_get(a->sess->header, "createdAt"));

	clock_iso8601(created, date, sizeof(date));
	date[10] = '\0';
	buf_init(&b);
	buf_printf(&b,
	    "You are acp-agent, a coding agent working for a person through their editor. "
	    "Your working directory is %s. Today's date is %s.", cwd ? cwd : "/", date);
	if (toolbox_find(a->tools, "subagent"))
		buf_puts(&b,
		    "\n\nDelegation: use the subagent tool to delegate self-contained tasks. Background is "
		    "the default. Start independent delegations together, in one message. You are told "
		    "when a background subagent finishes, so use list_agents to recall your subagents, not "
		    "to poll them. Continue a subagent's conversation with send_message.");
	if (parent) {
		const char *label = NULL;
		int depth = (int)json_integer_value(json_object_get(a->sess->header, "delegationDepth"));
		size_t i;
		json_t *ev;
		json_array_foreach(a->sess->events, i, ev) {
			const char *t = json_string_value(json_object_get(ev, "type"));
			if (t && strcmp(t, "subagent/descriptor") == 0)
				label = json_string_value(json_object_get(json_object_get(ev, "data"), "label"));
		}
		buf_printf(&b,
		    "\n\nYou are a subagent of %s, working on: %s, at delegation depth %d. Finish your "
		    "task and report back.", parent, label ? label : "a delegated task", depth);
	}
	return buf_steal(&b);
}
