/* Compact JSON encoding of a jansson tree, byte-identical to jansson's JSON_COMPACT output. */
#include "base/jenc.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

int
jenc_string(struct buf *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t start = b->len, i = 0;

	/* Worst case is six bytes per input byte; reserve the common case and grow on escapes. */
	buf_reserve(b, n + 2);
	b->data[b->len++] = '"';
	while (i < n) {
		size_t run = jenc_plain_run(str + i, n - i);
		if (run) {
			buf_append(b, s + i, run);
			i += run;
			continue;
		}
		unsigned c = s[i];
		if (c >= 0x80) {
			size_t l = utf8_seq_len(s + i, n - i);
			if (l == 0) {
				b->len = start;
				b->data[start] = '\0';
				return -1;
			}
			buf_append(b, s + i, l);
			i += l;
			continue;
		}
		char esc[8];
		size_t el = 2;
		esc[0] = '\\';
		switch (c) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default:
			el = (size_t)snprintf(esc, sizeof(esc), "\\u%04X", c);
			break;
		}
		buf_append(b, esc, el);
		i++;
	}
	buf_append(b, "\"", 1);
	return 0;
}

static int
enc(struct buf *b, const json_t *v, int depth)
{
	char num[64];
	const char *key;
	json_t *item;
	size_t i, klen;
	int first = 1;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (depth >= JENC_MAX_DEPTH)
			return -1;
		buf_append(b, "{", 1);
		json_object_keylen_foreach((json_t *)v, key, klen, item) {
			if (!first)
				buf_append(b, ",", 1);
			first = 0;
			if (jenc_string(b, key, klen) < 0)
				return -1;
			buf_append(b, ":", 1);
			if (enc(b, item, depth + 1) < 0)
				return -1;
		}
		buf_append(b, "}", 1);
		return 0;
	case JSON_ARRAY:
		if (depth >= JENC_MAX_DEPTH)
			return -1;
		buf_append(b, "[", 1);
		json_array_foreach(v, i, item) {
			if (i)
				buf_append(b, ",", 1);
			if (enc(b, item, depth + 1) < 0)
				return -1;
		}
		buf_append(b, "]", 1);
		return 0;
	case JSON_STRING:
		return jenc_string(b, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		buf_append(b, num, (size_t)snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v)));
		return 0;
	case JSON_REAL: {
		/* Rare on our paths; jansson's own formatting keeps the bytes identical. */
		char *r = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		if (r == NULL)
			return -1;
		buf_puts(b, r);
		free(r);
		return 0;
	}
	case JSON_TRUE:
		buf_append(b, "true", 4);
		return 0;
	case JSON_FALSE:
		buf_append(b, "false", 5);
		return 0;
	case JSON_NULL:
		buf_append(b, "null", 4);
		return 0;
	}
	return -1;
}

int
jenc_append(struct buf *b, const json_t *v)
{
	size_t start = b->len;

	if (v == NULL || enc(b, v, 0) < 0) {
		b->len = start;
		if (b->data)
			b->data[start] = '\0';
		return -1;
	}
	return 0;
}

char *
jenc_dumps(const json_t *v, size_t *len)
{
	struct buf b;

	buf_init(&b);
	if (jenc_append(&b, v) < 0) {
		buf_free(&b);
		return NULL;
	}
	if (len)
		*len = b.len;
	return buf_steal(&b);
}
