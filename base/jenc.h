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
 * (printable ASCII other than '"' and '\\'); eight bytes at a time. */
size_t jenc_plain_run(const char *s, size_t n);
/* Returns an owned NUL-terminated encoding of v (borrowed) and its length, or NULL. */
char *jenc_dumps(const json_t *v, size_t *len);

#define JENC_MAX_DEPTH 4096

#endif
