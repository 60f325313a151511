/* SSE framing: lines end in \n (a trailing \r is dropped); a blank line ends an event. */
#include "agent/sse.h"

#include <string.h>

void
sse_init(struct sse *p, sse_event_fn *on_event, void *arg)
{
	buf_init(&p->line);
	buf_init(&p->data);
	p->has_data = 0;
	p->on_event = on_event;
	p->arg = arg;
}

void
sse_free(struct sse *p)
{
	buf_free(&p->line);
	buf_free(&p->data);
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
		if (p->has_data)
			buf_append(&p->data, "\n", 1);
		buf_append(&p->data, s + off, n - off);
		p->has_data = 1;
	}
	/* event:, id:, retry: and unknown fields carry nothing a chat stream needs. */
	return 0;
}

int
sse_feed(struct sse *p, const char *data, size_t len)
{
	while (len) {
		const char *nl = memchr(data, '\n', len);
		if (nl == NULL) {
			buf_append(&p->line, data, len);
			return 0;
		}
		size_t n = (size_t)(nl - data);
		int rc;
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
	if (p->line.len) {
		int rc = sse_line(p, p->line.data, p->line.len);
		buf_consume(&p->line, p->line.len);
		if (rc < 0)
			return -1;
	}
	return sse_dispatch(p);
}
