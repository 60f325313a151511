/* Differential: the allocation-free validator says yes only where jansson, with the same flags,
 * parses the bytes too (session/jsonscan.h's contract). */
#include <stdlib.h>

#include <jansson.h>

#include "session/jsonscan.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const size_t flagsets[] = { 0, JSON_ALLOW_NUL, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, JSON_DECODE_ANY };

	for (size_t i = 0; i < sizeof(flagsets) / sizeof(flagsets[0]); i++) {
		if (!json_scan_valid((const char *)data, size, flagsets[i]))
			continue;
		json_t *j = json_loadb((const char *)data, size, flagsets[i], NULL);
		if (j == NULL)
			__builtin_trap();
		json_decref(j);
	}
	return 0;
}
