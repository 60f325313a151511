/*
 * The workspace tools' shared state (docs/contract.md §16): one per root session tree, kept by the root
 * (children use their root's): the roots (the realpath of the root's cwd, and its spill
 * directory <state-dir>/spill/<root id>/ read-only), the observation record and the background
 * jobs. tools/ws_*.c are the eight tools; workspace.c the state and the extension.
 */
#ifndef TOOLS_WORKSPACE_H
#define TOOLS_WORKSPACE_H

#include "agent/agent.h"
#include "base/map.h"
#include "workspace/jobs.h"
#include "workspace/obs.h"
#include "workspace/path.h"

/* What the editor last showed of a file (fs/read_text_file): its buffers may differ from the disk. */
struct ws_text {
	char *text;			/* owned; NULL: the editor has no such file */
	size_t len;
};

struct ws_state {
	struct ws_roots roots;
	struct ws_obs obs;
	struct map editor;		/* abs path -> struct ws_text (owned) */
	struct ws_jobs *jobs;		/* made on first use; killed when the root is released */
	char *spill;			/* owned: the spill directory (made on first use) */
	struct agent *root;		/* the agent that holds the state */
};

/* The state of a's tree, made on first use; NULL with e (FS_IO) when the cwd is gone. */
struct ws_state *ws_state(struct agent *a, struct err *e);
/* The state of a's tree with path resolved into *where (the caller frees it); NULL with e. */
struct ws_state *ws_state_path(struct agent *a, const char *path, int for_write, struct ws_path *where,
    struct err *e);
/* Every path a tool resolves passes here before the tool touches it (rt->touch, docs/contract.md §21). */
void ws_state_touch(struct agent *a, const struct ws_state *st, const struct ws_path *where);
/* Creates the spill directory (0700); 0, or -1 with e (PROC_SPILL_IO). */
int ws_state_spill(struct ws_state *st, struct err *e);
/* The write flags of --sync (always: WS_WRITE_SYNC). */
int ws_state_sync_flags(const struct agent *a);
/* The editor's session id for a's requests (its root's), or NULL when no root is live. */
const char *ws_state_sid(struct agent *a);

#endif
