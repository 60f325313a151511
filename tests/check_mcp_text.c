/* mcp/: what the model sees of MCP tools, their public names (names.c) and results (result.c). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/jenc.h"
#include "base/sha256.h"
#include "base/xmalloc.h"
#include "mcp/names.h"
#include "mcp/result.h"
#include "tests/helpers.h"

/* The public name of (server, tool), in a static buffer the next call overwrites. */
static const char *
pub(const char *server, const char *tool)
{
	static char out[MCP_NAME_MAX + 1];

	memset(out, '#', sizeof(out));	/* a missing NUL shows */
	mcp_public_name(server, tool, out);
	ck_assert_uint_le(strlen(out), MCP_NAME_MAX);
	return out;
}

START_TEST(names_plain_pass_unchanged)
{
	ck_assert_str_eq(pub("github", "create_issue"), "mcp__github__create_issue");
	ck_assert_str_eq(pub("My-Server_2", "Get-Thing_9"), "mcp__My-Server_2__Get-Thing_9");
	ck_assert_str_eq(pub("s", ""), "mcp__s__");
}
END_TEST

/* A dot, a space, a UTF-8 character (each of its bytes): `_`, and the hash suffix. */
START_TEST(names_sanitized_get_the_hash)
{
	ck_assert_str_eq(pub("a.b", "t"), "mcp__a_b__t_3907e39bd4c7");
	ck_assert_str_eq(pub("my server", "t"), "mcp__my_server__t_3b1b3661590c");
	ck_assert_str_eq(pub("srv", "caf\xc3\xa9"), "mcp__srv__caf___6e9d11df5b3f");
}
END_TEST

/* 64 characters stay as they are; 65 become 51, `_` and 12 digits. */
START_TEST(names_64_stay_65_are_cut_and_hashed)
{
	char server[21], tool[39], want[80];

	memset(server, 's', 20);
	server[20] = '\0';
	memset(tool, 't', 37);
	tool[37] = '\0';
	snprintf(want, sizeof(want), "mcp__%s__%s", server, tool);
	ck_assert_uint_eq(strlen(want), 64);
	ck_assert_str_eq(pub(server, tool), want);
	tool[37] = 't';
	tool[38] = '\0';
	/* mcp__ + 20 s + __ + 24 t = 51 */
	ck_assert_str_eq(pub(server, tool), "mcp__ssssssssssssssssssss__tttttttttttttttttttttttt_23494d5d1028");
}
END_TEST

/* Long names that share their first 51 characters stay apart by their digests. */
START_TEST(names_long_server_and_tool)
{
	char x[101], y[101], z[101], first[MCP_NAME_MAX + 1];

	memset(x, 'x', 100);
	memset(y, 'y', 100);
	memset(z, 'z', 100);
	x[100] = y[100] = z[100] = '\0';
	ck_assert_str_eq(pub(x, y), "mcp__xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_e2c3ddba62ef");
	strcpy(first, pub(x, y));
	ck_assert_str_eq(pub(x, z), "mcp__xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_5a2d7e2a8129");
	ck_assert_str_ne(first, pub(x, z));
	ck_assert_uint_eq(strlen(first), 64);
}
END_TEST

/* a.b and a_b (and a,b) never meet: the changed names carry a digest of the raw names. */
START_TEST(names_sanitizing_never_collides)
{
	char dot[MCP_NAME_MAX + 1], comma[MCP_NAME_MAX + 1];

	strcpy(dot, pub("a.b", "t"));
	strcpy(comma, pub("a,b", "t"));
	ck_assert_str_eq(pub("a_b", "t"), "mcp__a_b__t");
	ck_assert_str_ne(dot, "mcp__a_b__t");
	ck_assert_str_ne(dot, comma);
	ck_assert_str_eq(comma, "mcp__a_b__t_147dcd1e5805");
}
END_TEST

/* The digest is of <server> NUL <tool> (sha256sum of printf 'a.b\0t' starts 3907e39bd4c7), not
 * of the joined raw names (68acedd3dfed) nor of the sanitized name (5f3104450565). */
START_TEST(names_digest_is_of_server_nul_tool)
{
	char hex[2 * SHA256_LEN + 1], want[MCP_NAME_MAX + 1];

	sha256_hex("a.b\0t", 5, hex);
	ck_assert_str_eq(hex, "3907e39bd4c72c04fe52a6374356923ba304a45986476c619943601853505bc1");
	snprintf(want, sizeof(want), "mcp__a_b__t_%.12s", hex);
	ck_assert_str_eq(pub("a.b", "t"), want);
	sha256_hex("a.bt", 4, hex);
	ck_assert_int_eq(strncmp(hex, "68acedd3dfed", 12), 0);
	ck_assert_str_ne(pub("a.b", "t"), "mcp__a_b__t_68acedd3dfed");
	ck_assert_str_ne(pub("a.b", "t"), "mcp__a_b__t_5f3104450565");	/* sha256("mcp__a_b__t") */
}
END_TEST

START_TEST(names_server_name_check)
{
	struct err e;

	err_clear(&e);
	ck_assert_int_eq(mcp_name_valid_server("fs", &e), 0);
	ck_assert_int_eq(mcp_name_valid_server(" ", &e), 0);
	ck_assert_int_eq(e.code, ERR_NONE);
	ck_assert_int_eq(mcp_name_valid_server("", &e), -1);
	ck_assert_int_eq(e.code, ERR_INVALID_PARAMS);
	ck_assert_str_eq(e.msg, "mcpServers: a server's name is empty");
	ck_assert_int_eq(mcp_name_valid_server("", NULL), -1);
}
END_TEST

/* Renders the result in json (must succeed); returns owned text, *is_error as the call set it. */
static char *
render(const char *json, int *is_error)
{
	json_error_t jerr;
	json_t *r = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
	struct err e;
	char *text;

	ck_assert_msg(r != NULL, "bad test JSON: %s", jerr.text);
	err_clear(&e);
	*is_error = -1;
	text = mcp_result_text(r, is_error, &e);
	ck_assert_msg(text != NULL, "%s: %s", json, e.msg);
	ck_assert_int_eq(e.code, ERR_NONE);
	json_decref(r);
	return text;
}

/* The result in json renders as want, isError false. */
static void
check_text(const char *json, const char *want)
{
	int is_error;
	char *text = render(json, &is_error);

	ck_assert_str_eq(text, want);
	ck_assert_int_eq(is_error, 0);
	free(text);
}

/* The result in json is refused with MCP_PROTOCOL_ERROR and the message "...: what". */
static void
check_malformed(const json_t *r, const char *what)
{
	char want[512];
	struct err e;
	int is_error = -1;

	err_clear(&e);
	ck_assert_ptr_null(mcp_result_text(r, &is_error, &e));
	ck_assert_int_eq(e.code, ERR_MCP_PROTOCOL_ERROR);
	snprintf(want, sizeof(want), "malformed tools/call result: %s", what);
	ck_assert_str_eq(e.msg, want);
	ck_assert_int_eq(is_error, 0);
	ck_assert_ptr_null(mcp_result_text(r, NULL, NULL));	/* no error struct: still no crash */
}

static void
check_malformed_json(const char *json, const char *what)
{
	json_t *r = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

	ck_assert_msg(r != NULL, "bad test JSON: %s", json);
	check_malformed(r, what);
	json_decref(r);
}

START_TEST(result_text_blocks_joined_by_newlines)
{
	check_text("{\"content\": [{\"type\": \"text\", \"text\": \"one\"}]}", "one");
	check_text("{\"content\": [{\"type\": \"text\", \"text\": \"one\"}, {\"type\": \"text\", \"text\": \"\"},"
		   " {\"type\": \"text\", \"text\": \"two\\nlines\", \"annotations\": {\"priority\": 1}}]}",
	    "one\n\ntwo\nlines");
	check_text("{\"content\": []}", "");
	check_text("{}", "");
	check_text("{\"content\": null, \"isError\": null}", "");
}
END_TEST

START_TEST(result_resource_link_is_name_and_uri)
{
	check_text("{\"content\": [{\"type\": \"resource_link\", \"name\": \"main.rs\", \"uri\": \"file:///p/main.rs\","
		   " \"mimeType\": \"text/x-rust\"}]}",
	    "main.rs file:///p/main.rs");
}
END_TEST

START_TEST(result_embedded_resource_text_or_blob)
{
	check_text("{\"content\": [{\"type\": \"resource\", \"resource\": {\"uri\": \"file:///a.txt\", \"text\": \"hi\\nthere\"}}]}",
	    "file:///a.txt\nhi\nthere");
	/* "hello" in base64, padded, unpadded, with a line break */
	check_text("{\"content\": [{\"type\": \"resource\", \"resource\": {\"uri\": \"file:///a.pdf\", \"mimeType\":"
		   " \"application/pdf\", \"blob\": \"aGVsbG8=\"}}]}",
	    "[application/pdf, 5 bytes omitted]");
	check_text("{\"content\": [{\"type\": \"resource\", \"resource\": {\"uri\": \"u\", \"blob\": \"aGVs\\nbG8\"}}]}",
	    "[application/octet-stream, 5 bytes omitted]");
	check_text("{\"content\": [{\"type\": \"resource\", \"resource\": {\"uri\": \"u\", \"blob\": \"\"}}]}",
	    "[application/octet-stream, 0 bytes omitted]");
	/* text wins over a blob beside it */
	check_text("{\"content\": [{\"type\": \"resource\", \"resource\": {\"uri\": \"u\", \"text\": \"t\", \"blob\": \"AAAA\"}}]}",
	    "u\nt");
}
END_TEST

START_TEST(result_image_and_audio_are_omitted_with_their_size)
{
	check_text("{\"content\": [{\"type\": \"image\", \"mimeType\": \"image/png\", \"data\": \"iVBORw0KGgo=\"},"
		   " {\"type\": \"audio\", \"mimeType\": \"audio/wav\", \"data\": \"AAAAAA==\"},"
		   " {\"type\": \"image\", \"mimeType\": \"image/gif\", \"data\": \"R0lGODlh-_8\"}]}",
	    "[image/png, 8 bytes omitted]\n[audio/wav, 4 bytes omitted]\n[image/gif, 8 bytes omitted]");
}
END_TEST

START_TEST(result_unknown_block_type_is_named)
{
	check_text("{\"content\": [{\"type\": \"text\", \"text\": \"a\"}, {\"type\": \"video\", \"frames\": 3}]}",
	    "a\n[video content omitted]");
}
END_TEST

/* With no blocks, structuredContent's compact JSON in its own key order; blocks win over it. */
START_TEST(result_structured_content_only)
{
	check_text("{\"structuredContent\": {\"b\": 1, \"a\": [true, null, \"x\\u00e9\"], \"c\": {}}}",
	    "{\"b\":1,\"a\":[true,null,\"x\xc3\xa9\"],\"c\":{}}");
	check_text("{\"content\": [], \"structuredContent\": {\"z\": 0.5, \"nul\": \"a\\u0000b\"}}",
	    "{\"z\":0.5,\"nul\":\"a\\u0000b\"}");
	check_text("{\"content\": [{\"type\": \"text\", \"text\": \"{\\\"b\\\": 1}\"}], \"structuredContent\": {\"b\": 1}}",
	    "{\"b\": 1}");
	check_text("{\"content\": [], \"structuredContent\": null}", "");
}
END_TEST

START_TEST(result_is_error_is_reported)
{
	int is_error;
	char *text = render("{\"content\": [{\"type\": \"text\", \"text\": \"no such repo\"}], \"isError\": true}",
	    &is_error);
	json_t *r = json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", "x", "isError", 1);
	struct err e;

	ck_assert_str_eq(text, "no such repo");
	ck_assert_int_eq(is_error, 1);
	free(text);
	text = render("{\"content\": [], \"isError\": false}", &is_error);
	ck_assert_int_eq(is_error, 0);
	free(text);
	err_clear(&e);
	text = mcp_result_text(r, NULL, &e);		/* is_error may be NULL */
	ck_assert_str_eq(text, "x");
	free(text);
	json_decref(r);
}
END_TEST

/* \u0000 inside any string becomes U+FFFD; a type with a NUL in it is not "text". */
START_TEST(result_nul_bytes_become_replacement_characters)
{
	check_text("{\"content\": [{\"type\": \"text\", \"text\": \"a\\u0000b\\u0000\"}]}",
	    "a\xef\xbf\xbd" "b\xef\xbf\xbd");
	check_text("{\"content\": [{\"type\": \"text\\u0000\", \"text\": \"a\"}]}",
	    "[text\xef\xbf\xbd content omitted]");
	check_text("{\"content\": [{\"type\": \"resource_link\", \"name\": \"n\\u0000\", \"uri\": \"u\"}]}",
	    "n\xef\xbf\xbd u");
}
END_TEST

START_TEST(result_malformed_is_a_protocol_error)
{
	static const struct {
		const char *json, *what;
	} v[] = {
		{ "[]", "expected an object" },
		{ "\"text\"", "expected an object" },
		{ "{\"isError\": \"yes\"}", "isError: expected a boolean" },
		{ "{\"content\": {\"type\": \"text\"}}", "content: expected an array" },
		{ "{\"content\": \"hi\"}", "content: expected an array" },
		{ "{\"content\": [1]}", "content[0]: expected an object" },
		{ "{\"content\": [{\"type\": \"text\", \"text\": \"ok\"}, \"x\"]}", "content[1]: expected an object" },
		{ "{\"content\": [{}]}", "content[0].type: expected a string" },
		{ "{\"content\": [{\"type\": 7}]}", "content[0].type: expected a string" },
		{ "{\"content\": [{\"type\": \"text\"}]}", "content[0].text: expected a string" },
		{ "{\"content\": [{\"type\": \"text\", \"text\": [\"a\"]}]}", "content[0].text: expected a string" },
		{ "{\"content\": [{\"type\": \"resource_link\", \"uri\": \"u\"}]}", "content[0].name: expected a string" },
		{ "{\"content\": [{\"type\": \"resource_link\", \"name\": \"n\"}]}", "content[0].uri: expected a string" },
		{ "{\"content\": [{\"type\": \"resource\"}]}", "content[0].resource: expected an object" },
		{ "{\"content\": [{\"type\": \"resource\", \"resource\": {\"text\": \"t\"}}]}",
		  "content[0].resource.uri: expected a string" },
		{ "{\"content\": [{\"type\": \"resource\", \"resource\": {\"uri\": \"u\"}}]}",
		  "content[0].resource: expected a text or a blob string" },
		{ "{\"content\": [{\"type\": \"resource\", \"resource\": {\"uri\": \"u\", \"blob\": 3}}]}",
		  "content[0].resource: expected a text or a blob string" },
		{ "{\"content\": [{\"type\": \"resource\", \"resource\": {\"uri\": \"u\", \"blob\": \"\", \"mimeType\": 1}}]}",
		  "content[0].resource.mimeType: expected a string" },
		{ "{\"content\": [{\"type\": \"image\", \"data\": \"AAAA\"}]}", "content[0].mimeType: expected a string" },
		{ "{\"content\": [{\"type\": \"audio\", \"mimeType\": \"audio/wav\"}]}", "content[0].data: expected a string" },
		{ "{\"structuredContent\": [1]}", "structuredContent: expected an object" },
		{ "{\"content\": [], \"structuredContent\": \"s\"}", "structuredContent: expected an object" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		check_malformed_json(v[i].json, v[i].what);
}
END_TEST

/* structuredContent nested past the encoder's limit (built, not parsed: jansson's parser stops
 * at 2048 levels) is refused, not crashed on. */
START_TEST(result_structured_content_too_deep)
{
	json_t *inner = json_array(), *r;

	for (int i = 0; i < JENC_MAX_DEPTH + 1; i++)
		inner = json_pack("[o]", inner);
	r = json_pack("{s:{s:o}}", "structuredContent", "deep", inner);
	check_malformed(r, "structuredContent: cannot be encoded");
	json_decref(r);
}
END_TEST

Suite *
mcp_text_suite(void)
{
	Suite *s = suite_create("mcp_text");
	TCase *tc = tcase_create("names");

	tcase_add_test(tc, names_plain_pass_unchanged);
	tcase_add_test(tc, names_sanitized_get_the_hash);
	tcase_add_test(tc, names_64_stay_65_are_cut_and_hashed);
	tcase_add_test(tc, names_long_server_and_tool);
	tcase_add_test(tc, names_sanitizing_never_collides);
	tcase_add_test(tc, names_digest_is_of_server_nul_tool);
	tcase_add_test(tc, names_server_name_check);
	suite_add_tcase(s, tc);
	tc = tcase_create("result");
	tcase_add_test(tc, result_text_blocks_joined_by_newlines);
	tcase_add_test(tc, result_resource_link_is_name_and_uri);
	tcase_add_test(tc, result_embedded_resource_text_or_blob);
	tcase_add_test(tc, result_image_and_audio_are_omitted_with_their_size);
	tcase_add_test(tc, result_unknown_block_type_is_named);
	tcase_add_test(tc, result_structured_content_only);
	tcase_add_test(tc, result_is_error_is_reported);
	tcase_add_test(tc, result_nul_bytes_become_replacement_characters);
	tcase_add_test(tc, result_malformed_is_a_protocol_error);
	tcase_add_test(tc, result_structured_content_too_deep);
	suite_add_tcase(s, tc);
	return s;
}
