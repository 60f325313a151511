/* Session ids: lowercase RFC 4122 version-4 UUIDs, checked before any path is built. */
#ifndef SESSION_ID_H
#define SESSION_ID_H

#include <stddef.h>
#include <stdint.h>

#define SESS_ID_LEN 36

/* The id generator: random, or a counter in deterministic mode (docs/contract.md §10.4). */
struct sess_ids {
	int deterministic;
	uint64_t counter;	/* last counter value handed out */
	int urandom_fd;
};

int sess_id_valid(const char *s);			/* 1 when s is a well-formed id */
int sess_id_validn(const char *s, size_t n);
/* The counter of a deterministic-form id, or 0 when s is not one. */
uint64_t sess_id_counter(const char *s);

void sess_ids_init(struct sess_ids *g, int deterministic);
void sess_ids_close(struct sess_ids *g);
void sess_ids_seen(struct sess_ids *g, const char *id);	/* keep the counter past id */
void sess_ids_new(struct sess_ids *g, char out[SESS_ID_LEN + 1]);

#endif
