/*
 * Agent Teams. The team of a Lead is derived from the Lead's log and kept in
 * memory while the Lead is live; every change is first written to that log.
 * Teammates are continuable children of the Lead labelled with their names.
 */
#include "agent/team.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/subagent.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/utf8.h"
#include "base/xjson.h"
#include "base/xmalloc.h"
#include "session/repair.h"

struct team_waiter {
	ev_timer timer;		/* first member */
	struct team *team;
	struct tool_inv *inv;
	void (*finish)(struct tool_inv *inv, json_t *result);	/* the tool's: renders, completes */
	long version;
	struct team_waiter *next;
};

static const char *const team_status_names[] = { "pending", "in_progress", "completed", "deleted" };
static const char *const team_phase_names[] = { "provisioning", "active", "failed" };

/* ---- state ---- */

struct team *
team_new(void)
{
	struct team *t = xcalloc(1, sizeof(*t));

	t->names_used = json_object();
	t->queued = json_array();
	return t;
}

static void
team_task_clear(struct team_task *k)
{
	free(k->subject);
	free(k->description);
	free(k->owner);
	json_decref(k->blocked_by);
	json_decref(k->write_scopes);
}

static void team_waiter_done(struct team_waiter *w, int timed_out);

void
team_free(struct team *t)
{
	if (t == NULL)
		return;
	/* By now every turn was cancelled, which removed its waiter; free any left without a reply. */
	while (t->waiters) {
		struct team_waiter *w = t->waiters;
		t->waiters = w->next;
		if (t->lead && t->lead->rt->loop)
			ev_timer_stop(t->lead->rt->loop, &w->timer);
		free(w);
	}
	for (size_t i = 0; i < t->nmembers; i++) {
		free(t->members[i].name);
		free(t->members[i].id);
		free(t->members[i].description);
		free(t->members[i].error);
	}
	free(t->members);
	for (size_t i = 0; i < t->ntasks; i++)
		team_task_clear(&t->tasks[i]);
	free(t->tasks);
	json_decref(t->names_used);
	json_decref(t->queued);
	free(t);
}

static struct team_member *
team_member(struct team *t, const char *name)
{
	for (size_t i = 0; i < t->nmembers; i++)
		if (strcmp(t->members[i].name, name) == 0)
			return &t->members[i];
	return NULL;
}

static struct team_member *
team_member_by_id(struct team *t, const char *id)
{
	for (size_t i = 0; i < t->nmembers; i++)
		if (t->members[i].id && strcmp(t->members[i].id, id) == 0)
			return &t->members[i];
	return NULL;
}

/* The n of "<prefix><n>": decimal digits only, 1..max, nothing after; else 0. */
static long
team_id_number(const char *id, const char *prefix, long max)
{
	size_t plen = strlen(prefix);
	char *end;
	long n;

	if (id == NULL || strncmp(id, prefix, plen) != 0 || id[plen] < '0' || id[plen] > '9')
		return 0;
	errno = 0;
	n = strtol(id + plen, &end, 10);
	if (errno || *end || n < 1 || n > max)
		return 0;
	return n;
}

static struct team_task *
team_task_by_id(struct team *t, const char *id)
{
	long n = team_id_number(id, "task-", (long)t->ntasks);

	return n ? &t->tasks[n - 1] : NULL;
}

static char *
team_dup(const json_t *v)
{
	return json_is_string(v) ? xstrdup(json_string_value(v)) : NULL;
}

static void
team_changed(struct team *t)
{
	t->version++;
	while (t->waiters) {
		struct team_waiter *w = t->waiters;
		t->waiters = w->next;
		w->next = NULL;
		team_waiter_done(w, 0);
	}
}

/* Persists a team event (steals data). With e NULL the caller goes on whatever happens; it is logged. */
static int
team_write(struct team *t, const char *type, json_t *data, struct err *e)
{
	struct err le;

	if (t->persist == NULL) {
		json_decref(data);
		return 0;
	}
	if (e != NULL)
		return t->persist(t, type, data, e);
	err_clear(&le);
	if (t->persist(t, type, data, &le) < 0) {
		log_warn("team: %s not recorded: %s", type, le.msg);
		return -1;
	}
	return 0;
}

static json_t *
team_member_record(const struct team_member *m)
{
	json_t *rec = xjson_pack("{s:s, s:s, s:s}", "name", m->name, "description", m->description ? m->description : "",
	    "phase", team_phase_names[m->phase]);

	if (m->id)
		json_object_set_new(rec, "id", json_string(m->id));
	if (m->error)
		json_object_set_new(rec, "error", json_string(m->error));
	return xjson_pack("{s:i, s:o}", "version", 1, "member", rec);
}

static json_t *
team_task_record(const struct team_task *k)
{
	char id[32];
	json_t *rec;

	snprintf(id, sizeof(id), "task-%d", k->n);
	rec = xjson_pack("{s:s, s:i, s:s, s:s, s:s, s:O, s:O}", "id", id, "revision", k->revision, "subject",
	    k->subject, "description", k->description, "status", team_status_names[k->status], "blockedBy",
	    k->blocked_by, "writeScopes", k->write_scopes);
	if (k->owner)
		json_object_set_new(rec, "ownerName", json_string(k->owner));
	return xjson_pack("{s:i, s:o}", "version", 1, "task", rec);
}

static enum team_status
team_status_parse(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (s && strcmp(s, team_status_names[i]) == 0)
			return (enum team_status)i;
	return TASK_PENDING;
}

void
team_fold(struct team *t, const json_t *events)
{
	size_t i;
	json_t *ev;

	json_array_foreach(events, i, ev) {
		const char *type = json_string_value(json_object_get(ev, "type"));
		json_t *d = json_object_get(ev, "data");
		if (strncmp(type, "team/", 5) != 0 || json_integer_value(json_object_get(d, "version")) != 1)
			continue;
		if (strcmp(type, "team/member") == 0) {
			json_t *m = json_object_get(d, "member");
			const char *name = json_string_value(json_object_get(m, "name"));
			if (name == NULL)
				continue;
			struct team_member *tm = team_member(t, name);
			if (tm == NULL) {
				t->members = xrealloc(t->members, (t->nmembers + 1) * sizeof(*t->members));
				tm = &t->members[t->nmembers++];
				memset(tm, 0, sizeof(*tm));
				tm->name = xstrdup(name);
			}
			free(tm->id);
			free(tm->description);
			free(tm->error);
			tm->id = team_dup(json_object_get(m, "id"));
			tm->description = team_dup(json_object_get(m, "description"));
			tm->error = team_dup(json_object_get(m, "error"));
			const char *ph = json_string_value(json_object_get(m, "phase"));
			tm->phase = ph && strcmp(ph, "active") == 0 ? TEAM_ACTIVE
			    : ph && strcmp(ph, "failed") == 0     ? TEAM_FAILED
								  : TEAM_PROVISIONING;
			json_object_set_new(t->names_used, name, json_true());
		} else if (strcmp(type, "team/task") == 0) {
			json_t *k = json_object_get(d, "task");
			long n = team_id_number(json_string_value(json_object_get(k, "id")), "task-", TEAM_MAX_TASKS);
			if (n == 0)
				continue;
			while (t->ntasks < (size_t)n) {
				t->tasks = xrealloc(t->tasks, (t->ntasks + 1) * sizeof(*t->tasks));
				memset(&t->tasks[t->ntasks], 0, sizeof(*t->tasks));
				t->tasks[t->ntasks].n = (int)t->ntasks + 1;
				t->tasks[t->ntasks].subject = xstrdup("");
				t->tasks[t->ntasks].description = xstrdup("");
				t->tasks[t->ntasks].blocked_by = json_array();
				t->tasks[t->ntasks].write_scopes = json_array();
				t->ntasks++;
			}
			struct team_task *tk = &t->tasks[n - 1];
			team_task_clear(tk);
			tk->revision = (int)json_integer_value(json_object_get(k, "revision"));
			tk->subject = team_dup(json_object_get(k, "subject"));
			tk->description = team_dup(json_object_get(k, "description"));
			tk->owner = team_dup(json_object_get(k, "ownerName"));
			tk->status = team_status_parse(json_string_value(json_object_get(k, "status")));
			tk->blocked_by = json_is_array(json_object_get(k, "blockedBy")) ?
			    json_deep_copy(json_object_get(k, "blockedBy")) : json_array();
			tk->write_scopes = json_is_array(json_object_get(k, "writeScopes")) ?
			    json_deep_copy(json_object_get(k, "writeScopes")) : json_array();
			if (!tk->subject)
				tk->subject = xstrdup("");
			if (!tk->description)
				tk->description = xstrdup("");
		} else if (strcmp(type, "team/message/queued") == 0) {
			json_t *m = json_object_get(d, "message");
			/* Only a whole message is kept for delivery: each of its fields is read as a string. */
			if (!json_is_string(json_object_get(m, "id")) || !json_is_string(json_object_get(m, "senderName")) ||
			    !json_is_string(json_object_get(m, "targetName")) ||
			    !json_is_string(json_object_get(m, "content"))) {
				log_warn("team: a queued message without its id, names or content is left out");
				continue;
			}
			/* Numbering goes on after the highest id; one the counter cannot reach is left out. */
			long n = team_id_number(json_string_value(json_object_get(m, "id")), "msg-", INT_MAX / 2);
			if (n > t->next_msg)
				t->next_msg = (int)n;
			json_array_append(t->queued, m);
		} else if (strcmp(type, "team/message/delivered") == 0) {
			const char *id = json_string_value(json_object_get(d, "messageId"));
			for (size_t q = 0; id && q < json_array_size(t->queued); q++)
				if (strcmp(json_string_value(json_object_get(json_array_get(t->queued, q), "id")), id) == 0) {
					json_array_remove(t->queued, q);
					break;
				}
		}
	}
}

/* ---- names ---- */

int
team_name_check(struct team *t, const char *name, struct err *e)
{
	size_t n = strlen(name);
	int ok = n >= 1 && n <= 64 && strcmp(name, "lead") != 0 && name[0] != '-' && name[n - 1] != '-';

	for (size_t i = 0; ok && i < n; i++) {
		char c = name[i];
		ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c == '-' && name[i + 1] != '-');
	}
	if (!ok)
		return err_set(e, "TEAM_INVALID_MEMBER_NAME", "teammate name \"%.80s\" must be lower-kebab-case, "
		    "1-64 characters, and not \"lead\"", name);
	if (json_object_get(t->names_used, name))
		return err_set(e, "TEAM_MEMBER_NAME_TAKEN", "the name \"%s\" is already taken in this team (names "
		    "are never reused)", name);
	if (t->nmembers >= TEAM_MAX_MEMBERS)
		return err_set(e, "TEAM_MEMBER_LIMIT", "the team already has %d teammates", TEAM_MAX_MEMBERS);
	return 0;
}

/* ---- tasks ---- */

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

#define team_view team_task_view

static int
team_deps_check(struct team *t, const struct team_task *self, const json_t *deps, struct err *e)
{
	size_t i;
	json_t *d;

	if (deps && !json_is_array(deps))
		return err_set(e, "TEAM_INVALID_ARGUMENT", "blocked_by must be an array of task ids");
	json_array_foreach(deps, i, d) {
		struct team_task *k = team_task_by_id(t, json_string_value(d));
		if (k == NULL || k->status == TASK_DELETED)
			return err_set(e, "TEAM_TASK_NOT_FOUND", "dependency \"%.40s\" does not exist",
			    json_string_value(d) ? json_string_value(d) : "?");
		if (self && k == self)
			return err_set(e, "TEAM_TASK_DEPENDENCY_CYCLE", "task-%d cannot depend on itself", self->n);
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
		return err_set(e, "TEAM_TASK_DEPENDENCY_CYCLE", "these dependencies would make task-%d wait for "
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
		err_set(e, "TEAM_TASK_LIMIT", "the task board is full (%d tasks)", TEAM_MAX_TASKS);
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
	return team_view(t, k);
}

json_t *
team_task_get(struct team *t, const char *id, struct err *e)
{
	struct team_task *k = team_task_by_id(t, id);

	if (k == NULL) {
		err_set(e, "TEAM_TASK_NOT_FOUND", "task \"%.40s\" does not exist", id);
		return NULL;
	}
	return team_view(t, k);
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
		err_set(e, "TEAM_INVALID_ARGUMENT", "limit must be between 1 and 100");
		return NULL;
	}
	if (cursor) {
		struct team_task *k = team_task_by_id(t, cursor);
		if (k == NULL) {
			json_decref(tasks);
			err_set(e, "TEAM_INVALID_ARGUMENT", "cursor \"%.40s\" is not one this tool returned", cursor);
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
		json_array_append_new(tasks, team_view(t, k));
	}
	json_object_set_new(out, "tasks", tasks);
	return out;
}

json_t *
team_task_update(struct team *t, const char *caller, const json_t *args, struct err *e)
{
	const char *id = json_string_value(json_object_get(args, "task_id"));
	const char *action = json_string_value(json_object_get(args, "action"));
	json_int_t expected = json_integer_value(json_object_get(args, "expected_revision"));
	struct team_task *k = team_task_by_id(t, id), before;
	int lead = strcmp(caller, "lead") == 0;

	if (k == NULL) {
		err_set(e, "TEAM_TASK_NOT_FOUND", "task \"%.40s\" does not exist", id ? id : "");
		return NULL;
	}
	if (k->status == TASK_DELETED) {
		err_set(e, "TEAM_TASK_NOT_FOUND", "task-%d was deleted", k->n);
		return NULL;
	}
	if (expected != k->revision) {
		err_set(e, "TEAM_TASK_STALE_REVISION", "task-%d is at revision %d, not %lld; re-read it with "
		    "team_task_get", k->n, k->revision, (long long)expected);
		return NULL;
	}
	int owner = k->owner && strcmp(k->owner, caller) == 0;
	if (strcmp(action, "reassign") == 0 ? !lead : (strcmp(action, "claim") != 0 && !owner && !lead)) {
		err_set(e, "TEAM_TASK_UNAUTHORIZED", "\"%s\" may not %s task-%d", caller, action, k->n);
		return NULL;
	}
	before = *k;
	before.owner = k->owner ? xstrdup(k->owner) : NULL;
	before.subject = xstrdup(k->subject);
	before.description = xstrdup(k->description);
	before.blocked_by = json_deep_copy(k->blocked_by);
	before.write_scopes = json_deep_copy(k->write_scopes);
	if (strcmp(action, "claim") == 0) {
		if (k->owner) {
			err_set(e, "TEAM_TASK_ALREADY_CLAIMED", "task-%d is already claimed by \"%s\"", k->n, k->owner);
			goto fail;
		}
		if (!team_task_ready(t, k)) {
			err_set(e, "TEAM_TASK_BLOCKED", "task-%d is not ready: a task it is blocked by is not completed",
			    k->n);
			goto fail;
		}
		k->owner = xstrdup(caller);
		k->status = TASK_IN_PROGRESS;
	} else if (strcmp(action, "release") == 0) {
		if (k->status != TASK_IN_PROGRESS) {
			err_set(e, "TEAM_INVALID_ARGUMENT", "task-%d is not in progress", k->n);
			goto fail;
		}
		free(k->owner);
		k->owner = NULL;
		k->status = TASK_PENDING;
	} else if (strcmp(action, "edit") == 0) {
		const json_t *s = json_object_get(args, "subject"), *d = json_object_get(args, "description");
		const json_t *w = json_object_get(args, "write_scopes");
		if (!s && !d && !w) {
			err_set(e, "TEAM_INVALID_ARGUMENT", "edit needs subject, description or write_scopes");
			goto fail;
		}
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
	} else if (strcmp(action, "set_dependencies") == 0) {
		const json_t *deps = json_object_get(args, "blocked_by");
		if (!json_is_array(deps)) {
			err_set(e, "TEAM_INVALID_ARGUMENT", "set_dependencies needs blocked_by");
			goto fail;
		}
		if (team_deps_check(t, k, deps, e) < 0)
			goto fail;
		json_decref(k->blocked_by);
		k->blocked_by = json_deep_copy(deps);
	} else if (strcmp(action, "complete") == 0) {
		if (k->status == TASK_COMPLETED) {
			err_set(e, "TEAM_INVALID_ARGUMENT", "task-%d is already completed", k->n);
			goto fail;
		}
		k->status = TASK_COMPLETED;
	} else if (strcmp(action, "reopen") == 0) {
		if (k->status != TASK_COMPLETED) {
			err_set(e, "TEAM_INVALID_ARGUMENT", "task-%d is not completed", k->n);
			goto fail;
		}
		free(k->owner);
		k->owner = NULL;
		k->status = TASK_PENDING;
	} else if (strcmp(action, "reassign") == 0) {
		const char *to = json_string_value(json_object_get(args, "owner"));
		if (to == NULL || (strcmp(to, "lead") != 0 && team_member(t, to) == NULL)) {
			err_set(e, "TEAM_MEMBER_NOT_FOUND", "no team member is called \"%.64s\"", to ? to : "");
			goto fail;
		}
		free(k->owner);
		k->owner = xstrdup(to);
		k->status = TASK_IN_PROGRESS;
	} else if (strcmp(action, "delete") == 0) {
		char me[32];
		snprintf(me, sizeof(me), "task-%d", k->n);
		for (size_t i = 0; i < t->ntasks; i++) {
			size_t j;
			json_t *b;
			if (t->tasks[i].status == TASK_DELETED || &t->tasks[i] == k)
				continue;
			json_array_foreach(t->tasks[i].blocked_by, j, b) {
				if (strcmp(json_string_value(b), me) == 0) {
					err_set(e, "TEAM_TASK_HAS_DEPENDENTS", "task-%d blocks task-%d; change that first",
					    k->n, t->tasks[i].n);
					goto fail;
				}
			}
		}
		k->status = TASK_DELETED;
	} else {
		err_set(e, "TEAM_INVALID_ARGUMENT", "unknown action \"%.20s\"", action);
		goto fail;
	}
	k->revision++;
	if (team_write(t, "team/task", team_task_record(k), e) < 0)
		goto fail;
	team_task_clear(&before);
	team_changed(t);
	return team_view(t, k);
fail:
	team_task_clear(k);
	*k = before;
	return NULL;
}

/* ---- runtime ---- */

/*
 * The log's failure (its own code) is read into a local error and reported as SESSION_LOG_IO with
 * its cause: set on e first, the log's code would win and the team code never reach the model.
 */
static int
team_persist_lead(struct team *t, const char *type, json_t *data, struct err *e)
{
	struct sess *s = t->lead->sess;
	struct err le;

	err_clear(&le);
	if (sess_append(s, type, data, &le) == NULL)
		return err_set(e, "SESSION_LOG_IO", "the Lead's log cannot be written: %s", le.msg);
	if (strcmp(type, "team/message/queued") == 0 && sess_log_sync(s->log, &le) < 0)
		return err_set(e, "SESSION_LOG_IO", "the Lead's log cannot be synced: %s", le.msg);
	sess_checkpoint(s);
	return 0;
}

struct team *
team_of(struct agent *a)
{
	if (a == NULL || a->released)
		return NULL;
	if (a->mode == AGENT_MODE_ROOT) {
		if (a->team == NULL) {
			a->team = team_new();
			team_fold(a->team, a->sess->events);
			a->team->lead = a;
			a->team->persist = team_persist_lead;
		}
		return a->team;
	}
	struct agent *p = agent_parent(a) ? agent_rt_get(a->rt, agent_parent(a)) : NULL;
	if (p == NULL || p->mode != AGENT_MODE_ROOT)
		return NULL;
	struct team *t = team_of(p);
	return team_member_by_id(t, agent_id(a)) ? t : NULL;
}

const char *
team_caller_name(struct agent *a)
{
	struct team *t = team_of(a);
	struct team_member *m;

	if (a->mode == AGENT_MODE_ROOT)
		return "lead";
	m = t ? team_member_by_id(t, agent_id(a)) : NULL;
	return m ? m->name : NULL;
}

static const char *
team_member_status(struct team *t, const struct team_member *m)
{
	struct agent *a;

	if (m->phase == TEAM_PROVISIONING)
		return "provisioning";
	if (m->phase == TEAM_FAILED)
		return "failed";
	a = m->id ? agent_rt_get(t->lead->rt, m->id) : NULL;
	/* Work already handed to it (a queued turn) counts as running. */
	return a && (a->status == AGENT_RUNNING || a->kick_queued) ? "running" : "inactive";
}

static json_t *
team_member_view(struct team *t, const struct team_member *m)
{
	json_t *v;

	if (m == NULL)
		return xjson_pack("{s:s, s:s, s:s, s:[]}", "target", "lead", "role", "lead", "status",
		    t->lead->status == AGENT_RUNNING ? "running" : "inactive", "diagnostics");
	v = xjson_pack("{s:s, s:s, s:s, s:s, s:[]}", "target", m->name, "role", "teammate", "status",
	    team_member_status(t, m), "description", m->description ? m->description : "", "diagnostics");
	if (m->error)
		json_array_append_new(json_object_get(v, "diagnostics"), json_string(m->error));
	return v;
}

json_t *
team_list(struct agent *caller)
{
	struct team *t = team_of(caller);
	json_t *out = json_array();

	if (t == NULL)
		return out;
	json_array_append_new(out, team_member_view(t, NULL));
	for (size_t i = 0; i < t->nmembers; i++)
		json_array_append_new(out, team_member_view(t, &t->members[i]));
	return out;
}

static char *
team_reminder(const char *name)
{
	return xasprintf("You are teammate \"%s\" in an Agent Team led by \"lead\". Address members by name: "
	    "send_message with target \"lead\" reports to the Lead. Use team_task_list and team_task_update "
	    "(claim, complete) to work on the shared task board, and list_agents to see the roster.", name);
}

json_t *
team_spawn(struct agent *caller, const char *name, const char *description, const char *prompt,
    struct err *e)
{
	struct team *t;
	struct team_member *m;
	struct agent *child;

	if (caller->mode != AGENT_MODE_ROOT) {
		err_set(e, "TEAM_LEAD_REQUIRED", "only the Lead can spawn teammates");
		return NULL;
	}
	t = team_of(caller);
	if (team_name_check(t, name, e) < 0)
		return NULL;
	t->members = xrealloc(t->members, (t->nmembers + 1) * sizeof(*t->members));
	m = &t->members[t->nmembers++];
	memset(m, 0, sizeof(*m));
	m->name = xstrdup(name);
	m->description = xstrdup(description);
	m->phase = TEAM_PROVISIONING;
	json_object_set_new(t->names_used, name, json_true());
	char *reminder = team_reminder(name);
	json_t *content = xjson_pack("[{s:s, s:s}, {s:s, s:s}]", "type", "text", "text", prompt, "type", "text",
	    "text", reminder);
	free(reminder);
	struct err se;
	err_clear(&se);
	child = subagent_spawn(caller, name, content, xjson_pack("{s:s, s:s}", "kind", "team-message",
	    "senderName", "lead"), &se);
	if (child == NULL) {
		/* The name is spent all the same: names are never reused. */
		size_t n;
		m->phase = TEAM_FAILED;
		m->error = utf8_repair(se.msg, strlen(se.msg), &n);	/* a message cut at its size may end mid-character */
		team_write(t, "team/member", team_member_record(m), NULL);
		team_changed(t);
		err_set(e, se.code, "%s", se.msg);
		return NULL;
	}
	/* provisioning names the child; a restart reconciles it against the child's own log. */
	m->id = xstrdup(agent_id(child));
	if (team_write(t, "team/member", team_member_record(m), e) < 0)
		return NULL;
	m->phase = TEAM_ACTIVE;
	if (team_write(t, "team/member", team_member_record(m), e) < 0)
		return NULL;
	team_changed(t);
	return xjson_pack("{s:o}", "member", team_member_view(t, m));
}

static size_t
team_pending_for(struct team *t, const char *target)
{
	size_t n = 0, i;
	json_t *m;

	json_array_foreach(t->queued, i, m) n += strcmp(json_string_value(json_object_get(m, "targetName")), target) == 0;
	return n;
}

/* The live agent a message for target goes to, resuming a stored teammate; NULL when not now. */
static struct agent *
team_target_agent(struct team *t, const char *target)
{
	struct team_member *m;
	struct agent *a;
	struct err e;

	if (strcmp(target, "lead") == 0)
		return t->lead;
	m = team_member(t, target);
	if (m == NULL || m->phase != TEAM_ACTIVE || m->id == NULL)
		return NULL;
	a = agent_rt_get(t->lead->rt, m->id);
	if (a)
		return a;
	err_clear(&e);
	a = subagent_resume(t->lead, m->id, &e);
	if (a == NULL)
		log_info("team: %s cannot be resumed now: %s", target, e.msg);
	return a;
}

/* Delivers queued messages in order; a target whose first message cannot go waits, the rest go on. */
static void
team_pump(struct team *t)
{
	json_t *blocked = json_object();

	for (size_t i = 0; i < json_array_size(t->queued);) {
		json_t *m = json_array_get(t->queued, i);
		const char *target = json_string_value(json_object_get(m, "targetName"));
		struct agent *a = json_object_get(blocked, target) ? NULL : team_target_agent(t, target);
		if (a == NULL) {
			json_object_set_new(blocked, target, json_true());
			i++;
			continue;
		}
		char *head = xasprintf("Team message %s from %s:", json_string_value(json_object_get(m, "id")),
		    json_string_value(json_object_get(m, "senderName")));
		agent_post(a, xjson_pack("[{s:s, s:s}, {s:s, s:O}]", "type", "text", "text", head, "type", "text",
		    "text", json_object_get(m, "content")), xjson_pack("{s:s, s:O, s:O}", "kind", "team-message",
		    "messageId", json_object_get(m, "id"), "senderName", json_object_get(m, "senderName")), NULL);
		free(head);
		if (a->mode == AGENT_MODE_CONTINUABLE)
			a->delivered = 1;
		team_write(t, "team/message/delivered", xjson_pack("{s:i, s:O, s:s}", "version", 1, "messageId",
		    json_object_get(m, "id"), "targetName", target), NULL);
		json_array_remove(t->queued, i);
	}
	json_decref(blocked);
}

json_t *
team_send(struct agent *caller, const char *target, const char *message, struct err *e)
{
	struct team *t = team_of(caller);
	const char *sender = team_caller_name(caller);
	struct team_member *m;
	char id[32];

	if (t == NULL || sender == NULL) {
		err_set(e, "TEAM_MEMBER_NOT_FOUND", "this agent is not a member of a live team");
		return NULL;
	}
	if (strcmp(target, sender) == 0) {
		err_set(e, "TEAM_SELF_MESSAGE", "a member cannot send a message to itself");
		return NULL;
	}
	m = strcmp(target, "lead") == 0 ? NULL : team_member(t, target);
	if (strcmp(target, "lead") != 0 && (m == NULL || m->phase == TEAM_FAILED)) {
		err_set(e, "TEAM_MEMBER_NOT_FOUND", "no team member is called \"%.64s\"", target);
		return NULL;
	}
	if (strlen(message) > TEAM_MAX_MESSAGE) {
		err_set(e, "TEAM_MESSAGE_TOO_LARGE", "the message is %zu bytes; the limit is %d", strlen(message),
		    TEAM_MAX_MESSAGE);
		return NULL;
	}
	if (team_pending_for(t, target) >= TEAM_MAX_PENDING) {
		err_set(e, "TEAM_MAILBOX_FULL", "\"%s\" already has %d undelivered messages", target, TEAM_MAX_PENDING);
		return NULL;
	}
	snprintf(id, sizeof(id), "msg-%d", ++t->next_msg);
	json_t *msg = xjson_pack("{s:s, s:s, s:s, s:s}", "id", id, "senderName", sender, "targetName", target,
	    "content", message);
	if (team_write(t, "team/message/queued", xjson_pack("{s:i, s:O}", "version", 1, "message", msg), e) < 0) {
		json_decref(msg);
		return NULL;
	}
	json_array_append_new(t->queued, msg);
	team_pump(t);
	int still = 0;
	size_t i;
	json_t *q;
	json_array_foreach(t->queued, i, q) still |= strcmp(json_string_value(json_object_get(q, "id")), id) == 0;
	team_changed(t);
	return xjson_pack("{s:s, s:s}", "messageId", id, "status", still ? "queued" : "accepted");
}

json_t *
team_interrupt(struct agent *caller, const char *target, struct err *e)
{
	struct team *t;
	struct team_member *m;
	struct agent *a;

	if (caller->mode != AGENT_MODE_ROOT) {
		err_set(e, "TEAM_LEAD_REQUIRED", "only the Lead can interrupt teammates");
		return NULL;
	}
	t = team_of(caller);
	if (strcmp(target, "lead") == 0) {
		err_set(e, "TEAM_INVALID_ARGUMENT", "the Lead cannot interrupt itself");
		return NULL;
	}
	m = team_member(t, target);
	if (m == NULL) {
		err_set(e, "TEAM_MEMBER_NOT_FOUND", "no team member is called \"%.64s\"", target);
		return NULL;
	}
	a = m->id ? agent_rt_get(caller->rt, m->id) : NULL;
	if (a && a->status == AGENT_RUNNING) {
		agent_cancel(a, "parent");
		return xjson_pack("{s:s}", "previousStatus", "running");
	}
	return xjson_pack("{s:s}", "previousStatus", "inactive");
}

/* ---- wait_agent ---- */

static void
team_waiter_done(struct team_waiter *w, int timed_out)
{
	struct team *t = w->team;
	struct team_waiter **pp;

	/* Unlinked by the caller (a change) or still linked (its timeout). */
	for (pp = &t->waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	if (t->lead && t->lead->rt->loop)
		ev_timer_stop(t->lead->rt->loop, &w->timer);
	w->inv->state = NULL;
	w->finish(w->inv, xjson_pack("{s:b}", "timedOut", timed_out));
	free(w);
}

static void
team_waiter_timeout(struct ev_loop *loop, ev_timer *tm, int revents)
{
	(void)loop;
	(void)revents;
	team_waiter_done((struct team_waiter *)tm, 1);
}

static void
team_waiter_cancel(struct tool_inv *inv)
{
	struct team_waiter *w = inv->state, **pp;

	if (w == NULL)
		return;
	for (pp = &w->team->waiters; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	if (w->team->lead && w->team->lead->rt->loop)
		ev_timer_stop(w->team->lead->rt->loop, &w->timer);
	inv->state = NULL;
	free(w);
}

int
team_wait(struct tool_inv *inv, long timeout_ms, void (*finish)(struct tool_inv *inv, json_t *result),
    json_t **result, struct err *e)
{
	struct agent *caller = inv->agent;
	struct team *t = team_of(caller);
	const char *me = team_caller_name(caller);
	int active = 0;

	if (timeout_ms < 10000 || timeout_ms > 3600000) {
		err_set(e, "TEAM_INVALID_TIMEOUT", "timeout_ms must be between 10000 and 3600000");
		return TOOL_DONE;
	}
	if (t == NULL || me == NULL) {
		err_set(e, "TEAM_MEMBER_NOT_FOUND", "this agent is not a member of a live team");
		return TOOL_DONE;
	}
	if (strcmp(me, "lead") != 0 && t->lead->status == AGENT_RUNNING)
		active = 1;
	for (size_t i = 0; i < t->nmembers; i++) {
		const char *st = team_member_status(t, &t->members[i]);
		if (strcmp(t->members[i].name, me) != 0 && (strcmp(st, "running") == 0 || strcmp(st, "provisioning") == 0))
			active = 1;
	}
	if (!active) {
		*result = xjson_pack("{s:b, s:{s:s}}", "timedOut", 0, "noProgress", "reason", "no-active-peer");
		return TOOL_DONE;
	}
	struct team_waiter *w = xcalloc(1, sizeof(*w));
	w->team = t;
	w->inv = inv;
	w->finish = finish;
	w->version = t->version;
	w->next = t->waiters;
	t->waiters = w;
	inv->state = w;
	inv->cancel = team_waiter_cancel;
	if (caller->rt->loop) {
		ev_timer_init(&w->timer, team_waiter_timeout, (double)timeout_ms / 1000.0, 0.);
		ev_timer_start(caller->rt->loop, &w->timer);
	}
	return TOOL_PENDING;
}

/* ---- status and recovery ---- */

/*
 * Queued mail retried once a teammate's release has freed a slot: right after the task that
 * released it, from the run queue, so a resume loads from disk outside that release.
 */
static void
team_pump_task(void *arg)
{
	struct agent *lead = arg;

	agent_unpin(lead);
	if (lead->released || lead->team == NULL || lead->rt->shutting_down)
		return;
	if (json_array_size(lead->team->queued))
		team_pump(lead->team);
}

static void
team_status_hook(void *arg, struct agent *a)
{
	struct team *t = NULL;

	(void)arg;
	if (a->sess == NULL)
		return;
	if (a->mode == AGENT_MODE_ROOT)
		t = a->team;
	else if (agent_parent(a)) {
		struct agent *p = agent_rt_get(a->rt, agent_parent(a));
		t = p ? p->team : NULL;
		if (t && !team_member_by_id(t, agent_id(a)))
			t = NULL;
	}
	if (t == NULL || a->rt->shutting_down)
		return;
	team_changed(t);
	if (json_array_size(t->queued) && a->mode != AGENT_MODE_ROOT && a->released)
		agent_push_next(t->lead, team_pump_task);	/* a slot may have freed */
}

static void
team_free_cb(struct team *t)
{
	team_free(t);
}

void
team_install(struct agent_rt *rt)
{
	rt->status_hook = team_status_hook;
	rt->team_free = team_free_cb;
}

void
team_recover(struct agent *lead)
{
	struct team *t = team_of(lead);

	for (size_t i = 0; i < t->nmembers; i++) {
		struct team_member *m = &t->members[i];
		if (m->phase != TEAM_PROVISIONING)
			continue;
		/* Active when its own log shows the accepted first prompt, else failed. */
		int accepted = 0;
		if (m->id && sess_id_valid(m->id)) {
			static const char *const keep[] = { "user/message", NULL };
			struct sess_scan sc;
			struct err e;
			char *path = sess_env_path(lead->rt->env, m->id);
			err_clear(&e);
			if (sess_scan_file(path, keep, &sc, &e) == 0)
				accepted = json_array_size(sc.kept) > 0;
			sess_scan_free(&sc);
			free(path);
		}
		m->phase = accepted ? TEAM_ACTIVE : TEAM_FAILED;
		if (m->phase == TEAM_FAILED)
			m->error = xstrdup("provisioning did not finish before a restart");
		team_write(t, "team/member", team_member_record(m), NULL);
	}
	if (json_array_size(t->queued))
		team_pump(t);
}
