/* A stable error code (base/errcode.h's table) plus a human message; the first error set wins. */
#ifndef BASE_ERR_H
#define BASE_ERR_H

#include "base/errcode.h"

struct err {
	enum err_code code;	/* ERR_NONE while no error is held */
	char msg[512];
};

void err_clear(struct err *e);
/* Fills e unless it already holds an error; e may be NULL. Always returns -1. */
int err_set(struct err *e, enum err_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
