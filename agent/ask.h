/*
 * Asking the user (docs/contract.md §17): a root's mode and rules, kept in its log (session/created,
 * session/mode, permission/rule) and folded on first use, and the ask of one call: the options
 * in order, the answer, the rule an "always" leaves. Children use their root's mode and rules
 * and ask through its ACP session (agent/client.h). agent.c calls these at a call's start.
 */
#ifndef AGENT_ASK_H
#define AGENT_ASK_H

#include "agent/agent.h"
#include "agent/permit.h"

/* The mode a's calls are judged by: its root's (the runtime's start mode when it is not live). */
enum permit_mode agent_mode(struct agent *a);
/* Sets a root's mode (logged as session/mode); 0, or -1 with e (session_log_io). */
int agent_set_mode(struct agent *root, enum permit_mode m, struct err *e);
/* The model a's requests name: its root's session model (NULL: the provider's own). */
const char *agent_model(struct agent *a);
/* Sets a root's model from its next request on (logged as session/model); 0 or -1 with e. */
int agent_set_model(struct agent *root, const char *model, struct err *e);
/* -1 reject, 1 allow, 0 no rule, for a call whose plan is filled. */
int agent_ask_rule(struct agent *a, const struct tool *t, const struct tool_plan *plan);
/*
 * Sends the ask for inv (announced pending already). When it cannot be sent, or a child may not
 * ask, fills inv's result with the error and returns -1; else 0 and the answer later runs the
 * tool (through run) or fails the call, and calls inv->on_done.
 */
int agent_ask_start(struct agent *a, struct tool_inv *inv, void (*run)(struct tool_inv *inv));
/* Drops the ask of inv, if one is out ($/cancel_request); the caller settles the call. */
void agent_ask_cancel(struct agent *a, struct tool_inv *inv);
/* The descendants' asks of a root whose turn is cancelled fail as CANCELLED calls (§20.1). */
void agent_ask_cancel_below(struct agent *root);
/* Fills inv's result: PERMISSION_REJECTED "the user rejected this <edit|command|tool call>". */
void agent_ask_rejected(struct tool_inv *inv);
/* The root of a (itself for a root), live, or NULL. */
struct agent *agent_root(struct agent *a);

#endif
