/*
 * The children of the chat's session, as an agent that shows them as sessions sends them
 * (docs/contract.md §22): each child's stream is rendered by a renderer of its own, and its
 * complete lines are written with its label in front, so a child's work never runs into the
 * root's or another child's line. Its state changes are one line each.
 */
#ifndef CHAT_CHILDREN_H
#define CHAT_CHILDREN_H

#include <jansson.h>

#include "base/buf.h"
#include "base/map.h"
#include "chat/render.h"

struct chat_children {
	struct map by_id;	/* child session id -> struct chat_child (owned) */
	int tty;
};

void chat_children_init(struct chat_children *k, int tty);
void chat_children_free(struct chat_children *k);
/*
 * A session/update of session sid (the root is root_sid; its renderer root, whose line is ended
 * before a child's line is written). Returns 1 when it was about a child (a subagent_update, or
 * an update of a child's session: rendered into out, or dropped for a session it does not know),
 * 0 when it is the root's own to render. update: borrowed.
 */
int chat_children_update(struct chat_children *k, struct chat_render *root, const char *root_sid, const char *sid,
    const json_t *update, struct buf *out);
/* A session/request_permission of a child's (params.sessionId): rendered by its renderer, saying
 * whose it is, after what the child showed before; 1, or 0 when it is not a child's. */
int chat_children_ask(struct chat_children *k, struct chat_render *root, const json_t *params, struct buf *out);

#endif
