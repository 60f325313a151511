/* The sorted list of root sessions. */
#include "session/order.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/xmalloc.h"

void
sess_order_init(struct sess_order *o)
{
	memset(o, 0, sizeof(*o));
}

void
sess_order_free(struct sess_order *o)
{
	for (size_t i = 0; i < o->n; i++)
		o->v[i]->listed = 0;
	free(o->v);
	sess_order_init(o);
}

int
sess_order_wants(const struct sess_entry *en)
{
	return !en->gone && en->state == SESS_ENTRY_OK && en->parent == NULL && en->cwd != NULL;
}

static int
sess_order_key_cmp(int64_t ta, const char *ida, int64_t tb, const char *idb)
{
	if (ta != tb)
		return ta < tb ? -1 : 1;
	return strcmp(ida, idb);
}

size_t
sess_order_lower(const struct sess_order *o, int64_t t, const char *id)
{
	size_t lo = 0, hi = o->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sess_order_key_cmp(o->v[mid]->listed_at, o->v[mid]->id, t, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void
sess_order_insert(struct sess_order *o, struct sess_entry *en)
{
	size_t at;

	en->listed_at = en->updated_at;
	at = sess_order_lower(o, en->listed_at, en->id);
	if (o->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 64;
		o->v = xrealloc(o->v, o->cap * sizeof(*o->v));
	}
	memmove(o->v + at + 1, o->v + at, (o->n - at) * sizeof(*o->v));
	o->v[at] = en;
	o->n++;
	en->listed = 1;
}

void
sess_order_remove(struct sess_order *o, struct sess_entry *en)
{
	size_t at = sess_order_lower(o, en->listed_at, en->id);

	if (at >= o->n || o->v[at] != en) {
		log_warn("corpus: %s is not where the root list filed it", en->id);	/* a bug: never seen */
		return;
	}
	memmove(o->v + at, o->v + at + 1, (o->n - at - 1) * sizeof(*o->v));
	o->n--;
	en->listed = 0;
}

static int
sess_order_cmp(const void *pa, const void *pb)
{
	const struct sess_entry *a = *(struct sess_entry *const *)pa, *b = *(struct sess_entry *const *)pb;

	return sess_order_key_cmp(a->listed_at, a->id, b->listed_at, b->id);
}

void
sess_order_build(struct sess_order *o, struct sess_entry **v, size_t n)
{
	o->cap = n ? n : 64;
	o->v = xrealloc(o->v, o->cap * sizeof(*o->v));
	memcpy(o->v, v, n * sizeof(*v));
	o->n = n;
	for (size_t i = 0; i < n; i++) {
		v[i]->listed_at = v[i]->updated_at;
		v[i]->listed = 1;
	}
	qsort(o->v, n, sizeof(*o->v), sess_order_cmp);
}
