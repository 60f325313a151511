/* Error values. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>

void
err_clear(struct err *e)
{
	e->code = NULL;
	e->msg[0] = '\0';
}

int
err_set(struct err *e, const char *code, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL || e->code != NULL)
		return -1;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}
