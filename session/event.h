/* Session records (docs/contract.md §5.2): the immutable header and the event envelope. */
#ifndef SESSION_EVENT_H
#define SESSION_EVENT_H

#include <stdint.h>

#include <jansson.h>

#include "base/err.h"
#include "session/evtype.h"

#define SESS_FORMAT_VERSION 1

/* Header fields for a new session; parent and origin may be NULL (a root). */
struct sess_header_info {
	const char *id;
	int64_t created_at;
	const char *cwd;
	int depth;
	const char *parent;
	const char *origin;
};

json_t *sess_header_new(const struct sess_header_info *info);	/* returns new ref */
/* Checks a parsed header; codes session_unsupported (newer version) or session_corrupt. */
int sess_header_check(const json_t *hdr, struct err *e);	/* hdr: borrowed */

/* Returns a new envelope {seq,time,type,data}; steals data (even on failure). */
json_t *sess_event_new(int64_t seq, int64_t time, const char *type, json_t *data);
int sess_event_type_known(const char *type);
/* The same for the bytes t[0..n) (not NUL-terminated). */
int sess_event_type_knownn(const char *t, size_t n);
/* A known type's code (session/evtype.h: 1..255), 0 for any other: what struct sess keeps per event. */
int sess_event_type_code(const char *type);
/* Checks one envelope with the expected seq, and a known type's payload (session/payload.h).
 * 1 = valid, 0 = skip (ignorable unknown), -1 = corrupt. */
int sess_event_check(const json_t *ev, int64_t seq, struct err *e);	/* ev: borrowed */

/* Parses one JSON line, repairing invalid UTF-8 first; returns new ref or NULL. */
json_t *sess_json_parse_line(const char *line, size_t len);

#endif
