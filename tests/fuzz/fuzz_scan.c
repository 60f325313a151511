/*
 * Differential: the allocation-free validator says yes only where jansson, with the same flags,
 * parses the bytes too (base/jsonscan.h's contract); and a text that matches a shape learnt
 * from the first line of the input is one the validator takes; and where it says yes, json_build
 * makes the tree jansson makes. Input: "learnt\nother".
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/jenc.h"
#include "base/jsonbuild.h"
#include "base/jsonscan.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const size_t flagsets[] = { 0, JSON_ALLOW_NUL, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, JSON_DECODE_ANY };
	const char *s = (const char *)data;

	for (size_t i = 0; i < sizeof(flagsets) / sizeof(flagsets[0]); i++) {
		if (!json_scan_valid(s, size, flagsets[i]))
			continue;
		json_t *j = json_loadb(s, size, flagsets[i], NULL);
		if (j == NULL)
			__builtin_trap();
		/* the builder makes jansson's tree: values, types and key order */
		json_t *b = json_build(s, size, flagsets[i]);
		char *bj = jenc_dumps(j, NULL), *bb = jenc_dumps(b, NULL);
		if (b == NULL || !json_equal(j, b) || (bj && bb ? strcmp(bj, bb) != 0 : bj != bb))
			__builtin_trap();
		free(bj);
		free(bb);
		json_decref(b);
		json_decref(j);
	}
	const char *nl = memchr(s, '\n', size);
	if (nl == NULL)
		return 0;
	struct json_shape sh;
	memset(&sh, 0, sizeof(sh));
	const size_t flags = JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL;
	if (json_shape_learn(&sh, s, (size_t)(nl - s), flags) != json_scan_valid(s, (size_t)(nl - s), flags))
		__builtin_trap();
	const char *other = nl + 1, *end = json_shape_match(&sh, other, s + size, NULL, 0);
	if (end && (!json_scan_valid(other, (size_t)(end - other), flags) ||
	    json_shape_match(&sh, other, end, NULL, 0) != end))
		__builtin_trap();
	json_shape_free(&sh);
	return 0;
}
