/*
 * The image types a prompt may carry (docs/contract.md §27) and the bytes each begins with: one
 * table for the agent's check at the edge, the provider's request and the chat's /image.
 */
#ifndef BASE_IMGTYPE_H
#define BASE_IMGTYPE_H

#include <stddef.h>

#define IMGTYPE_LIST "image/png, image/jpeg, image/gif or image/webp"

/* 1 when mime is one of the four. */
int imgtype_known(const char *mime);
/* 1 when d[0..n) begins as mime's images do (PNG's signature, JPEG's FF D8 FF, GIF87a or GIF89a,
 * RIFF....WEBP). */
int imgtype_matches(const char *mime, const unsigned char *d, size_t n);
/* The type d[0..n) begins as, or NULL. */
const char *imgtype_of(const unsigned char *d, size_t n);

#endif
