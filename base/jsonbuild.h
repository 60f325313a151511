/*
 * jansson's tree for a text, built faster than json_loadb builds it (docs/decisions.md, "Loading at scan speed": a session load
 * parses every event). The text is first checked by base/jsonscan.c; only a text the check says
 * yes to is built, so the tree is the one json_loadb(s, n, flags) returns: the same values, types
 * and key order. A no (invalid, or not sure) returns NULL and the caller asks jansson, which decides.
 */
#ifndef BASE_JSONBUILD_H
#define BASE_JSONBUILD_H

#include <stddef.h>

#include <jansson.h>

/* The value of s[0..n) with flags as json_loadb takes them (JSON_ALLOW_NUL, JSON_REJECT_DUPLICATES,
 * JSON_DECODE_ANY); returns a new ref, or NULL when json_scan_valid says no. */
json_t *json_build(const char *s, size_t n, size_t flags);

#endif
