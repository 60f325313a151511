/*
 * Building the corpus index without the loop (docs/contract.md §5.6): load the index file, list the
 * directory, and make every listed file's entry true again: an indexed one whose size and mtime
 * still match is kept, any other is read. It touches only what the job owns, so it runs on a
 * worker thread (base/offload.h) after initialize is answered; the loop adopts the result.
 */
#ifndef SESSION_RECONCILE_H
#define SESSION_RECONCILE_H

#include <stdatomic.h>
#include <sys/inotify.h>

#include "base/err.h"
#include "base/map.h"
#include "session/order.h"

/* One run. Inputs are owned copies; outputs are owned by the job until the corpus adopts them. */
struct sess_reconcile {
	char *dir;			/* <state-dir>/sessions */
	char *index_path;		/* <state-dir>/index.v1 */
	int use_index;			/* 0: ignore the file (a full rebuild), still write it */
	int write_index;		/* rewrite the file when it was not already the truth */
	int watch_fd;			/* an inotify fd to watch the directory with first, or -1 */
	/* results */
	struct map by_id;		/* id -> owned struct sess_entry * */
	struct sess_order roots;	/* the listed roots among them */
	int watch_failed;		/* the watch could not be added */
	int failed;			/* the directory could not be listed: err says why */
	struct err err;
	int index_bad;			/* the file was ignored: why says why */
	struct err why;
	size_t kept, read, dropped;	/* entries kept from the file, read from disk, no longer there */
	int wrote;			/* the index file was written */
	int write_failed;		/* it could not be: write_err says why */
	struct err write_err;
};

/* What the corpus watches the directory for (adding the watch is O(entries) in the kernel). */
#define SESS_RECONCILE_WATCH (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | \
	IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF)

/* Prepares a run over env's directories (copied). */
void sess_reconcile_init(struct sess_reconcile *r, const char *state_dir, const char *dir, int use_index);
/* Does the work; stops early (results incomplete) once *cancel is set (may be NULL). */
void sess_reconcile_run(struct sess_reconcile *r, const atomic_int *cancel);
/* Frees whatever the corpus did not adopt (the entries too). */
void sess_reconcile_free(struct sess_reconcile *r);

#endif
