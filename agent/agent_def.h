/*
 * The agent's struct (agent/agent.h): agent/ only, and tests. Other folders read an agent with
 * agent.h's accessors; make lint checks that none includes this.
 */
#ifndef AGENT_AGENT_DEF_H
#define AGENT_AGENT_DEF_H

#include "agent/agent.h"
#include "agent/agent_types.h"
#include "agent/compose.h"
#include "agent/instructions.h"
#include "agent/conv.h"
#include "base/buf.h"

/* Invariant: req != NULL only while a model request is in flight; invs only while tools run. */
struct agent {
	struct agent_rt *rt;
	struct sess *sess;
	const struct toolbox *tools;	/* borrowed; outlives the agent */
	struct agent_hooks hooks;
	enum agent_status status;
	int released;
	int pins;			/* queued run-queue work that points at it (agent_push) */
	int finishing;			/* work that ends in its log is in flight (an isolated child's
					 * settlement): a shutdown leaves it to release itself */
	int reap_queued;		/* released, unpinned: the reap task is queued */
	int kick_queued;
	struct agent_msg *inbox, *inbox_tail;
	int turn;			/* current or last turn number */
	int step;			/* step within the turn */
	int steps_this_turn;
	int requests;			/* model requests in the log (step/start events) */
	long ordinal;			/* replay ordinal, -1 until computed */
	char *label;			/* a child's label (its descriptor's), owned; NULL: none */
	size_t label_scanned;		/* events read for it */
	char first_msg[SESS_ID_LEN + 1];
	struct agent_instructions instr;	/* its project instructions (docs/contract.md §25) */
	json_t *instr_logged;		/* owned: the files its last context/instructions named, or NULL */
	struct agent_comp comp;		/* a child's composition (docs/contract.md §23.2); a root's is none */
	/* The agent types its workspace has (docs/contract.md §23.1): a root's, read when it starts and
	 * again at a turn when a directory changed; a child's only while its root is not live. A
	 * reference to the runtime memo's shared set (agent_types_shared). */
	struct agent_types *types;
	/* the step in flight */
	struct model_req *req;
	char msg_id[SESS_ID_LEN + 1];
	struct buf text, reasoning;
	json_t *calls;			/* [{callId, name, arguments}] */
	/* The extension tools (MCP) the step's request advertised: a call names one of them even
	 * when its server went away since, and then fails MCP_NOT_READY, never UNKNOWN_TOOL. */
	const struct tool **advertised;
	size_t nadvertised;
	struct tool_inv **invs;
	size_t ninv, nstarted, ncommitted;
	int progress_queued;
	int request_queued;		/* a step began; its model request waits for the sync pass */
	int request_held;		/* an extension holds it (hold_request) */
	int request_released;		/* it was held and released: it goes now */
	int sequential;
	int cancelling;
	struct agent_conv conv;		/* the conversation since the latest compaction (derived) */
	/* a compaction in flight (agent/compact.c) */
	struct model_req *compact_req;
	int compact_why;		/* enum agent_compact_why; 0: none */
	int compact_tried;		/* the step's request compacted once already */
	char compact_id[32];
	int64_t compact_through;
	size_t compact_fixed;		/* the request's system prompt and tools, in bytes */
	struct buf summary;
	agent_compact_done_fn *compact_done;
	void *compact_arg;
	/* extensions' state (agent_state) */
	struct agent_slot {
		const void *key;
		void *state;		/* owned, freed by free_fn when the agent is reaped */
		void (*free_fn)(void *state);
	} slots[AGENT_SLOTS];
	size_t nslots;
};

#endif
