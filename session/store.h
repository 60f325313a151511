/*
 * Live sessions: a header and the file behind it, with per event its type code and the offset
 * of its line (the latest events also as trees; the others are read back on demand). Every
 * append goes through sess_append, which numbers the event, writes it, notes it, and tells the
 * observers. The store owns live sessions by id. docs/decisions.md: "Sessions off the heap".
 */
#ifndef SESSION_STORE_H
#define SESSION_STORE_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/map.h"
#include "session/event.h"
#include "session/log.h"
#include "session/repair.h"

struct sess;

/* ev: borrowed for the call. */
typedef void sess_observer_fn(void *arg, struct sess *s, const json_t *ev);

struct sess_observer {
	sess_observer_fn *fn;
	void *arg;
};

/* A live session: opaque outside session/ (its struct is session/store_def.h's, and says how it
 * keeps its events); read it with the accessors below. */
struct sess;


struct sess_store {
	struct sess_env *env;	/* borrowed */
	struct map live;	/* id -> struct sess * */
	struct sess **order;	/* live sessions in creation order (for deterministic sync) */
	size_t norder, corder;
	struct buf line;	/* scratch: the event being appended is encoded here */
};

void sess_store_init(struct sess_store *st, struct sess_env *env);
void sess_store_free(struct sess_store *st);	/* frees every live session */
struct sess *sess_store_get(struct sess_store *st, const char *id);
/* A new live session (unpublished until its first append). */
struct sess *sess_store_create(struct sess_store *st, const struct sess_header_info *info);
/* Loads a stored session: lease, read, truncate the torn tail, append closers. A file that
 * cannot be written loads read-only (its appends fail with session_log_io naming it). */
struct sess *sess_store_load(struct sess_store *st, const char *id, struct err *e);
/*
 * The same load in three steps, so that the reading can run off the loop thread (docs/decisions.md, "Loading at scan speed").
 * start (on the loop) checks the id and takes the lease: NULL with e (invalid_params,
 * unknown_session, session_busy, session_log_io). read reads, parses and checks the file and
 * touches nothing but ld: a worker thread may run it, and cancel (may be NULL) stops it between
 * chunks. finish (on the loop) repairs the tail durably and makes the session live; it frees ld
 * and returns the session, or NULL with e (the lease is then released). free drops a load that
 * will not finish (the lease is released). A load of the same id while one is between its steps
 * is session_busy (the lease is per open file): the caller makes such a load wait.
 */
struct sess_loading;
struct sess_cursor;
struct sess_loading *sess_store_load_start(struct sess_store *st, const char *id, struct err *e);
off_t sess_loading_size(const struct sess_loading *ld);	/* the file's size at start */
/* Reads and checks the file (any thread; cancel may be NULL): offsets and type codes, the open
 * turn's events only. */
void sess_loading_read(struct sess_loading *ld, const atomic_int *cancel);
/* After a read: whether it was good. */
int sess_loading_ok(const struct sess_loading *ld);
/* After a good read, on the reading thread: the events, closers included (0 after a bad read),
 * their type codes, one of them read back (new ref, or NULL), and a cursor over [from, to). */
size_t sess_loading_nevents(const struct sess_loading *ld);
int sess_loading_type_at(const struct sess_loading *ld, size_t i);
json_t *sess_loading_event(const struct sess_loading *ld, size_t i);
struct sess_cursor *sess_loading_cursor(const struct sess_loading *ld, size_t from, size_t to);
struct sess *sess_store_load_finish(struct sess_store *st, struct sess_loading *ld, struct err *e);
void sess_loading_free(struct sess_loading *ld);
/* Syncs every session with a due checkpoint; returns the number that failed. */
int sess_store_sync_due(struct sess_store *st);
/* Syncs, closes and frees a live session. */
void sess_store_release(struct sess_store *st, struct sess *s);

void sess_observe(struct sess *s, sess_observer_fn *fn, void *arg);
void sess_unobserve(struct sess *s, sess_observer_fn *fn, void *arg);
/* Appends one event; steals data. Returns the event (borrowed) or NULL with e. */
const json_t *sess_append(struct sess *s, const char *type, json_t *data, struct err *e);
void sess_checkpoint(struct sess *s);
int sess_failed(const struct sess *s);
/* Why s writes nothing (a cause the client can read), or NULL while it writes. */
const char *sess_failure(const struct sess *s);
/* After a failed write that was cut back: re-verifies the file, closes the open tail as load
 * would, and writes again. 0 (also when s had not failed), or -1 with session_log_io. */
int sess_recover(struct sess *s, struct err *e);
int64_t sess_last_time(const struct sess *s);
/* Event i < s->nev, a new ref: from the window, else read back from the file; NULL (logged) when the
 * file no longer holds it as written. */
json_t *sess_event_get(struct sess *s, size_t i);
/* The events whose type is in types (a NULL-terminated list of known types), in order, found by
 * their codes and read back one by one: for walks that want a few kinds of event. New array. */
json_t *sess_collect(struct sess *s, const char *const *types);
/* Events [from, to) read in order, independent of s once made (it reads through its own
 * descriptor): a replay of a long log streams from the file. */
struct sess_cursor;
struct sess_cursor *sess_cursor_new(struct sess *s, size_t from, size_t to);
/* For session/ only: events [from, to), [from, fto) read from fd (duplicated) at offs, then
 * those of mem (stolen: the events [fto, to)). */
struct sess_cursor *sess_cursor_open(const char *id, int fd, const off_t *offs, size_t from, size_t fto, size_t to,
    json_t *mem);
/* The same, reading only the events whose type is in types (NULL-terminated; the closers past
 * the file are all read): the other lines are passed over, not parsed. */
struct sess_cursor *sess_cursor_new_only(struct sess *s, size_t from, size_t to, const char *const *types);
json_t *sess_cursor_next(struct sess_cursor *c);	/* new ref, or NULL at the end (or on error) */
/*
 * The same, line by line for a reader that renders events from their text (a replay): when
 * raw_ok and the event is one of the file's whose line starts as the writer writes it
 * ({"seq":N, with N the event's), returns the line (valid until the next call on c; *len its
 * length without the newline) and *ev NULL; else NULL with the event in *ev (new ref), NULL at
 * the end. The line was checked when the session was loaded; one its reader cannot take goes
 * through sess_cursor_tree. With raw_ok an event read as a tree from the file is checked in full
 * again (it was read twice: what is there may have changed behind the lease).
 */
const char *sess_cursor_next_line(struct sess_cursor *c, size_t *len, json_t **ev, int raw_ok);
/* The tree of the line sess_cursor_next_line just returned (new ref), checked in full as a load
 * checks it; NULL when it no longer passes (logged, and the cursor ends, as it ends on a line
 * that no longer parses). */
json_t *sess_cursor_tree(struct sess_cursor *c, const char *line, size_t len);
void sess_cursor_free(struct sess_cursor *c);
/* Every event of s read back, in a new array: for tests and checks, never the serving path. */
json_t *sess_read_all(struct sess *s);
/* The type code (sess_event_type_code) of event i < s->nev: a walk that looks
 * for a few types reads these bytes, not every event's tree (a loaded log's tree is hundreds of MB:
 * touching each event costs a cache miss or more). */
int sess_type_at(const struct sess *s, size_t i);
/* What other folders read of a session. */
const char *sess_id(const struct sess *s);
const json_t *sess_header(const struct sess *s);	/* borrowed, immutable */
size_t sess_nev(const struct sess *s);		/* its events: seq 0 .. nev - 1 */
/* The bytes of its file that hold its events so far (0 before its first append is published): a
 * reader that stops there sees exactly the events appended until now. */
off_t sess_length(const struct sess *s);
/* Its message/view events (docs/contract.md §22.2): the next view's id is msg-<this + 1>. */
size_t sess_views(const struct sess *s);
/* Syncs its log now (a notice must be on disk before it is sent): 0, or -1 with e. */
int sess_sync(struct sess *s, struct err *e);
const char *sess_header_str(const struct sess *s, const char *key);	/* borrowed or NULL */

#endif
