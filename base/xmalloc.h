/* Aborting allocators: memory exhaustion is fatal, so callers never check. */
#ifndef BASE_XMALLOC_H
#define BASE_XMALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);			/* returns owned memory */
void *xcalloc(size_t n, size_t size);		/* returns owned, zeroed memory */
void *xrealloc(void *ptr, size_t size);		/* takes ptr, returns owned memory */
char *xstrdup(const char *s);			/* s: borrowed; returns owned copy */
char *xstrndup(const char *s, size_t n);	/* s: borrowed; returns owned copy */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Gives the free pages of every malloc arena back to the system (after a big load or a close:
 * what a session held is not kept by the process); a few ms at most, never on a hot path. */
void xmalloc_trim(void);

#endif
