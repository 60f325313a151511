/*
 * Reading a session file (docs/contract.md §5.5). inspect is read-only: the valid prefix,
 * with an unbalanced tail closed in memory. The closers it computes are what
 * load appends to make the repair durable.
 */
#ifndef SESSION_REPAIR_H
#define SESSION_REPAIR_H

#include <stdatomic.h>
#include <sys/types.h>

#include <jansson.h>

#include "base/err.h"

#define SESS_TEXT_OUTCOME_UNKNOWN                                                                  \
	"Error: the tool call was interrupted after it started; its outcome is unknown. Retry only " \
	"if it is safe to repeat."
#define SESS_TEXT_NOT_STARTED                                                                      \
	"Error: the tool call was interrupted before it started. Retry it if it is still needed."

/*
 * The readable image of a session file. Owns its references. A whole read keeps every event
 * (base 0); a streamed one (sess_inspect_stream) keeps each valid event's type code and file
 * offset, and only the open turn's events as trees, from index base on: a load holds no tree per
 * event, and builds none for a line of a shape already checked (session/checked.h; docs/decisions.md, "Loading at scan speed").
 */
struct sess_image {
	json_t *header;
	json_t *events;		/* the valid events from index base on, then nclosers closers */
	size_t base;		/* the index of events[0] */
	size_t nevents;		/* valid events (closers not counted) */
	unsigned char *types;	/* owned: each event's sess_event_type_code, closers included */
	off_t *offs;		/* streamed: owned, nevents + 1: each event's line offset, then valid_len */
	size_t nclosers;
	off_t valid_len;	/* bytes of the valid prefix: where load truncates */
	size_t views;		/* message/view events among them (sess_loading_read counts) */
	int torn;		/* a torn last line was ignored */
};

void sess_image_free(struct sess_image *img);
/* Parses a whole file's bytes. Codes: session_corrupt, session_unsupported; on failure img is
 * empty (nothing to free). */
int sess_inspect_buf(const char *data, size_t len, struct sess_image *img, struct err *e);
/* Reads path (never follows a symlink). Codes as above plus unknown_session, session_log_io. */
int sess_inspect_file(const char *path, struct sess_image *img, struct err *e);
/*
 * The same through an open descriptor (read from offset 0 a chunk at a time; path names it in
 * errors). It touches nothing but its arguments, so a worker thread may run it: cancel (may be
 * NULL), when another thread sets it, stops the read between chunks (-1, internal).
 */
int sess_inspect_fd(int fd, const char *path, const atomic_int *cancel, struct sess_image *img, struct err *e);
/* The same, streamed: img keeps offsets and the open turn (above). A file of 16 MB or more has
 * its second half checked on a second thread meanwhile (session/ahead.h): the same image and the
 * same errors, in about half the time. */
int sess_inspect_stream(int fd, const char *path, const atomic_int *cancel, struct sess_image *img, struct err *e);
/* The same with the size from which it splits (tests: 1 splits every file of two bytes or more). */
int sess_inspect_stream_split(int fd, const char *path, const atomic_int *cancel, off_t split_min, struct sess_image *img,
    struct err *e);
/*
 * The read-only inspect at scan speed: inspect's verdict and counts without a JSON tree per
 * event. Events whose type is in keep (a NULL-terminated list, or NULL) are parsed, their payloads
 * checked, and kept, in log order; closers are counted, not built. The payload of a line the scan
 * does not parse (its fast path, a type not kept) is left to load, which checks every one.
 */
struct sess_scan {
	off_t valid_len;
	long nevents;
	int torn;
	size_t nclosers;	/* what load would append */
	json_t *kept;		/* owned array of the kept events (NULL when none); sess_scan_free */
};

int sess_scan_buf(const char *data, size_t len, const char *const *keep, struct sess_scan *sc, struct err *e);
int sess_scan_file(const char *path, const char *const *keep, struct sess_scan *sc, struct err *e);
/* Frees what a scan kept; safe after any outcome, and twice. */
void sess_scan_free(struct sess_scan *sc);

/* Appends the closers for an unbalanced tail to events (borrowed); returns how many. */
size_t sess_closers_append(json_t *events);

#endif
