/* Assembles the tool sets the server hands to agents (SPEC §8, §9). */
#ifndef TOOLS_TOOLSETS_H
#define TOOLS_TOOLSETS_H

#include "agent/toolbox.h"

enum toolset_profile { TOOLSET_DEFAULT, TOOLSET_TEAM };

int toolsets_parse_profile(const char *s, enum toolset_profile *out);
/* Fills tb (initialised by the caller) with the profile's tools. */
void toolsets_build(struct toolbox *tb, enum toolset_profile profile);
/* docs/tools.md: name, description, parameters of each tool; returns owned. */
char *toolsets_markdown(const struct toolbox *tb, const char *profile_name);

#endif
