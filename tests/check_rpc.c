/* JSON-RPC classification and error codes (docs/contract.md §3.2). */
#include <string.h>

#include "acp/rpc.h"
#include "tests/helpers.h"

static json_t *
classify_error(const char *line, size_t len)
{
	struct acp_msg m;
	json_t *reply = NULL;

	ck_assert_int_eq(acp_classify(line, len, &m, &reply), ACP_MSG_INVALID);
	ck_assert_ptr_nonnull(reply);
	return reply;
}

static void
assert_error(json_t *reply, int code, const char *kind)
{
	json_t *err = json_object_get(reply, "error");

	ck_assert_int_eq(json_integer_value(json_object_get(err, "code")), code);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(err, "data"), "kind")), kind);
	ck_assert_str_eq(json_string_value(json_object_get(reply, "jsonrpc")), "2.0");
	json_decref(reply);
}

#define S(x) x, strlen(x)

START_TEST(rpc_parse_error_has_null_id)
{
	json_t *r = classify_error(S("{\"jsonrpc\":\"2.0\",\"id\":1,"));

	ck_assert(json_is_null(json_object_get(r, "id")));
	assert_error(r, ACP_PARSE_ERROR, "parse_error");
}
END_TEST

START_TEST(rpc_invalid_utf8_is_parse_error)
{
	assert_error(classify_error(S("{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}")), ACP_PARSE_ERROR,
	    "parse_error");
}
END_TEST

START_TEST(rpc_not_object_batch_and_wrong_version)
{
	assert_error(classify_error(S("42")), ACP_INVALID_REQUEST, "invalid_request");
	assert_error(classify_error(S("\"s\"")), ACP_INVALID_REQUEST, "invalid_request");
	assert_error(classify_error(S("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}]")),
	    ACP_INVALID_REQUEST, "invalid_request");
	json_t *r = classify_error(S("{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"x\"}"));
	ck_assert_int_eq(json_integer_value(json_object_get(r, "id")), 7);
	assert_error(r, ACP_INVALID_REQUEST, "invalid_request");
	assert_error(classify_error(S("{\"id\":7,\"method\":\"x\"}")), ACP_INVALID_REQUEST, "invalid_request");
	assert_error(classify_error(S("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"x\"}")), ACP_INVALID_REQUEST,
	    "invalid_request");
	assert_error(classify_error(S("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":3}")), ACP_INVALID_REQUEST,
	    "invalid_request");
	assert_error(classify_error(S("{\"jsonrpc\":\"2.0\",\"id\":1}")), ACP_INVALID_REQUEST,
	    "invalid_request");
	assert_error(classify_error(S("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":3}")),
	    ACP_INVALID_PARAMS, "invalid_params");
}
END_TEST

START_TEST(rpc_deep_nesting_is_too_deep)
{
	char line[600];
	size_t n = 0;

	for (int i = 0; i < 129; i++)
		line[n++] = '[';
	for (int i = 0; i < 129; i++)
		line[n++] = ']';
	assert_error(classify_error(line, n), ACP_INVALID_REQUEST, "too_deep");
	/* Brackets inside strings do not count. */
	ck_assert_int_eq(acp_json_depth("{\"a\":\"[[[[\\\"[[\"}", 16, 128), 1);
}
END_TEST

START_TEST(rpc_kinds_and_ids)
{
	struct acp_msg m;
	json_t *reply;

	ck_assert_int_eq(acp_classify(S("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"m\",\"params\":{}}"), &m,
	    &reply), ACP_MSG_REQUEST);
	ck_assert_str_eq(m.method, "m");
	ck_assert_str_eq(json_string_value(m.id), "a");
	acp_msg_free(&m);
	ck_assert_int_eq(acp_classify(S("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}"), &m, &reply),
	    ACP_MSG_REQUEST);
	ck_assert(json_is_null(m.id));
	acp_msg_free(&m);
	ck_assert_int_eq(acp_classify(S("{\"jsonrpc\":\"2.0\",\"method\":\"n\"}"), &m, &reply),
	    ACP_MSG_NOTIFICATION);
	acp_msg_free(&m);
	ck_assert_int_eq(acp_classify(S("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}"), &m, &reply),
	    ACP_MSG_RESPONSE);
	acp_msg_free(&m);
}
END_TEST

START_TEST(rpc_nul_inside_strings_is_accepted)
{
	struct acp_msg m;
	json_t *reply;
	const char *line = "{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":{\"t\":\"a\\u0000b\"}}";

	ck_assert_int_eq(acp_classify(S(line), &m, &reply), ACP_MSG_NOTIFICATION);
	ck_assert_uint_eq(json_string_length(json_object_get(m.params, "t")), 3);
	acp_msg_free(&m);
}
END_TEST

START_TEST(rpc_error_reply_shape)
{
	json_t *id = json_integer(9);
	json_t *r = acp_error_new(id, ERR_UNKNOWN_SESSION, "unknown session",
	    json_pack("{s:s}", "sessionId", "x"));
	json_t *err = json_object_get(r, "error");

	ck_assert_int_eq(json_integer_value(json_object_get(r, "id")), 9);
	ck_assert_int_eq(json_integer_value(json_object_get(err, "code")), -32002);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(err, "data"), "sessionId")), "x");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(err, "data"), "details")),
	    "unknown session");
	json_decref(r);
	json_decref(id);
}
END_TEST

Suite *
rpc_suite(void)
{
	Suite *s = suite_create("rpc");
	TCase *tc = tcase_create("classify");

	tcase_add_test(tc, rpc_parse_error_has_null_id);
	tcase_add_test(tc, rpc_invalid_utf8_is_parse_error);
	tcase_add_test(tc, rpc_not_object_batch_and_wrong_version);
	tcase_add_test(tc, rpc_deep_nesting_is_too_deep);
	tcase_add_test(tc, rpc_kinds_and_ids);
	tcase_add_test(tc, rpc_nul_inside_strings_is_accepted);
	tcase_add_test(tc, rpc_error_reply_shape);
	suite_add_tcase(s, tc);
	return s;
}
