/*
 * One session's JSONL file (docs/contract.md §5.3, §5.4): lazy atomic publication, whole-line
 * appends with truncate-back on failure, the flock single-writer lease, syncs.
 */
#ifndef SESSION_LOG_H
#define SESSION_LOG_H

#include <sys/types.h>

#include <jansson.h>

#include "base/clock.h"
#include "base/err.h"
#include "session/fault.h"
#include "session/id.h"

enum sess_sync { SESS_SYNC_NONE, SESS_SYNC_TURN, SESS_SYNC_ALWAYS };

/* What every log of the process shares; owned by the server, outlives every log. */
struct sess_env {
	char *state_dir;
	char *dir;			/* <state_dir>/sessions */
	enum sess_sync sync;
	struct sess_faults faults;
	struct clock clock;
	struct sess_ids ids;
	long syncs;			/* fdatasync/fsync calls made (benchmarks, tests) */
};

int sess_sync_parse(const char *s, enum sess_sync *out);
/* Creates the directories (0700). Returns 0 or -1 with e. */
int sess_env_init(struct sess_env *env, const char *state_dir, enum sess_sync sync,
    int deterministic, const char *faults, struct err *e);
void sess_env_free(struct sess_env *env);
/* Returns the owned path of a session file; id must already be valid. */
char *sess_env_path(const struct sess_env *env, const char *id);

/* Invariant: fd >= 0 iff the file is published and the lease is held; good is its valid length. */
struct sess_log {
	struct sess_env *env;
	char id[SESS_ID_LEN + 1];
	char *path;
	int fd;
	off_t good;
	int failed;		/* nothing more is written (until sess_log_recover, when recoverable) */
	int recoverable;	/* the failure was a write cut back to good: the file is whole */
	int readonly;		/* opened for reading only: the file or its filesystem is not writable */
	int dirty;		/* written since the last sync */
	char *header_line;	/* until publication */
	char why[320];		/* while failed: the cause, as the client reads it */
};

/* A new, unpublished log; header: borrowed. */
struct sess_log *sess_log_new(struct sess_env *env, const char *id, const json_t *header);
/*
 * Opens an existing file and takes the lease before anything is read (session_busy), so what
 * the caller reads through fd is what no other process writes meanwhile. A file that cannot be
 * opened for writing (EACCES, EROFS) opens read-only: readable, every append refused.
 */
struct sess_log *sess_log_open(struct sess_env *env, const char *id, struct err *e);
/* Cuts the file back to good, the valid length the caller read under the lease. */
int sess_log_adopt(struct sess_log *lg, off_t good, struct err *e);
/* Appends whole lines (each ending in '\n'); publishes first when needed. */
int sess_log_append(struct sess_log *lg, const char *data, size_t len, struct err *e);
int sess_log_sync(struct sess_log *lg, struct err *e);
/*
 * After a failed append that was cut back (ENOSPC, EIO): checks that the file still ends at the
 * last good line and lets writing go on. A failed sync or publication, a read-only log, or a file
 * that is not what was written stays failed. 0, or -1 with session_log_io and the cause.
 */
int sess_log_recover(struct sess_log *lg, struct err *e);
int sess_log_published(const struct sess_log *lg);
void sess_log_free(struct sess_log *lg);	/* releases the lease; does not sync */

#endif
