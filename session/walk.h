/*
 * The one walk over a session file's lines (session/ only; docs/decisions.md, "Loading at scan
 * speed"). inspect, the scan and the read ahead all read a log through it: it cuts chunks into
 * lines, knows which line may be a torn last one, checks the header and every event at its level
 * (through the shape cache, session/checked.h, when a learnt shape vouches for the line, else the
 * full way, which decides and words the error), and keeps the seq, the valid length and the
 * latest turn marker. What becomes of each event is the caller's (take).
 */
#ifndef SESSION_WALK_H
#define SESSION_WALK_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "base/err.h"
#include "session/checked.h"

/* Whether a chunk's final line is known to be the file's last: not yet (MORE: it waits for the
 * next chunk), yes (FINAL: the file ends there), no (BOUNDARY: the chunk ends on a newline and
 * more lines follow). */
enum { SESS_WALK_MORE, SESS_WALK_FINAL, SESS_WALK_BOUNDARY };

struct sess_walk;
/*
 * An event taken: line[0..n) at file offset off, its type code (0: an ignorable unknown type),
 * and its tree when the check built one (owned: take keeps or frees it), else NULL; w->seq is its
 * seq. Returns 0 to go on, 1 to stop before it (nothing of it counted), -1 with e set.
 */
typedef int sess_walk_take_fn(struct sess_walk *w, const char *line, size_t n, off_t off, int code, json_t *ev,
    struct err *e);

struct sess_walk {
	int level;		/* SESS_CHECK_ENVELOPE or SESS_CHECK_FULL */
	int shaped;		/* learn and use shapes (a walk keeping every tree has no use for them) */
	sess_walk_take_fn *take;
	void *arg;		/* take's */
	struct sess_checked shapes;
	json_t *header;		/* owned: the header once read */
	int headless;		/* the walk starts after the header, at the first line's seq */
	int64_t seq;		/* the next event's (-1: headless, none read yet) */
	int line_no;
	int torn;		/* a torn last line ended the file */
	int done;		/* no more lines are taken: torn, or take said stop */
	off_t base;		/* file offset of the chunk's first byte */
	off_t valid_len;	/* the end of the last line taken */
	off_t turn_off;		/* the latest turn/start or turn/end: its offset, or -1 */
	int64_t turn_seq;	/* its seq */
	int turn_ended;		/* it was a turn/end */
	char *buf;		/* owned: sess_walk_fd's chunk, cap bytes and a 16-byte pad */
	size_t cap;
};

void sess_walk_init(struct sess_walk *w, int level, int shaped, sess_walk_take_fn *take, void *arg);
void sess_walk_free(struct sess_walk *w);
/* The lines of one chunk, data[0..len) at file offset w->base (final: above); *used is how many
 * bytes were taken, the caller keeps the rest for the next chunk. 0, or -1 with e set. */
int sess_walk_lines(struct sess_walk *w, const char *data, size_t len, int final, size_t *used, struct err *e);
/* Reads [*off, limit) of fd (limit -1: to its end) through sess_walk_lines, a chunk at a time
 * with pread (a file cut meanwhile reads short, never faults); *off ends where the taken lines
 * end. cancel (may be NULL), set by another thread, stops it between chunks (-1, internal). */
int sess_walk_fd(struct sess_walk *w, int fd, const char *path, const atomic_int *cancel, off_t *off, off_t limit,
    struct err *e);
/* The bookkeeping of an event taken without a walk (the read ahead's, spliced in): as if line at
 * off, of type code, had been walked. */
void sess_walk_count(struct sess_walk *w, off_t off, int code);

#endif
