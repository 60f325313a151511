/* The model-facing tools of the default profile (SPEC §6, §8). Strings live in each tool's file. */
#ifndef TOOLS_TOOLS_H
#define TOOLS_TOOLS_H

#include "agent/toolbox.h"

extern const struct tool tool_subagent;
extern const struct tool tool_list_agents;
extern const struct tool tool_send_message;
extern const struct tool tool_interrupt_agent;

#endif
