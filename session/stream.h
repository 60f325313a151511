/*
 * A session file's events of some types, read forward in bounded pieces (session/ and its
 * callers: the load replay's child frames, docs/contract.md §22.4). Every line is checked in
 * full as a load checks it (the one walk, session/walk.h); the events of the wanted types are
 * given one at a time as their lines. Memory and each read stay bounded whatever the file's
 * size: a piece is at most SESS_STREAM_RANGE bytes (more only for one longer line) and at most
 * SESS_STREAM_EVENTS kept lines. What a file holds past a line that does not pass, or past a
 * failed read, is not given (the error says why).
 */
#ifndef SESSION_STREAM_H
#define SESSION_STREAM_H

#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "base/err.h"

#define SESS_STREAM_RANGE ((long long)1 << 20)
#define SESS_STREAM_EVENTS 64

struct sess_stream;

/* Opens path (never through a symlink; a regular file) for the events whose types are in types
 * (NULL-terminated, borrowed: must outlive the stream) whose lines start before limit (-1: to
 * the file's end; a session still written to gives what it held then). NULL with e. */
struct sess_stream *sess_stream_open(const char *path, const char *const *types, off_t limit, struct err *e);
/* The next wanted event's line (valid until the next call; *len its length), or NULL at the end
 * or on an error (sess_stream_error says which). */
const char *sess_stream_next(struct sess_stream *st, size_t *len);
/* The tree of the line sess_stream_next just gave (new ref; the line was checked when read). */
json_t *sess_stream_tree(struct sess_stream *st, const char *line, size_t len);
/* Lowers where the stream ends to limit (a session that goes on being written from now). */
void sess_stream_limit(struct sess_stream *st, off_t limit);
/* NULL, or why the stream ended early. */
const char *sess_stream_error(const struct sess_stream *st);
void sess_stream_close(struct sess_stream *st);

#endif
