/*
 * The stdout write queue (SPEC §3.1): one frame per message, written in order
 * without ever blocking the loop; watermarks drive stdin backpressure.
 */
#ifndef ACP_WQ_H
#define ACP_WQ_H

#include <stddef.h>

#include <ev.h>
#include <jansson.h>

#include "base/buf.h"

#define ACP_WQ_HIGH ((size_t)8 * 1024 * 1024)
#define ACP_WQ_LOW ((size_t)1 * 1024 * 1024)

struct acp_wq {
	ev_io io;		/* first member */
	struct ev_loop *loop;
	int fd;
	struct buf out;		/* queued bytes; out.data[0..off) already written */
	size_t off;
	int failed;		/* EPIPE or another write error: output is dropped */
	int above_high;		/* went above ACP_WQ_HIGH and has not drained below ACP_WQ_LOW since */
	unsigned long long total;	/* bytes queued since init: a producer's budget counts them */
	void (*on_high)(void *arg);	/* queue went above ACP_WQ_HIGH: stdin and producers pause */
	void (*on_low)(void *arg);	/* drained below ACP_WQ_LOW after that: they go on */
	void (*on_error)(void *arg);
	void *arg;
	FILE *trace;		/* when set, every frame is copied here (tests) */
};

void acp_wq_init(struct acp_wq *q, struct ev_loop *loop, int fd);
/* Queues msg as one compact line; msg: borrowed. */
void acp_wq_push(struct acp_wq *q, const json_t *msg);
size_t acp_wq_pending(const struct acp_wq *q);
/* Whether a producer should wait for on_low before it queues more (above the high mark). */
int acp_wq_full(const struct acp_wq *q);
/* Writes what it can now, blocking at most until timeout_ms (shutdown only). */
void acp_wq_flush_blocking(struct acp_wq *q, int timeout_ms);
void acp_wq_free(struct acp_wq *q);

#endif
