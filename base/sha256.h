/*
 * SHA-256 (FIPS 180-4), for names that must be short and stable (an MCP tool's public name,
 * §18): one call over a buffer, or init/update/final over pieces. Not for secrets: nothing here
 * is constant-time or wiped after use.
 */
#ifndef BASE_SHA256_H
#define BASE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32		/* bytes of a digest */

/* A hash in progress: the chaining state, the bytes hashed so far and the partial block. */
struct sha256 {
	uint32_t h[8];
	uint64_t len;		/* bytes given to update, in all */
	unsigned char block[64];
	size_t fill;		/* bytes of block in use, always < 64 between calls */
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);	/* data: borrowed */
/* Writes the digest; s must be initialised again before more use. */
void sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN]);

/* The digest of data[0..len) (data: borrowed; may be NULL when len is 0). */
void sha256(const void *data, size_t len, unsigned char out[SHA256_LEN]);
/* The same digest as 64 lower-case hex digits and a NUL. */
void sha256_hex(const void *data, size_t len, char out[2 * SHA256_LEN + 1]);

#endif
