/* The no-key default: explains how to configure a model; never calls tools. */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "base/utf8.h"
#include "base/xmalloc.h"

struct model_req {
	struct model_sink sink;
	int cancelled;
};

static void
builtin_deliver(void *arg)
{
	struct model_req *r = arg;
	const char *t = MODEL_BUILTIN_TEXT;
	size_t len = strlen(t), off = 0;

	if (r->cancelled) {
		free(r);
		return;
	}
	while (off < len) {
		size_t n = utf8_boundary(t + off, len - off, 64);
		r->sink.text(r->sink.arg, t + off, n);
		off += n;
	}
	r->sink.finish(r->sink.arg, "stop", NULL);
	free(r);
}

static struct model_req *
builtin_start(struct model *m, const struct model_call *call, const struct model_sink *sink)
{
	struct model_req *r = xcalloc(1, sizeof(*r));

	(void)call;
	r->sink = *sink;
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
