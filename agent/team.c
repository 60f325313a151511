/*
 * Agent Teams: the state, the roster and recovery. The team of a Lead is derived from the Lead's
 * log and kept in memory while the Lead is live; every change is first written to that log.
 * Teammates are continuable children of the Lead labelled with their names. The task board is in
 * team_tasks.c, the mailbox in team_mail.c, wait_agent in team_wait.c (team_int.h: what they share).
 */
#include "agent/team.h"
#include "agent/agent_def.h"
#include "agent/team_int.h"

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

const char *const team_status_names[] = { "pending", "in_progress", "completed", "deleted" };
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

void
team_task_clear(struct team_task *k)
{
	free(k->subject);
	free(k->description);
	free(k->owner);
	json_decref(k->blocked_by);
	json_decref(k->write_scopes);
}

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

/* The key of a Lead's team among its extension state (agent_state). */
static const char team_key;

static void
team_free_state(void *t)
{
	team_free(t);
}

struct team *
team_of_lead(const struct agent *lead)
{
	return agent_state(lead, &team_key);
}

struct team_member *
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

struct team_task *
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

void
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
int
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

json_t *
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
		enum sess_ev et = sess_ev_of(json_string_value(json_object_get(ev, "type")));
		json_t *d = json_object_get(ev, "data");
		if ((et != SESS_EV_TEAM_MEMBER && et != SESS_EV_TEAM_TASK && et != SESS_EV_TEAM_QUEUED &&
		    et != SESS_EV_TEAM_DELIVERED) || json_integer_value(json_object_get(d, "version")) != 1)
			continue;
		if (et == SESS_EV_TEAM_MEMBER) {
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
		} else if (et == SESS_EV_TEAM_TASK) {
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
		} else if (et == SESS_EV_TEAM_QUEUED) {
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
		} else if (et == SESS_EV_TEAM_DELIVERED) {
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
		return err_set(e, ERR_TEAM_INVALID_MEMBER_NAME, "teammate name \"%.80s\" must be lower-kebab-case, "
		    "1-64 characters, and not \"lead\"", name);
	if (json_object_get(t->names_used, name))
		return err_set(e, ERR_TEAM_MEMBER_NAME_TAKEN, "the name \"%s\" is already taken in this team (names "
		    "are never reused)", name);
	if (t->nmembers >= TEAM_MAX_MEMBERS)
		return err_set(e, ERR_TEAM_MEMBER_LIMIT, "the team already has %d teammates", TEAM_MAX_MEMBERS);
	return 0;
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
		return err_set(e, ERR_SESSION_LOG_IO, "the Lead's log cannot be written: %s", le.msg);
	if (sess_ev_of(type) == SESS_EV_TEAM_QUEUED && sess_sync(s, &le) < 0)
		return err_set(e, ERR_SESSION_LOG_IO, "the Lead's log cannot be synced: %s", le.msg);
	sess_checkpoint(s);
	return 0;
}

struct team *
team_of(struct agent *a)
{
	if (a == NULL || a->released)
		return NULL;
	if (agent_parent(a) == NULL) {
		struct team *t = agent_state(a, &team_key);
		if (t == NULL) {
			t = team_new();
			static const char *const kinds[] = { "team/member", "team/task", "team/message/queued",
				"team/message/delivered", NULL };
			json_t *evs = sess_collect(a->sess, kinds);
			team_fold(t, evs);
			json_decref(evs);
			t->lead = a;
			t->persist = team_persist_lead;
			agent_state_set(a, &team_key, t, team_free_state);
		}
		return t;
	}
	struct agent *p = agent_rt_get(a->rt, agent_parent(a));
	if (p == NULL || agent_parent(p) != NULL)
		return NULL;
	struct team *t = team_of(p);
	return team_member_by_id(t, agent_id(a)) ? t : NULL;
}

const char *
team_caller_name(struct agent *a)
{
	struct team *t = team_of(a);
	struct team_member *m;

	if (agent_parent(a) == NULL)
		return "lead";
	m = t ? team_member_by_id(t, agent_id(a)) : NULL;
	return m ? m->name : NULL;
}

const char *
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

/* What an isolated teammate's pending call needs when its worktree is made. */
struct team_spawning {
	struct tool_inv *inv;
	char *name;
	team_spawned_fn *done;
};

/* The teammate is made (child), or not (e): the member and the call as a spawn without a worktree. */
static json_t *
team_spawn_end(struct agent *caller, struct team *t, const char *name, struct agent *child, const struct err *se,
    struct err *e)
{
	struct team_member *m = team_member(t, name);

	if (m == NULL)
		return NULL;
	if (child == NULL) {
		/* The name is spent all the same: names are never reused. */
		size_t n;
		m->phase = TEAM_FAILED;
		m->error = utf8_repair(se->msg, strlen(se->msg), &n);	/* a message cut at its size may end mid-character */
		team_write(t, "team/member", team_member_record(m), NULL);
		team_changed(t);
		err_set(e, se->code, "%s", se->msg);
		return NULL;
	}
	(void)caller;
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

static void
team_spawned(void *arg, struct agent *child, const struct err *se)
{
	struct team_spawning *sp = arg;
	struct agent *lead = sp->inv->agent;
	struct team *t = team_of(lead);
	struct err e;
	json_t *result;

	err_clear(&e);
	result = t ? team_spawn_end(lead, t, sp->name, child, se, &e) : NULL;
	if (t == NULL)
		err_set(&e, se ? se->code : ERR_TEAM_INVALID_ARGUMENT, "%s", se ? se->msg : "the team is gone");
	sp->done(sp->inv, result, &e);
	free(sp->name);
	free(sp);
}

json_t *
team_spawn(struct tool_inv *inv, const char *name, const char *description, const char *prompt,
    const struct subagent_kind *kind, team_spawned_fn *done, int *pending, struct err *e)
{
	struct agent *caller = inv->agent;
	struct team *t;
	struct team_member *m;
	struct agent *child;

	*pending = 0;
	if (agent_parent(caller) != NULL) {
		err_set(e, ERR_TEAM_LEAD_REQUIRED, "only the Lead can spawn teammates");
		return NULL;
	}
	t = team_of(caller);
	/* a type or model it cannot have spends no name */
	if (team_name_check(t, name, e) < 0 || subagent_kind_check(caller, kind, e) < 0)
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
	json_t *source = xjson_pack("{s:s, s:s}", "kind", "team-message", "senderName", "lead");
	if (subagent_kind_isolated(caller, kind)) {
		/* its worktree first (docs/contract.md §24): the member provisioning meanwhile */
		struct team_spawning *sp = xcalloc(1, sizeof(*sp));
		sp->inv = inv;
		sp->name = xstrdup(name);
		sp->done = done;
		team_write(t, "team/member", team_member_record(m), NULL);
		team_changed(t);
		if (subagent_spawn_isolated(caller, name, content, source, kind, inv, team_spawned, sp, &se) > 0) {
			*pending = 1;
			return NULL;
		}
		free(sp->name);
		free(sp);
		return team_spawn_end(caller, t, name, NULL, &se, e);
	}
	child = subagent_spawn(caller, name, content, source, kind, inv, &se);
	return team_spawn_end(caller, t, name, child, &se, e);
}

const char *
team_member_session(struct agent *caller, const char *name)
{
	struct team *t = team_of(caller);
	struct team_member *m = t && name ? team_member(t, name) : NULL;

	return m ? m->id : NULL;
}

json_t *
team_interrupt(struct agent *caller, const char *target, struct err *e)
{
	struct team *t;
	struct team_member *m;
	struct agent *a;

	if (agent_parent(caller) != NULL) {
		err_set(e, ERR_TEAM_LEAD_REQUIRED, "only the Lead can interrupt teammates");
		return NULL;
	}
	t = team_of(caller);
	if (strcmp(target, "lead") == 0) {
		err_set(e, ERR_TEAM_INVALID_ARGUMENT, "the Lead cannot interrupt itself");
		return NULL;
	}
	m = team_member(t, target);
	if (m == NULL) {
		err_set(e, ERR_TEAM_MEMBER_NOT_FOUND, "no team member is called \"%.64s\"", target);
		return NULL;
	}
	a = m->id ? agent_rt_get(caller->rt, m->id) : NULL;
	if (a && a->status == AGENT_RUNNING) {
		agent_cancel(a, "parent");
		return xjson_pack("{s:s}", "previousStatus", "running");
	}
	return xjson_pack("{s:s}", "previousStatus", "inactive");
}

/* ---- status and recovery ---- */

/* A turn started or ended, or an agent was released: the roster's statuses changed. */
void
team_on_status(struct agent *a)
{
	struct team *t = NULL;
	int lead = agent_parent(a) == NULL;

	if (a->sess == NULL)
		return;
	if (lead) {
		t = team_of_lead(a);
	} else {
		struct agent *p = agent_rt_get(a->rt, agent_parent(a));
		t = p ? team_of_lead(p) : NULL;
		if (t && !team_member_by_id(t, agent_id(a)))
			t = NULL;
	}
	if (t == NULL || a->rt->shutting_down)
		return;
	team_changed(t);
	if (json_array_size(t->queued) && !lead && a->released)
		agent_push_next(t->lead, team_pump_task);	/* a slot may have freed */
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
