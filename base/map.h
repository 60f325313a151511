/* String-keyed hash map (open addressing). Keys are copied; values are borrowed pointers. */
#ifndef BASE_MAP_H
#define BASE_MAP_H

#include <stddef.h>

struct map_slot;

struct map {
	struct map_slot *slots;
	size_t cap;		/* power of two, or 0 */
	size_t len;
	size_t used;		/* live + deleted slots */
};

void map_init(struct map *m);
void map_free(struct map *m);				/* frees keys, not values */
void *map_get(const struct map *m, const char *key);
void map_put(struct map *m, const char *key, void *value);	/* replaces */
void *map_del(struct map *m, const char *key);		/* returns the old value */
/* Iteration: *pos starts at 0; returns 0 at the end. */
int map_next(const struct map *m, size_t *pos, const char **key, void **value);

#endif
