/* Tool argument checking (docs/contract.md §8). */
#include <stdlib.h>
#include <string.h>

#include "agent/toolbox.h"
#include "tests/helpers.h"
#include "tools/tools.h"

static int
noop_run(struct tool_inv *inv, const json_t *args, struct tool_result *out)
{
	(void)inv;
	(void)args;
	tool_result_set(out, "ok", NULL);
	return TOOL_DONE;
}

static const struct tool demo = {
	.name = "demo",
	.description = "a demo tool",
	.schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"prompt\"],"
		  "\"properties\":{\"prompt\":{\"type\":\"string\"},\"bg\":{\"type\":\"boolean\"},"
		  "\"scope\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},"
		  "\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5}}}",
	.kind = "other",
	.concurrency_safe = 1,
	.run = noop_run,
};

static void
assert_invalid(const struct toolbox *tb, const char *raw, const char *msg)
{
	struct err e;

	err_clear(&e);
	ck_assert_ptr_null(toolbox_check_args(tb, &demo, raw, &e));
	ck_assert_int_eq(e.code, ERR_INVALID_ARGUMENT);
	ck_assert_str_eq(e.msg, msg);
}

START_TEST(toolbox_check_names_the_field)
{
	struct toolbox tb;
	struct err e;
	json_t *ok;

	toolbox_init(&tb);
	toolbox_add(&tb, &demo);
	assert_invalid(&tb, "{}", "invalid arguments: \"prompt\" is required");
	assert_invalid(&tb, "{\"prompt\":3}", "invalid arguments: \"prompt\" must be a string");
	assert_invalid(&tb, "{\"prompt\":\"x\",\"bg\":\"yes\"}", "invalid arguments: \"bg\" must be a boolean");
	assert_invalid(&tb, "{\"prompt\":\"x\",\"extra\":1}", "invalid arguments: unknown field \"extra\"");
	assert_invalid(&tb, "{\"prompt\":\"x\",\"scope\":\"c\"}",
	    "invalid arguments: \"scope\" has an unsupported value");
	assert_invalid(&tb, "{\"prompt\":\"x\",\"n\":9}", "invalid arguments: \"n\" is out of range");
	assert_invalid(&tb, "[1]", "invalid arguments: expected a JSON object");
	err_clear(&e);
	ck_assert_ptr_null(toolbox_check_args(&tb, &demo, "{\"prompt\":", &e));
	ck_assert_int_eq(e.code, ERR_INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(strstr(e.msg, "not valid JSON"));
	err_clear(&e);
	ok = toolbox_check_args(&tb, &demo, "{\"prompt\":\"x\",\"bg\":false,\"n\":2}", &e);
	ck_assert_ptr_nonnull(ok);
	json_decref(ok);
	ok = toolbox_check_args(&tb, &demo, "", &e);	/* empty arguments are {} */
	ck_assert_ptr_null(ok);
	ck_assert_ptr_eq(toolbox_find(&tb, "demo"), &demo);
	ck_assert_ptr_null(toolbox_find(&tb, "other"));
	json_t *d = toolbox_describe(&tb);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(d, 0), "name")), "demo");
	json_decref(d);
	toolbox_free(&tb);
}
END_TEST

START_TEST(tool_result_error_renders_error_prefix)
{
	struct tool_result r = { 0 };

	tool_result_error(&r, ERR_UNAUTHORIZED, "agent \"%s\" cannot interrupt itself", "x");
	ck_assert_str_eq(r.text, "Error: agent \"x\" cannot interrupt itself");
	ck_assert_int_eq(r.error_code, ERR_UNAUTHORIZED);
	tool_result_clear(&r);
}
END_TEST

Suite *
toolbox_suite(void)
{
	Suite *s = suite_create("toolbox");
	TCase *tc = tcase_create("toolbox");

	tcase_add_test(tc, toolbox_check_names_the_field);
	tcase_add_test(tc, tool_result_error_renders_error_prefix);
	suite_add_tcase(s, tc);
	return s;
}

/* The model-facing descriptions of the default tools are the the contract's words (§6.3, §6.5, §6.6, §6.8). */
static const char *
param_desc(const struct tool *t, const char *param)
{
	static json_t *keep;
	json_t *schema = json_loads(t->schema, 0, NULL);
	json_decref(keep);
	keep = schema;
	return json_string_value(json_object_get(json_object_get(json_object_get(schema, "properties"), param),
	    "description"));
}

START_TEST(default_tool_texts_are_spec_texts)
{
	ck_assert_str_eq(tool_subagent.description, "Delegate a self-contained task to a subagent: a separate agent "
	    "with its own context that returns its result, not its intermediate steps. It does not see this "
	    "conversation, so give it a complete, standalone prompt. By default it runs in the background: the call "
	    "returns a durable subagent id at once, you are sent a notice with its outcome when it finishes, and "
	    "send_message continues the same child conversation later. Set run_in_background to false only when your "
	    "next action needs the result; the call then waits and returns the result.");
	ck_assert_str_eq(param_desc(&tool_subagent, "description"),
	    "A short (3-5 word) description of the delegated task, for display.");
	ck_assert_str_eq(param_desc(&tool_subagent, "prompt"), "The complete, self-contained task for the subagent. "
	    "It does not share this conversation's context, so include everything it needs.");
	ck_assert_str_eq(param_desc(&tool_subagent, "run_in_background"), "Run in the background and return a "
	    "durable subagent id at once (default true). Set false to wait for the result.");
	ck_assert_str_eq(tool_list_agents.description, "List subagents you started, with their ids, labels, and "
	    "status. running means it is working; inactive means it is not currently working. You will be notified "
	    "when a subagent finishes; there is no need to keep checking its status. Use send_message to continue the "
	    "conversation.");
	ck_assert_str_eq(param_desc(&tool_list_agents, "scope"), "children (default) lists direct children, which "
	    "accept send_message in any status. descendants lists the whole tree below you with each entry's parent "
	    "session id and depth; entries deeper than 1 accept only interrupt_agent.");
	ck_assert_str_eq(tool_send_message.description, "Send a message to an agent. A working agent receives it at "
	    "its next step; an idle agent starts a new turn with it. Returns delivery confirmation, not the agent's "
	    "answer.");
	ck_assert_str_eq(param_desc(&tool_send_message, "agent_id"), "The agent id of your direct continuable child, "
	    "or your direct parent when you are a resident continuable child.");
	ck_assert_str_eq(param_desc(&tool_send_message, "message"), "The message to deliver to the agent.");
	ck_assert_str_eq(tool_interrupt_agent.description, "Ask a subagent to stop its current work. This call returns "
	    "without waiting for it to stop. You can continue a direct child's conversation later with send_message. "
	    "Subagents it started will keep running.");
	ck_assert_str_eq(param_desc(&tool_interrupt_agent, "agent_id"), "The id of an agent created under you: your "
	    "direct child or a deeper descendant.");
}
END_TEST

static char *
title_of(const struct tool *t, const char *args_json)
{
	json_t *args = json_loads(args_json, 0, NULL);
	char *title = t->title(t, args);

	json_decref(args);
	return title;
}

/* docs/contract.md §16.1's descriptions and §16.5's titles and kinds. */
START_TEST(workspace_tool_texts_are_spec_texts)
{
	static const struct { const struct tool *t; const char *kind, *desc; } want[] = {
		{ &tool_read, "read", "Read a UTF-8 text file; returns line-numbered content (first 2000 lines by default, "
		    "long lines cut at 2000 characters). Use offset/limit for long files. A file must be read before write "
		    "or edit may change it." },
		{ &tool_write, "edit", "Create or fully replace a UTF-8 text file. Replacing an existing file requires a "
		    "prior read. Prefer edit for changes." },
		{ &tool_edit, "edit", "Replace literal text in an existing UTF-8 file (read it first). old_string must occur "
		    "exactly once unless replace_all; add context to make it unique; keep exact indentation." },
		{ &tool_glob, "search", "Find files (not directories) matching a glob; VCS directories skipped; at most 100 "
		    "paths, newest first." },
		{ &tool_grep, "search", "Search file contents with a regular expression; matching lines with numbers, "
		    "grouped by file; at most 250 matches." },
		{ &tool_bash, "execute", "Run a command with bash -c in a fresh shell (use workdir, not cd). Non-zero exits "
		    "end with [exit code: N]. Long output keeps head and tail; the full output is saved to a reported file. "
		    "Use run_in_background for servers, then job_output/job_kill." },
		{ &tool_job_output, "execute", "Output of a background job since the last read, ending with [status: "
		    "running|exited N|killed]." },
		{ &tool_job_kill, "execute", "Stop a background job; returns at once." },
	};
	char *t;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_str_eq(want[i].t->description, want[i].desc);
		ck_assert_str_eq(want[i].t->kind, want[i].kind);
	}
	ck_assert_str_eq(param_desc(&tool_read, "file_path"), "Path; relative paths resolve against the workspace.");
	/* docs/tools.md pins the result texts (docs/contract.md §20.1), no-match texts included. */
	ck_assert_ptr_nonnull(strstr(tool_glob.result_doc, "none: `no files match <pattern>`"));
	ck_assert_ptr_nonnull(strstr(tool_grep.result_doc, "none: `no matches for <pattern>`"));
	ck_assert_str_eq(param_desc(&tool_bash, "description"), "5-10 words shown to the user, e.g. \"Show working "
	    "tree status\".");
	ck_assert_str_eq(param_desc(&tool_job_output, "timeout_ms"), "Default 30000, max 600000.");
	ck_assert_str_eq((t = title_of(&tool_read, "{\"file_path\":\"src/a.c\"}")), "Read src/a.c");
	free(t);
	ck_assert_str_eq((t = title_of(&tool_read, "{\"file_path\":\"a.c\",\"offset\":10,\"limit\":5}")), "Read a.c (10-14)");
	free(t);
	ck_assert_str_eq((t = title_of(&tool_write, "{\"file_path\":\"a.c\"}")), "Write a.c");
	free(t);
	ck_assert_str_eq((t = title_of(&tool_edit, "{\"file_path\":\"a.c\"}")), "Edit a.c");
	free(t);
	ck_assert_str_eq((t = title_of(&tool_glob, "{\"pattern\":\"**/*.c\"}")), "Find **/*.c");
	free(t);
	ck_assert_str_eq((t = title_of(&tool_grep, "{\"pattern\":\"x\",\"path\":\"src\"}")), "Grep \"x\" in src");
	free(t);
	ck_assert_str_eq((t = title_of(&tool_job_output, "{\"job_id\":\"job-1\"}")), "Job job-1 output");
	free(t);
	ck_assert_str_eq((t = title_of(&tool_job_kill, "{\"job_id\":\"job-1\"}")), "Kill job job-1");
	free(t);
	/* bash: the description, else the command's first line, at most 80 characters (not bytes). */
	ck_assert_str_eq((t = title_of(&tool_bash, "{\"command\":\"ls\\nwc\",\"description\":\"\"}")), "ls");
	free(t);
	char args[1024] = "{\"command\":\"x\",\"description\":\"";
	for (int i = 0; i < 100; i++)
		strcat(args, "\xc3\xa9");
	strcat(args, "\"}");
	t = title_of(&tool_bash, args);
	ck_assert_uint_eq(strlen(t), 160);	/* 80 two-byte characters */
	free(t);
}
END_TEST

Suite *
toolbox_texts_suite(void)
{
	Suite *s = suite_create("tool-texts");
	TCase *tc = tcase_create("tool-texts");

	tcase_add_test(tc, default_tool_texts_are_spec_texts);
	tcase_add_test(tc, workspace_tool_texts_are_spec_texts);
	suite_add_tcase(s, tc);
	return s;
}
