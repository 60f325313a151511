/* The conversation a model is sent, rebuilt from the session's events. */
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "base/buf.h"
#include "base/xjson.h"

static const char *
agent_str(const json_t *v)
{
	return json_is_string(v) ? json_string_value(v) : "";
}

char *
agent_blocks_text(const json_t *content, size_t *len)
{
	struct buf b;
	size_t i;
	json_t *blk;

	buf_init(&b);
	json_array_foreach(content, i, blk) {
		const char *type = json_string_value(json_object_get(blk, "type"));
		const json_t *text = NULL;
		if (type && strcmp(type, "text") == 0) {
			text = json_object_get(blk, "text");
		} else if (type && strcmp(type, "resource") == 0) {
			json_t *res = json_object_get(blk, "resource");
			text = json_object_get(res, "text");
			if (b.len)
				buf_puts(&b, "\n");
			buf_printf(&b, "[resource %s]", agent_str(json_object_get(res, "uri")));
		} else if (type && strcmp(type, "resource_link") == 0) {
			if (b.len)
				buf_puts(&b, "\n");
			buf_printf(&b, "[link %s]", agent_str(json_object_get(blk, "uri")));
			continue;
		}
		if (!json_is_string(text))
			continue;
		if (b.len)
			buf_puts(&b, "\n");
		buf_append(&b, json_string_value(text), json_string_length(text));
	}
	if (len)
		*len = b.len;
	return buf_steal(&b);
}

static json_t *
agent_conv_assistant(const json_t *data)
{
	json_t *msg = xjson_pack("{s:s}", "role", "assistant");
	json_t *calls = json_array();
	struct buf text, reasoning;
	size_t i;
	json_t *blk;

	buf_init(&text);
	buf_init(&reasoning);
	json_array_foreach(json_object_get(data, "content"), i, blk) {
		const char *type = json_string_value(json_object_get(blk, "type"));
		if (strcmp(type, "text") == 0)
			buf_puts(&text, json_string_value(json_object_get(blk, "text")));
		else if (strcmp(type, "reasoning") == 0)
			buf_puts(&reasoning, json_string_value(json_object_get(blk, "text")));
		else if (strcmp(type, "tool-call") == 0)
			json_array_append_new(calls, xjson_pack("{s:O, s:s, s:{s:O, s:O}}", "id",
			    json_object_get(blk, "callId"), "type", "function", "function", "name",
			    json_object_get(blk, "name"), "arguments", json_object_get(blk, "arguments")));
	}
	json_object_set_new(msg, "content", json_string(text.len ? text.data : ""));
	if (reasoning.len)
		json_object_set_new(msg, "reasoning_content", json_string(reasoning.data));
	if (json_array_size(calls))
		json_object_set(msg, "tool_calls", calls);
	json_decref(calls);
	buf_free(&text);
	buf_free(&reasoning);
	return msg;
}

json_t *
agent_conversation(const json_t *events)
{
	json_t *msgs = json_array();
	size_t i;
	json_t *ev;

	json_array_foreach(events, i, ev) {
		const char *type = json_string_value(json_object_get(ev, "type"));
		json_t *data = json_object_get(ev, "data");
		if (strcmp(type, "user/message") == 0) {
			size_t len;
			char *text = agent_blocks_text(json_object_get(data, "content"), &len);
			json_array_append_new(msgs, xjson_pack("{s:s, s:s%}", "role", "user", "content", text, len));
			free(text);
		} else if (strcmp(type, "assistant/message") == 0) {
			json_array_append_new(msgs, agent_conv_assistant(data));
		} else if (strcmp(type, "tool/result") == 0) {
			json_t *first = json_array_get(json_object_get(data, "content"), 0);
			json_array_append_new(msgs, xjson_pack("{s:s, s:O, s:O}", "role", "tool",
			    "tool_call_id", json_object_get(data, "callId"), "content",
			    json_object_get(first, "text")));
		}
	}
	return msgs;
}
