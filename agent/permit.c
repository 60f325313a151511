/* The permission policy: the table of docs/contract.md §17.1 and the narrow rules of §17.3. */
#include "agent/agent_def.h"
#include "agent/permit.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

static const struct {
	const char *id, *name, *description;
	enum permit_verdict edit, exec;
} permit_modes[PERMIT_NMODES] = {
	[PERMIT_READ_ONLY] = { "read-only", "Read only",
		"Reads and searches; every edit is refused, commands ask first", PERMIT_REFUSE, PERMIT_ASK },
	[PERMIT_DEFAULT] = { "default", "Default", "Reads and searches; edits and commands ask first",
		PERMIT_ASK, PERMIT_ASK },
	[PERMIT_ACCEPT_EDITS] = { "accept-edits", "Accept edits", "Edits without asking; commands ask first",
		PERMIT_ALLOW, PERMIT_ASK },
	[PERMIT_FULL_ACCESS] = { "full-access", "Full access", "Edits and commands without asking",
		PERMIT_ALLOW, PERMIT_ALLOW },
};

enum permit_verdict
permit_decide(enum permit_mode m, enum permit_class c)
{
	if ((unsigned)m >= PERMIT_NMODES)
		m = PERMIT_DEFAULT;
	if (c == PERMIT_EDIT)
		return permit_modes[m].edit;
	if (c == PERMIT_EXEC)
		return permit_modes[m].exec;
	return PERMIT_ALLOW;
}

int
permit_mode_parse(const char *id, enum permit_mode *out)
{
	for (int m = 0; m < PERMIT_NMODES; m++)
		if (id && strcmp(id, permit_modes[m].id) == 0) {
			*out = (enum permit_mode)m;
			return 0;
		}
	return -1;
}

const char *
permit_mode_id(enum permit_mode m)
{
	return permit_modes[(unsigned)m < PERMIT_NMODES ? m : PERMIT_DEFAULT].id;
}

const char *
permit_mode_name(enum permit_mode m)
{
	return permit_modes[(unsigned)m < PERMIT_NMODES ? m : PERMIT_DEFAULT].name;
}

const char *
permit_mode_description(enum permit_mode m)
{
	return permit_modes[(unsigned)m < PERMIT_NMODES ? m : PERMIT_DEFAULT].description;
}

/* The modes in order as [{<key>: id, name, description}]: new ref. */
static json_t *
permit_modes_list(const char *key)
{
	json_t *a = json_array();

	for (int m = 0; m < PERMIT_NMODES; m++)
		json_array_append_new(a, xjson_pack("{s:s, s:s, s:s}", key, permit_modes[m].id, "name",
		    permit_modes[m].name, "description", permit_modes[m].description));
	return a;
}

json_t *
permit_modes_json(void)
{
	return permit_modes_list("id");
}

json_t *
permit_mode_options_json(void)
{
	return permit_modes_list("value");
}

/* The first (at most) two words of a simple command, one space between ("git status"), else NULL. */
static char *
permit_simple_words(const char *command)
{
	static const char *const compound[] = { ";", "&&", "||", "|", "$(", "`", ">", "<", "\n", NULL };
	const char *p = command;
	struct buf b;

	for (const char *const *c = compound; *c; c++)
		if (strstr(command, *c))
			return NULL;
	buf_init(&b);
	for (int words = 0; words < 2; words++) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			break;
		const char *start = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		if (b.len)
			buf_puts(&b, " ");
		buf_append(&b, start, (size_t)(p - start));
	}
	if (b.len == 0) {
		buf_free(&b);
		return NULL;
	}
	return buf_steal(&b);
}

char *
permit_rule(enum permit_class c, const char *command, const char *mcp_tool, char **allow_name,
    char **reject_name)
{
	char *rule = NULL, *allow = NULL, *reject = NULL;

	if (c == PERMIT_EDIT) {
		rule = xstrdup("edit:*");
		allow = xstrdup("Allow all edits in this workspace");
		reject = xstrdup("Reject all edits in this workspace");
	} else if (c == PERMIT_EXEC && mcp_tool) {
		rule = xasprintf("mcp:%s", mcp_tool);
		allow = xasprintf("Always allow %s", mcp_tool);
		reject = xasprintf("Always reject %s", mcp_tool);
	} else if (c == PERMIT_EXEC && command) {
		char *words = permit_simple_words(command);
		if (words) {
			rule = xasprintf("exec:%s", words);
			allow = xasprintf("Always allow \"%s …\"", words);
			reject = xasprintf("Always reject \"%s …\"", words);
			free(words);
		}
	}
	if (allow_name)
		*allow_name = allow;
	else
		free(allow);
	if (reject_name)
		*reject_name = reject;
	else
		free(reject);
	return rule;
}

void
permit_rules_init(struct permit_rules *r)
{
	r->rules = json_object();
}

void
permit_rules_free(struct permit_rules *r)
{
	json_decref(r->rules);
	r->rules = NULL;
}

void
permit_rules_set(struct permit_rules *r, const char *rule, int allow)
{
	json_object_set_new(r->rules, rule, json_boolean(allow));
}

int
permit_rules_get(const struct permit_rules *r, const char *rule)
{
	const json_t *v = rule ? json_object_get(r->rules, rule) : NULL;

	return v ? json_is_true(v) : -1;
}
