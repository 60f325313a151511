/* MCP tools/call results as text for the model: one function per kind of content block. */
#include "mcp/result.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jenc.h"

#define MCP_RESULT_BAD "malformed tools/call result: "

/* Sets ERR_MCP_PROTOCOL_ERROR with the common prefix; returns -1. */
static int __attribute__((format(printf, 2, 3)))
mcp_result_bad(struct err *e, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return err_set(e, ERR_MCP_PROTOCOL_ERROR, MCP_RESULT_BAD "%s", what);
}

/* Whether the JSON string s is exactly name (a \u0000 inside never matches). */
static int
mcp_result_is(const json_t *s, const char *name)
{
	return json_string_length(s) == strlen(name) && memcmp(json_string_value(s), name, strlen(name)) == 0;
}

/* The string field key of obj (borrowed), or NULL with the error naming where.key. */
static const json_t *
mcp_result_field(const json_t *obj, const char *key, const char *where, size_t i, struct err *e)
{
	const json_t *v = json_object_get(obj, key);

	if (!json_is_string(v)) {
		mcp_result_bad(e, "content[%zu]%s.%s: expected a string", i, where, key);
		return NULL;
	}
	return v;
}

/* Appends the JSON string s, NUL bytes and all. */
static void
mcp_result_put(struct buf *b, const json_t *s)
{
	buf_append(b, json_string_value(s), json_string_length(s));
}

/* "[<mime>, <n> bytes omitted]", n the decoded size of the base64 string data. */
static void
mcp_result_omitted(struct buf *b, const json_t *mime, const char *mime_default, const json_t *data)
{
	const char *s = json_string_value(data);
	size_t len = json_string_length(data), digits = 0;

	/* Padding, line breaks and stray bytes carry no data: count the digits of either alphabet. */
	for (size_t k = 0; k < len; k++) {
		unsigned char c = (unsigned char)s[k];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
		    c == '/' || c == '-' || c == '_')
			digits++;
	}
	buf_puts(b, "[");
	if (mime)
		mcp_result_put(b, mime);
	else
		buf_puts(b, mime_default);
	buf_printf(b, ", %zu bytes omitted]", digits / 4 * 3 + (digits % 4 * 3) / 4);
}

/* An embedded resource: its uri and text, or its blob's size. */
static int
mcp_result_resource(struct buf *b, const json_t *blk, size_t i, struct err *e)
{
	const json_t *r = json_object_get(blk, "resource"), *uri, *text, *blob, *mime;

	if (!json_is_object(r))
		return mcp_result_bad(e, "content[%zu].resource: expected an object", i);
	if ((uri = mcp_result_field(r, "uri", ".resource", i, e)) == NULL)
		return -1;
	text = json_object_get(r, "text");
	blob = json_object_get(r, "blob");
	if (json_is_string(text)) {
		mcp_result_put(b, uri);
		buf_puts(b, "\n");
		mcp_result_put(b, text);
		return 0;
	}
	if (!json_is_string(blob))
		return mcp_result_bad(e, "content[%zu].resource: expected a text or a blob string", i);
	mime = json_object_get(r, "mimeType");
	if (mime && !json_is_string(mime))
		return mcp_result_bad(e, "content[%zu].resource.mimeType: expected a string", i);
	mcp_result_omitted(b, mime, "application/octet-stream", blob);
	return 0;
}

/* One content block, appended to b. */
static int
mcp_result_block(struct buf *b, const json_t *blk, size_t i, struct err *e)
{
	const json_t *type, *a, *c;

	if (!json_is_object(blk))
		return mcp_result_bad(e, "content[%zu]: expected an object", i);
	if ((type = mcp_result_field(blk, "type", "", i, e)) == NULL)
		return -1;
	if (mcp_result_is(type, "text")) {
		if ((a = mcp_result_field(blk, "text", "", i, e)) == NULL)
			return -1;
		mcp_result_put(b, a);
	} else if (mcp_result_is(type, "resource_link")) {
		if ((a = mcp_result_field(blk, "name", "", i, e)) == NULL ||
		    (c = mcp_result_field(blk, "uri", "", i, e)) == NULL)
			return -1;
		mcp_result_put(b, a);
		buf_puts(b, " ");
		mcp_result_put(b, c);
	} else if (mcp_result_is(type, "resource")) {
		return mcp_result_resource(b, blk, i, e);
	} else if (mcp_result_is(type, "image") || mcp_result_is(type, "audio")) {
		if ((a = mcp_result_field(blk, "mimeType", "", i, e)) == NULL ||
		    (c = mcp_result_field(blk, "data", "", i, e)) == NULL)
			return -1;
		mcp_result_omitted(b, a, NULL, c);
	} else {
		buf_puts(b, "[");
		mcp_result_put(b, type);
		buf_puts(b, " content omitted]");
	}
	return 0;
}

/* Returns text[0..len) (taken) with every NUL byte made U+FFFD. */
static char *
mcp_result_no_nul(char *text, size_t len)
{
	struct buf out;
	const char *p = text, *end = text + len, *z;

	if (memchr(text, '\0', len) == NULL)
		return text;
	buf_init(&out);
	while ((z = memchr(p, '\0', (size_t)(end - p))) != NULL) {
		buf_append(&out, p, (size_t)(z - p));
		buf_append(&out, "\xef\xbf\xbd", 3);
		p = z + 1;
	}
	buf_append(&out, p, (size_t)(end - p));
	free(text);
	return buf_steal(&out);
}

char *
mcp_result_text(const json_t *result, int *is_error, struct err *e)
{
	const json_t *content, *structured, *flag;
	struct buf b;
	size_t len;

	if (is_error)
		*is_error = 0;
	buf_init(&b);
	if (!json_is_object(result)) {
		mcp_result_bad(e, "expected an object");
		goto fail;
	}
	flag = json_object_get(result, "isError");
	content = json_object_get(result, "content");
	structured = json_object_get(result, "structuredContent");
	if (flag && !json_is_boolean(flag) && !json_is_null(flag)) {
		mcp_result_bad(e, "isError: expected a boolean");
		goto fail;
	}
	if (content && !json_is_array(content) && !json_is_null(content)) {
		mcp_result_bad(e, "content: expected an array");
		goto fail;
	}
	/* Only structuredContent (a server SHOULD send its text too, but need not): its JSON. */
	if (json_array_size(content) == 0 && structured && !json_is_null(structured)) {
		if (!json_is_object(structured)) {
			mcp_result_bad(e, "structuredContent: expected an object");
			goto fail;
		}
		if (jenc_append(&b, structured) != 0) {
			mcp_result_bad(e, "structuredContent: cannot be encoded");
			goto fail;
		}
	}
	for (size_t i = 0; i < json_array_size(content); i++) {
		if (i > 0)
			buf_puts(&b, "\n");
		if (mcp_result_block(&b, json_array_get(content, i), i, e) != 0)
			goto fail;
	}
	if (is_error)
		*is_error = json_is_true(flag);
	len = b.len;
	return mcp_result_no_nul(buf_steal(&b), len);
fail:
	buf_free(&b);
	return NULL;
}
