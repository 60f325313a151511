/*
 * json_pack that cannot fail quietly (the x-allocator rule for JSON), and strings from bytes
 * that may not be UTF-8. Every caller passes
 * non-NULL, valid UTF-8 strings (text from outside is repaired first), so a NULL from jansson
 * is a bug: it is logged with jansson's reason and the process aborts, as out of memory does.
 */
#ifndef BASE_XJSON_H
#define BASE_XJSON_H

#include <jansson.h>

/* Returns a new reference; never NULL. */
json_t *xjson_pack(const char *fmt, ...);
/* A JSON string of any bytes s[0..n): invalid UTF-8 becomes U+FFFD (docs/contract.md §3.2). New reference. */
json_t *xjson_text(const char *s, size_t n);

/* fn: a string (borrowed) -> its replacement (new ref). */
typedef json_t *xjson_string_fn(void *arg, const json_t *str);
/* A copy of v (borrowed) with every string, at any depth, replaced by fn's; numbers, booleans and
 * null are shared. Returns new ref. */
json_t *xjson_map_strings(const json_t *v, xjson_string_fn *fn, void *arg);

#endif
