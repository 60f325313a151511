/* curl's multi socket interface on libev. */
#include "base/curl_ev.h"

#include <stdlib.h>

#include "base/curl_dl.h"
#include "base/xmalloc.h"

#define CURLAPI curl_dl()

struct curl_ev_sock {
	ev_io io;			/* first member */
	struct curl_ev *c;
	curl_socket_t fd;
	struct curl_ev_sock *prev, *next;
};

static void
curl_ev_sock_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct curl_ev_sock *s = (struct curl_ev_sock *)w;
	struct curl_ev *c = s->c;	/* s may be freed inside the socket action */
	int running, flags = 0;

	(void)loop;
	if (revents & EV_READ)
		flags |= CURL_CSELECT_IN;
	if (revents & EV_WRITE)
		flags |= CURL_CSELECT_OUT;
	CURLAPI->multi_socket_action(c->multi, s->fd, flags, &running);
	c->after(c->arg);
}

static void
curl_ev_unlink(struct curl_ev *c, struct curl_ev_sock *s)
{
	ev_io_stop(c->loop, &s->io);
	if (s->prev)
		s->prev->next = s->next;
	else
		c->socks = s->next;
	if (s->next)
		s->next->prev = s->prev;
	free(s);
}

static int
curl_ev_socket_fn(CURL *easy, curl_socket_t fd, int what, void *userp, void *sockp)
{
	struct curl_ev *c = userp;
	struct curl_ev_sock *s = sockp;

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (s) {
			curl_ev_unlink(c, s);
			CURLAPI->multi_assign(c->multi, fd, NULL);
		}
		return 0;
	}
	if (s == NULL) {
		s = xcalloc(1, sizeof(*s));
		s->c = c;
		s->fd = fd;
		s->next = c->socks;
		if (c->socks)
			c->socks->prev = s;
		c->socks = s;
		CURLAPI->multi_assign(c->multi, fd, s);
	} else {
		ev_io_stop(c->loop, &s->io);
	}
	ev_io_init(&s->io, curl_ev_sock_cb, fd,
	    (what & CURL_POLL_IN ? EV_READ : 0) | (what & CURL_POLL_OUT ? EV_WRITE : 0));
	ev_io_start(c->loop, &s->io);
	return 0;
}

static void
curl_ev_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct curl_ev *c = w->data;
	int running;

	(void)loop;
	(void)revents;
	CURLAPI->multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	c->after(c->arg);
}

static int
curl_ev_timer_fn(CURLM *multi, long timeout_ms, void *userp)
{
	struct curl_ev *c = userp;

	(void)multi;
	ev_timer_stop(c->loop, &c->timer);
	if (timeout_ms >= 0) {
		ev_timer_set(&c->timer, (double)timeout_ms / 1000.0, 0.);
		ev_timer_start(c->loop, &c->timer);
	}
	return 0;
}

int
curl_ev_init(struct curl_ev *c, struct ev_loop *loop, void (*after)(void *arg), void *arg)
{
	c->loop = loop;
	c->socks = NULL;
	c->after = after;
	c->arg = arg;
	ev_timer_init(&c->timer, curl_ev_timer_cb, 0., 0.);
	c->timer.data = c;
	if ((c->multi = CURLAPI->multi_init()) == NULL)
		return -1;
	CURLAPI->multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, curl_ev_socket_fn);
	CURLAPI->multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	CURLAPI->multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, curl_ev_timer_fn);
	CURLAPI->multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	return 0;
}

void
curl_ev_free(struct curl_ev *c)
{
	if (c->multi)
		CURLAPI->multi_cleanup(c->multi);	/* may still call the socket and timer functions */
	c->multi = NULL;
	ev_timer_stop(c->loop, &c->timer);
	for (struct curl_ev_sock *s = c->socks, *next; s != NULL; s = next) {
		next = s->next;
		ev_io_stop(c->loop, &s->io);
		free(s);
	}
	c->socks = NULL;
}
