/* Tool sets, argument checking and results. */
#include "agent/toolbox.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

void
toolbox_init(struct toolbox *tb)
{
	tb->tools = NULL;
	tb->n = 0;
	tb->schemas = json_object();
}

void
toolbox_add(struct toolbox *tb, const struct tool *t)
{
	json_error_t jerr;
	json_t *schema = json_loads(t->schema, 0, &jerr);

	if (schema == NULL) {
		/* A programmer error: the schema text is ours. */
		log_error("toolbox: %s: bad schema: %s", t->name, jerr.text);
		abort();
	}
	tb->tools = xrealloc(tb->tools, (tb->n + 1) * sizeof(*tb->tools));
	tb->tools[tb->n++] = t;
	json_object_set_new(tb->schemas, t->name, schema);
}

void
toolbox_free(struct toolbox *tb)
{
	free(tb->tools);
	json_decref(tb->schemas);
	tb->tools = NULL;
	tb->n = 0;
	tb->schemas = NULL;
}

const struct tool *
toolbox_find(const struct toolbox *tb, const char *name)
{
	for (size_t i = 0; i < tb->n; i++)
		if (strcmp(tb->tools[i]->name, name) == 0)
			return tb->tools[i];
	return NULL;
}

json_t *
toolbox_describe(const struct toolbox *tb)
{
	json_t *a = json_array();

	for (size_t i = 0; i < tb->n; i++)
		json_array_append_new(a, xjson_pack("{s:s, s:s, s:O}", "name", tb->tools[i]->name,
		    "description", tb->tools[i]->description, "parameters",
		    json_object_get(tb->schemas, tb->tools[i]->name)));
	return a;
}

static int
toolbox_type_ok(const char *type, const json_t *v)
{
	if (strcmp(type, "string") == 0)
		return json_is_string(v);
	if (strcmp(type, "boolean") == 0)
		return json_is_boolean(v);
	if (strcmp(type, "integer") == 0)
		return json_is_integer(v);
	if (strcmp(type, "number") == 0)
		return json_is_number(v);
	if (strcmp(type, "object") == 0)
		return json_is_object(v);
	if (strcmp(type, "array") == 0)
		return json_is_array(v);
	return json_is_null(v);
}

int
toolbox_schema_check(const json_t *schema, const json_t *value, const char *path, struct err *e)
{
	const char *type = json_string_value(json_object_get(schema, "type"));
	const json_t *props = json_object_get(schema, "properties");
	const json_t *en = json_object_get(schema, "enum");
	const char *field = path[0] ? path : "arguments";

	if (type && !toolbox_type_ok(type, value))
		return err_set(e, ERR_INVALID_ARGUMENT, "invalid arguments: \"%s\" must be %s %s", field,
		    strcmp(type, "integer") == 0 || strcmp(type, "object") == 0 ||
			    strcmp(type, "array") == 0 ? "an" : "a", type);
	if (en) {
		size_t i;
		const json_t *opt;
		int found = 0;
		json_array_foreach(en, i, opt) found |= json_equal(opt, value);
		if (!found)
			return err_set(e, ERR_INVALID_ARGUMENT, "invalid arguments: \"%s\" has an unsupported value",
			    field);
	}
	if (json_is_number(value)) {
		const json_t *min = json_object_get(schema, "minimum"), *max = json_object_get(schema, "maximum");
		if ((min && json_number_value(value) < json_number_value(min)) ||
		    (max && json_number_value(value) > json_number_value(max)))
			return err_set(e, ERR_INVALID_ARGUMENT, "invalid arguments: \"%s\" is out of range", field);
	}
	if (json_is_object(value) && type && strcmp(type, "object") == 0) {
		size_t i;
		const json_t *req;
		const char *k;
		json_t *v;
		json_array_foreach(json_object_get(schema, "required"), i, req) {
			if (json_object_get(value, json_string_value(req)) == NULL)
				return err_set(e, ERR_INVALID_ARGUMENT, "invalid arguments: \"%s%s%s\" is required",
				    path, path[0] ? "." : "", json_string_value(req));
		}
		json_object_foreach((json_t *)value, k, v) {
			const json_t *sub = json_object_get(props, k);
			char *p = xasprintf("%s%s%s", path, path[0] ? "." : "", k);
			int rc = 0;
			if (sub == NULL && json_is_false(json_object_get(schema, "additionalProperties")))
				rc = err_set(e, ERR_INVALID_ARGUMENT, "invalid arguments: unknown field \"%s\"", p);
			else if (sub)
				rc = toolbox_schema_check(sub, v, p, e);
			free(p);
			if (rc < 0)
				return -1;
		}
	}
	if (json_is_array(value) && json_object_get(schema, "items")) {
		size_t i;
		json_t *v;
		json_array_foreach(value, i, v) {
			char *p = xasprintf("%s[%zu]", field, i);
			int rc = toolbox_schema_check(json_object_get(schema, "items"), v, p, e);
			free(p);
			if (rc < 0)
				return -1;
		}
	}
	return 0;
}

json_t *
toolbox_check_args(const struct toolbox *tb, const struct tool *t, const char *raw, struct err *e)
{
	json_error_t jerr;
	json_t *args = json_loads(raw && *raw ? raw : "{}", JSON_REJECT_DUPLICATES, &jerr);

	if (args == NULL) {
		err_set(e, ERR_INVALID_ARGUMENT, "invalid arguments: not valid JSON (%s)", jerr.text);
		return NULL;
	}
	if (!json_is_object(args)) {
		json_decref(args);
		err_set(e, ERR_INVALID_ARGUMENT, "invalid arguments: expected a JSON object");
		return NULL;
	}
	if (tb != NULL && toolbox_find(tb, t->name) == t) {
		if (toolbox_schema_check(json_object_get(tb->schemas, t->name), args, "", e) < 0) {
			json_decref(args);
			return NULL;
		}
		return args;
	}
	json_t *schema = json_loads(t->schema, 0, NULL);
	int rc = toolbox_schema_check(schema, args, "", e);
	json_decref(schema);
	if (rc < 0) {
		json_decref(args);
		return NULL;
	}
	return args;
}

void
tool_result_set(struct tool_result *r, const char *text, json_t *output)
{
	r->text = xstrdup(text);
	r->output = output;
	r->error_code = ERR_NONE;
	r->agent_id[0] = '\0';
	r->linked[0] = '\0';
}

void
tool_result_error(struct tool_result *r, enum err_code code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->text = xasprintf("Error: %s", msg);
	json_decref(r->output);
	r->output = NULL;
	r->error_code = code;
}

void
tool_result_read_only(struct tool_result *r, const struct tool *t)
{
	tool_result_error(r, ERR_PERMISSION_MODE_READ_ONLY, "%s is not allowed in read-only mode", t->name);
}

void
tool_plan_clear(struct tool_plan *p)
{
	free(p->command);
	free(p->mcp_tool);
	json_decref(p->locations);
	json_decref(p->content);
	memset(p, 0, sizeof(*p));
}

void
tool_result_clear(struct tool_result *r)
{
	free(r->text);
	json_decref(r->output);
	r->text = NULL;
	r->output = NULL;
	r->error_code = ERR_NONE;
	r->agent_id[0] = '\0';
	r->linked[0] = '\0';
}

void
tool_inv_complete(struct tool_inv *inv, struct tool_result *r)
{
	if (inv->done) {
		tool_result_clear(r);
		return;
	}
	inv->result = *r;
	memset(r, 0, sizeof(*r));
	inv->done = 1;
	inv->cancel = NULL;
	if (inv->on_done)
		inv->on_done(inv);
}
