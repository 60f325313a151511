/* Long strings kept out of jansson's tree (acp/spans.h). */
#include "acp/spans.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xmalloc.h"

#define SPAN_TAG "acp-span:"

void
acp_spans_free(struct acp_spans *sp)
{
	free(sp->v);
	memset(sp, 0, sizeof(*sp));
}

/* The closing quote of the string whose text starts at p, or NULL; *escaped: it holds a '\'. */
static const char *
spans_close(const char *p, const char *end, int *escaped)
{
	const char *q = p;

	*escaped = 0;
	for (;;) {
		const char *quote = memchr(q, '"', (size_t)(end - q));
		const char *back;
		if (quote == NULL)
			return NULL;
		back = memchr(q, '\\', (size_t)(quote - q));
		if (back == NULL)
			return quote;
		*escaped = 1;
		q = back + 2;	/* the escaped character is never the closing quote */
		if (q > end)
			return NULL;
	}
}

/* Whether the string that closed just before p is an object's key (a ':' follows). */
static int
spans_key(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p < end && *p == ':';
}

/* Whether s[0..n) holds no control byte (JSON forbids them raw: jansson must see and report it). */
static int
spans_plain(const char *s, size_t n)
{
	unsigned char low = 0xff;

	for (size_t i = 0; i < n; i++)
		low = (unsigned char)s[i] < low ? (unsigned char)s[i] : low;
	return low >= 0x20;
}

char *
acp_spans_cut(const char *line, size_t len, struct acp_spans *sp, size_t *out_len)
{
	const char *p = line, *end = line + len, *copied = line;
	struct buf out;

	memset(sp, 0, sizeof(*sp));
	/* A client's own "\u0000" could spell a placeholder: such a line is parsed as it is. */
	if (len < ACP_SPANS_LINE_MIN || memmem(line, len, "\\u0000", 6) != NULL)
		return NULL;
	buf_init(&out);
	while (p < end) {
		const char *open = memchr(p, '"', (size_t)(end - p)), *close;
		int escaped;
		if (open == NULL)
			break;
		close = spans_close(open + 1, end, &escaped);
		if (close == NULL)
			break;
		if (!escaped && (size_t)(close - open - 1) >= ACP_SPANS_MIN && !spans_key(close + 1, end) &&
		    spans_plain(open + 1, (size_t)(close - open - 1))) {
			if (sp->n == sp->cap) {
				sp->cap = sp->cap ? 2 * sp->cap : 4;
				sp->v = xrealloc(sp->v, sp->cap * sizeof(*sp->v));
			}
			sp->v[sp->n].s = open + 1;
			sp->v[sp->n].n = (size_t)(close - open - 1);
			buf_append(&out, copied, (size_t)(open - copied));
			buf_printf(&out, "\"\\u0000" SPAN_TAG "%zu\"", sp->n);
			sp->n++;
			copied = close + 1;
		}
		p = close + 1;
	}
	if (sp->n == 0) {
		buf_free(&out);
		return NULL;
	}
	buf_append(&out, copied, (size_t)(end - copied));
	*out_len = out.len;
	return buf_steal(&out);
}

/* The span s stands for, or NULL. */
static const struct acp_span *
spans_of(const struct acp_spans *sp, const json_t *s)
{
	const char *v = json_string_value(s);
	size_t n = json_string_length(s), tag = sizeof(SPAN_TAG) - 1, k = 0, i;

	if (sp == NULL || sp->n == 0 || v == NULL || n < 2 + tag || n > 1 + tag + 20 || v[0] != '\0' ||
	    memcmp(v + 1, SPAN_TAG, tag) != 0)
		return NULL;
	for (i = 1 + tag; i < n; i++) {
		if (v[i] < '0' || v[i] > '9' || k > sp->n)
			return NULL;
		k = k * 10 + (size_t)(v[i] - '0');
	}
	return k < sp->n ? &sp->v[k] : NULL;
}

void
acp_spans_text(const struct acp_spans *sp, const json_t *s, const char **text, size_t *len)
{
	const struct acp_span *span = spans_of(sp, s);

	if (span) {
		*text = span->s;
		*len = span->n;
	} else {
		*text = json_string_value(s);
		*len = json_string_length(s);
	}
}

/* The string a span stands for (its bytes were checked when it was cut). */
static json_t *
spans_string(const struct acp_span *span)
{
	return json_stringn(span->s, span->n);
}

/* The image data strings a session/prompt keeps as spans (at most ACP_SPANS_KEEP: the rest are filled). */
#define ACP_SPANS_KEEP 64
struct spans_keep {
	const json_t *v[ACP_SPANS_KEEP];
	size_t n;
};

static int
spans_kept(const struct spans_keep *keep, const json_t *x)
{
	for (size_t i = 0; i < keep->n; i++)
		if (keep->v[i] == x)
			return 1;
	return 0;
}

/* v's string x (at key, or at index i of an array) is put back when it stands for a span. */
static int
spans_fill_value(json_t *v, const struct acp_spans *sp, const struct spans_keep *keep)
{
	const struct acp_span *span;
	const char *key;
	json_t *x, *s;
	void *tmp;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach_safe(v, tmp, key, x) {
			if (json_is_string(x) && !spans_kept(keep, x) && (span = spans_of(sp, x)) != NULL) {
				if ((s = spans_string(span)) == NULL)
					return -1;
				json_object_set_new(v, key, s);
			} else if (spans_fill_value(x, sp, keep) < 0) {
				return -1;
			}
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x) {
			if (json_is_string(x) && !spans_kept(keep, x) && (span = spans_of(sp, x)) != NULL) {
				if ((s = spans_string(span)) == NULL)
					return -1;
				json_array_set_new(v, i, s);
			} else if (spans_fill_value(x, sp, keep) < 0) {
				return -1;
			}
		}
	}
	return 0;
}

int
acp_spans_fill(json_t *root, const struct acp_spans *sp)
{
	const json_t *method = json_object_get(root, "method");
	json_t *prompt = json_object_get(json_object_get(root, "params"), "prompt"), *blk;
	struct spans_keep keep = { .n = 0 };
	size_t i;

	if (json_is_string(method) && strcmp(json_string_value(method), "session/prompt") == 0)
		json_array_foreach(prompt, i, blk) {
			const json_t *type = json_object_get(blk, "type"), *data = json_object_get(blk, "data");
			if (json_is_string(type) && strcmp(json_string_value(type), "image") == 0 &&
			    json_is_string(data) && keep.n < ACP_SPANS_KEEP)
				keep.v[keep.n++] = data;
		}
	return spans_fill_value(root, sp, &keep);
}

json_t *
acp_spans_peek(const char *line, size_t len)
{
	struct acp_spans sp;
	size_t cut_len = 0;
	char *cut = acp_spans_cut(line, len, &sp, &cut_len);
	json_t *j = json_loadb(cut ? cut : line, cut ? cut_len : len, JSON_ALLOW_NUL, NULL);

	free(cut);
	acp_spans_free(&sp);
	return j;
}
