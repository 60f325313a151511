/* The Team's task board (docs/contract.md §9): tasks with revisions, dependencies and write scopes. */
#include "agent/agent_def.h"
#include "agent/team.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/team_int.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

static int
team_task_ready(const struct team *t, const struct team_task *k)
{
	size_t i;
	json_t *b;

	if (k->status != TASK_PENDING)
		return 0;
	json_array_foreach(k->blocked_by, i, b) {
		const struct team_task *d = team_task_by_id((struct team *)t, json_string_value(b));
		if (d && d->status != TASK_COMPLETED && d->status != TASK_DELETED)
			return 0;
	}
	return 1;
}

static int
team_scopes_overlap(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	return strncmp(a, b, la < lb ? la : lb) == 0;
}

json_t *
team_task_view(const struct team *t, const struct team_task *k)
{
	json_t *wrap = team_task_record(k);
	json_t *view = json_deep_copy(json_object_get(wrap, "task"));
	json_t *warnings = json_array();
	size_t i, j;
	json_t *s, *o;

	json_decref(wrap);
	json_object_set_new(view, "ready", json_boolean(team_task_ready(t, k)));
	json_array_foreach(k->write_scopes, i, s) {
		for (size_t n = 0; n < t->ntasks; n++) {
			const struct team_task *other = &t->tasks[n];
			if (other == k || other->status == TASK_COMPLETED || other->status == TASK_DELETED)
				continue;
			json_array_foreach(other->write_scopes, j, o) {
				if (!team_scopes_overlap(json_string_value(s), json_string_value(o)))
					continue;
				char *w = xasprintf("write scope \"%s\" overlaps task-%d (\"%s\")", json_string_value(s),
				    other->n, json_string_value(o));
				json_array_append_new(warnings, json_string(w));
				free(w);
			}
		}
	}
	json_object_set_new(view, "writeScopeWarnings", warnings);
	return view;
}

static int
team_deps_check(struct team *t, const struct team_task *self, const json_t *deps, struct err *e)
{
	size_t i;
	json_t *d;

	if (deps && !json_is_array(deps))
		return err_set(e, ERR_TEAM_INVALID_ARGUMENT, "blocked_by must be an array of task ids");
	json_array_foreach(deps, i, d) {
		struct team_task *k = team_task_by_id(t, json_string_value(d));
		if (k == NULL || k->status == TASK_DELETED)
			return err_set(e, ERR_TEAM_TASK_NOT_FOUND, "dependency \"%.40s\" does not exist",
			    json_string_value(d) ? json_string_value(d) : "?");
		if (self && k == self)
			return err_set(e, ERR_TEAM_TASK_DEPENDENCY_CYCLE, "task-%d cannot depend on itself", self->n);
	}
	if (self == NULL)
		return 0;
	/*
	 * Acyclic: nothing the new blockers (transitively) wait for may be self. A task is marked
	 * when pushed and pushed at most once, so the stack never holds more than ntasks entries.
	 */
	char *seen = xcalloc(t->ntasks + 1, 1);
	int *stack = xcalloc(t->ntasks + 1, sizeof(int));
	size_t top = 0;
	int cycle = 0;
	json_array_foreach(deps, i, d) {
		int n = team_task_by_id(t, json_string_value(d))->n;
		if (!seen[n]) {
			seen[n] = 1;
			stack[top++] = n;
		}
	}
	while (top) {
		int n = stack[--top];
		if (n == self->n) {
			cycle = 1;
			break;
		}
		json_array_foreach(t->tasks[n - 1].blocked_by, i, d) {
			struct team_task *k = team_task_by_id(t, json_string_value(d));
			if (k && !seen[k->n]) {
				seen[k->n] = 1;
				stack[top++] = k->n;
			}
		}
	}
	free(seen);
	free(stack);
	if (cycle)
		return err_set(e, ERR_TEAM_TASK_DEPENDENCY_CYCLE, "these dependencies would make task-%d wait for "
		    "itself", self->n);
	return 0;
}

static json_t *
team_strings(const json_t *v)
{
	return json_is_array(v) ? json_deep_copy(v) : json_array();
}

json_t *
team_task_create(struct team *t, const char *caller, const char *subject, const char *description,
    const json_t *blocked_by, const json_t *write_scopes, struct err *e)
{
	struct team_task *k;

	(void)caller;
	if (t->ntasks >= TEAM_MAX_TASKS) {
		err_set(e, ERR_TEAM_TASK_LIMIT, "the task board is full (%d tasks)", TEAM_MAX_TASKS);
		return NULL;
	}
	if (team_deps_check(t, NULL, blocked_by, e) < 0)
		return NULL;
	t->tasks = xrealloc(t->tasks, (t->ntasks + 1) * sizeof(*t->tasks));
	k = &t->tasks[t->ntasks];
	memset(k, 0, sizeof(*k));
	k->n = (int)t->ntasks + 1;
	k->revision = 1;
	k->subject = xstrdup(subject);
	k->description = xstrdup(description);
	k->blocked_by = team_strings(blocked_by);
	k->write_scopes = team_strings(write_scopes);
	if (team_write(t, "team/task", team_task_record(k), e) < 0) {
		team_task_clear(k);
		return NULL;
	}
	t->ntasks++;
	team_changed(t);
	return team_task_view(t, k);
}

json_t *
team_task_get(struct team *t, const char *id, struct err *e)
{
	struct team_task *k = team_task_by_id(t, id);

	if (k == NULL) {
		err_set(e, ERR_TEAM_TASK_NOT_FOUND, "task \"%.40s\" does not exist", id);
		return NULL;
	}
	return team_task_view(t, k);
}

json_t *
team_task_list(struct team *t, const json_t *args, struct err *e)
{
	const char *status = json_string_value(json_object_get(args, "status"));
	const char *owner = json_string_value(json_object_get(args, "owner"));
	const json_t *ready = json_object_get(args, "ready");
	const char *cursor = json_string_value(json_object_get(args, "cursor"));
	json_int_t limit = json_object_get(args, "limit") ? json_integer_value(json_object_get(args, "limit")) : 50;
	size_t start = 0;
	json_t *tasks = json_array(), *out;

	if (limit < 1 || limit > 100) {
		json_decref(tasks);
		err_set(e, ERR_TEAM_INVALID_ARGUMENT, "limit must be between 1 and 100");
		return NULL;
	}
	if (cursor) {
		struct team_task *k = team_task_by_id(t, cursor);
		if (k == NULL) {
			json_decref(tasks);
			err_set(e, ERR_TEAM_INVALID_ARGUMENT, "cursor \"%.40s\" is not one this tool returned", cursor);
			return NULL;
		}
		start = (size_t)k->n;
	}
	out = json_object();
	for (size_t i = start; i < t->ntasks; i++) {
		struct team_task *k = &t->tasks[i];
		if (status ? strcmp(team_status_names[k->status], status) != 0 : k->status == TASK_DELETED)
			continue;
		if (owner && (!k->owner || strcmp(k->owner, owner) != 0))
			continue;
		if (json_is_boolean(ready) && json_is_true(ready) != team_task_ready(t, k))
			continue;
		if (json_array_size(tasks) == (size_t)limit) {
			char cur[32];
			snprintf(cur, sizeof(cur), "task-%d", t->tasks[i - 1].n);
			/* The cursor names the last task returned; the next page starts after it. */
			snprintf(cur, sizeof(cur), "%s",
			    json_string_value(json_object_get(json_array_get(tasks, json_array_size(tasks) - 1), "id")));
			json_object_set_new(out, "nextCursor", json_string(cur));
			break;
		}
		json_array_append_new(tasks, team_task_view(t, k));
	}
	json_object_set_new(out, "tasks", tasks);
	return out;
}

/* One action of team_task_update on k (a copy is kept to undo it): 0, or -1 with e. */
typedef int team_action_fn(struct team *t, struct team_task *k, const char *caller, const json_t *args,
    struct err *e);

static int
team_act_claim(struct team *t, struct team_task *k, const char *caller, const json_t *args, struct err *e)
{
	(void)args;
	if (k->owner)
		return err_set(e, ERR_TEAM_TASK_ALREADY_CLAIMED, "task-%d is already claimed by \"%s\"", k->n,
		    k->owner);
	if (!team_task_ready(t, k))
		return err_set(e, ERR_TEAM_TASK_BLOCKED, "task-%d is not ready: a task it is blocked by is not "
		    "completed", k->n);
	k->owner = xstrdup(caller);
	k->status = TASK_IN_PROGRESS;
	return 0;
}

static int
team_act_release(struct team *t, struct team_task *k, const char *caller, const json_t *args, struct err *e)
{
	(void)t, (void)caller, (void)args;
	if (k->status != TASK_IN_PROGRESS)
		return err_set(e, ERR_TEAM_INVALID_ARGUMENT, "task-%d is not in progress", k->n);
	free(k->owner);
	k->owner = NULL;
	k->status = TASK_PENDING;
	return 0;
}

static int
team_act_edit(struct team *t, struct team_task *k, const char *caller, const json_t *args, struct err *e)
{
	const json_t *s = json_object_get(args, "subject"), *d = json_object_get(args, "description");
	const json_t *w = json_object_get(args, "write_scopes");

	(void)t, (void)caller;
	if (!s && !d && !w)
		return err_set(e, ERR_TEAM_INVALID_ARGUMENT, "edit needs subject, description or write_scopes");
	if (s) {
		free(k->subject);
		k->subject = xstrdup(json_string_value(s));
	}
	if (d) {
		free(k->description);
		k->description = xstrdup(json_string_value(d));
	}
	if (w) {
		json_decref(k->write_scopes);
		k->write_scopes = team_strings(w);
	}
	return 0;
}

static int
team_act_dependencies(struct team *t, struct team_task *k, const char *caller, const json_t *args,
    struct err *e)
{
	const json_t *deps = json_object_get(args, "blocked_by");

	(void)caller;
	if (!json_is_array(deps))
		return err_set(e, ERR_TEAM_INVALID_ARGUMENT, "set_dependencies needs blocked_by");
	if (team_deps_check(t, k, deps, e) < 0)
		return -1;
	json_decref(k->blocked_by);
	k->blocked_by = json_deep_copy(deps);
	return 0;
}

static int
team_act_complete(struct team *t, struct team_task *k, const char *caller, const json_t *args, struct err *e)
{
	(void)t, (void)caller, (void)args;
	if (k->status == TASK_COMPLETED)
		return err_set(e, ERR_TEAM_INVALID_ARGUMENT, "task-%d is already completed", k->n);
	k->status = TASK_COMPLETED;
	return 0;
}

static int
team_act_reopen(struct team *t, struct team_task *k, const char *caller, const json_t *args, struct err *e)
{
	(void)t, (void)caller, (void)args;
	if (k->status != TASK_COMPLETED)
		return err_set(e, ERR_TEAM_INVALID_ARGUMENT, "task-%d is not completed", k->n);
	free(k->owner);
	k->owner = NULL;
	k->status = TASK_PENDING;
	return 0;
}

static int
team_act_reassign(struct team *t, struct team_task *k, const char *caller, const json_t *args, struct err *e)
{
	const char *to = json_string_value(json_object_get(args, "owner"));

	(void)caller;
	if (to == NULL || (strcmp(to, "lead") != 0 && team_member(t, to) == NULL))
		return err_set(e, ERR_TEAM_MEMBER_NOT_FOUND, "no team member is called \"%.64s\"", to ? to : "");
	free(k->owner);
	k->owner = xstrdup(to);
	k->status = TASK_IN_PROGRESS;
	return 0;
}

static int
team_act_delete(struct team *t, struct team_task *k, const char *caller, const json_t *args, struct err *e)
{
	char me[32];

	(void)caller, (void)args;
	snprintf(me, sizeof(me), "task-%d", k->n);
	for (size_t i = 0; i < t->ntasks; i++) {
		size_t j;
		json_t *b;
		if (t->tasks[i].status == TASK_DELETED || &t->tasks[i] == k)
			continue;
		json_array_foreach(t->tasks[i].blocked_by, j, b) {
			if (strcmp(json_string_value(b), me) == 0)
				return err_set(e, ERR_TEAM_TASK_HAS_DEPENDENTS, "task-%d blocks task-%d; change that "
				    "first", k->n, t->tasks[i].n);
		}
	}
	k->status = TASK_DELETED;
	return 0;
}

/* The actions and who may take them: anyone may claim; reassign is the Lead's; the rest are the
 * owner's or the Lead's. */
static const struct team_action {
	const char *name;
	team_action_fn *fn;
	enum { TEAM_BY_ANYONE, TEAM_BY_OWNER, TEAM_BY_LEAD } who;
} team_actions[] = {
	{ "claim", team_act_claim, TEAM_BY_ANYONE },
	{ "release", team_act_release, TEAM_BY_OWNER },
	{ "edit", team_act_edit, TEAM_BY_OWNER },
	{ "set_dependencies", team_act_dependencies, TEAM_BY_OWNER },
	{ "complete", team_act_complete, TEAM_BY_OWNER },
	{ "reopen", team_act_reopen, TEAM_BY_OWNER },
	{ "reassign", team_act_reassign, TEAM_BY_LEAD },
	{ "delete", team_act_delete, TEAM_BY_OWNER },
};

json_t *
team_task_update(struct team *t, const char *caller, const json_t *args, struct err *e)
{
	const char *id = json_string_value(json_object_get(args, "task_id"));
	const char *action = json_string_value(json_object_get(args, "action"));
	json_int_t expected = json_integer_value(json_object_get(args, "expected_revision"));
	struct team_task *k = team_task_by_id(t, id), before;
	const struct team_action *act = NULL;
	int lead = strcmp(caller, "lead") == 0;

	if (k == NULL) {
		err_set(e, ERR_TEAM_TASK_NOT_FOUND, "task \"%.40s\" does not exist", id ? id : "");
		return NULL;
	}
	if (k->status == TASK_DELETED) {
		err_set(e, ERR_TEAM_TASK_NOT_FOUND, "task-%d was deleted", k->n);
		return NULL;
	}
	if (expected != k->revision) {
		err_set(e, ERR_TEAM_TASK_STALE_REVISION, "task-%d is at revision %d, not %lld; re-read it with "
		    "team_task_get", k->n, k->revision, (long long)expected);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(team_actions) / sizeof(team_actions[0]); i++)
		if (strcmp(action, team_actions[i].name) == 0)
			act = &team_actions[i];
	int owner = k->owner && strcmp(k->owner, caller) == 0;
	int who = act ? (int)act->who : TEAM_BY_OWNER;	/* an unknown action: as the owner's */
	if (who == TEAM_BY_LEAD ? !lead : who == TEAM_BY_OWNER && !owner && !lead) {
		err_set(e, ERR_TEAM_TASK_UNAUTHORIZED, "\"%s\" may not %s task-%d", caller, action, k->n);
		return NULL;
	}
	if (act == NULL) {
		err_set(e, ERR_TEAM_INVALID_ARGUMENT, "unknown action \"%.20s\"", action);
		return NULL;
	}
	before = *k;
	before.owner = k->owner ? xstrdup(k->owner) : NULL;
	before.subject = xstrdup(k->subject);
	before.description = xstrdup(k->description);
	before.blocked_by = json_deep_copy(k->blocked_by);
	before.write_scopes = json_deep_copy(k->write_scopes);
	if (act->fn(t, k, caller, args, e) < 0)
		goto fail;
	k->revision++;
	if (team_write(t, "team/task", team_task_record(k), e) < 0)
		goto fail;
	team_task_clear(&before);
	team_changed(t);
	return team_task_view(t, k);
fail:
	team_task_clear(k);
	*k = before;
	return NULL;
}
