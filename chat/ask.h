/*
 * A permission ask's keys (docs/contract.md §21): `a` allow, `A` always, `r` reject, `R` reject always,
 * matched to the request's options by their kind (allow_once, allow_always, reject_once,
 * reject_always); a key is offered only when its option exists. Pure.
 */
#ifndef CHAT_ASK_H
#define CHAT_ASK_H

#include <jansson.h>

#include "base/buf.h"

/* The option (borrowed from options) the key answers with, or NULL when it is not offered.
 * options: borrowed, the request's options array. */
const json_t *chat_ask_option(const json_t *options, int key);
/* Appends the offered keys with the options' names: `[a] Allow  [A] Always allow "git status …"`. */
void chat_ask_menu(const json_t *options, struct buf *out);
/* Appends the offered keys alone: "a, A, r or R". */
void chat_ask_keys(const json_t *options, struct buf *out);
/* The key a typed line answers with (its only non-blank character), or 0. line: borrowed. */
int chat_ask_line_key(const char *line);

#endif
