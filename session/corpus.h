/*
 * The corpus index (docs/contract.md §5.6): what the state directory holds, derived from each file's
 * header, its first lines and its last line, never whole logs. A file whose size or mtime
 * changed since it was indexed is re-read before it is trusted. Live sessions are noted in and
 * win over their files.
 *
 * Start-up does not read the directory: the index file (session/index.h) is loaded and checked
 * against the directory by a worker (session/reconcile.h) after initialize is answered; until
 * it is adopted the corpus is not ready, and whatever needs every session waits for it. The
 * roots session/list shows are kept sorted as they change (session/order.h).
 */
#ifndef SESSION_CORPUS_H
#define SESSION_CORPUS_H

#include <ev.h>

#include "base/err.h"
#include "base/map.h"
#include "base/runq.h"
#include "session/entry.h"
#include "session/id.h"
#include "session/kin.h"
#include "session/log.h"
#include "session/order.h"

struct sess;
struct offload;
struct sess_reconcile;

/* An entry's place in the listing order (sess_corpus_sort). */
struct sess_corpus_key {
	int64_t created_at;
	struct sess_entry *en;
};

/*
 * Revalidation: with inotify on the directory only the files it reports as changed are
 * stat()ed again (dirty lists them); without it (or after a queue overflow) every candidate
 * is stat()ed, as the fallback. Entries are never freed before the corpus is.
 */
struct sess_corpus {
	struct sess_env *env;	/* borrowed */
	struct map by_id;	/* id -> owned struct sess_entry * */
	struct sess_order roots;	/* the roots session/list shows, sorted */
	struct sess_kin_index kin;	/* parent id -> its children (every entry with a parent) */
	struct sess_entry **dirty;	/* entries inotify marked since the last listing (borrowed) */
	struct sess_corpus_key *keys;	/* sess_corpus_sort's two arrays of keys_cap, kept */
	size_t keys_cap;
	size_t ndirty, cdirty;
	int inotify_fd;		/* -1: stat every candidate */
	int watched;		/* the watch was asked for (by the first index run) */
	int all_dirty;
	int ready;		/* every file of the directory is in by_id */
	int changed;		/* entries changed since the index file was written */
	uint64_t gen;		/* the last entry gen given out */
	struct ev_loop *loop;	/* set by sess_corpus_start: the run is due */
	struct runq *q;
	struct sess_reconcile *job;	/* the start-up run in flight, or NULL */
	struct offload *off;
	void (*on_ready)(void *arg);
	void *ready_arg;
	/* What a user of the corpus keeps beside it, freed with it by memo_free (agent/subagent_list.c:
	 * the model's last listings, whose objects a listing reuses for the entries it finds unchanged). */
	void *memo;
	void (*memo_free)(void *memo);
};

void sess_corpus_init(struct sess_corpus *c, struct sess_env *env);
/* Stops a run in flight, writes the index file when it is behind, frees everything. */
void sess_corpus_free(struct sess_corpus *c);
/*
 * Indexes the directory now, on this thread (the index file is used unless the clock is
 * deterministic, whose ids and times come from reading every file); a failure to list it is an error.
 */
int sess_corpus_scan(struct sess_corpus *c, struct err *e);
/*
 * Start-up: checks the directory can be opened; the indexing runs on a worker from the first
 * sess_corpus_kick (loop NULL or a deterministic clock: at once, as sess_corpus_scan).
 * on_ready(arg) runs on the loop once the corpus is ready (never from inside these calls).
 */
int sess_corpus_start(struct sess_corpus *c, struct ev_loop *loop, struct runq *q, void (*on_ready)(void *arg),
    void *arg, struct err *e);
/*
 * Starts the worker if it is due and not started. The server calls it once the first request
 * is answered: a worker reading the index file (page faults) slows the loop thread's start.
 */
void sess_corpus_kick(struct sess_corpus *c);
int sess_corpus_is_ready(const struct sess_corpus *c);
/* The entry for id, re-read first when its file changed; NULL when unknown. */
struct sess_entry *sess_corpus_get(struct sess_corpus *c, const char *id);
/* Records a live session's current facts (header, title, activity). */
void sess_corpus_note_live(struct sess_corpus *c, struct sess *s);
void sess_corpus_note_released(struct sess_corpus *c, const char *id);
/* Snapshot of all entries (borrowed pointers, valid until the next change), revalidated. */
struct sess_entry **sess_corpus_list(struct sess_corpus *c, size_t *n);
/* Sorts v[0..n) as sess_entry_order does (by createdAt, then id). */
void sess_corpus_sort(struct sess_corpus *c, struct sess_entry **v, size_t n);
/* The sessions whose header names parent, revalidated, by createdAt then id (borrowed pointers). */
struct sess_entry **sess_corpus_children(struct sess_corpus *c, const char *parent, size_t *n);
/* The listed roots, revalidated, sorted (borrowed: valid until the next change). */
const struct sess_order *sess_corpus_roots(struct sess_corpus *c);
/* Writes the index file now when entries changed since it was; 0 or -1 with e. */
int sess_corpus_save(struct sess_corpus *c, struct err *e);

#endif
