/* The turn-end table (agent/turnend.h). */
#include "agent/turnend.h"

#include <string.h>

static const struct turn_end turn_ends[] = {
	{ "completed", "end_turn", "finished and will do no further work unless you send it more.", NULL,
	    ERR_NONE },
	{ "max-tokens", "max_tokens", "ran out of room before it finished.",
	    "subagent run hit its token limit before finishing", ERR_SUBAGENT_FAILED },
	{ "max-steps", "max_turn_requests", "ran out of room before it finished.",
	    "subagent run failed: it reached the step limit", ERR_SUBAGENT_FAILED },
	{ "refusal", "refusal", "declined the task.", "subagent declined the task", ERR_SUBAGENT_FAILED },
	{ "aborted", "cancelled", "was stopped before it finished.", "subagent run was cancelled", ERR_CANCELLED },
	{ "interrupted", "cancelled", "was stopped before it finished.", "subagent run was cancelled",
	    ERR_SUBAGENT_FAILED },
	{ "error", NULL, "failed before it finished.", NULL, ERR_SUBAGENT_FAILED },
};

const struct turn_end *
turn_end_of(const char *kind)
{
	size_t n = sizeof(turn_ends) / sizeof(turn_ends[0]);

	for (size_t i = 0; kind && i < n - 1; i++)
		if (strcmp(turn_ends[i].kind, kind) == 0)
			return &turn_ends[i];
	return &turn_ends[n - 1];
}
