/*
 * JSON validation over bytes: one loop with an explicit stack, no recursion, no allocation.
 * Strings go sixteen bytes at a time (base/jenc.h's plain run); the structure goes byte by byte
 * through a handful of gotos, so the cursor stays in a register.
 */
#include "session/jsonscan.h"

#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "base/jenc.h"
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
		if (end - p < 2)
			return NULL;
		c = p[1];
		if (c != 'u') {
			if (c != '"' && c != '\\' && c != '/' && c != 'b' && c != 'f' && c != 'n' && c != 'r' && c != 't')
				return NULL;
			p += 2;
			continue;
		}
		unsigned cp, lo;
		if (end - p < 6 || !scan_hex4(p + 2, &cp))
			return NULL;
		p += 6;
		if (cp >= 0xd800 && cp <= 0xdbff) {
			if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !scan_hex4(p + 2, &lo) || lo < 0xdc00 ||
			    lo > 0xdfff)
				return NULL;
			p += 6;
		} else if ((cp >= 0xdc00 && cp <= 0xdfff) || (cp == 0 && !nul_ok)) {
			return NULL;
		}
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

static cur
scan_one(cur p, cur end, size_t flags)
{
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
		p = scan_string(p + 1, end, nul_ok, &esc);
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
		p = (*p == '-' || (*p >= '0' && *p <= '9')) ? scan_number(p, end) : NULL;
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
	p = scan_one(p, end, flags);
	return p != NULL && scan_ws(p, end) == end;
}

const char *
json_scan_skip(const char *p, const char *end, size_t flags)
{
	return (const char *)scan_one((cur)p, (cur)end, flags);
}
