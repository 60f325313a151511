/*
 * Values read out of a JSON text without a tree: an object's members, an array's items, a
 * string's bytes, and a value copied out as base/jenc.c would encode jansson's tree of it.
 *
 * The text must be one json_scan_valid said yes to: these walk it, they do not check it again
 * (a walk that meets something it does not expect still stops, it never reads past the end).
 * Where jansson's tree would hold something these cannot copy byte for byte (a real, an integer
 * beyond 18 digits, -0, \u0000) they say no, and the caller takes the tree.
 */
#ifndef BASE_JSONRAW_H
#define BASE_JSONRAW_H

#include <stddef.h>

#include "base/buf.h"
#include "base/jsonscan.h"

struct json_member {
	const char *key;	/* the key's bytes between its quotes (it has no escape) */
	size_t klen;
	struct json_span val;	/* the value's text */
};

struct json_raw_iter {
	const char *p, *end;
	int first;
};

/* The members of the object whose text is v: at most max into m. Returns how many, or -1 when
 * v is not an object, has more than max members, a key twice, or a key with an escape in it
 * (every "no" of this file means: take the tree). */
int json_raw_members(const struct json_span *v, struct json_member *m, int max);
/* The value of key among n members, or NULL. */
const struct json_span *json_raw_get(const struct json_member *m, int n, const char *key);
/* key's value in the object v into *val: 1, 0 when it has none, -1 as json_raw_members. */
int json_raw_lookup(const struct json_span *v, const char *key, struct json_span *val);
/* Walking an object's members: begin (-1 when v is not an object), then json_raw_member: 1 with
 * the next into *m, 0 at the end, -1 on an escaped key or a text that is not one. */
int json_raw_members_begin(struct json_raw_iter *it, const struct json_span *v);
int json_raw_member(struct json_raw_iter *it, struct json_member *m);

/* Walking an array's items: json_raw_items_begin, then json_raw_item until it returns 0. */
/* -1 when v is not an array. */
int json_raw_items_begin(struct json_raw_iter *it, const struct json_span *v);
/* The next item into *item: 1; 0 at the end; -1 on a text that is not an array's. */
int json_raw_item(struct json_raw_iter *it, struct json_span *item);

/* Whether v is the string s (its text is exactly "s", no escape). */
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
