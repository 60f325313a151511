/* A cursor over one event; every helper returns the new position or NULL (fall back). */
#include "model/sse_delta.h"

#include <string.h>

#include "base/jenc.h"
#include "base/jsonscan.h"
#include "base/utf8.h"

static inline const char *
d_ws(const char *p, const char *end)
{
	if (p < end && (unsigned char)*p > ' ')
		return p;	/* the common case: no white space at all */
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
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
		p += jenc_plain_run(p, (size_t)(end - p));
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
		/* an escape: NUL, lone surrogates and the like go the full way */
		unsigned cp;
		if ((p = json_scan_escape(p, end, 0, &cp)) == NULL)
			return NULL;
		if (out)
			d_utf8(out, cp);
	}
	return NULL;
}

/* The keys the fast path knows; any other plain key is D_OTHER. */
enum d_key { D_OTHER, D_CHOICES, D_USAGE, D_ERROR, D_DELTA, D_FINISH, D_INDEX, D_LOGPROBS, D_CONTENT,
	D_REASONING, D_ROLE };

/* Printable ASCII other than '"' and '\\': the bytes a plain key is made of. */
static int
d_key_byte(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* Which key starts at k (just after its opening quote): a known one is matched with its closing
 * quote, so a match is the whole key; *after is the byte past that quote. The literals have
 * constant lengths, so the compiler inlines every comparison. */
static enum d_key
d_key_known(const char *k, const char *end, const char **after)
{
	size_t room = (size_t)(end - k);

#define KEY(lit, id) do { \
		if (room >= sizeof(lit) && memcmp(k, lit "\"", sizeof(lit)) == 0) { \
			*after = k + sizeof(lit); \
			return id; \
		} \
	} while (0)
	switch (room ? *k : 0) {
	case 'c': KEY("choices", D_CHOICES); KEY("content", D_CONTENT); break;
	case 'd': KEY("delta", D_DELTA); break;
	case 'e': KEY("error", D_ERROR); break;
	case 'f': KEY("finish_reason", D_FINISH); break;
	case 'i': KEY("index", D_INDEX); break;
	case 'l': KEY("logprobs", D_LOGPROBS); break;
	case 'r': KEY("role", D_ROLE); KEY("reasoning_content", D_REASONING); break;
	case 'u': KEY("usage", D_USAGE); break;
	default: break;
	}
#undef KEY
	return D_OTHER;
}

/* Reads a key made of printable ASCII (anything else goes the full way) into *key; returns the
 * position of the value after the ':'. */
static const char *
d_key(const char *p, const char *end, enum d_key *key)
{
	const char *q;

	p = d_ws(p, end);
	if (p >= end || *p != '"')
		return NULL;
	p++;
	*key = d_key_known(p, end, &q);
	if (*key == D_OTHER) {
		for (q = p; q < end && d_key_byte((unsigned char)*q); q++)
			;
		if (q >= end || *q != '"')
			return NULL;	/* an escape, a control or a non-ASCII byte in the key */
		q++;
	}
	p = d_ws(q, end);
	if (p >= end || *p != ':')
		return NULL;
	p = d_ws(p + 1, end);
	return p < end ? p : NULL;	/* callers read the value's first byte */
}

/* Skips a value the fast path ignores: json_scan_skip says yes only to what jansson (flags 0,
 * as the full path parses) accepts, so a number it cannot hold goes the full way. */
static const char *
d_skip(const char *p, const char *end)
{
	return json_scan_skip(p, end, 0);
}

/* A non-negative integer of at most 18 digits, without fraction or exponent, else d_skip. */
static const char *
d_index(const char *p, const char *end)
{
	const char *q = p;

	if (q < end && *q == '0')
		q++;
	else
		while (q < end && *q >= '0' && *q <= '9')
			q++;
	if (q == p || q - p > 18 || (q < end && (*q == '.' || *q == 'e' || *q == 'E' || (*q >= '0' && *q <= '9'))))
		return d_skip(p, end);
	return q;
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

/* What one parse found: the output buffers, and the one string that was decoded into them. */
struct d_out {
	struct buf *content, *reasoning;
	int strings;		/* strings decoded into content or reasoning */
	int into;		/* for the last of them: 1 content, 2 reasoning */
	const char *s0, *s1;	/* its opening and closing quote */
	unsigned seen;		/* keys met once already (duplicates go the full way) */
};

#define SEEN_DELTA 1u
#define SEEN_CONTENT 2u
#define SEEN_REASONING 4u

static const char *
d_delta(const char *p, const char *end, struct d_out *o)
{
	enum d_key key;
	int more = 1;

	if (p >= end || *p != '{')
		return NULL;
	p = d_ws(p + 1, end);
	if (p < end && *p == '}')
		return p + 1;
	while (more) {
		if ((p = d_key(p, end, &key)) == NULL)
			return NULL;
		struct buf *into = key == D_CONTENT ? o->content : key == D_REASONING ? o->reasoning : NULL;
		if (into) {
			/* jansson keeps the last of duplicate keys; this path would keep both */
			unsigned bit = key == D_CONTENT ? SEEN_CONTENT : SEEN_REASONING;
			if (o->seen & bit)
				return NULL;
			o->seen |= bit;
		}
		if (into || key == D_ROLE) {
			const char *n = d_null(p, end);
			if (n) {
				p = n;
			} else if (*p == '"') {
				const char *q = p;
				p = d_string(p, end, into);
				if (into && p) {
					o->strings++;
					o->into = into == o->content ? 1 : 2;
					o->s0 = q;
					o->s1 = p - 1;
				}
			} else {
				return NULL;
			}
		} else {
			return NULL;	/* tool_calls, function_call, anything new: the full path */
		}
		if (p == NULL || (p = d_next(p, end, '}', &more)) == NULL)
			return NULL;
	}
	return p;
}

void
sse_delta_init(struct sse_delta *d)
{
	buf_init(&d->prefix);
	buf_init(&d->suffix);
	d->into = 0;
}

void
sse_delta_free(struct sse_delta *d)
{
	buf_free(&d->prefix);
	buf_free(&d->suffix);
	d->into = 0;
}

/*
 * The template: the last accepted event with its one text string cut out. An event made of the
 * same prefix, a complete string body and the same suffix tokenises exactly as that event did,
 * with only the text changed, so it needs no parse beyond the string itself.
 */
static int
d_template(const struct sse_delta *d, const char *data, size_t len, struct buf *content, struct buf *reasoning)
{
	size_t np = d->prefix.len, nx = d->suffix.len;
	struct buf *out = d->into == 1 ? content : reasoning;
	size_t o0 = out->len;

	if (d->into == 0 || len < np + nx || memcmp(data, d->prefix.data, np) != 0 ||
	    memcmp(data + len - nx, d->suffix.data, nx) != 0)
		return 0;
	/* The prefix ends with the opening quote and the suffix starts with the closing one: the
	 * string must end exactly there (no unescaped quote inside, no escape cut short). */
	const char *close = data + len - nx;
	if (d_string(data + np - 1, close + 1, out) == close + 1)
		return 1;
	if (out->data) {
		out->len = o0;
		out->data[o0] = '\0';
	}
	return 0;
}

static void
d_learn(struct sse_delta *d, const struct d_out *o, const char *data, size_t len)
{
	d->into = 0;
	if (o->strings != 1)
		return;		/* no text, or both kinds: nothing to reuse */
	d->prefix.len = d->suffix.len = 0;
	buf_append(&d->prefix, data, (size_t)(o->s0 - data) + 1);
	buf_append(&d->suffix, o->s1, (size_t)(data + len - o->s1));
	d->into = o->into;
}

int
sse_delta_fast(struct sse_delta *d, const char *data, size_t len, struct buf *content, struct buf *reasoning)
{
	const char *p = data, *end = data + len;
	size_t c0 = content->len, r0 = reasoning->len;
	struct d_out o = { content, reasoning, 0, 0, NULL, NULL, 0 };
	enum d_key key;
	int more = 1, choices = 0;

	if (d_template(d, data, len, content, reasoning))
		return 1;

	p = d_ws(p, end);
	if (p >= end || *p != '{')
		goto no;
	p = d_ws(p + 1, end);
	while (more) {
		if ((p = d_key(p, end, &key)) == NULL)
			goto no;
		if (key == D_CHOICES) {
			if (*p != '[' || choices++)
				goto no;
			p = d_ws(p + 1, end);
			if (p >= end || *p != '{')
				goto no;	/* empty choices: the full path knows */
			p = d_ws(p + 1, end);
			int cmore = 1;
			while (cmore) {
				if ((p = d_key(p, end, &key)) == NULL)
					goto no;
				switch (key) {
				case D_DELTA:
					if (o.seen & SEEN_DELTA)
						goto no;	/* a second delta: jansson keeps only the last */
					o.seen |= SEEN_DELTA;
					p = d_delta(p, end, &o);
					break;
				case D_FINISH:
					p = d_null(p, end);
					break;
				case D_INDEX:
					p = d_index(p, end);
					break;
				case D_LOGPROBS:
					p = d_skip(p, end);
					break;
				default:
					goto no;
				}
				if (p == NULL || (p = d_next(p, end, '}', &cmore)) == NULL)
					goto no;
			}
			p = d_ws(p, end);
			if (p >= end || *p != ']')
				goto no;	/* more than one choice */
			p++;
		} else {
			/* usage must be null; an error object, or any value that does not scan, falls back */
			p = key == D_USAGE ? d_null(p, end) : key == D_ERROR ? NULL : d_skip(p, end);
			if (p == NULL)
				goto no;
		}
		if ((p = d_next(p, end, '}', &more)) == NULL)
			goto no;
	}
	if (d_ws(p, end) != end || !choices)
		goto no;
	d_learn(d, &o, data, len);
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
