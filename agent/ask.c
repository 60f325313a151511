/* A root's permission state and the ask of one call (docs/contract.md §17.3, §17.4, §20.1). */
#include "agent/agent_def.h"
#include "agent/ask.h"

#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

/* A root's mode and rules (agent_state under ask_key), folded from its log on first use. */
struct ask_policy {
	enum permit_mode mode;
	struct permit_rules rules;
	char *model;		/* the last session/model's; NULL: the provider's */
};

static const char ask_key;

static void
ask_policy_free(void *p)
{
	struct ask_policy *pol = p;

	permit_rules_free(&pol->rules);
	free(pol->model);
	free(pol);
}

struct agent *
agent_root(struct agent *a)
{
	/* Depth-bounded: a damaged directory could hold a cycle of parents. */
	for (int hops = 0; a && agent_parent(a) && hops < 4096; hops++)
		a = agent_rt_get(a->rt, agent_parent(a));
	return a && agent_parent(a) == NULL ? a : NULL;
}

static struct ask_policy *
ask_policy(struct agent *root)
{
	struct ask_policy *pol = agent_state(root, &ask_key);
	size_t i;
	json_t *ev;

	if (pol)
		return pol;
	pol = xcalloc(1, sizeof(*pol));
	pol->mode = root->rt->start_mode;
	permit_rules_init(&pol->rules);
	/* Only the events that can tell, found by their type codes: a loaded log's tree is not walked
	 * on the loop (docs/decisions.md, "Sessions off the heap"). */
	static const char *const kinds[] = { "session/created", "session/mode", "session/model",
		"permission/rule", NULL };
	json_t *evs = sess_collect(root->sess, kinds);
	json_array_foreach(evs, i, ev) {
		const char *t = json_string_value(json_object_get(ev, "type"));
		enum sess_ev et = sess_ev_of(t);
		const json_t *d = json_object_get(ev, "data");
		enum permit_mode m;
		if (et == SESS_EV_CREATED || et == SESS_EV_SESSION_MODE) {
			/* A mode this build does not know (a newer writer) leaves the one before. */
			if (permit_mode_parse(json_string_value(json_object_get(d, "mode")), &m) == 0)
				pol->mode = m;
		}
		if (et == SESS_EV_SESSION_MODEL) {	/* a choice made in the session, not its start */
			free(pol->model);
			pol->model = xstrdup(json_string_value(json_object_get(d, "model")));
		} else if (et == SESS_EV_PERMISSION_RULE) {
			permit_rules_set(&pol->rules, json_string_value(json_object_get(d, "rule")),
			    json_is_true(json_object_get(d, "allow")));
		}
	}
	json_decref(evs);
	agent_state_set(root, &ask_key, pol, ask_policy_free);
	return pol;
}

enum permit_mode
agent_mode(struct agent *a)
{
	struct agent *root = agent_root(a);
	enum permit_mode m = root && root->sess ? ask_policy(root)->mode : a->rt->start_mode;

	/* the strictest of the root's mode and the lineage's ceilings (docs/contract.md §23.2):
	 * a child's ceiling is already the strictest of its type's and its parent's */
	if (a->comp.ceiling >= 0 && (enum permit_mode)a->comp.ceiling < m)
		m = (enum permit_mode)a->comp.ceiling;
	return m;
}

int
agent_set_mode(struct agent *root, enum permit_mode m, struct err *e)
{
	struct ask_policy *pol = ask_policy(root);

	if (sess_append(root->sess, "session/mode", xjson_pack("{s:s}", "mode", permit_mode_id(m)), e) == NULL)
		return -1;
	sess_checkpoint(root->sess);
	pol->mode = m;
	return 0;
}

const char *
agent_model(struct agent *a)
{
	struct agent *root = agent_root(a);

	if (a->comp.model)
		return a->comp.model;	/* its call's or its type's, fixed when it started */
	return root && root->sess ? ask_policy(root)->model : NULL;
}

int
agent_set_model(struct agent *root, const char *model, struct err *e)
{
	struct ask_policy *pol = ask_policy(root);

	if (sess_append(root->sess, "session/model", xjson_pack("{s:s}", "model", model), e) == NULL)
		return -1;
	sess_checkpoint(root->sess);
	free(pol->model);
	pol->model = xstrdup(model);
	return 0;
}

int
agent_ask_rule(struct agent *a, const struct tool *t, const struct tool_plan *plan)
{
	struct agent *root = agent_root(a);
	char *rule;
	int v;

	if (root == NULL || root->sess == NULL)
		return 0;
	rule = permit_rule(t->cls, plan->command, plan->mcp_tool, NULL, NULL);
	v = permit_rules_get(&ask_policy(root)->rules, rule);
	free(rule);
	return v < 0 ? 0 : v ? 1 : -1;
}

/* "the user rejected this <edit|command|tool call>" */
void
agent_ask_rejected(struct tool_inv *inv)
{
	const char *what = inv->tool->cls == PERMIT_EDIT ? "edit" : inv->plan.mcp_tool ? "tool call" : "command";

	tool_result_clear(&inv->result);
	tool_result_error(&inv->result, ERR_PERMISSION_REJECTED, "the user rejected this %s", what);
}

/* The ask's state while it is out (the request's callback argument). */
struct ask {
	struct agent *agent;
	struct tool_inv *inv;
	void (*run)(struct tool_inv *inv);
	char *rule;		/* the narrow rule, or NULL: no always options */
};

static void
ask_free(struct ask *k)
{
	free(k->rule);
	free(k);
}

/* Logs a rule in the root's log and keeps it; a failed write only loses the "always". */
static void
ask_remember(struct agent *a, const char *rule, int allow)
{
	struct agent *root = agent_root(a);
	struct err e;

	if (root == NULL || rule == NULL)
		return;
	err_clear(&e);
	if (sess_append(root->sess, "permission/rule", xjson_pack("{s:s, s:b}", "rule", rule, "allow", allow),
		&e) == NULL) {
		log_warn("agent %s: the rule %s is not remembered: %s", agent_id(root), rule, e.msg);
		return;
	}
	sess_checkpoint(root->sess);
	permit_rules_set(&ask_policy(root)->rules, rule, allow);
}

static void
ask_done(void *arg, const json_t *result, const json_t *error, const struct err *e)
{
	struct ask *k = arg;
	struct agent *a = k->agent;
	struct tool_inv *inv = k->inv;
	const json_t *outcome = json_object_get(result, "outcome");
	const char *kind = json_string_value(json_object_get(outcome, "outcome"));
	const char *option = json_string_value(json_object_get(outcome, "optionId"));
	const struct agent_client *c = a->rt->client;

	inv->asking = 0;
	inv->ask_id = 0;
	inv->state = NULL;	/* k: the tool's own state begins when it runs */
	if (error || e) {
		/* An error answer counts as a reject (docs/contract.md §20.1). */
		log_warn("agent %s: the permission request for %s failed: %s", agent_id(a), inv->call_id,
		    e ? e->msg : json_string_value(json_object_get(error, "message")));
		option = "reject";
		kind = "selected";
	}
	if (kind && strcmp(kind, "cancelled") == 0) {
		ask_free(k);
		if (agent_parent(a) == NULL) {
			agent_cancel(a, "user");	/* the root's own ask: the turn is cancelled (§17.3) */
			return;
		}
		tool_result_clear(&inv->result);
		tool_result_error(&inv->result, ERR_CANCELLED, "the permission request was cancelled");
		inv->done = 1;		/* its tool/result ends it on the client */
		inv->on_done(inv);
		return;
	}
	/* Only an option that was offered, selected, counts (docs/decisions.md): allow_always where no
	 * always was offered, or an outcome of "maybe", is a reject. */
	int offered = option && (strcmp(option, "allow") == 0 || strcmp(option, "reject") == 0 ||
	    (k->rule && (strcmp(option, "allow_always") == 0 || strcmp(option, "reject_always") == 0)));
	if (kind == NULL || strcmp(kind, "selected") != 0 || !offered) {
		log_warn("agent %s: permission answer %s \"%s\" for %s was not offered: rejected", agent_id(a),
		    kind ? kind : "(no outcome)", option ? option : "", inv->call_id);
		option = "reject";
	}
	int allow = strncmp(option, "allow", 5) == 0;
	if (strstr(option, "_always"))
		ask_remember(a, k->rule, allow);
	void (*run)(struct tool_inv *) = k->run;
	ask_free(k);
	if (!allow) {
		agent_ask_rejected(inv);
		inv->done = 1;
		inv->on_done(inv);
		return;
	}
	c->call_status(c->self, inv, "in_progress");
	run(inv);
}

int
agent_ask_start(struct agent *a, struct tool_inv *inv, void (*run)(struct tool_inv *inv))
{
	const struct agent_client *c = a->rt->client;
	struct ask *k;
	char *allow_name = NULL, *reject_name = NULL;
	json_t *options;
	struct err e;

	if (agent_parent(a) && a->rt->child_approvals_never) {
		tool_result_error(&inv->result, ERR_PERMISSION_REJECTED, "subagents cannot ask for approval in "
		    "this session; report back to your parent instead");
		return -1;
	}
	if (c == NULL) {
		tool_result_error(&inv->result, ERR_PERMISSION_REJECTED, "no editor is attached to ask for approval");
		return -1;
	}
	k = xcalloc(1, sizeof(*k));
	k->agent = a;
	k->inv = inv;
	k->run = run;
	k->rule = permit_rule(inv->tool->cls, inv->plan.command, inv->plan.mcp_tool, &allow_name, &reject_name);
	options = json_array();
	json_array_append_new(options, xjson_pack("{s:s, s:s, s:s}", "optionId", "allow", "name", "Allow", "kind",
	    "allow_once"));
	if (k->rule)
		json_array_append_new(options, xjson_pack("{s:s, s:s, s:s}", "optionId", "allow_always", "name",
		    allow_name, "kind", "allow_always"));
	json_array_append_new(options, xjson_pack("{s:s, s:s, s:s}", "optionId", "reject", "name", "Reject",
	    "kind", "reject_once"));
	if (k->rule)
		json_array_append_new(options, xjson_pack("{s:s, s:s, s:s}", "optionId", "reject_always", "name",
		    reject_name, "kind", "reject_always"));
	free(allow_name);
	free(reject_name);
	err_clear(&e);
	inv->asking = 1;
	inv->asked = 1;
	inv->ask_id = c->ask(c->self, inv, options, ask_done, k, &e);
	if (inv->ask_id == 0) {
		inv->asking = 0;
		ask_free(k);
		tool_result_error(&inv->result, ERR_PERMISSION_REJECTED, "the approval cannot be asked: %s", e.msg);
		return -1;
	}
	inv->state = k;
	return 0;
}

void
agent_ask_cancel(struct agent *a, struct tool_inv *inv)
{
	const struct agent_client *c = a->rt->client;

	if (!inv->asking)
		return;
	inv->asking = 0;
	if (c)
		c->cancel(c->self, inv->ask_id);
	inv->ask_id = 0;
	ask_free(inv->state);
	inv->state = NULL;
}

void
agent_ask_cancel_below(struct agent *root)
{
	for (size_t i = 0; i < root->rt->nall; i++) {
		struct agent *a = root->rt->all[i];
		if (a == root || a->released || a->invs == NULL || agent_root(a) != root)
			continue;
		for (size_t j = 0; j < a->ninv; j++) {
			struct tool_inv *inv = a->invs[j];
			if (!inv->asking)
				continue;
			agent_ask_cancel(a, inv);
			tool_result_clear(&inv->result);
			tool_result_error(&inv->result, ERR_CANCELLED, "the permission request was cancelled");
			inv->done = 1;
			inv->on_done(inv);
		}
	}
}
