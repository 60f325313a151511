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

json_t *
xjson_map_strings(const json_t *v, xjson_string_fn *fn, void *arg)
{
	const char *k;
	size_t i;
	json_t *x, *out;

	if (json_is_string(v))
		return fn(arg, v);
	if (json_is_object(v)) {
		out = json_object();
		json_object_foreach((json_t *)v, k, x) json_object_set_new(out, k, xjson_map_strings(x, fn, arg));
		return out;
	}
	if (json_is_array(v)) {
		out = json_array();
		json_array_foreach(v, i, x) json_array_append_new(out, xjson_map_strings(x, fn, arg));
		return out;
	}
	return json_incref((json_t *)v);
}
