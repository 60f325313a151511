/*
 * Agent types (docs/contract.md §23.1): the definitions a root's workspace sees, read from Markdown
 * files with a front matter (base/frontmatter.h) in four directories, highest precedence first,
 * then the built-in types. Every file is untrusted: each is checked here, once, and a file that
 * does not pass is skipped with one warning naming it and the reason; nothing it says reaches a
 * child unchecked. The set is read when a root starts and read again when a directory changed.
 */
#ifndef AGENT_AGENT_TYPES_H
#define AGENT_AGENT_TYPES_H

#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "base/map.h"

#define AGENT_TYPE_SOURCES 4
#define AGENT_TYPE_BODY_MAX ((size_t)64 * 1024)	/* a type's instructions */
#define AGENT_TYPE_FILE_MAX ((size_t)128 * 1024)	/* a larger file is skipped unread */
#define AGENT_TYPE_DESCRIPTION_MAX 1024

/* The built-in types' descriptions (docs/prompts.md). */
#define AGENT_TYPE_GENERAL_DESCRIPTION                                                              \
	"General-purpose agent for multi-step tasks: research, edits and commands. It has the same tools as you."
#define AGENT_TYPE_EXPLORE_DESCRIPTION                                                              \
	"Read-only agent for finding and understanding code: it searches, reads and reports what it found with " \
	"paths and line numbers. It cannot edit files, run commands or start agents."

struct agent_type {
	char *name;		/* owned: [a-z0-9][a-z0-9_-]{0,63} */
	char *description;	/* owned: one line */
	char *path;		/* owned: the file, or NULL: built in */
	char *instructions;	/* owned: the body, "" for none */
	json_t *tools;		/* owned array of tool names (a trailing * matches a prefix), or NULL: every tool */
	json_t *denied;		/* owned array of the same forms, or NULL */
	char *model;		/* owned model id, or NULL: inherit */
	int ceiling;		/* enum permit_mode, or -1: none */
	int max_steps;		/* 0: --max-steps */
	int worktree;		/* isolation: worktree */
};

struct agent_types_seen;		/* a file as its set was read from it (agent_types.c) */

struct agent_types_dir {
	char *path;		/* owned */
	int exists;
	struct timespec mtime;
	struct agent_types_seen *seen;	/* owned: the files as they were read (with a memo), or NULL */
	size_t nseen;
};

struct agent_types {
	struct agent_type *v;	/* owned, in name order */
	size_t n, cap;
	struct map names;	/* name -> its index in v, plus one */
	json_t *skipped;	/* owned [{path, reason}], in the order met */
	struct agent_types_dir dirs[AGENT_TYPE_SOURCES];
	int unpinned;		/* a file's stat cannot tell whether it changed (new, not regular) */
	int refs;		/* a shared set's holders (agent_types_shared) */
};

/*
 * What the files of each source directory said when they were last read, used again while a file's
 * stat (device, inode, size, modification and change times) is the same: a session start then
 * stats each file instead of opening, reading and parsing it, and a skipped file is warned about
 * once, when it is read. Owned by whoever keeps it across loads (the runtime).
 */
struct agent_types_memo;
/* racy_s: a file modified less than this many seconds before it is read is not kept (2 in use). */
#define AGENT_TYPES_RACY_S 2
struct agent_types_memo *agent_types_memo_new(int racy_s);
void agent_types_memo_free(struct agent_types_memo *m);

/*
 * Reads the types a root in workspace sees: <workspace>/.acp-agent/agents, <workspace>/.claude/agents,
 * <config_home>/acp-agent/agents, <home>/.claude/agents (config_home NULL or "": <home>/.config;
 * home NULL: those two are left out), then the built-ins. known: the tool names this product has
 * (NULL-terminated, borrowed; mcp__ names are taken as they are); a name outside them is ignored
 * with a warning. Warnings go to the log (stderr). memo: see above, or NULL (every file is read).
 * t is overwritten: free it first.
 */
void agent_types_load(struct agent_types *t, const char *workspace, const char *home, const char *config_home,
    const char *const *known, struct agent_types_memo *memo);
/*
 * The types of workspace as a set shared by everyone who asks with the same directories: the memo
 * keeps the last set read for them and hands it out again while every source directory and every
 * file in them has the stat it was read with (a stat each; nothing is read or copied); else the set
 * is read anew (the memo's files reused) and replaces it. The caller holds one reference: give it
 * back with agent_types_unref.
 */
struct agent_types *agent_types_shared(struct agent_types_memo *memo, const char *workspace, const char *home,
    const char *config_home, const char *const *known);
void agent_types_unref(struct agent_types *t);
/* Whether a source directory appeared, vanished or changed since the load (a stat each). */
int agent_types_stale(const struct agent_types *t);
const struct agent_type *agent_types_get(const struct agent_types *t, const char *name);
void agent_types_free(struct agent_types *t);

#endif
