/*
 * A child's composition (agent/compose.h), against the rules it must keep for any parent and any
 * type: a child never has a tool its parent lacks, nor one its type's allowlist leaves out or
 * its denylist names (send_message alone excepted, for a continuable child); its ceiling is never
 * laxer than its parent's or its type's; and what its descriptor carries, checked and read back,
 * allows exactly the same tools. Checked over a universe of names: the profile's tools, every
 * name the input mentions, and each with a suffix.
 *
 * Input: lines. 1: the parent's tools ("*": a root, every tool), 2: the parent's denylist, 3: the
 * type's allowlist ("*": none), 4: the type's denylist, 5: two digits, the parent's and the type's
 * ceiling (0-3, else none), and 1 for a continuable child. Names are space-separated and kept to
 * the characters a descriptor allows.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/compose.h"
#include "session/descriptor.h"
#include "tools/toolsets.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static struct toolbox tb;
static int ready;

/* The names of line (a new array), kept to [a-z_-] and a trailing *; "*" alone: NULL. */
static json_t *
names(const char *line, size_t n, json_t *universe)
{
	json_t *a;
	size_t i = 0;

	if (n == 1 && line[0] == '*')
		return NULL;
	a = json_array();
	while (i < n) {
		char w[40];
		size_t k = 0;
		while (i < n && line[i] == ' ')
			i++;
		while (i < n && line[i] != ' ' && k < sizeof(w) - 1) {
			char c = line[i++];
			if ((c >= 'a' && c <= 'z') || c == '_' || c == '-' || c == '*')
				w[k++] = c;
		}
		while (i < n && line[i] != ' ')
			i++;
		w[k] = '\0';
		char *star = strchr(w, '*');
		if (star && star[1] != '\0')
			*star = '\0';	/* a * only at the end */
		if (k == 0 || !sess_descriptor_tool_ok(w))
			continue;
		json_array_append_new(a, json_string(w));
		size_t wl = strlen(w);
		if (w[wl - 1] == '*')
			w[wl - 1] = '\0';
		if (*w) {
			json_array_append_new(universe, json_string(w));
			char more[48];
			snprintf(more, sizeof(more), "%sx", w);
			json_array_append_new(universe, json_string(more));
		}
	}
	return a;
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size, *line[5] = { 0 };
	size_t len[5] = { 0 };
	json_t *universe = json_array();

	if (!ready) {
		toolbox_init(&tb);
		toolsets_build(&tb, toolsets_profile("default", 1));
		ready = 1;
	}
	for (int l = 0; l < 5 && p <= end; l++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		line[l] = p;
		len[l] = nl ? (size_t)(nl - p) : (size_t)(end - p);
		p += len[l] + 1;
	}
	for (size_t i = 0; i < tb.n; i++)
		json_array_append_new(universe, json_string(tb.tools[i]->name));
	json_array_append_new(universe, json_string("mcp__gh__x"));
	json_array_append_new(universe, json_string("send_message"));

	struct agent_comp parent = AGENT_COMP_NONE, child, back;
	struct agent_type t = { 0 };
	json_t *ptools = line[0] ? names(line[0], len[0], universe) : NULL;
	json_t *pdeny = line[1] ? names(line[1], len[1], universe) : NULL;
	int pc = len[4] > 0 ? line[4][0] - '0' : -1, tc = len[4] > 1 ? line[4][1] - '0' : -1;
	int keep = len[4] > 2 && line[4][2] == '1';

	parent.tools = ptools;
	parent.denied = pdeny && json_array_size(pdeny) ? pdeny : NULL;
	parent.ceiling = pc >= 0 && pc <= 3 ? pc : -1;
	parent.type = ptools ? strdup("p") : NULL;
	t.name = (char *)"t";
	t.description = (char *)"d";
	t.instructions = (char *)"";
	t.tools = line[2] ? names(line[2], len[2], universe) : NULL;
	t.denied = line[3] ? names(line[3], len[3], universe) : NULL;
	t.ceiling = tc >= 0 && tc <= 3 ? tc : -1;
	agent_comp_make(&child, &parent, &tb, &t, NULL, keep);

	/* the ceiling: never laxer than the parent's or the type's */
	if ((parent.ceiling >= 0 && (child.ceiling < 0 || child.ceiling > parent.ceiling)) ||
	    (t.ceiling >= 0 && (child.ceiling < 0 || child.ceiling > t.ceiling)))
		abort();
	/* the descriptor carries it exactly */
	json_t *desc = json_pack("{s:i, s:s, s:s, s:s}", "version", 3, "mode", "continuable", "provider", "in-process",
	    "label", "l");
	struct sess_descriptor d;
	const char *why;
	agent_comp_describe(&child, desc);
	if (sess_descriptor_read(desc, &d, &why) < 0)
		abort();	/* a composition its own descriptor refuses */
	agent_comp_from_descriptor(&back, &d);
	size_t i;
	json_t *u;
	json_array_foreach(universe, i, u) {
		const char *name = json_string_value(u);
		int has = agent_comp_allows(&child, name);
		if (has != agent_comp_allows(&back, name))
			abort();
		if (!has || (keep && strcmp(name, "send_message") == 0))
			continue;
		/* what the parent has: its list (a root: the profile's tools and MCP) minus its denylist */
		int parent_has = agent_comp_allows(&parent, name) &&
		    (ptools || toolbox_find(&tb, name) || strncmp(name, "mcp__", 5) == 0);
		if (!parent_has)
			abort();
		size_t k;
		json_t *w;
		int allowed = t.tools == NULL, denied = 0;
		json_array_foreach(t.tools, k, w) {
			const char *s = json_string_value(w);
			size_t n = strlen(s);
			allowed |= s[n - 1] == '*' ? strncmp(s, name, n - 1) == 0 : strcmp(s, name) == 0;
		}
		json_array_foreach(t.denied, k, w) {
			const char *s = json_string_value(w);
			size_t n = strlen(s);
			denied |= s[n - 1] == '*' ? strncmp(s, name, n - 1) == 0 : strcmp(s, name) == 0;
		}
		if (!allowed || denied)
			abort();
	}
	json_decref(desc);
	agent_comp_free(&back);
	agent_comp_free(&child);
	if (parent.denied == NULL)
		json_decref(pdeny);	/* an empty one: never the parent's */
	agent_comp_free(&parent);	/* frees ptools and a non-empty pdeny (the parent's now) */
	json_decref(t.tools);
	json_decref(t.denied);
	json_decref(universe);
	return 0;
}
