/*
 * Long strings kept out of jansson's tree (docs/contract.md §27, images): a line over
 * ACP_SPANS_LINE_MIN has every string of at least ACP_SPANS_MIN bytes without an escape cut out
 * before it is parsed, replaced by a short placeholder ("\u0000acp-span:<k>"), and put back as a
 * string after, except an image block's data in a session/prompt: that stays a span of the line,
 * which acp/prompt.c decodes straight into the blob store. jansson would hold such a string three
 * times while parsing it (the line, its token buffer, the string); this way a 20 MiB image costs
 * the line and its decoded bytes.
 */
#ifndef ACP_SPANS_H
#define ACP_SPANS_H

#include <stddef.h>

#include <jansson.h>

#define ACP_SPANS_LINE_MIN ((size_t)1 << 20)
#define ACP_SPANS_MIN ((size_t)64 << 10)

struct acp_span {
	const char *s;		/* borrowed from the line: valid while it is dispatched */
	size_t n;
};

struct acp_spans {
	struct acp_span *v;	/* owned */
	size_t n, cap;
};

void acp_spans_free(struct acp_spans *sp);
/*
 * The line with its long strings cut out: an owned copy (*out_len bytes) and the strings in sp,
 * or NULL when there is nothing to cut (a short line, or none that long). The line must be valid
 * UTF-8. Not cut, so that the parser sees and reports them as it would: an object's key, a string
 * with a raw control byte, and every string of a line that holds "\u0000" (a client could spell a
 * placeholder). A string that does not close leaves the rest as it is.
 */
char *acp_spans_cut(const char *line, size_t len, struct acp_spans *sp, size_t *out_len);
/* Puts the strings back into root (new strings), but for an image block's data of a
 * session/prompt. 0, or -1 when a string cannot be made. */
int acp_spans_fill(json_t *root, const struct acp_spans *sp);
/* The line's tree with its long strings left as placeholders, or NULL when it does not parse:
 * for reading its envelope (method, id) without a copy of a large value (new ref). */
json_t *acp_spans_peek(const char *line, size_t len);
/* The text of s: the span it stands for, or its own bytes. */
void acp_spans_text(const struct acp_spans *sp, const json_t *s, const char **text, size_t *len);

#endif
