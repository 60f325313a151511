/* What every provider shares: the calls that go through its ops table. */
#include "model/model.h"

#include <string.h>

void
model_free(struct model *m)
{
	if (m)
		m->ops->free(m);
}

const char *
model_id(const struct model *m)
{
	return m->id ? m->id : m->ops->name;
}

const char *
model_provider(const struct model *m)
{
	return m->provider ? m->provider : m->ops->name;
}

int
model_context_overflow(const char *msg)
{
	return msg && strcasestr(msg, "context") &&
	    (strcasestr(msg, "length") || strcasestr(msg, "maximum"));
}
