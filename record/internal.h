/* What the recorder's files share: the state, the writer and the templating. */
#ifndef RECORD_INTERNAL_H
#define RECORD_INTERNAL_H

#include "record/record.h"

struct record {
	char *dir;		/* owned: the scenario directory */
	char *state;		/* owned: the state directory ({{state}}) */
	char *secret;		/* owned: the API key, or NULL */
	char *cwd;		/* owned: the first session/new's cwd ({{cwd}}), NULL until then */
	json_t *sessions;	/* ids session/new returned, in order ({{session:N}}) */
	/* recording.json */
	json_t *recording;	/* {"version": 1, "model"?, "scripts": [...]} */
	json_t *children;	/* child id -> {"parent": id, "label": label}, from their replies */
	/* scenario.json */
	json_t *args, *env;
	json_t *steps;		/* [{"pre": [steps before it], "step": step}] */
	json_t *waiting;	/* the client's requests not answered yet: [{"id", "method", "step"}] */
	json_t *loose;		/* those of them the client did not wait for: [{"id"}] */
	json_t *ready;		/* waitFor steps that go before the next client step */
	json_t *asks;		/* the agent's requests to the client not answered yet */
	int eof;
	/* workspace/ */
	json_t *touched;	/* abs path -> true: first touches seen */
	size_t ws_bytes;
	int warned;		/* a write failed (said once) */
};

/* Writes name (under dir, subdirectories made) atomically: a temp file renamed over it. */
int record_write(struct record *r, const char *name, const char *data, size_t len, unsigned mode);
/* Templates a string for the scenario: the API key blanked, cwd, state and session ids as
 * {{cwd}}, {{state}}, {{session:N}}. Returns owned. */
char *record_templ_str(const struct record *r, const char *s, size_t len, size_t *out_len);
/* The same over every string of v (keys untouched); new reference. */
json_t *record_templ(const struct record *r, const json_t *v);
/* 1 when s holds a UUID (8-4-4-4-12 hex digits). */
int record_has_uuid(const char *s);
/* Rewrite recording.json (replies.c) and scenario.json (script.c): 0 or -1 (said once). */
int record_write_recording(struct record *r);
int record_write_scenario(struct record *r);

#endif
