/* The openai provider: refused connections fail clearly, never leak the key; an endless line is cut. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "model/model.h"
#include "base/sse.h"
#include "tests/helpers.h"

static char code[64], msg[700];
static int finished;

static void
s_text(void *arg, const char *s, size_t n)
{
	(void)arg;
	(void)s;
	(void)n;
}

static void
s_call(void *arg, const char *id, const char *name, const char *args)
{
	(void)arg;
	(void)id;
	(void)name;
	(void)args;
}

static void
s_finish(void *arg, const char *f, const json_t *u)
{
	(void)arg;
	(void)f;
	(void)u;
	finished = 1;
}

static void
s_error(void *arg, const char *c, const char *m)
{
	struct ev_loop *loop = arg;

	snprintf(code, sizeof(code), "%s", c);
	snprintf(msg, sizeof(msg), "%s", m);
	ev_break(loop, EVBREAK_ALL);
}

static void
drain(struct ev_loop *loop, ev_prepare *w, int revents)
{
	(void)loop;
	(void)revents;
	runq_drain(w->data);
}

/* One provider on its own loop, its runq drained before the loop sleeps, as the server does. */
struct oa_run {
	struct ev_loop *loop;
	struct runq q;
	ev_prepare prep;
	struct model *m;
};

/* Makes the provider for cfg on loop and starts call; returns the request. */
static struct model_req *
oa_run_start(struct oa_run *r, struct ev_loop *loop, const struct openai_config *cfg,
    const struct model_call *call, const struct model_sink *sink)
{
	struct err e;

	r->loop = loop;
	runq_init(&r->q, NULL);
	ev_prepare_init(&r->prep, drain);
	r->prep.data = &r->q;
	ev_prepare_start(loop, &r->prep);
	err_clear(&e);
	r->m = model_openai_new(&r->q, loop, cfg, &e);
	ck_assert_ptr_nonnull(r->m);
	return r->m->ops->start(r->m, call, sink);
}

static void
oa_run_free(struct oa_run *r)
{
	model_free(r->m);
	ev_prepare_stop(r->loop, &r->prep);
	runq_stop(&r->q);
}

/* A non-blocking listening socket on 127.0.0.1 and its base URL. */
static int
loopback_listen(char *url, size_t n, int backlog)
{
	struct sockaddr_in a = { 0 };
	socklen_t alen = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(lfd, backlog), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	fcntl(lfd, F_SETFL, O_NONBLOCK);
	snprintf(url, n, "http://127.0.0.1:%d", ntohs(a.sin_port));
	return lfd;
}

START_TEST(openai_refused_connection_is_a_clear_error)
{
	struct ev_loop *loop = ev_loop_new(0);
	struct oa_run r;
	struct openai_config cfg = { "http://127.0.0.1:1", "sk-secret-key", "m", 2000, 5000, 3, 5 };
	json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", "hi");
	struct model_call call = { .agent_id = "a", .system = "s", .messages = msgs };
	struct model_sink sink = { s_text, s_text, s_call, s_finish, s_error, loop };

	oa_run_start(&r, loop, &cfg, &call, &sink);
	ev_run(loop, 0);
	ck_assert_str_eq(code, "MODEL_CONNECTION");
	ck_assert_ptr_nonnull(strstr(msg, "cannot reach the model server at http://127.0.0.1:1/chat/completions"));
	ck_assert_ptr_null(strstr(msg, "sk-secret-key"));
	ck_assert_int_eq(finished, 0);
	oa_run_free(&r);
	json_decref(msgs);
	ev_loop_destroy(loop);
}
END_TEST

/*
 * A loopback server in the test's own loop: it answers the one request with 200 and a data line
 * that goes on well past the limit (80 MiB without a '\n'), then closes.
 */
static struct {
	ev_io listen_io, conn_io;
	size_t sent, limit;
	int header_sent;
} S;

static void
endless_close(struct ev_loop *loop)
{
	if (ev_is_active(&S.conn_io) || S.conn_io.fd >= 0) {
		ev_io_stop(loop, &S.conn_io);
		close(S.conn_io.fd);
		S.conn_io.fd = -1;
	}
}

static void
endless_conn_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	static const char header[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
	    "data: {\"choices\":[{\"delta\":{\"content\":\"";
	static char chunk[65536];
	char in[4096];

	if (revents & EV_READ) {
		ssize_t n = recv(w->fd, in, sizeof(in), 0);	/* the request: read and dropped */
		if (n == 0 || (n < 0 && errno != EAGAIN)) {
			endless_close(loop);
			return;
		}
	}
	if (!(revents & EV_WRITE))
		return;
	if (!S.header_sent) {
		ck_assert_int_eq(send(w->fd, header, strlen(header), MSG_NOSIGNAL), (ssize_t)strlen(header));
		S.header_sent = 1;
		memset(chunk, 'x', sizeof(chunk));
	}
	if (S.sent >= S.limit) {
		endless_close(loop);	/* never a '\n': the line has no end */
		return;
	}
	ssize_t n = send(w->fd, chunk, sizeof(chunk), MSG_NOSIGNAL);
	if (n < 0 && errno != EAGAIN) {
		endless_close(loop);	/* the client went away */
		return;
	}
	if (n > 0)
		S.sent += (size_t)n;
}

static void
endless_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	int fd = accept(w->fd, NULL, NULL);

	(void)revents;
	if (fd < 0)
		return;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	ev_io_stop(loop, w);		/* one connection */
	ev_io_init(&S.conn_io, endless_conn_cb, fd, EV_READ | EV_WRITE);
	ev_io_start(loop, &S.conn_io);
}

START_TEST(openai_an_endless_line_fails_the_turn_at_the_limit)
{
	struct ev_loop *loop = ev_loop_new(0);
	char url[64];
	int lfd = loopback_listen(url, sizeof(url), 1);
	struct oa_run r;
	json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", "hi");
	struct model_call call = { .agent_id = "a", .system = "s", .messages = msgs };
	struct model_sink sink = { s_text, s_text, s_call, s_finish, s_error, loop };

	memset(&S, 0, sizeof(S));
	S.conn_io.fd = -1;
	S.limit = SSE_LINE_MAX + ((size_t)16 << 20);	/* more than the kernel buffers on loopback */
	ev_io_init(&S.listen_io, endless_accept_cb, lfd, EV_READ);
	ev_io_start(loop, &S.listen_io);

	struct openai_config cfg = { url, "sk-secret-key", "m", 2000, 10000, 1, 5 };
	oa_run_start(&r, loop, &cfg, &call, &sink);
	ev_run(loop, 0);
	ck_assert_str_eq(code, "MODEL_STREAM");
	ck_assert_str_eq(msg, "the model stream sent a line longer than 64 MiB");
	ck_assert_int_eq(finished, 0);
	ck_assert_uint_lt(S.sent, S.limit);	/* cut at the limit, not at the end of what was sent */
	oa_run_free(&r);
	json_decref(msgs);
	endless_close(loop);
	ev_io_stop(loop, &S.listen_io);
	close(lfd);
	ev_loop_destroy(loop);
}
END_TEST

/* A loopback server whose every answer is HTTP 500; each connection lives until the client closes. */
struct err500_conn {
	ev_io io;		/* first member */
	int answered;
};

static void
err500_conn_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	static const char answer[] = "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
	    "Content-Length: 2\r\nConnection: close\r\n\r\n{}";
	struct err500_conn *c = (struct err500_conn *)w;
	char in[4096];
	ssize_t n = recv(w->fd, in, sizeof(in), 0);

	(void)revents;
	if (n == 0 || (n < 0 && errno != EAGAIN)) {
		ev_io_stop(loop, w);
		close(w->fd);
		free(c);
		return;
	}
	if (n > 0 && !c->answered) {
		c->answered = 1;
		ck_assert_int_eq(send(w->fd, answer, strlen(answer), MSG_NOSIGNAL), (ssize_t)strlen(answer));
	}
}

static void
err500_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	int fd = accept(w->fd, NULL, NULL);
	struct err500_conn *c;

	(void)revents;
	if (fd < 0)
		return;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	c = calloc(1, sizeof(*c));
	ev_io_init(&c->io, err500_conn_cb, fd, EV_READ);
	ev_io_start(loop, &c->io);
}

static struct {
	FILE *log;
	long delay;
	int seen;
} R;

/* Reads the captured stderr for the first retry line, then stops the loop. */
static void
retry_watch_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	char line[512];

	(void)w;
	(void)revents;
	rewind(R.log);
	while (fgets(line, sizeof(line), R.log)) {
		const char *p = strstr(line, "retry 1 of 2 in ");
		if (p && sscanf(p, "retry 1 of 2 in %ld ms", &R.delay) == 1) {
			R.seen = 1;
			ev_break(loop, EVBREAK_ALL);
		}
	}
}

START_TEST(openai_a_huge_retry_base_waits_at_most_a_minute)
{
	struct ev_loop *loop = ev_loop_new(0);
	char url[64];
	int lfd = loopback_listen(url, sizeof(url), 4), saved = dup(2);
	struct oa_run r;
	ev_io lio;
	ev_timer watch;
	json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", "hi");
	struct model_call call = { .agent_id = "a", .system = "s", .messages = msgs };
	struct model_sink sink = { s_text, s_text, s_call, s_finish, s_error, loop };

	ev_io_init(&lio, err500_accept_cb, lfd, EV_READ);
	ev_io_start(loop, &lio);
	/* The retry's wait is only visible in its log line: stderr goes to a file for this test. */
	R.log = tmpfile();
	ck_assert_ptr_nonnull(R.log);
	dup2(fileno(R.log), 2);
	log_set_level(LOG_INFO);
	ev_timer_init(&watch, retry_watch_cb, 0.01, 0.01);
	ev_timer_start(loop, &watch);

	/* ACP_AGENT_RETRY_BASE_MS as large as strtol goes: it was shifted and added to, unchecked. */
	struct openai_config cfg = { url, "sk-secret-key", "m", 2000, 10000, 3, LONG_MAX };
	struct model_req *req = oa_run_start(&r, loop, &cfg, &call, &sink);
	ev_run(loop, 0);
	dup2(saved, 2);
	close(saved);
	ck_assert_msg(R.seen, "no retry was scheduled (error %s: %s)", code, msg);
	ck_assert_int_ge(R.delay, 1);
	ck_assert_int_le(R.delay, 60000);
	r.m->ops->cancel(r.m, req);
	oa_run_free(&r);
	json_decref(msgs);
	ev_timer_stop(loop, &watch);
	ev_io_stop(loop, &lio);
	close(lfd);
	fclose(R.log);
	ev_loop_destroy(loop);
}
END_TEST

START_TEST(openai_needs_a_key_and_an_http_url)
{
	struct runq q;
	struct err e;
	struct openai_config nokey = { "http://x", NULL, "m", 1, 1, 3, 1 };
	struct openai_config badurl = { "ftp://x", "k", "m", 1, 1, 3, 1 };

	runq_init(&q, NULL);
	err_clear(&e);
	ck_assert_ptr_null(model_openai_new(&q, NULL, &nokey, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "ACP_AGENT_API_KEY"));
	err_clear(&e);
	ck_assert_ptr_null(model_openai_new(&q, NULL, &badurl, &e));
	ck_assert_ptr_nonnull(strstr(e.msg, "ACP_AGENT_BASE_URL"));
	/* The model name goes into every body as a JSON string: one that is not UTF-8 is refused. */
	struct openai_config badmodel = { "http://x", "k", "caf\xe9", 1, 1, 3, 1 };
	err_clear(&e);
	ck_assert_ptr_null(model_openai_new(&q, NULL, &badmodel, &e));
	ck_assert_str_eq(e.msg, "ACP_AGENT_MODEL must be valid UTF-8");
}
END_TEST

START_TEST(openai_a_request_that_cannot_be_built_fails_without_being_sent)
{
	struct ev_loop *loop = ev_loop_new(0);
	struct oa_run r;
	struct openai_config cfg = { "http://127.0.0.1:1", "sk-secret-key", "m", 2000, 5000, 3, 5 };
	json_t *msgs = json_pack("[{s:s, s:s}]", "role", "user", "content", "hi");
	json_t *tools = json_pack("[{s:s}]", "description", "a tool without a name");
	struct model_call call = { .agent_id = "a", .system = "s", .messages = msgs, .tools = tools };
	struct model_sink sink = { s_text, s_text, s_call, s_finish, s_error, loop };

	oa_run_start(&r, loop, &cfg, &call, &sink);
	ev_run(loop, 0);
	/* Not MODEL_CONNECTION: nothing went to the (absent) server, the tool was not dropped silently. */
	ck_assert_str_eq(code, "MODEL_REQUEST");
	ck_assert_ptr_nonnull(strstr(msg, "could not be built"));
	ck_assert_int_eq(finished, 0);
	oa_run_free(&r);
	json_decref(msgs);
	json_decref(tools);
	ev_loop_destroy(loop);
}
END_TEST

Suite *
openai_suite(void)
{
	Suite *s = suite_create("openai");
	TCase *tc = tcase_create("openai");

	tcase_add_test(tc, openai_refused_connection_is_a_clear_error);
	tcase_add_test(tc, openai_needs_a_key_and_an_http_url);
	tcase_add_test(tc, openai_an_endless_line_fails_the_turn_at_the_limit);
	tcase_add_test(tc, openai_a_huge_retry_base_waits_at_most_a_minute);
	tcase_add_test(tc, openai_a_request_that_cannot_be_built_fails_without_being_sent);
	tcase_set_timeout(tc, 20);
	suite_add_tcase(s, tc);
	return s;
}
