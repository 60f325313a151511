/*
 * How one MCP server's messages travel (docs/contract.md §18): a stdio child (mcp/stdio.c) or Streamable
 * HTTP (mcp/http.c). A transport moves whole JSON-RPC messages and reports what arrives and when
 * it is gone; the protocol above it (mcp/client.c) knows nothing of pipes or URLs. Callbacks run
 * from the loop, never from inside send or close.
 */
#ifndef MCP_TRANSPORT_H
#define MCP_TRANSPORT_H

#include <jansson.h>

#include "base/buf.h"

struct mcp_transport;

struct mcp_transport_cb {
	/* A message from the server: a JSON object (borrowed for the call). */
	void (*message)(void *arg, const json_t *msg);
	/*
	 * The transport is gone (the process exited, the connection failed, or close finished).
	 * reason: borrowed text ("exited with status 3", "killed by SIGKILL", ...); expired: the
	 * server ended the session and wants a new one at once (HTTP 404 for its MCP-Session-Id).
	 * After this call nothing else is reported and the owner frees the transport.
	 */
	void (*gone)(void *arg, const char *reason, int expired);
	void *arg;
};

struct mcp_transport_ops {
	/* Queues one message (borrowed). Never blocks; a dead transport drops it. */
	void (*send)(struct mcp_transport *t, const json_t *msg);
	/* The protocol version negotiated (HTTP sends it as a header); NULL before. */
	void (*set_version)(struct mcp_transport *t, const char *version);
	/* Orderly shutdown (stdio: close stdin, SIGTERM after 2 s, SIGKILL 2 s later); gone follows. */
	void (*close)(struct mcp_transport *t);
	/* The last bytes of the server's stderr (at most 4 KiB), for MCP_SERVER_EXITED; may be "". */
	void (*stderr_tail)(const struct mcp_transport *t, struct buf *out);
	/* Frees at once: a live process is killed (SIGKILL to its group) and reaped by the owner's
	 * loop; nothing is reported. */
	void (*free)(struct mcp_transport *t);
};

struct mcp_transport {
	const struct mcp_transport_ops *ops;
	struct mcp_transport_cb cb;
};

#endif
