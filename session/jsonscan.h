/* A JSON syntax check that allocates nothing: fast enough to validate whole logs (SPEC §12). */
#ifndef SESSION_JSONSCAN_H
#define SESSION_JSONSCAN_H

#include <stddef.h>

/* 1 when s[0..n) is exactly one JSON value (RFC 8259, UTF-8 checked), else 0. */
int json_scan_valid(const char *s, size_t n);
/* Skips one JSON value (after white space) at p; returns the end of it, or NULL when invalid. */
const char *json_scan_skip(const char *p, const char *end);

#endif
