/*
 * The unified-style diff of a tool call's `diff` content (docs/contract.md §16.5: whole texts, oldText null
 * for a new file) as a person reads it in the chat: hunks with 3 lines of context. Pure: text in,
 * text out; the renderer colours it.
 */
#ifndef CHAT_DIFF_H
#define CHAT_DIFF_H

#include "base/buf.h"

#define CHAT_DIFF_CONTEXT ((size_t)3)

/*
 * Appends to out the hunks that turn old_text into new_text: "@@ -a,b +c,d @@" headers, then lines
 * that start with ' ', '-' or '+', each ended by '\n'. Nothing when the texts are equal.
 * old_text: borrowed, NULL for a file that did not exist; new_text: borrowed.
 */
void chat_diff(const char *old_text, const char *new_text, struct buf *out);

#endif
