/*
 * The root sessions session/list shows (docs/contract.md §3.3), kept sorted as they change, so a page is a
 * position and 50 steps, never a sort of the corpus. The array is ascending by (updated_at, id):
 * the listing (newest first) reads it from the end, and the newest sessions, the ones that
 * change, sit at the end where moving one costs little.
 */
#ifndef SESSION_ORDER_H
#define SESSION_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include "session/entry.h"

/* Invariant: v[0..n) is strictly ascending by (listed_at, id); each has listed set. */
struct sess_order {
	struct sess_entry **v;	/* borrowed entries (the corpus owns them) */
	size_t n, cap;
};

void sess_order_init(struct sess_order *o);
void sess_order_free(struct sess_order *o);	/* frees the array, not the entries */
/* Files en (borrowed) under its updated_at; en must not be listed. */
void sess_order_insert(struct sess_order *o, struct sess_entry *en);
/* Takes en out; en must be listed in o. */
void sess_order_remove(struct sess_order *o, struct sess_entry *en);
/* Builds o (empty) from v[0..n) at once: one sort, for the start-up index. */
void sess_order_build(struct sess_order *o, struct sess_entry **v, size_t n);
/* 1 when en belongs in the list: a stored or live root with a good header. */
int sess_order_wants(const struct sess_entry *en);
/* The count of entries below (t, id): a cursor's place. */
size_t sess_order_lower(const struct sess_order *o, int64_t t, const char *id);

#endif
