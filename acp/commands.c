/* Slash commands: /agents, /send <id> <text>, /interrupt <id>, /mode <id>, /compact. */
#include "acp/commands.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "acp/internal.h"
#include "base/xjson.h"
#include "base/xmalloc.h"

static int acp_commands_word(const char *text, const char *word);

json_t *
acp_commands_update(void)
{
	return xjson_pack("{s:s, s:[{s:s, s:s, s:{s:s}}, {s:s, s:s, s:{s:s}}, {s:s, s:s, s:{s:s}}, "
	    "{s:s, s:s, s:{s:s}}, {s:s, s:s, s:{s:s}}]}",
	    "sessionUpdate", "available_commands_update", "availableCommands",
	    "name", "agents", "description", "List every subagent below this session, with status",
	    "input", "hint", "(no arguments)",
	    "name", "send", "description", "Send a message to a subagent of this session",
	    "input", "hint", "<agent id> <text>",
	    "name", "interrupt", "description", "Stop a subagent's current turn",
	    "input", "hint", "<agent id>",
	    "name", "mode", "description", "Set the session's permission mode, without the model",
	    "input", "hint", "read-only|default|accept-edits|full-access",
	    "name", "compact", "description", "Summarise the conversation so far to free the model's context",
	    "input", "hint", "(no arguments)");
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

/* Runs one tool of the root's set directly, as the root; takes args. */
static char *
acp_commands_tool(struct agent *root, const char *name, json_t *args)
{
	const struct tool *t = toolbox_find(root->tools, name);
	struct tool_inv inv;
	struct tool_result r = { 0 };
	char *text;
	struct err e;

	if (t == NULL) {
		json_decref(args);
		return xasprintf("Error: /%s is not available in this profile", name);
	}
	err_clear(&e);
	char *raw = json_dumps(args, JSON_COMPACT);
	json_t *checked = toolbox_check_args(root->tools, t, raw, &e);
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
	tool_result_clear(&r);
	return text;
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
	if (acp_commands_word(text, "/interrupt")) {
		rest = text + strlen("/interrupt");
		while (*rest == ' ')
			rest++;
		if (*rest == '\0')
			return xstrdup("Usage: /interrupt <agent id>");
		char *id = xstrndup(rest, strcspn(rest, " \n"));
		char *out = acp_commands_tool(root, "interrupt_agent", xjson_pack("{s:s}", key, id));
		free(id);
		return out;
	}
	if (!acp_commands_word(text, "/send"))
		return xasprintf(ACP_COMMANDS_UNKNOWN, (int)acp_commands_slash_word(text), text);
	rest = text + strlen("/send");
	while (*rest == ' ')
		rest++;
	size_t idlen = strcspn(rest, " \n");
	const char *msg = rest + idlen;
	while (*msg == ' ' || *msg == '\n')
		msg++;
	if (idlen == 0 || *msg == '\0')
		return xstrdup("Usage: /send <agent id> <text>");
	char *id = xstrndup(rest, idlen);
	char *out = acp_commands_tool(root, "send_message", xjson_pack("{s:s, s:s}", key, id, "message", msg));
	free(id);
	return out;
}
