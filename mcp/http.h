/*
 * An MCP server over Streamable HTTP (docs/contract.md §18, §20.1; MCP 2025-11-25 "Transports"): one POST per
 * message, its reply a JSON body or an SSE stream, the optional GET stream for what the server
 * says unasked, DELETE at close. libcurl's multi interface (dlopen()ed, base/curl_dl.h) on the
 * owner's loop; the transport contract is mcp/transport.h.
 *
 * Order: messages are POSTed in send order. The initialize request, every notification and every
 * response hold the messages after them until their reply is in (the session id comes with the
 * first, and a server has queued a notification once it answers 202), so the handshake and each
 * notification reach the server in order; requests do not wait for each other (a slow tools/call
 * never delays its cancel). At most MCP_HTTP_MAX_POSTS are in flight; the rest wait, in order.
 *
 * Replies: a JSON object (or array: each element) or each SSE event's data is a message; 202 has
 * none. An SSE reply that ends without its response after an event id is resumed with GET and
 * Last-Event-ID (after the server's retry:, at most MCP_HTTP_RESUME_MAX times without progress).
 * A request whose POST fails otherwise is answered here, from the loop, with a JSON-RPC error
 * (-32603, "HTTP <status>" with the server's own error, if any, as data; or "connection failed:
 * <why>"), so its caller fails and the transport lives on; a failed notification or response is
 * logged at debug. gone: the initialize POST failing (any way: the server may come back, so the
 * owner's restart applies; the reason carries the server's error message, if any), a 404 while a
 * session id is held ("session expired"), close ("closed"). A redirect is followed only to the
 * same origin (the endpoint then moves there): the ACP headers never go elsewhere.
 *
 * Once notifications/cancelled {requestId} is POSTed, that request's transfer ends, reporting
 * nothing (its caller gave up).
 *
 * The GET stream opens once notifications/initialized is accepted; 405 (or 404: routers answer a
 * missing GET route so) means none. It restarts when it drops, resuming from its last event id:
 * after the server's retry:, else 0.5 s doubling to 30 s while it fails.
 * close: DELETE with the session id (at most MCP_HTTP_CLOSE_MS), then gone("closed"); messages not
 * yet delivered are dropped. The ACP headers go on every request; their values are never logged.
 */
#ifndef MCP_HTTP_H
#define MCP_HTTP_H

#include <ev.h>
#include <jansson.h>

#include "base/err.h"
#include "mcp/transport.h"

#define MCP_HTTP_MAX_POSTS 16
#define MCP_HTTP_RESUME_MAX 5
#define MCP_HTTP_CLOSE_MS 2000L
#define MCP_HTTP_CONNECT_MS 10000L
/* A notification's or response's POST: its 202 is due at once, and it holds the ones after it. */
#define MCP_HTTP_NOTIFY_MS 30000L
/* The longest JSON reply (an SSE event: base/sse.h's SSE_LINE_MAX, the same 64 MiB). */
#define MCP_HTTP_BODY_MAX ((size_t)64 * 1024 * 1024)

/*
 * url: http:// or https://; headers: [{name, value}] or NULL, borrowed (copied); name: for logs.
 * cb: copied. NULL with e (ERR_INVALID_PARAMS for a bad url or header; ERR_USAGE without libcurl).
 * Nothing is sent before the first send. Returns owned; free with t->ops->free.
 */
struct mcp_transport *mcp_http_new(struct ev_loop *loop, const char *name, const char *url, const json_t *headers,
    const struct mcp_transport_cb *cb, struct err *e);

#endif
