/*
 * libcurl, loaded with dlopen the first time something speaks HTTP (the openai provider, an
 * MCP server over Streamable HTTP). Linking it directly costs every start-up ~30 shared
 * libraries (TLS, HTTP/2, LDAP, ...): milliseconds and megabytes that the replay and builtin
 * providers and stdio MCP servers never use.
 */
#ifndef BASE_CURL_DL_H
#define BASE_CURL_DL_H

#include <curl/curl.h>

#include "base/err.h"

struct curl_api {
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
	CURLMcode (*multi_add_handle)(CURLM *, CURL *);
	CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
	CURLMcode (*multi_socket_action)(CURLM *, curl_socket_t, int, int *);
	CURLMsg *(*multi_info_read)(CURLM *, int *);
	CURLMcode (*multi_assign)(CURLM *, curl_socket_t, void *);
	CURLMcode (*multi_cleanup)(CURLM *);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	CURLcode (*global_init)(long);
};

/* Loads libcurl once (and runs its global init); NULL with e when it is not installed. */
const struct curl_api *curl_dl_load(struct err *e);
/* The loaded table; only valid after curl_dl_load succeeded. */
const struct curl_api *curl_dl(void);

#endif
