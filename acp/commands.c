/* Slash commands: /agents, /send <agent> <text>, /interrupt <agent>, /mode <id>, /compact, /help. */
#include "acp/commands.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "acp/internal.h"
#include "base/buf.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

static int acp_commands_word(const char *text, const char *word);
static char *acp_commands_tool_out(struct agent *root, const char *name, json_t *args, json_t **output);

/* The commands as advertised, and as /help lists them: one table (docs/decisions.md, "Asks, steering and failures"). */
static const struct acp_command {
	const char *name, *description, *hint;
} acp_commands[] = {
	{ "agents", "List every subagent below this session, with status", "(no arguments)" },
	{ "send", "Send a message to a subagent of this session", "<agent id> <text>" },
	{ "interrupt", "Stop a subagent's current turn", "<agent id>" },
	{ "mode", "Set the session's permission mode, without the model", "read-only|default|accept-edits|full-access" },
	{ "compact", "Summarise the conversation so far to free the model's context", "(no arguments)" },
	{ "help", "List these commands", "(no arguments)" },
};

#define ACP_NCOMMANDS (sizeof(acp_commands) / sizeof(acp_commands[0]))

json_t *
acp_commands_update(void)
{
	json_t *list = json_array();

	for (size_t i = 0; i < ACP_NCOMMANDS; i++)
		json_array_append_new(list, xjson_pack("{s:s, s:s, s:{s:s}}", "name", acp_commands[i].name,
		    "description", acp_commands[i].description, "input", "hint", acp_commands[i].hint));
	return xjson_pack("{s:s, s:o}", "sessionUpdate", "available_commands_update", "availableCommands", list);
}

/* /help's text: each command with its hint and what it does. */
static char *
acp_commands_help(void)
{
	struct buf b;

	buf_init(&b);
	buf_puts(&b, "Commands:");
	for (size_t i = 0; i < ACP_NCOMMANDS; i++) {
		const char *h = acp_commands[i].hint;
		buf_printf(&b, "\n/%s%s%s: %s", acp_commands[i].name, h[0] == '(' ? "" : " ", h[0] == '(' ? "" : h,
		    acp_commands[i].description);
	}
	buf_puts(&b, "\n<agent id> is an id, a unique prefix of at least 8 characters, or a subagent's label.");
	return buf_steal(&b);
}

/* The end of the n-th space-separated word of text (n from 1), or NULL when it has fewer. */
static const char *
acp_commands_words_end(const char *text, int n)
{
	const char *p = text;

	for (int k = 0; k < n; k++) {
		while (*p == ' ')
			p++;
		if (*p == '\0' || *p == '\n')
			return NULL;
		p += strcspn(p, " \n");
	}
	return p;
}

/* Appends "<id> (<label>)" for each of matches to b. */
static void
acp_commands_list_matches(struct buf *b, json_t *matches)
{
	size_t i;
	json_t *m;

	json_array_foreach(matches, i, m) buf_printf(b, "%s%s (%s)", i ? ", " : "",
	    json_string_value(json_object_get(m, "id")), json_string_value(json_object_get(m, "label")));
}

/*
 * The agent the words of text name among root's descendants (docs/decisions.md): a whole id as it
 * is; else the longest run of leading words that is exactly one descendant's label; else a unique
 * id prefix of at least 8 characters. Sets *id (owned) and *rest (what follows the words) and
 * returns NULL, or returns the owned answer: no agent matches, or which ones are ambiguous.
 */
static char *
acp_commands_target(struct agent *root, const char *text, char **id, const char **rest)
{
	size_t first = strcspn(text, " \n"), i;
	json_t *all = NULL, *e, *matches = json_array();
	char *out = NULL;

	*id = NULL;
	*rest = text + first;
	if (first == SESS_ID_LEN && sess_id_validn(text, first)) {
		*id = xstrndup(text, first);
		*rest = text + first;
		json_decref(matches);
		return NULL;
	}
	/* the root's descendants as list_agents gives them to the model (no extension's header
	 * here: the profile's tool is the seam) */
	free(acp_commands_tool_out(root, "list_agents", xjson_pack("{s:s}", "scope", "descendants"), &all));
	if (!json_is_array(all)) {
		json_decref(all);
		all = json_array();
	}
	/* labels: the longest run of words first */
	int nwords = 0;
	while (acp_commands_words_end(text, nwords + 1))
		nwords++;
	for (int n = nwords; n >= 1 && json_array_size(matches) == 0; n--) {
		const char *end = acp_commands_words_end(text, n);
		json_array_foreach(all, i, e) {
			const char *label = json_string_value(json_object_get(e, "label"));
			if (label && strlen(label) == (size_t)(end - text) && memcmp(label, text, (size_t)(end - text)) == 0)
				json_array_append(matches, e);
		}
		*rest = end;
	}
	if (json_array_size(matches) == 0 && first >= 8) {
		json_array_foreach(all, i, e) {
			const char *eid = json_string_value(json_object_get(e, "id"));
			if (json_object_get(e, "label") && eid && strncmp(eid, text, first) == 0)
				json_array_append(matches, e);
		}
		*rest = text + first;
	}
	if (json_array_size(matches) == 1) {
		*id = xstrdup(json_string_value(json_object_get(json_array_get(matches, 0), "id")));
	} else if (json_array_size(matches) == 0) {
		out = xasprintf("no agent matches \"%.*s\"", (int)first, text);
	} else {
		struct buf b;
		buf_init(&b);
		buf_printf(&b, "ambiguous agent \"%.*s\": ", (int)(*rest - text), text);
		acp_commands_list_matches(&b, matches);
		out = buf_steal(&b);
	}
	json_decref(matches);
	json_decref(all);
	return out;
}

int
acp_commands_is_compact(const char *text)
{
	return acp_commands_word(text, "/compact");
}

static size_t acp_commands_slash_word(const char *text);

static int
acp_commands_word(const char *text, const char *word)
{
	size_t n = strlen(word);

	return strncmp(text, word, n) == 0 && (text[n] == '\0' || text[n] == ' ' || text[n] == '\n');
}

const char *
acp_commands_match(const json_t *prompt)
{
	const json_t *first = json_array_get(prompt, 0);
	const char *text = json_string_value(json_object_get(first, "text"));

	if (json_array_size(prompt) != 1 || text == NULL)
		return NULL;
	return acp_commands_slash_word(text) ? text : NULL;
}

/* The length of a "/word" a text starts with (a letter, then letters, digits, - or _, then the
 * end, a space or a newline), or 0: "/usr/bin is slow" is no command. */
static size_t
acp_commands_slash_word(const char *text)
{
	size_t n = 1;

	if (text[0] != '/' || !isalpha((unsigned char)text[1]))
		return 0;
	while (isalnum((unsigned char)text[n]) || text[n] == '-' || text[n] == '_')
		n++;
	return text[n] == '\0' || text[n] == ' ' || text[n] == '\n' ? n : 0;
}

/* Runs one tool of the root's set directly, as the root; takes args. Its result text (owned), and
 * with output its structured result (a new reference, or NULL). */
static char *
acp_commands_tool_out(struct agent *root, const char *name, json_t *args, json_t **output)
{
	const struct tool *t = toolbox_find(agent_tools(root), name);
	struct tool_inv inv;
	struct tool_result r = { 0 };
	char *text;
	struct err e;

	if (output)
		*output = NULL;
	if (t == NULL) {
		json_decref(args);
		return xasprintf("Error: /%s is not available in this profile", name);
	}
	err_clear(&e);
	char *raw = json_dumps(args, JSON_COMPACT);
	json_t *checked = toolbox_check_args(agent_tools(root), t, raw, &e);
	free(raw);
	json_decref(args);
	if (checked == NULL)
		return xasprintf("Error: %s", e.msg);
	memset(&inv, 0, sizeof(inv));
	inv.agent = root;
	inv.tool = t;
	inv.call_id = (char *)"slash-command";
	if (t->run(&inv, checked, &r) != TOOL_DONE) {
		/* No slash command starts a waiting call; a pending one would outlive inv. */
		json_decref(checked);
		return xstrdup("Error: the command did not complete");
	}
	json_decref(checked);
	text = r.text ? r.text : xstrdup("");
	r.text = NULL;
	if (output && r.output)
		*output = json_incref(r.output);
	tool_result_clear(&r);
	return text;
}

static char *
acp_commands_tool(struct agent *root, const char *name, json_t *args)
{
	return acp_commands_tool_out(root, name, args, NULL);
}

char *
acp_commands_run(struct acp_session *as, const char *text)
{
	struct agent *root = as->agent;
	const struct toolset_profile *p = as->srv->profile;
	const char *rest;
	const char *key = p->target_key;	/* the Team addresses members by name: "target" */

	if (acp_commands_word(text, "/mode")) {
		rest = text + strlen("/mode");
		while (*rest == ' ')
			rest++;
		char *id = xstrndup(rest, strcspn(rest, " \n"));
		char *out = acp_mode_command(as, id);
		free(id);
		return out;
	}
	if (acp_commands_word(text, "/agents"))
		return acp_commands_tool(root, "list_agents", json_loads(p->agents_args, 0, NULL));
	if (acp_commands_word(text, "/help"))
		return acp_commands_help();
	int interrupt = acp_commands_word(text, "/interrupt");
	if (!interrupt && !acp_commands_word(text, "/send"))
		return xasprintf(ACP_COMMANDS_UNKNOWN, (int)acp_commands_slash_word(text), text);
	rest = text + strlen(interrupt ? "/interrupt" : "/send");
	while (*rest == ' ')
		rest++;
	if (*rest == '\0' || *rest == '\n')
		return xstrdup(interrupt ? "Usage: /interrupt <agent id>" : "Usage: /send <agent id> <text>");
	char *id = NULL, *out;
	const char *msg;
	/* The Team addresses its members by name, which the team tools resolve themselves. */
	if (strcmp(key, "agent_id") != 0) {
		id = xstrndup(rest, strcspn(rest, " \n"));
		msg = rest + strlen(id);
	} else if ((out = acp_commands_target(root, rest, &id, &msg)) != NULL) {
		return out;
	}
	while (*msg == ' ' || *msg == '\n')
		msg++;
	if (interrupt)
		out = acp_commands_tool(root, "interrupt_agent", xjson_pack("{s:s}", key, id));
	else if (*msg == '\0')
		out = xstrdup("Usage: /send <agent id> <text>");
	else
		out = acp_commands_tool(root, "send_message", xjson_pack("{s:s, s:s}", key, id, "message", msg));
	free(id);
	return out;
}
