/*
 * MCP over Streamable HTTP (mcp/http.c) against a small HTTP server in the test: threads on
 * 127.0.0.1:0 that record each request (method, path, headers, body) and answer from the test's
 * handler. The transport runs on the test's own loop; every path to gone and to a synthesized
 * error is driven here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/xmalloc.h"
#include "mcp/http.h"
#include "tests/helpers.h"

/* ---- the server ---- */

#define SRV_MAX 64

struct srv_req {
	char method[16], path[256];
	char *head;		/* header lines, each ending in "\r\n" */
	char *body;
	json_t *msg;		/* the body as JSON, or NULL */
	const char *rpc;	/* its method, "response", or "" */
};

struct srv;
/* Answers r on fd (the connection closes when it returns). */
typedef void srv_fn(struct srv *s, const struct srv_req *r, int fd);

struct srv {
	int lfd, port;
	char url[96];
	pthread_t acceptor;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct srv_req reqs[SRV_MAX];
	int nreq;
	char order[2048];	/* "+rpc" when a request arrives, "-rpc" after its answer; handlers add more */
	pthread_t threads[SRV_MAX];
	int fds[SRV_MAX];
	int nconn;
	int stopping;
	int notified;		/* notifications/roots/list_changed arrived */
	int peer_closed;
	int variant;		/* which failure a looped test's handler plays */
	srv_fn *fn;
};

static void
srv_note(struct srv *s, char sign, const char *rpc)
{
	size_t n = strlen(s->order);

	snprintf(s->order + n, sizeof(s->order) - n, "%c%s ", sign, rpc);
}

static void
srv_write(int fd, const char *data, size_t len)
{
	while (len) {
		ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
		if (n <= 0)
			return;
		data += n;
		len -= (size_t)n;
	}
}

static void
srv_puts(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
srv_puts(int fd, const char *fmt, ...)
{
	char tmp[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	ck_assert_int_lt(n, (int)sizeof(tmp));
	srv_write(fd, tmp, (size_t)n);
}

/* A whole reply. extra: header lines ending in "\r\n", or "". */
static void
srv_reply(int fd, int status, const char *ctype, const char *extra, const char *body)
{
	srv_puts(fd, "HTTP/1.1 %d X\r\n%s%s%s%sContent-Length: %zu\r\nConnection: close\r\n\r\n", status,
	    ctype ? "Content-Type: " : "", ctype ? ctype : "", ctype ? "\r\n" : "", extra, strlen(body));
	srv_write(fd, body, strlen(body));
}

/* The head of an SSE reply; events follow with srv_puts, the stream ends when the handler returns. */
static void
srv_sse(int fd, const char *extra)
{
	srv_puts(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n%s"
	    "Connection: close\r\n\r\n", extra);
}

/* Blocks until the client closes the connection (or the server stops). */
static void
srv_hold(struct srv *s, int fd)
{
	char c[256];

	while (recv(fd, c, sizeof(c), 0) > 0)
		;
	pthread_mutex_lock(&s->mu);
	s->peer_closed++;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* A result for r's request id: {"jsonrpc":"2.0","id":<id>,"result":{"ok":"<rpc>"}}; owned. */
static char *
srv_result(const struct srv_req *r)
{
	json_t *j = json_pack("{s:s, s:O, s:{s:s}}", "jsonrpc", "2.0", "id", json_object_get(r->msg, "id"), "result",
	    "ok", r->rpc);
	char *out = json_dumps(j, JSON_COMPACT);

	json_decref(j);
	return out;
}

static void
srv_reply_result(int fd, const struct srv_req *r, const char *extra)
{
	char *body = srv_result(r);

	srv_puts(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\n"
	    "Connection: close\r\n\r\n%s", extra, strlen(body), body);
	free(body);
}

/* What a plain server does: initialize with session "sess-1", 202, a result, GET 405, DELETE 200. */
static void
srv_default(struct srv *s, const struct srv_req *r, int fd)
{
	(void)s;
	if (strcmp(r->method, "GET") == 0)
		srv_reply(fd, 405, NULL, "", "");
	else if (strcmp(r->method, "DELETE") == 0)
		srv_reply(fd, 200, NULL, "", "");
	else if (strcmp(r->rpc, "initialize") == 0)
		srv_reply_result(fd, r, "MCP-Session-Id: sess-1\r\n");
	else if (json_object_get(r->msg, "id") == NULL || strcmp(r->rpc, "response") == 0)
		srv_reply(fd, 202, NULL, "", "");
	else
		srv_reply_result(fd, r, "");
}

/* The value of header name in r (case-insensitive), copied into out; NULL when absent. */
static const char *
srv_hdr(const struct srv_req *r, const char *name, char *out, size_t size)
{
	size_t n = strlen(name);

	for (const char *p = r->head; p && *p;) {
		const char *e = strstr(p, "\r\n");
		if (e == NULL)
			break;
		if ((size_t)(e - p) > n && strncasecmp(p, name, n) == 0 && p[n] == ':') {
			const char *v = p + n + 1;
			while (*v == ' ')
				v++;
			snprintf(out, size, "%.*s", (int)(e - v), v);
			return out;
		}
		p = e + 2;
	}
	return NULL;
}

struct srv_conn {
	struct srv *s;
	int fd;
};

static void *
srv_conn_main(void *arg)
{
	struct srv_conn *c = arg;
	struct srv *s = c->s;
	struct buf in;
	char chunk[65536];
	char *end;
	size_t clen = 0;
	struct srv_req r;

	buf_init(&in);
	memset(&r, 0, sizeof(r));
	while ((end = in.data ? strstr(in.data, "\r\n\r\n") : NULL) == NULL) {
		ssize_t n = recv(c->fd, chunk, sizeof(chunk), 0);
		if (n <= 0)
			goto out;
		buf_append(&in, chunk, (size_t)n);
	}
	size_t hlen = (size_t)(end - in.data) + 4;
	const char *cl = strcasestr(in.data, "\r\nContent-Length:");
	if (cl && cl < end)
		clen = strtoul(cl + 17, NULL, 10);
	while (in.len < hlen + clen) {
		ssize_t n = recv(c->fd, chunk, sizeof(chunk), 0);
		if (n <= 0)
			goto out;
		buf_append(&in, chunk, (size_t)n);
	}
	sscanf(in.data, "%15s %255s", r.method, r.path);
	const char *line2 = strstr(in.data, "\r\n") + 2;
	r.head = xstrndup(line2, (size_t)(end + 2 - line2));
	r.body = xstrndup(in.data + hlen, clen);
	r.msg = clen ? json_loads(r.body, 0, NULL) : NULL;
	r.rpc = json_string_value(json_object_get(r.msg, "method"));
	if (r.rpc == NULL)
		r.rpc = r.msg ? "response" : "";
	pthread_mutex_lock(&s->mu);
	if (s->nreq < SRV_MAX)
		s->reqs[s->nreq++] = r;
	srv_note(s, '+', *r.rpc ? r.rpc : r.method);
	if (strcmp(r.rpc, "notifications/roots/list_changed") == 0)
		s->notified = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	s->fn(s, &r, c->fd);
	pthread_mutex_lock(&s->mu);
	srv_note(s, '-', *r.rpc ? r.rpc : r.method);
	pthread_mutex_unlock(&s->mu);
out:
	buf_free(&in);
	shutdown(c->fd, SHUT_WR);
	free(c);
	return NULL;
}

static void *
srv_accept_main(void *arg)
{
	struct srv *s = arg;

	for (;;) {
		int fd = accept(s->lfd, NULL, NULL);
		if (fd < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		pthread_mutex_lock(&s->mu);
		if (s->stopping || s->nconn == SRV_MAX) {
			pthread_mutex_unlock(&s->mu);
			close(fd);
			continue;
		}
		struct srv_conn *c = xcalloc(1, sizeof(*c));
		c->s = s;
		c->fd = fd;
		s->fds[s->nconn] = fd;
		pthread_create(&s->threads[s->nconn], NULL, srv_conn_main, c);
		s->nconn++;
		pthread_mutex_unlock(&s->mu);
	}
}

static void
srv_start(struct srv *s, srv_fn *fn)
{
	struct sockaddr_in a = { 0 };
	socklen_t alen = sizeof(a);

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->fn = fn ? fn : srv_default;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(s->lfd, 64), 0);
	ck_assert_int_eq(getsockname(s->lfd, (struct sockaddr *)&a, &alen), 0);
	s->port = ntohs(a.sin_port);
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d/mcp", s->port);
	pthread_create(&s->acceptor, NULL, srv_accept_main, s);
}

/* Stops accepting; the port then refuses connections. Connections under way go on. */
static void
srv_stop_listening(struct srv *s)
{
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	pthread_mutex_unlock(&s->mu);
	shutdown(s->lfd, SHUT_RDWR);
	pthread_join(s->acceptor, NULL);
	close(s->lfd);
	s->lfd = -1;
}

static void
srv_free(struct srv *s)
{
	if (s->lfd >= 0)
		srv_stop_listening(s);
	for (int i = 0; i < s->nconn; i++) {
		shutdown(s->fds[i], SHUT_RDWR);
		pthread_join(s->threads[i], NULL);
		close(s->fds[i]);
	}
	for (int i = 0; i < s->nreq; i++) {
		free(s->reqs[i].head);
		free(s->reqs[i].body);
		json_decref(s->reqs[i].msg);
	}
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
}

static int
srv_count(struct srv *s)
{
	pthread_mutex_lock(&s->mu);
	int n = s->nreq;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* The nth (0-based) request with this HTTP method and JSON-RPC method ("" for any); NULL if none. */
static const struct srv_req *
srv_find(struct srv *s, const char *method, const char *rpc, int nth)
{
	const struct srv_req *found = NULL;

	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->nreq && found == NULL; i++)
		if (strcmp(s->reqs[i].method, method) == 0 && (*rpc == '\0' || strcmp(s->reqs[i].rpc, rpc) == 0) &&
		    nth-- == 0)
			found = &s->reqs[i];
	pthread_mutex_unlock(&s->mu);
	return found;
}

/* Waits (in the handler's thread) until *flag is set; 0 after 5 s without. */
static int
srv_wait_flag(struct srv *s, int *flag)
{
	struct timespec ts;
	int ok;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	pthread_mutex_lock(&s->mu);
	while (!*flag && pthread_cond_timedwait(&s->cv, &s->mu, &ts) == 0)
		;
	ok = *flag;
	pthread_mutex_unlock(&s->mu);
	return ok;
}

/* ---- the client side ---- */

struct tc {
	struct ev_loop *loop;
	struct mcp_transport *t;
	struct srv *s;
	json_t *msgs;		/* copies of the messages, in order */
	char gone[256];
	int ngone;
	int expired;		/* the last gone said the session ended */
	int free_on_message;
	int want;
	const char *want_log;	/* until_log: a line containing this was logged */
	struct buf log;		/* what was captured so far */
	int (*until)(struct tc *);
	ev_timer poll;
};

static void
tc_message(void *arg, const json_t *m)
{
	struct tc *c = arg;

	json_array_append_new(c->msgs, json_deep_copy(m));
	if (c->free_on_message) {
		c->t->ops->free(c->t);
		c->t = NULL;
	}
}

static void
tc_gone(void *arg, const char *reason, int expired)
{
	struct tc *c = arg;

	snprintf(c->gone, sizeof(c->gone), "%s", reason);
	c->expired = expired;
	c->ngone++;
}

static void
tc_poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct tc *c = w->data;

	(void)revents;
	if (c->until(c))
		ev_break(loop, EVBREAK_ALL);
}

/* Runs the loop until until(c) holds; fails after 10 s without. */
static void
tc_run(struct tc *c, int (*until)(struct tc *), int want)
{
	ev_tstamp start = ev_time();

	c->until = until;
	c->want = want;
	ev_timer_init(&c->poll, tc_poll_cb, 0.002, 0.002);
	c->poll.data = c;
	ev_timer_start(c->loop, &c->poll);
	while (!until(c) && ev_time() - start < 10)
		ev_run(c->loop, EVRUN_ONCE);
	ev_timer_stop(c->loop, &c->poll);
	ck_assert_msg(until(c), "the awaited state never came");
}

static int
until_msgs(struct tc *c)
{
	return (int)json_array_size(c->msgs) >= c->want || c->ngone;
}

static int
until_gone(struct tc *c)
{
	return c->ngone > 0;
}

static int
until_reqs(struct tc *c)
{
	return srv_count(c->s) >= c->want;
}

/* Capturing: the lines so far go to c->log and the capture goes on. */
static int
until_log(struct tc *c)
{
	char *l = test_log_capture_stop();

	buf_puts(&c->log, l);
	free(l);
	test_log_capture_start();
	return strstr(c->log.data ? c->log.data : "", c->want_log) != NULL;
}

static void
tc_wait_log(struct tc *c, const char *text)
{
	c->want_log = text;
	tc_run(c, until_log, 0);
}

static int
until_peer_closed(struct tc *c)
{
	pthread_mutex_lock(&c->s->mu);
	int n = c->s->peer_closed;
	pthread_mutex_unlock(&c->s->mu);
	return n >= c->want;
}

static void
tc_open(struct tc *c, struct srv *s, const json_t *headers)
{
	struct mcp_transport_cb cb = { tc_message, tc_gone, c };
	struct err e;

	memset(c, 0, sizeof(*c));
	c->loop = ev_loop_new(0);
	c->s = s;
	c->msgs = json_array();
	err_clear(&e);
	c->t = mcp_http_new(c->loop, "srv", s->url, headers, &cb, &e);
	ck_assert_msg(c->t != NULL, "%s", e.msg);
}

static void
tc_free(struct tc *c)
{
	if (c->t)
		c->t->ops->free(c->t);
	json_decref(c->msgs);
	buf_free(&c->log);
	ev_loop_destroy(c->loop);
	log_set_level(LOG_WARN);
}

static void
tc_send(struct tc *c, const char *json)
{
	json_t *m = json_loads(json, 0, NULL);

	ck_assert_ptr_nonnull(m);
	c->t->ops->send(c->t, m);
	json_decref(m);
}

static const char init_msg[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
    "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"acp-agent\"}}}";
static const char initialized_msg[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";
static const char list_msg[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}";
static const char call_msg[] =
    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}";

/* initialize and its answer: the session is up. */
static void
tc_init(struct tc *c)
{
	tc_send(c, init_msg);
	tc_run(c, until_msgs, 1);
	ck_assert_int_eq(c->ngone, 0);
}

/* The compact text of message i. */
static char *
tc_msg(struct tc *c, size_t i)
{
	json_t *m = json_array_get(c->msgs, i);

	ck_assert_ptr_nonnull(m);
	return json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS);
}

static void
assert_msg(struct tc *c, size_t i, const char *want)
{
	char *got = tc_msg(c, i);

	ck_assert_str_eq(got, want);
	free(got);
}

static void
assert_hdr(const struct srv_req *r, const char *name, const char *want)
{
	char v[512];
	const char *got;

	ck_assert_ptr_nonnull(r);
	got = srv_hdr(r, name, v, sizeof(v));
	if (want == NULL) {
		ck_assert_msg(got == NULL, "%s %s carries %s: %s", r->method, r->rpc, name, got ? got : "");
		return;
	}
	ck_assert_msg(got != NULL, "%s %s lacks %s", r->method, r->rpc, name);
	ck_assert_str_eq(got, want);
}

/* ---- tests ---- */

START_TEST(http_json_reply_keeps_the_session_and_sends_the_version)
{
	struct srv s;
	struct tc c;
	char *log;

	log_set_level(LOG_DEBUG);
	srv_start(&s, NULL);
	tc_open(&c, &s, NULL);
	test_log_capture_start();
	tc_init(&c);
	assert_msg(&c, 0, "{\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{\"ok\":\"initialize\"}}");
	c.t->ops->set_version(c.t, "2025-11-25");
	tc_send(&c, initialized_msg);
	tc_send(&c, list_msg);
	tc_run(&c, until_msgs, 2);
	assert_msg(&c, 1, "{\"id\":2,\"jsonrpc\":\"2.0\",\"result\":{\"ok\":\"tools/list\"}}");
	tc_wait_log(&c, "no GET stream (HTTP 405)");
	c.t->ops->set_version(c.t, "bad version");	/* not a header value: the old one stays */
	tc_send(&c, call_msg);
	tc_run(&c, until_msgs, 3);
	ck_assert_int_eq(c.ngone, 0);
	ck_assert_int_eq((int)json_array_size(c.msgs), 3);	/* the notification's 202 has none */

	const struct srv_req *init = srv_find(&s, "POST", "initialize", 0);
	assert_hdr(init, "Accept", "application/json, text/event-stream");
	assert_hdr(init, "Content-Type", "application/json");
	assert_hdr(init, "MCP-Session-Id", NULL);
	assert_hdr(init, "MCP-Protocol-Version", NULL);
	json_t *sent = json_loads(init_msg, 0, NULL);
	ck_assert(json_equal(init->msg, sent));
	json_decref(sent);
	ck_assert_str_eq(init->path, "/mcp");
	const char *names[] = { "notifications/initialized", "tools/list", "tools/call" };
	for (int i = 0; i < 3; i++) {
		const struct srv_req *r = srv_find(&s, "POST", names[i], 0);
		assert_hdr(r, "MCP-Session-Id", "sess-1");
		assert_hdr(r, "MCP-Protocol-Version", "2025-11-25");
		assert_hdr(r, "Accept", "application/json, text/event-stream");
	}
	const struct srv_req *get = srv_find(&s, "GET", "", 0);
	assert_hdr(get, "Accept", "text/event-stream");
	assert_hdr(get, "MCP-Session-Id", "sess-1");
	assert_hdr(get, "MCP-Protocol-Version", "2025-11-25");
	log = test_log_capture_stop();
	free(log);
	ck_assert_int_eq(srv_count(&s), 5);	/* one GET only */
	struct buf tail;
	buf_init(&tail);
	c.t->ops->stderr_tail(c.t, &tail);
	ck_assert_str_eq(tail.data, "");
	buf_free(&tail);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

static void
srv_sse_call(struct srv *s, const struct srv_req *r, int fd)
{
	char *res;

	if (strcmp(r->rpc, "tools/call") != 0) {
		srv_default(s, r, fd);
		return;
	}
	res = srv_result(r);
	srv_sse(fd, "");
	srv_puts(fd, "id: p0\ndata:\n\n");	/* a priming event: no message */
	srv_puts(fd, ": keep-alive\n\nevent: message\nda");
	srv_puts(fd, "ta: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
	    "\"params\":{\"progress\":1}}\r\n\r\n");
	srv_puts(fd, "id: p1\ndata: not json\n\n");
	srv_puts(fd, "data: [1,{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}]\n\n");
	srv_puts(fd, "event: message\ndata: %s\n\n", res);
	free(res);
}

START_TEST(http_sse_reply_carries_notifications_before_the_response)
{
	struct srv s;
	struct tc c;

	log_set_level(LOG_INFO);
	srv_start(&s, srv_sse_call);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	tc_send(&c, call_msg);
	tc_run(&c, until_msgs, 4);
	/* The bad data line and the batch's non-object are skipped; the rest keeps its order. */
	assert_msg(&c, 1, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}");
	assert_msg(&c, 2, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}");
	assert_msg(&c, 3, "{\"id\":3,\"jsonrpc\":\"2.0\",\"result\":{\"ok\":\"tools/call\"}}");
	ck_assert_int_eq(c.ngone, 0);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

/* The notification's 202 comes late: the request after it must not arrive before. */
static void
srv_slow_202(struct srv *s, const struct srv_req *r, int fd)
{
	if (strcmp(r->rpc, "notifications/initialized") == 0) {
		usleep(150 * 1000);
		/* Noted before the 202 leaves: once it is out, the next request may come at once. */
		pthread_mutex_lock(&s->mu);
		srv_note(s, '!', r->rpc);
		pthread_mutex_unlock(&s->mu);
	}
	srv_default(s, r, fd);
}

START_TEST(http_a_notification_holds_the_next_message_until_its_202)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_slow_202);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	tc_send(&c, initialized_msg);
	tc_send(&c, list_msg);
	tc_run(&c, until_msgs, 2);
	pthread_mutex_lock(&s.mu);
	const char *answered = strstr(s.order, "!notifications/initialized"), *next = strstr(s.order, "+tools/list");
	ck_assert_msg(answered && next && answered < next, "%s", s.order);
	pthread_mutex_unlock(&s.mu);
	ck_assert_int_eq((int)json_array_size(c.msgs), 2);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

/* tools/call is answered only once a later notification has arrived: a request holds no notification. */
static void
srv_call_waits_for_a_notification(struct srv *s, const struct srv_req *r, int fd)
{
	if (strcmp(r->rpc, "tools/call") == 0) {
		int seen = srv_wait_flag(s, &s->notified);
		srv_puts(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
		    "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"notified\":%s}}", seen ? "true" : "false");
		return;
	}
	srv_default(s, r, fd);
}

START_TEST(http_a_slow_request_does_not_hold_a_notification)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_call_waits_for_a_notification);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	tc_send(&c, call_msg);
	tc_send(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"}");
	tc_run(&c, until_msgs, 2);
	assert_msg(&c, 1, "{\"id\":3,\"jsonrpc\":\"2.0\",\"result\":{\"notified\":true}}");
	tc_free(&c);
	srv_free(&s);
}
END_TEST

START_TEST(http_acp_headers_go_on_every_request_and_never_into_the_log)
{
	struct srv s;
	struct tc c;
	json_t *h = json_pack("[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}]", "name", "Authorization", "value",
	    "Bearer s3cret-token", "name", "X-Empty", "value", "", "name", "accept", "value", "x/s3cret");
	char *log;

	log_set_level(LOG_DEBUG);
	srv_start(&s, NULL);
	test_log_capture_start();
	tc_open(&c, &s, h);
	tc_init(&c);
	tc_send(&c, initialized_msg);
	tc_send(&c, list_msg);
	tc_run(&c, until_msgs, 2);
	tc_run(&c, until_reqs, 4);
	c.t->ops->close(c.t);
	tc_run(&c, until_gone, 0);
	ck_assert_str_eq(c.gone, "closed");
	log = test_log_capture_stop();
	ck_assert_int_eq(srv_count(&s), 5);
	for (int i = 0; i < 5; i++) {
		assert_hdr(&s.reqs[i], "Authorization", "Bearer s3cret-token");
		assert_hdr(&s.reqs[i], "X-Empty", "");
		ck_assert_ptr_null(strstr(s.reqs[i].head, "x/s3cret"));
	}
	ck_assert_ptr_nonnull(srv_find(&s, "DELETE", "", 0));
	ck_assert_ptr_nonnull(strstr(log, "header accept is the transport's own; ignored"));
	ck_assert_ptr_nonnull(strstr(log, "DELETE"));
	ck_assert_msg(strstr(log, "s3cret") == NULL, "a header value was logged: %s", log);
	free(log);
	json_decref(h);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

static void
srv_list_404(struct srv *s, const struct srv_req *r, int fd)
{
	if (strcmp(r->rpc, "tools/list") == 0)
		srv_reply(fd, 404, "text/plain", "", "no such session");
	else
		srv_default(s, r, fd);
}

START_TEST(http_404_with_a_session_is_gone_session_expired)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_list_404);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	tc_send(&c, list_msg);
	tc_run(&c, until_gone, 0);
	ck_assert_str_eq(c.gone, "session expired");
	ck_assert_int_eq(c.expired, 1);		/* the owner begins a new session at once */
	ck_assert_int_eq((int)json_array_size(c.msgs), 1);
	/* Dead: a send is dropped, close reports nothing more. */
	tc_send(&c, call_msg);
	c.t->ops->close(c.t);
	ev_run(c.loop, EVRUN_NOWAIT);
	ck_assert_int_eq(c.ngone, 1);
	ck_assert_int_eq(srv_count(&s), 2);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

static void
srv_no_session(struct srv *s, const struct srv_req *r, int fd)
{
	if (strcmp(r->rpc, "initialize") == 0)
		srv_reply_result(fd, r, "");
	else
		srv_list_404(s, r, fd);
}

START_TEST(http_404_without_a_session_is_an_error_response)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_no_session);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	tc_send(&c, list_msg);
	tc_run(&c, until_msgs, 2);
	assert_msg(&c, 1, "{\"error\":{\"code\":-32603,\"message\":\"HTTP 404\"},\"id\":2,\"jsonrpc\":\"2.0\"}");
	ck_assert_int_eq(c.ngone, 0);
	assert_hdr(srv_find(&s, "POST", "tools/list", 0), "MCP-Session-Id", NULL);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

static void
srv_errors(struct srv *s, const struct srv_req *r, int fd)
{
	if (strcmp(r->rpc, "tools/list") == 0)
		srv_reply(fd, 500, "application/json", "",
		    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32000,\"message\":\"boom\"}}");
	else if (strcmp(r->rpc, "notifications/initialized") == 0)
		srv_reply(fd, 400, "text/plain", "", "bad");
	else
		srv_default(s, r, fd);
}

START_TEST(http_500_answers_the_request_with_an_error_and_the_transport_lives_on)
{
	struct srv s;
	struct tc c;
	char *log;

	log_set_level(LOG_DEBUG);
	srv_start(&s, srv_errors);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	test_log_capture_start();
	tc_send(&c, initialized_msg);	/* 400: logged, nothing reported, no GET stream */
	tc_send(&c, list_msg);
	tc_run(&c, until_msgs, 2);
	assert_msg(&c, 1, "{\"error\":{\"code\":-32603,\"data\":{\"code\":-32000,\"message\":\"boom\"},"
	    "\"message\":\"HTTP 500\"},\"id\":2,\"jsonrpc\":\"2.0\"}");
	tc_send(&c, call_msg);
	tc_run(&c, until_msgs, 3);
	assert_msg(&c, 2, "{\"id\":3,\"jsonrpc\":\"2.0\",\"result\":{\"ok\":\"tools/call\"}}");
	log = test_log_capture_stop();
	ck_assert_ptr_nonnull(strstr(log, "notifications/initialized: HTTP 400"));
	ck_assert_ptr_nonnull(strstr(log, "tools/list: HTTP 500"));
	free(log);
	ck_assert_int_eq(c.ngone, 0);
	ck_assert_ptr_null(srv_find(&s, "GET", "", 0));
	tc_free(&c);
	srv_free(&s);
}
END_TEST

/* The ways initialize fails: each is gone, with the reason. */
static void
srv_init_fails(struct srv *s, const struct srv_req *r, int fd)
{
	(void)s;
	(void)r;
	switch (s->variant) {
	case 0:
		srv_reply(fd, 401, "application/json", "",
		    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32001,\"message\":\"invalid token\"}}");
		break;
	case 1:
		srv_reply(fd, 200, "application/json", "",
		    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}");
		break;
	case 2:
		srv_puts(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMCP-Session-Id: has space\r\n"
		    "Connection: close\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}");
		break;
	case 3:
		srv_sse(fd, "");
		srv_puts(fd, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n");
		break;
	case 4:
		srv_reply(fd, 200, "application/json", "", "{\"jsonrpc\": ");
		break;
	case 5:
		srv_reply(fd, 503, "text/plain", "", "down");
		break;
	}
}

static const char *const init_fail_reasons[] = {
	"HTTP 401: invalid token",
	"no response in the reply (HTTP 200)",
	"the server sent an invalid MCP-Session-Id",
	"no response in the reply (HTTP 200)",
	"the reply is not JSON (HTTP 200)",
	"HTTP 503",
};

START_TEST(http_initialize_failing_is_gone)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_init_fails);
	s.variant = _i;
	tc_open(&c, &s, NULL);
	tc_send(&c, init_msg);
	tc_run(&c, until_gone, 0);
	ck_assert_str_eq(c.gone, init_fail_reasons[_i]);
	/* What came before the failure is still delivered; never the failed initialize's answer. */
	for (size_t i = 0; i < json_array_size(c.msgs); i++)
		ck_assert_ptr_null(json_object_get(json_array_get(c.msgs, i), "id"));
	ck_assert_int_eq(c.ngone, 1);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

/* A notification whose POST gets nothing back (the server closes it): only logged, the transport
 * stays (a lost answer to a notification is not a lost server); a request then works. */
static void
srv_drop_notifications(struct srv *s, const struct srv_req *r, int fd)
{
	if (strncmp(r->rpc, "notifications/", 14) == 0)
		return;		/* closed without a byte: curl's "nothing was returned" */
	srv_default(s, r, fd);
}

START_TEST(http_a_notification_without_an_answer_is_not_a_lost_server)
{
	struct srv s;
	struct tc c;

	log_set_level(LOG_DEBUG);
	srv_start(&s, srv_drop_notifications);
	tc_open(&c, &s, NULL);
	test_log_capture_start();
	tc_init(&c);
	tc_send(&c, initialized_msg);
	tc_wait_log(&c, "notifications/initialized: connection failed");
	free(test_log_capture_stop());
	tc_send(&c, list_msg);
	tc_run(&c, until_msgs, 2);
	ck_assert_int_eq(c.ngone, 0);
	assert_msg(&c, 1, "{\"id\":2,\"jsonrpc\":\"2.0\",\"result\":{\"ok\":\"tools/list\"}}");
	tc_free(&c);
	srv_free(&s);
}
END_TEST

START_TEST(http_a_server_that_cannot_be_reached_is_gone)
{
	struct srv s;
	struct tc c;

	/* No server at all: the handshake's POST fails, and that is gone. */
	srv_start(&s, NULL);
	srv_stop_listening(&s);
	tc_open(&c, &s, NULL);
	tc_send(&c, init_msg);
	tc_run(&c, until_gone, 0);
	ck_assert_msg(strncmp(c.gone, "connection failed: ", 19) == 0, "%s", c.gone);
	tc_free(&c);
	srv_free(&s);

	/* The server goes after the handshake: a request reaches nobody, and that is gone too (the
	 * owner restarts), not an error for that request with the server still taken for ready. */
	srv_start(&s, NULL);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	srv_stop_listening(&s);
	tc_send(&c, list_msg);
	tc_run(&c, until_gone, 0);
	ck_assert_msg(strncmp(c.gone, "connection lost: ", 17) == 0, "%s", c.gone);
	ck_assert_int_eq(c.expired, 0);
	ck_assert_int_eq((int)json_array_size(c.msgs), 1);	/* the initialize answer only */
	ck_assert_int_eq(c.ngone, 1);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

static void
srv_odd_replies(struct srv *s, const struct srv_req *r, int fd)
{
	json_int_t id = json_integer_value(json_object_get(r->msg, "id"));

	if (strcmp(r->rpc, "initialize") == 0 || strcmp(r->method, "POST") != 0) {
		srv_default(s, r, fd);
	} else if (id == 2) {
		srv_reply(fd, 200, "application/json; charset=utf-8", "",
		    "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"},"
		    "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}]");
	} else if (id == 3) {
		srv_reply(fd, 200, "application/json", "", "not json");
	} else if (id == 4) {
		srv_sse(fd, "");
		srv_puts(fd, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n");
	} else if (id == 5) {
		srv_reply(fd, 202, NULL, "", "");
	} else if (id == 6) {
		/* A body cut short: a length promised and not sent. */
		srv_puts(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 500\r\n"
		    "Connection: close\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n");
	} else if (id == 7) {
		srv_reply(fd, 200, "application/json", "", "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"t\":\"a\xff" "b\"}}");
	}
}

START_TEST(http_batches_bad_json_and_missing_responses)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_odd_replies);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	tc_send(&c, list_msg);
	tc_run(&c, until_msgs, 3);
	assert_msg(&c, 1, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}");
	assert_msg(&c, 2, "{\"id\":2,\"jsonrpc\":\"2.0\",\"result\":{}}");
	tc_send(&c, call_msg);
	tc_run(&c, until_msgs, 4);
	assert_msg(&c, 3, "{\"error\":{\"code\":-32603,\"message\":\"the reply is not JSON (HTTP 200)\"},\"id\":3,"
	    "\"jsonrpc\":\"2.0\"}");
	tc_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\"}");
	tc_run(&c, until_msgs, 6);
	assert_msg(&c, 4, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}");
	assert_msg(&c, 5, "{\"error\":{\"code\":-32603,\"message\":\"no response in the reply (HTTP 200)\"},\"id\":4,"
	    "\"jsonrpc\":\"2.0\"}");
	tc_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\"}");
	tc_run(&c, until_msgs, 7);
	assert_msg(&c, 6, "{\"error\":{\"code\":-32603,\"message\":\"no response in the reply (HTTP 202)\"},\"id\":5,"
	    "\"jsonrpc\":\"2.0\"}");
	tc_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\"}");
	tc_run(&c, until_msgs, 9);
	assert_msg(&c, 7, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}");
	json_t *err = json_object_get(json_array_get(c.msgs, 8), "error");
	ck_assert_msg(strncmp(json_string_value(json_object_get(err, "message")), "the reply broke: ", 17) == 0, "%s",
	    json_string_value(json_object_get(err, "message")));
	/* An invalid byte costs a U+FFFD, not the message. */
	tc_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\"}");
	tc_run(&c, until_msgs, 10);
	assert_msg(&c, 9, "{\"id\":7,\"jsonrpc\":\"2.0\",\"result\":{\"t\":\"a\xef\xbf\xbd" "b\"}}");
	ck_assert_int_eq(c.ngone, 0);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

/* GET: first a stream with one event that ends (retry: 10), then one that stays open. */
static void
srv_get_stream(struct srv *s, const struct srv_req *r, int fd)
{
	if (strcmp(r->method, "GET") != 0) {
		srv_default(s, r, fd);
		return;
	}
	srv_sse(fd, "");
	if (srv_find(s, "GET", "", 1) == NULL) {
		srv_puts(fd, "retry: 10\nid: g1\n"
		    "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n");
		return;
	}
	srv_puts(fd, "id: g2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n\n");
	srv_hold(s, fd);
}

START_TEST(http_get_stream_delivers_list_changed_and_restarts_from_its_last_id)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_get_stream);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	c.t->ops->set_version(c.t, "2025-06-18");
	tc_send(&c, initialized_msg);
	tc_run(&c, until_msgs, 3);
	assert_msg(&c, 1, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}");
	assert_msg(&c, 2, "{\"id\":7,\"jsonrpc\":\"2.0\",\"method\":\"ping\"}");
	assert_hdr(srv_find(&s, "GET", "", 0), "Last-Event-ID", NULL);
	assert_hdr(srv_find(&s, "GET", "", 1), "Last-Event-ID", "g1");
	assert_hdr(srv_find(&s, "GET", "", 1), "MCP-Session-Id", "sess-1");
	assert_hdr(srv_find(&s, "GET", "", 1), "MCP-Protocol-Version", "2025-06-18");
	/* A response to the server's ping goes out as a POST of its own, answered 202. */
	tc_send(&c, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}");
	c.want = 0;
	tc_run(&c, until_reqs, 5);
	c.t->ops->close(c.t);
	ck_assert_int_eq(c.ngone, 0);		/* never from inside close */
	tc_run(&c, until_gone, 0);
	ck_assert_str_eq(c.gone, "closed");
	assert_hdr(srv_find(&s, "DELETE", "", 0), "MCP-Session-Id", "sess-1");
	ck_assert_ptr_nonnull(srv_find(&s, "POST", "response", 0));
	/* The held stream was dropped at close. */
	ck_assert(srv_wait_flag(&s, &s.peer_closed));
	ck_assert_int_eq((int)json_array_size(c.msgs), 3);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

/* A GET stream that fails (HTTP 500, retry: 10) and then stops with 404 (none). */
static void
srv_get_fails(struct srv *s, const struct srv_req *r, int fd)
{
	if (strcmp(r->method, "GET") != 0)
		srv_default(s, r, fd);
	else if (srv_find(s, "GET", "", 1) == NULL)
		srv_reply(fd, 500, "text/plain", "", "later");
	else
		srv_reply(fd, 404, "text/plain", "", "Cannot GET /mcp");
}

START_TEST(http_get_stream_retries_a_failure_and_stops_at_404)
{
	struct srv s;
	struct tc c;
	char *log;

	log_set_level(LOG_DEBUG);
	srv_start(&s, srv_get_fails);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	test_log_capture_start();
	tc_send(&c, initialized_msg);
	tc_wait_log(&c, "no GET stream (HTTP 404)");
	ck_assert_ptr_nonnull(strstr(c.log.data, "GET stream ended (HTTP 500); again in 500 ms"));
	c.t->ops->close(c.t);
	tc_run(&c, until_gone, 0);
	log = test_log_capture_stop();
	free(log);
	ck_assert_int_eq(srv_count(&s), 5);	/* init, initialized, two GETs, DELETE */
	ck_assert_int_eq(c.ngone, 1);
	ck_assert_str_eq(c.gone, "closed");
	tc_free(&c);
	srv_free(&s);
}
END_TEST

/* A GET stream that was open (an SSE reply that ended) and then is 404: the session ended. */
static void
srv_get_then_404(struct srv *s, const struct srv_req *r, int fd)
{
	if (strcmp(r->method, "GET") != 0)
		srv_default(s, r, fd);
	else if (srv_find(s, "GET", "", 1) == NULL)
		srv_sse(fd, "");
	else
		srv_reply(fd, 404, "text/plain", "", "no such session");
}

START_TEST(http_get_stream_404_after_it_was_open_is_session_expired)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_get_then_404);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	tc_send(&c, initialized_msg);
	tc_run(&c, until_gone, 0);
	ck_assert_str_eq(c.gone, "session expired");
	ck_assert_int_eq(c.expired, 1);
	ck_assert_int_eq(c.ngone, 1);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

/* tools/call's stream ends after its priming event; the GET with Last-Event-ID brings the answer. */
static void
srv_resume(struct srv *s, const struct srv_req *r, int fd)
{
	char v[64];

	if (strcmp(r->rpc, "tools/call") == 0) {
		srv_sse(fd, "");
		srv_puts(fd, "id: c1\nretry: 10\ndata:\n\n");
	} else if (strcmp(r->method, "GET") == 0 && srv_hdr(r, "Last-Event-ID", v, sizeof(v))) {
		switch (s->variant) {
		case 0:
			srv_sse(fd, "");
			srv_puts(fd, "id: c2\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"resumed\":\"%s\"}}\n\n",
			    v);
			break;
		case 1:
			srv_reply(fd, 405, NULL, "", "");
			break;
		case 2:
			srv_sse(fd, "");	/* a priming event each time, never the answer */
			srv_puts(fd, "id: c1\ndata:\n\n");
			break;
		}
	} else {
		srv_default(s, r, fd);
	}
}

static const char *const resume_answers[] = {
	"{\"id\":3,\"jsonrpc\":\"2.0\",\"result\":{\"resumed\":\"c1\"}}",
	"{\"error\":{\"code\":-32603,\"message\":\"HTTP 405\"},\"id\":3,\"jsonrpc\":\"2.0\"}",
	"{\"error\":{\"code\":-32603,\"message\":\"no response after resuming the stream 5 times\"},\"id\":3,"
	"\"jsonrpc\":\"2.0\"}",
};

START_TEST(http_a_stream_cut_before_its_response_is_resumed)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_resume);
	s.variant = _i;
	tc_open(&c, &s, NULL);
	tc_init(&c);
	tc_send(&c, call_msg);
	tc_run(&c, until_msgs, 2);
	assert_msg(&c, 1, resume_answers[_i]);
	const struct srv_req *get = srv_find(&s, "GET", "", 0);
	assert_hdr(get, "Last-Event-ID", "c1");
	assert_hdr(get, "MCP-Session-Id", "sess-1");
	assert_hdr(get, "Accept", "text/event-stream");
	if (_i == 2) {	/* the priming events are no progress: the tries run out */
		ck_assert_ptr_nonnull(srv_find(&s, "GET", "", MCP_HTTP_RESUME_MAX - 1));
		ck_assert_ptr_null(srv_find(&s, "GET", "", MCP_HTTP_RESUME_MAX));
	}
	ck_assert_int_eq(c.ngone, 0);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

static void
srv_delete_hangs(struct srv *s, const struct srv_req *r, int fd)
{
	if (strcmp(r->method, "DELETE") == 0)
		srv_hold(s, fd);
	else
		srv_default(s, r, fd);
}

START_TEST(http_close_without_a_session_sends_nothing_and_a_hung_delete_is_bounded)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_delete_hangs);
	tc_open(&c, &s, NULL);
	c.t->ops->close(c.t);
	tc_send(&c, init_msg);		/* after close: dropped */
	ck_assert_int_eq(c.ngone, 0);
	tc_run(&c, until_gone, 0);
	ck_assert_str_eq(c.gone, "closed");
	ck_assert_int_eq(srv_count(&s), 0);
	tc_free(&c);

	/* DELETE that never answers: gone comes after MCP_HTTP_CLOSE_MS anyway. */
	tc_open(&c, &s, NULL);
	tc_init(&c);
	ev_tstamp t0 = ev_time();
	c.t->ops->close(c.t);
	tc_run(&c, until_gone, 0);
	ck_assert_str_eq(c.gone, "closed");
	ck_assert(ev_time() - t0 < 8.0);
	ck_assert_ptr_nonnull(srv_find(&s, "DELETE", "", 0));
	ck_assert(srv_wait_flag(&s, &s.peer_closed));
	tc_free(&c);
	srv_free(&s);
}
END_TEST

static void
srv_call_hangs(struct srv *s, const struct srv_req *r, int fd)
{
	if (strcmp(r->rpc, "tools/call") == 0) {
		srv_sse(fd, "");
		srv_hold(s, fd);
	} else {
		srv_default(s, r, fd);
	}
}

START_TEST(http_a_cancel_ends_its_requests_transfer)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_call_hangs);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	tc_send(&c, call_msg);
	c.want = 2;
	tc_run(&c, until_reqs, 2);	/* the call is in flight, its stream held open */
	tc_send(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":3}}");
	c.want = 1;
	tc_run(&c, until_peer_closed, 1);	/* the client closed the call's stream */
	tc_send(&c, list_msg);
	tc_run(&c, until_msgs, 2);
	assert_msg(&c, 1, "{\"id\":2,\"jsonrpc\":\"2.0\",\"result\":{\"ok\":\"tools/list\"}}");
	ck_assert_int_eq(c.ngone, 0);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

START_TEST(http_free_aborts_at_once_and_reports_nothing)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_call_hangs);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	tc_send(&c, call_msg);
	tc_send(&c, list_msg);
	tc_run(&c, until_msgs, 2);	/* tools/list answered */
	tc_run(&c, until_reqs, 3);	/* tools/call in flight */
	tc_send(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}");	/* maybe not even sent */
	c.t->ops->free(c.t);
	c.t = NULL;
	ev_run(c.loop, EVRUN_NOWAIT);
	ck_assert(srv_wait_flag(&s, &s.peer_closed));	/* its connection closed */
	ck_assert_int_eq(c.ngone, 0);
	ck_assert_int_eq((int)json_array_size(c.msgs), 2);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

START_TEST(http_free_from_inside_a_message_stops_the_rest)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_odd_replies);	/* tools/list: a batch of two */
	tc_open(&c, &s, NULL);
	tc_init(&c);
	c.free_on_message = 1;
	tc_send(&c, list_msg);
	tc_run(&c, until_msgs, 2);
	ck_assert_ptr_null(c.t);
	ev_run(c.loop, EVRUN_NOWAIT);
	ck_assert_int_eq((int)json_array_size(c.msgs), 2);
	ck_assert_int_eq(c.ngone, 0);
	tc_free(&c);
	srv_free(&s);
}
END_TEST

/*
 * A redirect to /mcp/ (a server mounted there): followed, the endpoint moves. tools/call is sent
 * to another origin (localhost for 127.0.0.1): not followed, the ACP headers stay home.
 */
static void
srv_redirects(struct srv *s, const struct srv_req *r, int fd)
{
	if (strcmp(r->path, "/mcp") == 0)
		srv_puts(fd, "HTTP/1.1 307 Temporary Redirect\r\nLocation: /mcp/\r\nContent-Length: 3\r\n"
		    "Connection: close\r\n\r\nmoved");
	else if (strcmp(r->rpc, "tools/call") == 0)
		srv_puts(fd, "HTTP/1.1 308 Permanent Redirect\r\nLocation: http://localhost:%d/mcp/\r\n"
		    "Content-Length: 0\r\nConnection: close\r\n\r\n", s->port);
	else
		srv_default(s, r, fd);
}

START_TEST(http_a_same_origin_redirect_moves_the_endpoint_another_is_refused)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_redirects);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	const struct srv_req *r = srv_find(&s, "POST", "initialize", 1);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r->path, "/mcp/");
	ck_assert_str_eq(srv_find(&s, "POST", "initialize", 0)->body, r->body);
	tc_send(&c, list_msg);
	tc_run(&c, until_msgs, 2);
	assert_msg(&c, 1, "{\"id\":2,\"jsonrpc\":\"2.0\",\"result\":{\"ok\":\"tools/list\"}}");
	r = srv_find(&s, "POST", "tools/list", 0);
	ck_assert_str_eq(r->path, "/mcp/");	/* straight to the new endpoint */
	assert_hdr(r, "MCP-Session-Id", "sess-1");
	ck_assert_ptr_null(srv_find(&s, "POST", "tools/list", 1));
	tc_send(&c, call_msg);
	tc_run(&c, until_msgs, 3);
	assert_msg(&c, 2, "{\"error\":{\"code\":-32603,\"message\":\"HTTP 308\"},\"id\":3,\"jsonrpc\":\"2.0\"}");
	ck_assert_int_eq(srv_count(&s), 4);	/* nothing went to localhost */
	tc_free(&c);
	srv_free(&s);
}
END_TEST

static void
srv_huge(struct srv *s, const struct srv_req *r, int fd)
{
	if (strcmp(r->rpc, "tools/list") == 0) {
		size_t n = MCP_HTTP_BODY_MAX + 1;
		char *big = xmalloc(n);
		memset(big, ' ', n);
		srv_puts(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		    "Connection: close\r\n\r\n", n);
		srv_write(fd, big, n);
		free(big);
	} else {
		srv_default(s, r, fd);
	}
}

START_TEST(http_a_reply_over_the_limit_fails_its_request)
{
	struct srv s;
	struct tc c;

	srv_start(&s, srv_huge);
	tc_open(&c, &s, NULL);
	tc_init(&c);
	tc_send(&c, list_msg);
	tc_run(&c, until_msgs, 2);
	assert_msg(&c, 1, "{\"error\":{\"code\":-32603,\"message\":\"the reply is longer than 64 MiB\"},\"id\":2,"
	    "\"jsonrpc\":\"2.0\"}");
	tc_free(&c);
	srv_free(&s);
}
END_TEST

START_TEST(http_bad_urls_and_headers_are_refused)
{
	struct mcp_transport_cb cb = { tc_message, tc_gone, NULL };
	struct ev_loop *loop = ev_loop_new(0);
	json_t *nul = json_pack("[{s:s, s:s%}]", "name", "X-A", "value", "a\0b", (size_t)3);
	struct {
		const char *url;
		json_t *headers;
		const char *msg;
	} bad[] = {
		{ "ftp://h/mcp", NULL, "the url must start with http:// or https://" },
		{ NULL, NULL, "the url must start with http:// or https://" },
		{ "http://h/a b", NULL, "the url has a space or a control character" },
		{ "http://h/mcp", json_pack("{}"), "headers must be an array of {name, value}" },
		{ "http://h/mcp", json_pack("[{s:s}]", "name", "X"), "headers[0] must be {name, value} with strings" },
		{ "http://h/mcp", json_pack("[{s:s, s:s}]", "name", "X Y", "value", "v"),
		    "headers[0] has an invalid name" },
		{ "http://h/mcp", json_pack("[{s:s, s:s}]", "name", "", "value", "v"),
		    "headers[0] has an invalid name" },
		{ "http://h/mcp", json_pack("[{s:s, s:s}]", "name", "X-A", "value", "v\r\nX-B: w"),
		    "the value of header X-A has a line break or a NUL" },
		{ "http://h/mcp", nul, "the value of header X-A has a line break or a NUL" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct err e;
		err_clear(&e);
		ck_assert_ptr_null(mcp_http_new(loop, "x", bad[i].url, bad[i].headers, &cb, &e));
		ck_assert_int_eq(e.code, ERR_INVALID_PARAMS);
		ck_assert_str_eq(e.msg, bad[i].msg);
		json_decref(bad[i].headers);
	}
	ev_loop_destroy(loop);
}
END_TEST

Suite *
mcp_http_suite(void)
{
	Suite *s = suite_create("mcp_http");
	TCase *tc = tcase_create("mcp_http");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, http_json_reply_keeps_the_session_and_sends_the_version);
	tcase_add_test(tc, http_sse_reply_carries_notifications_before_the_response);
	tcase_add_test(tc, http_a_notification_holds_the_next_message_until_its_202);
	tcase_add_test(tc, http_a_slow_request_does_not_hold_a_notification);
	tcase_add_test(tc, http_acp_headers_go_on_every_request_and_never_into_the_log);
	tcase_add_test(tc, http_404_with_a_session_is_gone_session_expired);
	tcase_add_test(tc, http_404_without_a_session_is_an_error_response);
	tcase_add_test(tc, http_500_answers_the_request_with_an_error_and_the_transport_lives_on);
	tcase_add_loop_test(tc, http_initialize_failing_is_gone, 0, 6);
	tcase_add_test(tc, http_a_server_that_cannot_be_reached_is_gone);
	tcase_add_test(tc, http_batches_bad_json_and_missing_responses);
	tcase_add_test(tc, http_get_stream_delivers_list_changed_and_restarts_from_its_last_id);
	tcase_add_test(tc, http_get_stream_retries_a_failure_and_stops_at_404);
	tcase_add_test(tc, http_get_stream_404_after_it_was_open_is_session_expired);
	tcase_add_test(tc, http_a_notification_without_an_answer_is_not_a_lost_server);
	tcase_add_loop_test(tc, http_a_stream_cut_before_its_response_is_resumed, 0, 3);
	tcase_add_test(tc, http_close_without_a_session_sends_nothing_and_a_hung_delete_is_bounded);
	tcase_add_test(tc, http_a_cancel_ends_its_requests_transfer);
	tcase_add_test(tc, http_free_aborts_at_once_and_reports_nothing);
	tcase_add_test(tc, http_free_from_inside_a_message_stops_the_rest);
	tcase_add_test(tc, http_a_same_origin_redirect_moves_the_endpoint_another_is_refused);
	tcase_add_test(tc, http_a_reply_over_the_limit_fails_its_request);
	tcase_add_test(tc, http_bad_urls_and_headers_are_refused);
	suite_add_tcase(s, tc);
	return s;
}
