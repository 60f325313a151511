/*
 * The fast path for the commonest chat-completion stream event: one choice whose delta carries
 * only text (content / reasoning_content) and no finish. Such an event is decoded without
 * building a JSON tree; anything else is left to the full parser.
 */
#ifndef AGENT_SSE_DELTA_H
#define AGENT_SSE_DELTA_H

#include <stddef.h>

#include "base/buf.h"

/* 1 when data is such an event (its text appended to content and reasoning), else 0 (untouched). */
int sse_delta_fast(const char *data, size_t len, struct buf *content, struct buf *reasoning);

#endif
