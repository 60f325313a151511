/* dlopen of libedit (base/edit_dl.h). The table is filled once and never changes afterwards. */
#include "base/edit_dl.h"

#include <dlfcn.h>
#include <string.h>

static struct edit_api edit_dl_api;	/* written once, before the chat's first line */
static int edit_dl_ready;

#define EDIT_DL(field, sym)                                                                        \
	do {                                                                                       \
		void *p = dlsym(h, sym);                                                           \
		if (p == NULL)                                                                     \
			return NULL;                                                               \
		memcpy(&edit_dl_api.field, &p, sizeof(p));                                          \
	} while (0)

static const struct edit_api *
edit_dl_resolve(void *h)
{
	EDIT_DL(el_init, "el_init");
	EDIT_DL(el_end, "el_end");
	EDIT_DL(el_reset, "el_reset");
	EDIT_DL(el_gets, "el_gets");
	EDIT_DL(el_set, "el_set");
	EDIT_DL(el_get, "el_get");
	EDIT_DL(el_line, "el_line");
	EDIT_DL(el_insertstr, "el_insertstr");
	EDIT_DL(el_deletestr, "el_deletestr");
	EDIT_DL(el_resize, "el_resize");
	EDIT_DL(el_cursor, "el_cursor");
	EDIT_DL(history_init, "history_init");
	EDIT_DL(history_end, "history_end");
	EDIT_DL(history, "history");
	return &edit_dl_api;
}

const struct edit_api *
edit_dl_load(struct err *e)
{
	void *h;

	if (edit_dl_ready)
		return &edit_dl_api;
	h = dlopen("libedit.so.2", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		h = dlopen("libedit.so.0", RTLD_NOW | RTLD_LOCAL);	/* Fedora's name, the same API */
	if (h == NULL)
		h = dlopen("libedit.so", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL || edit_dl_resolve(h) == NULL) {
		err_set(e, ERR_USAGE, "line editing needs libedit (libedit2): %s", dlerror());
		return NULL;
	}
	edit_dl_ready = 1;
	return &edit_dl_api;
}
