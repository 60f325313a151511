/*
 * Base64 (RFC 4648 §4, the standard alphabet with '=' padding) for image blocks
 * (docs/contract.md §27): a strict decoder (what a client sends is checked once, here) and an
 * encoder that works in pieces, so a large blob is streamed, never held encoded.
 */
#ifndef BASE_BASE64_H
#define BASE_BASE64_H

#include <stddef.h>

/* The decoded size of n characters of padded base64 (n a multiple of 4), before padding is
 * taken off: an upper bound, exact within 2. */
#define BASE64_DECODED_MAX(n) ((n) / 4 * 3)
/* The encoded size of n bytes, padding included. */
#define BASE64_ENCODED_LEN(n) (((n) + 2) / 3 * 4)

/*
 * Decodes s[0..n) into out (room for BASE64_DECODED_MAX(n) bytes; out may be s itself: the
 * decoder writes behind what it reads). Strict: a length that is not a multiple of 4, a byte
 * outside the alphabet (white space included), '=' anywhere but the last one or two places, or
 * padding bits that are not zero fail. Returns the decoded length, or -1 with *bad set to the
 * offset of the first wrong character (n for a wrong length).
 */
long long base64_decode(const char *s, size_t n, unsigned char *out, size_t *bad);

/* Encodes in[0..n) into out (room for BASE64_ENCODED_LEN(n)); returns the bytes written. A
 * stream encodes in pieces whose lengths are multiples of 3, the last one excepted. */
size_t base64_encode(const unsigned char *in, size_t n, char *out);

#endif
