/* A cursor over one event; every helper returns the new position or NULL (fall back). */
#include "agent/sse_delta.h"

#include <string.h>

#include "base/utf8.h"
#include "session/jsonscan.h"

static const char *
d_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

static int
d_hex4(const char *p, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return 0;
	}
	*out = v;
	return 1;
}

static void
d_utf8(struct buf *b, unsigned cp)
{
	char o[4];
	size_t n;

	if (cp < 0x80) {
		o[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		o[0] = (char)(0xf0 | (cp >> 18));
		o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	buf_append(b, o, n);
}

/* Decodes the string at p (which is '"') into out; NULL on anything unusual. */
static const char *
d_string(const char *p, const char *end, struct buf *out)
{
	p++;
	while (p < end) {
		const char *run = p;
		while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20 && (unsigned char)*p < 0x80)
			p++;
		if (out && p > run)
			buf_append(out, run, (size_t)(p - run));
		if (p >= end)
			return NULL;
		unsigned char c = (unsigned char)*p;
		if (c == '"')
			return p + 1;
		if (c < 0x20)
			return NULL;
		if (c >= 0x80) {
			size_t l = utf8_seq_len((const unsigned char *)p, (size_t)(end - p));
			if (l == 0)
				return NULL;	/* the full path repairs invalid UTF-8 */
			if (out)
				buf_append(out, p, l);
			p += l;
			continue;
		}
		/* an escape */
		if (end - p < 2)
			return NULL;
		char e = p[1];
		const char *map = "\"\"\\\\//b\bf\fn\nr\rt\t";
		const char *hit = NULL;
		for (const char *m = map; *m; m += 2)
			if (*m == e)
				hit = m + 1;
		if (hit) {
			if (out)
				buf_append(out, hit, 1);
			p += 2;
			continue;
		}
		unsigned cp, lo;
		if (e != 'u' || end - p < 6 || !d_hex4(p + 2, &cp))
			return NULL;
		p += 6;
		if (cp >= 0xd800 && cp <= 0xdbff) {
			if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !d_hex4(p + 2, &lo) || lo < 0xdc00 || lo > 0xdfff)
				return NULL;
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			p += 6;
		} else if ((cp >= 0xdc00 && cp <= 0xdfff) || cp == 0) {
			return NULL;	/* a lone low surrogate, or NUL: the full path decides */
		}
		if (out)
			d_utf8(out, cp);
	}
	return NULL;
}

/* Reads a key (no escapes) into key[]; returns the position after the ':'. */
static const char *
d_key(const char *p, const char *end, char *key, size_t size)
{
	const char *q;

	p = d_ws(p, end);
	if (p >= end || *p != '"')
		return NULL;
	q = memchr(p + 1, '"', (size_t)(end - p - 1));
	if (q == NULL || (size_t)(q - p - 1) >= size || memchr(p + 1, '\\', (size_t)(q - p - 1)))
		return NULL;
	for (const char *k = p + 1; k < q; k++)
		if ((unsigned char)*k < 0x20 || (unsigned char)*k >= 0x80)
			return NULL;	/* odd keys go the full way */
	memcpy(key, p + 1, (size_t)(q - p - 1));
	key[q - p - 1] = '\0';
	p = d_ws(q + 1, end);
	if (p >= end || *p != ':')
		return NULL;
	p = d_ws(p + 1, end);
	return p < end ? p : NULL;	/* callers read the value's first byte */
}

static const char *
d_null(const char *p, const char *end)
{
	return end - p >= 4 && memcmp(p, "null", 4) == 0 ? p + 4 : NULL;
}

/* After a member: ',' (more, *more = 1) or the closing char. */
static const char *
d_next(const char *p, const char *end, char close, int *more)
{
	p = d_ws(p, end);
	if (p >= end)
		return NULL;
	if (*p == ',') {
		*more = 1;
		return p + 1;
	}
	*more = 0;
	return *p == close ? p + 1 : NULL;
}

static const char *
d_delta(const char *p, const char *end, struct buf *content, struct buf *reasoning)
{
	char key[32];
	int more = 1;

	if (p >= end || *p != '{')
		return NULL;
	p = d_ws(p + 1, end);
	if (p < end && *p == '}')
		return p + 1;
	while (more) {
		if ((p = d_key(p, end, key, sizeof(key))) == NULL)
			return NULL;
		struct buf *into = strcmp(key, "content") == 0 ? content
		    : strcmp(key, "reasoning_content") == 0   ? reasoning
							      : NULL;
		if (into || strcmp(key, "role") == 0) {
			const char *n = d_null(p, end);
			if (n)
				p = n;
			else if (*p == '"')
				p = d_string(p, end, into);
			else
				return NULL;
		} else {
			return NULL;	/* tool_calls, function_call, anything new: the full path */
		}
		if (p == NULL || (p = d_next(p, end, '}', &more)) == NULL)
			return NULL;
	}
	return p;
}

int
sse_delta_fast(const char *data, size_t len, struct buf *content, struct buf *reasoning)
{
	const char *p = data, *end = data + len;
	size_t c0 = content->len, r0 = reasoning->len;
	char key[32];
	int more = 1, choices = 0;

	p = d_ws(p, end);
	if (p >= end || *p != '{')
		goto no;
	p = d_ws(p + 1, end);
	while (more) {
		if ((p = d_key(p, end, key, sizeof(key))) == NULL)
			goto no;
		if (strcmp(key, "choices") == 0) {
			if (*p != '[' || choices++)
				goto no;
			p = d_ws(p + 1, end);
			if (p >= end || *p != '{')
				goto no;	/* empty choices: the full path knows */
			p = d_ws(p + 1, end);
			int cmore = 1;
			while (cmore) {
				if ((p = d_key(p, end, key, sizeof(key))) == NULL)
					goto no;
				if (strcmp(key, "delta") == 0)
					p = d_delta(p, end, content, reasoning);
				else if (strcmp(key, "finish_reason") == 0)
					p = d_null(p, end);
				else if (strcmp(key, "index") == 0 || strcmp(key, "logprobs") == 0)
					p = json_scan_skip(p, end);
				else
					goto no;
				if (p == NULL || (p = d_next(p, end, '}', &cmore)) == NULL)
					goto no;
			}
			p = d_ws(p, end);
			if (p >= end || *p != ']')
				goto no;	/* more than one choice */
			p++;
		} else {
			/* usage must be null; an error object, or any value that does not scan, falls back */
			p = strcmp(key, "usage") == 0 ? d_null(p, end)
			    : strcmp(key, "error") == 0 ? NULL
							: json_scan_skip(p, end);
			if (p == NULL)
				goto no;
		}
		if ((p = d_next(p, end, '}', &more)) == NULL)
			goto no;
	}
	if (d_ws(p, end) != end || !choices)
		goto no;
	return 1;
no:
	/* Untouched for the full path: cut back what was decoded. */
	if (content->data) {
		content->len = c0;
		content->data[c0] = '\0';
	}
	if (reasoning->data) {
		reasoning->len = r0;
		reasoning->data[r0] = '\0';
	}
	return 0;
}
