/*
 * JSON validation over bytes: one loop with an explicit stack, no recursion, no allocation.
 * Strings go sixteen bytes at a time (base/jenc.h's plain run); the structure goes byte by byte
 * through a handful of gotos, so the cursor stays in a register.
 */
#include "base/jsonscan.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jenc.h"
#include "base/xmalloc.h"
#include "base/utf8.h"

typedef const unsigned char *cur;

static inline cur
scan_ws(cur p, cur end)
{
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

static inline int
scan_hex4(cur p, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		unsigned c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			v |= (c | 0x20) - 'a' + 10;
		else
			return 0;
	}
	*out = v;
	return 1;
}

const char *
json_scan_escape(const char *str, const char *limit, int nul_ok, unsigned *cp)
{
	static const char simple[] = "\"\"\\\\//b\bf\fn\nr\rt\t";	/* escape letter, then its byte */
	cur p = (cur)str, end = (cur)limit;
	unsigned lo;

	if (end - p < 2)
		return NULL;
	if (p[1] != 'u') {
		for (const char *m = simple; *m; m += 2) {
			if ((unsigned char)*m == p[1]) {
				*cp = (unsigned char)m[1];
				return (const char *)p + 2;
			}
		}
		return NULL;
	}
	if (end - p < 6 || !scan_hex4(p + 2, cp))
		return NULL;
	p += 6;
	if (*cp >= 0xd800 && *cp <= 0xdbff) {
		if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !scan_hex4(p + 2, &lo) || lo < 0xdc00 || lo > 0xdfff)
			return NULL;
		*cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
		p += 6;
	} else if ((*cp >= 0xdc00 && *cp <= 0xdfff) || (*cp == 0 && !nul_ok)) {
		return NULL;
	}
	return (const char *)p;
}

/*
 * The string whose opening quote is at p[-1]; returns the byte after its closing quote, or
 * NULL. *escaped is set when it holds an escape. Like jansson: no raw controls, UTF-8 checked,
 * surrogates paired, \u0000 only when nul_ok.
 */
static cur
scan_string(cur p, cur end, int nul_ok, int *escaped)
{
	for (;;) {
		p += jenc_plain_run((const char *)p, (size_t)(end - p));
		if (p >= end)
			return NULL;
		unsigned c = *p;
		if (c == '"')
			return p + 1;
		if (c >= 0x80) {
			size_t l = utf8_seq_len(p, (size_t)(end - p));
			if (l == 0)
				return NULL;
			p += l;
			continue;
		}
		if (c != '\\')
			return NULL;	/* a raw control character */
		*escaped = 1;
		unsigned cp;
		if ((p = (cur)json_scan_escape((const char *)p, (const char *)end, nul_ok, &cp)) == NULL)
			return NULL;
	}
}

/* A number jansson certainly holds: integers of at most 18 digits; reals whose exponent has at
 * most two digits and whose mantissa at most 200 (no overflow possible). */
static cur
scan_number(cur p, cur end)
{
	cur d;
	size_t mant = 0;
	int real = 0;

	if (*p == '-')
		p++;
	if (p >= end)
		return NULL;
	d = p;
	if (*p == '0')
		p++;
	else
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	if (p == d)
		return NULL;
	mant = (size_t)(p - d);
	if (p < end && *p == '.') {
		d = ++p;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
		if (p == d)
			return NULL;
		mant += (size_t)(p - d);
		real = 1;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		d = p;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
		if (p == d || p - d > 2)
			return NULL;
		real = 1;
	}
	if (real ? mant > 200 : mant > 18)
		return NULL;
	return p;
}

/* Records the value at [a, b) of kind in rec (when there is one and it has room). */
static inline void
shape_note(struct json_shape *rec, cur base, cur a, cur b, int kind)
{
	if (rec == NULL)
		return;
	if (rec->nvar == JSON_SHAPE_MAX_VARS) {
		rec->overflow = 1;
		return;
	}
	rec->var[rec->nvar].off = (uint32_t)(a - base);
	rec->var[rec->nvar].len = (uint32_t)(b - a);
	rec->var[rec->nvar].kind = (uint8_t)kind;
	int plain = kind == JSON_SHAPE_NUMBER && b - a <= 18 && (*a != '0' || b - a == 1);
	for (cur k = a; plain && k < b; k++)
		plain = *k >= '0' && *k <= '9';
	rec->var[rec->nvar].plain = (uint8_t)plain;
	rec->nvar++;
}

static cur
scan_one(cur p, cur end, size_t flags, struct json_shape *rec, cur base)
{
	cur v;
	unsigned char stack[JSON_SCAN_MAX_DEPTH];	/* '{' or '[' of each open container */
	struct {
		cur s;
		uint64_t head;	/* the first bytes, zero-padded: most keys differ there */
		uint32_t n;
		uint32_t depth;
	} keys[JSON_SCAN_MAX_KEYS];			/* keys of the open objects, innermost last */
	int depth = 0, nkeys = 0, esc = 0;
	int nul_ok = (flags & JSON_ALLOW_NUL) != 0, dups = (flags & JSON_REJECT_DUPLICATES) != 0;

value:
	p = scan_ws(p, end);
	if (p >= end)
		return NULL;
	switch (*p) {
	case '{':
		if (depth == JSON_SCAN_MAX_DEPTH)
			return NULL;
		stack[depth++] = '{';
		p = scan_ws(p + 1, end);
		if (p < end && *p == '}') {
			p++;
			depth--;
			goto after;
		}
		goto key;
	case '[':
		if (depth == JSON_SCAN_MAX_DEPTH)
			return NULL;
		stack[depth++] = '[';
		p = scan_ws(p + 1, end);
		if (p < end && *p == ']') {
			p++;
			depth--;
			goto after;
		}
		goto value;
	case '"':
		v = p;
		p = scan_string(p + 1, end, nul_ok, &esc);
		if (p)
			shape_note(rec, base, v, p, JSON_SHAPE_STRING);
		break;
	case 't':
		p = end - p >= 4 && memcmp(p, "true", 4) == 0 ? p + 4 : NULL;
		break;
	case 'f':
		p = end - p >= 5 && memcmp(p, "false", 5) == 0 ? p + 5 : NULL;
		break;
	case 'n':
		p = end - p >= 4 && memcmp(p, "null", 4) == 0 ? p + 4 : NULL;
		break;
	default:
		v = p;
		p = (*p == '-' || (*p >= '0' && *p <= '9')) ? scan_number(p, end) : NULL;
		if (p)
			shape_note(rec, base, v, p, JSON_SHAPE_NUMBER);
		break;
	}
	if (p == NULL)
		return NULL;
	goto after;

key:
	if (p >= end || *p != '"')
		return NULL;
	{
		cur k = p + 1;
		esc = 0;
		/* jansson refuses a NUL in a key whatever the flags */
		if ((p = scan_string(k, end, 0, &esc)) == NULL)
			return NULL;
		if (dups) {
			uint32_t n = (uint32_t)(p - 1 - k);
			uint64_t head = 0;
			if (esc || nkeys == JSON_SCAN_MAX_KEYS)
				return NULL;	/* not comparable as bytes, or too many: jansson decides */
			memcpy(&head, k, n < 8 ? n : 8);
			for (int i = nkeys - 1; i >= 0 && keys[i].depth == (uint32_t)depth; i--)
				if (keys[i].n == n && keys[i].head == head && (n <= 8 || memcmp(keys[i].s, k, n) == 0))
					return NULL;
			keys[nkeys].s = k;
			keys[nkeys].head = head;
			keys[nkeys].n = n;
			keys[nkeys].depth = (uint32_t)depth;
			nkeys++;
		}
	}
	p = scan_ws(p, end);
	if (p >= end || *p != ':')
		return NULL;
	p++;
	goto value;

after:
	if (depth == 0)
		return p;
	p = scan_ws(p, end);
	if (p >= end)
		return NULL;
	switch (*p++) {
	case ',':
		if (stack[depth - 1] == '{') {
			p = scan_ws(p, end);
			goto key;
		}
		goto value;
	case '}':
		if (stack[depth - 1] != '{')
			return NULL;
		while (nkeys > 0 && keys[nkeys - 1].depth == (uint32_t)depth)
			nkeys--;
		depth--;
		goto after;
	case ']':
		if (stack[depth - 1] != '[')
			return NULL;
		depth--;
		goto after;
	default:
		return NULL;
	}
}

int
json_scan_valid(const char *str, size_t n, size_t flags)
{
	cur end = (cur)str + n, p = scan_ws((cur)str, end);

	/* without JSON_DECODE_ANY jansson takes only an object or an array at the top */
	if (!(flags & JSON_DECODE_ANY) && (p >= end || (*p != '{' && *p != '[')))
		return 0;
	p = scan_one(p, end, flags, NULL, NULL);
	return p != NULL && scan_ws(p, end) == end;
}

const char *
json_scan_skip(const char *p, const char *end, size_t flags)
{
	return (const char *)scan_one((cur)p, (cur)end, flags, NULL, NULL);
}

int
json_shape_learn(struct json_shape *sh, const char *str, size_t n, size_t flags)
{
	cur end = (cur)str + n, p = scan_ws((cur)str, end);

	json_shape_free(sh);
	if (!(flags & JSON_DECODE_ANY) && (p >= end || (*p != '{' && *p != '[')))
		return 0;
	p = scan_one(p, end, flags, sh, (cur)str);
	if (p == NULL || scan_ws(p, end) != end) {
		json_shape_free(sh);
		return 0;
	}
	if (sh->overflow || n > UINT32_MAX) {
		json_shape_free(sh);	/* valid, but not a shape worth keeping */
		return 1;
	}
	/* Padded, so a short constant is compared with word loads. */
	sh->bytes = xmalloc(n + 16);
	memcpy(sh->bytes, str, n);
	memset(sh->bytes + n, 0, 16);
	sh->len = n;
	sh->flags = flags;
	return 1;
}

void
json_shape_free(struct json_shape *sh)
{
	free(sh->bytes);
	memset(sh, 0, sizeof(*sh));
}

/* a[0..n) == b[0..n); b is padded (16 readable bytes past n); a has room bytes readable. The
 * word compares assume little-endian byte order; elsewhere it is memcmp. */
static inline int
shape_eq(cur a, size_t room, const unsigned char *b, size_t n)
{
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
	return room >= n && memcmp(a, b, n) == 0;
#else
	if (n <= 8 && room >= 8) {
		uint64_t x, y;
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		return n == 0 || ((x ^ y) << (64 - 8 * n)) == 0;
	}
	if (n <= 16 && room >= 16) {
		uint64_t x0, y0, x1, y1;
		memcpy(&x0, a, 8);
		memcpy(&y0, b, 8);
		memcpy(&x1, a + n - 8, 8);
		memcpy(&y1, b + n - 8, 8);
		return x0 == y0 && x1 == y1;
	}
	if (room < n)
		return 0;
	if (n < 8)
		return memcmp(a, b, n) == 0;	/* too little room left for a word */
	/* word by word, the last word overlapping: no call for the common lengths */
	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint64_t x, y;
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			return 0;
	}
	uint64_t x, y;
	memcpy(&x, a + n - 8, 8);
	memcpy(&y, b + n - 8, 8);
	return x == y;
#endif
}

const char *
json_shape_match(const struct json_shape *sh, const char *str, const char *limit, struct json_span *vars,
    unsigned nvars)
{
	cur p = (cur)str, end = (cur)limit;
	const unsigned char *b = (const unsigned char *)sh->bytes;
	size_t lp = 0;
	int esc = 0, nul_ok = (sh->flags & JSON_ALLOW_NUL) != 0;

	if (b == NULL)
		return NULL;
	for (unsigned i = 0; i < sh->nvar; i++) {
		size_t gap = sh->var[i].off - lp, vl = sh->var[i].len, room = (size_t)(end - p);
		const unsigned char *lv = b + sh->var[i].off;	/* the learnt value */
		if (room < gap || !shape_eq(p, room, b + lp, gap))
			return NULL;
		p += gap;
		room -= gap;
		cur v = p;
		int plain = 0;
		/* A value equal to the learnt one is valid as it was. A string is whole at its
		 * closing quote; a number only if the next byte is the same (not a digit that
		 * would make it longer). */
		if (room > vl && shape_eq(p, room, lv, vl) && (sh->var[i].kind == JSON_SHAPE_STRING || p[vl] == lv[vl])) {
			p += vl;
			plain = sh->var[i].plain;
		} else if (sh->var[i].kind == JSON_SHAPE_STRING) {
			p = p < end && *p == '"' ? scan_string(p + 1, end, nul_ok, &esc) : NULL;
		} else {
			/* the usual number: a few digits, no sign, fraction or exponent */
			cur q = p;
			while (q < end && *q >= '0' && *q <= '9')
				q++;
			if (q > p && q - p <= 18 && (*p != '0' || q - p == 1) && q < end && *q != '.' && (*q | 0x20) != 'e') {
				p = q;
				plain = 1;
			} else
				p = p < end && (*p == '-' || (*p >= '0' && *p <= '9')) ? scan_number(p, end) : NULL;
		}
		if (p == NULL)
			return NULL;
		if (i < nvars) {
			vars[i].s = (const char *)v;
			vars[i].n = (size_t)(p - v);
			vars[i].plain = plain;
		}
		lp = sh->var[i].off + sh->var[i].len;
	}
	size_t tail = sh->len - lp;
	if ((size_t)(end - p) < tail || !shape_eq(p, (size_t)(end - p), b + lp, tail))
		return NULL;
	return (const char *)(p + tail);
}
