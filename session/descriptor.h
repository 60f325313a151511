/*
 * A child's descriptor (docs/contract.md §6.2, §23.3): the first own event of a child's log, which
 * says what the child is: its mode and label, and from version 3 the composition it was started
 * with. Read from disk, so untrusted: checked here, once, whole; a descriptor that does not pass
 * is no identity (the listing shows the child corrupt, a cold resume refuses it).
 */
#ifndef SESSION_DESCRIPTOR_H
#define SESSION_DESCRIPTOR_H

#include <jansson.h>

#define SESS_DESCRIPTOR_VERSION 3
#define SESS_DESCRIPTOR_TOOL_MAX 128		/* a tool name or prefix pattern, in bytes */
#define SESS_DESCRIPTOR_MODEL_MAX 256
#define SESS_DESCRIPTOR_TEXT_MAX ((size_t)64 * 1024)	/* the type's instructions */
#define SESS_DESCRIPTOR_DESCRIPTION_MAX 4096

/* Every pointer borrows from the checked data. Version 2 reads as the general type (agent_type
 * NULL) with every tool, the parent's model, no ceiling and --max-steps. */
struct sess_descriptor {
	int version;			/* 2 or 3 */
	const char *mode;		/* "one-shot" or "continuable" */
	const char *label;		/* NULL: none (a continuable child always has one) */
	const char *agent_type;		/* [a-z0-9][a-z0-9_-]{0,63}, or NULL: version 2 */
	const char *type_description;	/* one line, or NULL */
	const char *model;		/* NULL: the parent's model when it runs */
	const json_t *tools;		/* strings (names, or prefixes ending in *), or NULL: every tool */
	const json_t *denied;		/* strings of the same forms removed after tools, or NULL */
	const char *ceiling;		/* read-only, default, accept-edits, full-access; NULL: none */
	int max_steps;			/* 0: --max-steps */
	const char *instructions;	/* NULL: none */
	/* isolation (docs/contract.md §24): all NULL, or all set */
	const char *iso_repo;		/* the repository's top level: an absolute path */
	const char *iso_branch;		/* acp-agent/... */
	const char *iso_base;		/* the full commit id the branch starts from */
	const char *iso_subdir;		/* the workspace inside the repository, "" at its top */
};

/* Checks data (borrowed) and fills d. 0, or -1 with why (a static string): not an identity. */
int sess_descriptor_read(const json_t *data, struct sess_descriptor *d, const char **why);
/* Whether s is a tool name or a prefix pattern a descriptor may hold. */
int sess_descriptor_tool_ok(const char *s);

#endif
