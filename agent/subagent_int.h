/*
 * What the files of delegation share (not an API: agent/subagent*.c only). subagent.c holds the
 * children's state, lineage and capacity, their start and settlement; subagent_list.c the
 * listing; subagent_route.c send_message routing, cold resume, interrupt and redelivery.
 */
#ifndef AGENT_SUBAGENT_INT_H
#define AGENT_SUBAGENT_INT_H

#include "agent/agent_def.h"
#include "agent/subagent.h"
#include "base/buf.h"
#include "base/offload.h"

/* A child's delegation state (agent_state under subagent_ext). */
struct sub_state {
	enum subagent_mode mode;
	int epoch;			/* residencies of a continuable child: 1, 2, ... */
	int delivered;			/* a delivery was accepted since it became resident */
	struct tool_inv *fg_inv;	/* one-shot: the parent's call waiting for it */
	subagent_finish_fn *fg_finish;	/* ... and what renders its result */
	json_t *fg_reason;		/* owned: how its run ended, while its worktree is committed */
	struct buf fg_progress;		/* one-shot: what the parent's call shows; freed when it ends */
	/* an isolated child's worktree (agent/subagent_iso.c) */
	int iso;			/* enum sub_iso */
	struct offload *iso_job;	/* its commit or its adding back, in flight */
	void *iso_arg;			/* that job's argument (freed here if the job is cancelled) */
	char *iso_work;			/* owned: the notice's line about its work, for the next settlement */
};

/* Where an isolated child's worktree is, as far as this process knows. */
enum sub_iso { SUB_ISO_UNKNOWN, SUB_ISO_PRESENT, SUB_ISO_ABSENT, SUB_ISO_BUSY };

/* a's state, made on first use (mode from its header). */
struct sub_state *sub_state(struct agent *a);
/* Child hooks and state for a child that is (again) resident in mode. */
void sub_adopt(struct agent *child, enum subagent_mode mode);

/* A new child of parent (type and model checked again), its descriptor written; id and wt (moved
 * in) for an isolated one, else NULL. NULL with e. */
struct agent *sub_new_child(struct agent *parent, const char *label, int background, const char *type,
    const char *model, const struct tool_inv *inv, const char *id, struct git_wt *wt, struct err *e);
/* The child made for inv: its first prompt posted; a foreground call then waits for its run. */
void sub_start_child(struct tool_inv *inv, struct agent *child, const char *prompt, int background,
    subagent_finish_fn *finish);
void sub_fg_cancel(struct tool_inv *inv);

/* ---- isolated children (agent/subagent_iso.c, docs/contract.md §24) ---- */
/* Makes the worktree off the loop, then the child; the call stays pending: 1, or -1 with e. */
int sub_iso_make(struct tool_inv *inv, const char *description, const char *prompt, int background,
    const struct subagent_kind *kind, subagent_finish_fn *finish, subagent_started_fn *started, struct err *e);
/* The same for a continuable child whose first message is content (a teammate): done gets it. */
int sub_iso_spawn(struct tool_inv *inv, const char *label, json_t *content, json_t *source,
    const struct subagent_kind *kind, subagent_spawned_fn *done, void *arg);
/* Logs worktree/created for a child whose worktree is there (just made or added back). */
int sub_iso_created(struct agent *child, struct err *e);
/* Before a quiescent isolated child settles: 1 while its worktree is committed and removed (the
 * settlement is checked again after), 0 when it may settle now (st->iso_work says its work). */
int sub_iso_settle(struct agent *a);
/* agent_ext.hold_request: an isolated child's request waits for its worktree to be there. */
int sub_iso_hold(struct agent *a, int first);
/* agent_ext.release: a job in flight is cancelled (joined). */
void sub_iso_release(struct agent *a);
/* After the commit: a one-shot child's call gets its result, and the child goes. */
void sub_oneshot_finished(struct agent *a);
/* A continuable child's settlement is checked again (from the run queue). */
void sub_settle_again(struct agent *a);
/* a's settlement logged (subagent/settled: its epoch, how its last turn ended, its work line) and
 * synced: how it ended (in end_buf), or NULL with e. The notice is the caller's. */
const char *sub_settle_record(struct agent *a, char *end_buf, size_t size, struct err *e);
/* The process exits while a's settlement work ran: a quiescent continuable child's settlement
 * and its view of the notice are logged (the parent hears at its next load); one whose turn began
 * meanwhile is left to that load. */
void sub_settle_at_exit(struct agent *a);
/* a's label (its descriptor's), "" for none; borrowed. */
const char *sub_label(const struct agent *a);

/* The root of id's tree (live or stored) into out; 1 when id lies below ancestor. */
void sub_root_of(struct agent_rt *rt, const char *id, char out[SESS_ID_LEN + 1]);
int sub_is_descendant(struct agent_rt *rt, const char *id, const char *ancestor);
/* 0, or -1 with e (ACTIVATION_LIMIT_REACHED) when for_id's tree holds max_active residents. */
int sub_capacity(struct agent_rt *rt, const char *for_id, struct err *e);
int sub_is_subagent(const struct sess_entry *en);

json_t *sub_text_blocks(const char *text);	/* new ref: [{type:"text", text}] */
/* Posts a settlement notice to a live parent; child: the settling child while it is live (it
 * logs its view of the notice, agent/view.h), or NULL (a notice redelivered on load: child_view is
 * the view the child logged when it settled, or NULL). */
void sub_post_notice(struct agent *parent, struct agent *child, const char *child_id, const char *child_view,
    long epoch, const char *end, const char *final, const char *work);
/* A continuable child loaded after a crash cut its residency off (its last turn ran past its
 * last settlement): it settles as any quiescent child does, notice owed (docs/decisions.md). */
void sub_settle_cut_off(struct agent *child);
/* The highest epoch a child's events record as settled, 0 for none. */
long sub_settled_epochs(const json_t *events);

#endif
