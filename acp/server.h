/*
 * The ACP server: owns the loop's watchers, the session store, the corpus,
 * the runtime and the model; maps ACP sessions to root agents.
 */
#ifndef ACP_SERVER_H
#define ACP_SERVER_H

#include <ev.h>
#include <jansson.h>

#include "acp/outbound.h"
#include "acp/updates.h"
#include "base/reader.h"
#include "base/wq.h"
#include "agent/agent.h"
#include "agent/toolbox.h"
#include "tools/toolsets.h"
#include "base/map.h"
#include "base/runq.h"
#include "record/record.h"
#include "session/corpus.h"
#include "session/log.h"
#include "session/store.h"

struct acp_options {
	const char *state_dir;
	const char *model;		/* builtin | replay | openai */
	const char *recording;
	const char *profile;
	int workspace;			/* --tools workspace (the default): docs/contract.md §16's tools */
	const char *models;		/* ACP_AGENT_MODELS: the model select's values, or NULL */
	enum permit_mode start_mode;	/* --permission-mode */
	int child_approvals_never;	/* --child-approvals never */
	enum sess_sync sync;
	int max_depth, max_active, max_steps;
	long long context_window;	/* ACP_AGENT_CONTEXT_WINDOW */
	double compact_at;		/* ACP_AGENT_COMPACT_AT */
	int deterministic;
	const char *faults;
	struct openai_config openai;
	const char *record_dir;		/* --record: the scenario directory, or NULL */
	json_t *record_args, *record_env;	/* borrowed: what the replay runs with */
};

/*
 * The ordering gate (acp/gate.c): why a request waits instead of being dispatched now. A line
 * waits before it is dispatched (parked in a lane: the server's for the corpus, a load's for its
 * session); a checked session/prompt waits in its session's one slot.
 */
enum acp_wait {
	ACP_WAIT_NONE,
	ACP_WAIT_CORPUS,	/* the corpus index is not complete: this line and all after it */
	ACP_WAIT_LOAD,		/* its session's file is being read: every line naming it */
	ACP_WAIT_CONV,		/* its session is live, its conversation not yet: a prompt and what follows */
	ACP_WAIT_REPLAY,	/* a prompt: its session's replay is not out yet */
	ACP_WAIT_CANCEL,	/* a prompt: the cancelled turn before it has not answered yet */
	ACP_WAIT_STORE,		/* a prompt: its images are being stored (acp/imgstore.c) */
};

struct acp_parked;

/* Parked lines, in arrival order. */
struct acp_lane {
	struct acp_parked *head, **tail;
	size_t bytes;
};

struct acp_parked_prompt {
	enum acp_wait why;		/* ACP_WAIT_NONE: the slot is free */
	json_t *id, *prompt;		/* owned */
};

/* The server's lane and what its release needs. */
struct acp_gate {
	struct acp_lane corpus;		/* ACP_WAIT_CORPUS */
	ev_idle idle;			/* releases the corpus lane, a line a loop turn (keeps the loop alive) */
	int paused;			/* stdin paused: too much is parked */
	int eof_pending;		/* stdin ended while lines were parked: shut down after them */
};

/*
 * One ACP session. A closed one (agent NULL) is freed by a reap task on the run queue, unless a
 * load opened it again meanwhile; queued work names it by id, never by pointer.
 */
struct acp_session {
	char id[SESS_ID_LEN + 1];
	struct acp_server *srv;
	struct agent *agent;		/* NULL once closed */
	int reap_queued;
	json_t *prompt_id;		/* the pending session/prompt request id, owned */
	char prompt_msg[SESS_ID_LEN + 1];	/* its inbox message id */
	int cancelled;			/* session/cancel arrived while it was pending */
	int replays;			/* session/load replays of it in flight */
	json_t *held;			/* its messages held while replays > 0: owned array, or NULL */
	struct acp_parked_prompt parked;	/* a checked prompt that waits (acp/gate.c) */
	int titled;			/* its title is known (a person's prompt is logged): said once */
	struct acp_store *store;	/* its parked prompt's images being stored, or NULL */

};

struct acp_waiter;
struct acp_child_ask;
struct acp_replay_task;
struct acp_load;
struct acp_store;

struct acp_server {
	struct ev_loop *loop;
	struct reader reader;
	struct wq wq;
	struct runq runq;
	struct sess_env env;
	struct sess_store store;
	struct sess_corpus corpus;
	struct agent_rt rt;
	struct model *model;
	struct record *rec;		/* --record, or NULL */
	struct toolbox tools;
	char **tool_names;		/* owned: every tool name of every profile (agent types' check) */
	struct acp_replay live;		/* renders the live updates of events (acp_update_live) */
	struct buf prefix;		/* scratch: a live update's envelope (acp_send_update_raw) */
	struct map sessions;		/* id -> struct acp_session * */
	struct map noticed;		/* root ids told what their start met (acp_session_notices): once */
	struct acp_session **all;	/* every session not yet reaped, in creation order */
	size_t nall, call;
	struct acp_outbound out;	/* our requests to the client */
	struct agent_client client;	/* the runtime's view of it (rt.client) */
	int client_fs_read, client_fs_write;	/* clientCapabilities.fs, from initialize */
	int client_compaction;		/* clientCapabilities.session.compaction: compaction_update */
	int client_notices;		/* clientCapabilities.session.notices: notice updates */
	int client_plan;		/* clientCapabilities.plan: plan_update and plan_removed */
	int client_subagents;		/* clientCapabilities.subagents: children as sessions (§22) */
	struct map children;		/* child id -> what the client was told of it (acp/children.c) */
	struct agent_watch watch;	/* how the runtime tells of children (acp/children.c) */
	struct acp_child_ask *child_asks;	/* children's asks waiting for the client (acp/children.c) */
	struct acp_waiter *waiters;
	struct acp_replay_task *replays;	/* session/load replays in flight or stopped but queued */
	struct acp_gate gate;		/* requests parked until what they wait for is there (acp/gate.c) */
	struct acp_load *loads;		/* stored sessions being read off the loop (acp/load.c) */
	struct acp_store *stores;	/* images being stored off the loop (acp/imgstore.c) */
	const char *reader_line;	/* the stdin line being dispatched (its buffer can be taken) */
	off_t load_offload_min;		/* a file this big or bigger is read off the loop */
	ev_signal sigint, sigterm;
	const struct toolset_profile *profile;	/* --profile: its extensions and tools */
	int initialized;
	int shutting_down;
	int exit_code;
	struct acp_options opts;
};

/* Sets everything up on loop; proto_fd is the protocol output. Returns 0 or -1 with e. */
int acp_server_init(struct acp_server *srv, struct ev_loop *loop, int in_fd, int proto_fd,
    const struct acp_options *opts, struct err *e);
/* Handles one complete line (the reader's callback; tests call it directly). */
void acp_server_line(void *arg, const char *line, size_t len);
/* Starts the orderly shutdown (stdin EOF, SIGINT, SIGTERM). */
void acp_server_shutdown(struct acp_server *srv);
void acp_server_free(struct acp_server *srv);

#endif
