/* A line diff for the chat: common ends trimmed, the middle by longest common subsequence. */
#include "chat/diff.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"

/* Past this many cells (old lines x new lines of the middle) the middle is shown as one block of
 * removals then additions: a whole-file rewrite gains nothing from the table. */
#define CHAT_DIFF_CELLS ((size_t)4 * 1024 * 1024)

/* The lines of a text (borrowed pointers into it; a last line without '\n' counts). */
struct chat_lines {
	const char **at;
	size_t *len;
	size_t n;
};

static void
chat_diff_split(const char *text, struct chat_lines *l)
{
	size_t cap = 16;
	const char *p = text;

	l->n = 0;
	l->at = xmalloc(cap * sizeof(*l->at));
	l->len = xmalloc(cap * sizeof(*l->len));
	while (p != NULL && *p != '\0') {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (l->n == cap) {
			cap *= 2;
			l->at = xrealloc(l->at, cap * sizeof(*l->at));
			l->len = xrealloc(l->len, cap * sizeof(*l->len));
		}
		l->at[l->n] = p;
		l->len[l->n++] = len;
		p = nl ? nl + 1 : p + len;
	}
}

static int
chat_diff_same(const struct chat_lines *a, size_t i, const struct chat_lines *b, size_t j)
{
	return a->len[i] == b->len[j] && memcmp(a->at[i], b->at[j], a->len[i]) == 0;
}

/* One step of the edit script: '=', '-' or '+', and the line's index in its own text. */
struct chat_op {
	char kind;
	size_t line;
};

/* The edit script of a[lo_a..hi_a) against b[lo_b..hi_b), appended to ops. */
static void
chat_diff_middle(const struct chat_lines *a, size_t lo_a, size_t hi_a, const struct chat_lines *b,
    size_t lo_b, size_t hi_b, struct chat_op *ops, size_t *nops)
{
	size_t n = hi_a - lo_a, m = hi_b - lo_b;

	if (n == 0 || m == 0 || n > CHAT_DIFF_CELLS / m) {
		for (size_t i = lo_a; i < hi_a; i++)
			ops[(*nops)++] = (struct chat_op){ '-', i };
		for (size_t j = lo_b; j < hi_b; j++)
			ops[(*nops)++] = (struct chat_op){ '+', j };
		return;
	}
	/* lcs[i][j]: the longest common subsequence of a's middle from i and b's from j. */
	uint32_t *lcs = xcalloc((n + 1) * (m + 1), sizeof(*lcs));
#define CELL(i, j) lcs[(i) * (m + 1) + (j)]
	for (size_t i = n; i-- > 0;)
		for (size_t j = m; j-- > 0;)
			CELL(i, j) = chat_diff_same(a, lo_a + i, b, lo_b + j) ? CELL(i + 1, j + 1) + 1 :
			    CELL(i + 1, j) >= CELL(i, j + 1) ? CELL(i + 1, j) : CELL(i, j + 1);
	size_t i = 0, j = 0;
	while (i < n && j < m) {
		if (chat_diff_same(a, lo_a + i, b, lo_b + j)) {
			ops[(*nops)++] = (struct chat_op){ '=', lo_a + i };
			i++;
			j++;
		} else if (CELL(i + 1, j) >= CELL(i, j + 1)) {
			ops[(*nops)++] = (struct chat_op){ '-', lo_a + i++ };
		} else {
			ops[(*nops)++] = (struct chat_op){ '+', lo_b + j++ };
		}
	}
#undef CELL
	while (i < n)
		ops[(*nops)++] = (struct chat_op){ '-', lo_a + i++ };
	while (j < m)
		ops[(*nops)++] = (struct chat_op){ '+', lo_b + j++ };
	free(lcs);
}

/* Appends the hunk of ops[from..to) (indices of the script) with its header. */
static void
chat_diff_hunk(const struct chat_lines *a, const struct chat_lines *b, const struct chat_op *ops,
    size_t from, size_t to, struct buf *out)
{
	size_t a_start = 0, b_start = 0, a_n = 0, b_n = 0;
	int a_set = 0, b_set = 0;

	/* Where the hunk starts in each text: the first line of that text it touches, else the
	 * position after the lines before it (the unified format's "-0,0" for an empty side). */
	for (size_t k = 0; k < from; k++) {
		if (ops[k].kind != '+')
			a_start++;
		if (ops[k].kind != '-')
			b_start++;
	}
	for (size_t k = from; k < to; k++) {
		if (ops[k].kind != '+')
			a_n++, a_set = 1;
		if (ops[k].kind != '-')
			b_n++, b_set = 1;
	}
	buf_printf(out, "@@ -%zu,%zu +%zu,%zu @@\n", a_start + (a_set ? 1 : 0), a_n,
	    b_start + (b_set ? 1 : 0), b_n);
	for (size_t k = from; k < to; k++) {
		const struct chat_lines *l = ops[k].kind == '+' ? b : a;
		char mark = ops[k].kind == '=' ? ' ' : ops[k].kind;
		buf_append(out, &mark, 1);
		buf_append(out, l->at[ops[k].line], l->len[ops[k].line]);
		buf_puts(out, "\n");
	}
}

void
chat_diff(const char *old_text, const char *new_text, struct buf *out)
{
	struct chat_lines a, b;
	size_t pre = 0, suf = 0, nops = 0;

	chat_diff_split(old_text, &a);
	chat_diff_split(new_text, &b);
	while (pre < a.n && pre < b.n && chat_diff_same(&a, pre, &b, pre))
		pre++;
	while (suf < a.n - pre && suf < b.n - pre && chat_diff_same(&a, a.n - 1 - suf, &b, b.n - 1 - suf))
		suf++;
	struct chat_op *ops = xmalloc((a.n + b.n + 1) * sizeof(*ops));
	for (size_t i = 0; i < pre; i++)
		ops[nops++] = (struct chat_op){ '=', i };
	chat_diff_middle(&a, pre, a.n - suf, &b, pre, b.n - suf, ops, &nops);
	for (size_t i = a.n - suf; i < a.n; i++)
		ops[nops++] = (struct chat_op){ '=', i };

	/* Hunks: each change with CHAT_DIFF_CONTEXT lines of context; changes closer than twice
	 * that share a hunk. */
	size_t k = 0;
	while (k < nops) {
		while (k < nops && ops[k].kind == '=')
			k++;
		if (k == nops)
			break;
		size_t from = k > CHAT_DIFF_CONTEXT ? k - CHAT_DIFF_CONTEXT : 0, end = k;
		for (;;) {
			while (end < nops && ops[end].kind != '=')
				end++;
			size_t eq = end;
			while (eq < nops && ops[eq].kind == '=')
				eq++;
			if (eq < nops && eq - end <= 2 * CHAT_DIFF_CONTEXT) {
				end = eq;
				continue;
			}
			break;
		}
		size_t to = end + CHAT_DIFF_CONTEXT < nops ? end + CHAT_DIFF_CONTEXT : nops;
		chat_diff_hunk(&a, &b, ops, from, to, out);
		k = to;
	}
	free(ops);
	free(a.at);
	free(a.len);
	free(b.at);
	free(b.len);
}
