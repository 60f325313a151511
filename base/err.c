/* Error values and the table of codes. */
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>

static const struct err_row {
	const char *kind, *tool;
	int rpc;
	const char *text;
} err_rows[ERR_COUNT] = {
	[ERR_NONE] = { NULL, NULL, 0, "" },
#define ERR_ROW_(id, kind, tool, rpc, text) [ERR_##id] = { kind, tool, rpc, text },
	ERR_CODES(ERR_ROW_)
#undef ERR_ROW_
};

static const struct err_row *
err_row(enum err_code c)
{
	return (unsigned)c < ERR_COUNT ? &err_rows[c] : &err_rows[ERR_INTERNAL];
}

const char *
err_kind(enum err_code c)
{
	const struct err_row *r = err_row(c);

	return r->kind ? r->kind : r->tool;
}

const char *
err_tool(enum err_code c)
{
	const struct err_row *r = err_row(c);

	return r->tool ? r->tool : r->kind;
}

int
err_rpc(enum err_code c)
{
	return err_row(c)->rpc;
}

const char *
err_text(enum err_code c)
{
	return err_row(c)->text;
}

void
err_clear(struct err *e)
{
	e->code = ERR_NONE;
	e->msg[0] = '\0';
}

int
err_set(struct err *e, enum err_code code, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL || e->code != ERR_NONE)
		return -1;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}
