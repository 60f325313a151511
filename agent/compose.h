/*
 * A child's composition (docs/contract.md §23.2, §23.3): what its agent type made of it (its
 * instructions, tool set, model, step limit and permission ceiling), fixed when it starts and
 * written whole into its descriptor, so a cold resume rebuilds exactly that child whatever the
 * type files say then. A root has none: every tool, its own model and mode, --max-steps.
 *
 * A tool set is a list of names and prefix patterns (a trailing *: the session's MCP tools come
 * and go, so a set that reaches them holds a pattern). Names are resolved against the parent's
 * set and the denylist when the child starts; only the denied entries a pattern could still
 * match are kept, in denied.
 */
#ifndef AGENT_COMPOSE_H
#define AGENT_COMPOSE_H

#include <jansson.h>

#include "agent/agent_types.h"
#include "agent/toolbox.h"
#include "session/descriptor.h"
#include "workspace/git.h"

struct agent_comp {
	char *type;			/* owned; NULL: a root (nothing composed) */
	char *type_description;		/* owned, or NULL */
	char *model;			/* owned, or NULL: the root's current model */
	json_t *tools;			/* owned array of names and patterns, or NULL: every tool */
	json_t *denied;			/* owned array of the same forms, or NULL */
	int ceiling;			/* enum permit_mode, or -1: none */
	int max_steps;			/* 0: --max-steps */
	char *instructions;		/* owned, or NULL */
	/* an isolated child's worktree (docs/contract.md §24): NULL when not isolated; its
	 * strings owned (path: <state-dir>/worktrees/<id>, set where the child is known) */
	struct git_wt *wt;
};

#define AGENT_COMP_NONE { NULL, NULL, NULL, NULL, NULL, -1, 0, NULL, NULL }

void agent_comp_free(struct agent_comp *c);
/* Whether an agent composed as c may have the tool called name. */
int agent_comp_allows(const struct agent_comp *c, const char *name);
/*
 * The composition of a child of a parent composed as parent whose profile's tools are tb, started
 * as type t with model (NULL: the type's, else the parent's). keep_send: a continuable child or a
 * teammate, which always keeps send_message. out is overwritten.
 */
void agent_comp_make(struct agent_comp *out, const struct agent_comp *parent, const struct toolbox *tb,
    const struct agent_type *t, const char *model, int keep_send);
/* From a descriptor that passed its check (version 2: the general type, nothing narrowed). */
void agent_comp_from_descriptor(struct agent_comp *out, const struct sess_descriptor *d);
/* A child whose descriptor did not pass: no tools, read-only (it is never run as more). */
void agent_comp_unreadable(struct agent_comp *out);
/* Adds the composition's fields of descriptor version 3 to data (borrowed). */
void agent_comp_describe(const struct agent_comp *c, json_t *data);

#endif
