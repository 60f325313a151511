/*
 * Image blocks at the edge (docs/contract.md §27): checked, decoded once from the line, stored
 * as a blob and replaced by a reference before anything else sees the prompt.
 */
#ifndef ACP_IMAGES_H
#define ACP_IMAGES_H

#include <stddef.h>

#include <jansson.h>

#include <stdatomic.h>

#include "acp/spans.h"
#include "base/blob.h"
#include "base/err.h"
#include "base/imgtype.h"

#define ACP_IMAGE_MAX ((size_t)20 << 20)	/* decoded bytes */

#define ACP_IMAGE_BAD_TYPE "prompt[%zu].mimeType: expected " IMGTYPE_LIST
#define ACP_IMAGE_BAD_DATA "prompt[%zu].data: expected a base64 string"
#define ACP_IMAGE_BAD_BASE64 "prompt[%zu].data: not valid base64 (at character %zu)"
#define ACP_IMAGE_BAD_LENGTH "prompt[%zu].data: not valid base64 (%zu characters, not a multiple of 4)"
#define ACP_IMAGE_EMPTY "prompt[%zu].data: the image is empty"
#define ACP_IMAGE_TOO_LARGE "prompt[%zu].data: the image is larger than 20 MiB (%zu bytes)"
#define ACP_IMAGE_GONE "[image not available: %s]"	/* replayed when its blob is gone */
#define ACP_IMAGE_LIES "prompt[%zu].data: the bytes are not %s data"

/* 1 when block i of a prompt is an image block with a known type and string data; 0 with the
 * error text in buf otherwise. */
int acp_image_check(const json_t *blk, size_t i, char *buf, size_t size);

/* An image's bytes between the check and the store: decoded on the loop, or where they lie in
 * a line taken from the reader, off it. */
struct acp_image {
	unsigned char *data;	/* owned, unless borrowed (the taken line's bytes) */
	size_t len;
	char *b64;		/* pending: its base64 (in the taken line when in_place, else in the tree) */
	size_t b64len;
	int pending;		/* not checked yet: acp_images_put checks and decodes it */
	int in_place;		/* decoded where it lies, in the taken line */
	int borrowed;		/* data is the taken line's bytes, not owned */
	size_t index;		/* its block's index in the prompt (for the error texts) */
	char mime[32];
	char blob[BLOB_NAME_LEN + 1];	/* its name, once stored */
};

/*
 * Checks each image block of prompt (data read from spans where a long line left it, docs/contract.md
 * §27): *out (owned, acp_images_free) and *n; 0 with *n 0 when it has none; -1 with e
 * (ERR_INVALID_PARAMS: bad base64, a lying type, empty, too large). Each is checked and decoded
 * now, except, with in_place (the caller took the line's buffer), from the first one whose data
 * is a span on: those are checked and decoded by acp_images_put, in order (a span where it lies).
 */
/* 1 when an image block of prompt has its data in a span of the line (a long line). */
int acp_images_spanned(const json_t *prompt, const struct acp_spans *sp);
int acp_images_decode(const json_t *prompt, const struct acp_spans *sp, int in_place, struct acp_image **out,
    size_t *n, struct err *e);
/* Decodes what was left to decode (every image checked before any is stored), then stores each
 * under blob_dir, naming it (off the loop: hashing 20 MiB takes 80 ms); stops between images when
 * *cancel. 0, or -1 with e (ERR_INVALID_PARAMS for a bad image, ERR_INTERNAL). */
int acp_images_put(struct acp_image *imgs, size_t n, const char *blob_dir, int sync, const atomic_int *cancel,
    struct err *e);
/* The prompt with its image blocks, in order, replaced by {type, mimeType, blob, bytes}; new ref. */
json_t *acp_images_refs(const json_t *prompt, const struct acp_image *imgs, size_t n);
void acp_images_free(struct acp_image *imgs, size_t n);

#endif
