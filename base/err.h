/* A stable error code plus a human message; the first error set wins. */
#ifndef BASE_ERR_H
#define BASE_ERR_H

struct err {
	const char *code;	/* static string: SPEC code (NOT_RESUMABLE, ...) or ACP kind */
	char msg[512];
};

void err_clear(struct err *e);
/* Fills e unless it already holds an error; e may be NULL. Always returns -1. */
int err_set(struct err *e, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
