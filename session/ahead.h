/*
 * A big file's second half checked ahead, on a thread of its own, while the read in order checks
 * the first (session/ only; docs/decisions.md, "Loading at scan speed": a load of 100 MB spends most of its first step here, with a
 * core free). What it finds is only a guess until the read in order meets it: the lines it took
 * count only if the first half ends exactly where it started, at the seq it started with. Any
 * line it does not take (one that fails the check, a last line without its newline) it leaves
 * to the read in order, which decides it as it always did, with the same errors.
 */
#ifndef SESSION_AHEAD_H
#define SESSION_AHEAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

struct sess_ahead {
	int fd;			/* borrowed */
	off_t start, end;	/* the range: start is a line's first byte */
	const atomic_int *cancel;	/* borrowed, may be NULL */
	pthread_t thread;
	int started;
	/* What it took, once joined: */
	size_t n, cap;		/* events, in order from seq0; room */
	int64_t seq0;
	unsigned char *types;	/* owned: n type codes */
	off_t *offs;		/* owned: n line offsets */
	off_t stop;		/* the byte after the last line taken */
};

/* Starts checking the lines of fd from the first one that begins at or after mid, up to end; 0,
 * or -1 (no thread, or no line starts there): a then holds nothing. */
int sess_ahead_start(struct sess_ahead *a, int fd, off_t mid, off_t end, const atomic_int *cancel);
/* Waits for it to finish. */
void sess_ahead_join(struct sess_ahead *a);
void sess_ahead_free(struct sess_ahead *a);

#endif
