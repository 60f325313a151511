/* Tool argument checking (SPEC §8). */
#include <stdlib.h>
#include <string.h>

#include "agent/toolbox.h"
#include "tests/helpers.h"

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
	ck_assert_str_eq(e.code, "INVALID_ARGUMENT");
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
	ck_assert_str_eq(e.code, "INVALID_ARGUMENT");
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

	tool_result_error(&r, "UNAUTHORIZED", "agent \"%s\" cannot interrupt itself", "x");
	ck_assert_str_eq(r.text, "Error: agent \"x\" cannot interrupt itself");
	ck_assert_str_eq(r.error_code, "UNAUTHORIZED");
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
