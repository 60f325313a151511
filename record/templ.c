/*
 * The recorder's templating (docs/contract.md §20.1): what a replay runs elsewhere becomes a placeholder
 * ({{cwd}}, {{state}}, {{session:N}}), and the API key is blanked wherever it appears.
 */
#include "record/internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

static int
record_name_char(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("_-~", c));
}

/* A path p at s, ending where a path name cannot go on (a '.' ends it unless a name follows). */
static int
record_path_at(const char *s, size_t left, const char *p, size_t plen)
{
	if (plen == 0 || plen > left || memcmp(s, p, plen) != 0)
		return 0;
	if (plen == left)
		return 1;
	if (s[plen] == '.')
		return plen + 1 == left || !(record_name_char(s[plen + 1]) || s[plen + 1] == '.');
	return !record_name_char(s[plen]);
}

char *
record_templ_str(const struct record *r, const char *s, size_t len, size_t *out_len)
{
	const char *paths[2] = { r->cwd, r->state }, *names[2] = { "{{cwd}}", "{{state}}" };
	size_t slen = r->secret ? strlen(r->secret) : 0;
	struct buf b;

	/* The longer path first: one may hold the other. */
	if (paths[0] && paths[1] && strlen(paths[1]) > strlen(paths[0])) {
		paths[0] = r->state, paths[1] = r->cwd;
		names[0] = "{{state}}", names[1] = "{{cwd}}";
	}
	buf_init(&b);
	for (size_t i = 0; i < len;) {
		size_t left = len - i, k;
		if (slen && left >= slen && memcmp(s + i, r->secret, slen) == 0) {
			buf_puts(&b, RECORD_REDACTED);
			i += slen;
			continue;
		}
		for (k = 0; k < 2; k++)
			if (paths[k] && record_path_at(s + i, left, paths[k], strlen(paths[k])))
				break;
		if (k < 2) {
			buf_puts(&b, names[k]);
			i += strlen(paths[k]);
			continue;
		}
		size_t n = json_array_size(r->sessions);
		for (k = 0; k < n; k++) {
			const char *id = json_string_value(json_array_get(r->sessions, k));
			if (left >= strlen(id) && memcmp(s + i, id, strlen(id)) == 0)
				break;
		}
		if (k < n) {
			buf_printf(&b, "{{session:%zu}}", k + 1);
			i += strlen(json_string_value(json_array_get(r->sessions, k)));
			continue;
		}
		buf_append(&b, s + i, 1);
		i++;
	}
	*out_len = b.len;
	if (b.data == NULL)
		return xstrdup("");
	return buf_steal(&b);
}

static json_t *
record_templ_string(void *arg, const json_t *v)
{
	size_t n;
	char *s = record_templ_str(arg, json_string_value(v), json_string_length(v), &n);
	json_t *out = xjson_text(s, n);

	free(s);
	return out;
}

json_t *
record_templ(const struct record *r, const json_t *v)
{
	return xjson_map_strings(v, record_templ_string, (void *)r);
}

int
record_has_uuid(const char *s)
{
	static const int groups[] = { 8, 4, 4, 4, 12 };

	for (; *s; s++) {
		const char *p = s;
		size_t g;
		for (g = 0; g < 5; g++) {
			int n = 0;
			while (n < groups[g] && isxdigit((unsigned char)p[n]))
				n++;
			if (n < groups[g] || (g < 4 && p[n] != '-'))
				break;
			p += n + (g < 4);
		}
		if (g == 5)
			return 1;
	}
	return 0;
}
