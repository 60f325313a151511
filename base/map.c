/* Open-addressing hash map with linear probing and tombstones. */
#include "base/map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"

struct map_slot {
	char *key;		/* NULL: empty; MAP_TOMB: deleted */
	void *value;
};

static char map_tomb_marker;
#define MAP_TOMB (&map_tomb_marker)

static uint64_t
map_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;	/* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

void
map_init(struct map *m)
{
	m->slots = NULL;
	m->cap = m->len = m->used = 0;
}

void
map_free(struct map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].key && m->slots[i].key != MAP_TOMB)
			free(m->slots[i].key);
	free(m->slots);
	map_init(m);
}

static struct map_slot *
map_find(const struct map *m, const char *key)
{
	if (m->cap == 0)
		return NULL;
	for (size_t i = map_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct map_slot *s = &m->slots[i];
		if (s->key == NULL)
			return NULL;
		if (s->key != MAP_TOMB && strcmp(s->key, key) == 0)
			return s;
	}
}

static void
map_grow(struct map *m)
{
	struct map_slot *old = m->slots;
	size_t oldcap = m->cap;

	m->cap = oldcap ? oldcap * 2 : 16;
	while (m->len * 2 >= m->cap)
		m->cap *= 2;
	m->slots = xcalloc(m->cap, sizeof(*m->slots));
	m->used = m->len;
	for (size_t i = 0; i < oldcap; i++) {
		if (old[i].key == NULL || old[i].key == MAP_TOMB)
			continue;
		size_t j = map_hash(old[i].key) & (m->cap - 1);
		while (m->slots[j].key)
			j = (j + 1) & (m->cap - 1);
		m->slots[j] = old[i];
	}
	free(old);
}

void *
map_get(const struct map *m, const char *key)
{
	struct map_slot *s = map_find(m, key);

	return s ? s->value : NULL;
}

void
map_put(struct map *m, const char *key, void *value)
{
	struct map_slot *s = map_find(m, key);

	if (s) {
		s->value = value;
		return;
	}
	if ((m->used + 1) * 4 >= m->cap * 3)
		map_grow(m);
	for (size_t i = map_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		s = &m->slots[i];
		if (s->key == NULL || s->key == MAP_TOMB) {
			if (s->key == NULL)
				m->used++;
			s->key = xstrdup(key);
			s->value = value;
			m->len++;
			return;
		}
	}
}

void *
map_del(struct map *m, const char *key)
{
	struct map_slot *s = map_find(m, key);
	void *v;

	if (s == NULL)
		return NULL;
	v = s->value;
	free(s->key);
	s->key = MAP_TOMB;
	s->value = NULL;
	m->len--;
	return v;
}

int
map_next(const struct map *m, size_t *pos, const char **key, void **value)
{
	while (*pos < m->cap) {
		struct map_slot *s = &m->slots[(*pos)++];
		if (s->key && s->key != MAP_TOMB) {
			if (key)
				*key = s->key;
			if (value)
				*value = s->value;
			return 1;
		}
	}
	return 0;
}
