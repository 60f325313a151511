/* The model-facing tools (docs/contract.md §6, §8, §9.2) and their rendering. Strings live in each tool's file. */
#ifndef TOOLS_TOOLS_H
#define TOOLS_TOOLS_H

#include "agent/ext.h"
#include "agent/toolbox.h"

/* The two parameters that choose what a child is, on subagent and spawn_teammate (docs/contract.md §23.2). */
#define TOOL_AGENT_TYPE_DOC                                                                        \
	"The type of agent to start (default general); the available types are listed in this tool's description."
#define TOOL_MODEL_DOC "Model for this agent, instead of its type's model or yours."
#define TOOL_ISOLATION_DOC                                                                          \
	"worktree runs the agent in its own git worktree on a new branch, so its edits never touch your files " \
	"until you merge its branch. Needs a git repository."

extern const struct tool tool_subagent;
extern const struct tool tool_list_agents;
extern const struct tool tool_send_message;
extern const struct tool tool_interrupt_agent;
/* The Delegation section of the system prompt, beside the subagent tool (tools/subagent.c). */
void delegation_prompt(const struct agent *a, struct buf *b);

/* The workspace tools (docs/contract.md §16; tools/ws_files.c, ws_search.c, ws_bash.c) and their extension
 * (tools/workspace.c): every agent of a profile gets them, after the profile's own. */
extern const struct tool tool_read, tool_write, tool_edit, tool_glob, tool_grep, tool_bash, tool_job_output,
    tool_job_kill;
extern const struct agent_ext workspace_ext;

/* The task list (docs/contract.md §26; tools/todo_write.c): every agent of a profile with the workspace
 * tools gets it, after them. */
extern const struct tool tool_todo_write;
extern const struct agent_ext plan_ext;

/* The editor's MCP servers (docs/contract.md §18; tools/mcp.c): every profile has them, after its own tools. */
extern const struct agent_ext mcp_ext;

/* The Team (tools/team_tools.c): its nine tools in table order and the Team runtime's hooks. */
extern const struct agent_ext team_ext;
/* What wait_agent says when no other member can make progress (docs/contract.md §9.2). */
#define TEAM_NO_PROGRESS_TEXT                                                                     \
	"No other Team member is running or provisioning. wait_agent cannot make progress or wake "  \
	"inactive teammates. Re-list with list_agents and team_task_list, then use send_message to " \
	"wake each required inactive teammate before waiting again."

/* list_agents' text for a listing (agent/subagent.h's subagent_list); returns owned. */
char *list_agents_render(const json_t *entries, int descendants);

#endif
