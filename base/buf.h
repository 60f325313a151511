/* Growable byte buffer. */
#ifndef BASE_BUF_H
#define BASE_BUF_H

#include <stddef.h>

/* Invariant: data[len] == '\0' whenever data != NULL, so text can be read in place. */
struct buf {
	char *data;
	size_t len;
	size_t cap;
};

void buf_init(struct buf *b);
void buf_free(struct buf *b);
void buf_reserve(struct buf *b, size_t extra);
void buf_append(struct buf *b, const void *data, size_t len);	/* data: borrowed */
void buf_puts(struct buf *b, const char *s);			/* s: borrowed */
void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_consume(struct buf *b, size_t n);			/* drop n leading bytes */
char *buf_steal(struct buf *b);					/* returns owned string */
/* Appends the whole file at path; -1 with errno when it cannot be read (b keeps what it had). */
int buf_append_file(struct buf *b, const char *path);

#endif
