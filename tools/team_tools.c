/*
 * The Team profile's nine tools (SPEC §9.2). Results are compact JSON, the same
 * value as the structured output; failures are "Error: <message>" with the code.
 * The rules live in agent/team.c; these only parse, call and render.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/team.h"
#include "base/xmalloc.h"
#include "tools/tools.h"

/* Renders result (stolen) or the error into out. */
static int
team_tool_result(struct tool_result *out, json_t *result, const struct err *e)
{
	char *text;

	if (result == NULL) {
		tool_result_error(out, e->code ? e->code : "TEAM_INVALID_ARGUMENT", "%s", e->msg);
		return TOOL_DONE;
	}
	text = json_dumps(result, JSON_COMPACT | JSON_ENCODE_ANY);
	tool_result_set(out, text, result);
	free(text);
	return TOOL_DONE;
}

static const char *
arg(const json_t *args, const char *k)
{
	return json_string_value(json_object_get(args, k));
}

static char *
title_with(const char *what, const json_t *args, const char *k)
{
	const char *v = arg(args, k);

	return xasprintf("%s %s", what, v ? v : "");
}

/* The caller's team or an error result. */
static struct team *
team_or_error(struct tool_inv *inv, struct tool_result *out)
{
	struct team *t = team_of(inv->agent);

	if (t == NULL)
		tool_result_error(out, "TEAM_MEMBER_NOT_FOUND", "this agent is not a member of a live team");
	return t;
}

static char *
spawn_title(const struct tool *t, const json_t *args)
{
	(void)t;
	return title_with("Spawn teammate", args, "name");
}

static int
spawn_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	struct err e;

	err_clear(&e);
	return team_tool_result(out, team_spawn(inv->agent, arg(args, "name"), arg(args, "description"),
	    arg(args, "prompt"), &e), &e);
}

static char *
send_title(const struct tool *t, const json_t *args)
{
	(void)t;
	return title_with("Message", args, "target");
}

static int
send_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	struct err e;

	err_clear(&e);
	return team_tool_result(out, team_send(inv->agent, arg(args, "target"), arg(args, "message"), &e), &e);
}

static char *
list_title(const struct tool *t, const json_t *args)
{
	(void)t;
	(void)args;
	return xstrdup("List team");
}

static int
list_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	struct err e;

	(void)args;
	if (team_or_error(inv, out) == NULL)
		return TOOL_DONE;
	err_clear(&e);
	return team_tool_result(out, team_list(inv->agent), &e);
}

static char *
wait_title(const struct tool *t, const json_t *args)
{
	(void)t;
	(void)args;
	return xstrdup("Wait for teammates");
}

static int
wait_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	const json_t *tm = json_object_get(args, "timeout_ms");

	return team_wait(inv, tm ? (long)json_integer_value(tm) : 30000, out);
}

static char *
interrupt_title(const struct tool *t, const json_t *args)
{
	(void)t;
	return title_with("Interrupt", args, "target");
}

static int
interrupt_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	struct err e;

	err_clear(&e);
	return team_tool_result(out, team_interrupt(inv->agent, arg(args, "target"), &e), &e);
}

static char *
create_title(const struct tool *t, const json_t *args)
{
	(void)t;
	return title_with("Create task:", args, "subject");
}

static int
create_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	struct team *t = team_or_error(inv, out);
	struct err e;

	if (t == NULL)
		return TOOL_DONE;
	err_clear(&e);
	return team_tool_result(out, team_task_create(t, team_caller_name(inv->agent), arg(args, "subject"),
	    arg(args, "description"), json_object_get(args, "blocked_by"), json_object_get(args, "write_scopes"),
	    &e), &e);
}

static char *
tlist_title(const struct tool *t, const json_t *args)
{
	(void)t;
	(void)args;
	return xstrdup("List tasks");
}

static int
tlist_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	struct team *t = team_or_error(inv, out);
	struct err e;

	if (t == NULL)
		return TOOL_DONE;
	err_clear(&e);
	return team_tool_result(out, team_task_list(t, args, &e), &e);
}

static char *
get_title(const struct tool *t, const json_t *args)
{
	(void)t;
	return title_with("Get", args, "task_id");
}

static int
get_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	struct team *t = team_or_error(inv, out);
	struct err e;

	if (t == NULL)
		return TOOL_DONE;
	err_clear(&e);
	return team_tool_result(out, team_task_get(t, arg(args, "task_id"), &e), &e);
}

static char *
update_title(const struct tool *t, const json_t *args)
{
	(void)t;
	return title_with("Update", args, "task_id");
}

static int
update_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	struct team *t = team_or_error(inv, out);
	struct err e;

	if (t == NULL)
		return TOOL_DONE;
	err_clear(&e);
	return team_tool_result(out, team_task_update(t, team_caller_name(inv->agent), args, &e), &e);
}

#define STR(d) "{\"type\":\"string\",\"description\":\"" d "\"}"
#define STRS(d) "{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"" d "\"}"

const struct tool tool_spawn_teammate = {
	.name = "spawn_teammate",
	.description = "Start a named teammate (Lead only). It works in the background on its prompt, shares the "
		       "task board and mailbox, and is addressed by its name. Names are lower-kebab-case and "
		       "never reused.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"name\",\"description\","
		  "\"prompt\"],\"properties\":{\"name\":" STR("The teammate's name: lower-kebab-case, 1-64 characters, not lead.")
		  ",\"description\":" STR("What this teammate is for, as the roster shows it.")
		  ",\"prompt\":" STR("The teammate's complete first task.")
		  ",\"context\":{\"type\":\"string\",\"enum\":[\"fresh\"],\"description\":\"fresh (the default): "
		  "the teammate starts with an empty context.\"}}}",
	.kind = "other",
	.concurrency_safe = 0,
	.title = spawn_title,
	.run = spawn_run,
};

const struct tool tool_team_send_message = {
	.name = "send_message",
	.description = "Send a message to a Team member by name (the Lead is lead). A working member receives it at "
		       "its next step; an idle one starts a turn; a stored one is resumed. Returns the message id "
		       "and whether it was accepted or queued.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"target\",\"message\"],"
		  "\"properties\":{\"target\":" STR("The member's name, or lead.") ",\"message\":"
		  STR("The message to deliver.") "}}",
	.kind = "other",
	.concurrency_safe = 0,
	.title = send_title,
	.run = send_run,
};

const struct tool tool_team_list_agents = {
	.name = "list_agents",
	.description = "List the Team: the Lead first, then every teammate with its status (running, inactive, "
		       "provisioning or failed).",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{}}",
	.kind = "search",
	.concurrency_safe = 1,
	.title = list_title,
	.run = list_run,
};

const struct tool tool_wait_agent = {
	.name = "wait_agent",
	.description = "Wait until something changes in the Team (roster, tasks, mailbox or a member's status) or "
		       "the timeout passes. Returns at once when no other member is running or provisioning.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"timeout_ms\":{\"type\":"
		  "\"integer\",\"description\":\"How long to wait, 10000-3600000 ms (default 30000).\"}}}",
	.kind = "other",
	.concurrency_safe = 0,
	.title = wait_title,
	.run = wait_run,
};

const struct tool tool_team_interrupt_agent = {
	.name = "interrupt_agent",
	.description = "Stop a teammate's current turn (Lead only). Returns its status before the interrupt.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"target\"],\"properties\":"
		  "{\"target\":" STR("The teammate's name.") "}}",
	.kind = "other",
	.concurrency_safe = 0,
	.title = interrupt_title,
	.run = interrupt_run,
};

const struct tool tool_team_task_create = {
	.name = "team_task_create",
	.description = "Add a task to the Team's board. blocked_by lists tasks that must be completed first; "
		       "write_scopes are advisory paths the task will change.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"subject\",\"description\"],"
		  "\"properties\":{\"subject\":" STR("A short title.") ",\"description\":" STR("What done means.")
		  ",\"blocked_by\":" STRS("Task ids (task-<n>) that must be completed first.")
		  ",\"write_scopes\":" STRS("Paths this task expects to change.") "}}",
	.kind = "other",
	.concurrency_safe = 0,
	.title = create_title,
	.run = create_run,
};

const struct tool tool_team_task_list = {
	.name = "team_task_list",
	.description = "List the Team's tasks, optionally filtered by status, owner or readiness, in pages.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"status\":{\"type\":\"string\","
		  "\"enum\":[\"pending\",\"in_progress\",\"completed\",\"deleted\"]},\"owner\":" STR("A member's name.")
		  ",\"ready\":{\"type\":\"boolean\",\"description\":\"Only tasks whose blockers are all completed.\"},"
		  "\"cursor\":" STR("The nextCursor of the previous page.") ",\"limit\":{\"type\":\"integer\","
		  "\"description\":\"1-100, default 50.\"}}}",
	.kind = "search",
	.concurrency_safe = 1,
	.title = tlist_title,
	.run = tlist_run,
};

const struct tool tool_team_task_get = {
	.name = "team_task_get",
	.description = "Read one task, with its revision (pass it as expected_revision when updating).",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"task_id\"],\"properties\":"
		  "{\"task_id\":" STR("task-<n>") "}}",
	.kind = "search",
	.concurrency_safe = 1,
	.title = get_title,
	.run = get_run,
};

const struct tool tool_team_task_update = {
	.name = "team_task_update",
	.description = "Change a task by compare-and-swap on its revision: claim (a ready, unowned task), release, "
		       "edit, set_dependencies, complete, reopen, reassign (Lead only) or delete.",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"task_id\",\"expected_revision\","
		  "\"action\"],\"properties\":{\"task_id\":" STR("task-<n>") ",\"expected_revision\":{\"type\":"
		  "\"integer\",\"description\":\"The revision you read.\"},\"action\":{\"type\":\"string\",\"enum\":"
		  "[\"claim\",\"release\",\"edit\",\"set_dependencies\",\"complete\",\"reopen\",\"reassign\",\"delete\"]},"
		  "\"subject\":" STR("edit: the new subject.") ",\"description\":" STR("edit: the new description.")
		  ",\"blocked_by\":" STRS("set_dependencies: the new blockers.") ",\"write_scopes\":"
		  STRS("edit: the new write scopes.") ",\"owner\":" STR("reassign: the new owner's name.") "}}",
	.kind = "other",
	.concurrency_safe = 0,
	.title = update_title,
	.run = update_run,
};
