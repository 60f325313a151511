/*
 * A write queue on a non-blocking fd (ACP stdout, docs/contract.md §3.1; an MCP server's stdin, §18): one frame
 * per message, written in order without ever blocking the loop; watermarks drive backpressure.
 */
#ifndef BASE_WQ_H
#define BASE_WQ_H

#include <stddef.h>

#include <ev.h>
#include <jansson.h>

#include "base/buf.h"

#define WQ_HIGH ((size_t)8 * 1024 * 1024)
#define WQ_LOW ((size_t)1 * 1024 * 1024)

struct wq {
	ev_io io;		/* first member */
	struct ev_loop *loop;
	int fd;
	struct buf out;		/* queued bytes; out.data[0..off) already written */
	size_t off;
	int failed;		/* EPIPE or another write error: output is dropped */
	int above_high;		/* went above WQ_HIGH and has not drained below WQ_LOW since */
	unsigned long long total;	/* bytes queued since init: a producer's budget counts them */
	size_t peak;		/* the most bytes ever queued at once (tests, logs) */
	void (*on_high)(void *arg);	/* queue went above WQ_HIGH: stdin and producers pause */
	void (*on_low)(void *arg);	/* drained below WQ_LOW after that: they go on */
	void (*on_error)(void *arg);
	void *arg;
	FILE *trace;		/* when set, every frame is copied here (tests) */
	int corked;		/* frames are queued, not written, until wq_uncork */
	size_t wait_below;	/* a producer waits for the queue to drain to this (0: none) */
};

void wq_init(struct wq *q, struct ev_loop *loop, int fd);
/* Queues msg as one compact line; msg: borrowed. */
void wq_push(struct wq *q, const json_t *msg);
/* The same inside an envelope the caller wrote as bytes: pre, msg's encoding, post, one line (a
 * message that could not be encoded is dropped whole). */
void wq_push_in(struct wq *q, const char *pre, size_t prelen, const json_t *msg, const char *post, size_t postlen);
/* The same with the message already encoded: body[0..bodylen) (borrowed). */
void wq_push_bytes(struct wq *q, const char *pre, size_t prelen, const char *body, size_t bodylen, const char *post,
    size_t postlen);
/* A producer of many frames at once (a replay slice) corks the queue: they go out in a few big
 * writes at wq_uncork instead of one write each. The marks still count them. */
void wq_cork(struct wq *q);
void wq_uncork(struct wq *q);
/* A producer that should not run far ahead of the reader: whether more than mark bytes wait;
 * when they do, on_low is called once they have drained to mark / 2. */
int wq_ahead(struct wq *q, size_t mark);
size_t wq_pending(const struct wq *q);
/* Asks for a pipe buffer of bytes when q's fd is a pipe with less (fewer wake-ups of both ends
 * on a long stream); anything else is left as it is. */
void wq_pipe_room(struct wq *q, int bytes);
/* Whether a producer should wait for on_low before it queues more (above the high mark). */
int wq_full(const struct wq *q);
/* Writes what it can now, blocking at most until timeout_ms (shutdown only). */
void wq_flush_blocking(struct wq *q, int timeout_ms);
void wq_free(struct wq *q);

#endif
