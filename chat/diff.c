/* A line diff for the chat: base/linediff's marks as a unified diff. */
#include "chat/diff.h"

#include <stdlib.h>
#include <string.h>

#include "base/linediff.h"
#include "base/xmalloc.h"

/* The search's bounds: past them the changed middle is shown as removals then additions (a
 * whole-file rewrite gains nothing from a script). */
#define CHAT_DIFF_MAX_EDITS 1000u
#define CHAT_DIFF_WORK_MAX 50000000u

/* One step of the edit script: '=', '-' or '+', and the line's index in its own text. */
struct chat_op {
	char kind;
	size_t line;
};

/* Appends the hunk of ops[from..to) (indices of the script) with its header. */
static void
chat_diff_hunk(const struct linediff_lines *a, const struct linediff_lines *b, const struct chat_op *ops,
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
		const struct linediff_lines *l = ops[k].kind == '+' ? b : a;
		char mark = ops[k].kind == '=' ? ' ' : ops[k].kind;
		buf_append(out, &mark, 1);
		buf_append(out, l->s + l->off[ops[k].line], linediff_len(l, ops[k].line));
		buf_puts(out, "\n");
	}
}

void
chat_diff(const char *old_text, const char *new_text, struct buf *out)
{
	struct linediff_lines a, b;
	size_t nops = 0, i = 0, j = 0;
	unsigned char *del, *ins;

	/* lines compare without their newline: a last line that gained or lost one is not news */
	linediff_split(&a, old_text ? old_text : "", old_text ? strlen(old_text) : 0, 1);
	linediff_split(&b, new_text ? new_text : "", new_text ? strlen(new_text) : 0, 1);
	del = xcalloc(a.n + 1, 1);
	ins = xcalloc(b.n + 1, 1);
	linediff(&a, &b, CHAT_DIFF_MAX_EDITS, CHAT_DIFF_WORK_MAX, del, ins);
	struct chat_op *ops = xmalloc((a.n + b.n + 1) * sizeof(*ops));
	/* Within a change, removals come before additions. */
	while (i < a.n || j < b.n) {
		if (i < a.n && del[i])
			ops[nops++] = (struct chat_op){ '-', i++ };
		else if (j < b.n && ins[j])
			ops[nops++] = (struct chat_op){ '+', j++ };
		else {
			ops[nops++] = (struct chat_op){ '=', i };
			i++;
			j++;
		}
	}

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
	free(del);
	free(ins);
	linediff_lines_free(&a);
	linediff_lines_free(&b);
}
