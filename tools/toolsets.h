/*
 * The profiles (docs/contract.md §8, §9): each is a list of extensions (agent/ext.h), assembled here and
 * nowhere else; the server runs every agent with its profile's extensions and tool set.
 */
#ifndef TOOLS_TOOLSETS_H
#define TOOLS_TOOLSETS_H

#include "agent/ext.h"
#include "agent/toolbox.h"

struct toolset_profile {
	const char *name;
	const struct agent_ext *const *exts;	/* NULL-terminated, in hook and tool order */
	/* How slash commands (acp/commands.c) call the agent tools of this profile: */
	const char *target_key;		/* the argument naming an agent: "agent_id", "target" */
	const char *agents_args;	/* list_agents' arguments for /agents, as JSON text */
};

/* The profile called name ("default", "team"), with docs/contract.md §16's tools after its own when
 * workspace (--tools workspace), or NULL. */
const struct toolset_profile *toolsets_profile(const char *name, int workspace);
/* Fills tb (initialised by the caller) with the tools of p's extensions, in order. */
void toolsets_build(struct toolbox *tb, const struct toolset_profile *p);
/* docs/tools.md: name, description, parameters of each tool; returns owned. */
/* Every tool name the profiles have (with the workspace tools), each once: an owned NULL-terminated
 * array, freed with toolsets_names_free. */
char **toolsets_names(void);
void toolsets_names_free(char **names);
char *toolsets_markdown(const struct toolbox *tb, const char *profile_name);

#endif
