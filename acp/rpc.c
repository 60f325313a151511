/* JSON-RPC classification and reply construction. */
#include "acp/rpc.h"

#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "base/xjson.h"

static const char *
acp_code_message(int code)
{
	switch (code) {
	case ACP_PARSE_ERROR:
		return "Parse error";
	case ACP_INVALID_REQUEST:
		return "Invalid request";
	case ACP_METHOD_NOT_FOUND:
		return "Method not found";
	case ACP_INVALID_PARAMS:
		return "Invalid params";
	case ACP_UNKNOWN_SESSION:
		return "Resource not found";
	default:
		return "Internal error";
	}
}

json_t *
acp_result_new(const json_t *id, json_t *result)
{
	json_t *r = xjson_pack("{s:s, s:O}", "jsonrpc", "2.0", "id", id ? id : json_null());

	json_object_set_new(r, "result", result ? result : json_object());
	return r;
}

json_t *
acp_error_new(const json_t *id, enum err_code ec, const char *details, json_t *data)
{
	json_t *d = data ? data : json_object();
	int code = err_rpc(ec) ? err_rpc(ec) : ACP_INTERNAL_ERROR;
	json_t *r, *s;

	json_object_set_new(d, "kind", json_string(err_kind(ec)));
	if (details == NULL)
		details = err_text(ec);
	s = json_string(details);
	if (s == NULL) {
		char *fixed = utf8_repair(details, strlen(details), NULL);
		s = json_string(fixed);
		free(fixed);
	}
	json_object_set_new(d, "details", s);
	r = xjson_pack("{s:s, s:O, s:{s:i, s:s, s:o}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
	    "error", "code", code, "message", acp_code_message(code), "data", d);
	return r;
}

json_t *
acp_notification_new(const char *method, json_t *params)
{
	return xjson_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params",
	    params ? params : json_object());
}

int
acp_json_depth(const char *s, size_t len, int limit)
{
	int depth = 0, max = 0, in_str = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
		} else if (c == '"') {
			in_str = 1;
		} else if (c == '[' || c == '{') {
			if (++depth > max)
				max = depth;
			if (max > limit)
				return max;
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return max;
}

void
acp_msg_free(struct acp_msg *m)
{
	json_decref(m->root);
	acp_spans_free(&m->spans);
	memset(m, 0, sizeof(*m));
}

static enum acp_kind
acp_invalid(struct acp_msg *m, json_t **reply, json_t *reply_value)
{
	*reply = reply_value;
	acp_msg_free(m);
	m->kind = ACP_MSG_INVALID;
	return ACP_MSG_INVALID;
}

enum acp_kind
acp_classify(const char *line, size_t len, struct acp_msg *m, json_t **reply)
{
	json_error_t jerr;
	json_t *root, *id, *jrpc, *method;
	size_t cut_len = 0;
	char *cut;
	int has_id;

	memset(m, 0, sizeof(*m));
	*reply = NULL;
	if (!utf8_valid(line, len))
		return acp_invalid(m, reply, acp_error_new(NULL, ERR_PARSE_ERROR,
		    "the line is not valid UTF-8", NULL));
	if (acp_json_depth(line, len, ACP_MAX_DEPTH) > ACP_MAX_DEPTH)
		return acp_invalid(m, reply, acp_error_new(NULL, ERR_TOO_DEEP,
		    "nesting deeper than 128 levels", NULL));
	cut = acp_spans_cut(line, len, &m->spans, &cut_len);
	root = json_loadb(cut ? cut : line, cut ? cut_len : len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL |
	    JSON_DECODE_ANY, &jerr);
	free(cut);
	if (root == NULL && cut) {
		/* The error's position is the line's: parsed again as it came (an error path only). */
		acp_spans_free(&m->spans);
		root = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &jerr);
	}
	if (root && acp_spans_fill(root, &m->spans) < 0) {
		json_decref(root);
		return acp_invalid(m, reply, acp_error_new(NULL, ERR_INTERNAL, "a string could not be made", NULL));
	}
	if (root == NULL) {
		json_t *data = xjson_pack("{s:i}", "position", jerr.position);
		return acp_invalid(m, reply, acp_error_new(NULL, ERR_PARSE_ERROR, jerr.text,
		    data));
	}
	m->root = root;
	m->line = line;
	if (json_is_array(root))
		return acp_invalid(m, reply, acp_error_new(NULL, ERR_INVALID_REQUEST,
		    "batch requests are not supported", NULL));
	if (!json_is_object(root))
		return acp_invalid(m, reply, acp_error_new(NULL, ERR_INVALID_REQUEST,
		    "a message must be a JSON object", NULL));
	id = json_object_get(root, "id");
	has_id = id != NULL;
	if (has_id && !json_is_string(id) && !json_is_integer(id) && !json_is_null(id))
		return acp_invalid(m, reply, acp_error_new(NULL, ERR_INVALID_REQUEST,
		    "id must be a string, an integer or null", NULL));
	jrpc = json_object_get(root, "jsonrpc");
	if (!json_is_string(jrpc) || strcmp(json_string_value(jrpc), "2.0") != 0)
		return acp_invalid(m, reply, acp_error_new(has_id ? id : NULL, ERR_INVALID_REQUEST, "jsonrpc must be \"2.0\"", NULL));
	method = json_object_get(root, "method");
	if (method) {
		json_t *params = json_object_get(root, "params");
		if (!json_is_string(method))
			return acp_invalid(m, reply, acp_error_new(has_id ? id : NULL, ERR_INVALID_REQUEST, "method must be a string", NULL));
		if (strlen(json_string_value(method)) != json_string_length(method))
			return acp_invalid(m, reply, acp_error_new(has_id ? id : NULL, ERR_INVALID_PARAMS, "method must not contain \\u0000", NULL));
		if (params && !json_is_object(params) && !json_is_array(params))
			return acp_invalid(m, reply, acp_error_new(has_id ? id : NULL, ERR_INVALID_PARAMS, "params must be an object", NULL));
		m->method = json_string_value(method);
		m->params = params;
		m->id = id;
		m->kind = has_id ? ACP_MSG_REQUEST : ACP_MSG_NOTIFICATION;
		return m->kind;
	}
	if (has_id && (json_object_get(root, "result") || json_object_get(root, "error"))) {
		m->id = id;
		m->kind = ACP_MSG_RESPONSE;
		return m->kind;
	}
	return acp_invalid(m, reply, acp_error_new(has_id ? id : NULL, ERR_INVALID_REQUEST, "neither a request, a notification nor a response", NULL));
}
