/* A child's composition (agent/compose.h). */
#include "agent/compose.h"

#include <stdlib.h>
#include <string.h>

#include "agent/permit.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

void
agent_comp_free(struct agent_comp *c)
{
	free(c->type);
	free(c->type_description);
	free(c->model);
	json_decref(c->tools);
	json_decref(c->denied);
	free(c->instructions);
	if (c->wt) {
		git_wt_free(c->wt);
		free(c->wt);
	}
	memset(c, 0, sizeof(*c));
	c->ceiling = -1;
}

/* The length of a pattern's prefix (without its *), or -1 for a plain name. */
static long
pat_prefix(const char *p)
{
	size_t n = strlen(p);

	return n > 1 && p[n - 1] == '*' ? (long)n - 1 : -1;
}

static int
pat_matches(const char *pat, const char *name)
{
	long n = pat_prefix(pat);

	return n < 0 ? strcmp(pat, name) == 0 : strncmp(pat, name, (size_t)n) == 0;
}

/* What two entries both allow, as one of them (borrowed), or NULL. */
static const char *
pat_meet(const char *a, const char *b)
{
	long an = pat_prefix(a), bn = pat_prefix(b);

	if (an < 0 && bn < 0)
		return strcmp(a, b) == 0 ? a : NULL;
	if (an < 0)
		return pat_matches(b, a) ? a : NULL;
	if (bn < 0)
		return pat_matches(a, b) ? b : NULL;
	if (an <= bn)
		return strncmp(a, b, (size_t)an) == 0 ? b : NULL;
	return strncmp(a, b, (size_t)bn) == 0 ? a : NULL;
}

static int
list_has(const json_t *list, const char *s)
{
	size_t i;
	const json_t *v;

	json_array_foreach(list, i, v)
		if (strcmp(json_string_value(v), s) == 0)
			return 1;
	return 0;
}

static void
list_add(json_t *list, const char *s)
{
	if (!list_has(list, s))
		json_array_append_new(list, json_string(s));
}

static int
list_matches(const json_t *list, const char *name)
{
	size_t i;
	const json_t *v;

	json_array_foreach(list, i, v)
		if (pat_matches(json_string_value(v), name))
			return 1;
	return 0;
}

int
agent_comp_allows(const struct agent_comp *c, const char *name)
{
	if (c->tools && list_has(c->tools, name))
		return 1;	/* a name: resolved against the denylist when the child started */
	if (c->tools && !list_matches(c->tools, name))
		return 0;
	return !list_matches(c->denied, name);
}

/* The parent's own set: its names this profile has (and MCP names), its patterns. New array. */
static json_t *
comp_parent_set(const struct agent_comp *parent, const struct toolbox *tb)
{
	json_t *p = json_array();
	size_t i;
	const json_t *v;

	if (parent->tools == NULL) {
		for (i = 0; i < tb->n; i++)
			if (agent_comp_allows(parent, tb->tools[i]->name))
				list_add(p, tb->tools[i]->name);
		list_add(p, "mcp__*");
		return p;
	}
	json_array_foreach(parent->tools, i, v) {
		const char *s = json_string_value(v);
		if (pat_prefix(s) >= 0 || strncmp(s, "mcp__", 5) == 0 || toolbox_find(tb, s))
			list_add(p, s);
	}
	return p;
}

/* Whether a denied entry could still match a name a pattern of set allows. */
static int
comp_deny_overlaps(const json_t *set, const char *d)
{
	size_t i;
	const json_t *v;

	json_array_foreach(set, i, v)
		if (pat_prefix(json_string_value(v)) >= 0 && pat_meet(json_string_value(v), d))
			return 1;
	return 0;
}

void
agent_comp_make(struct agent_comp *out, const struct agent_comp *parent, const struct toolbox *tb,
    const struct agent_type *t, const char *model, int keep_send)
{
	json_t *p = comp_parent_set(parent, tb), *c, *deny = json_array(), *kept = json_array();
	size_t i, j;
	const json_t *v, *w;

	memset(out, 0, sizeof(*out));
	out->type = xstrdup(t->name);
	out->type_description = xstrdup(t->description);
	/* the call's, the type's, else the parent's (NULL: the root's, whatever it is when it runs) */
	out->model = model ? xstrdup(model) : t->model ? xstrdup(t->model) : parent->model ? xstrdup(parent->model) : NULL;
	out->ceiling = parent->ceiling;
	if (t->ceiling >= 0 && (out->ceiling < 0 || t->ceiling < out->ceiling))
		out->ceiling = t->ceiling;
	out->max_steps = t->max_steps;
	out->instructions = t->instructions && *t->instructions ? xstrdup(t->instructions) : NULL;
	/* tools: the parent's set met with the allowlist */
	if (t->tools == NULL) {
		c = json_incref(p);
	} else {
		c = json_array();
		json_array_foreach(p, i, v) json_array_foreach(t->tools, j, w) {
			const char *m = pat_meet(json_string_value(v), json_string_value(w));
			if (m)
				list_add(c, m);
		}
	}
	/* minus the denylist, the parent's and the type's */
	json_array_foreach(parent->denied, i, v) list_add(deny, json_string_value(v));
	json_array_foreach(t->denied, i, v) list_add(deny, json_string_value(v));
	out->tools = json_array();
	json_array_foreach(c, i, v) {
		const char *s = json_string_value(v);
		long n = pat_prefix(s);
		int gone = 0;
		json_array_foreach(deny, j, w) {
			const char *d = json_string_value(w);
			long dn = pat_prefix(d);
			/* a name the denylist matches; a pattern a denied pattern covers */
			gone |= n < 0 ? pat_matches(d, s) : dn >= 0 && dn <= n && strncmp(d, s, (size_t)dn) == 0;
		}
		if (!gone)
			list_add(out->tools, s);
	}
	json_array_foreach(deny, i, v)
		if (comp_deny_overlaps(out->tools, json_string_value(v)))
			list_add(kept, json_string_value(v));
	if (keep_send && !agent_comp_allows(&(struct agent_comp){ .tools = out->tools, .denied = kept }, "send_message"))
		list_add(out->tools, "send_message");
	out->denied = json_array_size(kept) ? json_incref(kept) : NULL;
	json_decref(kept);
	json_decref(deny);
	json_decref(c);
	json_decref(p);
}

void
agent_comp_from_descriptor(struct agent_comp *out, const struct sess_descriptor *d)
{
	enum permit_mode m;

	memset(out, 0, sizeof(*out));
	out->ceiling = -1;
	out->type = xstrdup(d->agent_type ? d->agent_type : "general");
	out->type_description = d->type_description ? xstrdup(d->type_description) : NULL;
	out->model = d->model ? xstrdup(d->model) : NULL;
	out->tools = d->tools ? json_deep_copy(d->tools) : NULL;
	out->denied = d->denied && json_array_size(d->denied) ? json_deep_copy(d->denied) : NULL;
	if (d->ceiling && permit_mode_parse(d->ceiling, &m) == 0)
		out->ceiling = (int)m;
	out->max_steps = d->max_steps;
	out->instructions = d->instructions && *d->instructions ? xstrdup(d->instructions) : NULL;
	if (d->iso_repo) {
		out->wt = xcalloc(1, sizeof(*out->wt));
		out->wt->repo = xstrdup(d->iso_repo);
		out->wt->branch = xstrdup(d->iso_branch);
		out->wt->base = xstrdup(d->iso_base);
		out->wt->subdir = xstrdup(d->iso_subdir);
	}
}

void
agent_comp_unreadable(struct agent_comp *out)
{
	memset(out, 0, sizeof(*out));
	out->type = xstrdup("general");
	out->tools = json_array();
	out->ceiling = PERMIT_READ_ONLY;
}

void
agent_comp_describe(const struct agent_comp *c, json_t *data)
{
	json_object_set_new(data, "agentType", json_string(c->type ? c->type : "general"));
	json_object_set_new(data, "agentTypeDescription", c->type_description ? json_string(c->type_description) :
	    json_null());
	json_object_set_new(data, "model", c->model ? json_string(c->model) : json_null());
	json_object_set_new(data, "tools", c->tools ? json_deep_copy(c->tools) : json_array());
	if (c->denied)
		json_object_set_new(data, "deniedTools", json_deep_copy(c->denied));
	json_object_set_new(data, "ceiling", c->ceiling >= 0 ? json_string(permit_mode_id((enum permit_mode)c->ceiling)) :
	    json_null());
	json_object_set_new(data, "maxSteps", c->max_steps > 0 ? json_integer(c->max_steps) : json_null());
	json_object_set_new(data, "instructions", c->instructions ? json_string(c->instructions) : json_null());
	if (c->wt)
		json_object_set_new(data, "isolation", xjson_pack("{s:s, s:s, s:s, s:s, s:s}", "kind", "worktree", "repo",
		    c->wt->repo, "branch", c->wt->branch, "base", c->wt->base, "subdir", c->wt->subdir));
	else
		json_object_set_new(data, "isolation", json_null());
}
