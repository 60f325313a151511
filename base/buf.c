/* Growable byte buffer. */
#include "base/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xmalloc.h"

void
buf_init(struct buf *b)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b);
}

void
buf_reserve(struct buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;

	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap *= 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
	b->data[b->len] = '\0';	/* a fresh buffer's bytes are NUL-terminated too (buf.h) */
}

void
buf_append(struct buf *b, const void *data, size_t len)
{
	buf_reserve(b, len);
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

void
buf_puts(struct buf *b, const char *s)
{
	buf_append(b, s, strlen(s));
}

void
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap, aq;
	int n;

	va_start(ap, fmt);
	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n > 0) {
		buf_reserve(b, (size_t)n);
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, aq);
		b->len += (size_t)n;
	}
	va_end(aq);
}

void
buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		if (b->data)
			b->data[0] = '\0';
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

char *
buf_steal(struct buf *b)
{
	char *s = b->data ? b->data : xstrdup("");

	buf_init(b);
	return s;
}

int
buf_append_file(struct buf *b, const char *path)
{
	FILE *f = fopen(path, "rb");
	size_t start = b->len, n;
	char chunk[65536];

	if (f == NULL)
		return -1;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_append(b, chunk, n);
	if (ferror(f)) {
		fclose(f);
		b->len = start;
		if (b->data)
			b->data[start] = '\0';
		errno = EIO;
		return -1;
	}
	fclose(f);
	return 0;
}
