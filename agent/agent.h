/*
 * One agent: its session, inbox and turn/step state machine (docs/contract.md §4).
 * The agent id is its session id. Everything an agent does is an event in its
 * session; observers of the session see it. Live deltas and turn ends go to
 * the owner's hooks.
 */
#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

#include <jansson.h>

#include "agent/client.h"
#include "agent/conv.h"
#include "agent/ext.h"
#include "agent/toolbox.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/map.h"
#include "base/runq.h"
#include "model/model.h"
#include "session/corpus.h"
#include "session/store.h"

struct agent;
struct agent_types;

/* The owner's callbacks (the ACP server for roots). */
struct agent_hooks {
	/* A live delta of the current assistant message. */
	void (*delta)(void *arg, struct agent *a, int reasoning, const char *msg_id, const char *s,
	    size_t n);
	/*
	 * A turn ended. first_msg_id: the id of the message that started it.
	 * reason: {kind, cause?, message?, code?} borrowed.
	 */
	void (*turn_end)(void *arg, struct agent *a, const char *first_msg_id, const json_t *reason);
	/* Progress of a pending tool call (a foreground child's work): text borrowed. */
	void (*tool_progress)(void *arg, struct agent *a, const char *call_id, const char *child_id,
	    const char *text);
	/* The context window's use after a model response that reported usage, or a compaction. */
	void (*usage)(void *arg, struct agent *a, long long used);
	/*
	 * A compaction (docs/contract.md §19): status in_progress, then completed (text: the summary), failed
	 * (text: why) or cancelled. id: "compaction-<n>". Strings borrowed.
	 */
	void (*compaction)(void *arg, struct agent *a, const char *id, const char *status,
	    const char *text);
	void *arg;
};

/* What a /compact asked for hears at the end: status completed, failed (error) or cancelled. */
typedef void agent_compact_done_fn(void *arg, struct agent *a, const char *status, const char *error);

struct tool_inv;

/*
 * What a client that shows children as sessions of their own hears of every child agent's life
 * (docs/contract.md §22): the server sets rt->watch when its client advertised it; NULL
 * otherwise. Only children (agents with a parent) are told of. Called from the run queue's tasks,
 * never re-entrantly; a may not be released from inside.
 */
struct agent_watch {
	/* A child was made (its descriptor is logged, its first message not posted yet), or went
	 * live again (a cold resume: its session is a new one); inv: the parent's call that made it,
	 * or NULL (a teammate, a resume). Its turn has not started yet. */
	void (*born)(void *arg, struct agent *child, const struct tool_inv *inv);
	void (*turn_start)(void *arg, struct agent *a);
	/* reason: the turn/end's {kind, cause?, message?, code?}, borrowed. */
	void (*turn_end)(void *arg, struct agent *a, const json_t *reason);
	void (*delta)(void *arg, struct agent *a, int reasoning, const char *msg_id, const char *s, size_t n);
	/* Released: its session is still there, for the last time. */
	void (*released)(void *arg, struct agent *a);
	void *arg;
};

/* The runtime every agent of the process shares. Owned by the server. */
struct agent_rt {
	struct runq *runq;
	struct sess_env *env;
	struct sess_store *store;
	struct sess_corpus *corpus;
	struct model *model;
	int max_steps;
	long long context_window;	/* ACP_AGENT_CONTEXT_WINDOW: tokens */
	double compact_at;		/* ACP_AGENT_COMPACT_AT: a fraction of the window */
	/* Caps a tool's text to the model (docs/contract.md §19; the server sets tools_cap_text), or NULL. */
	void (*cap_text)(struct agent *a, const char *name, char **text, size_t *len);
	int max_depth;
	int max_active;
	int shutting_down;		/* disposal, not settlement: no notices */
	struct ev_loop *loop;		/* for timers (wait_agent); may be NULL in tests */
	/* A cold resume by send_message reads a child's log this big off the loop (0: never). */
	long long resume_offload_min;
	const struct agent_ext *const *exts;	/* the profile's extensions, NULL-terminated; borrowed */
	const struct agent_client *client;	/* the editor (acp/), or NULL: nothing to ask */
	const struct agent_watch *watch;	/* children as client sessions (acp/), or NULL */
	/* The user's home and config directories (borrowed; NULL: none): the user's instructions
	 * file (docs/contract.md §25). */
	const char *home, *config_home;
	/* Every tool name this build has (NULL-terminated, borrowed; NULL: none): a type file naming
	 * another is warned about (docs/contract.md §23.1). */
	const char *const *tool_names;
	/* What the agent type files said when last read (owned; docs/contract.md §23.1). */
	struct agent_types_memo *types_memo;
	/* ACP_AGENT_MODELS, the models a subagent call may name (a comma list, borrowed), or NULL:
	 * any (docs/contract.md §23.2). */
	const char *models;
	enum permit_mode start_mode;		/* --permission-mode: a new root's mode */
	int child_approvals_never;		/* --child-approvals never */
	/* A workspace tool is about to touch abs, a path under root (the recorder's fixture,
	 * docs/contract.md §21), or NULL. */
	void (*touch)(void *arg, const char *root, const char *abs);
	void *touch_arg;
	/* --record: replay ordinals rank only the sessions this process created, the first at
	 * run_since (0 until then); older ones in the state directory are not in the recording. */
	int rank_this_run;
	int64_t run_since;
	int lingering;			/* work that outlives its agents (agent_rt_linger) */
	int working;			/* an agent's work off the loop that will wake it (a worktree's) */
	struct map agents;		/* id -> live struct agent * */
	struct agent **all;		/* every agent not yet reaped, in creation order */
	size_t nall, call;
};

enum agent_status { AGENT_IDLE, AGENT_RUNNING };

#define AGENT_SLOTS 4		/* extensions that keep state per agent */

struct agent_msg {
	char id[SESS_ID_LEN + 1];
	json_t *content;	/* owned: [block] */
	json_t *source;		/* owned: {kind, ...} */
	struct agent_msg *next;
};

/* An agent: opaque outside agent/ (its struct is agent/agent_def.h's); read it with the
 * accessors below. */
struct agent;


/* ---- what other folders read of an agent ---- */
struct agent_rt *agent_rt_of(const struct agent *a);
struct sess *agent_sess(const struct agent *a);	/* NULL once released */
const struct toolbox *agent_tools(const struct agent *a);
/* The owner's hooks (the ACP server sets them on its roots). */
struct agent_hooks *agent_hooks(struct agent *a);
enum agent_status agent_status(const struct agent *a);
int agent_released(const struct agent *a);
int agent_turn(const struct agent *a);	/* the current or last turn */
int agent_step(const struct agent *a);	/* the step within it */

void agent_rt_init(struct agent_rt *rt, struct runq *q, struct sess_env *env,
    struct sess_store *store, struct sess_corpus *corpus, struct model *model);
/* Cancels live turns (cause disposed), releases every agent. */
void agent_rt_shutdown(struct agent_rt *rt);
void agent_rt_free(struct agent_rt *rt);
struct agent *agent_rt_get(struct agent_rt *rt, const char *id);
/* The extensions every agent of rt runs with (borrowed, NULL-terminated; set before the first agent). */
void agent_rt_set_exts(struct agent_rt *rt, const struct agent_ext *const *exts);
/* A root came back to a client (session/load, session/resume): every extension's recover hook. */
void agent_rt_recover(struct agent *a);
/* What a root met when it started that its user should hear of (docs/contract.md §27): the
 * instructions file cut at 32 KiB (NULL: none), and the agent type files skipped ([{path,
 * reason}]); both borrowed. */
const char *agent_instructions_cut(const struct agent *a);
/* The additional directories of a's tree (docs/contract.md §27): its root's last session/roots
 * (new ref), or NULL. */
json_t *agent_additional_dirs(struct agent *a);
const json_t *agent_types_skipped(struct agent *a);
/*
 * session/delete (docs/contract.md §27; agent/delete.c), in two steps. The plan: root's tree (a
 * root session's id and every session whose lineage leads to it), or NULL with e and nothing
 * changed (ERR_UNKNOWN_SESSION, ERR_CHILD_SESSION, ERR_SESSION_BUSY: another process holds one of
 * it); the tree's logs are held from here. Then mark (ERR_SESSION_LOG_IO), then (the root's ACP
 * session closed meanwhile) go: the tree's agents stopped, and every session of it removed, with
 * its spill directory and worktree (branches kept); done(arg, NULL) runs once the rest is. The
 * plan is freed by a failed mark, by go's end, or by abandon.
 */
struct agent_delete;
typedef void agent_delete_done_fn(void *arg, const struct err *e);
struct agent_delete *agent_rt_delete_plan(struct agent_rt *rt, const char *root, struct err *e);
/* The tombstone written and the root's log unlinked: 0, or -1 with e and nothing changed (the plan
 * freed). */
int agent_delete_mark(struct agent_delete *d, struct err *e);
void agent_delete_go(struct agent_delete *d, agent_delete_done_fn *done, void *arg);
void agent_delete_abandon(struct agent_delete *d);
/* Start-up: deletions a crash cut off are finished (off the loop). */
void agent_rt_finish_deletes(struct agent_rt *rt);
/* a's worktree is about to be committed and removed: the extensions stop what runs in it. */
void agent_worktree_leaving(struct agent *a);
/*
 * Work that outlives its agents and must end before the process exits (an MCP server's
 * shutdown): +1 when it begins, -1 when it ends (then the run queue is kicked, so the
 * server's settle hook sees it). agent_rt_lingering: how many are left.
 */
void agent_rt_linger(struct agent_rt *rt, int delta);
int agent_rt_lingering(const struct agent_rt *rt);
/*
 * A root's ACP session parameters (session/new, load, resume) to every extension's
 * session_params hook: a == NULL checks only (before the root exists). 0, or -1 with e.
 */
int agent_rt_session_params(struct agent_rt *rt, struct agent *a, const json_t *params, struct err *e);
/* 1 when no agent runs and none has work queued. */
int agent_rt_idle(const struct agent_rt *rt);

/* A new root agent with a fresh (unpublished) session. */
struct agent *agent_new_root(struct agent_rt *rt, const char *cwd, const struct toolbox *tools,
    const struct agent_hooks *hooks);
/* An agent over a stored session, loaded for writing (repair, lease). NULL with e. */
/* Makes a new root durable now (docs/contract.md §20): its file is published with the header and a
 * session/created {mode, model} event. 0, or -1 with e (session_log_io). */
int agent_publish_root(struct agent *a, const char *mode, const char *model, struct err *e);
struct agent *agent_load(struct agent_rt *rt, const char *id, const struct toolbox *tools,
    const struct agent_hooks *hooks, struct err *e);
/* An agent over a session sess_store_load_finish made live (a load run in steps: the caller read
 * the file off the loop); what agent_load does after its sess_store_load. */
struct agent *agent_adopt(struct agent_rt *rt, struct sess *s, const struct toolbox *tools,
    const struct agent_hooks *hooks);
/* The same with the conversation already rebuilt (off the loop) from s's events: conv is moved
 * into the agent and left empty. */
struct agent *agent_adopt_conv(struct agent_rt *rt, struct sess *s, struct agent_conv *conv,
    const struct toolbox *tools,
    const struct agent_hooks *hooks);
/* The conversation of a's first n events, rebuilt off the loop while the session was already
 * live: moved in (conv is left empty), with the events appended since folded on top. */
void agent_set_conv(struct agent *a, struct agent_conv *conv, size_t n);
/* An extension's event in a's log (tools/ append through here, never to a session): steals
 * data; 0, or -1 when there is no session or the log failed (said on stderr). */
int agent_append(struct agent *a, const char *type, json_t *data);
/* Queues a message; steals content and source; writes its id to out_id (may be NULL). */
void agent_post(struct agent *a, json_t *content, json_t *source, char *out_id);
/* Removes a queued, not yet started message; returns 1 when it was there. */
int agent_withdraw(struct agent *a, const char *msg_id);
/* Cancels the current turn with cause (user, parent, disposed); a no-op when idle. */
void agent_cancel(struct agent *a, const char *cause);
/* Cancels the turns of a and of every live descendant of a (cause as above). */
void agent_cancel_tree(struct agent *a, const char *cause);
/* The description of a child's agent type as a client is shown it (docs/contract.md §22.1), from
 * its corpus entry (NULL: the general type's). */
const char *agent_type_description(const struct sess_entry *en);
/* The agent types a's workspace has (its root's; read for a itself when its root is not live). */
const struct agent_types *agent_types_of(struct agent *a);
/* The name of a's agent type: "general" for a root. */
const char *agent_type_name(const struct agent *a);
/* At start-up: removes, off the loop, the directories under <state-dir>/worktrees that git does
 * not list (a crash during their making or removal); a listed one is its child's to settle. */
void agent_rt_sweep_worktrees(struct agent_rt *rt);
/* Where an isolated child's worktree lives: <state-dir>/worktrees/<id> (owned; docs/contract.md §24). */
char *agent_worktree_path(const struct agent_rt *rt, const char *id);
/* a's model requests per turn (its type's limit, else --max-steps). */
int agent_max_steps(const struct agent *a);
/*
 * Disposes: cancels (disposed), syncs and releases the session. The struct is freed later, by a
 * reap task on the run queue that runs once no queued work points at it any more.
 */
void agent_release(struct agent *a);
/*
 * Lifetime of the struct: run-queue work that takes an agent pins it (agent_push*), and its task
 * unpins it first thing (agent_unpin), before it looks at anything; after the last unpin a released
 * agent is reaped from the run queue, never from inside a callback of its own. A task that finds
 * its agent released does nothing.
 */
void agent_push(struct agent *a, runq_fn *fn);
void agent_push_after_sync(struct agent *a, runq_fn *fn);
void agent_push_next(struct agent *a, runq_fn *fn);	/* runq_push_next */
void agent_unpin(struct agent *a);
const char *agent_id(const struct agent *a);
/*
 * An extension's state for a, under key (the address of an object of the extension's own), or
 * NULL. agent_state_set gives a the state (owned; free_fn runs when a is reaped) and must be
 * called at most once per key; at most AGENT_SLOTS keys per agent.
 */
void *agent_state(const struct agent *a, const void *key);
void agent_state_set(struct agent *a, const void *key, void *state, void (*free_fn)(void *state));
const char *agent_parent(const struct agent *a);

/* The call in flight with call_id (the step's), or NULL. */
const struct tool_inv *agent_find_call(const struct agent *a, const char *call_id);
/* The final assistant text of the last turn (owned), or NULL when it left none. */
char *agent_final_text(const struct agent *a);
/* The same over a log's events (borrowed, in order): the latest turn's last text. Owned or NULL. */
char *agent_final_text_of(const json_t *events);
/* A new child agent (unpublished session with parentSession/origin); the caller sets it up. id:
 * the one chosen for it (NULL: a new one); cwd: its workspace (NULL: its parent's). */
struct agent *agent_new_child(struct agent_rt *rt, const struct agent *parent, const struct toolbox *tools,
    const char *id, const char *cwd);
/* Whether a is an isolated child, its workspace its own worktree (docs/contract.md §24). */
int agent_isolated(const struct agent *a);
/* Whether a's workspace lies under <state-dir>/worktrees (whoever owns it now). */
int agent_in_worktrees(const struct agent *a);
/* The isolated agent whose worktree a works in (a itself or a live ancestor), or NULL. */
struct agent *agent_worktree_owner(struct agent *a);

/* The tool named name: the profile's, else an extension's (agent_ext.toolbox); NULL when none. */
const struct tool *agent_find_tool(struct agent *a, const char *name);
/* Every tool a has now, as [{name, description, parameters}] for a model; new ref. */
json_t *agent_describe_tools(struct agent *a);
/* A request an extension held (agent_ext.hold_request) goes; a no-op when none is held. */
void agent_request_release(struct agent *a);

/* The system prompt for a (docs/contract.md §4); returns owned. */
char *agent_system_prompt(const struct agent *a);
/*
 * Compacts an idle agent's conversation now (/compact, docs/contract.md §19): the agent runs until the
 * summary is logged, then done is called (from the run queue, never before this returns). 0, or
 * -1 when the agent is running (nothing happens).
 */
int agent_compact(struct agent *a, agent_compact_done_fn *done, void *arg);

#endif
