/* JSON-RPC 2.0 framing of ACP messages (docs/contract.md §3.2): classify, replies, errors. */
#ifndef ACP_RPC_H
#define ACP_RPC_H

#include <stddef.h>

#include <jansson.h>

#include "acp/spans.h"
#include "base/err.h"

#define ACP_PARSE_ERROR -32700
#define ACP_INVALID_REQUEST -32600
#define ACP_METHOD_NOT_FOUND -32601
#define ACP_INVALID_PARAMS -32602
#define ACP_INTERNAL_ERROR -32603
#define ACP_UNKNOWN_SESSION -32002

#define ACP_MAX_DEPTH 128

enum acp_kind { ACP_MSG_REQUEST, ACP_MSG_NOTIFICATION, ACP_MSG_RESPONSE, ACP_MSG_INVALID };

/* A classified message. root is owned; the rest borrow from it. */
struct acp_msg {
	enum acp_kind kind;
	json_t *root;
	const char *method;
	json_t *id;		/* requests and responses */
	json_t *params;		/* may be NULL */
	struct acp_spans spans;	/* a long line's long strings (acp/spans.h) */
	const char *line;	/* the line classified (borrowed: valid while it is dispatched) */
};

/*
 * Classifies one line. On ACP_MSG_INVALID, *reply is the error response to
 * send (new ref). Invalid UTF-8 and JSON errors are -32700 (id null), deep
 * nesting and malformed envelopes -32600.
 */
enum acp_kind acp_classify(const char *line, size_t len, struct acp_msg *m, json_t **reply);
void acp_msg_free(struct acp_msg *m);

/* Returns a new {jsonrpc, id, result} reply; steals result; id: borrowed (NULL means null). */
json_t *acp_result_new(const json_t *id, json_t *result);
/* A new error reply for code (its JSON-RPC code, data.kind, and details: NULL for the code's
 * default text); steals data (may be NULL). */
json_t *acp_error_new(const json_t *id, enum err_code code, const char *details, json_t *data);
/* Returns a new notification; steals params. */
json_t *acp_notification_new(const char *method, json_t *params);
/* The depth of the deepest nesting in a JSON text (strings skipped). */
int acp_json_depth(const char *s, size_t len, int limit);

#endif
