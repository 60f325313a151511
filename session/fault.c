/* Fault injection (tests only). */
#include "session/fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/xmalloc.h"

static int
sess_faults_one(struct sess_faults *f, const char *name, struct err *e)
{
	if (strcmp(name, "log-short-write") == 0) {
		f->short_write = 1;
	} else if (strcmp(name, "log-sync-fail") == 0) {
		f->sync_fail = 1;
	} else if (strcmp(name, "dir-sync-fail") == 0) {
		f->dir_sync_fail = 1;
	} else if (strcmp(name, "exit-after-settled") == 0) {
		f->exit_after_settled = 1;
	} else if (strcmp(name, "exit-after-worktree") == 0) {
		f->exit_after_worktree = 1;
	} else if (strcmp(name, "exit-in-delete") == 0) {
		f->exit_in_delete = 1;
	} else if (strncmp(name, "exit-after-event:", 17) == 0) {
		const char *type = name + 17, *colon = strrchr(type, ':');
		char *end;
		if (colon == NULL || colon == type || (size_t)(colon - type) >= sizeof(f->exit_type))
			return err_set(e, ERR_USAGE, "fault \"%s\": expected exit-after-event:<type>:<n>", name);
		f->exit_n = strtol(colon + 1, &end, 10);
		if (*end != '\0' || f->exit_n < 1)
			return err_set(e, ERR_USAGE, "fault \"%s\": <n> must be a positive integer", name);
		memcpy(f->exit_type, type, (size_t)(colon - type));
		f->exit_type[colon - type] = '\0';
	} else {
		return err_set(e, ERR_USAGE, "unknown fault \"%s\" in ACP_AGENT_FAULTS", name);
	}
	return 0;
}

int
sess_faults_parse(struct sess_faults *f, const char *spec, struct err *e)
{
	char *copy, *save = NULL;
	int rc = 0;

	memset(f, 0, sizeof(*f));
	if (spec == NULL || *spec == '\0')
		return 0;
	copy = xstrdup(spec);
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if ((rc = sess_faults_one(f, tok, e)) < 0)
			break;
	free(copy);
	return rc;
}

void
sess_faults_event_written(struct sess_faults *f, const char *type)
{
	if (f->exit_n == 0 || strcmp(type, f->exit_type) != 0)
		return;
	if (++f->exit_seen == f->exit_n) {
		log_warn("fault: exit-after-event:%s:%ld reached", type, f->exit_n);
		_exit(3);
	}
}
