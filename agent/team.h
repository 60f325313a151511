/*
 * Agent Teams (docs/contract.md §9): the roster, the durable mailbox and the task board of
 * one Lead. Everything persists in the Lead's log (team events) and is
 * rebuilt from it after a restart. Authority for team actions lives here.
 */
#ifndef AGENT_TEAM_H
#define AGENT_TEAM_H

#include <jansson.h>

#include "agent/agent.h"
#include "agent/subagent.h"
#include "agent/toolbox.h"
#include "base/err.h"

#define TEAM_MAX_MEMBERS 8
#define TEAM_MAX_TASKS 256
#define TEAM_MAX_PENDING 64
#define TEAM_MAX_MESSAGE 65536

enum team_phase { TEAM_PROVISIONING, TEAM_ACTIVE, TEAM_FAILED };
enum team_status { TASK_PENDING, TASK_IN_PROGRESS, TASK_COMPLETED, TASK_DELETED };

struct team_member {
	char *name, *id, *description, *error;
	enum team_phase phase;
};

struct team_task {
	int n;				/* task-<n> */
	int revision;
	char *subject, *description, *owner;
	enum team_status status;
	json_t *blocked_by;		/* ["task-<n>", ...] */
	json_t *write_scopes;		/* [string] */
};

struct team_waiter;

/* One Lead's team. persist writes a team event to the Lead's log (NULL in unit tests). */
struct team {
	struct agent *lead;		/* NULL in unit tests */
	struct team_member *members;
	size_t nmembers;
	struct team_task *tasks;
	size_t ntasks;
	json_t *names_used;		/* every name ever taken: never reused */
	json_t *queued;			/* undelivered messages, in order: {id, senderName, targetName, content} */
	int next_msg;
	long version;			/* bumps on every roster, task, mailbox or status change */
	struct team_waiter *waiters;
	int (*persist)(struct team *t, const char *type, json_t *data, struct err *e);	/* steals data */
};

struct team *team_new(void);
void team_free(struct team *t);
/* Rebuilds a team from a Lead's events (its team events folded in order). */
void team_fold(struct team *t, const json_t *events);

/* Pure rules, unit-tested without agents. caller: a member name or "lead". */
int team_name_check(struct team *t, const char *name, struct err *e);
json_t *team_task_view(const struct team *t, const struct team_task *k);	/* new ref */
json_t *team_task_create(struct team *t, const char *caller, const char *subject, const char *description,
    const json_t *blocked_by, const json_t *write_scopes, struct err *e);
json_t *team_task_update(struct team *t, const char *caller, const json_t *args, struct err *e);
json_t *team_task_get(struct team *t, const char *id, struct err *e);
json_t *team_task_list(struct team *t, const json_t *args, struct err *e);

/* Runtime: the team a caller belongs to (its own as Lead, its Lead's as teammate), or NULL. */
struct team *team_of(struct agent *a);
/* The caller's member name: "lead" for the Lead. */
const char *team_caller_name(struct agent *a);
/* The Team extension's hooks (tools/team_tools.c assembles team_ext). A turn started or ended, or
 * an agent was released: roster statuses changed, and a freed slot may let queued mail go. */
void team_on_status(struct agent *a);
/* After a Lead is loaded: reconcile provisioning members and resume mail delivery. */
void team_recover(struct agent *lead);

/* An isolated teammate's spawn_teammate ends (docs/contract.md §24): result (new) or NULL with e. */
typedef void team_spawned_fn(struct tool_inv *inv, json_t *result, const struct err *e);
/* spawn_teammate; inv: the call (borrowed), linked to the teammate it starts; kind: its type,
 * model and isolation (NULL: general). An isolated teammate's call stays pending (*pending set,
 * NULL returned): done ends it. */
json_t *team_spawn(struct tool_inv *inv, const char *name, const char *description, const char *prompt,
    const struct subagent_kind *kind, team_spawned_fn *done, int *pending, struct err *e);
/* The session of the teammate called name in caller's team (borrowed), or NULL. */
const char *team_member_session(struct agent *caller, const char *name);
json_t *team_send(struct agent *caller, const char *target, const char *message, struct err *e);
json_t *team_list(struct agent *caller);
json_t *team_interrupt(struct agent *caller, const char *target, struct err *e);
/*
 * wait_agent: TOOL_DONE with *result (new; noProgress names only its reason) or NULL with e, or
 * TOOL_PENDING: on a change or the timeout, finish gets the call and {timedOut} (stolen), unless
 * the call is cancelled first.
 */
int team_wait(struct tool_inv *inv, long timeout_ms, void (*finish)(struct tool_inv *inv, json_t *result),
    json_t **result, struct err *e);

#endif
