/* The checked json_pack. */
#include "base/xjson.h"

#include <stdarg.h>
#include <stdlib.h>

#include "base/log.h"
#include "base/utf8.h"

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

json_t *
xjson_text(const char *s, size_t n)
{
	json_t *t;
	size_t m;
	char *fixed;

	/* Text can be megabytes: one fast UTF-8 pass instead of jansson's per-code-point one. */
	if (utf8_valid(s, n))
		return json_stringn_nocheck(s, n);
	fixed = utf8_repair(s, n, &m);
	t = json_stringn_nocheck(fixed, m);
	free(fixed);
	return t;
}
