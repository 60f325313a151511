/* Image blocks at the edge (acp/images.h). */
#include "acp/images.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/blob.h"
#include "base/imgtype.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

int
acp_image_check(const json_t *blk, size_t i, char *buf, size_t size)
{
	const json_t *mime = json_object_get(blk, "mimeType"), *data = json_object_get(blk, "data");

	if (!json_is_string(mime) || strlen(json_string_value(mime)) != json_string_length(mime) ||
	    !imgtype_known(json_string_value(mime))) {
		snprintf(buf, size, ACP_IMAGE_BAD_TYPE, i);
		return 0;
	}
	if (!json_is_string(data)) {
		snprintf(buf, size, ACP_IMAGE_BAD_DATA, i);
		return 0;
	}
	return 1;
}

/* The bytes im holds checked: not empty, and beginning as its type does. */
static int
img_check(struct acp_image *im, long long n, size_t bad, struct err *e)
{
	if (n < 0)
		return err_set(e, ERR_INVALID_PARAMS, ACP_IMAGE_BAD_BASE64, im->index, bad);
	if (n == 0)
		return err_set(e, ERR_INVALID_PARAMS, ACP_IMAGE_EMPTY, im->index);
	if (!imgtype_matches(im->mime, im->data, (size_t)n))
		return err_set(e, ERR_INVALID_PARAMS, ACP_IMAGE_LIES, im->index, im->mime);
	im->len = (size_t)n;
	return 0;
}

/* im's base64 (text[0..len), in the taken line when in_place) checked and decoded: its length
 * first (before anything is allocated), then its bytes. */
static int
img_run(struct acp_image *im, const char *text, size_t len, int in_place, struct err *e)
{
	size_t bad = 0, pad = 0;
	long long got;

	if (len % 4 != 0)
		return err_set(e, ERR_INVALID_PARAMS, ACP_IMAGE_BAD_LENGTH, im->index, len);
	if (len >= 4)
		pad = (text[len - 1] == '=') + (text[len - 2] == '=');
	if (BASE64_DECODED_MAX(len) - pad > ACP_IMAGE_MAX)
		return err_set(e, ERR_INVALID_PARAMS, ACP_IMAGE_TOO_LARGE, im->index, BASE64_DECODED_MAX(len) - pad);
	if (in_place) {
		im->data = (unsigned char *)text;	/* base64 shrinks as it decodes */
		im->borrowed = 1;
	} else {
		im->data = xmalloc(BASE64_DECODED_MAX(len) + 1);
	}
	got = base64_decode(text, len, im->data, &bad);
	return img_check(im, got, bad, e);
}

/*
 * Block i's image into im: checked and decoded now, or, once *deferring (set by the first image
 * whose data is a span of the line the caller took, with in_place), left for acp_images_put to
 * check and decode on the worker, in order, so the first bad image reported is the same either
 * way. A span is decoded where it lies; other data (a string of the tree the job holds) is read
 * from there.
 */
static int
img_decode(const json_t *blk, size_t i, const struct acp_spans *sp, int in_place, int *deferring,
    struct acp_image *im, struct err *e)
{
	const json_t *data = json_object_get(blk, "data");
	const char *text;
	size_t len;

	snprintf(im->mime, sizeof(im->mime), "%s", json_string_value(json_object_get(blk, "mimeType")));
	im->index = i;
	acp_spans_text(sp, data, &text, &len);
	int span = text != json_string_value(data);
	if (in_place && span)
		*deferring = 1;
	if (*deferring) {
		im->b64 = (char *)text;
		im->b64len = len;
		im->pending = 1;
		im->in_place = span;
		return 0;
	}
	return img_run(im, text, len, 0, e);
}

static int
img_is_image(const json_t *blk)
{
	const json_t *type = json_object_get(blk, "type");

	return json_is_string(type) && strcmp(json_string_value(type), "image") == 0;
}

int
acp_images_spanned(const json_t *prompt, const struct acp_spans *sp)
{
	const char *text;
	size_t i, len;
	json_t *blk;

	json_array_foreach(prompt, i, blk) {
		const json_t *data = json_object_get(blk, "data");
		if (!img_is_image(blk) || !json_is_string(data))
			continue;
		acp_spans_text(sp, data, &text, &len);
		if (text != json_string_value(data))
			return 1;
	}
	return 0;
}

int
acp_images_decode(const json_t *prompt, const struct acp_spans *sp, int in_place, struct acp_image **out,
    size_t *n, struct err *e)
{
	struct acp_image *imgs = NULL;
	size_t i, k = 0, count = 0;
	int deferring = 0;
	json_t *blk;

	json_array_foreach(prompt, i, blk)
		count += (size_t)img_is_image(blk);
	*out = NULL;
	*n = 0;
	if (count == 0)
		return 0;
	imgs = xcalloc(count, sizeof(*imgs));
	json_array_foreach(prompt, i, blk) {
		if (!img_is_image(blk))
			continue;
		if (img_decode(blk, i, sp, in_place, &deferring, &imgs[k++], e) < 0) {
			acp_images_free(imgs, count);
			return -1;
		}
	}
	*out = imgs;
	*n = count;
	return 0;
}

int
acp_images_put(struct acp_image *imgs, size_t n, const char *blob_dir, int sync, const atomic_int *cancel,
    struct err *e)
{
	size_t i;

	/* every image checked before any is stored: those left to check first, in order */
	for (i = 0; i < n; i++) {
		if (!imgs[i].pending)
			continue;
		if (cancel && atomic_load(cancel))
			return err_set(e, ERR_INTERNAL, "the image store was cancelled");
		imgs[i].pending = 0;
		if (img_run(&imgs[i], imgs[i].b64, imgs[i].b64len, imgs[i].in_place, e) < 0)
			return -1;
	}
	for (i = 0; i < n; i++) {
		if (cancel && atomic_load(cancel))
			return err_set(e, ERR_INTERNAL, "the image store was cancelled");
		if (blob_put(blob_dir, imgs[i].data, imgs[i].len, sync, imgs[i].blob, e) < 0)
			return -1;
		if (!imgs[i].borrowed)
			free(imgs[i].data);	/* stored: its bytes are the blob's now */
		imgs[i].data = NULL;
	}
	return 0;
}

json_t *
acp_images_refs(const json_t *prompt, const struct acp_image *imgs, size_t n)
{
	json_t *out = json_copy((json_t *)prompt), *blk;
	size_t i, k = 0;

	json_array_foreach(prompt, i, blk) {
		if (!img_is_image(blk) || k >= n)
			continue;
		json_array_set_new(out, i, xjson_pack("{s:O, s:s, s:s, s:I}", "type", json_object_get(blk, "type"),
		    "mimeType", json_string_value(json_object_get(blk, "mimeType")), "blob", imgs[k].blob, "bytes",
		    (json_int_t)imgs[k].len));
		k++;
	}
	return out;
}

void
acp_images_free(struct acp_image *imgs, size_t n)
{
	for (size_t i = 0; i < n && imgs; i++)
		if (!imgs[i].borrowed)
			free(imgs[i].data);
	free(imgs);
}
