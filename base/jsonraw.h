/*
 * Values read out of a JSON text without a tree: a tape of its tokens to find them by, a
 * string's bytes, and a value copied out as base/jenc.c would encode jansson's tree of it.
 *
 * The tape is not a check (it finds values by brackets and quotes, and stops at the end); the
 * copy is: what it writes is one valid value, or nothing. Where jansson's tree would hold
 * something these cannot write byte for byte (a real, an integer beyond 18 digits, -0, \u0000)
 * they say no, and the caller takes the tree.
 */
#ifndef BASE_JSONRAW_H
#define BASE_JSONRAW_H

#include <stddef.h>

#include "base/buf.h"
#include "base/jsonscan.h"

/*
 * A line's values in order, found by their brackets and quotes alone (one pass, memchr for each
 * string's end): token i is one value (a key is a string value), and end is the token after it
 * and all it holds, so a walk steps over a big value in one move.
 */
struct json_tok {
	const char *s;
	size_t n;		/* s[0..n) is the value's text */
	size_t end;
};
struct json_tape {
	struct json_tok *t;	/* owned */
	size_t n, cap;
};
#define JSON_TAPE_MAX_DEPTH 4096	/* jenc's: canonical bytes always tape */

void json_tape_init(struct json_tape *tp);
void json_tape_free(struct json_tape *tp);
/* The tokens of s[0..n) (one value) into tp, emptied first: 0, or -1 when its brackets or
 * quotes do not close (or it nests deeper than JSON_TAPE_MAX_DEPTH). */
int json_tape_build(struct json_tape *tp, const char *s, size_t n);
/* key's value in the object at token o: 1 with its token in *at; 0 when it has none; -1 when o
 * is not an object, has a key twice, an escaped key, more than JSON_TAPE_MAX_MEMBERS, or a token
 * out of place. */
int json_tape_get(const struct json_tape *tp, size_t o, const char *key, size_t *at);
/* The members of the object at token o, in order, at most max: how many, or -1 as json_tape_get
 * (and when it has more than max). */
#define JSON_TAPE_MAX_MEMBERS 32
struct json_tape_member {
	const char *key;	/* its bytes between the quotes (no escape) */
	size_t klen;
	size_t at;		/* the value's token */
};
int json_tape_members(const struct json_tape *tp, size_t o, struct json_tape_member *m, size_t max);
/* Token i's text as a span. */
static inline struct json_span
json_tape_span(const struct json_tape *tp, size_t i)
{
	struct json_span v = { tp->t[i].s, tp->t[i].n, 0 };
	return v;
}

/* 1 when v is the string s, 0 when it is another string written without escapes, -1 when it
 * cannot say by the bytes (an escape, or not a string). */
int json_raw_is(const struct json_span *v, const char *s);
/* v is a string with no escape: its bytes between the quotes into *s and *n; else 0. */
int json_raw_plain(const struct json_span *v, const char **s, size_t *n);
/* A string's value appended to out (not NUL-checked by C string rules: *n is its length). -1
 * (out unchanged) when v is not a string or holds \u0000. */
int json_raw_decode(const struct json_span *v, struct buf *out);
/* An integer of at most 18 digits into *out; else 0 (jansson's tree would hold something else). */
int json_raw_int(const struct json_span *v, long long *out);
/* Appends v as jenc_append would append jansson's tree of it. -1 (out unchanged) when it cannot
 * be sure of the bytes: a real, an integer beyond 18 digits, -0, a string holding \u0000. */
int json_raw_copy(struct buf *out, const struct json_span *v);

#endif
