/* The observation record: a map from path to what the tools last saw there. */
#include "workspace/obs.h"

#include <stdlib.h>

#include "base/hash64.h"
#include "base/xmalloc.h"

void
ws_obs_init(struct ws_obs *o)
{
	map_init(&o->files);
}

void
ws_obs_free(struct ws_obs *o)
{
	size_t pos = 0;
	void *v;

	while (map_next(&o->files, &pos, NULL, &v))
		free(v);
	map_free(&o->files);
}

void
ws_obs_note(struct ws_obs *o, const char *abs, const char *data, size_t len)
{
	struct ws_seen *s = map_get(&o->files, abs);

	if (s == NULL) {
		s = xmalloc(sizeof(*s));
		map_put(&o->files, abs, s);
	}
	s->absent = data == NULL;
	s->size = data ? len : 0;
	s->hash = data ? hash64(data, len) : 0;
}

const struct ws_seen *
ws_obs_get(const struct ws_obs *o, const char *abs)
{
	return map_get(&o->files, abs);
}

int
ws_obs_check(const struct ws_obs *o, const char *abs, const char *p, const char *cur,
    size_t len, struct err *err)
{
	const struct ws_seen *s = map_get(&o->files, abs);

	if (cur == NULL)
		return 0;
	if (s == NULL)
		return err_set(err, ERR_FS_NOT_OBSERVED,
		    "file \"%.300s\" has not been read \xe2\x80\x94 read the file, then retry", p);
	if (s->absent || s->size != len || s->hash != hash64(cur, len))
		return err_set(err, ERR_FS_STALE_VERSION,
		    "file \"%.300s\" changed since it was last read \xe2\x80\x94 re-read the file, then retry", p);
	return 0;
}
