/*
 * The front matter parser (base/frontmatter.h), differential against itself: whatever it accepts
 * it must give back exactly when the fields are written again in the subset's quoted form (every
 * string "…" with its escapes, every list [ "…", "…" ]), with the body starting right after the
 * closing line; whatever it refuses says which line. Nothing it accepts is other than an object
 * of strings and lists of strings, and the body offset never passes the input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/frontmatter.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void
put_quoted(struct buf *b, const char *s, size_t n)
{
	buf_puts(b, "\"");
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '"' || c == '\\')
			buf_printf(b, "\\%c", c);
		else if (c == '\n')
			buf_puts(b, "\\n");
		else if (c == '\t')
			buf_puts(b, "\\t");
		else
			buf_append(b, &c, 1);
	}
	buf_puts(b, "\"");
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	json_t *f, *g;
	size_t body, body2;
	char why[256];
	struct buf b;
	const char *key;
	json_t *v;

	if (frontmatter_parse((const char *)data, size, &f, &body, why, sizeof(why)) < 0) {
		if (strncmp(why, "line ", 5) != 0)
			abort();
		return 0;
	}
	if (!json_is_object(f) || body > size)
		abort();
	buf_init(&b);
	buf_puts(&b, "---\n");
	json_object_foreach(f, key, v) {
		buf_printf(&b, "%s: ", key);
		if (json_is_string(v)) {
			put_quoted(&b, json_string_value(v), json_string_length(v));
		} else if (json_is_array(v)) {
			size_t i;
			json_t *it;
			buf_puts(&b, "[");
			json_array_foreach(v, i, it) {
				if (!json_is_string(it))
					abort();
				if (i)
					buf_puts(&b, ", ");
				put_quoted(&b, json_string_value(it), json_string_length(it));
			}
			buf_puts(&b, "]");
		} else {
			abort();
		}
		buf_puts(&b, "\n");
	}
	buf_puts(&b, "---\n");
	size_t head = b.len;
	buf_puts(&b, "body");
	if (frontmatter_parse(b.data, b.len, &g, &body2, why, sizeof(why)) < 0) {
		fprintf(stderr, "written again, refused: %s\n%.*s\n", why, (int)b.len, b.data);
		abort();
	}
	if (!json_equal(f, g) || body2 != head) {
		fprintf(stderr, "written again, read differently:\n%.*s\n", (int)b.len, b.data);
		abort();
	}
	json_decref(g);
	json_decref(f);
	buf_free(&b);
	return 0;
}
