/*
 * A JSON check that allocates nothing: fast enough to validate whole logs (SPEC §12).
 *
 * It is a conservative stand-in for jansson: a yes means json_loadb(s, n, flags) accepts the
 * same bytes (flags: any of JSON_ALLOW_NUL, JSON_REJECT_DUPLICATES, JSON_DECODE_ANY). A no means "invalid, or not
 * sure" (an integer beyond 18 digits, a real that could overflow, an escaped key under
 * JSON_REJECT_DUPLICATES, more than JSON_SCAN_MAX_KEYS keys open at once, nesting deeper than
 * JSON_SCAN_MAX_DEPTH): callers then take jansson's full path, which decides.
 */
#ifndef SESSION_JSONSCAN_H
#define SESSION_JSONSCAN_H

#include <stddef.h>

#define JSON_SCAN_MAX_DEPTH 512
#define JSON_SCAN_MAX_KEYS 64

/* 1 when s[0..n) is exactly one JSON value (white space around it allowed) that jansson
 * accepts with flags, else 0. */
int json_scan_valid(const char *s, size_t n, size_t flags);
/* Skips one such value (after white space) at p; returns the end of it, or NULL. */
const char *json_scan_skip(const char *p, const char *end, size_t flags);

#endif
