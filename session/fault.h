/*
 * Fault injection for tests (docs/contract.md §15). Parsed once from ACP_AGENT_FAULTS;
 * without the variable every flag is off and none of the fault code runs.
 */
#ifndef SESSION_FAULT_H
#define SESSION_FAULT_H

#include "base/err.h"

struct sess_faults {
	int short_write;		/* armed: the first append writes half, then EIO */
	int sync_fail;			/* armed: the next sync fails */
	int dir_sync_fail;		/* armed: the next directory sync (publication) fails */
	int exit_after_settled;
	int exit_after_worktree;	/* _exit(3) once a child's worktree is made, before its log is */
	int exit_in_delete;		/* _exit(3) once a deletion's root log is gone, before the rest */
	char exit_type[64];		/* exit-after-event:<type>:<n> */
	long exit_n;
	long exit_seen;
};

/* spec may be NULL (no faults). */
int sess_faults_parse(struct sess_faults *f, const char *spec, struct err *e);
/* Counts an event of type written; _exit(3)s when the configured one is reached. */
void sess_faults_event_written(struct sess_faults *f, const char *type);

#endif
