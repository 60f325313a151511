/*
 * Events -> session/update payloads (SPEC §3.4, §3.5). One mapping serves the
 * live stream and the session/load replay. Returns update objects (the value
 * of params.update), never whole notifications.
 */
#ifndef ACP_UPDATES_H
#define ACP_UPDATES_H

#include <jansson.h>

#include "agent/toolbox.h"

/* A text or reasoning delta; returns new ref. */
json_t *acp_update_chunk(int reasoning, const char *msg_id, const char *text, size_t len);
/*
 * The toolCallId a client sees (SPEC §20): made by the runtime from the turn and step of the call
 * and the provider's id, so it is unique within the session across restarts even when a provider
 * reuses its ids (the provider's id stays in the log, for the model). Returns owned.
 */
char *acp_tool_call_id(long long turn, long long step, const char *call_id);
/* Progress of a pending delegation call (a foreground child's work); returns new ref. */
json_t *acp_update_progress(const char *tool_call_id, const char *child_id, const char *text);
/* The live update for one appended event, or NULL (most events show nothing); new ref. */
json_t *acp_update_live(const json_t *ev, const struct toolbox *tb);
/*
 * The replay as a cursor, so a long log is sent in slices (session/load): it walks the events that
 * were there when it was made (later ones are live updates) and keeps the tool calls it has seen.
 * events and tb: borrowed, and must outlive the cursor (hold a reference to events).
 */
struct acp_replay {
	const json_t *events;
	const struct toolbox *tb;
	size_t end;		/* events [0, end) are replayed */
	size_t next;		/* the event being replayed */
	size_t blk;		/* its next content block */
	json_t *calls;		/* callId -> the tool-call block: owned */
	json_t *titles;		/* callId -> the title its tool/call logged (MCP tools): owned */
	int compaction;		/* the client takes compaction_update: each compaction replays */
};

void acp_replay_init(struct acp_replay *r, const json_t *events, const struct toolbox *tb);
/* A compaction_update {compactionId, status}, with the summary or error when given; new ref. */
json_t *acp_update_compaction(const char *id, const char *status, const char *summary, const char *error);
/* The usage_update of SPEC §19; new ref. */
json_t *acp_update_usage(long long used, long long size);
/* Appends at most max updates (new refs) to out; returns how many; 0 once done. */
size_t acp_replay_next(struct acp_replay *r, size_t max, json_t *out);
int acp_replay_done(const struct acp_replay *r);
void acp_replay_free(struct acp_replay *r);
/* The replay of a whole log as updates; returns a new array. */
json_t *acp_update_replay(const json_t *events, const struct toolbox *tb);
/* The title a tool call shows; returns owned. */
char *acp_tool_title(const struct toolbox *tb, const char *name, const json_t *args);

#endif
