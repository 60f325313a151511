/*
 * How a turn ended, and what each party is told of it: one row per kind a turn/end event
 * records (docs/architecture.md, "Agents"). The ACP stop reason of the prompt's answer, the
 * line of a background child's settlement notice, and the error a foreground child's call
 * ends with. A kind this table does not know is an error (the last row).
 */
#ifndef AGENT_TURNEND_H
#define AGENT_TURNEND_H

#include "base/errcode.h"

struct turn_end {
	const char *kind;		/* as logged: "completed", "max-steps", ... */
	const char *stop_reason;	/* ACP stopReason; NULL: the prompt is answered with an error */
	const char *notice;		/* "Background subagent <id> " + this */
	const char *foreground;		/* a foreground child's error text; NULL: completed, or the cause */
	enum err_code code;		/* that error's code */
};

/* The row of kind (NULL or unknown: the error row); never NULL. */
const struct turn_end *turn_end_of(const char *kind);

#endif
