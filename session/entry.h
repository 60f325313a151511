/*
 * One session of the state directory as the corpus index knows it (docs/contract.md §5.6): the facts read
 * from its header, its first lines (title, subagent identity) and its last line (activity),
 * never the whole log. Reading one is pure (no shared state), so a worker thread may do it.
 */
#ifndef SESSION_ENTRY_H
#define SESSION_ENTRY_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "session/id.h"

struct sess_kin;

enum sess_entry_state {
	SESS_ENTRY_OK,
	SESS_ENTRY_CORRUPT,		/* header unreadable */
	SESS_ENTRY_UNSUPPORTED,		/* newer format version */
	SESS_ENTRY_UNAVAILABLE,		/* cannot be read */
};

/*
 * One indexed session. Strings are owned; NULL when absent. listed and listed_at belong to the
 * corpus's sorted root list (session/order.h): listed_at is the updated_at it was filed under;
 * kin to its children index (session/kin.h): how it is filed under its parent; gen is
 * the corpus's count when its facts last changed (never the same for two different facts of
 * one entry, so a listing can tell an entry is as it was without comparing its strings).
 */
struct sess_entry {
	char id[SESS_ID_LEN + 1];
	enum sess_entry_state state;
	int live;
	int gone;		/* the file vanished (or was never published) */
	int dirty;		/* inotify saw it change: re-check before trusting */
	int listed;		/* in the corpus's root list */
	int64_t listed_at;
	struct {		/* the children index's (session/kin.h) */
		struct sess_kin *group;	/* the parent's group it is filed in, or NULL */
		int64_t created_at;	/* created_at when filed (the group's order) */
		int unavailable;	/* state was SESS_ENTRY_UNAVAILABLE when filed */
	} kin;
	uint64_t gen;
	int64_t created_at;
	int64_t updated_at;
	int depth;
	char *cwd, *parent, *origin, *title, *label, *mode;
	/* a child's type (docs/contract.md §23.3): NULL for a root or a version 2 descriptor (general) */
	char *agent_type, *type_description, *model;
	/* an isolated child's branch (docs/contract.md §24): NULL when not isolated, "" once deleted */
	char *branch;
	off_t size;		/* -1: re-read before trusting */
	struct timespec mtime;
};

/* Frees en's strings (not en). */
void sess_entry_clear(struct sess_entry *en);
/* Fills en's header facts from h (borrowed); returns 0, or -1 when unusable (state set). */
int sess_entry_from_header(struct sess_entry *en, const json_t *h);
/* Title and identity facts from one event (borrowed). */
void sess_entry_note_event(struct sess_entry *en, const json_t *ev);
/* Reads <dir>/<en->id>.jsonl's head and tail into en (cleared first); state says how it went. */
void sess_entry_read(const char *dir, struct sess_entry *en);
/* The kind of how the last turn of the session file at path ended ("completed", "aborted", ...),
 * from its last 64 KiB (a bounded read): 1 with it in kind, or 0 when no turn/end is there. */
int sess_last_turn_end(const char *path, char *kind, size_t size);
/* pread until len bytes, EOF or an error; returns the count or -1. */
ssize_t sess_pread_all(int fd, char *buf, size_t len, off_t off);
/* qsort order of struct sess_entry * by createdAt, then id (the listing order of docs/contract.md §6.4). */
int sess_entry_order(const void *pa, const void *pb);
/* Title rule of session/list: first line of text, at most 80 characters; returns owned. */
char *sess_title_from_text(const char *text);

#endif
