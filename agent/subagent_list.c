/* The listing (docs/contract.md §6.4) and its projection for the model (§6.5). */
#include "agent/agent_def.h"
#include "agent/subagent.h"

#include <stdlib.h>
#include <string.h>

#include "agent/ask.h"
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

/*
 * The model's last listing of each scope, kept with the corpus (its memo) for the next one. A
 * listing of 10,000 children is 10,000 objects of about 730 bytes in ten allocations each, and
 * the heap gives such a block back to the system once it is freed, so every listing faulted its
 * 7 MB in again (1,800 page faults, about 10 us each on the benchmark's VM: 18 of its 26 ms). An
 * entry whose facts are as they were listed gets the same object again (a reference: nothing
 * changes an entry's object once it is listed), so a repeated listing allocates only its array.
 * What stays is one listing per scope, the objects that listing's tool result holds anyway.
 */
struct sub_memo_item {
	const struct sess_entry *en;	/* identity only: entries live as long as the corpus */
	uint64_t gen;		/* en->gen when listed: its facts (label, parent, mode) as they were */
	json_t *v;		/* a reference to the object listed for en */
	int running;
	int depth;
};

struct sub_memo_scope {
	struct sub_memo_item *items, *next;	/* the last listing's, the one being made */
	size_t n, cap, nnext, capnext;
	size_t at;		/* where in items the walk expects its next entry */
};

struct sub_memo {
	struct sub_memo_scope scope[2];	/* children, descendants */
	json_t *child, *running, *inactive;	/* shared by every entry (strings never change) */
};

static void
sub_memo_free(void *p)
{
	struct sub_memo *m = p;

	for (int i = 0; i < 2; i++) {
		for (size_t k = 0; k < m->scope[i].n; k++)
			json_decref(m->scope[i].items[k].v);
		free(m->scope[i].items);
		free(m->scope[i].next);
	}
	json_decref(m->child);
	json_decref(m->running);
	json_decref(m->inactive);
	free(m);
}

static struct sub_memo *
sub_memo(struct sess_corpus *c)
{
	struct sub_memo *m = c->memo;

	if (m == NULL) {
		m = xcalloc(1, sizeof(*m));
		m->child = json_string_nocheck("child");
		m->running = json_string_nocheck("running");
		m->inactive = json_string_nocheck("inactive");
		c->memo = m;
		c->memo_free = sub_memo_free;
	}
	return m;
}

/*
 * The last listing's item for en when what it shows is unchanged (the same facts, by en->gen,
 * and the same activity and depth), else NULL. The listing order rarely changes, so en is
 * looked for a few places on from where the last one was found; one that moved further is
 * built again. Nothing of en but its gen is read: at 100,000 children each string of an entry
 * compared is a cache miss.
 */
static struct sub_memo_item *
sub_memo_find(struct sub_memo_scope *s, const struct sess_entry *en, int running, int depth)
{
	if (s->at + 8 < s->n)	/* the object a later entry takes a reference to, early */
		__builtin_prefetch(s->items[s->at + 8].v, 1);
	for (size_t k = s->at; k < s->n && k < s->at + 8; k++) {
		struct sub_memo_item *it = &s->items[k];
		if (it->en != en)
			continue;
		s->at = k + 1;
		if (it->gen != en->gen || it->running != running || it->depth != depth)
			return NULL;
		return it;
	}
	return NULL;
}

/* Room for n more items in the listing being made. */
static void
sub_memo_reserve(struct sub_memo_scope *s, size_t n)
{
	if (s->nnext + n <= s->capnext)
		return;
	s->capnext = s->nnext + n > 2 * s->capnext ? s->nnext + n : 2 * s->capnext;
	s->next = xrealloc(s->next, s->capnext * sizeof(*s->next));
}

/* Ends the listing: its entries are the ones the next listing compares with. */
static void
sub_memo_end(struct sub_memo_scope *s)
{
	struct sub_memo_item *t = s->items;
	size_t cap = s->cap;

	for (size_t k = 0; k < s->n; k++)
		json_decref(s->items[k].v);
	s->items = s->next;
	s->n = s->nnext;
	s->cap = s->capnext;
	s->next = t;
	s->capnext = cap;
	s->nnext = 0;
}

/* One listing pass; emit is called per candidate in listing order and skips what is no subagent. */
struct sub_lister {
	struct agent_rt *rt;
	int descendants;
	int model_view;		/* the §6.5 projection, else the §6.4 service entries */
	struct map parents;	/* ids that have children (service view) */
	json_t *out;
	struct sub_memo *memo;	/* model view */
	struct sub_memo_scope *scope;
};

/* The memo's object for en when unchanged since the last listing (a new reference), else NULL. */
static json_t *
sub_model_reuse(struct sub_lister *ls, const struct sess_entry *en, int running, int depth)
{
	struct sub_memo_scope *s = ls->scope;
	struct sub_memo_item *old, *it;

	old = sub_memo_find(s, en, running, depth);
	if (old == NULL)
		return NULL;
	sub_memo_reserve(s, 1);
	it = &s->next[s->nnext++];
	*it = *old;		/* the reference moves */
	old->v = NULL;
	return json_incref(it->v);
}

/* A child's agentType, and its model when it is not its parent's (docs/contract.md §23.3). */
static void
sub_type_fields(struct sub_lister *ls, const struct sess_entry *en, const char *parent, json_t *v)
{
	const struct sess_entry *up;

	/* checked when the descriptor was read (session/descriptor.c): no re-validation here */
	json_object_set_new_nocheck(v, "agentType", json_string_nocheck(en->agent_type ? en->agent_type : "general"));
	if (en->branch)		/* an isolated child's, null once deleted (docs/contract.md §24) */
		json_object_set_new_nocheck(v, "branch", *en->branch ? json_string_nocheck(en->branch) : json_null());
	if (en->model == NULL)
		return;
	up = parent ? map_get(&ls->rt->corpus->by_id, parent) : NULL;
	const char *theirs = up ? up->model : NULL;
	if (up && up->parent == NULL) {
		/* a root's model is its session's current one */
		struct agent *root = agent_rt_get(ls->rt, parent);
		theirs = root ? agent_model(root) : NULL;
	}
	if (!(theirs && strcmp(theirs, en->model) == 0))
		json_object_set_new_nocheck(v, "model", json_string_nocheck(en->model));
}

/* The model's object for a continuable child (a new reference), built and kept in the memo. */
static json_t *
sub_model_entry(struct sub_lister *ls, const struct sess_entry *en, int running, const char *parent, int depth)
{
	struct sub_memo_scope *s = ls->scope;
	struct sub_memo_item *it;

	sub_memo_reserve(s, 1);
	it = &s->next[s->nnext++];
	/* The hot path of a large listing: no format parsing, no re-validation of UTF-8. */
	it->en = en;
	it->gen = en->gen;
	it->running = running;
	it->depth = depth;
	it->v = json_object();
	json_object_set_nocheck(it->v, "kind", ls->memo->child);
	json_object_set_new_nocheck(it->v, "id", json_string_nocheck(en->id));
	json_object_set_new_nocheck(it->v, "label", json_string_nocheck(en->label ? en->label : ""));
	json_object_set_nocheck(it->v, "status", running ? ls->memo->running : ls->memo->inactive);
	sub_type_fields(ls, en, parent, it->v);
	if (ls->descendants) {
		json_object_set_new(it->v, "parent", json_string(parent));
		json_object_set_new(it->v, "depth", json_integer(depth));
	}
	return json_incref(it->v);
}

static void
sub_emit(struct sub_lister *ls, const struct sess_entry *en, const char *parent, int depth)
{
	struct agent *live;
	int omit;
	const char *reason;
	json_t *v;

	if (ls->model_view) {
		/* listed before and unchanged: no string of en is looked at (the corpus marks an
		 * entry live exactly while its agent is resident) */
		live = en->live ? agent_rt_get(ls->rt, en->id) : NULL;
		v = sub_model_reuse(ls, en, live && live->status == AGENT_RUNNING, depth);
		if (v) {
			json_array_append_new(ls->out, v);
			return;
		}
	}
	if (!sub_is_subagent(en))
		return;
	reason = sub_diagnostic(ls->rt, en, &live, &omit);
	if (omit)
		return;
	if (reason) {
		v = xjson_pack("{s:s, s:s, s:s}", "kind", "diagnostic", "id", en->id, "reason", reason);
	} else if (ls->model_view) {
		if (strcmp(en->mode, "continuable") != 0)
			return;		/* one-shot children are traversed, never shown */
		json_array_append_new(ls->out,
		    sub_model_entry(ls, en, live && live->status == AGENT_RUNNING, parent, depth));
		return;
	} else {
		v = xjson_pack("{s:s, s:s, s:s, s:s, s:s, s:b}", "kind", "child", "id", en->id, "mode",
		    en->mode, "label", en->label ? en->label : "", "activity", live ? "running" : "inactive",
		    "has_children", map_get(&ls->parents, en->id) != NULL);
		sub_type_fields(ls, en, parent, v);
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
		sub_emit(ls, kids[i], node, depth);
		sub_walk(ls, tree, kids[i]->id, depth + 1, visited);
	}
}

/* Slots of a group of k children (its count, the k entries, the end), a power of two. */
static size_t
sub_group_cap(size_t k)
{
	size_t c = 4;

	while (c < k + 2)
		c *= 2;
	return c;
}

static void
sub_list_descendants(struct sub_lister *ls, const char *root)
{
	struct map tree, visited;
	size_t n, pos = 0;
	struct sess_entry **all = sess_corpus_list(ls->rt->corpus, &n);
	void *v;

	/* One snapshot, sorted once; grouping keeps each parent's children in that order. */
	sess_corpus_sort(ls->rt->corpus, all, n);
	map_init(&tree);
	map_init(&visited);
	for (size_t i = 0; i < n; i++) {
		struct sess_entry *en = all[i];
		if (en->gone || en->parent == NULL)
			continue;
		/* kids[0] counts the group; the array doubles (it grew by one entry per child, a
		 * copy of the whole group each time it could not grow in place) */
		size_t *kids = map_get(&tree, en->parent);
		size_t k = kids ? kids[0] : 0;
		if (kids == NULL || sub_group_cap(k + 1) != sub_group_cap(k)) {
			kids = xrealloc(kids, sub_group_cap(k + 1) * sizeof(*kids));
			map_put(&tree, en->parent, kids);
		}
		kids[0] = k + 1;
		kids[k + 1] = (size_t)en;
		kids[k + 2] = 0;
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
	struct sub_lister ls = { rt, descendants, model_view, { 0 }, json_array(), NULL, NULL };

	map_init(&ls.parents);
	if (model_view) {
		ls.memo = sub_memo(rt->corpus);
		ls.scope = &ls.memo->scope[descendants];
		ls.scope->nnext = ls.scope->at = 0;
	} else {
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
		if (model_view)
			sub_memo_reserve(ls.scope, n);
		for (size_t i = 0; i < n; i++) {
			/* the entries are scattered over the heap: ask for the lines emit reads early */
			if (i + 8 < n) {
				__builtin_prefetch(&kids[i + 8]->live);
				__builtin_prefetch(&kids[i + 8]->gen);
			}
			sub_emit(&ls, kids[i], parent, 1);
		}
		free(kids);
	}
	if (model_view)
		sub_memo_end(ls.scope);
	map_free(&ls.parents);
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

