/*
 * Project instructions (docs/contract.md §25): the user's AGENTS.md, then each directory's
 * AGENTS.md (or CLAUDE.md) from the repository root down to the workspace, read when an agent
 * starts and put at the end of its system prompt; and the files nested below the workspace, given
 * once each with the first read, write or edit under them. The files are the user's: each is read
 * at most as far as the budget goes (a huge file is never read whole), must be UTF-8, and is cut
 * at a character.
 */
#ifndef AGENT_INSTRUCTIONS_H
#define AGENT_INSTRUCTIONS_H

#include <stddef.h>

#include <jansson.h>

#define AGENT_INSTRUCTIONS_MAX ((size_t)32 * 1024)	/* the prompt's files together; one call's nested ones */
#define AGENT_INSTRUCTIONS_CUT "[… instructions cut at 32 KiB]"

struct agent_instructions {
	char *block;		/* owned: "\n\n# Instructions from <path>\n<text>" per file, or NULL */
	json_t *files;		/* owned [{path, bytes, sha256}]: the set given so far, prompt files first */
	json_t *dirs;		/* owned {dir: true}: directories below the workspace already looked at */
	char *workspace;	/* owned */
	char *cut;		/* owned: the prompt's file cut at the budget (its real path), or NULL */
};

/* Reads the prompt's files for an agent in workspace; home, config_home: the user's (NULL: no
 * user file; config_home NULL or "": <home>/.config). Warnings go to the log. */
void agent_instructions_read(struct agent_instructions *in, const char *workspace, const char *home,
    const char *config_home);
/*
 * A read, write or edit of path (absolute, or relative to the workspace) succeeded: the blocks of
 * the instruction files in the directories between the workspace and path's directory that were
 * not given yet, outer first (owned; NULL when none); in->files grows by them.
 */
char *agent_instructions_nested(struct agent_instructions *in, const char *path);
/* After a load: the nested files logged (logged: the last context/instructions files, borrowed)
 * were given in the conversation already: their directories count as looked at, and they stay in
 * the set, so they are neither given nor logged again. */
void agent_instructions_seed(struct agent_instructions *in, const json_t *logged);
void agent_instructions_free(struct agent_instructions *in);

#endif
