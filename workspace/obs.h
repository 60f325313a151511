/*
 * The observation record (docs/contract.md §16.3, §20.1): one per root session tree (children share their
 * root's), keyed by the absolute path ws_path gives. A read notes the whole file's size and
 * hash (a partial read too: it observed the content), a read that found no file notes it
 * absent, a write by the tools notes what it wrote. Before write over or edit of an existing
 * file, the current content is checked against the note:
 *   FS_NOT_OBSERVED   file "<p>" has not been read — read the file, then retry
 *   FS_STALE_VERSION  file "<p>" changed since it was last read — re-read the file, then retry
 * (an absent note for a file that exists now is stale). A file that does not exist needs no
 * note: write may create it. In memory only: a restarted agent has observed nothing.
 */
#ifndef WORKSPACE_OBS_H
#define WORKSPACE_OBS_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "base/map.h"

struct ws_obs {
	struct map files;	/* abs path -> struct ws_seen * (owned by the record) */
};

/* What was seen of one file. Invariant: size and hash are 0 when absent. */
struct ws_seen {
	uint64_t size;
	uint64_t hash;		/* hash64 of the content (base/hash64.h) */
	int absent;
};

void ws_obs_init(struct ws_obs *o);
void ws_obs_free(struct ws_obs *o);
/* Notes content data[0..len) at abs (both borrowed); data NULL: the file was not there. */
void ws_obs_note(struct ws_obs *o, const char *abs, const char *data, size_t len);
/* The note at abs, or NULL; borrowed until the next note or free. */
const struct ws_seen *ws_obs_get(const struct ws_obs *o, const char *abs);
/*
 * May the file at abs, whose content is now cur[0..len) (cur NULL: there is no file), be
 * replaced? 0, or -1 with FS_NOT_OBSERVED / FS_STALE_VERSION naming p (the caller's path).
 */
int ws_obs_check(const struct ws_obs *o, const char *abs, const char *p, const char *cur,
    size_t len, struct err *err);

#endif
