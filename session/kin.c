/* The children index (session/kin.h). */
#include "session/kin.h"

#include <stdlib.h>

#include "base/xmalloc.h"

void
sess_kin_init(struct sess_kin_index *x)
{
	map_init(&x->by_parent);
}

void
sess_kin_reset(struct sess_kin_index *x)
{
	size_t pos = 0;
	void *v;

	while (map_next(&x->by_parent, &pos, NULL, &v)) {
		struct sess_kin *k = v;
		free(k->v);
		free(k->sorted);
		free(k);
	}
	map_free(&x->by_parent);
	map_init(&x->by_parent);
}

void
sess_kin_free(struct sess_kin_index *x)
{
	sess_kin_reset(x);
	map_free(&x->by_parent);
}

/* Takes en out of its group: a swap with the last (v has no order). */
static void
sess_kin_leave(struct sess_entry *en)
{
	struct sess_kin *k = en->kin.group;

	for (size_t i = 0; i < k->n; i++)
		if (k->v[i] == en) {
			k->v[i] = k->v[--k->n];
			break;
		}
	k->unavailable -= en->kin.unavailable;
	k->sorted_ok = 0;
	en->kin.group = NULL;
}

static void
sess_kin_join(struct sess_kin *k, struct sess_entry *en)
{
	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 4;
		k->v = xrealloc(k->v, k->cap * sizeof(*k->v));
	}
	k->v[k->n++] = en;
	en->kin.group = k;
	en->kin.created_at = en->created_at;
	en->kin.unavailable = en->state == SESS_ENTRY_UNAVAILABLE;
	k->unavailable += en->kin.unavailable;
	/* the newest child comes last: the order stays true */
	if (k->sorted_ok && k->n > 1 && sess_entry_order(&k->sorted[k->n - 2], &en) > 0)
		k->sorted_ok = 0;
	if (k->sorted_ok) {
		if (k->n > k->sorted_cap) {
			k->sorted_cap = k->cap;
			k->sorted = xrealloc(k->sorted, k->sorted_cap * sizeof(*k->sorted));
		}
		k->sorted[k->n - 1] = en;
	}
}

void
sess_kin_file(struct sess_kin_index *x, struct sess_entry *en)
{
	struct sess_kin *want = NULL;

	if (en->parent && !en->gone) {
		want = map_get(&x->by_parent, en->parent);
		if (want == NULL) {
			want = xcalloc(1, sizeof(*want));
			want->sorted_ok = 1;	/* empty */
			map_put(&x->by_parent, en->parent, want);
		}
	}
	if (en->kin.group == want && want) {
		int unavailable = en->state == SESS_ENTRY_UNAVAILABLE;
		want->unavailable += (size_t)unavailable - (size_t)en->kin.unavailable;
		en->kin.unavailable = unavailable;
		if (en->kin.created_at != en->created_at)
			want->sorted_ok = 0;
		en->kin.created_at = en->created_at;
		return;
	}
	if (en->kin.group)
		sess_kin_leave(en);
	if (want)
		sess_kin_join(want, en);
}

struct sess_kin *
sess_kin_get(const struct sess_kin_index *x, const char *parent)
{
	return map_get(&x->by_parent, parent);
}
