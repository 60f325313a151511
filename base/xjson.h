/*
 * json_pack that cannot fail quietly: the x-allocator rule for JSON. Every caller passes
 * non-NULL, valid UTF-8 strings (text from outside is repaired first), so a NULL from jansson
 * is a bug: it is logged with jansson's reason and the process aborts, as out of memory does.
 */
#ifndef BASE_XJSON_H
#define BASE_XJSON_H

#include <jansson.h>

/* Returns a new reference; never NULL. */
json_t *xjson_pack(const char *fmt, ...);

#endif
