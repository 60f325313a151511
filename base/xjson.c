/* The checked json_pack. */
#include "base/xjson.h"

#include <stdarg.h>
#include <stdlib.h>

#include "base/log.h"

json_t *
xjson_pack(const char *fmt, ...)
{
	json_error_t jerr;
	va_list ap;
	json_t *v;

	va_start(ap, fmt);
	v = json_vpack_ex(&jerr, 0, fmt, ap);
	va_end(ap);
	if (v == NULL) {
		log_error("cannot build %s: %s", fmt, jerr.text);
		abort();
	}
	return v;
}
