/*
 * Events -> session/update payloads (docs/contract.md §3.4, §3.5), for the live stream and the
 * session/load replay: one renderer, from an event's bytes (a replayed line as it lies in the
 * log, a tree's canonical encoding otherwise; docs/decisions.md, "One update renderer"). What a
 * tool's result shows is the tool's (struct tool): this file names no tool. Returns update
 * objects (the value of params.update), never whole notifications, or bytes for the replay.
 */
#ifndef ACP_UPDATES_H
#define ACP_UPDATES_H

#include <jansson.h>

#include "agent/toolbox.h"
#include "base/buf.h"
#include "base/jsonraw.h"
#include "session/id.h"

/* The kinds of update written here and by the constructors below (one spelling each). */
#define ACP_UPDATE_USER_CHUNK "user_message_chunk"
#define ACP_UPDATE_AGENT_CHUNK "agent_message_chunk"
#define ACP_UPDATE_THOUGHT_CHUNK "agent_thought_chunk"
#define ACP_UPDATE_TOOL_CALL "tool_call"
#define ACP_UPDATE_NOTICE "notice"
#define ACP_UPDATE_SESSION_MESSAGE "session_message"

/* A text or reasoning delta; returns new ref. */
json_t *acp_update_chunk(int reasoning, const char *msg_id, const char *text, size_t len);
/*
 * The toolCallId a client sees (docs/contract.md §20): made by the runtime from the turn and step of the call
 * and the provider's id, so it is unique within the session across restarts even when a provider
 * reuses its ids (the provider's id stays in the log, for the model). Returns owned.
 */
char *acp_tool_call_id(long long turn, long long step, const char *call_id);
/* Progress of a running call (bash output, a foreground child's work) after lead (borrowed, the
 * content the call showed first), or after nothing when NULL; returns new ref. */
/* A notice {severity, title, description?}; strings borrowed; returns new ref. */
json_t *acp_update_notice(const char *severity, const char *title, const char *description);
json_t *acp_update_progress(const char *tool_call_id, const char *child_id, const char *text, const json_t *lead);

/*
 * The replay as a cursor, so a long log is sent in slices (session/load): it walks the events pull
 * gives (a session's file, read back as it goes: the events that were there when it was made;
 * later ones are live updates) and keeps the tool calls whose results it has not seen yet.
 * An event may come as its line in the log: its updates are then written from the line's bytes,
 * without a tree; an event that comes as a tree is written from its canonical bytes.
 * tb: borrowed, and must outlive the cursor.
 */
/* The next event: its line (returned, valid until the next pull, *len its length; *ev NULL), or
 * NULL with the event in *ev (new ref), or NULL with *ev NULL at the end. */
typedef const char *acp_replay_pull_fn(void *arg, size_t *len, json_t **ev);
/* The event of a line pull just gave that the bytes were not sure of, as a tree checked as a load
 * checks it (new ref); NULL ends the replay there (the source says why). A source that gives no
 * lines passes NULL. */
typedef json_t *acp_replay_tree_fn(void *arg, const char *line, size_t len);

struct acp_replay {
	acp_replay_pull_fn *pull;
	acp_replay_tree_fn *tree;
	void *arg;
	const struct toolbox *tb;
	int done;
	size_t checked;		/* updates of lines the bytes were not sure of (checked, then canonical) */
	json_t *calls;		/* callId -> {arguments} of a call whose result is not replayed yet: owned */
	json_t *titles;		/* callId -> the title its tool/call logged (MCP tools): owned */
	int compaction;		/* the client takes compaction_update: each compaction replays */
	int subagents;		/* the client shows children as sessions: a delegation links its child */
	int plan;		/* the client takes plan_update and plan_removed (else the legacy plan) */
	const char *state_dir;	/* where an image block's blob is read (docs/contract.md §27); borrowed */
	char sid[SESS_ID_LEN + 1];	/* the session the updates go to: its plan's id (docs/contract.md §26) */
	char linked[SESS_ID_LEN + 1];	/* the child the event being replayed linked (a delegation's result), or "" */
	char named[2][SESS_ID_LEN + 1];	/* the sessions a message view being replayed names, or "" */
	struct buf out;		/* the updates of the event being replayed */
	struct buf canon;	/* its canonical bytes, when it came as a tree or its line was not sure */
	size_t *ends;		/* update i is out.data[ends[i - 1], ends[i]) */
	size_t nends, next, cap_ends;
	struct buf tmp;		/* strings decoded from the line */
	struct json_tape tape;	/* the line's tokens */
};

/* The event types a replay reads (the others show nothing): NULL-terminated. */
extern const char *const acp_replay_types[];
void acp_replay_init(struct acp_replay *r, acp_replay_pull_fn *pull, acp_replay_tree_fn *tree, void *arg,
    const struct toolbox *tb);
/* The live update for one appended event: 1 with its bytes in r->out (data[0..len), valid until
 * the next use of r), or 0 (most events show nothing). r: a renderer of the caller's, made with
 * acp_replay_init(r, NULL, NULL, NULL, tb) and kept (its buffers serve every event). */
int acp_update_live(struct acp_replay *r, const json_t *ev);
/* A source over an array of events in memory (borrowed; it must outlive the replay): events
 * [next, end), those there were when the replay was made. */
struct acp_replay_array {
	const json_t *events;
	size_t next, end;
};
const char *acp_replay_array_pull(void *arg, size_t *len, json_t **ev);	/* arg: struct acp_replay_array * */
/* A compaction_update {compactionId, status}, with the summary or error when given; new ref. */
json_t *acp_update_compaction(const char *id, const char *status, const char *summary, const char *error);
/* The usage_update of docs/contract.md §19; new ref. */
json_t *acp_update_usage(long long used, long long size);
/* The next update: 1 with its bytes in *s, *n (valid until the next call on r); 0 once done. */
int acp_replay_next_update(struct acp_replay *r, const char **s, size_t *n);
/* Appends at most max updates (new refs) to out; returns how many; 0 once done. */
size_t acp_replay_next(struct acp_replay *r, size_t max, json_t *out);
int acp_replay_done(struct acp_replay *r);	/* pulls the next event when needed */
void acp_replay_free(struct acp_replay *r);
/* The replay of a whole log as updates; returns a new array. */
json_t *acp_update_replay(const json_t *events, const struct toolbox *tb);
/* The title a tool call shows; returns owned. */
char *acp_tool_title(const struct toolbox *tb, const char *name, const json_t *args);

#endif
