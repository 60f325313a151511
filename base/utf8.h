/* UTF-8 validation and repair. */
#ifndef BASE_UTF8_H
#define BASE_UTF8_H

#include <stddef.h>

/* Length of the valid sequence at s (1-4), or 0 when it is invalid or cut short. */
size_t utf8_seq_len(const unsigned char *s, size_t n);
int utf8_valid(const char *s, size_t n);
/* Returns an owned NUL-terminated copy with every invalid sequence replaced by U+FFFD. */
char *utf8_repair(const char *s, size_t n, size_t *out_len);
/* Largest prefix length <= max that does not cut a UTF-8 sequence (never 0 when n > 0). */
size_t utf8_boundary(const char *s, size_t n, size_t max);

#endif
