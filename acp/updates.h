/*
 * Events -> session/update payloads (docs/contract.md §3.4, §3.5), for the live stream and the
 * session/load replay. Two renderers of one mapping: from an event's tree (live, and any line
 * the other is unsure of) and from a line's bytes (a load's replay, without a tree per line);
 * check_updates holds their output equal on every scenario log. What a tool's result shows is
 * the tool's (struct tool): this file names no tool. Returns update objects (the value of
 * params.update), never whole notifications, or bytes for the replay.
 */
#ifndef ACP_UPDATES_H
#define ACP_UPDATES_H

#include <jansson.h>

#include "agent/toolbox.h"
#include "base/buf.h"
#include "base/jsonraw.h"

/* The kinds of update both the tree and the line renderers below write (one spelling each). */
#define ACP_UPDATE_USER_CHUNK "user_message_chunk"
#define ACP_UPDATE_AGENT_CHUNK "agent_message_chunk"
#define ACP_UPDATE_THOUGHT_CHUNK "agent_thought_chunk"
#define ACP_UPDATE_TOOL_CALL "tool_call"
#define ACP_UPDATE_NOTICE "notice"

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
/* The live update for one appended event, or NULL (most events show nothing); new ref. */
json_t *acp_update_live(const json_t *ev, const struct toolbox *tb);
/*
 * The replay as a cursor, so a long log is sent in slices (session/load): it walks the events pull
 * gives (a session's file, read back as it goes: the events that were there when it was made;
 * later ones are live updates) and keeps the tool calls whose results it has not seen yet.
 * An event may come as its line in the log: its updates are then written from the line's bytes
 * (the same bytes jenc writes for the trees this file builds), without a tree.
 * tb: borrowed, and must outlive the cursor.
 */
/* The next event: its line (returned, valid until the next pull, *len its length; *ev NULL), or
 * NULL with the event in *ev (new ref), or NULL with *ev NULL at the end. */
typedef const char *acp_replay_pull_fn(void *arg, size_t *len, json_t **ev);
/* The event of a line pull just gave that the bytes could not render, as a tree checked as a load
 * checks it (new ref); NULL ends the replay there (the source says why). A source that gives no
 * lines passes NULL. */
typedef json_t *acp_replay_tree_fn(void *arg, const char *line, size_t len);

struct acp_replay {
	acp_replay_pull_fn *pull;
	acp_replay_tree_fn *tree;
	void *arg;
	const struct toolbox *tb;
	json_t *ev;		/* the event being replayed as a tree: owned (NULL when none) */
	int done;
	size_t blk;		/* its next content block */
	json_t *calls;		/* callId -> the tool-call block (at least its arguments): owned */
	json_t *titles;		/* callId -> the title its tool/call logged (MCP tools): owned */
	int compaction;		/* the client takes compaction_update: each compaction replays */
	struct buf out;		/* the updates of the event being replayed from its line */
	size_t *ends;		/* update i is out.data[ends[i - 1], ends[i]) */
	size_t nends, next, cap_ends;
	struct buf tmp;		/* strings decoded from the line */
	struct json_tape tape;	/* the line's tokens */
};

/* The event types a replay reads (the others show nothing): NULL-terminated. */
extern const char *const acp_replay_types[];
void acp_replay_init(struct acp_replay *r, acp_replay_pull_fn *pull, acp_replay_tree_fn *tree, void *arg,
    const struct toolbox *tb);
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
/* The next update: 1 with it in *tree (new ref), or with *tree NULL as its bytes in *s, *n
 * (valid until the next call on r); 0 once done. */
int acp_replay_next_any(struct acp_replay *r, json_t **tree, const char **s, size_t *n);
/* Appends at most max updates (new refs) to out; returns how many; 0 once done. */
size_t acp_replay_next(struct acp_replay *r, size_t max, json_t *out);
int acp_replay_done(struct acp_replay *r);	/* pulls the next event when needed */
void acp_replay_free(struct acp_replay *r);
/* The replay of a whole log as updates; returns a new array. */
json_t *acp_update_replay(const json_t *events, const struct toolbox *tb);
/* The title a tool call shows; returns owned. */
char *acp_tool_title(const struct toolbox *tb, const char *name, const json_t *args);

#endif
