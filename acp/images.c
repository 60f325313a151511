/* Image blocks at the edge (acp/images.h). */
#include "acp/images.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/blob.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

/* The four types and the bytes each begins with (WebP: "RIFF", a size, "WEBP"). */
static const struct {
	const char *type;
	const char *magic;
	size_t at, len;
} img_types[] = {
	{ "image/png", "\x89PNG\r\n\x1a\n", 0, 8 },
	{ "image/jpeg", "\xff\xd8\xff", 0, 3 },
	{ "image/gif", "GIF8", 0, 4 },
	{ "image/webp", "WEBP", 8, 4 },
};

static int
img_type(const char *mime)
{
	for (size_t i = 0; i < sizeof(img_types) / sizeof(img_types[0]); i++)
		if (strcmp(mime, img_types[i].type) == 0)
			return (int)i;
	return -1;
}

static int
img_magic_ok(int t, const unsigned char *d, size_t n)
{
	if (n < img_types[t].at + img_types[t].len || memcmp(d + img_types[t].at, img_types[t].magic,
	    img_types[t].len) != 0)
		return 0;
	if (strcmp(img_types[t].type, "image/gif") == 0)
		return n >= 6 && (d[4] == '7' || d[4] == '9') && d[5] == 'a';
	if (strcmp(img_types[t].type, "image/webp") == 0)
		return memcmp(d, "RIFF", 4) == 0;
	return 1;
}

int
acp_image_check(const json_t *blk, size_t i, char *buf, size_t size)
{
	const json_t *mime = json_object_get(blk, "mimeType"), *data = json_object_get(blk, "data");

	if (!json_is_string(mime) || strlen(json_string_value(mime)) != json_string_length(mime) ||
	    img_type(json_string_value(mime)) < 0) {
		snprintf(buf, size, ACP_IMAGE_BAD_TYPE, i);
		return 0;
	}
	if (!json_is_string(data)) {
		snprintf(buf, size, ACP_IMAGE_BAD_DATA, i);
		return 0;
	}
	return 1;
}

/* Block i's image stored: its reference (new ref), or NULL with e. */
static json_t *
img_store(const json_t *blk, size_t i, const struct acp_spans *sp, const char *blob_dir, int sync, struct err *e)
{
	const char *mime = json_string_value(json_object_get(blk, "mimeType")), *text;
	char name[BLOB_NAME_LEN + 1];
	unsigned char *bytes;
	size_t len, bad, pad = 0;
	long long n;

	acp_spans_text(sp, json_object_get(blk, "data"), &text, &len);
	if (len >= 4 && len % 4 == 0)
		pad = (text[len - 1] == '=') + (text[len - 2] == '=');
	if (len % 4 == 0 && BASE64_DECODED_MAX(len) - pad > ACP_IMAGE_MAX) {
		err_set(e, ERR_INVALID_PARAMS, ACP_IMAGE_TOO_LARGE, i, BASE64_DECODED_MAX(len) - pad);
		return NULL;
	}
	bytes = xmalloc(BASE64_DECODED_MAX(len) + 1);
	n = base64_decode(text, len, bytes, &bad);
	if (n < 0 && bad == len)
		err_set(e, ERR_INVALID_PARAMS, ACP_IMAGE_BAD_LENGTH, i, len);
	else if (n < 0)
		err_set(e, ERR_INVALID_PARAMS, ACP_IMAGE_BAD_BASE64, i, bad);
	else if (n == 0)
		err_set(e, ERR_INVALID_PARAMS, ACP_IMAGE_EMPTY, i);
	else if (!img_magic_ok(img_type(mime), bytes, (size_t)n))
		err_set(e, ERR_INVALID_PARAMS, ACP_IMAGE_LIES, i, mime);
	else if (blob_put(blob_dir, bytes, (size_t)n, sync, name, e) == 0) {
		free(bytes);
		return xjson_pack("{s:s, s:s, s:s, s:I}", "type", "image", "mimeType", mime, "blob", name, "bytes",
		    (json_int_t)n);
	}
	free(bytes);
	return NULL;
}

json_t *
acp_images_store(const json_t *prompt, const struct acp_spans *sp, const char *blob_dir, int sync, struct err *e)
{
	json_t *out = NULL, *blk;
	size_t i;

	json_array_foreach(prompt, i, blk) {
		const json_t *type = json_object_get(blk, "type");
		json_t *ref;
		if (!json_is_string(type) || strcmp(json_string_value(type), "image") != 0)
			continue;
		if ((ref = img_store(blk, i, sp, blob_dir, sync, e)) == NULL) {
			json_decref(out);
			return NULL;
		}
		if (out == NULL)
			out = json_copy((json_t *)prompt);
		json_array_set_new(out, i, ref);
	}
	return out ? out : json_incref((json_t *)prompt);
}
