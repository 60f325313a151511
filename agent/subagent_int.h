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

/* A child's delegation state (agent_state under subagent_ext). */
struct sub_state {
	enum subagent_mode mode;
	int epoch;			/* residencies of a continuable child: 1, 2, ... */
	int delivered;			/* a delivery was accepted since it became resident */
	struct tool_inv *fg_inv;	/* one-shot: the parent's call waiting for it */
	subagent_finish_fn *fg_finish;	/* ... and what renders its result */
	struct buf fg_progress;		/* one-shot: what the parent's call shows; freed when it ends */
};

/* a's state, made on first use (mode from its header). */
struct sub_state *sub_state(struct agent *a);
/* Child hooks and state for a child that is (again) resident in mode. */
void sub_adopt(struct agent *child, enum subagent_mode mode);

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
    long epoch, const char *end, const char *final);
/* A continuable child loaded after a crash cut its residency off (its last turn ran past its
 * last settlement): it settles as any quiescent child does, notice owed (docs/decisions.md). */
void sub_settle_cut_off(struct agent *child);
/* The highest epoch a child's events record as settled, 0 for none. */
long sub_settled_epochs(const json_t *events);

#endif
