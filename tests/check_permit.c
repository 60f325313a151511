/* agent/permit: the modes table (docs/contract.md §17.1) and the narrow "always" rules (§17.3). */
#include <stdlib.h>
#include <string.h>

#include "agent/permit.h"
#include "tests/helpers.h"

START_TEST(permit_table_is_spec_17_1)
{
	/* rows: read, edit, exec; columns: read-only, default, accept-edits, full-access */
	static const enum permit_verdict want[3][4] = {
		{ PERMIT_ALLOW, PERMIT_ALLOW, PERMIT_ALLOW, PERMIT_ALLOW },
		{ PERMIT_REFUSE, PERMIT_ASK, PERMIT_ALLOW, PERMIT_ALLOW },
		{ PERMIT_ASK, PERMIT_ASK, PERMIT_ASK, PERMIT_ALLOW },
	};

	for (int c = 0; c < 3; c++)
		for (int m = 0; m < 4; m++)
			ck_assert_msg(permit_decide((enum permit_mode)m, (enum permit_class)c) == want[c][m],
			    "class %d in mode %s", c, permit_mode_id((enum permit_mode)m));
}
END_TEST

START_TEST(permit_modes_parse_and_name)
{
	static const char *const ids[] = { "read-only", "default", "accept-edits", "full-access" };
	static const char *const names[] = { "Read only", "Default", "Accept edits", "Full access" };
	enum permit_mode m;

	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(permit_mode_parse(ids[i], &m), 0);
		ck_assert_int_eq(m, i);
		ck_assert_str_eq(permit_mode_id(m), ids[i]);
		ck_assert_str_eq(permit_mode_name(m), names[i]);
	}
	ck_assert_int_eq(permit_mode_parse("Default", &m), -1);
	ck_assert_int_eq(permit_mode_parse("", &m), -1);
	ck_assert_int_eq(permit_mode_parse(NULL, &m), -1);
	json_t *modes = permit_modes_json(), *opts = permit_mode_options_json();
	ck_assert_uint_eq(json_array_size(modes), 4);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(modes, 2), "id")), "accept-edits");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(opts, 3), "value")), "full-access");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(opts, 0), "name")), "Read only");
	json_decref(modes);
	json_decref(opts);
}
END_TEST

static void
rule_is(enum permit_class c, const char *command, const char *mcp, const char *want, const char *allow)
{
	char *a = NULL, *r = NULL;
	char *rule = permit_rule(c, command, mcp, &a, &r);

	if (want == NULL) {
		ck_assert_msg(rule == NULL, "%s: no rule expected, got %s", command, rule);
		ck_assert_ptr_null(a);
		ck_assert_ptr_null(r);
		return;
	}
	ck_assert_msg(rule != NULL, "%s: no rule", command ? command : mcp);
	ck_assert_str_eq(rule, want);
	ck_assert_str_eq(a, allow);
	ck_assert_ptr_nonnull(r);
	free(rule);
	free(a);
	free(r);
}

START_TEST(permit_rules_are_narrow)
{
	rule_is(PERMIT_EDIT, NULL, NULL, "edit:*", "Allow all edits in this workspace");
	rule_is(PERMIT_EXEC, "git status", NULL, "exec:git status", "Always allow \"git status …\"");
	rule_is(PERMIT_EXEC, "  git   status --short ", NULL, "exec:git status", "Always allow \"git status …\"");
	rule_is(PERMIT_EXEC, "ls", NULL, "exec:ls", "Always allow \"ls …\"");
	rule_is(PERMIT_EXEC, NULL, "everything:echo", "mcp:everything:echo", "Always allow everything:echo");
	static const char *const compound[] = { "make; rm -rf /", "a && b", "a || b", "ls | wc", "echo $(id)",
		"echo `id`", "echo x > f", "wc < f", "echo a\necho b", "   " };
	for (size_t i = 0; i < sizeof(compound) / sizeof(compound[0]); i++)
		rule_is(PERMIT_EXEC, compound[i], NULL, NULL, NULL);
	rule_is(PERMIT_READ, "ls", NULL, NULL, NULL);

	struct permit_rules rs;
	permit_rules_init(&rs);
	ck_assert_int_eq(permit_rules_get(&rs, "edit:*"), -1);
	permit_rules_set(&rs, "edit:*", 1);
	permit_rules_set(&rs, "exec:rm -rf", 0);
	ck_assert_int_eq(permit_rules_get(&rs, "edit:*"), 1);
	ck_assert_int_eq(permit_rules_get(&rs, "exec:rm -rf"), 0);
	permit_rules_set(&rs, "edit:*", 0);		/* the later event wins */
	ck_assert_int_eq(permit_rules_get(&rs, "edit:*"), 0);
	ck_assert_int_eq(permit_rules_get(&rs, NULL), -1);
	permit_rules_free(&rs);
}
END_TEST

Suite *
permit_suite(void)
{
	Suite *s = suite_create("permit");
	TCase *tc = tcase_create("policy");

	tcase_add_test(tc, permit_table_is_spec_17_1);
	tcase_add_test(tc, permit_modes_parse_and_name);
	tcase_add_test(tc, permit_rules_are_narrow);
	suite_add_tcase(s, tc);
	return s;
}
