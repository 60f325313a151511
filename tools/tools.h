/* The model-facing tools of the default profile (SPEC §6, §8). Strings live in each tool's file. */
#ifndef TOOLS_TOOLS_H
#define TOOLS_TOOLS_H

#include "agent/toolbox.h"

extern const struct tool tool_subagent;
extern const struct tool tool_list_agents;
extern const struct tool tool_send_message;
extern const struct tool tool_interrupt_agent;

/* The Team profile (tools/team_tools.c). */
extern const struct tool tool_spawn_teammate;
extern const struct tool tool_team_send_message;
extern const struct tool tool_team_list_agents;
extern const struct tool tool_wait_agent;
extern const struct tool tool_team_interrupt_agent;
extern const struct tool tool_team_task_create;
extern const struct tool tool_team_task_list;
extern const struct tool tool_team_task_get;
extern const struct tool tool_team_task_update;

#endif
