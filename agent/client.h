/*
 * The editor, as the runtime and its tools see it (docs/contract.md §16.4, §17.3): requests on a root's ACP
 * session and what the client advertised. The server implements it (acp/outbound.c); in tests,
 * and when no client is attached, rt->client is NULL and nothing is asked.
 * A request's done runs exactly once, from the run queue, with the result or an error, unless
 * the request is cancelled first; after agent_client_cancel nothing of it runs.
 */
#ifndef AGENT_CLIENT_H
#define AGENT_CLIENT_H

#include <jansson.h>

#include "base/err.h"

/*
 * The answer: result (the client's, borrowed) on success; else error, the client's error object
 * (borrowed), when it answered one, or e (borrowed: CLIENT_TIMEOUT, ...) when it did not answer.
 */
typedef void agent_client_done(void *arg, const json_t *result, const json_t *error, const struct err *e);

struct tool_inv;

struct agent_client {
	/* Sends method {params (stolen)} for the ACP session sid; 0 with e when it cannot be sent. */
	long (*request)(void *self, const char *sid, const char *method, json_t *params, long timeout_ms,
	    agent_client_done *done, void *arg, struct err *e);
	/* Drops a request still unanswered and tells the client ($/cancel_request). */
	void (*cancel)(void *self, long id);
	/* 1 when the client advertised capability ("fs.readTextFile", "fs.writeTextFile"). */
	int (*can)(void *self, const char *capability);
	/*
	 * Asks the user about inv's call on its root's ACP session (a child's call shows there as
	 * "<child id>/<call id>", announced first). options: the ACP options, stolen. The answer
	 * comes as a request's. Returns the request id, or 0 with e when no session can show it.
	 */
	long (*ask)(void *self, struct tool_inv *inv, json_t *options, agent_client_done *done, void *arg,
	    struct err *e);
	/* An asked call's status changed: "in_progress" after an allow; "completed" or "failed". */
	void (*call_status)(void *self, struct tool_inv *inv, const char *status);
	/*
	 * Tells the user on the ACP session sid that something went wrong outside a tool call
	 * (docs/decisions.md): a notice {severity: "warning", title, description} for a client with
	 * session.notices, else the line "<title>: <description>" as an agent_message_chunk of its
	 * own. Strings borrowed; description may be NULL.
	 */
	void (*notice)(void *self, const char *sid, const char *title, const char *description);
	void *self;
};

#endif
