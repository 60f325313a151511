/*
 * Compact JSON encoding of a jansson tree. The bytes are exactly those of
 * json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) (insertion order, no spaces, jansson's escapes),
 * without jansson's per-code-point loop and per-container cycle bookkeeping: the hot paths
 * (every logged event, every message on stdout) spend their time here.
 */
#ifndef BASE_JENC_H
#define BASE_JENC_H

#include <jansson.h>
#include <stddef.h>

#include "base/buf.h"

/* Appends v (borrowed) to b. Returns 0, or -1 with b as it was when a string is not valid
 * UTF-8, a real is not finite, or nesting is deeper than JENC_MAX_DEPTH. */
int jenc_append(struct buf *b, const json_t *v);
/* Appends s[0..n) as a JSON string literal; -1 (b unchanged) when s is not valid UTF-8. */
int jenc_string(struct buf *b, const char *s, size_t n);
/* Length of the leading run of s[0..n) that stands for itself inside a JSON string literal
 * (printable ASCII other than '"' and '\\'). Inline: encoders and scanners call it per string. */
static inline size_t jenc_plain_run(const char *s, size_t n);
/* Returns an owned NUL-terminated encoding of v (borrowed) and its length, or NULL. */
char *jenc_dumps(const json_t *v, size_t *len);

#define JENC_MAX_DEPTH 4096

#if defined(__SSE2__) && !defined(JENC_PORTABLE)
#include <emmintrin.h>

static inline size_t
jenc_plain_run(const char *s, size_t n)
{
	const __m128i ctl = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
	size_t i = 0;

	/* two words a round while there is room: text runs long */
	while (i + 32 <= n) {
		__m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		__m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
		__m128i b0 = _mm_or_si128(_mm_cmplt_epi8(v0, ctl),
		    _mm_or_si128(_mm_cmpeq_epi8(v0, quote), _mm_cmpeq_epi8(v0, bslash)));
		__m128i b1 = _mm_or_si128(_mm_cmplt_epi8(v1, ctl),
		    _mm_or_si128(_mm_cmpeq_epi8(v1, quote), _mm_cmpeq_epi8(v1, bslash)));
		unsigned m = (unsigned)_mm_movemask_epi8(b0) | ((unsigned)_mm_movemask_epi8(b1) << 16);
		if (m)
			return i + (size_t)__builtin_ctz(m);
		i += 32;
	}
	while (i + 16 <= n) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		/* signed: bytes >= 0x80 are negative, so one compare finds them and the controls */
		__m128i bad = _mm_or_si128(_mm_cmplt_epi8(v, ctl),
		    _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)));
		unsigned m = (unsigned)_mm_movemask_epi8(bad);
		if (m)
			return i + (size_t)__builtin_ctz(m);
		i += 16;
	}
	while (i < n && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
		i++;
	return i;
}
#else
#include <stdint.h>
#include <string.h>

static inline size_t
jenc_plain_run(const char *s, size_t n)
{
	const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
	size_t i = 0;

	while (i + 8 <= n) {
		uint64_t x, q, b;
		memcpy(&x, s + i, 8);
		q = x ^ (ones * '"');
		b = x ^ (ones * '\\');
		q = (q - ones) & ~q;
		b = (b - ones) & ~b;
		/* nonzero when a byte is >= 0x80, < 0x20, '"' or '\\' */
		if ((x | ((x - ones * 0x20) & ~x) | q | b) & highs)
			break;
		i += 8;
	}
	while (i < n && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x80 && s[i] != '"' && s[i] != '\\')
		i++;
	return i;
}
#endif

#endif
