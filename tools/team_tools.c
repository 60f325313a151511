/*
 * The Team profile's nine tools (docs/contract.md §9.2) as one table, in the manner of
 * tmux's cmd_entry: each entry is the tool the runtime sees, its title, whether
 * the caller must belong to a live team, and the call into agent/team.c. One
 * title and one run function serve them all. Results are compact JSON, the same
 * value as the structured output; failures are "Error: <message>" with the code.
 * The rules live in agent/team.c; these only parse, call and render.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/team.h"
#include "base/xmalloc.h"
#include "tools/tools.h"

/* Every entry is titled and run by the same two functions; the entry tells them what differs. */
#define TEAM_TOOL_FNS .tool.title = team_tool_title, .tool.run = team_tool_run

struct team_tool {
	struct tool tool;		/* first: inv->tool and the title's t point at it */
	const char *title;		/* the call's title, then the title_arg argument if any */
	const char *title_arg;
	int member_only;		/* fails unless the caller belongs to a live team (t is then set) */
	/* TOOL_DONE with *result (new) or NULL with e, or TOOL_PENDING. */
	int (*call)(struct tool_inv *inv, struct team *t, const json_t *args, json_t **result, struct err *e);
	/* After a call that succeeded: the child it started, shown as a link (NULL: none). */
	const char *(*linked)(struct tool_inv *inv, const json_t *args);
};

static const char *
arg(const json_t *args, const char *k)
{
	return json_string_value(json_object_get(args, k));
}

/* Renders result (stolen) or the error into out. */
static void
team_tool_render(struct tool_result *out, json_t *result, const struct err *e)
{
	char *text;

	if (result == NULL) {
		tool_result_error(out, e->code ? e->code : ERR_TEAM_INVALID_ARGUMENT, "%s", e->msg);
		return;
	}
	text = json_dumps(result, JSON_COMPACT | JSON_ENCODE_ANY);
	tool_result_set(out, text, result);
	free(text);
}

static char *
team_tool_title(const struct tool *t, const json_t *args)
{
	const struct team_tool *tt = (const struct team_tool *)t;
	const char *v;

	if (tt->title_arg == NULL)
		return xstrdup(tt->title);
	v = arg(args, tt->title_arg);
	return xasprintf("%s %s", tt->title, v ? v : "");
}

static int
team_tool_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	const struct team_tool *tt = (const struct team_tool *)inv->tool;
	struct team *t = NULL;
	json_t *result = NULL;
	const char *linked;
	struct err e;

	if (tt->member_only && (t = team_of(inv->agent)) == NULL) {
		tool_result_error(out, ERR_TEAM_MEMBER_NOT_FOUND, "this agent is not a member of a live team");
		return TOOL_DONE;
	}
	err_clear(&e);
	if (tt->call(inv, t, args, &result, &e) == TOOL_PENDING)
		return TOOL_PENDING;
	int ok = result != NULL;
	team_tool_render(out, result, &e);
	if (ok && tt->linked && (linked = tt->linked(inv, args)) != NULL)
		snprintf(out->linked, sizeof(out->linked), "%s", linked);
	return TOOL_DONE;
}

/* A pending wait_agent ends. */
static void
wait_finish(struct tool_inv *inv, json_t *result)
{
	struct tool_result r = { 0 };
	struct err e;

	err_clear(&e);
	team_tool_render(&r, result, &e);
	tool_inv_complete(inv, &r);
}

/* An isolated teammate's call ends once its worktree is made: the result, linked to its session. */
static void
spawn_finish(struct tool_inv *inv, json_t *result, const struct err *e)
{
	struct tool_result r = { 0 };
	const char *linked = result ? team_member_session(inv->agent,
	    json_string_value(json_object_get(json_object_get(result, "member"), "name"))) : NULL;

	team_tool_render(&r, result, e);
	if (linked)
		snprintf(r.linked, sizeof(r.linked), "%s", linked);
	tool_inv_complete(inv, &r);
}

static int
call_spawn(struct tool_inv *inv, struct team *t, const json_t *args, json_t **result, struct err *e)
{
	(void)t;
	struct subagent_kind kind = { arg(args, "agent_type"), arg(args, "model"), arg(args, "isolation") };
	int pending;

	*result = team_spawn(inv, arg(args, "name"), arg(args, "description"), arg(args, "prompt"), &kind, spawn_finish,
	    &pending, e);
	return pending ? TOOL_PENDING : TOOL_DONE;
}

/* The teammate spawn_teammate started: its session, linked (docs/contract.md §22.1). */
static const char *
linked_spawn(struct tool_inv *inv, const json_t *args)
{
	return team_member_session(inv->agent, arg(args, "name"));
}

static int
call_send(struct tool_inv *inv, struct team *t, const json_t *args, json_t **result, struct err *e)
{
	(void)t;
	*result = team_send(inv->agent, arg(args, "target"), arg(args, "message"), e);
	return TOOL_DONE;
}

static int
call_list(struct tool_inv *inv, struct team *t, const json_t *args, json_t **result, struct err *e)
{
	(void)t;
	(void)args;
	(void)e;
	*result = team_list(inv->agent);
	return TOOL_DONE;
}

static int
call_wait(struct tool_inv *inv, struct team *t, const json_t *args, json_t **result, struct err *e)
{
	const json_t *tm = json_object_get(args, "timeout_ms");
	json_t *np;
	int rc;

	(void)t;
	rc = team_wait(inv, tm ? (long)json_integer_value(tm) : 30000, wait_finish, result, e);
	if ((np = json_object_get(*result, "noProgress")) != NULL)
		json_object_set_new_nocheck(np, "message", json_string_nocheck(TEAM_NO_PROGRESS_TEXT));
	return rc;
}

static int
call_interrupt(struct tool_inv *inv, struct team *t, const json_t *args, json_t **result, struct err *e)
{
	(void)t;
	*result = team_interrupt(inv->agent, arg(args, "target"), e);
	return TOOL_DONE;
}

static int
call_create(struct tool_inv *inv, struct team *t, const json_t *args, json_t **result, struct err *e)
{
	*result = team_task_create(t, team_caller_name(inv->agent), arg(args, "subject"), arg(args, "description"),
	    json_object_get(args, "blocked_by"), json_object_get(args, "write_scopes"), e);
	return TOOL_DONE;
}

static int
call_tlist(struct tool_inv *inv, struct team *t, const json_t *args, json_t **result, struct err *e)
{
	(void)inv;
	*result = team_task_list(t, args, e);
	return TOOL_DONE;
}

static int
call_get(struct tool_inv *inv, struct team *t, const json_t *args, json_t **result, struct err *e)
{
	(void)inv;
	*result = team_task_get(t, arg(args, "task_id"), e);
	return TOOL_DONE;
}

static int
call_update(struct tool_inv *inv, struct team *t, const json_t *args, json_t **result, struct err *e)
{
	*result = team_task_update(t, team_caller_name(inv->agent), args, e);
	return TOOL_DONE;
}

#define STR(d) "{\"type\":\"string\",\"description\":\"" d "\"}"
#define STRS(d) "{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"" d "\"}"

static const struct team_tool team_tools[] = { {
	.tool.name = "spawn_teammate",
	.tool.description = "Start a named teammate (Lead only). It works in the background on its prompt, shares the "
		            "task board and mailbox, and is addressed by its name. Names are lower-kebab-case and "
		            "never reused.",
	.tool.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"name\",\"description\","
		       "\"prompt\"],\"properties\":{\"name\":" STR("The teammate's name: lower-kebab-case, 1-64 characters, not lead.")
		       ",\"description\":" STR("What this teammate is for, as the roster shows it.")
		       ",\"prompt\":" STR("The teammate's complete first task.")
		       ",\"context\":{\"type\":\"string\",\"enum\":[\"fresh\"],\"description\":\"fresh (the default): "
		       "the teammate starts with an empty context.\"},"
		       "\"agent_type\":" STR(TOOL_AGENT_TYPE_DOC) ",\"model\":" STR(TOOL_MODEL_DOC) ",\"isolation\":"
		       "{\"type\":\"string\",\"enum\":[\"none\",\"worktree\"],\"description\":\"" TOOL_ISOLATION_DOC "\"}}}",
	.tool.kind = "other",
	.tool.lists_types = 1,
	.tool.concurrency_safe = 0,
	TEAM_TOOL_FNS,
	.tool.links_agent = 1,
	.title = "Spawn teammate",
	.title_arg = "name",
	.call = call_spawn,
	.linked = linked_spawn,
}, {
	.tool.name = "send_message",
	.tool.description = "Send a message to a Team member by name (the Lead is lead). A working member receives it at "
		            "its next step; an idle one starts a turn; a stored one is resumed. Returns the message id "
		            "and whether it was accepted or queued.",
	.tool.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"target\",\"message\"],"
		       "\"properties\":{\"target\":" STR("The member's name, or lead.") ",\"message\":"
		       STR("The message to deliver.") "}}",
	.tool.kind = "other",
	.tool.concurrency_safe = 0,
	TEAM_TOOL_FNS,
	.title = "Message",
	.title_arg = "target",
	.call = call_send,
}, {
	.tool.name = "list_agents",
	.tool.description = "List the Team: the Lead first, then every teammate with its status (running, inactive, "
		            "provisioning or failed).",
	.tool.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{}}",
	.tool.kind = "search",
	.tool.raw_key = "agents",
	.tool.concurrency_safe = 1,
	TEAM_TOOL_FNS,
	.title = "List team",
	.member_only = 1,
	.call = call_list,
}, {
	.tool.name = "wait_agent",
	.tool.description = "Wait until something changes in the Team (roster, tasks, mailbox or a member's status) or "
		            "the timeout passes. Returns at once when no other member is running or provisioning.",
	.tool.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"timeout_ms\":{\"type\":"
		       "\"integer\",\"description\":\"How long to wait, 10000-3600000 ms (default 30000).\"}}}",
	.tool.kind = "other",
	.tool.concurrency_safe = 0,
	TEAM_TOOL_FNS,
	.title = "Wait for teammates",
	.call = call_wait,
}, {
	.tool.name = "interrupt_agent",
	.tool.description = "Stop a teammate's current turn (Lead only). Returns its status before the interrupt.",
	.tool.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"target\"],\"properties\":"
		       "{\"target\":" STR("The teammate's name.") "}}",
	.tool.kind = "other",
	.tool.concurrency_safe = 0,
	TEAM_TOOL_FNS,
	.title = "Interrupt",
	.title_arg = "target",
	.call = call_interrupt,
}, {
	.tool.name = "team_task_create",
	.tool.description = "Add a task to the Team's board. blocked_by lists tasks that must be completed first; "
		            "write_scopes are advisory paths the task will change.",
	.tool.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"subject\",\"description\"],"
		       "\"properties\":{\"subject\":" STR("A short title.") ",\"description\":" STR("What done means.")
		       ",\"blocked_by\":" STRS("Task ids (task-<n>) that must be completed first.")
		       ",\"write_scopes\":" STRS("Paths this task expects to change.") "}}",
	.tool.kind = "other",
	.tool.concurrency_safe = 0,
	TEAM_TOOL_FNS,
	.title = "Create task:",
	.title_arg = "subject",
	.member_only = 1,
	.call = call_create,
}, {
	.tool.name = "team_task_list",
	.tool.description = "List the Team's tasks, optionally filtered by status, owner or readiness, in pages.",
	.tool.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"status\":{\"type\":\"string\","
		       "\"enum\":[\"pending\",\"in_progress\",\"completed\",\"deleted\"]},\"owner\":" STR("A member's name.")
		       ",\"ready\":{\"type\":\"boolean\",\"description\":\"Only tasks whose blockers are all completed.\"},"
		       "\"cursor\":" STR("The nextCursor of the previous page.") ",\"limit\":{\"type\":\"integer\","
		       "\"description\":\"1-100, default 50.\"}}}",
	.tool.kind = "search",
	.tool.concurrency_safe = 1,
	TEAM_TOOL_FNS,
	.title = "List tasks",
	.member_only = 1,
	.call = call_tlist,
}, {
	.tool.name = "team_task_get",
	.tool.description = "Read one task, with its revision (pass it as expected_revision when updating).",
	.tool.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"task_id\"],\"properties\":"
		       "{\"task_id\":" STR("task-<n>") "}}",
	.tool.kind = "search",
	.tool.concurrency_safe = 1,
	TEAM_TOOL_FNS,
	.title = "Get",
	.title_arg = "task_id",
	.member_only = 1,
	.call = call_get,
}, {
	.tool.name = "team_task_update",
	.tool.description = "Change a task by compare-and-swap on its revision: claim (a ready, unowned task), release, "
		            "edit, set_dependencies, complete, reopen, reassign (Lead only) or delete.",
	.tool.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"task_id\",\"expected_revision\","
		       "\"action\"],\"properties\":{\"task_id\":" STR("task-<n>") ",\"expected_revision\":{\"type\":"
		       "\"integer\",\"description\":\"The revision you read.\"},\"action\":{\"type\":\"string\",\"enum\":"
		       "[\"claim\",\"release\",\"edit\",\"set_dependencies\",\"complete\",\"reopen\",\"reassign\",\"delete\"]},"
		       "\"subject\":" STR("edit: the new subject.") ",\"description\":" STR("edit: the new description.")
		       ",\"blocked_by\":" STRS("set_dependencies: the new blockers.") ",\"write_scopes\":"
		       STRS("edit: the new write scopes.") ",\"owner\":" STR("reassign: the new owner's name.") "}}",
	.tool.kind = "other",
	.tool.concurrency_safe = 0,
	TEAM_TOOL_FNS,
	.title = "Update",
	.title_arg = "task_id",
	.member_only = 1,
	.call = call_update,
} };

static const struct tool *const team_tool_list[] = {
	&team_tools[0].tool, &team_tools[1].tool, &team_tools[2].tool, &team_tools[3].tool,
	&team_tools[4].tool, &team_tools[5].tool, &team_tools[6].tool, &team_tools[7].tool,
	&team_tools[8].tool, NULL,
};
_Static_assert(sizeof(team_tools) / sizeof(team_tools[0]) == 9, "team_tool_list names every tool");

const struct agent_ext team_ext = {
	.name = "team",
	.tools = team_tool_list,
	.turn_start = team_on_status,
	.turn_end = team_on_status,
	.release = team_on_status,
	.recover = team_recover,
};
