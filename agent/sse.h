/*
 * Incremental server-sent-events parser for chat-completion streams (SPEC §7.3).
 * Bytes may be split anywhere (inside UTF-8 characters and "data:" prefixes); the
 * parser hands each complete event's data to the caller. Pure: no I/O.
 */
#ifndef AGENT_SSE_H
#define AGENT_SSE_H

#include <stddef.h>

#include "base/buf.h"

/* data: the event's data lines joined by '\n', borrowed. Returns 0, or -1 to stop. */
typedef int sse_event_fn(void *arg, const char *data, size_t len);

struct sse {
	struct buf line;	/* the current, incomplete line */
	struct buf data;	/* data lines of the current event */
	int has_data;
	sse_event_fn *on_event;
	void *arg;
};

void sse_init(struct sse *p, sse_event_fn *on_event, void *arg);
void sse_free(struct sse *p);
/* Feeds bytes; returns -1 when the callback asked to stop. */
int sse_feed(struct sse *p, const char *data, size_t len);
/* End of stream: a pending event without its blank line is still delivered. */
int sse_finish(struct sse *p);

#endif
