/*
 * The one cache of event line shapes (docs/decisions.md, "Loading at scan speed": a load checks
 * 100 MB without a JSON tree per line, a scan without even that). A shape is learnt from a line
 * that passed a check at one of two levels: the envelope (our writer's prefix, a known type,
 * valid JSON: what the scan asks) or in full (sess_event_check: what load asks). A line of a
 * learnt shape (base/jsonscan.h: the same bytes between its values, valid values of the same
 * kinds) whose seq is the expected one, written as the writer writes it, and whose time is a plain
 * integer gets the envelope's verdict when its event type is byte for byte the learnt one, and the
 * full check's verdict, from a shape learnt in full, when besides:
 *   - every string that is the value of a "type" key (the event type, a block's variant) is
 *     byte for byte the learnt one: they choose which fields the payload check asks for;
 *   - every number is a plain non-negative integer, and below INT_MAX unless the learnt one was a
 *     plain integer of INT_MAX or more (a count's range, payload.c; a learnt -0 or 1.5 proves
 *     nothing about the range: jansson reads -0 as the integer 0).
 * Anything else is "not sure": the caller checks the line the full way, which decides and names
 * the error, and may learn its shape. Nothing here accepts a line the full check would refuse.
 */
#ifndef SESSION_CHECKED_H
#define SESSION_CHECKED_H

#include <stddef.h>
#include <stdint.h>

#include "base/jsonscan.h"

#define SESS_CHECKED_SHAPES 16

/* The levels of check a shape carries over (a full one carries the envelope's too). */
enum { SESS_CHECK_ENVELOPE = 1, SESS_CHECK_FULL = 2 };

struct sess_checked_shape {
	struct json_shape sh;
	int code;		/* the event type's code (sess_event_type_code) */
	int level;		/* what the learnt line passed */
	uint64_t same;		/* bit i: value i must equal the learnt one (a "type" string) */
	uint64_t unbounded;	/* bit i: a number the learnt line had as a plain integer >= INT_MAX */
};

struct sess_checked {
	struct sess_checked_shape s[SESS_CHECKED_SHAPES];
	int next[SESS_CHECKED_SHAPES];	/* the shape that followed this one last time: tried first */
	int n, last, victim;	/* last: the shape that matched last, or -1 */
	int64_t seq;		/* the seq that text holds, or -1 */
	char text[24];
	size_t textlen;
};

void sess_checked_init(struct sess_checked *c);
void sess_checked_free(struct sess_checked *c);
/* line[0..n) (without its newline), of type code, passed the check of level as an event: its
 * shape is kept (the oldest goes) when it has one worth keeping. Returns whether the line is
 * JSON jansson takes (json_scan_valid, with load's flags): the envelope's check asks that here. */
int sess_checked_learn(struct sess_checked *c, const char *line, size_t n, int code, int level);
/* When the line at line (readable up to limit) is vouched for at level as event seq by a learnt
 * shape: the newline that ends it, with its type code in *code; else NULL (not sure). */
const char *sess_checked_match(struct sess_checked *c, const char *line, const char *limit, int64_t seq, int level,
    int *code);

/* The writer's decimal text of a seq, one more, in place: len is its length, cap the room (a
 * NUL follows it). */
void sess_seq_text_next(char *text, size_t *len, size_t cap);
/* A plain non-negative integer of at most 18 digits in s[0..n): 1 with *out, else 0. */
int sess_plain_int(const char *s, size_t n, int64_t *out);

#endif
