/*
 * A JSON check that allocates nothing: fast enough to validate whole logs (docs/contract.md §12).
 *
 * It is a conservative stand-in for jansson: a yes means json_loadb(s, n, flags) accepts the
 * same bytes (flags: any of JSON_ALLOW_NUL, JSON_REJECT_DUPLICATES, JSON_DECODE_ANY). A no means "invalid, or not
 * sure" (an integer beyond 18 digits, a real that could overflow, an escaped key under
 * JSON_REJECT_DUPLICATES, more than JSON_SCAN_MAX_KEYS keys open at once, nesting deeper than
 * JSON_SCAN_MAX_DEPTH): callers then take jansson's full path, which decides.
 */
#ifndef BASE_JSONSCAN_H
#define BASE_JSONSCAN_H

#include <stddef.h>
#include <stdint.h>

#define JSON_SCAN_MAX_DEPTH 512
#define JSON_SCAN_MAX_KEYS 64

/* 1 when s[0..n) is exactly one JSON value (white space around it allowed) that jansson
 * accepts with flags, else 0. */
int json_scan_valid(const char *s, size_t n, size_t flags);
/* Skips one such value (after white space) at p; returns the end of it, or NULL. */
const char *json_scan_skip(const char *p, const char *end, size_t flags);
/* One escape at p (p[0] is the backslash) as jansson reads it: its code point in *cp, a
 * surrogate pair joined; returns the byte after it, or NULL (a lone surrogate, \u0000 unless
 * nul_ok, an unknown letter, too few bytes before end). */
const char *json_scan_escape(const char *p, const char *end, int nul_ok, unsigned *cp);

/*
 * A shape: a validated text with its string and number values cut out. Another text made of the
 * same bytes between values, with a valid string where a string was and a valid number where a
 * number was, tokenises exactly as the learnt one did (same keys, same nesting), so the validator's
 * yes carries over with only the values checked. Logs are written by one writer, so their lines
 * come in few shapes.
 */
#define JSON_SHAPE_MAX_VARS 48
enum { JSON_SHAPE_STRING = 1, JSON_SHAPE_NUMBER = 2 };

struct json_shape {
	char *bytes;		/* owned copy of the learnt text (NULL: nothing learnt) */
	size_t len;
	size_t flags;
	unsigned nvar;
	int overflow;		/* more values than var[] holds: not kept */
	struct {
		uint32_t off, len;
		uint8_t kind;
		uint8_t plain;	/* a number of at most 18 digits, no sign, fraction or exponent */
	} var[JSON_SHAPE_MAX_VARS];
};

struct json_span {
	const char *s;
	size_t n;
	int plain;		/* a number, and plain as in struct json_shape */
};

/* json_scan_valid, and on a yes (with at most JSON_SHAPE_MAX_VARS values) sh learns s's shape;
 * sh is emptied first. Returns json_scan_valid's answer. */
int json_shape_learn(struct json_shape *sh, const char *s, size_t n, size_t flags);
void json_shape_free(struct json_shape *sh);
/* When s (read no further than limit) starts with a text of shape sh, returns its end, with
 * the spans of its first nvars values in vars (may be NULL with nvars 0); else NULL. */
const char *json_shape_match(const struct json_shape *sh, const char *s, const char *limit, struct json_span *vars,
    unsigned nvars);

#endif
