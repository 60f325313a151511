/* The descriptor's one check (session/descriptor.h). */
#include "session/descriptor.h"

#include <limits.h>
#include <string.h>

#include "base/utf8.h"

/* The permission modes a ceiling may name: agent/permit.c's ids (a unit test holds them equal). */
static const char *const desc_ceilings[] = { "read-only", "default", "accept-edits", "full-access" };

static int
desc_has_control(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 1;
	return 0;
}

int
sess_descriptor_tool_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > SESS_DESCRIPTOR_TOOL_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '*' && i == n - 1 && n > 1)
			continue;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
			c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

static int
desc_type_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

/* A string or null at k: 0 with *out (NULL for null or absent), -1 for anything else. */
static int
desc_opt_str(const json_t *data, const char *k, size_t max, int one_line, const char **out)
{
	const json_t *v = json_object_get(data, k);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v) || json_string_length(v) > max || strlen(json_string_value(v)) != json_string_length(v) ||
	    !utf8_valid(json_string_value(v), json_string_length(v)) || (one_line && desc_has_control(json_string_value(v))))
		return -1;
	*out = json_string_value(v);
	return 0;
}

static int
desc_tool_list(const json_t *v, const json_t **out)
{
	size_t i;
	const json_t *it;

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_array(v) || json_array_size(v) > 4096)
		return -1;
	json_array_foreach(v, i, it)
		if (!json_is_string(it) || !sess_descriptor_tool_ok(json_string_value(it)))
			return -1;
	*out = v;
	return 0;
}

/* A path git gave us: absolute (or relative for the subdirectory), one line, no "..". */
static int
desc_path_ok(const char *s, int absolute)
{
	if (strlen(s) > 4096 || desc_has_control(s) || (absolute ? s[0] != '/' : s[0] == '/'))
		return 0;
	for (const char *p = s; (p = strstr(p, "..")) != NULL; p += 2)
		if ((p == s || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
			return 0;
	return 1;
}

/* {"kind":"worktree","repo","branch","base","subdir"} (docs/contract.md §24). */
static int
desc_isolation(const json_t *v, struct sess_descriptor *d, const char **why)
{
	const char *kind = json_string_value(json_object_get(v, "kind"));
	size_t n;

	*why = "an isolation this build does not know";
	if (!json_is_object(v) || kind == NULL || strcmp(kind, "worktree") != 0)
		return -1;
	*why = "a bad isolation";
	d->iso_repo = json_string_value(json_object_get(v, "repo"));
	d->iso_branch = json_string_value(json_object_get(v, "branch"));
	d->iso_base = json_string_value(json_object_get(v, "base"));
	d->iso_subdir = json_string_value(json_object_get(v, "subdir"));
	if (!d->iso_repo || !d->iso_branch || !d->iso_base || !d->iso_subdir || !desc_path_ok(d->iso_repo, 1) ||
	    !desc_path_ok(d->iso_subdir, 0) || strncmp(d->iso_branch, "acp-agent/", 10) != 0 ||
	    strlen(d->iso_branch) > 64)
		return -1;
	for (const char *p = d->iso_branch + 10; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return -1;
	n = strlen(d->iso_base);
	if (n != 40 && n != 64)
		return -1;
	for (const char *p = d->iso_base; *p; p++)
		if (!((*p >= 'a' && *p <= 'f') || (*p >= '0' && *p <= '9')))
			return -1;
	return 0;
}

int
sess_descriptor_read(const json_t *data, struct sess_descriptor *d, const char **why)
{
	const json_t *label = json_object_get(data, "label"), *v;
	json_int_t version = json_integer_value(json_object_get(data, "version"));

	memset(d, 0, sizeof(*d));
	*why = "not an object";
	if (!json_is_object(data))
		return -1;
	*why = "an unknown version";
	if (!json_is_integer(json_object_get(data, "version")) || (version != 2 && version != 3))
		return -1;
	d->version = (int)version;
	d->mode = json_string_value(json_object_get(data, "mode"));
	*why = "no valid mode or label";
	if (d->mode == NULL || (strcmp(d->mode, "one-shot") != 0 && strcmp(d->mode, "continuable") != 0) ||
	    (label && !json_is_string(label)) || (strcmp(d->mode, "continuable") == 0 && label == NULL))
		return -1;
	d->label = json_string_value(label);
	if (version == 2)
		return 0;
	d->agent_type = json_string_value(json_object_get(data, "agentType"));
	*why = "no valid agentType";
	if (d->agent_type == NULL || !desc_type_name_ok(d->agent_type))
		return -1;
	*why = "a bad agentTypeDescription";
	if (desc_opt_str(data, "agentTypeDescription", SESS_DESCRIPTOR_DESCRIPTION_MAX, 1, &d->type_description) < 0)
		return -1;
	*why = "a bad model";
	if (desc_opt_str(data, "model", SESS_DESCRIPTOR_MODEL_MAX, 1, &d->model) < 0 || (d->model && !*d->model))
		return -1;
	*why = "a bad instructions text";
	if (desc_opt_str(data, "instructions", SESS_DESCRIPTOR_TEXT_MAX, 0, &d->instructions) < 0)
		return -1;
	*why = "a bad tools list";
	if (desc_tool_list(json_object_get(data, "tools"), &d->tools) < 0 || d->tools == NULL ||
	    desc_tool_list(json_object_get(data, "deniedTools"), &d->denied) < 0)
		return -1;
	*why = "a bad ceiling";
	if (desc_opt_str(data, "ceiling", 32, 1, &d->ceiling) < 0)
		return -1;
	if (d->ceiling) {
		size_t k = 0;
		while (k < sizeof(desc_ceilings) / sizeof(desc_ceilings[0]) && strcmp(desc_ceilings[k], d->ceiling) != 0)
			k++;
		if (k == sizeof(desc_ceilings) / sizeof(desc_ceilings[0]))
			return -1;
	}
	*why = "a bad maxSteps";
	v = json_object_get(data, "maxSteps");
	if (v && !json_is_null(v)) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > INT_MAX)
			return -1;
		d->max_steps = (int)json_integer_value(v);
	}
	v = json_object_get(data, "isolation");
	if (v && !json_is_null(v) && desc_isolation(v, d, why) < 0)
		return -1;
	*why = NULL;
	return 0;
}
