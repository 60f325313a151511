/*
 * A chat request's body with images (docs/contract.md §27): the JSON text with each image's URL
 * cut out, and the images streamed into those places from the blob store as
 * "data:<mimeType>;base64,..." while libcurl sends, so a large image is never held encoded (nor
 * whole) in memory. Each blob is checked as it is read: its size when opened, its digest at its
 * end (a blob that does not hold what it is named by aborts the request).
 */
#ifndef MODEL_BODY_H
#define MODEL_BODY_H

#include <stddef.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/sha256.h"

struct body_image {
	char *prefix;		/* "data:<mimeType>;base64," */
	char blob[65];
	size_t bytes;
	int fd;			/* the blob, opened by body_make */
};

struct body {
	char *text;		/* owned: the JSON text, cut at each image's URL */
	size_t text_len;
	size_t *cuts;		/* cuts[i]: where image i's URL goes in text (between its quotes) */
	struct body_image *images;
	size_t nimages;
	size_t total;		/* the bytes the body sends */
	/* Where the stream is: piece 2k is text up to cut k, piece 2k+1 image k. */
	size_t piece, off;
	struct sha256 hash;	/* of the image being sent, so far */
	struct buf out;		/* encoded bytes not yet given to libcurl */
	char error[200];	/* why the stream aborted */
};

/*
 * Turns each message's "images" ([{mimeType, blob, bytes}]) into the user content array
 * [{type: "text", text}, {type: "image_url", image_url: {url}}...] of messages (changed in place),
 * marking each URL. Returns the number of images.
 */
size_t body_mark_images(json_t *messages, const char *nonce);

/*
 * The body for the JSON text text[0..len) (stolen) whose marked URLs (body_mark_images with
 * nonce) are the n images of messages, in order; the blobs under state_dir are opened. 0, or -1
 * with e (ERR_MODEL_REQUEST: a blob missing or of the wrong size).
 */
int body_make(struct body *b, char *text, size_t len, const json_t *messages, const char *nonce,
    const char *state_dir, struct err *e);
void body_free(struct body *b);
/* Back to the first byte (a retry, or libcurl seeking to 0). 0, or -1 (a blob cannot seek). */
int body_rewind(struct body *b);
/* Up to size next bytes into dst; returns how many (0 at the end), or -1 with b->error. */
long body_read(struct body *b, char *dst, size_t size);

/* 16 hex digits no text is expected to hold: a request's marks. */
void body_nonce(char out[17]);

#endif
