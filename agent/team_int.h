/*
 * What the files of the Team share (not an API: agent/team*.c only). team.c holds the state, the
 * roster and recovery; team_tasks.c the task board; team_mail.c the mailbox and its pump;
 * team_wait.c wait_agent's timers.
 */
#ifndef AGENT_TEAM_INT_H
#define AGENT_TEAM_INT_H

#include "agent/agent_def.h"
#include "agent/team.h"

/* One wait_agent call waiting for a change of the team (team_wait.c). */
struct team_waiter {
	ev_timer timer;		/* first member */
	struct team *team;
	struct tool_inv *inv;
	void (*finish)(struct tool_inv *inv, json_t *result);	/* the tool's: renders, completes */
	long version;
	struct team_waiter *next;
};

/* "pending", "in_progress", "completed", "deleted": enum team_status's names. */
extern const char *const team_status_names[];

void team_task_clear(struct team_task *k);
/* A Lead's team if it has one already (never makes it); team_of makes it. */
struct team *team_of_lead(const struct agent *lead);
struct team_member *team_member(struct team *t, const char *name);
struct team_task *team_task_by_id(struct team *t, const char *id);
void team_changed(struct team *t);
/* Persists a team event (steals data). With e NULL the caller goes on whatever happens; it is logged. */
int team_write(struct team *t, const char *type, json_t *data, struct err *e);
json_t *team_task_record(const struct team_task *k);
const char *team_member_status(struct team *t, const struct team_member *m);
/* Delivers queued messages in order; a target whose first message cannot go waits, the rest go on. */
void team_pump(struct team *t);
/*
 * Queued mail retried once a teammate's release has freed a slot: right after the task that
 * released it, from the run queue, so a resume loads from disk outside that release.
 */
void team_pump_task(void *arg);
void team_waiter_done(struct team_waiter *w, int timed_out);

#endif
