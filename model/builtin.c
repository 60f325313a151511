/* The no-key default: explains how to configure a model; never calls tools. */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "base/buf.h"
#include "base/utf8.h"
#include "base/xmalloc.h"

#define BUILTIN_SUMMARY_CHARS 200

struct model_req {
	struct model_sink sink;
	char *summary;		/* owned: a summary request's answer, else NULL */
	int cancelled;
};

/* The byte length of the first max characters of s (UTF-8, checked valid upstream). */
static size_t
builtin_prefix(const char *s, size_t len, size_t max)
{
	size_t i = 0, n = 0;

	while (i < len && n < max) {
		i++;
		while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80)
			i++;
		n++;
	}
	return i;
}

char *
model_builtin_summary(const json_t *messages)
{
	size_t n = json_array_size(messages);
	struct buf b;

	buf_init(&b);
	for (size_t i = 0; i + 1 < n; i++) {
		const json_t *m = json_array_get(messages, i);
		const json_t *content = json_object_get(m, "content");
		const char *text = json_is_string(content) ? json_string_value(content) : "";
		size_t len = json_is_string(content) ? json_string_length(content) : 0;
		const char *role = json_string_value(json_object_get(m, "role"));
		size_t k;
		json_t *c;

		buf_printf(&b, "%s%s: ", b.len ? "\n" : "", role ? role : "?");
		buf_append(&b, text, builtin_prefix(text, len, BUILTIN_SUMMARY_CHARS));
		json_array_foreach(json_object_get(m, "tool_calls"), k, c)
		{
			const char *name = json_string_value(json_object_get(json_object_get(c, "function"),
			    "name"));
			buf_printf(&b, " [%s]", name ? name : "?");
		}
	}
	if (b.len == 0)
		buf_puts(&b, "(nothing yet)");
	return buf_steal(&b);
}

static void
builtin_deliver(void *arg)
{
	struct model_req *r = arg;
	const char *t = r->summary ? r->summary : MODEL_BUILTIN_TEXT;
	size_t len = strlen(t), off = 0;

	if (r->cancelled) {
		free(r->summary);
		free(r);
		return;
	}
	while (off < len) {
		size_t n = utf8_boundary(t + off, len - off, 64);
		r->sink.text(r->sink.arg, t + off, n);
		off += n;
	}
	r->sink.finish(r->sink.arg, "stop", NULL);
	free(r->summary);
	free(r);
}

static struct model_req *
builtin_start(struct model *m, const struct model_call *call, const struct model_sink *sink)
{
	struct model_req *r = xcalloc(1, sizeof(*r));

	r->sink = *sink;
	if (call->summary)
		r->summary = model_builtin_summary(call->messages);
	runq_push(m->runq, builtin_deliver, r);
	return r;
}

static void
builtin_cancel(struct model *m, struct model_req *r)
{
	(void)m;
	r->cancelled = 1;	/* the queued delivery frees it */
}

static void
builtin_report(struct model *m)
{
	(void)m;
}

static void
builtin_free(struct model *m)
{
	free(m);
}

static const struct model_ops builtin_ops = {
	"builtin", builtin_start, builtin_cancel, builtin_report, builtin_free,
};

struct model *
model_builtin_new(struct runq *q)
{
	struct model *m = xcalloc(1, sizeof(*m));

	m->ops = &builtin_ops;
	m->runq = q;
	return m;
}
