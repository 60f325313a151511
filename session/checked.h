/*
 * The shapes of event lines the full check accepted (docs/decisions.md, "Loading at scan speed": a load checks 100 MB without a
 * JSON tree per line). A line of a learnt shape (base/jsonscan.h: the same bytes between its
 * values, valid values of the same kinds) gets the full check's verdict when, besides:
 *   - its seq is the expected one, written as the writer writes it;
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

struct sess_checked_shape {
	struct json_shape sh;
	int code;		/* the event type's code (sess_event_type_code) */
	uint64_t same;		/* bit i: value i must equal the learnt one (a "type" string) */
	uint64_t unbounded;	/* bit i: a number the learnt line had as a plain integer >= INT_MAX */
};

struct sess_checked {
	struct sess_checked_shape s[SESS_CHECKED_SHAPES];
	int n, last, victim;	/* last: the shape that matched last, tried first */
	int64_t seq;		/* the seq that text holds, or -1 */
	char text[24];
	size_t textlen;
};

void sess_checked_init(struct sess_checked *c);
void sess_checked_free(struct sess_checked *c);
/* line[0..n) (without its newline) passed sess_event_check as event seq, of type code: its shape
 * is kept (the oldest goes) when it has one worth keeping. */
void sess_checked_learn(struct sess_checked *c, const char *line, size_t n, int code);
/* When line[0..n) is accepted as event seq by a learnt shape: its type code; else 0. line must
 * be readable up to n + 1 bytes (its newline). */
int sess_checked_match(struct sess_checked *c, const char *line, size_t n, int64_t seq);

/* The writer's decimal text of a seq, one more, in place: len is its length, cap the room (a
 * NUL follows it). */
void sess_seq_text_next(char *text, size_t *len, size_t cap);
/* A plain non-negative integer of at most 18 digits in s[0..n): 1 with *out, else 0. */
int sess_plain_int(const char *s, size_t n, int64_t *out);

#endif
