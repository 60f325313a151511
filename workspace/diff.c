/* Line diff for presentation: common head and tail, Myers in between, hunks with context. */
#include "workspace/diff.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/utf8.h"
#include "base/xmalloc.h"
#include "workspace/hash.h"

#define WS_DIFF_WORK_MAX 50000000u	/* diagonal steps and line compares before giving up */

/* A text cut into lines: line i is s[off[i]..off[i+1]), hashed. */
struct dlines {
	const char *s;
	size_t n;
	size_t *off;			/* n + 1 entries */
	uint64_t *h;
};

static void
dlines_split(struct dlines *l, const char *s, size_t len)
{
	size_t n = 0, i = 0;
	const char *q = s, *end = s + len, *nl;

	while (q < end && (nl = memchr(q, '\n', (size_t)(end - q))) != NULL) {
		n++;
		q = nl + 1;
	}
	n += q < end;
	l->s = s;
	l->n = n;
	l->off = xmalloc((n + 1) * sizeof(*l->off));
	l->h = xmalloc((n ? n : 1) * sizeof(*l->h));
	l->off[0] = 0;
	for (q = s; i < n; i++) {
		nl = memchr(q, '\n', (size_t)(end - q));
		q = nl ? nl + 1 : end;
		l->off[i + 1] = (size_t)(q - s);
		l->h[i] = ws_hash64(s + l->off[i], l->off[i + 1] - l->off[i]);
	}
}

static void
dlines_free(struct dlines *l)
{
	free(l->off);
	free(l->h);
}

static int
dlines_eq(const struct dlines *a, size_t i, const struct dlines *b, size_t j)
{
	size_t la = a->off[i + 1] - a->off[i];

	return a->h[i] == b->h[j] && la == b->off[j + 1] - b->off[j] &&
	    memcmp(a->s + a->off[i], b->s + b->off[j], la) == 0;
}

/*
 * Myers' greedy search over old lines [ao, ao+N) and new lines [bo, bo+M), then the walk back
 * through the saved rounds: marks del[ao+x] and ins[bo+y] for the lines the script removes and
 * adds. -1 (nothing marked) beyond WS_DIFF_MAX_EDITS or the work budget.
 */
static int
diff_myers(const struct dlines *a, size_t ao, size_t N, const struct dlines *b, size_t bo,
    size_t M, unsigned char *del, unsigned char *ins)
{
	size_t max = N + M < WS_DIFF_MAX_EDITS ? N + M : WS_DIFF_MAX_EDITS, work = 0, cap = 64;
	ptrdiff_t mid = (ptrdiff_t)max + 1, dd = -1, x, y;
	int32_t *v = xcalloc(2 * max + 3, sizeof(*v)), *trace = xmalloc(cap * sizeof(*trace));

	v[mid + 1] = 0;
	for (ptrdiff_t d = 0; d <= (ptrdiff_t)max && dd < 0; d++) {
		size_t need = (size_t)(d + 1) * (size_t)(d + 1);

		for (ptrdiff_t k = -d; k <= d; k += 2) {
			if (k == -d || (k != d && v[mid + k - 1] < v[mid + k + 1]))
				x = v[mid + k + 1];
			else
				x = v[mid + k - 1] + 1;
			y = x - k;
			while (x < (ptrdiff_t)N && y < (ptrdiff_t)M && dlines_eq(a, ao + (size_t)x, b, bo + (size_t)y)) {
				x++;
				y++;
				work++;
			}
			v[mid + k] = (int32_t)x;
			work++;
			if (x >= (ptrdiff_t)N && y >= (ptrdiff_t)M)
				dd = d;
		}
		/* Round d's V[-d..d] lives at trace[d*d]. */
		if (cap < need) {
			while (cap < need)
				cap *= 2;
			trace = xrealloc(trace, cap * sizeof(*trace));
		}
		memcpy(trace + (size_t)(d * d), v + mid - d, (size_t)(2 * d + 1) * sizeof(*v));
		if (work > WS_DIFF_WORK_MAX)
			break;
	}
	free(v);
	if (dd < 0) {
		free(trace);
		return -1;
	}
	x = (ptrdiff_t)N;
	y = (ptrdiff_t)M;
	for (ptrdiff_t d = dd; d > 0; d--) {
		const int32_t *pv = trace + (size_t)((d - 1) * (d - 1)) + (d - 1);	/* pv[k]: V_{d-1}[k] */
		ptrdiff_t k = x - y, pk, px;

		if (k == -d || (k != d && pv[k - 1] < pv[k + 1]))
			pk = k + 1;
		else
			pk = k - 1;
		px = pv[pk];
		if (pk == k + 1)
			ins[bo + (size_t)(px - pk)] = 1;	/* down: a new line */
		else
			del[ao + (size_t)px] = 1;		/* right: an old line goes */
		x = px;
		y = px - pk;
	}
	free(trace);
	return 0;
}

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
diff_lines(struct buf *b, const struct dlines *l, size_t from, size_t count)
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
	struct dlines a, b;
	size_t head = 0, tail = 0, nblocks, oend = 0;
	unsigned char *del, *ins;
	struct dblock *bl;
	struct buf ob, nb;

	memset(d, 0, sizeof(*d));
	dlines_split(&a, old ? old : "", old ? old_len : 0);
	dlines_split(&b, new_text, new_len);
	while (head < a.n && head < b.n && dlines_eq(&a, head, &b, head))
		head++;
	while (tail < a.n - head && tail < b.n - head &&
	    dlines_eq(&a, a.n - 1 - tail, &b, b.n - 1 - tail))
		tail++;
	del = xcalloc(a.n + 1, 1);
	ins = xcalloc(b.n + 1, 1);
	if (diff_myers(&a, head, a.n - head - tail, &b, head, b.n - head - tail, del, ins) != 0) {
		memset(del + head, 1, a.n - head - tail);
		memset(ins + head, 1, b.n - head - tail);
	}
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
	dlines_free(&a);
	dlines_free(&b);
}

void
ws_diff_free(struct ws_diff *d)
{
	free(d->old_text);
	free(d->new_text);
	free(d->hunks);
	memset(d, 0, sizeof(*d));
}
