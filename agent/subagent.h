/*
 * Delegation (docs/contract.md §6): starting one-shot and continuable children, the
 * listing service, send_message routing, settlement notices, cold resume,
 * interrupt authority and capacity. Every authority decision lives here;
 * the tools in tools/ only parse arguments and render results.
 */
#ifndef AGENT_SUBAGENT_H
#define AGENT_SUBAGENT_H

#include <jansson.h>

#include "agent/agent.h"
#include "agent/toolbox.h"
#include "base/err.h"

/* What an agent is to delegation: a root, a one-shot child or a continuable (resident) child. */
enum subagent_mode { SUBAGENT_ROOT, SUBAGENT_ONESHOT, SUBAGENT_CONTINUABLE };

/* The children's runtime every profile runs (no tools): the child's prompt section, redelivery. */
extern const struct agent_ext subagent_ext;

enum subagent_mode subagent_mode(const struct agent *a);
/* A delivery to a was accepted (its settlement will notify its parent). */
void subagent_note_delivered(struct agent *a);

/* What a call asks a child to be (docs/contract.md §23.2): its agent type (NULL: general) and
 * model (NULL: its type's, else its parent's). Borrowed. */
struct subagent_kind {
	const char *type;
	const char *model;
	const char *isolation;	/* "none", "worktree", or NULL: the type's */
};

/* Whether parent may start a child of kind (NULL: general): its type exists, its model is one it
 * may name. 0, or -1 with e (the errors of docs/contract.md §23.2). */
int subagent_kind_check(struct agent *parent, const struct subagent_kind *kind, struct err *e);

/* A one-shot child's run ended with reason (borrowed, agent_hooks.turn_end's): render, complete inv. */
typedef void subagent_finish_fn(struct tool_inv *inv, struct agent *child, const json_t *reason);
/* An isolated child's call is pending while its worktree is made (docs/contract.md §24): started
 * completes it, with the child's id or e (a background child's call; a foreground one's only when
 * the worktree could not be made). */
typedef void subagent_started_fn(struct tool_inv *inv, const char *child_id, const struct err *e);
/*
 * Starts a child of inv->agent for description and prompt. 0: started (background: child_id
 * filled; foreground: finish gets the call when the child's run ends); 1: an isolated child's
 * worktree is being made, the call stays pending (started, then finish for a foreground one);
 * -1 with e.
 */
int subagent_start(struct tool_inv *inv, const char *description, const char *prompt, int background,
    const struct subagent_kind *kind, subagent_finish_fn *finish, subagent_started_fn *started, char *child_id,
    struct err *e);

/* A continuable child with label, of kind (NULL: general), its first message posted; steals content
 * and source. inv: the call that starts it (shown linked to it, docs/contract.md §22.1), or NULL.
 * NULL with e. */
struct agent *subagent_spawn(struct agent *parent, const char *label, json_t *content, json_t *source,
    const struct subagent_kind *kind, const struct tool_inv *inv, struct err *e);
/* An isolated continuable child, made once its worktree is (docs/contract.md §24): done gets it,
 * or NULL and e (also when the call is cancelled meanwhile: CANCELLED). */
typedef void subagent_spawned_fn(void *arg, struct agent *child, const struct err *e);
/* subagent_spawn for a kind that asks for a worktree: 1 (pending: done follows), or -1 with e.
 * Steals content and source. */
int subagent_spawn_isolated(struct agent *parent, const char *label, json_t *content, json_t *source,
    const struct subagent_kind *kind, struct tool_inv *inv, subagent_spawned_fn *done, void *arg, struct err *e);
/* Whether a child of kind (checked: subagent_kind_check) would be isolated. */
int subagent_kind_isolated(struct agent *parent, const struct subagent_kind *kind);
/* Cold-resumes a stored continuable child of parent (§6.6 checks). NULL with e. */
struct agent *subagent_resume(struct agent *parent, const char *child_id, struct err *e);

/*
 * Listing (§6.4) as the model sees it (§6.5; tools/list_agents.c renders it): returns a new array of
 * {kind:"child", id, label, status[, parent, depth]} | {kind:"diagnostic", id, reason[, parent, depth]}.
 * NULL with e when the state directory cannot be listed.
 */
json_t *subagent_list(struct agent *caller, int descendants, struct err *e);
/* The service-level listing (§6.4) with mode and activity, for tests and the projection. */
json_t *subagent_list_raw(struct agent_rt *rt, const char *parent, int descendants, struct err *e);

/* send_message routing (§6.6). On success fills message_id (37 bytes). */
int subagent_send(struct agent *sender, const char *target, const char *message, char *message_id,
    struct err *e);
/*
 * The same for a tool call that may wait: a message to a stored child whose log is big (at least
 * rt->resume_offload_min) has the log read off the loop. Returns 0 (done: message_id filled) or
 * -1 with e, as subagent_send; or 1: *pending is set, and done gets (arg, target, message_id or
 * NULL, e)
 * once on the loop, unless subagent_send_cancel(*pending) comes first.
 */
struct subagent_sending;
typedef void subagent_sent_fn(void *arg, const char *target, const char *message_id, const struct err *e);
int subagent_send_begin(struct agent *sender, const char *target, const char *message, char *message_id,
    subagent_sent_fn *done, void *arg, struct subagent_sending **pending, struct err *e);
void subagent_send_cancel(struct subagent_sending *sg);	/* the worker is joined; done never runs */
/* interrupt_agent (§6.8). */
int subagent_interrupt(struct agent *caller, const char *target, struct err *e);

/* A parent was loaded or resumed: deliver every settlement notice it has not received (§6.6). */
void subagent_redeliver(struct agent *parent);
/* The notice text for a child that settled with end kind; final and work (an isolated child's
 * line about its work, docs/contract.md §24) may be NULL. Returns owned. */
char *subagent_notice_text(const char *child_id, const char *end_kind, const char *final, const char *work);
/* An isolated child's line about its work after its run (owned by it), or NULL. */
const char *subagent_work(const struct agent *child);
/* The continuable child's first-prompt guidance block (§6.3); returns owned. */
char *subagent_return_guidance(const char *parent_id);

#endif
