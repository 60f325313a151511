/*
 * SSE framing: lines end in \n (a trailing \r is dropped); a blank line ends an event. A line or
 * an event's data longer than max stops the stream before it is buffered, as ACP's reader does.
 */
#include "base/sse.h"

#include <string.h>

void
sse_init(struct sse *p, size_t max, sse_event_fn *on_event, void *arg)
{
	buf_init(&p->line);
	buf_init(&p->data);
	p->has_data = 0;
	buf_init(&p->id);
	p->has_id = 0;
	p->retry_ms = -1;
	p->max = max;
	p->too_long = NULL;
	p->on_event = on_event;
	p->arg = arg;
}

void
sse_free(struct sse *p)
{
	buf_free(&p->line);
	buf_free(&p->data);
	buf_free(&p->id);
}

/* Stops the stream: what went over max ("line" or "event") is kept for the caller's message. */
static int
sse_stop_too_long(struct sse *p, const char *what)
{
	p->too_long = what;
	buf_free(&p->line);
	buf_free(&p->data);
	p->has_data = 0;
	return -1;
}

static int
sse_dispatch(struct sse *p)
{
	int rc = 0;

	if (p->has_data)
		rc = p->on_event(p->arg, p->data.data ? p->data.data : "", p->data.len);
	buf_consume(&p->data, p->data.len);
	p->has_data = 0;
	return rc;
}

static int
sse_line(struct sse *p, const char *s, size_t n)
{
	if (n && s[n - 1] == '\r')
		n--;
	if (n == 0)
		return sse_dispatch(p);
	if (s[0] == ':')
		return 0;	/* a comment (keep-alive) */
	if (n >= 5 && memcmp(s, "data:", 5) == 0) {
		size_t off = (n > 5 && s[5] == ' ') ? 6 : 5;
		if (p->data.len + (p->has_data ? 1 : 0) + (n - off) > p->max)
			return sse_stop_too_long(p, "event");
		if (p->has_data)
			buf_append(&p->data, "\n", 1);
		buf_append(&p->data, s + off, n - off);
		p->has_data = 1;
		return 0;
	}
	if ((n == 2 || (n > 2 && s[2] == ':')) && memcmp(s, "id", 2) == 0) {
		size_t off = (n > 3 && s[3] == ' ') ? 4 : n > 2 ? 3 : 2;
		/* As the SSE standard says: an id with a NUL is ignored; an empty one clears it. */
		if (memchr(s + off, '\0', n - off) == NULL) {
			buf_consume(&p->id, p->id.len);
			buf_append(&p->id, s + off, n - off);
			p->has_id = n > off;
		}
	} else if (n > 6 && memcmp(s, "retry:", 6) == 0) {
		size_t off = s[6] == ' ' ? 7 : 6;
		long ms = 0;
		size_t i;
		/* Digits only, as the standard says; clamped to a day. */
		for (i = off; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			if (ms <= SSE_RETRY_MAX_MS)
				ms = ms * 10 + (s[i] - '0');
		if (i == n && n > off)
			p->retry_ms = ms > SSE_RETRY_MAX_MS ? SSE_RETRY_MAX_MS : ms;
	}
	/* event: and unknown fields carry nothing a chat stream or MCP needs. */
	return 0;
}

int
sse_feed(struct sse *p, const char *data, size_t len)
{
	if (p->too_long)
		return -1;
	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t n = nl ? (size_t)(nl - data) : len;
		int rc;
		/* Checked before buffering: an endless line never holds more than max bytes. */
		if (n > p->max - p->line.len)
			return sse_stop_too_long(p, "line");
		if (nl == NULL) {
			buf_append(&p->line, data, len);
			return 0;
		}
		if (p->line.len) {
			buf_append(&p->line, data, n);
			rc = sse_line(p, p->line.data, p->line.len);
			buf_consume(&p->line, p->line.len);
		} else {
			rc = sse_line(p, data, n);
		}
		if (rc < 0)
			return -1;
		data = nl + 1;
		len -= n + 1;
	}
	return 0;
}

int
sse_finish(struct sse *p)
{
	if (p->too_long)
		return -1;
	if (p->line.len) {
		int rc = sse_line(p, p->line.data, p->line.len);
		buf_consume(&p->line, p->line.len);
		if (rc < 0)
			return -1;
	}
	return sse_dispatch(p);
}
