/*
 * One MCP server as its root session sees it (docs/contract.md §18): the lifecycle over a transport and
 * JSON-RPC 2.0 on it. start → the handshake (initialize with protocol 2025-11-25, accepting
 * 2025-06-18, 2025-03-26 and 2024-11-05; the startup limit; notifications/initialized) → the
 * tool list (tools/list paged by nextCursor, at most 20 pages and 128 tools; skipped without the
 * tools capability; tools whose execution.taskSupport is "required" left out; a schema over
 * 32 KiB left out with a warning; `type: "object"` forced) → ready. list_changed re-lists (one
 * during a listing, the first one too, once that listing is read); the new list replaces the old
 * when it is complete. A server that exits after it was ready is restarted, 0.5 s doubling to
 * 30 s, at most 10 tries per outage; one that cannot start or fails its handshake is failed.
 * Server requests: ping gets {}, others -32601. Every state change and every new tool list is
 * reported through state. Callbacks run from the loop.
 */
#ifndef MCP_CLIENT_H
#define MCP_CLIENT_H

#include <stddef.h>

#include <ev.h>
#include <jansson.h>

#include "base/err.h"

enum mcp_state { MCP_STARTING, MCP_READY, MCP_FAILED, MCP_EXITED, MCP_STOPPED };

/* One tool the server offers; every field owned by the client. */
struct mcp_tool {
	char *name;			/* the server's raw name */
	char *description;
	char *schema;			/* the input schema as compact JSON text, type "object" */
};

/* How to reach a server: the ACP McpServer, checked (mcp_config_parse). */
struct mcp_config {
	char *name;
	int http;
	char *command;			/* stdio */
	json_t *args, *env;		/* stdio: [string], [{name, value}] (owned) */
	char *url;			/* http */
	json_t *headers;		/* http: [{name, value}] (owned) */
};

struct mcp_transport;
struct mcp_transport_cb;

struct mcp_limits {
	long startup_ms;		/* ACP_AGENT_MCP_STARTUP_MS, 30 s */
	long call_ms;			/* ACP_AGENT_MCP_TOOL_TIMEOUT_MS, 60 s */
	double backoff_first, backoff_max;	/* 0.5 s, 30 s */
	int max_tries;			/* 10 per outage */
	/* Opens the transport (tests, fuzzing); NULL: stdio or HTTP as cfg says. */
	struct mcp_transport *(*open)(void *arg, const struct mcp_config *cfg, const struct mcp_transport_cb *cb,
	    struct err *e);
	void *open_arg;
};

struct mcp_client;
struct mcp_call;

struct mcp_client_cb {
	void (*state)(void *arg, struct mcp_client *c);	/* read it with mcp_client_state/_tools */
	void *arg;
};

/*
 * A tool call's end: result (borrowed: the CallToolResult object) or NULL with e
 * (MCP_PROTOCOL_ERROR "<code>: <message>", MCP_TIMEOUT, MCP_SERVER_EXITED with the stderr tail,
 * MCP_NOT_READY). After it the call is freed.
 */
typedef void mcp_call_fn(void *arg, const json_t *result, const struct err *e);

/*
 * Checks one ACP McpServer (docs/contract.md §20.1's shapes) into cfg; 0, or -1 with e (INVALID_PARAMS,
 * naming the field; an "sse" server is MCP_START_FAILED "sse transport is not supported").
 */
int mcp_config_parse(const json_t *server, struct mcp_config *cfg, struct err *e);
void mcp_config_free(struct mcp_config *cfg);
void mcp_limits_default(struct mcp_limits *l);

/* A client for cfg (copied), not started. cwd: the workspace (copied). */
struct mcp_client *mcp_client_new(struct ev_loop *loop, const struct mcp_config *cfg, const char *cwd,
    const struct mcp_limits *lim, const struct mcp_client_cb *cb);
void mcp_client_start(struct mcp_client *c);
/*
 * Orderly shutdown, and the end of the caller's ownership: pending calls fail (MCP_SERVER_EXITED
 * "MCP server stopped"), the transport closes (stdio: the ladder of up to 4 s), then the client
 * frees itself and calls stopped(arg) (may be NULL), from the loop. No state report after it.
 */
void mcp_client_stop(struct mcp_client *c, void (*stopped)(void *arg), void *arg);
/* Frees at once (a live process is killed and reaped); nothing is called after it. */
void mcp_client_free(struct mcp_client *c);
/* Whether c runs no server now and closes none (failed, or between restarts, and every process
 * it dropped is gone): a stop has nothing to wait for, and the owner may free it at once (from
 * outside its own callbacks). */
int mcp_client_idle(const struct mcp_client *c);

const char *mcp_client_name(const struct mcp_client *c);
enum mcp_state mcp_client_state(const struct mcp_client *c);
const char *mcp_state_name(enum mcp_state s);
/* Why it failed or exited ("" otherwise); borrowed until the next state change. */
const char *mcp_client_reason(const struct mcp_client *c);
/* The ready tool list (borrowed until the next state report); n may be 0. */
const struct mcp_tool *mcp_client_tools(const struct mcp_client *c, size_t *n);
/* 1 while it starts or waits to restart: it may be ready soon (not ready, failed or stopped). */
int mcp_client_starting(const struct mcp_client *c);
/* 1 while a ready server's list is read again (after list_changed). */
int mcp_client_listing(const struct mcp_client *c);

/*
 * Calls tool with args (borrowed object). Returns the call (owned by the client until fn runs or
 * it is cancelled), or NULL with e (MCP_NOT_READY "MCP server \"<name>\" is <state>").
 */
struct mcp_call *mcp_client_call(struct mcp_client *c, const char *tool, const json_t *args,
    mcp_call_fn *fn, void *arg, struct err *e);
/* Abandons the call: notifications/cancelled {requestId, reason}; fn never runs. */
void mcp_call_cancel(struct mcp_call *call, const char *reason);

#endif
