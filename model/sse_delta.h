/*
 * The fast path for the commonest chat-completion stream event: one choice whose delta carries
 * only text (content / reasoning_content) and no finish. Such an event is decoded without
 * building a JSON tree; anything else is left to the full parser.
 */
#ifndef MODEL_SSE_DELTA_H
#define MODEL_SSE_DELTA_H

#include <stddef.h>

#include "base/buf.h"

/* What one stream has taught the fast path: see d_template in sse_delta.c. */
struct sse_delta {
	struct buf prefix, suffix;	/* the last text event before and after its text string */
	int into;			/* 0: nothing learnt; 1: content; 2: reasoning */
};

void sse_delta_init(struct sse_delta *d);
void sse_delta_free(struct sse_delta *d);
/* 1 when data is such an event (its text appended to content and reasoning), else 0 (untouched). */
int sse_delta_fast(struct sse_delta *d, const char *data, size_t len, struct buf *content, struct buf *reasoning);

#endif
