/* The system prompt: the runtime's opening, then each extension's sections (docs/contract.md §4;
 * docs/prompts.md shows the text). */
#include <stdio.h>
#include <stdlib.h>

#include "agent/agent_def.h"
#include "agent/agent.h"
#include "base/buf.h"
#include "base/clock.h"

/* An extension's section presents its tools: a child whose type left it without them is not
 * told about them. An extension without tools of its own always speaks. */
static int
agent_ext_shown(const struct agent *a, const struct agent_ext *x)
{
	if (x->prompt_for)
		return agent_comp_allows(&a->comp, x->prompt_for);
	if (x->tools == NULL || x->tools[0] == NULL)
		return 1;
	for (const struct tool *const *t = x->tools; *t; t++)
		if (agent_comp_allows(&a->comp, (*t)->name))
			return 1;
	return 0;
}

char *
agent_system_prompt(const struct agent *a)
{
	struct buf b;
	char date[32];
	const char *cwd = sess_header_str(a->sess, "cwd");
	int64_t created = json_integer_value(json_object_get(sess_header(a->sess), "createdAt"));

	clock_iso8601(created, date, sizeof(date));
	date[10] = '\0';
	buf_init(&b);
	buf_printf(&b,
	    "You are acp-agent, a coding agent working for a person through their editor. "
	    "Your working directory is %s. Today's date is %s.", cwd ? cwd : "/", date);
	for (const struct agent_ext *const *x = a->rt->exts; x && *x; x++)
		if ((*x)->prompt && agent_ext_shown(a, *x))
			(*x)->prompt(a, &b);
	/* then its type's instructions (docs/contract.md §23.2), the project's last (§25) */
	if (a->comp.instructions)
		buf_printf(&b, "\n\n%s", a->comp.instructions);
	if (a->instr.block)
		buf_puts(&b, a->instr.block);
	return buf_steal(&b);
}
