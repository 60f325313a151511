/* Values read out of a validated JSON text, and copied out in jenc's bytes, without a tree. */
#include "base/jsonraw.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/jenc.h"
#include "base/utf8.h"
#include "base/xmalloc.h"

/*
 * The string whose opening quote is at p: returns the byte after its closing quote, or NULL.
 * *escaped: it holds an escape; *canon: every escape is the one jenc writes for its character
 * (so the text is jenc's encoding of the value as it stands); *nul: it holds \u0000.
 */
static const char *
raw_string(const char *p, const char *end, int *escaped, int *canon, int *nul)
{
	*escaped = *nul = 0;
	*canon = 1;
	for (p++;;) {
		p += jenc_plain_run(p, (size_t)(end - p));
		if (p >= end)
			return NULL;
		unsigned char c = (unsigned char)*p;
		if (c == '"')
			return p + 1;
		if (c >= 0x80) {
			size_t l = utf8_seq_len((const unsigned char *)p, (size_t)(end - p));
			if (l == 0)
				return NULL;
			p += l;
			continue;
		}
		if (c != '\\' || end - p < 2)
			return NULL;
		*escaped = 1;
		if (strchr("\"\\bfnrt", p[1]) != NULL && p[1] != '\0') {
			p += 2;
			continue;
		}
		/* jenc writes the other controls as \u00XX, upper-case: anything else is not its */
		unsigned cp;
		const char *q = json_scan_escape(p, end, 1, &cp);
		if (q == NULL)
			return NULL;
		if (cp == 0)
			*nul = 1;
		if (!(q - p == 6 && cp < 0x20 && strchr("\b\t\n\f\r", (int)cp) == NULL &&
		    p[2] == '0' && p[3] == '0' && (p[5] < 'a' || p[5] > 'f')))
			*canon = 0;
		p = q;
	}
}

/* The end of the string whose opening quote is at p, found by its closing quote alone (not
 * checked: a copy checks what it copies). */
static const char *
raw_string_end(const char *p, const char *end)
{
	for (p++; p < end;) {
		const char *q = memchr(p, '"', (size_t)(end - p));
		const char *b = q;
		if (q == NULL)
			return NULL;
		while (b > p && b[-1] == '\\')
			b--;
		if ((q - b) % 2 == 0)
			return q + 1;	/* not escaped: an even run of backslashes before it */
		p = q + 1;
	}
	return NULL;
}

void
json_tape_init(struct json_tape *tp)
{
	tp->t = NULL;
	tp->n = tp->cap = 0;
}

void
json_tape_free(struct json_tape *tp)
{
	free(tp->t);
	json_tape_init(tp);
}

static size_t
tape_push(struct json_tape *tp, const char *s, size_t n)
{
	if (tp->n == tp->cap) {
		tp->cap = tp->cap ? tp->cap * 2 : 64;
		tp->t = xrealloc(tp->t, tp->cap * sizeof(*tp->t));
	}
	tp->t[tp->n].s = s;
	tp->t[tp->n].n = n;
	tp->t[tp->n].end = tp->n + 1;
	return tp->n++;
}

int
json_tape_build(struct json_tape *tp, const char *s, size_t n)
{
	const char *p = s, *end = s + n, *q;
	size_t stack[JSON_TAPE_MAX_DEPTH];
	int depth = 0;

	tp->n = 0;
	while (p < end) {
		switch (*p) {
		case ' ': case '\n': case '\r': case '\t': case ',': case ':':
			p++;
			continue;
		case '{': case '[':
			if (depth == JSON_TAPE_MAX_DEPTH)
				return -1;
			stack[depth++] = tape_push(tp, p, 0);
			p++;
			continue;
		case '}': case ']': {
			if (depth == 0)
				return -1;
			struct json_tok *o = &tp->t[stack[--depth]];
			if (*o->s != (*p == '}' ? '{' : '['))
				return -1;
			o->n = (size_t)(p + 1 - o->s);
			o->end = tp->n;
			p++;
			continue;
		}
		case '"':
			if ((q = raw_string_end(p, end)) == NULL)
				return -1;
			break;
		default:	/* a number or a literal: up to what follows it */
			for (q = p; q < end && *q != ',' && *q != '}' && *q != ']' && *q != ':' && *q != ' ' &&
			    *q != '\n' && *q != '\r' && *q != '\t' && *q != '"' && *q != '{' && *q != '['; q++)
				;
			break;
		}
		tape_push(tp, p, (size_t)(q - p));
		p = q;
	}
	return depth == 0 && tp->n > 0 && tp->t[0].end == tp->n ? 0 : -1;
}

/* Whether a key token has an escape (then it may stand for a key its bytes do not spell). */
static inline int
tape_key_escaped(const struct json_tok *kt)
{
	for (size_t i = 1; i + 1 < kt->n; i++)
		if (kt->s[i] == '\\')
			return 1;
	return 0;
}

int
json_tape_members(const struct json_tape *tp, size_t o, struct json_tape_member *m, size_t max)
{
	size_t n = 0, k;

	if (o >= tp->n || *tp->t[o].s != '{')
		return -1;
	for (k = o + 1; k < tp->t[o].end; k = tp->t[k + 1].end) {
		const struct json_tok *kt = &tp->t[k];
		/* a key, then its value: anything else is not an object's text; an escaped key may
		 * stand for any of them: not sure */
		if (n == max || k + 1 >= tp->t[o].end || kt->n < 2 || kt->s[0] != '"' || tape_key_escaped(kt))
			return -1;
		m[n].key = kt->s + 1;
		m[n].klen = kt->n - 2;
		m[n].at = k + 1;
		for (size_t i = 0; i < n; i++)
			if (m[i].klen == m[n].klen && memcmp(m[i].key, m[n].key, m[n].klen) == 0)
				return -1;	/* a key twice: jansson refuses the text */
		n++;
	}
	return (int)n;
}

int
json_tape_get(const struct json_tape *tp, size_t o, const char *key, size_t *at)
{
	struct json_tape_member m[JSON_TAPE_MAX_MEMBERS];
	size_t kl = strlen(key);
	int n = json_tape_members(tp, o, m, JSON_TAPE_MAX_MEMBERS);

	for (int i = 0; i < n; i++) {
		if (m[i].klen == kl && memcmp(m[i].key, key, kl) == 0) {
			*at = m[i].at;
			return 1;
		}
	}
	return n < 0 ? -1 : 0;
}

int
json_raw_plain(const struct json_span *v, const char **s, size_t *n)
{
	if (v == NULL || v->n < 2 || v->s[0] != '"' || v->s[v->n - 1] != '"' ||
	    memchr(v->s + 1, '\\', v->n - 2) != NULL)
		return 0;
	*s = v->s + 1;
	*n = v->n - 2;
	return 1;
}

int
json_raw_is(const struct json_span *v, const char *s)
{
	const char *b;
	size_t n;

	if (!json_raw_plain(v, &b, &n))
		return -1;
	return n == strlen(s) && memcmp(b, s, n) == 0;
}

static void
raw_put_utf8(struct buf *out, unsigned cp)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp, n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
	}
	buf_append(out, u, n);
}

int
json_raw_decode(const struct json_span *v, struct buf *out)
{
	const char *p, *end;
	size_t start = out->len;

	if (v == NULL || v->n < 2 || v->s[0] != '"')
		return -1;
	p = v->s + 1;
	end = v->s + v->n;
	buf_reserve(out, v->n);
	for (;;) {
		size_t run = jenc_plain_run(p, (size_t)(end - p));
		buf_append(out, p, run);
		p += run;
		if (p >= end)
			break;
		unsigned char c = (unsigned char)*p;
		if (c == '"') {
			if (p + 1 == end)
				return 0;
			break;
		}
		if (c >= 0x80) {
			size_t l = utf8_seq_len((const unsigned char *)p, (size_t)(end - p));
			if (l == 0)
				break;
			buf_append(out, p, l);
			p += l;
			continue;
		}
		unsigned cp;
		if (c != '\\' || (p = json_scan_escape(p, end, 0, &cp)) == NULL)
			break;
		raw_put_utf8(out, cp);
	}
	out->len = start;
	if (out->data)
		out->data[start] = '\0';
	return -1;
}

int
json_raw_int(const struct json_span *v, long long *out)
{
	const char *p = v->s, *end = v->s + v->n;
	int neg = 0;
	long long x = 0;

	if (p < end && *p == '-')
		neg = 1, p++;
	if (p == end || end - p > 18 || (*p == '0' && end - p > 1))
		return 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		x = x * 10 + (*p - '0');
	}
	*out = neg ? -x : x;
	return 1;
}

/* What json_raw_copy expects next. */
enum raw_want { RAW_VALUE, RAW_KEY, RAW_COLON, RAW_NEXT, RAW_DONE };

#define RAW_MAX_DEPTH 64

int
json_raw_copy(struct buf *out, const struct json_span *v)
{
	const char *p = v->s, *end = v->s + v->n, *q;
	size_t start = out->len;
	char stack[RAW_MAX_DEPTH];
	int depth = 0, opened = 0, esc, canon, nul;
	enum raw_want want = RAW_VALUE;
	struct json_span s;
	struct buf dec;
	long long x;

	/* The bytes are checked as they are copied (the walk that found them was not a check): what
	 * is written is always one valid value. */
	buf_reserve(out, v->n);
	while (p < end) {
		char c = *p;
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
			p++;
			continue;
		}
		switch (want) {
		case RAW_DONE:
			goto no;
		case RAW_COLON:
			if (c != ':')
				goto no;
			buf_append(out, p++, 1);
			want = RAW_VALUE;
			continue;
		case RAW_NEXT:
		case RAW_KEY:
		case RAW_VALUE:
			break;
		}
		if ((c == '}' || c == ']') && (want == RAW_NEXT || (opened && want != RAW_COLON))) {
			if (stack[depth - 1] != (c == '}' ? '{' : '['))
				goto no;
			buf_append(out, p++, 1);
			opened = 0;
			want = --depth ? RAW_NEXT : RAW_DONE;
			continue;
		}
		if (want == RAW_NEXT) {
			if (c != ',')
				goto no;
			buf_append(out, p++, 1);
			want = stack[depth - 1] == '{' ? RAW_KEY : RAW_VALUE;
			continue;
		}
		opened = 0;
		if (want == RAW_KEY && c != '"')
			goto no;
		switch (c) {
		case '{':
		case '[':
			if (depth == RAW_MAX_DEPTH)
				goto no;
			stack[depth++] = c;
			buf_append(out, p++, 1);
			opened = 1;
			want = c == '{' ? RAW_KEY : RAW_VALUE;
			continue;
		case '"':
			if ((q = raw_string(p, end, &esc, &canon, &nul)) == NULL || nul)
				goto no;
			if (canon) {
				buf_append(out, p, (size_t)(q - p));
			} else {
				/* another writer's escapes: decoded and written as jenc writes them */
				s.s = p, s.n = (size_t)(q - p);
				buf_init(&dec);
				if (json_raw_decode(&s, &dec) < 0 || jenc_string(out, dec.data, dec.len) < 0) {
					buf_free(&dec);
					goto no;
				}
				buf_free(&dec);
			}
			p = q;
			want = want == RAW_KEY ? RAW_COLON : depth ? RAW_NEXT : RAW_DONE;
			continue;
		case 't':
		case 'f':
		case 'n': {
			const char *lit = c == 't' ? "true" : c == 'f' ? "false" : "null";
			size_t n = strlen(lit);
			if ((size_t)(end - p) < n || memcmp(p, lit, n) != 0)
				goto no;
			buf_append(out, p, n);
			p += n;
			want = depth ? RAW_NEXT : RAW_DONE;
			continue;
		}
		default:
			for (q = p; q < end && *q != '\0' && strchr("-+.eE0123456789", *q) != NULL; q++)
				;
			s.s = p, s.n = (size_t)(q - p);
			/* an integer jansson holds exactly and writes back the same; -0 comes back as 0 */
			if (q == p || !json_raw_int(&s, &x) || (x == 0 && *p == '-'))
				goto no;
			buf_append(out, p, (size_t)(q - p));
			p = q;
			want = depth ? RAW_NEXT : RAW_DONE;
			continue;
		}
	}
	if (want == RAW_DONE)
		return 0;
no:
	out->len = start;
	if (out->data)
		out->data[start] = '\0';
	return -1;
}
