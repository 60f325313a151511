/*
 * Session modes and config options (docs/contract.md §17.2, §20.1): what new, load and resume answer with,
 * session/set_mode, session/set_config_option, and the updates that follow a change.
 */
#include <stdlib.h>
#include <string.h>

#include "acp/internal.h"
#include "agent/ask.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

/* The model select's values: ACP_AGENT_MODELS (a comma list), else the provider's one. */
static json_t *
acp_model_values(struct acp_server *srv)
{
	json_t *a = json_array();
	const char *list = srv->opts.models;

	if (list && *list && strcmp(model_id(srv->model), "replay") != 0 &&
	    strcmp(model_id(srv->model), "builtin") != 0) {
		const char *p = list;
		while (*p) {
			size_t n = strcspn(p, ",");
			if (n)
				json_array_append_new(a, json_stringn(p, n));
			p += n + (p[n] == ',');
		}
	}
	if (json_array_size(a) == 0)
		json_array_append_new(a, json_string(model_id(srv->model)));
	return a;
}

static const char *
acp_current_model(struct acp_server *srv, struct agent *root)
{
	const char *m = agent_model(root);

	return m ? m : model_id(srv->model);
}

json_t *
acp_session_modes(struct agent *root)
{
	return xjson_pack("{s:s, s:o}", "currentModeId", permit_mode_id(agent_mode(root)), "availableModes",
	    permit_modes_json());
}

json_t *
acp_session_config(struct acp_server *srv, struct agent *root)
{
	json_t *models = acp_model_values(srv), *opts = json_array();
	size_t i;
	json_t *v;

	json_array_foreach(models, i, v) {
		char *desc = xasprintf("Model %s (%s)", json_string_value(v), model_provider(srv->model));
		json_array_append_new(opts, xjson_pack("{s:O, s:O, s:s}", "value", v, "name", v, "description", desc));
		free(desc);
	}
	json_decref(models);
	return xjson_pack("[{s:s, s:s, s:s, s:s, s:s, s:o}, {s:s, s:s, s:s, s:s, s:s, s:o}]",
	    "id", "mode", "name", "Mode", "category", "mode", "type", "select", "currentValue",
	    permit_mode_id(agent_mode(root)), "options", permit_mode_options_json(),
	    "id", "model", "name", "Model", "category", "model", "type", "select", "currentValue",
	    acp_current_model(srv, root), "options", opts);
}

void
acp_session_describe(struct acp_server *srv, struct agent *root, json_t *result)
{
	json_object_set_new(result, "modes", acp_session_modes(root));
	json_object_set_new(result, "configOptions", acp_session_config(srv, root));
}

/* Sets the mode of as and sends current_mode_update (and config_option_update when asked). */
static int
acp_set_mode(struct acp_session *as, enum permit_mode m, int config_update, struct err *e)
{
	struct acp_server *srv = as->srv;

	if (agent_set_mode(as->agent, m, e) < 0)
		return -1;
	acp_send_update(srv, as->id, xjson_pack("{s:s, s:s}", "sessionUpdate", "current_mode_update",
	    "currentModeId", permit_mode_id(m)));
	if (config_update)
		acp_send_update(srv, as->id, xjson_pack("{s:s, s:o}", "sessionUpdate", "config_option_update",
		    "configOptions", acp_session_config(srv, as->agent)));
	return 0;
}

char *
acp_mode_command(struct acp_session *as, const char *arg)
{
	enum permit_mode m;
	struct err e;

	if (arg == NULL || *arg == '\0')
		return xasprintf("Mode: %s (%s). Usage: /mode read-only|default|accept-edits|full-access",
		    permit_mode_name(agent_mode(as->agent)), permit_mode_id(agent_mode(as->agent)));
	if (permit_mode_parse(arg, &m) < 0)
		return xasprintf("Error: unknown mode \"%.64s\"; try read-only, default, accept-edits or full-access", arg);
	err_clear(&e);
	if (acp_set_mode(as, m, 1, &e) < 0)
		return xasprintf("Error: %s", e.msg);
	return xasprintf("Mode: %s (%s)", permit_mode_name(m), permit_mode_id(m));
}

json_t *
acp_m_session_set_mode(struct acp_server *srv, struct acp_msg *m)
{
	json_t *reply = NULL;
	struct acp_session *as = acp_live_session(srv, m, &reply);
	const char *id = json_string_value(json_object_get(m->params, "modeId"));
	enum permit_mode mode;
	struct err e;

	if (as == NULL)
		return reply;
	if (permit_mode_parse(id, &mode) < 0)
		return acp_invalid_params(m->id, "modeId: not one of read-only, default, accept-edits, full-access");
	err_clear(&e);
	if (agent_set_mode(as->agent, mode, &e) < 0)
		return acp_session_error(m->id, as->id, &e);
	/* The answer first, then the updates (docs/contract.md §20.1). */
	acp_send(srv, acp_result_new(m->id, json_object()));
	acp_send_update(srv, as->id, xjson_pack("{s:s, s:s}", "sessionUpdate", "current_mode_update",
	    "currentModeId", permit_mode_id(mode)));
	acp_send_update(srv, as->id, xjson_pack("{s:s, s:o}", "sessionUpdate", "config_option_update",
	    "configOptions", acp_session_config(srv, as->agent)));
	return NULL;
}

json_t *
acp_m_session_set_config_option(struct acp_server *srv, struct acp_msg *m)
{
	json_t *reply = NULL;
	struct acp_session *as = acp_live_session(srv, m, &reply);
	const char *cid = json_string_value(json_object_get(m->params, "configId"));
	const char *value = json_string_value(json_object_get(m->params, "value"));
	struct err e;

	if (as == NULL)
		return reply;
	if (cid == NULL || value == NULL)
		return acp_invalid_params(m->id, "configId and value: expected strings");
	err_clear(&e);
	if (strcmp(cid, "mode") == 0) {
		enum permit_mode mode;
		if (permit_mode_parse(value, &mode) < 0)
			return acp_invalid_params(m->id, "value: not one of read-only, default, accept-edits, full-access");
		if (agent_set_mode(as->agent, mode, &e) < 0)
			return acp_session_error(m->id, as->id, &e);
		acp_send(srv, acp_result_new(m->id, xjson_pack("{s:o}", "configOptions", acp_session_config(srv,
		    as->agent))));
		acp_send_update(srv, as->id, xjson_pack("{s:s, s:s}", "sessionUpdate", "current_mode_update",
		    "currentModeId", permit_mode_id(mode)));
		return NULL;
	}
	if (strcmp(cid, "model") != 0)
		return acp_invalid_params(m->id, "configId: not mode or model");
	json_t *values = acp_model_values(srv);
	size_t i;
	json_t *v;
	int known = 0;
	json_array_foreach(values, i, v) known |= strcmp(json_string_value(v), value) == 0;
	json_decref(values);
	if (!known)
		return acp_invalid_params(m->id, "value: not one of the model option's values");
	if (agent_set_model(as->agent, value, &e) < 0)
		return acp_session_error(m->id, as->id, &e);
	return acp_result_new(m->id, xjson_pack("{s:o}", "configOptions", acp_session_config(srv, as->agent)));
}
