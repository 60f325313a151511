/* Agent Teams (docs/contract.md §9): names, the task state machine, CAS, cycles, limits, the mailbox. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_def.h"	/* looks inside */
#include "agent/team.h"
#include "tests/helpers.h"
#include "tools/tools.h"
#include "tools/toolsets.h"

static json_t *
upd(struct team *t, const char *who, const char *id, int rev, const char *action, struct err *e)
{
	json_t *args = json_pack("{s:s, s:i, s:s}", "task_id", id, "expected_revision", rev, "action", action);
	json_t *r;

	err_clear(e);
	r = team_task_update(t, who, args, e);
	json_decref(args);
	return r;
}

static void
add_member(struct team *t, const char *name)
{
	t->members = realloc(t->members, (t->nmembers + 1) * sizeof(*t->members));
	memset(&t->members[t->nmembers], 0, sizeof(*t->members));
	t->members[t->nmembers].name = strdup(name);
	t->members[t->nmembers].phase = TEAM_ACTIVE;
	t->nmembers++;
	json_object_set_new(t->names_used, name, json_true());
}

START_TEST(team_names)
{
	struct team *t = team_new();
	struct err e;
	char long_name[80];

	static const char *const bad[] = { "", "lead", "Upper", "under_score", "-lead", "trail-", "dou--ble", "sp ace" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear(&e);
		ck_assert_msg(team_name_check(t, bad[i], &e) == -1, "accepted \"%s\"", bad[i]);
		ck_assert_int_eq(e.code, ERR_TEAM_INVALID_MEMBER_NAME);
	}
	memset(long_name, 'a', 65);
	long_name[65] = '\0';
	err_clear(&e);
	ck_assert_int_eq(team_name_check(t, long_name, &e), -1);
	long_name[64] = '\0';
	err_clear(&e);
	ck_assert_int_eq(team_name_check(t, long_name, &e), 0);
	ck_assert_int_eq(team_name_check(t, "good-name-2", &e), 0);
	add_member(t, "good-name-2");
	err_clear(&e);
	ck_assert_int_eq(team_name_check(t, "good-name-2", &e), -1);
	ck_assert_int_eq(e.code, ERR_TEAM_MEMBER_NAME_TAKEN);
	for (int i = 0; i < 7; i++) {
		char n[16];
		snprintf(n, sizeof(n), "m%d", i);
		add_member(t, n);
	}
	err_clear(&e);
	ck_assert_int_eq(team_name_check(t, "ninth", &e), -1);
	ck_assert_int_eq(e.code, ERR_TEAM_MEMBER_LIMIT);
	team_free(t);
}
END_TEST

START_TEST(team_task_state_machine_and_cas)
{
	struct team *t = team_new();
	struct err e;
	json_t *v, *deps = json_pack("[s]", "task-1");

	add_member(t, "ann");
	add_member(t, "bob");
	v = team_task_create(t, "lead", "one", "first", NULL, NULL, &e);
	ck_assert_str_eq(json_string_value(json_object_get(v, "id")), "task-1");
	ck_assert_int_eq(json_integer_value(json_object_get(v, "revision")), 1);
	json_decref(v);
	json_decref(team_task_create(t, "lead", "two", "second", deps, NULL, &e));
	/* blocked, stale, claimed, unauthorized */
	ck_assert_ptr_null(upd(t, "bob", "task-2", 1, "claim", &e));
	ck_assert_int_eq(e.code, ERR_TEAM_TASK_BLOCKED);
	ck_assert_ptr_null(upd(t, "ann", "task-1", 7, "claim", &e));
	ck_assert_int_eq(e.code, ERR_TEAM_TASK_STALE_REVISION);
	v = upd(t, "ann", "task-1", 1, "claim", &e);
	ck_assert_str_eq(json_string_value(json_object_get(v, "status")), "in_progress");
	ck_assert_str_eq(json_string_value(json_object_get(v, "ownerName")), "ann");
	json_decref(v);
	ck_assert_ptr_null(upd(t, "bob", "task-1", 2, "claim", &e));
	ck_assert_int_eq(e.code, ERR_TEAM_TASK_ALREADY_CLAIMED);
	ck_assert_ptr_null(upd(t, "bob", "task-1", 2, "complete", &e));
	ck_assert_int_eq(e.code, ERR_TEAM_TASK_UNAUTHORIZED);
	ck_assert_ptr_null(upd(t, "ann", "task-1", 2, "reassign", &e));
	ck_assert_int_eq(e.code, ERR_TEAM_TASK_UNAUTHORIZED);
	/* A failed update changes nothing: the revision is still 2. */
	v = upd(t, "ann", "task-1", 2, "complete", &e);
	ck_assert_int_eq(json_integer_value(json_object_get(v, "revision")), 3);
	json_decref(v);
	v = upd(t, "bob", "task-2", 1, "claim", &e);
	ck_assert_ptr_nonnull(v);
	json_decref(v);
	ck_assert_ptr_null(upd(t, "lead", "task-1", 3, "delete", &e));
	ck_assert_int_eq(e.code, ERR_TEAM_TASK_HAS_DEPENDENTS);
	v = upd(t, "lead", "task-1", 3, "reopen", &e);
	ck_assert_str_eq(json_string_value(json_object_get(v, "status")), "pending");
	json_decref(v);
	ck_assert_ptr_null(upd(t, "lead", "task-9", 1, "claim", &e));
	ck_assert_int_eq(e.code, ERR_TEAM_TASK_NOT_FOUND);
	json_decref(deps);
	team_free(t);
}
END_TEST

START_TEST(team_dependency_cycles)
{
	struct team *t = team_new();
	struct err e;
	json_t *d1 = json_pack("[s]", "task-1"), *d2 = json_pack("[s]", "task-2"), *d3 = json_pack("[s]", "task-3");

	err_clear(&e);
	json_decref(team_task_create(t, "lead", "a", "a", NULL, NULL, &e));
	json_decref(team_task_create(t, "lead", "b", "b", d1, NULL, &e));
	json_decref(team_task_create(t, "lead", "c", "c", d2, NULL, &e));
	json_t *args = json_pack("{s:s, s:i, s:s, s:O}", "task_id", "task-1", "expected_revision", 1, "action",
	    "set_dependencies", "blocked_by", d3);
	err_clear(&e);
	ck_assert_ptr_null(team_task_update(t, "lead", args, &e));
	ck_assert_int_eq(e.code, ERR_TEAM_TASK_DEPENDENCY_CYCLE);
	json_decref(args);
	args = json_pack("{s:s, s:i, s:s, s:O}", "task_id", "task-1", "expected_revision", 1, "action",
	    "set_dependencies", "blocked_by", d1);
	err_clear(&e);
	ck_assert_ptr_null(team_task_update(t, "lead", args, &e));
	ck_assert_int_eq(e.code, ERR_TEAM_TASK_DEPENDENCY_CYCLE);
	json_decref(args);
	json_decref(d1);
	json_decref(d2);
	json_decref(d3);
	team_free(t);
}
END_TEST

START_TEST(team_task_limit_paging_and_scopes)
{
	struct team *t = team_new();
	struct err e;
	json_t *scope = json_pack("[s]", "src/"), *inner = json_pack("[s]", "src/a.c");

	err_clear(&e);
	json_decref(team_task_create(t, "lead", "s", "s", NULL, scope, &e));
	json_t *v = team_task_create(t, "lead", "s", "s", NULL, inner, &e);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(v, "writeScopeWarnings"), 0)),
	    "write scope \"src/a.c\" overlaps task-1 (\"src/\")");
	json_decref(v);
	for (int i = 2; i < TEAM_MAX_TASKS; i++)
		json_decref(team_task_create(t, "lead", "n", "n", NULL, NULL, &e));
	err_clear(&e);
	ck_assert_ptr_null(team_task_create(t, "lead", "n", "n", NULL, NULL, &e));
	ck_assert_int_eq(e.code, ERR_TEAM_TASK_LIMIT);
	json_t *args = json_pack("{s:i}", "limit", 100), *page;
	err_clear(&e);
	page = team_task_list(t, args, &e);
	ck_assert_uint_eq(json_array_size(json_object_get(page, "tasks")), 100);
	ck_assert_str_eq(json_string_value(json_object_get(page, "nextCursor")), "task-100");
	json_decref(args);
	args = json_pack("{s:s, s:i}", "cursor", "task-200", "limit", 100);
	json_decref(page);
	page = team_task_list(t, args, &e);
	ck_assert_uint_eq(json_array_size(json_object_get(page, "tasks")), 56);
	ck_assert_ptr_null(json_object_get(page, "nextCursor"));
	json_decref(page);
	json_decref(args);
	json_decref(scope);
	json_decref(inner);
	team_free(t);
}
END_TEST

START_TEST(team_fold_rebuilds_roster_tasks_and_mail)
{
	struct team *t = team_new(), *u = team_new();
	struct err e;
	json_t *events = json_array();

	json_array_append_new(events, json_pack("{s:s, s:{s:i, s:{s:s, s:s, s:s, s:s}}}", "type", "team/member",
	    "data", "version", 1, "member", "id", "00000000-0000-4000-8000-000000000009", "name", "ann",
	    "description", "d", "phase", "active"));
	json_array_append_new(events, json_pack("{s:s, s:{s:i, s:{s:s, s:s, s:s, s:s}}}", "type",
	    "team/message/queued", "data", "version", 1, "message", "id", "msg-1", "senderName", "lead",
	    "targetName", "ann", "content", "a"));
	json_array_append_new(events, json_pack("{s:s, s:{s:i, s:{s:s, s:s, s:s, s:s}}}", "type",
	    "team/message/queued", "data", "version", 1, "message", "id", "msg-2", "senderName", "lead",
	    "targetName", "ann", "content", "b"));
	json_array_append_new(events, json_pack("{s:s, s:{s:i, s:s, s:s}}", "type", "team/message/delivered",
	    "data", "version", 1, "messageId", "msg-1", "targetName", "ann"));
	err_clear(&e);
	json_t *v = team_task_create(t, "lead", "x", "y", NULL, NULL, &e);
	json_decref(v);
	json_array_append_new(events, json_pack("{s:s, s:{s:i, s:o}}", "type", "team/task", "data", "version", 1,
	    "task", team_task_get(t, "task-1", &e)));
	team_fold(u, events);
	ck_assert_uint_eq(u->nmembers, 1);
	ck_assert_str_eq(u->members[0].name, "ann");
	ck_assert_uint_eq(json_array_size(u->queued), 1);	/* msg-2 is still undelivered */
	ck_assert_int_eq(u->next_msg, 2);
	ck_assert_uint_eq(u->ntasks, 1);
	ck_assert_str_eq(u->tasks[0].subject, "x");
	err_clear(&e);
	ck_assert_int_eq(team_name_check(u, "ann", &e), -1);
	json_decref(events);
	team_free(t);
	team_free(u);
}
END_TEST

START_TEST(team_fold_takes_only_well_formed_ids)
{
	struct team *t = team_new();
	json_t *events = json_array();
	static const char *const msg_ids[] = { "msg-7", "msg-12x", "msg-99999999999999999999", "msg- 30", "msg-+40" };
	static const char *const task_ids[] = { "task-2abc", "task-0", "task-99999999999999999999", "task-1" };

	for (size_t i = 0; i < sizeof(msg_ids) / sizeof(msg_ids[0]); i++)
		json_array_append_new(events, json_pack("{s:s, s:{s:i, s:{s:s, s:s, s:s, s:s}}}", "type",
		    "team/message/queued", "data", "version", 1, "message", "id", msg_ids[i], "senderName", "lead",
		    "targetName", "ann", "content", "c"));
	for (size_t i = 0; i < sizeof(task_ids) / sizeof(task_ids[0]); i++)
		json_array_append_new(events, json_pack("{s:s, s:{s:i, s:{s:s, s:i, s:s, s:s, s:s}}}", "type",
		    "team/task", "data", "version", 1, "task", "id", task_ids[i], "revision", 1, "subject", task_ids[i],
		    "description", "d", "status", "pending"));
	/* A queued message without its content cannot be delivered: left out, not handed on as NULL. */
	json_array_append_new(events, json_pack("{s:s, s:{s:i, s:{s:s, s:s, s:s}}}", "type", "team/message/queued",
	    "data", "version", 1, "message", "id", "msg-3", "senderName", "lead", "targetName", "ann"));
	test_log_capture_start();
	team_fold(t, events);
	char *said = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(said, "a queued message without its id, names or content is left out"));
	free(said);
	ck_assert_uint_eq(json_array_size(t->queued), 5);
	/* atoi read "msg-12x" as 12 (and the huge one as anything); only msg-7 is a number. */
	ck_assert_int_eq(t->next_msg, 7);
	ck_assert_uint_eq(t->ntasks, 1);
	ck_assert_str_eq(t->tasks[0].subject, "task-1");
	json_decref(events);
	team_free(t);
}
END_TEST

START_TEST(team_dependency_cycle_found_in_a_dense_graph)
{
	struct team *t = team_new();
	struct err e;
	json_t *v;

	/*
	 * task-1, then task-2..21 each blocked by every earlier one of them (task-4 by task-1 too). The
	 * check's stack was cut at 8 entries per task and dropped what did not fit, which here was
	 * the one path back to task-1.
	 */
	err_clear(&e);
	json_decref(team_task_create(t, "lead", "s", "d", NULL, NULL, &e));
	for (int n = 2; n <= 21; n++) {
		json_t *deps = json_array();
		char id[32];
		for (int k = 2; k < n; k++) {
			snprintf(id, sizeof(id), "task-%d", k);
			json_array_append_new(deps, json_string(id));
		}
		if (n == 4)
			json_array_append_new(deps, json_string("task-1"));
		err_clear(&e);
		v = team_task_create(t, "lead", "s", "d", deps, NULL, &e);
		ck_assert_msg(v != NULL, "%s", e.msg);
		json_decref(v);
		json_decref(deps);
	}
	json_t *args = json_pack("{s:s, s:i, s:s, s:[s]}", "task_id", "task-1", "expected_revision", 1, "action",
	    "set_dependencies", "blocked_by", "task-21");
	err_clear(&e);
	v = team_task_update(t, "lead", args, &e);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(e.code, ERR_TEAM_TASK_DEPENDENCY_CYCLE);
	json_decref(args);
	team_free(t);
}
END_TEST

START_TEST(team_tools_report_a_broken_lead_log_as_session_log_io)
{
	static struct test_runtime T;
	struct toolbox tb;
	struct tool_inv inv = { 0 };
	struct tool_result out = { 0 };
	json_t *args = json_pack("{s:s, s:s}", "subject", "s", "description", "d");

	test_runtime_start(&T, "{\"version\":1,\"scripts\":[]}");
	toolbox_init(&tb);
	toolsets_build(&tb, toolsets_profile("team", 0));
	agent_rt_set_exts(&T.rt, toolsets_profile("team", 0)->exts);
	struct agent *lead = agent_new_root(&T.rt, "/w", &tb, NULL);
	T.env.faults.short_write = 1;		/* the Lead's next write fails half-way (EIO) */
	inv.agent = lead;
	inv.tool = toolbox_find(&tb, "team_task_create");
	inv.call_id = (char *)"c";
	ck_assert_int_eq(inv.tool->run(&inv, args, &out), TOOL_DONE);
	ck_assert_int_ne(out.error_code, ERR_NONE);
	ck_assert_int_eq(out.error_code, ERR_SESSION_LOG_IO);
	/* The cause comes with it. */
	ck_assert_msg(strstr(out.text, "Error: the Lead's log cannot be written: ") == out.text, "%s", out.text);
	ck_assert_msg(strstr(out.text, "Input/output error") != NULL, "%s", out.text);
	tool_result_clear(&out);
	json_decref(args);
	test_runtime_finish(&T);
	toolbox_free(&tb);
}
END_TEST

START_TEST(team_no_progress_text_is_spec_text)
{
	ck_assert_str_eq(TEAM_NO_PROGRESS_TEXT, "No other Team member is running or provisioning. wait_agent cannot "
	    "make progress or wake inactive teammates. Re-list with list_agents and team_task_list, then use "
	    "send_message to wake each required inactive teammate before waiting again.");
}
END_TEST

Suite *
team_suite(void)
{
	Suite *s = suite_create("team");
	TCase *tc = tcase_create("team");

	tcase_add_test(tc, team_names);
	tcase_add_test(tc, team_no_progress_text_is_spec_text);
	tcase_add_test(tc, team_task_state_machine_and_cas);
	tcase_add_test(tc, team_dependency_cycles);
	tcase_add_test(tc, team_task_limit_paging_and_scopes);
	tcase_add_test(tc, team_fold_rebuilds_roster_tasks_and_mail);
	tcase_add_test(tc, team_fold_takes_only_well_formed_ids);
	tcase_add_test(tc, team_dependency_cycle_found_in_a_dense_graph);
	tcase_add_test(tc, team_tools_report_a_broken_lead_log_as_session_log_io);
	suite_add_tcase(s, tc);
	return s;
}
