/*
 * Messages between agents as both sessions see them (docs/contract.md §22.2): each delivery is
 * logged as a message/view event on the sender's session (outgoing) and on the recipient's
 * (incoming), each with the whole content as the sender wrote it. A view's id is msg-<n>, n
 * counted per session from 1 (sess_views); the other view's id is kept where it is known. The
 * log is the record: a client that shows children renders these events, live and on load.
 * A view that cannot be logged is warned about and never stops the delivery (the session is
 * failed by the write, and its next turn says so).
 */
#ifndef AGENT_VIEW_H
#define AGENT_VIEW_H

#include <jansson.h>

#include "agent/agent.h"

#define AGENT_VIEW_ID_LEN 25	/* "msg-", a size_t (20 digits), NUL */

/* Both views of a message from one live agent to another, each naming the other's id; content
 * borrowed. */
void agent_view_pair(struct agent *from, struct agent *to, const json_t *content);
/* The outgoing view only (the incoming one comes later, or never) to to_id (NULL: not known
 * yet): its id in id_out (may be NULL; "" when it was not logged). */
void agent_view_out(struct agent *from, const char *to_id, const json_t *content, char id_out[AGENT_VIEW_ID_LEN]);
/* The incoming view only, from from_id whose outgoing view is from_msg (NULL: none, or unknown). */
void agent_view_in(struct agent *to, const char *from_id, const char *from_msg, const json_t *content);

#endif
