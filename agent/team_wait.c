/* wait_agent: a call that waits, with a timer, until the team changes. */
#include "agent/agent_def.h"
#include "agent/team.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/team_int.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

void
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
		err_set(e, ERR_TEAM_INVALID_TIMEOUT, "timeout_ms must be between 10000 and 3600000");
		return TOOL_DONE;
	}
	if (t == NULL || me == NULL) {
		err_set(e, ERR_TEAM_MEMBER_NOT_FOUND, "this agent is not a member of a live team");
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
