/* Session ids (docs/contract.md §5.1, §10.4). */
#include <string.h>

#include "session/id.h"
#include "tests/helpers.h"

START_TEST(id_accepts_lowercase_v4)
{
	ck_assert(sess_id_valid("0f8fad5b-d9cb-469f-a165-70867728950e"));
	ck_assert(sess_id_valid("00000000-0000-4000-8000-000000000001"));
	ck_assert(sess_id_valid("00000000-0000-4000-b000-000000000001"));
}
END_TEST

START_TEST(id_rejects_every_malformed_form)
{
	static const char *const bad[] = {
		"", "../x", "..", "/etc/passwd", "0F8FAD5B-D9CB-469F-A165-70867728950E",
		"0f8fad5b-d9cb-369f-a165-70867728950e",		/* version 3 */
		"0f8fad5b-d9cb-469f-c165-70867728950e",		/* variant c */
		"0f8fad5b-d9cb-469f-a165-70867728950",		/* short */
		"0f8fad5b-d9cb-469f-a165-70867728950e0",	/* long */
		"0f8fad5bxd9cb-469f-a165-70867728950e",
		"0f8fad5b-d9cb-469f-a165-70867728950g",
		"0f8fad5b-d9cb-469f-a165-7086772895/e",
	};
	char big[10240];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!sess_id_valid(bad[i]), "accepted \"%s\"", bad[i]);
	ck_assert(!sess_id_valid(NULL));
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert(!sess_id_valid(big));
	ck_assert(!sess_id_validn("00000000-0000-4000-8000-000000000001", 35));
}
END_TEST

START_TEST(id_deterministic_counter_continues_past_seen)
{
	struct sess_ids g;
	char id[SESS_ID_LEN + 1];

	sess_ids_init(&g, 1);
	sess_ids_new(&g, id);
	ck_assert_str_eq(id, "00000000-0000-4000-8000-000000000001");
	sess_ids_seen(&g, "00000000-0000-4000-8000-0000000000aa");
	sess_ids_seen(&g, "0f8fad5b-d9cb-469f-a165-70867728950e");	/* random form: no effect */
	sess_ids_new(&g, id);
	ck_assert_str_eq(id, "00000000-0000-4000-8000-0000000000ab");
	ck_assert_uint_eq(sess_id_counter(id), 0xab);
	sess_ids_close(&g);
}
END_TEST

START_TEST(id_random_ids_are_valid_and_distinct)
{
	struct sess_ids g;
	char a[SESS_ID_LEN + 1], b[SESS_ID_LEN + 1];

	sess_ids_init(&g, 0);
	sess_ids_new(&g, a);
	sess_ids_new(&g, b);
	ck_assert(sess_id_valid(a));
	ck_assert(sess_id_valid(b));
	ck_assert_str_ne(a, b);
	sess_ids_close(&g);
}
END_TEST

Suite *
id_suite(void)
{
	Suite *s = suite_create("id");
	TCase *tc = tcase_create("id");

	tcase_add_test(tc, id_accepts_lowercase_v4);
	tcase_add_test(tc, id_rejects_every_malformed_form);
	tcase_add_test(tc, id_deterministic_counter_continues_past_seen);
	tcase_add_test(tc, id_random_ids_are_valid_and_distinct);
	suite_add_tcase(s, tc);
	return s;
}
