/*
 * libedit, loaded with dlopen when `acp-agent chat` runs on a terminal. Linking it would cost
 * every agent start-up four more shared libraries (libedit, libtinfo, libbsd, libmd) that only a
 * person's terminal needs; without it the chat reads plain lines.
 */
#ifndef BASE_EDIT_DL_H
#define BASE_EDIT_DL_H

#include <stdio.h>

#include <histedit.h>

#include "base/err.h"

struct edit_api {
	EditLine *(*el_init)(const char *, FILE *, FILE *, FILE *);
	void (*el_end)(EditLine *);
	void (*el_reset)(EditLine *);
	const char *(*el_gets)(EditLine *, int *);
	int (*el_set)(EditLine *, int, ...);
	int (*el_get)(EditLine *, int, ...);
	const LineInfo *(*el_line)(EditLine *);
	int (*el_insertstr)(EditLine *, const char *);
	void (*el_deletestr)(EditLine *, int);
	void (*el_resize)(EditLine *);
	int (*el_cursor)(EditLine *, int);
	History *(*history_init)(void);
	void (*history_end)(History *);
	int (*history)(History *, HistEvent *, int, ...);
};

/* Loads libedit once; NULL with e when it is not installed. */
const struct edit_api *edit_dl_load(struct err *e);

#endif
