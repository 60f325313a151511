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

/* An image's bytes between the check and the store: decoded on the loop, stored off it. */
struct acp_image {
	unsigned char *data;	/* owned */
	size_t len;
	char blob[BLOB_NAME_LEN + 1];	/* its name, once stored */
};

/*
 * Decodes and checks each image block of prompt (data read from spans where a long line left it,
 * docs/contract.md §27): *out (owned, acp_images_free) and *n; 0 with *n 0 when it has none; -1
 * with e (ERR_INVALID_PARAMS: bad base64, a lying type, empty, too large).
 */
int acp_images_decode(const json_t *prompt, const struct acp_spans *sp, struct acp_image **out, size_t *n,
    struct err *e);
/* Stores each under blob_dir, naming it (off the loop: hashing 20 MiB takes 80 ms); stops between
 * images when *cancel. 0, or -1 with e (ERR_INTERNAL). */
int acp_images_put(struct acp_image *imgs, size_t n, const char *blob_dir, int sync, const atomic_int *cancel,
    struct err *e);
/* The prompt with its image blocks, in order, replaced by {type, mimeType, blob, bytes}; new ref. */
json_t *acp_images_refs(const json_t *prompt, const struct acp_image *imgs, size_t n);
void acp_images_free(struct acp_image *imgs, size_t n);

#endif
