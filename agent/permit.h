/*
 * The permission policy (docs/contract.md §17): the four modes, what each lets a call do, and the narrow
 * "always" rules. Pure: no agent, no client (agent/ask.c asks; the root's log keeps the mode and
 * the rules as session/mode and permission/rule events).
 */
#ifndef AGENT_PERMIT_H
#define AGENT_PERMIT_H

#include <jansson.h>

enum permit_mode { PERMIT_READ_ONLY, PERMIT_DEFAULT, PERMIT_ACCEPT_EDITS, PERMIT_FULL_ACCESS, PERMIT_NMODES };

/* What a call does, as the table of §17.1 sees it. */
enum permit_class {
	PERMIT_READ,		/* read, glob, grep, job_output, the agent tools */
	PERMIT_EDIT,		/* write, edit */
	PERMIT_EXEC,		/* bash, job_kill, mcp__* */
};

enum permit_verdict { PERMIT_ALLOW, PERMIT_ASK, PERMIT_REFUSE };

enum permit_verdict permit_decide(enum permit_mode m, enum permit_class c);
/* "read-only" ... into *out; -1 for another word. */
int permit_mode_parse(const char *id, enum permit_mode *out);
const char *permit_mode_id(enum permit_mode m);		/* "read-only", "default", ... */
const char *permit_mode_name(enum permit_mode m);	/* "Read only", "Default", ... */
const char *permit_mode_description(enum permit_mode m);
/* modes.availableModes and the options of the mode config option, in order: new refs. */
json_t *permit_modes_json(void);
json_t *permit_mode_options_json(void);

/*
 * The narrow rule a call may be remembered by: "edit:*" for an edit; "exec:<argv0> <argv1>" (or
 * "exec:<argv0>") for a simple command; "mcp:<server>:<tool>" (mcp_tool "server:tool"). NULL when
 * none exists: a command holding ; && || | $( ` > < or a newline gets no "always" options.
 * Returns owned; the option names go to *allow_name and *reject_name (owned) when not NULL.
 */
char *permit_rule(enum permit_class c, const char *command, const char *mcp_tool, char **allow_name,
    char **reject_name);

/* The rules of one root, folded from its permission/rule events: rule -> allow (bool). */
struct permit_rules {
	json_t *rules;		/* owned object */
};

void permit_rules_init(struct permit_rules *r);
void permit_rules_free(struct permit_rules *r);
void permit_rules_set(struct permit_rules *r, const char *rule, int allow);
/* 1 allow, 0 reject, -1 no rule. */
int permit_rules_get(const struct permit_rules *r, const char *rule);

#endif
