/*
 * Differential: wherever the text-delta fast path accepts an event, jansson must read the same
 * text. The input is split at newlines into the events of one stream, so the template learnt
 * from one event meets the next.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "model/sse_delta.h"

static void
check_one(struct sse_delta *d, const char *data, size_t size)
{
	struct buf c, r;

	buf_init(&c);
	buf_init(&r);
	if (sse_delta_fast(d, data, size, &c, &r)) {
		json_t *j = json_loadb(data, size, JSON_ALLOW_NUL, NULL);
		json_t *dl = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "delta");
		json_t *t = json_object_get(dl, "content"), *rs = json_object_get(dl, "reasoning_content");
		size_t tl = json_is_string(t) ? json_string_length(t) : 0;
		size_t rl = json_is_string(rs) ? json_string_length(rs) : 0;
		if (j == NULL || tl != c.len || rl != r.len || (tl && memcmp(json_string_value(t), c.data, tl)) ||
		    (rl && memcmp(json_string_value(rs), r.data, rl)))
			__builtin_trap();
		json_decref(j);
	} else if (c.len || r.len) {
		__builtin_trap();	/* a refusal leaves the buffers alone */
	}
	buf_free(&c);
	buf_free(&r);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct sse_delta d;

	sse_delta_init(&d);
	while (p <= end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end;
		check_one(&d, p, (size_t)(e - p));
		p = e + 1;
	}
	sse_delta_free(&d);
	return 0;
}
