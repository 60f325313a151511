/* dlopen of libcurl. The table is filled once and never changes afterwards. */
#include "base/curl_dl.h"

#include <dlfcn.h>
#include <string.h>

static struct curl_api curl_dl_api;	/* written once, before the first request */
static int curl_dl_ready;

#define CURL_DL(field, sym)                                                                        \
	do {                                                                                       \
		void *p = dlsym(h, sym);                                                           \
		if (p == NULL)                                                                     \
			return NULL;                                                               \
		memcpy(&curl_dl_api.field, &p, sizeof(p));                                          \
	} while (0)

static const struct curl_api *
curl_dl_resolve(void *h)
{
	CURL_DL(easy_init, "curl_easy_init");
	CURL_DL(easy_setopt, "curl_easy_setopt");
	CURL_DL(easy_getinfo, "curl_easy_getinfo");
	CURL_DL(easy_cleanup, "curl_easy_cleanup");
	CURL_DL(easy_strerror, "curl_easy_strerror");
	CURL_DL(multi_init, "curl_multi_init");
	CURL_DL(multi_setopt, "curl_multi_setopt");
	CURL_DL(multi_add_handle, "curl_multi_add_handle");
	CURL_DL(multi_remove_handle, "curl_multi_remove_handle");
	CURL_DL(multi_socket_action, "curl_multi_socket_action");
	CURL_DL(multi_info_read, "curl_multi_info_read");
	CURL_DL(multi_assign, "curl_multi_assign");
	CURL_DL(multi_cleanup, "curl_multi_cleanup");
	CURL_DL(slist_append, "curl_slist_append");
	CURL_DL(slist_free_all, "curl_slist_free_all");
	CURL_DL(global_init, "curl_global_init");
	return &curl_dl_api;
}

const struct curl_api *
curl_dl_load(struct err *e)
{
	void *h;

	if (curl_dl_ready)
		return &curl_dl_api;
	h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		h = dlopen("libcurl.so", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL || curl_dl_resolve(h) == NULL) {
		err_set(e, ERR_USAGE, "HTTP (the openai provider, MCP over HTTP) needs libcurl (libcurl4): %s", dlerror());
		return NULL;
	}
	if (curl_dl_api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		err_set(e, ERR_USAGE, "libcurl could not be initialised");
		return NULL;
	}
	curl_dl_ready = 1;
	return &curl_dl_api;
}

const struct curl_api *
curl_dl(void)
{
	return &curl_dl_api;
}
