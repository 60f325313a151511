/*
 * The recorder (docs/contract.md §21, §20.1): while the agent serves, it writes a scenario directory (§10.1)
 * that replays the session keyless. recording.json gets every model reply (record_reply, fed by
 * model/'s tap), scenario.json every client message as a step and the client's answers to the
 * agent's requests as answer steps (record_client_line, record_agent_msg, record_eof, fed by
 * acp/), workspace/ the content of each file the tools touched, as it was before the first touch
 * (record_touch, fed by tools/). Each file is rewritten whole and renamed into place after every
 * change, so a crash or a kill leaves what happened so far. Nothing secret is written: the API
 * key is blanked wherever it appears, MCP header and env values are redacted.
 */
#ifndef RECORD_RECORD_H
#define RECORD_RECORD_H

#include <stddef.h>

#include <jansson.h>

#include "base/err.h"

struct record;

#define RECORD_WORKSPACE_MAX (8u << 20)	/* workspace/ holds at most this many bytes */
#define RECORD_REDACTED "<redacted>"

/* What the recorder is told at start; strings borrowed for the call. */
struct record_config {
	const char *dir;		/* must not exist or be empty; created 0755 */
	const char *state_dir;		/* becomes {{state}} */
	const char *secret;		/* the API key, or NULL: never written */
	const char *model;		/* the model the session runs on (recording.json's "model") */
	json_t *args;			/* borrowed: scenario.json's "args" */
	json_t *env;			/* borrowed: scenario.json's "env" */
};

/* Whether dir may be recorded into: absent or an empty directory. 0, or -1 with e (ERR_USAGE,
 * "<dir> is not empty (...)", "<dir> exists and is not a directory"). */
int record_check_dir(const char *dir, struct err *e);
/* Creates the directory and writes the empty scenario; NULL with e (ERR_USAGE) when it cannot. */
struct record *record_open(const struct record_config *cfg, struct err *e);
void record_free(struct record *r);

/* A line the client sent (raw bytes, as read). */
void record_client_line(struct record *r, const char *line, size_t len);
/* A message to the client (borrowed): responses, updates, the agent's requests. */
void record_agent_msg(struct record *r, const json_t *msg);
/* stdin ended; idle: no turn was running (the replay waits for idle before its EOF). */
void record_eof(struct record *r, int idle);

/* One model reply, as model/'s tap hands it over (acp/ adapts one to the other). */
struct record_reply {
	const char *key;		/* "root" or "label:<label>" */
	size_t ordinal, position;	/* the script among key's, the reply's place in it */
	int summary;			/* a compaction's summary: goes under "compactions" */
	const char *agent_id, *parent_id;	/* the agent that asked; parent_id NULL for a root */
	const json_t *reply;		/* borrowed: docs/contract.md §7.2's form */
};

/* Puts a reply in recording.json (its ids and paths templated for the replay). */
void record_reply(struct record *r, const struct record_reply *rr);
/* A workspace tool is about to touch abs (under root); the first touch copies a regular file. */
void record_touch(void *r, const char *root, const char *abs);

#endif
