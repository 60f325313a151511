/*
 * The event types of a session log (docs/contract.md §5.2), one table: each type's enum and its
 * name on disk, in the order of their codes (a code is what struct sess keeps per event, 1..255;
 * 0 is none of these). Code compares these, never the names; session/payload.c checks each
 * type's payload.
 */
#ifndef SESSION_EVTYPE_H
#define SESSION_EVTYPE_H

#include <stddef.h>
#include <string.h>

#define SESS_EV_TABLE(X)                                                  \
	X(CREATED, "session/created")                                     \
	X(TURN_START, "turn/start")                                       \
	X(USER_MESSAGE, "user/message")                                   \
	X(STEP_START, "step/start")                                       \
	X(STEP_END, "step/end")                                           \
	X(ASSISTANT_MESSAGE, "assistant/message")                         \
	X(TOOL_CALL, "tool/call")                                         \
	X(TOOL_RESULT, "tool/result")                                     \
	X(TURN_END, "turn/end")                                           \
	X(SUBAGENT_DESCRIPTOR, "subagent/descriptor")                     \
	X(SUBAGENT_SETTLED, "subagent/settled")                           \
	X(TEAM_MEMBER, "team/member")                                     \
	X(TEAM_TASK, "team/task")                                         \
	X(TEAM_QUEUED, "team/message/queued")                             \
	X(TEAM_DELIVERED, "team/message/delivered")                       \
	X(SESSION_MODE, "session/mode")                                   \
	X(SESSION_MODEL, "session/model")                                 \
	X(PERMISSION_RULE, "permission/rule")                             \
	X(JOB_STARTED, "job/started")                                     \
	X(JOB_ENDED, "job/ended")                                         \
	X(MCP_SERVER, "mcp/server")                                       \
	X(COMPACTED, "context/compacted")                                 \
	X(COMPACTION_FAILED, "context/compaction_failed")                 \
	X(MESSAGE_VIEW, "message/view")                                   \
	X(CONTEXT_INSTRUCTIONS, "context/instructions")                   \
	X(WORKTREE_CREATED, "worktree/created")                           \
	X(WORKTREE_COMMITTED, "worktree/committed")                       \
	X(WORKTREE_REMOVED, "worktree/removed")                           \
	X(PLAN_UPDATED, "plan/updated")                                   \
	X(SESSION_ROOTS, "session/roots")

enum sess_ev {
	SESS_EV_NONE,		/* not a known type */
#define SESS_EV_ENUM(id, name) SESS_EV_##id,
	SESS_EV_TABLE(SESS_EV_ENUM)
#undef SESS_EV_ENUM
	SESS_EV_COUNT
};

/* sess_ev_is_TURN_START(t, n) and so on: whether the bytes t[0..n) name that type, compared
 * inline (constant lengths): for a loop that runs for every line of a log. */
#define SESS_EV_IS(id, name)                                                      \
	static inline int sess_ev_is_##id(const char *t, size_t n)                \
	{                                                                         \
		return n == sizeof(name) - 1 && memcmp(t, name, sizeof(name) - 1) == 0; \
	}
SESS_EV_TABLE(SESS_EV_IS)
#undef SESS_EV_IS

/* The type named t (NULL: none). */
enum sess_ev sess_ev_of(const char *t);
/* The same for the bytes t[0..n). */
enum sess_ev sess_ev_ofn(const char *t, size_t n);
/* The name on disk ("" for SESS_EV_NONE). */
const char *sess_ev_name(enum sess_ev ev);

#endif
