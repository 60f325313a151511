/*
 * A scripted OpenAI-compatible server for the provider tests: loopback only,
 * libev, one scripted response per request. A response can stream SSE events
 * split at any byte, delay between writes, reset the connection, hang, wait
 * until a file exists ("wait_file": a test says when, no time is assumed), or
 * answer an HTTP error. Every request is logged (one JSON line) for snapshots.
 *
 *   mock-openai --script FILE --log FILE --port-file FILE
 *
 * With a top-level "window": {"maxBytes": N, "text": T} and no scripted response left, it plays
 * a model with a context window instead: a body over N bytes gets HTTP 400 "This model's maximum
 * context length is ..."; a summary request (its system prompt starts "You summarise") gets a
 * short summary; any other request gets T. Both report usage (prompt tokens: the body's bytes / 4).
 * The log then holds {"bytes": n, "kind": "overflow" | "summary" | "turn"} per request, and when
 * the conversation has "Turn N:" prompts, their numbers and the turn a summary in it reaches
 * ({"labels": "1,2", "summary": K}; a summary request's summary says "through Turn K").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "base/buf.h"
#include "base/xmalloc.h"

struct mock {
	ev_io accept_io;
	struct ev_loop *loop;
	json_t *responses;
	json_t *window;		/* the window model, or NULL */
	size_t next;
	FILE *log;
};

struct conn {
	ev_io io;		/* first member */
	ev_timer timer;
	struct mock *mk;
	int fd;
	struct buf in;
	struct buf out;		/* the whole response */
	size_t sent;
	size_t chunk;
	double delay;
	long reset_after;	/* -1: never */
	int hang;
	char *wait_file;	/* owned: nothing is written until it exists, or NULL */
	size_t *marks;		/* per_event: write up to each mark, then wait delay */
	size_t nmarks, mark;
	int responding;
	int logged;
	json_t *req;		/* the logged request */
};

static void
conn_close(struct conn *c, int reset)
{
	if (reset) {
		struct linger l = { 1, 0 };	/* RST instead of FIN */
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
	if (c->req) {
		/* A request closed before its response was complete was cut off by the client. */
		if (c->responding && c->sent < c->out.len && !reset)
			json_object_set_new(c->req, "clientClosedEarly", json_true());
		char *line = json_dumps(c->req, JSON_COMPACT | JSON_SORT_KEYS);
		fprintf(c->mk->log, "%s\n", line);
		fflush(c->mk->log);
		free(line);
		json_decref(c->req);
	}
	ev_io_stop(c->mk->loop, &c->io);
	ev_timer_stop(c->mk->loop, &c->timer);
	close(c->fd);
	buf_free(&c->in);
	buf_free(&c->out);
	free(c->marks);
	free(c->wait_file);
	free(c);
}

static void conn_write_some(struct conn *c);

static long
mock_int(const json_t *o, const char *k, long def)
{
	const json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? (long)json_integer_value(v) : def;
}

static void
conn_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct conn *c = w->data;

	(void)loop;
	(void)revents;
	conn_write_some(c);
}

static void
conn_write_some(struct conn *c)
{
	size_t n = c->out.len - c->sent;

	if (c->wait_file && access(c->wait_file, F_OK) != 0) {
		ev_timer_set(&c->timer, 0.01, 0.);	/* looked at again: the event, not a time */
		ev_timer_start(c->mk->loop, &c->timer);
		return;
	}
	free(c->wait_file);
	c->wait_file = NULL;
	if (c->hang && c->sent >= c->out.len)
		return;		/* headers sent; nothing more, ever */
	if (n > c->chunk)
		n = c->chunk;
	while (c->mark < c->nmarks && c->marks[c->mark] <= c->sent)
		c->mark++;
	if (c->mark < c->nmarks && c->sent + n > c->marks[c->mark])
		n = c->marks[c->mark] - c->sent;
	if (c->reset_after >= 0 && c->sent + n > (size_t)c->reset_after)
		n = (size_t)c->reset_after - c->sent;
	if (n) {
		ssize_t w = write(c->fd, c->out.data + c->sent, n);
		if (w < 0) {
			if (errno == EAGAIN) {
				ev_timer_set(&c->timer, 0.001, 0.);
				ev_timer_start(c->mk->loop, &c->timer);
				return;
			}
			conn_close(c, 0);
			return;
		}
		c->sent += (size_t)w;
	}
	if (c->reset_after >= 0 && c->sent >= (size_t)c->reset_after) {
		json_object_set_new(c->req, "reset", json_true());
		conn_close(c, 1);
		return;
	}
	if (c->sent >= c->out.len) {
		if (!c->hang) {
			c->responding = 0;
			conn_close(c, 0);
		}
		return;
	}
	ev_timer_set(&c->timer, c->delay, 0.);
	ev_timer_start(c->mk->loop, &c->timer);
}

/*
 * What the window model's log tells of a request's conversation (tests/crash_compact.sh): the
 * numbers N of its "Turn N:" user messages in order ("1,2,3"), and the K of a summary that says
 * "through Turn K" (-1: none). The labels are appended to b.
 */
static long
mock_labels(const json_t *msgs, struct buf *b)
{
	const json_t *m;
	size_t i;
	long summary = -1;

	json_array_foreach(msgs, i, m) {
		const char *c = json_string_value(json_object_get(m, "content"));
		const char *role = json_string_value(json_object_get(m, "role"));
		const char *t;
		if (c == NULL || role == NULL || strcmp(role, "user") != 0)
			continue;
		if ((t = strstr(c, "through Turn ")) != NULL)
			summary = atol(t + 13);
		else if (strncmp(c, "Turn ", 5) == 0)
			buf_printf(b, "%s%ld", b->len ? "," : "", atol(c + 5));
	}
	return summary;
}

/* The window model's answer to a body of len bytes: {"response": ..., "log": ...}; new ref. */
static json_t *
mock_window(const json_t *w, size_t len, const json_t *body)
{
	long long max = json_integer_value(json_object_get(w, "maxBytes"));
	const char *text = json_string_value(json_object_get(w, "text"));
	const json_t *msgs = json_object_get(body, "messages");
	const char *sys = json_string_value(json_object_get(json_array_get(msgs, 0), "content"));
	const char *kind = "turn";
	char msg[200];
	json_t *resp, *log;
	struct buf labels;
	long summary;

	buf_init(&labels);
	summary = mock_labels(msgs, &labels);

	if ((long long)len > max) {
		kind = "overflow";
		snprintf(msg, sizeof(msg), "{\"error\":{\"message\":\"This model's maximum context length is %lld "
		    "tokens; your messages resulted in %zu tokens\"}}", max / 4, len / 4);
		resp = json_pack("{s:i, s:s}", "status", 400, "body", msg);
	} else {
		if (sys && strncmp(sys, "You summarise", 13) == 0) {
			/* through the last turn it was shown (a summary before counts as its own) */
			const char *last = labels.len ? strrchr(labels.data, ',') : NULL;
			long through = labels.len ? atol(last ? last + 1 : labels.data) : summary;
			kind = "summary";
			if (through >= 0)
				snprintf(msg, sizeof(msg), "Summary of %zu messages through Turn %ld.", json_array_size(msgs),
				    through);
			else
				snprintf(msg, sizeof(msg), "Summary of %zu messages.", json_array_size(msgs));
			text = msg;
		}
		resp = json_pack("{s:[{s:s, s:[{s:i, s:{s:s}, s:n}]}, {s:s, s:[{s:i, s:{}, s:s}]}, "
		    "{s:s, s:[], s:{s:I, s:i}}]}", "events",
		    "id", "w", "choices", "index", 0, "delta", "content", text ? text : "ok", "finish_reason",
		    "id", "w", "choices", "index", 0, "delta", "finish_reason", "stop",
		    "id", "w", "choices", "usage", "prompt_tokens", (json_int_t)(len / 4), "completion_tokens", 8);
	}
	log = json_pack("{s:I, s:s}", "bytes", (json_int_t)len, "kind", kind);
	if (labels.len || summary >= 0) {
		json_object_set_new(log, "labels", json_string(labels.len ? labels.data : ""));
		json_object_set_new(log, "summary", json_integer(summary));
	}
	buf_free(&labels);
	return json_pack("{s:o, s:o}", "response", resp, "log", log);
}

static void
conn_respond(struct conn *c, const char *headers_end)
{
	struct mock *mk = c->mk;
	json_t *resp = json_array_get(mk->responses, mk->next++);
	size_t hlen = (size_t)(headers_end - c->in.data);
	const char *body = headers_end + 4;
	json_t *jbody = json_loadb(body, c->in.len - hlen - 4, 0, NULL);
	char *auth = NULL;

	/* The request, as the snapshot shows it. */
	for (char *p = c->in.data; p && p < headers_end; p = strstr(p, "\r\n") ? strstr(p, "\r\n") + 2 : NULL) {
		if (strncasecmp(p, "Authorization:", 14) == 0)
			auth = xstrndup(p + 15, (size_t)(strstr(p, "\r\n") - p - 15));
	}
	c->req = json_pack("{s:s%, s:s, s:o}", "requestLine", c->in.data, strcspn(c->in.data, "\r\n"),
	    "authorization", auth ? auth : "", "body", jbody ? jbody : json_null());
	free(auth);
	json_t *played = NULL;
	if (resp == NULL && mk->window) {
		played = mock_window(mk->window, c->in.len - hlen - 4, json_object_get(c->req, "body"));
		resp = json_object_get(played, "response");
		json_decref(c->req);
		c->req = json_incref(json_object_get(played, "log"));
	}
	c->responding = 1;
	if (resp == NULL) {
		buf_puts(&c->out, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
		    "Connection: close\r\n\r\n{\"error\":{\"message\":\"mock: no scripted response left\"}}");
	} else {
		int status = (int)mock_int(resp, "status", 200);
		const char *k;
		json_t *v;
		buf_printf(&c->out, "HTTP/1.1 %d %s\r\nConnection: close\r\n", status, status == 200 ? "OK" : "Error");
		json_object_foreach(json_object_get(resp, "headers"), k, v)
			buf_printf(&c->out, "%s: %s\r\n", k, json_string_value(v));
		if (status != 200) {
			buf_puts(&c->out, "Content-Type: application/json\r\n\r\n");
			if (json_is_string(json_object_get(resp, "body")))
				buf_puts(&c->out, json_string_value(json_object_get(resp, "body")));
		} else {
			size_t i;
			json_t *ev;
			buf_puts(&c->out, "Content-Type: text/event-stream\r\n\r\n");
			if (json_is_string(json_object_get(resp, "raw")))
				buf_puts(&c->out, json_string_value(json_object_get(resp, "raw")));
			int per_event = json_is_true(json_object_get(resp, "per_event"));
			json_array_foreach(json_object_get(resp, "events"), i, ev) {
				char *s = json_is_string(ev) ? xstrdup(json_string_value(ev)) : json_dumps(ev, JSON_COMPACT);
				if (per_event) {
					c->marks = xrealloc(c->marks, (c->nmarks + 1) * sizeof(*c->marks));
					c->marks[c->nmarks++] = c->out.len;
				}
				buf_printf(&c->out, "data: %s\n\n", s);
				free(s);
			}
			if (!json_is_false(json_object_get(resp, "done")) && !json_object_get(resp, "raw"))
				buf_puts(&c->out, "data: [DONE]\n\n");
		}
		c->chunk = (size_t)mock_int(resp, "split", 1 << 20);
		c->delay = (double)json_integer_value(json_object_get(resp, "delay_ms")) / 1000.0;
		c->reset_after = json_object_get(resp, "reset_after") ?
		    (long)json_integer_value(json_object_get(resp, "reset_after")) : -1;
		c->hang = json_is_true(json_object_get(resp, "hang"));
		if (json_is_string(json_object_get(resp, "wait_file")))
			c->wait_file = strdup(json_string_value(json_object_get(resp, "wait_file")));
		if (c->hang) {
			/* Only the status line and headers go out. */
			char *end = strstr(c->out.data, "\r\n\r\n");
			c->out.len = (size_t)(end + 4 - c->out.data);
		}
	}
	json_decref(played);
	conn_write_some(c);
}

static void
conn_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct conn *c = (struct conn *)w;
	char chunk[65536];
	ssize_t n = read(c->fd, chunk, sizeof(chunk));

	(void)loop;
	(void)revents;
	if (n <= 0) {
		if (n < 0 && errno == EAGAIN)
			return;
		conn_close(c, 0);
		return;
	}
	if (c->responding)
		return;
	buf_append(&c->in, chunk, (size_t)n);
	char *end = strstr(c->in.data, "\r\n\r\n");
	if (end == NULL)
		return;
	const char *cl = strcasestr(c->in.data, "Content-Length:");
	size_t want = cl ? (size_t)strtoul(cl + 15, NULL, 10) : 0;
	if (c->in.len - (size_t)(end + 4 - c->in.data) < want)
		return;
	conn_respond(c, end);
}

static void
accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct mock *mk = (struct mock *)w;
	int fd = accept(w->fd, NULL, NULL);
	struct conn *c;

	(void)revents;
	if (fd < 0)
		return;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	c = xcalloc(1, sizeof(*c));
	c->mk = mk;
	c->fd = fd;
	c->reset_after = -1;
	c->chunk = 1 << 20;
	buf_init(&c->in);
	buf_init(&c->out);
	ev_io_init(&c->io, conn_read_cb, fd, EV_READ);
	ev_io_start(loop, &c->io);
	ev_init(&c->timer, conn_timer_cb);
	c->timer.data = c;
}

static void
stop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

int
main(int argc, char **argv)
{
	const char *script = NULL, *logpath = "/dev/null", *portfile = NULL;
	struct mock mk = { 0 };
	struct sockaddr_in a = { 0 };
	socklen_t alen = sizeof(a);
	json_error_t jerr;
	json_t *root;
	ev_signal sig;
	int fd, one = 1;

	signal(SIGPIPE, SIG_IGN);
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--script") == 0)
			script = argv[i + 1];
		else if (strcmp(argv[i], "--log") == 0)
			logpath = argv[i + 1];
		else if (strcmp(argv[i], "--port-file") == 0)
			portfile = argv[i + 1];
	}
	root = script ? json_load_file(script, 0, &jerr) : NULL;
	if (root == NULL) {
		fprintf(stderr, "mock-openai: --script: %s\n", script ? jerr.text : "missing");
		return 2;
	}
	mk.responses = json_object_get(root, "responses");
	mk.window = json_object_get(root, "window");
	mk.log = fopen(logpath, "a");
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);	/* loopback only */
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &alen) < 0) {
		perror("mock-openai");
		return 1;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	if (portfile) {
		char tmp[512];
		snprintf(tmp, sizeof(tmp), "%s.tmp", portfile);
		FILE *pf = fopen(tmp, "w");
		fprintf(pf, "%d\n", ntohs(a.sin_port));
		fclose(pf);
		rename(tmp, portfile);
	}
	mk.loop = ev_default_loop(0);
	ev_io_init(&mk.accept_io, accept_cb, fd, EV_READ);
	ev_io_start(mk.loop, &mk.accept_io);
	ev_signal_init(&sig, stop_cb, SIGTERM);
	ev_signal_start(mk.loop, &sig);
	ev_run(mk.loop, 0);
	fclose(mk.log);
	json_decref(root);
	close(fd);
	return 0;
}
