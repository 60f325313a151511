/* The listing (SPEC §6.4) and its projection for the model (§6.5). */
#include "agent/subagent.h"

#include <stdlib.h>
#include <string.h>

#include "agent/subagent_int.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

/* What one candidate is (§6.4): a diagnostic reason, or NULL with *omit set in the creation window. */
static const char *
sub_diagnostic(struct agent_rt *rt, const struct sess_entry *en, struct agent **live, int *omit)
{
	*live = agent_rt_get(rt, en->id);
	*omit = 0;
	if (en->state == SESS_ENTRY_UNSUPPORTED)
		return "unsupported";
	if (en->state == SESS_ENTRY_UNAVAILABLE)
		return "unavailable";
	if (en->state == SESS_ENTRY_CORRUPT)
		return "corrupt";
	if (en->mode == NULL) {
		if (*live)
			*omit = 1;	/* live, identity not written yet: the creation window */
		return *live ? NULL : "corrupt";
	}
	return NULL;
}

/* One listing pass; emit is called per subagent candidate in listing order. */
struct sub_lister {
	struct agent_rt *rt;
	int descendants;
	int model_view;		/* the §6.5 projection, else the §6.4 service entries */
	struct map parents;	/* ids that have children (service view) */
	json_t *out;
	json_t *child, *running, *inactive;	/* shared by every entry (strings never change) */
};

static void
sub_emit(struct sub_lister *ls, const struct sess_entry *en, const char *parent, int depth)
{
	struct agent *live;
	int omit;
	const char *reason = sub_diagnostic(ls->rt, en, &live, &omit);
	json_t *v;

	if (omit)
		return;
	if (reason) {
		v = xjson_pack("{s:s, s:s, s:s}", "kind", "diagnostic", "id", en->id, "reason", reason);
	} else if (ls->model_view) {
		if (strcmp(en->mode, "continuable") != 0)
			return;		/* one-shot children are traversed, never shown */
		/* The hot path of a large listing: no format parsing, no re-validation of UTF-8. */
		v = json_object();
		json_object_set_nocheck(v, "kind", ls->child);
		json_object_set_new_nocheck(v, "id", json_string_nocheck(en->id));
		json_object_set_new_nocheck(v, "label", json_string_nocheck(en->label ? en->label : ""));
		json_object_set_nocheck(v, "status", live && live->status == AGENT_RUNNING ? ls->running : ls->inactive);
	} else {
		v = xjson_pack("{s:s, s:s, s:s, s:s, s:s, s:b}", "kind", "child", "id", en->id, "mode",
		    en->mode, "label", en->label ? en->label : "", "activity", live ? "running" : "inactive",
		    "has_children", map_get(&ls->parents, en->id) != NULL);
	}
	if (ls->descendants) {
		json_object_set_new(v, "parent", json_string(parent));
		json_object_set_new(v, "depth", json_integer(depth));
	}
	json_array_append_new(ls->out, v);
}

/* Pre-order walk below node over tree (parent id -> NULL-terminated entry array). */
static void
sub_walk(struct sub_lister *ls, const struct map *tree, const char *node, int depth, struct map *visited)
{
	struct sess_entry **kids = map_get(tree, node);

	if (kids == NULL || map_get(visited, node))
		return;
	map_put(visited, node, (void *)1);
	for (size_t i = 0; kids[i]; i++) {
		if (sub_is_subagent(kids[i]))
			sub_emit(ls, kids[i], node, depth);
		sub_walk(ls, tree, kids[i]->id, depth + 1, visited);
	}
}

static void
sub_list_descendants(struct sub_lister *ls, const char *root)
{
	struct map tree, visited;
	size_t n, pos = 0;
	struct sess_entry **all = sess_corpus_list(ls->rt->corpus, &n);
	void *v;

	/* One snapshot, sorted once; grouping keeps each parent's children in that order. */
	qsort(all, n, sizeof(*all), sess_entry_order);
	map_init(&tree);
	map_init(&visited);
	for (size_t i = 0; i < n; i++) {
		struct sess_entry *en = all[i];
		if (en->gone || en->parent == NULL)
			continue;
		size_t *kids = map_get(&tree, en->parent);
		size_t k = kids ? kids[0] : 0;
		kids = xrealloc(kids, (k + 3) * sizeof(*kids));
		kids[0] = k + 1;
		kids[k + 1] = (size_t)en;
		kids[k + 2] = 0;
		map_put(&tree, en->parent, kids);
	}
	/* Shift each group so it reads as a NULL-terminated entry array. */
	while (map_next(&tree, &pos, NULL, &v)) {
		size_t *kids = v;
		memmove(kids, kids + 1, (kids[0] + 1) * sizeof(*kids));
	}
	sub_walk(ls, &tree, root, 1, &visited);
	pos = 0;
	while (map_next(&tree, &pos, NULL, &v))
		free(v);
	map_free(&tree);
	map_free(&visited);
	free(all);
}

static json_t *
sub_list(struct agent_rt *rt, const char *parent, int descendants, int model_view)
{
	struct sub_lister ls = { rt, descendants, model_view, { 0 }, json_array(), json_string_nocheck("child"),
		json_string_nocheck("running"), json_string_nocheck("inactive") };

	map_init(&ls.parents);
	if (!model_view) {
		size_t pos = 0;
		void *v;
		while (map_next(&rt->corpus->by_id, &pos, NULL, &v)) {
			struct sess_entry *en = v;
			if (en->parent && !en->gone)
				map_put(&ls.parents, en->parent, (void *)1);
		}
	}
	if (descendants) {
		sub_list_descendants(&ls, parent);
	} else {
		size_t n;
		struct sess_entry **kids = sess_corpus_children(rt->corpus, parent, &n);
		for (size_t i = 0; i < n; i++)
			if (sub_is_subagent(kids[i]))
				sub_emit(&ls, kids[i], parent, 1);
		free(kids);
	}
	map_free(&ls.parents);
	json_decref(ls.child);
	json_decref(ls.running);
	json_decref(ls.inactive);
	return ls.out;
}

json_t *
subagent_list_raw(struct agent_rt *rt, const char *parent, int descendants, struct err *e)
{
	(void)e;
	return sub_list(rt, parent, descendants, 0);
}

json_t *
subagent_list(struct agent *caller, int descendants, struct err *e)
{
	(void)e;
	return sub_list(caller->rt, agent_id(caller), descendants, 1);
}

