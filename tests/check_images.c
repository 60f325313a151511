/* Images (docs/contract.md §27): base64, the blob store, long strings kept out of the tree, the
 * checked edge and the streamed request body. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acp/images.h"
#include "acp/rpc.h"
#include "acp/spans.h"
#include "base/base64.h"
#include "base/blob.h"
#include "base/buf.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "model/body.h"
#include "tests/helpers.h"

static const unsigned char png_head[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

/* n bytes that begin as a PNG does, the rest from a fixed LCG. */
static unsigned char *
fake_png(size_t n, unsigned seed)
{
	unsigned char *d = xmalloc(n);

	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		d[i] = i < sizeof(png_head) ? png_head[i] : (unsigned char)(seed >> 16);
	}
	return d;
}

static char *
b64(const unsigned char *d, size_t n)
{
	char *s = xmalloc(BASE64_ENCODED_LEN(n) + 1);

	s[base64_encode(d, n, s)] = '\0';
	return s;
}

START_TEST(base64_round_trips_every_length_and_decodes_in_place)
{
	for (size_t n = 0; n < 70; n++) {
		unsigned char *d = fake_png(n, (unsigned)n);
		char *s = b64(d, n);
		size_t bad = 99;
		ck_assert_uint_eq(strlen(s), BASE64_ENCODED_LEN(n));
		/* in place: the decoder writes behind what it reads */
		long long got = base64_decode(s, strlen(s), (unsigned char *)s, &bad);
		ck_assert_int_eq(got, (long long)n);
		ck_assert(n == 0 || memcmp(s, d, n) == 0);
		free(s);
		free(d);
	}
}
END_TEST

START_TEST(base64_is_strict_and_says_where)
{
	static const struct {
		const char *s;
		long long want;
		size_t bad;
	} v[] = {
		{ "TWFu", 3, 0 }, { "TWE=", 2, 0 }, { "TQ==", 1, 0 }, { "", 0, 0 },
		{ "TWF", -1, 3 },		/* not a multiple of 4 */
		{ "TW u", -1, 2 },		/* white space */
		{ "TWFu\n", -1, 5 },		/* a newline makes the length wrong */
		{ "TQ=a", -1, 2 },		/* '=' then a letter */
		{ "T===", -1, 1 },		/* too much padding */
		{ "TR==", -1, 1 },		/* padding bits that are not zero */
		{ "TWF=", -1, 2 },		/* the same, one '=' */
		{ "TQ==TWFu", -1, 2 },		/* padding before the end */
		{ "TW-u", -1, 2 },		/* the URL alphabet is not this one */
		{ "TW\xc3\xa9", -1, 2 },	/* UTF-8 */
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		unsigned char out[16];
		size_t bad = 1234;
		long long got = base64_decode(v[i].s, strlen(v[i].s), out, &bad);
		ck_assert_msg(got == v[i].want, "%s: %lld", v[i].s, got);
		if (got < 0)
			ck_assert_msg(bad == v[i].bad, "%s: bad at %zu", v[i].s, bad);
	}
}
END_TEST

START_TEST(blob_is_stored_once_0600_and_read_back_checked)
{
	char dir[64], *blobs, *path, name[BLOB_NAME_LEN + 1], again[BLOB_NAME_LEN + 1];
	unsigned char *d = fake_png(1000, 7), *back;
	struct stat st;
	struct err e;

	test_mkdtemp(dir, sizeof(dir));
	blobs = xasprintf("%s/blobs", dir);
	err_clear(&e);
	ck_assert_int_eq(blob_put(blobs, d, 1000, 1, name, &e), 0);
	ck_assert(blob_name_valid(name));
	path = xasprintf("%s/%s", blobs, name);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(stat(blobs, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	ck_assert_int_eq(blob_put(blobs, d, 1000, 0, again, &e), 0);
	ck_assert_str_eq(name, again);
	back = blob_read(blobs, name, 1000, &e);
	ck_assert_ptr_nonnull(back);
	ck_assert_mem_eq(back, d, 1000);
	free(back);
	/* the wrong size, a name that is no digest, a missing blob: each a clear error */
	ck_assert_ptr_null(blob_read(blobs, name, 999, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "is not the 999 bytes"));
	err_clear(&e);
	ck_assert_ptr_null(blob_read(blobs, "../../etc/passwd", 10, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "is not a SHA-256 name"));
	err_clear(&e);
	ck_assert_int_lt(blob_open(blobs, "0000000000000000000000000000000000000000000000000000000000000000", 1, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "cannot be opened"));
	/* changed bytes of the same size: caught by the digest */
	d[500] ^= 1;
	test_write_file(path, (const char *)d, 1000);
	err_clear(&e);
	ck_assert_ptr_null(blob_read(blobs, name, 1000, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "does not hold the bytes"));
	/* stored again, the damaged blob is written anew */
	d[500] ^= 1;
	ck_assert_int_eq(blob_put(blobs, d, 1000, 0, again, &e), 0);
	back = blob_read(blobs, name, 1000, &e);
	ck_assert_ptr_nonnull(back);
	free(back);
	/* a link is not followed */
	unlink(path);
	ck_assert_int_eq(symlink("/etc/hostname", path), 0);
	ck_assert_int_lt(blob_open(blobs, name, 1000, &e), 0);
	free(path);
	free(blobs);
	free(d);
	test_rmtree(dir);
}
END_TEST

START_TEST(spans_cut_long_strings_and_fill_all_but_image_data)
{
	size_t big = ACP_SPANS_LINE_MIN + 10, cut_len = 0;
	char *data = xmalloc(big + 1), *text = xmalloc(ACP_SPANS_MIN + 1), *line, *cut;
	struct acp_spans sp;
	const char *s;
	size_t n;

	memset(data, 'A', big);
	data[big] = '\0';
	memset(text, 'B', ACP_SPANS_MIN);
	text[ACP_SPANS_MIN] = '\0';
	line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"x\","
	    "\"prompt\":[{\"type\":\"text\",\"text\":\"%s\"},{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":\"%s\"},"
	    "{\"type\":\"text\",\"text\":\"esc\\\"aped %s\"}]}}", text, data, text);
	cut = acp_spans_cut(line, strlen(line), &sp, &cut_len);
	ck_assert_ptr_nonnull(cut);
	ck_assert_uint_eq(sp.n, 2);	/* the escaped one stays in the line */
	ck_assert_uint_lt(cut_len, 3 * ACP_SPANS_MIN);
	json_t *root = json_loadb(cut, cut_len, JSON_ALLOW_NUL, NULL);
	free(cut);
	ck_assert_ptr_nonnull(root);
	ck_assert_int_eq(acp_spans_fill(root, &sp), 0);
	json_t *prompt = json_object_get(json_object_get(root, "params"), "prompt");
	/* the text is a string again; the image's data is still a placeholder, read from the line */
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(prompt, 0), "text")), text);
	ck_assert_uint_lt(json_string_length(json_object_get(json_array_get(prompt, 1), "data")), 40);
	acp_spans_text(&sp, json_object_get(json_array_get(prompt, 1), "data"), &s, &n);
	ck_assert_uint_eq(n, big);
	ck_assert_mem_eq(s, data, big);
	ck_assert_uint_eq(json_string_length(json_object_get(json_array_get(prompt, 2), "text")), ACP_SPANS_MIN + 9);
	json_decref(root);
	acp_spans_free(&sp);
	free(line);

	/* a short line is never cut */
	ck_assert_ptr_null(acp_spans_cut("{\"a\":\"b\"}", 9, &sp, &cut_len));
	free(text);
	free(data);
}
END_TEST

/* What acp_classify answers a line: its kind, and the error's details/position when invalid. */
static enum acp_kind
classify(const char *line, json_t **reply)
{
	struct acp_msg m;
	enum acp_kind k = acp_classify(line, strlen(line), &m, reply);

	acp_msg_free(&m);
	return k;
}

/* A long line means what it means with or without the cut: every way a client could tell. */
START_TEST(spans_never_change_what_a_line_means)
{
	size_t big = ACP_SPANS_LINE_MIN + 10;
	char *data = xmalloc(big + 1), *key = xmalloc(ACP_SPANS_MIN + 11), *line;
	json_t *reply = NULL;

	memset(data, 'A', big);
	data[big] = '\0';
	memset(key, 'K', ACP_SPANS_MIN + 10);
	key[ACP_SPANS_MIN + 10] = '\0';
	/* a long key is a key: not cut, the request stands */
	line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"pad\":\"%s\",\"%s\" : 1}}", data, key);
	ck_assert_int_eq(classify(line, &reply), ACP_MSG_REQUEST);
	free(line);
	/* a client spelling a placeholder: the line is parsed whole, the text stays its own */
	line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/prompt\",\"params\":{\"x\":\"%s\","
	    "\"prompt\":[{\"type\":\"text\",\"text\":\"\\u0000acp-span:0\"}]}}", data);
	struct acp_msg m;
	ck_assert_int_eq(acp_classify(line, strlen(line), &m, &reply), ACP_MSG_REQUEST);
	ck_assert_uint_eq(m.spans.n, 0);
	ck_assert_uint_eq(json_string_length(json_object_get(json_array_get(json_object_get(m.params, "prompt"), 0),
	    "text")), 11);
	acp_msg_free(&m);
	free(line);
	/* a raw control byte in a long string: jansson's parse error, at the line's own position */
	data[1000] = '\t';
	line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"%s\"}}", data);
	ck_assert_int_eq(classify(line, &reply), ACP_MSG_INVALID);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(reply, "error"), "code")), -32700);
	ck_assert_int_gt(json_integer_value(json_object_get(json_object_get(json_object_get(reply, "error"), "data"),
	    "position")), 1000);
	json_decref(reply);
	free(line);
	data[1000] = 'A';
	/* a syntax error after a cut string: its position counts the whole line */
	line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":\"%s\",,}}", data);
	ck_assert_int_eq(classify(line, &reply), ACP_MSG_INVALID);
	ck_assert_int_gt(json_integer_value(json_object_get(json_object_get(json_object_get(reply, "error"), "data"),
	    "position")), (json_int_t)big);
	json_decref(reply);
	free(line);
	free(key);
	free(data);
}
END_TEST

START_TEST(rpc_classify_gives_an_image_prompt_its_span)
{
	size_t n = ACP_SPANS_LINE_MIN;
	unsigned char *img = fake_png(n, 3);
	char *data = b64(img, n), *line;
	struct acp_msg m;
	json_t *reply;
	const char *s;
	size_t len;

	line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"x\","
	    "\"prompt\":[{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":\"%s\"}]}}", data);
	ck_assert_int_eq(acp_classify(line, strlen(line), &m, &reply), ACP_MSG_REQUEST);
	json_t *blk = json_array_get(json_object_get(m.params, "prompt"), 0);
	acp_spans_text(&m.spans, json_object_get(blk, "data"), &s, &len);
	ck_assert_uint_eq(len, strlen(data));
	ck_assert_ptr_eq(s, strstr(line, data));	/* the line's own bytes, no copy */
	acp_msg_free(&m);
	free(line);
	free(data);
	free(img);
}
END_TEST

/* An image block decoded, stored and referenced; returns the error text ("" when stored). */
static const char *
store_one(const char *mime, const char *data, const char *blobs, json_t **out, char *buf, size_t size)
{
	json_t *prompt = xjson_pack("[{s:s, s:s, s:s}]", "type", "image", "mimeType", mime, "data", data);
	struct err e;

	err_clear(&e);
	*out = NULL;
	buf[0] = '\0';
	if (!acp_image_check(json_array_get(prompt, 0), 0, buf, size)) {
		json_decref(prompt);
		return buf;
	}
	struct acp_image *imgs;
	size_t n;
	if (acp_images_decode(prompt, NULL, 0, &imgs, &n, &e) < 0) {
		json_decref(prompt);
		ck_assert_int_eq(e.code, ERR_INVALID_PARAMS);
		snprintf(buf, size, "%s", e.msg);
		return buf;
	}
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(acp_images_put(imgs, n, blobs, 0, NULL, &e), 0);
	*out = acp_images_refs(prompt, imgs, n);
	acp_images_free(imgs, n);
	json_decref(prompt);
	return buf;
}

START_TEST(images_edge_refuses_each_bad_image_and_stores_nothing)
{
	char dir[64], *blobs, buf[600];
	unsigned char *png = fake_png(100, 1), *big;
	char *good = b64(png, 100), *huge, *limit;
	json_t *out;
	struct stat st;

	test_mkdtemp(dir, sizeof(dir));
	blobs = xasprintf("%s/blobs", dir);
	ck_assert_str_eq(store_one("image/png", "not base64!!", blobs, &out, buf, sizeof(buf)),
	    "prompt[0].data: not valid base64 (at character 3)");
	ck_assert_str_eq(store_one("image/png", "not base64!", blobs, &out, buf, sizeof(buf)),
	    "prompt[0].data: not valid base64 (11 characters, not a multiple of 4)");
	ck_assert_str_eq(store_one("image/jpeg", good, blobs, &out, buf, sizeof(buf)),
	    "prompt[0].data: the bytes are not image/jpeg data");
	ck_assert_str_eq(store_one("image/png", "", blobs, &out, buf, sizeof(buf)), "prompt[0].data: the image is empty");
	ck_assert_str_eq(store_one("image/svg+xml", good, blobs, &out, buf, sizeof(buf)),
	    "prompt[0].mimeType: expected image/png, image/jpeg, image/gif or image/webp");
	ck_assert_str_eq(store_one("image/gif", "R0lGODZh", blobs, &out, buf, sizeof(buf)),
	    "prompt[0].data: the bytes are not image/gif data");	/* "GIF86a" */
	/* 20 MiB + 1: refused from its length; 20 MiB exactly: stored */
	big = fake_png(ACP_IMAGE_MAX + 1, 2);
	huge = b64(big, ACP_IMAGE_MAX + 1);
	ck_assert_str_eq(store_one("image/png", huge, blobs, &out, buf, sizeof(buf)),
	    "prompt[0].data: the image is larger than 20 MiB (20971521 bytes)");
	ck_assert_int_lt(stat(blobs, &st), 0);	/* nothing stored: not even the directory */
	{
		/* a good image then a bad one: refused whole, the good one not stored either */
		json_t *two = xjson_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:s}]", "type", "image", "mimeType", "image/png",
		    "data", good, "type", "image", "mimeType", "image/png", "data", "!!!!");
		struct acp_image *imgs;
		size_t n;
		struct err e;
		err_clear(&e);
		ck_assert_int_eq(acp_images_decode(two, NULL, 0, &imgs, &n, &e), -1);
		ck_assert_str_eq(e.msg, "prompt[1].data: not valid base64 (at character 0)");
		json_decref(two);
		ck_assert_int_lt(stat(blobs, &st), 0);
	}
	limit = b64(big, ACP_IMAGE_MAX);
	ck_assert_str_eq(store_one("image/png", limit, blobs, &out, buf, sizeof(buf)), "");
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(out, 0), "bytes")), (json_int_t)ACP_IMAGE_MAX);
	ck_assert_ptr_null(json_object_get(json_array_get(out, 0), "data"));
	json_decref(out);
	ck_assert_str_eq(store_one("image/png", good, blobs, &out, buf, sizeof(buf)), "");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(out, 0), "type")), "image");
	ck_assert(blob_name_valid(json_string_value(json_object_get(json_array_get(out, 0), "blob"))));
	json_decref(out);
	free(limit);
	free(huge);
	free(big);
	free(good);
	free(png);
	free(blobs);
	test_rmtree(dir);
}
END_TEST

/* The whole body, read size bytes at a time. */
static char *
body_all(struct body *b, size_t size, long *total)
{
	struct buf out;
	char *piece = xmalloc(size);
	long n;

	buf_init(&out);
	*total = 0;
	while ((n = body_read(b, piece, size)) > 0) {
		buf_append(&out, piece, (size_t)n);
		*total += n;
	}
	free(piece);
	if (n < 0) {
		buf_free(&out);
		*total = -1;
		return NULL;
	}
	buf_append(&out, "", 1);
	return buf_steal(&out);
}

START_TEST(body_streams_each_image_into_its_place_in_any_pieces)
{
	char dir[64], *blobs, n1[BLOB_NAME_LEN + 1], n2[BLOB_NAME_LEN + 1], nonce[17];
	unsigned char *a = fake_png(100000, 4), *b2 = fake_png(7, 5);
	char *ea = b64(a, 100000), *eb = b64(b2, 7), *text, *want, *got, *path;
	struct err e;
	struct body body;
	long total;

	test_mkdtemp(dir, sizeof(dir));
	blobs = xasprintf("%s/blobs", dir);
	err_clear(&e);
	ck_assert_int_eq(blob_put(blobs, a, 100000, 0, n1, &e), 0);
	ck_assert_int_eq(blob_put(blobs, b2, 7, 0, n2, &e), 0);
	json_t *msgs = xjson_pack("[{s:s, s:s, s:[{s:s, s:s, s:i}]}, {s:s, s:s}, {s:s, s:s, s:[{s:s, s:s, s:i}]}]",
	    "role", "user", "content", "look", "images", "mimeType", "image/png", "blob", n1, "bytes", 100000,
	    "role", "assistant", "content", "ok", "role", "user", "content", "", "images", "mimeType", "image/gif",
	    "blob", n2, "bytes", 7);
	json_t *copy = json_deep_copy(msgs);
	body_nonce(nonce);
	ck_assert_uint_eq(body_mark_images(copy, nonce), 2);
	text = json_dumps(copy, JSON_COMPACT);
	/* what the server must get: the same JSON with the data URLs in the marks' places */
	json_t *full = json_deep_copy(copy);
	char *u1 = xasprintf("data:image/png;base64,%s", ea), *u2 = xasprintf("data:image/gif;base64,%s", eb);
	json_object_set_new(json_object_get(json_array_get(json_object_get(json_array_get(full, 0), "content"), 1),
	    "image_url"), "url", json_string(u1));
	json_object_set_new(json_object_get(json_array_get(json_object_get(json_array_get(full, 2), "content"), 0),
	    "image_url"), "url", json_string(u2));
	want = json_dumps(full, JSON_COMPACT);
	ck_assert_int_eq(body_make(&body, text, strlen(text), msgs, nonce, dir, &e), 0);
	ck_assert_uint_eq(body.total, strlen(want));
	static const size_t sizes[] = { 1, 3, 7, 4096, 65536, 1 << 20 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ck_assert_int_eq(body_rewind(&body), 0);
		got = body_all(&body, sizes[i], &total);
		ck_assert_ptr_nonnull(got);
		ck_assert_int_eq(total, (long)strlen(want));
		ck_assert_str_eq(got, want);
		free(got);
	}
	/* a blob changed behind us: the stream aborts with the reason */
	path = xasprintf("%s/%s", blobs, n1);
	a[99999] ^= 0x40;
	test_write_file(path, (const char *)a, 100000);
	ck_assert_int_eq(body_rewind(&body), 0);
	ck_assert_ptr_null(body_all(&body, 65536, &total));
	ck_assert_ptr_nonnull(strstr(body.error, "does not hold the bytes it is named by"));
	body_free(&body);
	/* a blob that is gone fails the request before anything is sent */
	unlink(path);
	text = json_dumps(copy, JSON_COMPACT);
	err_clear(&e);
	ck_assert_int_eq(body_make(&body, text, strlen(text), msgs, nonce, dir, &e), -1);
	ck_assert_int_eq(e.code, ERR_MODEL_REQUEST);
	ck_assert_ptr_nonnull(strstr(e.msg, "cannot be opened"));
	body_free(&body);
	free(path);
	free(u1);
	free(u2);
	free(want);
	json_decref(full);
	json_decref(copy);
	json_decref(msgs);
	free(ea);
	free(eb);
	free(a);
	free(b2);
	free(blobs);
	test_rmtree(dir);
}
END_TEST

Suite *
images_suite(void)
{
	Suite *s = suite_create("images");
	TCase *tc = tcase_create("images");

	tcase_add_test(tc, base64_round_trips_every_length_and_decodes_in_place);
	tcase_add_test(tc, base64_is_strict_and_says_where);
	tcase_add_test(tc, blob_is_stored_once_0600_and_read_back_checked);
	tcase_add_test(tc, spans_cut_long_strings_and_fill_all_but_image_data);
	tcase_add_test(tc, spans_never_change_what_a_line_means);
	tcase_add_test(tc, rpc_classify_gives_an_image_prompt_its_span);
	tcase_add_test(tc, images_edge_refuses_each_bad_image_and_stores_nothing);
	tcase_add_test(tc, body_streams_each_image_into_its_place_in_any_pieces);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
