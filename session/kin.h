/*
 * The corpus's children index: parent id -> the entries whose header names it, and the same
 * entries in listing order (createdAt, then id). A listing of one parent's children copies its
 * sorted group instead of walking every entry of the corpus: at 100,000 sessions that walk is
 * a cache miss per entry, and so is sorting entries read from all over the heap.
 *
 * Each entry records how it is filed (en->kin); sess_kin_file, called whenever an entry's
 * facts changed, moves it when its parent changed and marks the group's order stale when its
 * createdAt did. Groups hold borrowed entry pointers; entries outlive the index.
 */
#ifndef SESSION_KIN_H
#define SESSION_KIN_H

#include <stddef.h>

#include "base/map.h"
#include "session/entry.h"

struct sess_kin {
	struct sess_entry **v;	/* borrowed, in no order */
	size_t n, cap;
	struct sess_entry **sorted;	/* v in listing order when sorted_ok (n of them) */
	size_t sorted_cap;
	int sorted_ok;
	size_t unavailable;	/* members filed as SESS_ENTRY_UNAVAILABLE (stat()ed at each listing) */
};

struct sess_kin_index {
	struct map by_parent;	/* parent id -> owned struct sess_kin * */
};

void sess_kin_init(struct sess_kin_index *x);
void sess_kin_free(struct sess_kin_index *x);
/* Files en under en->parent (none when NULL or en->gone), leaving the group it was in. */
void sess_kin_file(struct sess_kin_index *x, struct sess_entry *en);
/* Empties the index; every entry's en->kin is to be cleared and filed again. */
void sess_kin_reset(struct sess_kin_index *x);
/* parent's group, or NULL when nothing was filed under it. */
struct sess_kin *sess_kin_get(const struct sess_kin_index *x, const char *parent);

#endif
