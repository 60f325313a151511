/*
 * The corpus index (SPEC §5.6): what the state directory holds, derived from
 * each file's header, its first lines and its last line, never whole logs.
 * A file whose size or mtime changed since it was indexed is re-read before
 * it is trusted. Live sessions are noted in and win over their files.
 */
#ifndef SESSION_CORPUS_H
#define SESSION_CORPUS_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "base/err.h"
#include "base/map.h"
#include "session/id.h"
#include "session/log.h"

struct sess;

enum sess_entry_state {
	SESS_ENTRY_OK,
	SESS_ENTRY_CORRUPT,		/* header unreadable */
	SESS_ENTRY_UNSUPPORTED,		/* newer format version */
	SESS_ENTRY_UNAVAILABLE,		/* cannot be read */
};

/* One indexed session. Strings are owned; NULL when absent. */
struct sess_entry {
	char id[SESS_ID_LEN + 1];
	enum sess_entry_state state;
	int live;
	int gone;		/* the file vanished (or was never published) */
	int dirty;		/* inotify saw it change: re-check before trusting */
	int64_t created_at;
	int64_t updated_at;
	int depth;
	char *cwd, *parent, *origin, *title, *label, *mode;
	off_t size;
	struct timespec mtime;
};

/*
 * Revalidation: with inotify on the directory only the files it reports as
 * changed are stat()ed again; without it (or after a queue overflow) every
 * candidate is stat()ed, as the fallback.
 */
struct sess_corpus {
	struct sess_env *env;	/* borrowed */
	struct map by_id;	/* id -> struct sess_entry * */
	int inotify_fd;		/* -1: stat every candidate */
	int all_dirty;
};

void sess_corpus_init(struct sess_corpus *c, struct sess_env *env);
void sess_corpus_free(struct sess_corpus *c);
/* Indexes every <id>.jsonl of the directory; a failure to list it is an error. */
int sess_corpus_scan(struct sess_corpus *c, struct err *e);
/* The entry for id, re-read first when its file changed; NULL when unknown. */
struct sess_entry *sess_corpus_get(struct sess_corpus *c, const char *id);
/* Records a live session's current facts (header, title, activity). */
void sess_corpus_note_live(struct sess_corpus *c, const struct sess *s);
void sess_corpus_note_released(struct sess_corpus *c, const char *id);
/* Snapshot of all entries (borrowed pointers, valid until the next change), revalidated. */
struct sess_entry **sess_corpus_list(struct sess_corpus *c, size_t *n);
/* The sessions whose header names parent, revalidated, by createdAt then id (borrowed pointers). */
struct sess_entry **sess_corpus_children(struct sess_corpus *c, const char *parent, size_t *n);
/* qsort order of struct sess_entry * by createdAt, then id (the listing order of SPEC §6.4). */
int sess_entry_order(const void *pa, const void *pb);
/* Title rule of session/list: first line of text, at most 80 characters; returns owned. */
char *sess_title_from_text(const char *text);

#endif
