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
/* The replay of a whole log as updates; returns a new array. */
json_t *acp_update_replay(const json_t *events, const struct toolbox *tb);
/* The title a tool call shows; returns owned. */
char *acp_tool_title(const struct toolbox *tb, const char *name, const json_t *args);

#endif
