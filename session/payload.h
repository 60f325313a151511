/*
 * The payload of every event type (docs/contract.md §5.2), as one table: which fields each
 * type's data must hold and of what JSON type. A log is checked against it once,
 * when it is read, so nothing downstream ever meets a payload of the wrong shape.
 */
#ifndef SESSION_PAYLOAD_H
#define SESSION_PAYLOAD_H

#include <stddef.h>

#include <jansson.h>

#include "base/err.h"

/* 1 when t[0..n) names a known event type. */
int sess_payload_known(const char *t, size_t n);
/* Checks data (borrowed) for a known type; 0, or -1 with session_corrupt naming the field. */
int sess_payload_check(const char *type, const json_t *data, long long seq, struct err *e);

#endif
