/*
 * Incremental server-sent-events parser: chat-completion streams (docs/contract.md §7.3) and MCP's
 * Streamable HTTP replies (§18). Bytes may be split anywhere (inside UTF-8 characters and
 * "data:" prefixes); the parser hands each complete event's data to the caller and keeps the
 * last "id:" and "retry:" (what a client needs to resume the stream). Pure: no I/O.
 */
#ifndef BASE_SSE_H
#define BASE_SSE_H

#include <stddef.h>

#include "base/buf.h"

/* The longest line, and the most data of one event, a stream may send: READER_LINE_MAX's 64 MiB. */
#define SSE_LINE_MAX ((size_t)64 * 1024 * 1024)

/* The longest "retry:" kept: a day. */
#define SSE_RETRY_MAX_MS 86400000L

/* data: the event's data lines joined by '\n', borrowed. Returns 0, or -1 to stop. */
typedef int sse_event_fn(void *arg, const char *data, size_t len);

/* Invariant: line.len <= max and data.len <= max, so memory stays bounded whatever the server sends. */
struct sse {
	struct buf line;	/* the current, incomplete line */
	struct buf data;	/* data lines of the current event */
	int has_data;
	struct buf id;		/* the last "id:" field: the Last-Event-ID to resume from, once has_id */
	int has_id;
	long retry_ms;		/* the last "retry:" field (the reconnection delay), -1 before one */
	size_t max;		/* the longest line, and the most data of one event */
	const char *too_long;	/* "line" or "event" once one went over max; the stream is then stopped */
	sse_event_fn *on_event;
	void *arg;
};

/* max: SSE_LINE_MAX, or a small one in tests. */
void sse_init(struct sse *p, size_t max, sse_event_fn *on_event, void *arg);
void sse_free(struct sse *p);
/* Feeds bytes; returns -1 when the callback asked to stop or too_long was set (then always -1). */
int sse_feed(struct sse *p, const char *data, size_t len);
/* End of stream: a pending event without its blank line is still delivered. */
int sse_finish(struct sse *p);

#endif
