/*
 * A libcurl multi handle driven by a libev loop (the openai provider, MCP over Streamable HTTP):
 * curl says which sockets to watch and when its timer is due; each watcher runs the socket
 * action and then the owner's after hook, where the owner reads curl's finished transfers.
 * libcurl is the dlopen()ed one (base/curl_dl.h), loaded before curl_ev_init.
 */
#ifndef BASE_CURL_EV_H
#define BASE_CURL_EV_H

#include <curl/curl.h>
#include <ev.h>

struct curl_ev_sock;

struct curl_ev {
	struct ev_loop *loop;
	CURLM *multi;
	ev_timer timer;			/* curl's timeout */
	struct curl_ev_sock *socks;	/* the watched sockets, freed with it */
	void (*after)(void *arg);	/* after each socket or timer action */
	void *arg;
};

/* Makes the multi handle; 0, or -1 when curl cannot. */
int curl_ev_init(struct curl_ev *c, struct ev_loop *loop, void (*after)(void *arg), void *arg);
/* Cleans the multi handle up (its easy handles must be removed first) and stops every watcher. */
void curl_ev_free(struct curl_ev *c);

#endif
