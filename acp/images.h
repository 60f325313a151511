/*
 * Image blocks at the edge (docs/contract.md §27): checked, decoded once from the line, stored
 * as a blob and replaced by a reference before anything else sees the prompt.
 */
#ifndef ACP_IMAGES_H
#define ACP_IMAGES_H

#include <stddef.h>

#include <jansson.h>

#include "acp/spans.h"
#include "base/err.h"

#define ACP_IMAGE_MAX ((size_t)20 << 20)	/* decoded bytes */

#define ACP_IMAGE_TYPES "image/png, image/jpeg, image/gif or image/webp"
#define ACP_IMAGE_BAD_TYPE "prompt[%zu].mimeType: expected " ACP_IMAGE_TYPES
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

/*
 * The prompt with each image block stored under blob_dir and replaced by {type, mimeType, blob,
 * bytes}: a new ref (prompt itself, referenced again, when it has no image). NULL with e
 * (ERR_INVALID_PARAMS: bad base64, a lying type, empty, too large; ERR_INTERNAL: the store
 * failed). Data comes from spans where a long line left it there.
 */
json_t *acp_images_store(const json_t *prompt, const struct acp_spans *sp, const char *blob_dir, int sync,
    struct err *e);

#endif
