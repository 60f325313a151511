/*
 * The tree of a text jsonscan has validated: no error paths are left, so the builder only walks.
 * jansson's loader reads a byte at a time through a stream and a string buffer (about 20-30 MB/s
 * here); this takes strings with memchr-sized runs and hands them to json_stringn_nocheck, keys to
 * json_object_setn_new_nocheck, as jansson's own parser does after its checks.
 */
#include "base/jsonbuild.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/jenc.h"
#include "base/jsonscan.h"
#include "base/xmalloc.h"

struct jb {
	const char *end;
	struct buf tmp;		/* an escaped string's decoded bytes */
};

static const char *
jb_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

static void
jb_utf8(struct buf *b, unsigned cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	buf_append(b, u, n);
}

/*
 * The string whose opening quote is at p: its bytes in *s, *n (into the text when it has no escape,
 * else into jb->tmp); returns the byte after the closing quote.
 */
static const char *
jb_string(struct jb *jb, const char *p, const char **s, size_t *n)
{
	const char *start = ++p, *run;
	unsigned cp;

	for (;;) {
		p += jenc_plain_run(p, (size_t)(jb->end - p));
		if (*p == '"') {
			*s = start;
			*n = (size_t)(p - start);
			return p + 1;
		}
		if (*p == '\\')
			break;
		p++;		/* a byte of a UTF-8 sequence: the scan checked it */
	}
	jb->tmp.len = 0;
	buf_append(&jb->tmp, start, (size_t)(p - start));
	for (;;) {
		p = json_scan_escape(p, jb->end, 1, &cp);	/* the scan already refused what the flags do */
		jb_utf8(&jb->tmp, cp);
		run = p;
		while (*p != '"' && *p != '\\') {
			p += jenc_plain_run(p, (size_t)(jb->end - p));
			if (*p != '"' && *p != '\\')
				p++;	/* a byte of a UTF-8 sequence */
		}
		buf_append(&jb->tmp, run, (size_t)(p - run));
		if (*p == '"')
			break;
	}
	*s = jb->tmp.data;
	*n = jb->tmp.len;
	return p + 1;
}

/* A number the scan took: an integer of at most 18 digits, or a real strtod reads as jansson does. */
static json_t *
jb_number(const char **pp, const char *end)
{
	const char *p = *pp;
	int real = 0, neg = 0;
	json_int_t v = 0;

	if (*p == '-') {
		neg = 1;
		p++;
	}
	for (; p < end && *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	while (p < end && (*p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-' || (*p >= '0' && *p <= '9'))) {
		real = 1;
		p++;
	}
	if (!real) {
		*pp = p;
		return json_integer(neg ? -v : v);
	}
	/* at most 200 mantissa digits, a sign, a point, an exponent of two digits with its sign */
	char num[256];
	size_t n = (size_t)(p - *pp);
	if (n >= sizeof(num))
		n = sizeof(num) - 1;	/* cannot be: the scan bounds it */
	memcpy(num, *pp, n);
	num[n] = '\0';
	*pp = p;
	return json_real(strtod(num, NULL));
}

static json_t *
jb_value(struct jb *jb, const char **pp)
{
	const char *p = jb_ws(*pp, jb->end), *s;
	size_t n;
	json_t *v, *item;

	switch (*p) {
	case '{':
		v = json_object();
		p = jb_ws(p + 1, jb->end);
		if (*p == '}') {
			*pp = p + 1;
			return v;
		}
		for (;;) {
			char small[64], *key;
			p = jb_string(jb, p, &s, &n);
			/* an escaped key lives in tmp, which the value reuses: copy it */
			key = (s == jb->tmp.data) ? (n < sizeof(small) ? small : xmalloc(n + 1)) : NULL;
			if (key) {
				memcpy(key, s, n);
				s = key;
			}
			p = jb_ws(p, jb->end) + 1;	/* the colon */
			item = jb_value(jb, &p);
			json_object_setn_new_nocheck(v, s, n, item);
			if (key && key != small)
				free(key);
			p = jb_ws(p, jb->end);
			if (*p++ == '}')
				break;
			p = jb_ws(p, jb->end);
		}
		*pp = p;
		return v;
	case '[':
		v = json_array();
		p = jb_ws(p + 1, jb->end);
		if (*p == ']') {
			*pp = p + 1;
			return v;
		}
		for (;;) {
			json_array_append_new(v, jb_value(jb, &p));
			p = jb_ws(p, jb->end);
			if (*p++ == ']')
				break;
		}
		*pp = p;
		return v;
	case '"':
		*pp = jb_string(jb, p, &s, &n);
		return json_stringn_nocheck(s, n);
	case 't':
		*pp = p + 4;
		return json_true();
	case 'f':
		*pp = p + 5;
		return json_false();
	case 'n':
		*pp = p + 4;
		return json_null();
	default:
		*pp = p;
		return jb_number(pp, jb->end);
	}
}

json_t *
json_build(const char *s, size_t n, size_t flags)
{
	struct jb jb;
	const char *p = s;
	json_t *v;

	if (!json_scan_valid(s, n, flags))
		return NULL;
	jb.end = s + n;
	buf_init(&jb.tmp);
	v = jb_value(&jb, &p);
	buf_free(&jb.tmp);
	return v;
}
