/* Line diff for presentation: the marks of base/linediff, hunks with context. */
#include "workspace/diff.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/linediff.h"
#include "base/utf8.h"
#include "base/xmalloc.h"

#define WS_DIFF_WORK_MAX 50000000u	/* diagonal steps and line compares before giving up */

/* One change: old lines [os, oe) become new lines [ns, ne) (0-based). */
struct dblock {
	size_t os, oe, ns, ne;
};

/* The changes, merged where fewer than 2 * context + 1 common lines part them. */
static size_t
diff_blocks(const unsigned char *del, size_t na, const unsigned char *ins, size_t nb,
    struct dblock **out)
{
	size_t i = 0, j = 0, n = 0, cap = 8;
	struct dblock *bl = xmalloc(cap * sizeof(*bl));

	while (i < na || j < nb) {
		size_t i0 = i, j0 = j;

		if (!(i < na && del[i]) && !(j < nb && ins[j])) {
			i++;
			j++;
			continue;
		}
		while ((i < na && del[i]) || (j < nb && ins[j])) {
			if (i < na && del[i])
				i++;
			else
				j++;
		}
		if (n > 0 && i0 - bl[n - 1].oe <= (size_t)2 * WS_DIFF_CONTEXT) {
			bl[n - 1].oe = i;
			bl[n - 1].ne = j;
			continue;
		}
		if (n == cap)
			bl = xrealloc(bl, (cap *= 2) * sizeof(*bl));
		bl[n++] = (struct dblock){ i0, i, j0, j };
	}
	*out = bl;
	return n;
}

static void
diff_gap(struct buf *b, size_t n)
{
	if (n > 0)
		buf_printf(b, "\xe2\x80\xa6 %zu unchanged line%s \xe2\x80\xa6\n", n, n == 1 ? "" : "s");
}

static void
diff_lines(struct buf *b, const struct linediff_lines *l, size_t from, size_t count)
{
	buf_append(b, l->s + l->off[from], l->off[from + count] - l->off[from]);
}

static char *
diff_text(const char *s, size_t n)
{
	return utf8_valid(s, n) ? xstrndup(s, n) : utf8_repair(s, n, NULL);
}

void
ws_diff_make(struct ws_diff *d, const char *old, size_t old_len, const char *new_text,
    size_t new_len)
{
	struct linediff_lines a, b;
	size_t nblocks, oend = 0;
	unsigned char *del, *ins;
	struct dblock *bl;
	struct buf ob, nb;

	memset(d, 0, sizeof(*d));
	linediff_split(&a, old ? old : "", old ? old_len : 0, 0);
	linediff_split(&b, new_text, new_len, 0);
	del = xcalloc(a.n + 1, 1);
	ins = xcalloc(b.n + 1, 1);
	linediff(&a, &b, WS_DIFF_MAX_EDITS, WS_DIFF_WORK_MAX, del, ins);
	nblocks = diff_blocks(del, a.n, ins, b.n, &bl);
	d->hunks = xcalloc(nblocks ? nblocks : 1, sizeof(*d->hunks));
	d->nhunks = nblocks;
	for (size_t i = 0; i < nblocks; i++) {
		size_t before = bl[i].os < WS_DIFF_CONTEXT ? bl[i].os : WS_DIFF_CONTEXT;
		size_t left = a.n - bl[i].oe, after = left < WS_DIFF_CONTEXT ? left : WS_DIFF_CONTEXT;
		struct ws_hunk *h = &d->hunks[i];

		h->old_line = bl[i].os - before + 1;
		h->old_count = bl[i].oe - bl[i].os + before + after;
		h->new_line = bl[i].ns - before + 1;
		h->new_count = bl[i].ne - bl[i].ns + before + after;
	}
	d->partial = old != NULL && (old_len > WS_DIFF_WHOLE_MAX || new_len > WS_DIFF_WHOLE_MAX);
	if (!d->partial) {
		d->old_text = old ? diff_text(old, old_len) : NULL;
		d->new_text = diff_text(new_text, new_len);
	} else {
		buf_init(&ob);
		buf_init(&nb);
		for (size_t i = 0; i < d->nhunks; i++) {
			const struct ws_hunk *h = &d->hunks[i];

			diff_gap(&ob, h->old_line - 1 - oend);
			diff_gap(&nb, h->old_line - 1 - oend);
			diff_lines(&ob, &a, h->old_line - 1, h->old_count);
			diff_lines(&nb, &b, h->new_line - 1, h->new_count);
			oend = h->old_line - 1 + h->old_count;
		}
		diff_gap(&ob, a.n - oend);
		diff_gap(&nb, a.n - oend);
		d->old_text = diff_text(ob.data ? ob.data : "", ob.len);
		d->new_text = diff_text(nb.data ? nb.data : "", nb.len);
		buf_free(&ob);
		buf_free(&nb);
	}
	free(bl);
	free(del);
	free(ins);
	linediff_lines_free(&a);
	linediff_lines_free(&b);
}

void
ws_diff_free(struct ws_diff *d)
{
	free(d->old_text);
	free(d->new_text);
	free(d->hunks);
	memset(d, 0, sizeof(*d));
}
