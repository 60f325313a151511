/* The line diff (base/linediff.h). */
#include "base/linediff.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash64.h"
#include "base/xmalloc.h"

void
linediff_split(struct linediff_lines *l, const char *s, size_t len, int noeol)
{
	size_t n = 0, i = 0;
	const char *q = s, *end = s + len, *nl;

	while (q < end && (nl = memchr(q, '\n', (size_t)(end - q))) != NULL) {
		n++;
		q = nl + 1;
	}
	if (q < end)
		n++;
	l->s = s;
	l->n = n;
	l->noeol = noeol;
	l->off = xmalloc((n + 1) * sizeof(*l->off));
	l->h = xmalloc((n ? n : 1) * sizeof(*l->h));
	l->off[0] = 0;
	for (q = s; i < n; i++) {
		nl = memchr(q, '\n', (size_t)(end - q));
		q = nl ? nl + 1 : end;
		l->off[i + 1] = (size_t)(q - s);
		l->h[i] = hash64(s + l->off[i], noeol ? linediff_len(l, i) : l->off[i + 1] - l->off[i]);
	}
}

void
linediff_lines_free(struct linediff_lines *l)
{
	free(l->off);
	free(l->h);
	l->off = NULL;
	l->h = NULL;
}

size_t
linediff_len(const struct linediff_lines *l, size_t i)
{
	size_t n = l->off[i + 1] - l->off[i];

	return n && l->s[l->off[i + 1] - 1] == '\n' ? n - 1 : n;
}

int
linediff_same(const struct linediff_lines *a, size_t i, const struct linediff_lines *b, size_t j)
{
	size_t la = a->noeol ? linediff_len(a, i) : a->off[i + 1] - a->off[i];
	size_t lb = b->noeol ? linediff_len(b, j) : b->off[j + 1] - b->off[j];

	return a->h[i] == b->h[j] && la == lb && memcmp(a->s + a->off[i], b->s + b->off[j], la) == 0;
}

/*
 * Myers' greedy search over old lines [ao, ao+N) and new lines [bo, bo+M), then the walk back
 * through the saved rounds: marks del[ao+x] and ins[bo+y]. -1 (nothing marked) beyond max_edits
 * or the work budget.
 */
static int
linediff_myers(const struct linediff_lines *a, size_t ao, size_t N, const struct linediff_lines *b, size_t bo,
    size_t M, size_t max_edits, size_t work_max, unsigned char *del, unsigned char *ins)
{
	size_t max = N + M < max_edits ? N + M : max_edits, work = 0, cap = 64;
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
			while (x < (ptrdiff_t)N && y < (ptrdiff_t)M && linediff_same(a, ao + (size_t)x, b, bo + (size_t)y)) {
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
		if (work > work_max)
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

void
linediff(const struct linediff_lines *a, const struct linediff_lines *b, size_t max_edits, size_t work_max,
    unsigned char *del, unsigned char *ins)
{
	size_t head = 0, tail = 0;

	while (head < a->n && head < b->n && linediff_same(a, head, b, head))
		head++;
	while (tail < a->n - head && tail < b->n - head && linediff_same(a, a->n - 1 - tail, b, b->n - 1 - tail))
		tail++;
	if (linediff_myers(a, head, a->n - head - tail, b, head, b->n - head - tail, max_edits, work_max, del,
	    ins) != 0) {
		memset(del + head, 1, a->n - head - tail);
		memset(ins + head, 1, b->n - head - tail);
	}
}
