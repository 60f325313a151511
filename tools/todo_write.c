/* The todo_write tool (docs/contract.md §26): an agent's task list, logged as plan/updated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "tools/tools.h"

#define TODO_MAX_ENTRIES 100
#define TODO_MAX_CHARS 1000

static char *
todo_write_title(const struct tool *t, const json_t *args)
{
	(void)t;
	(void)args;
	return xstrdup("Update plan");
}

/* The characters of a UTF-8 string (the schema's maxLength counts characters, not bytes). */
static size_t
todo_chars(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xC0) != 0x80;
	return n;
}

/* What the schema check cannot say (the list's length, an entry's text): 0, or -1 with out. */
static int
todo_check(const json_t *todos, struct tool_result *out)
{
	size_t i;
	const json_t *t;

	if (json_array_size(todos) > TODO_MAX_ENTRIES) {
		tool_result_error(out, ERR_INVALID_ARGUMENT, "invalid arguments: \"todos\" has %zu entries; at most %d",
		    json_array_size(todos), TODO_MAX_ENTRIES);
		return -1;
	}
	json_array_foreach(todos, i, t) {
		const json_t *c = json_object_get(t, "content");
		if (json_string_length(c) == 0) {
			tool_result_error(out, ERR_INVALID_ARGUMENT, "invalid arguments: \"todos[%zu].content\" is empty", i);
			return -1;
		}
		if (todo_chars(json_string_value(c), json_string_length(c)) > TODO_MAX_CHARS) {
			tool_result_error(out, ERR_INVALID_ARGUMENT,
			    "invalid arguments: \"todos[%zu].content\" is longer than %d characters", i, TODO_MAX_CHARS);
			return -1;
		}
	}
	return 0;
}

static int
todo_write_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	const json_t *todos = json_object_get(args, "todos"), *t;
	int counts[3] = { 0, 0, 0 };	/* completed, in progress, pending */
	json_t *entries;
	size_t i;
	char *text;

	if (todo_check(todos, out) < 0)
		return TOOL_DONE;
	entries = json_array();
	json_array_foreach(todos, i, t) {
		const char *status = json_string_value(json_object_get(t, "status"));
		const char *priority = json_string_value(json_object_get(t, "priority"));
		counts[strcmp(status, "completed") == 0 ? 0 : strcmp(status, "in_progress") == 0 ? 1 : 2]++;
		json_array_append_new(entries, xjson_pack("{s:O, s:s, s:s}", "content", json_object_get(t, "content"),
		    "status", status, "priority", priority ? priority : "medium"));
	}
	if (agent_append(inv->agent, "plan/updated", xjson_pack("{s:o}", "entries", entries)) < 0) {
		tool_result_error(out, ERR_SESSION_LOG_IO, "the task list could not be logged");
		return TOOL_DONE;
	}
	text = xasprintf("task list updated: %d completed, %d in progress, %d pending", counts[0], counts[1],
	    counts[2]);
	tool_result_set(out, text, NULL);
	free(text);
	return TOOL_DONE;
}

const struct tool tool_todo_write = {
	.name = "todo_write",
	.description =
	    "Create or replace your task list. Send the whole list each time with every item's status; keep one "
	    "item in_progress while you work on it. The user sees this list as your plan.",
	.schema =
	    "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"todos\"],"
	    "\"properties\":{"
	    "\"todos\":{\"type\":\"array\",\"maxItems\":100,\"description\":\"The whole task list, in order.\","
	    "\"items\":{\"type\":\"object\",\"required\":[\"content\",\"status\"],"
	    "\"properties\":{"
	    "\"content\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":1000,\"description\":\"The task.\"},"
	    "\"status\":{\"type\":\"string\",\"enum\":[\"pending\",\"in_progress\",\"completed\"]},"
	    "\"priority\":{\"type\":\"string\",\"enum\":[\"high\",\"medium\",\"low\"]}}}}}}",
	.kind = "think",
	.result_doc = "`task list updated: <c> completed, <i> in progress, <p> pending`",
	.concurrency_safe = 0,
	.title = todo_write_title,
	.run = todo_write_run,
};

static const struct tool *const plan_tools[] = { &tool_todo_write, NULL };

const struct agent_ext plan_ext = {
	.name = "plan",
	.tools = plan_tools,
};
