/*
 * A child's composition (docs/contract.md §23.2, §23.3): the descriptor's one check, and how a
 * type narrows a parent: tools met with the allowlist minus the denylist (patterns included), the
 * model's precedence, the ceiling along a lineage, send_message kept for a continuable child.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/compose.h"
#include "agent/permit.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "session/descriptor.h"
#include "tests/helpers.h"
#include "tools/toolsets.h"

/* The v3 descriptor below with one field replaced (value: JSON text, NULL: the field removed). */
static json_t *
desc_with(const char *key, const char *value)
{
	json_t *d = json_loads("{\"version\":3,\"mode\":\"continuable\",\"provider\":\"in-process\",\"label\":\"l\","
	    "\"agentType\":\"explore\",\"agentTypeDescription\":\"Reads\",\"model\":null,\"tools\":[\"read\","
	    "\"mcp__gh__*\"],\"deniedTools\":[\"mcp__gh__delete*\"],\"ceiling\":\"read-only\",\"maxSteps\":4,"
	    "\"instructions\":\"Look.\",\"isolation\":null}", 0, NULL);

	ck_assert_ptr_nonnull(d);
	if (key && value)
		json_object_set_new(d, key, json_loads(value, JSON_DECODE_ANY, NULL));
	else if (key)
		json_object_del(d, key);
	return d;
}

START_TEST(descriptor_versions_2_and_3_read)
{
	struct sess_descriptor d;
	const char *why;
	json_t *v2 = json_loads("{\"version\":2,\"mode\":\"continuable\",\"provider\":\"in-process\",\"label\":\"x\"}",
	    0, NULL), *v3 = desc_with(NULL, NULL);

	ck_assert_int_eq(sess_descriptor_read(v2, &d, &why), 0);
	ck_assert_int_eq(d.version, 2);
	ck_assert_str_eq(d.label, "x");
	ck_assert_ptr_null(d.agent_type);	/* general, nothing narrowed */
	ck_assert_ptr_null(d.tools);
	ck_assert_ptr_null(d.ceiling);
	ck_assert_int_eq(sess_descriptor_read(v3, &d, &why), 0);
	ck_assert_str_eq(d.agent_type, "explore");
	ck_assert_str_eq(d.type_description, "Reads");
	ck_assert_ptr_null(d.model);
	ck_assert_uint_eq(json_array_size(d.tools), 2);
	ck_assert_uint_eq(json_array_size(d.denied), 1);
	ck_assert_str_eq(d.ceiling, "read-only");
	ck_assert_int_eq(d.max_steps, 4);
	ck_assert_str_eq(d.instructions, "Look.");
	json_decref(v2);
	json_decref(v3);
}
END_TEST

#define BASE "0123456789abcdef0123456789abcdef01234567"
#define ISO(repo, branch, base, subdir) "{\"kind\":\"worktree\",\"repo\":\"" repo "\",\"branch\":\"" branch \
	"\",\"base\":\"" base "\",\"subdir\":\"" subdir "\"}"

/* Each field that does not pass makes the descriptor no identity, with its reason. */
START_TEST(descriptor_refusals)
{
	static const char *const bad[][3] = {
		{ "version", "4", "an unknown version" },
		{ "version", "\"3\"", "an unknown version" },
		{ "mode", "\"forever\"", "no valid mode or label" },
		{ "label", NULL, "no valid mode or label" },
		{ "agentType", "\"Explore\"", "no valid agentType" },
		{ "agentType", NULL, "no valid agentType" },
		{ "agentTypeDescription", "\"two\\nlines\"", "a bad agentTypeDescription" },
		{ "model", "\"\"", "a bad model" },
		{ "model", "\"m\\u001b[2J\"", "a bad model" },
		{ "model", "7", "a bad model" },
		{ "tools", NULL, "a bad tools list" },
		{ "tools", "\"read\"", "a bad tools list" },
		{ "tools", "[\"re ad\"]", "a bad tools list" },
		{ "tools", "[\"*\"]", "a bad tools list" },
		{ "tools", "[\"a*b\"]", "a bad tools list" },
		{ "deniedTools", "[1]", "a bad tools list" },
		{ "ceiling", "\"root\"", "a bad ceiling" },
		{ "maxSteps", "0", "a bad maxSteps" },
		{ "maxSteps", "2147483648", "a bad maxSteps" },
		{ "instructions", "5", "a bad instructions text" },
		{ "isolation", "{\"kind\":\"branch\"}", "an isolation this build does not know" },
		{ "isolation", "{\"kind\":\"worktree\"}", "a bad isolation" },
		{ "isolation", ISO("/r", "acp-agent/1a2b", "0123", ""), "a bad isolation" },
		{ "isolation", ISO("r", "acp-agent/1a2b", BASE, ""), "a bad isolation" },
		{ "isolation", ISO("/r", "main", BASE, ""), "a bad isolation" },
		{ "isolation", ISO("/r", "acp-agent/1a2b", BASE, "../x"), "a bad isolation" },
		{ "isolation", ISO("/r", "acp-agent/../x", BASE, ""), "a bad isolation" },
	};
	struct sess_descriptor d;
	const char *why;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *j = desc_with(bad[i][0], bad[i][1]);
		ck_assert_msg(sess_descriptor_read(j, &d, &why) < 0, "%s = %s passed", bad[i][0], bad[i][1]);
		ck_assert_str_eq(why, bad[i][2]);
		json_decref(j);
	}
	/* an instructions text over 64 KiB */
	char *big = malloc(SESS_DESCRIPTOR_TEXT_MAX + 2);
	memset(big, 'x', SESS_DESCRIPTOR_TEXT_MAX + 1);
	big[SESS_DESCRIPTOR_TEXT_MAX + 1] = '\0';
	json_t *j = desc_with(NULL, NULL);
	json_object_set_new(j, "instructions", json_string(big));
	ck_assert_int_lt(sess_descriptor_read(j, &d, &why), 0);
	big[SESS_DESCRIPTOR_TEXT_MAX] = '\0';
	json_object_set_new(j, "instructions", json_string(big));
	ck_assert_int_eq(sess_descriptor_read(j, &d, &why), 0);
	json_decref(j);
	free(big);
	/* a worktree, read back as it was written */
	j = desc_with("isolation", ISO("/home/u/repo", "acp-agent/1a2b3c4d", BASE, "src/lib"));
	ck_assert_int_eq(sess_descriptor_read(j, &d, &why), 0);
	ck_assert_str_eq(d.iso_branch, "acp-agent/1a2b3c4d");
	ck_assert_str_eq(d.iso_subdir, "src/lib");
	struct agent_comp c;
	agent_comp_from_descriptor(&c, &d);
	json_t *again = json_object();
	agent_comp_describe(&c, again);
	ck_assert(json_equal(json_object_get(again, "isolation"), json_object_get(j, "isolation")));
	json_decref(again);
	agent_comp_free(&c);
	json_decref(j);
}
END_TEST

/* The ceilings a descriptor may name are the permission modes, all of them and nothing else. */
START_TEST(descriptor_ceilings_are_the_modes)
{
	struct sess_descriptor d;
	const char *why;

	for (int m = 0; m < PERMIT_NMODES; m++) {
		char *v = xasprintf("\"%s\"", permit_mode_id((enum permit_mode)m));
		json_t *j = desc_with("ceiling", v);
		ck_assert_int_eq(sess_descriptor_read(j, &d, &why), 0);
		ck_assert_str_eq(d.ceiling, permit_mode_id((enum permit_mode)m));
		json_decref(j);
		free(v);
	}
}
END_TEST

static struct toolbox tb;

static void
box(void)
{
	toolbox_init(&tb);
	toolsets_build(&tb, toolsets_profile("default", 1));
}

static char *
comp_tools(const struct agent_comp *c)
{
	return json_dumps(c->tools, JSON_COMPACT);
}

/* A type with the lists given as JSON text (NULL: absent). */
static void
type_set(struct agent_type *t, const char *name, const char *tools, const char *denied, int ceiling, const char *model)
{
	memset(t, 0, sizeof(*t));
	t->name = (char *)name;
	t->description = (char *)"d";
	t->instructions = (char *)"";
	t->tools = tools ? json_loads(tools, 0, NULL) : NULL;
	t->denied = denied ? json_loads(denied, 0, NULL) : NULL;
	t->ceiling = ceiling;
	t->model = (char *)model;
}

static void
type_clear(struct agent_type *t)
{
	json_decref(t->tools);
	json_decref(t->denied);
}

START_TEST(compose_from_a_root)
{
	struct agent_comp root = AGENT_COMP_NONE, c;
	struct agent_type t;
	char *s;

	box();
	/* general: every tool of the parent, MCP by pattern; send_message is the parent's already */
	type_set(&t, "general", NULL, NULL, -1, NULL);
	agent_comp_make(&c, &root, &tb, &t, NULL, 1);
	s = comp_tools(&c);
	ck_assert_str_eq(s, "[\"subagent\",\"list_agents\",\"send_message\",\"interrupt_agent\",\"read\",\"write\","
	    "\"edit\",\"glob\",\"grep\",\"bash\",\"job_output\",\"job_kill\",\"todo_write\",\"mcp__*\"]");
	free(s);
	ck_assert_ptr_null(c.model);
	ck_assert_int_eq(c.ceiling, -1);
	agent_comp_free(&c);
	type_clear(&t);
	/* explore's list, and a tool this build lacks (notebook_edit): not given; a one-shot child gets
	 * no send_message, a continuable one does */
	type_set(&t, "explore", "[\"read\",\"glob\",\"grep\",\"todo_write\",\"notebook_edit\"]", NULL, PERMIT_READ_ONLY,
	    NULL);
	agent_comp_make(&c, &root, &tb, &t, NULL, 0);
	s = comp_tools(&c);
	ck_assert_str_eq(s, "[\"read\",\"glob\",\"grep\",\"todo_write\"]");
	free(s);
	ck_assert_int_eq(c.ceiling, PERMIT_READ_ONLY);
	ck_assert(!agent_comp_allows(&c, "bash"));
	ck_assert(!agent_comp_allows(&c, "mcp__gh__x"));
	agent_comp_free(&c);
	agent_comp_make(&c, &root, &tb, &t, NULL, 1);
	s = comp_tools(&c);
	ck_assert_str_eq(s, "[\"read\",\"glob\",\"grep\",\"todo_write\",\"send_message\"]");
	free(s);
	agent_comp_free(&c);
	type_clear(&t);
	/* patterns: a prefix in the allowlist keeps the parent's names it covers and narrows MCP;
	 * a denied name goes, a denied pattern inside an allowed one is kept for later */
	type_set(&t, "narrow", "[\"job_*\",\"mcp__gh__*\",\"read\"]", "[\"job_kill\",\"mcp__gh__delete*\"]", -1, NULL);
	agent_comp_make(&c, &root, &tb, &t, NULL, 0);
	s = comp_tools(&c);
	ck_assert_str_eq(s, "[\"read\",\"job_output\",\"mcp__gh__*\"]");
	free(s);
	s = json_dumps(c.denied, JSON_COMPACT);
	ck_assert_str_eq(s, "[\"mcp__gh__delete*\"]");
	free(s);
	ck_assert(agent_comp_allows(&c, "mcp__gh__create_issue"));
	ck_assert(!agent_comp_allows(&c, "mcp__gh__delete_repo"));
	ck_assert(!agent_comp_allows(&c, "mcp__web__fetch"));
	ck_assert(!agent_comp_allows(&c, "job_kill"));
	agent_comp_free(&c);
	type_clear(&t);
	/* a denied send_message: a continuable child keeps it all the same */
	type_set(&t, "quiet", NULL, "[\"send_*\"]", -1, NULL);
	agent_comp_make(&c, &root, &tb, &t, NULL, 1);
	ck_assert(agent_comp_allows(&c, "send_message"));
	agent_comp_free(&c);
	agent_comp_make(&c, &root, &tb, &t, NULL, 0);
	ck_assert(!agent_comp_allows(&c, "send_message"));
	agent_comp_free(&c);
	type_clear(&t);
	toolbox_free(&tb);
}
END_TEST

/* A grandchild never has what its parent lacks, never a laxer ceiling; models by precedence. */
START_TEST(compose_along_a_lineage)
{
	struct agent_comp root = AGENT_COMP_NONE, a, g;
	struct agent_type narrow, general, wide;
	char *s;

	box();
	type_set(&narrow, "narrow", "[\"subagent\",\"read\",\"mcp__gh__*\"]", "[\"mcp__gh__delete*\"]",
	    PERMIT_ACCEPT_EDITS, "m-typed");
	type_set(&general, "general", NULL, NULL, -1, NULL);
	type_set(&wide, "wide", "[\"bash\",\"read\",\"mcp__*\"]", NULL, PERMIT_FULL_ACCESS, NULL);
	agent_comp_make(&a, &root, &tb, &narrow, NULL, 1);
	ck_assert_str_eq(a.model, "m-typed");
	agent_comp_make(&g, &a, &tb, &general, NULL, 1);
	s = comp_tools(&g);
	ck_assert_str_eq(s, "[\"subagent\",\"read\",\"mcp__gh__*\",\"send_message\"]");
	free(s);
	ck_assert(!agent_comp_allows(&g, "mcp__gh__delete_repo"));
	ck_assert_int_eq(g.ceiling, PERMIT_ACCEPT_EDITS);
	ck_assert_str_eq(g.model, "m-typed");		/* the parent's, fixed when it started */
	agent_comp_free(&g);
	/* a type that asks for more gets only what the parent has, and no laxer ceiling */
	agent_comp_make(&g, &a, &tb, &wide, "m-call", 0);
	s = comp_tools(&g);
	ck_assert_str_eq(s, "[\"read\",\"mcp__gh__*\"]");
	free(s);
	ck_assert(!agent_comp_allows(&g, "bash"));
	ck_assert(!agent_comp_allows(&g, "mcp__gh__delete_it"));
	ck_assert_int_eq(g.ceiling, PERMIT_ACCEPT_EDITS);
	ck_assert_str_eq(g.model, "m-call");		/* the call's first */
	agent_comp_free(&g);
	agent_comp_free(&a);
	type_clear(&narrow);
	type_clear(&general);
	type_clear(&wide);
	toolbox_free(&tb);
}
END_TEST

/* What a descriptor carries is what a cold resume rebuilds: written, checked, read back equal. */
START_TEST(compose_round_trips_through_a_descriptor)
{
	struct agent_comp root = AGENT_COMP_NONE, a, b;
	struct agent_type t;
	struct sess_descriptor d;
	const char *why;
	json_t *data = json_pack("{s:i, s:s, s:s, s:s}", "version", 3, "mode", "continuable", "provider", "in-process",
	    "label", "l");
	char *s1, *s2;

	box();
	type_set(&t, "narrow", "[\"read\",\"mcp__gh__*\"]", "[\"mcp__gh__delete*\"]", PERMIT_DEFAULT, NULL);
	t.instructions = (char *)"Be narrow.";
	t.max_steps = 5;
	agent_comp_make(&a, &root, &tb, &t, "m1", 1);
	agent_comp_describe(&a, data);
	ck_assert_int_eq(sess_descriptor_read(data, &d, &why), 0);
	agent_comp_from_descriptor(&b, &d);
	ck_assert_str_eq(b.type, "narrow");
	ck_assert_str_eq(b.model, "m1");
	ck_assert_int_eq(b.ceiling, PERMIT_DEFAULT);
	ck_assert_int_eq(b.max_steps, 5);
	ck_assert_str_eq(b.instructions, "Be narrow.");
	s1 = comp_tools(&a);
	s2 = comp_tools(&b);
	ck_assert_str_eq(s1, s2);
	free(s1);
	free(s2);
	ck_assert(json_equal(a.denied, b.denied));
	agent_comp_free(&a);
	agent_comp_free(&b);
	json_decref(data);
	type_clear(&t);
	toolbox_free(&tb);
}
END_TEST

Suite *
compose_suite(void)
{
	Suite *s = suite_create("compose");
	TCase *tc = tcase_create("compose");

	tcase_add_test(tc, descriptor_versions_2_and_3_read);
	tcase_add_test(tc, descriptor_refusals);
	tcase_add_test(tc, descriptor_ceilings_are_the_modes);
	tcase_add_test(tc, compose_from_a_root);
	tcase_add_test(tc, compose_along_a_lineage);
	tcase_add_test(tc, compose_round_trips_through_a_descriptor);
	suite_add_tcase(s, tc);
	return s;
}
