/*
 * The chat's renderer (docs/contract.md §21): what the agent sends, as a person reads it. Pure: JSON in, text
 * appended to a buffer; the caller writes it. Colour and dim only when made for a terminal; else
 * plain lines. It keeps what it needs across updates: the chunk run being streamed and, per tool
 * call, its title, status, the child progress shown and whether its diff was shown.
 */
#ifndef CHAT_RENDER_H
#define CHAT_RENDER_H

#include <jansson.h>

#include "base/buf.h"
#include "base/map.h"

#define CHAT_SHOW_LINES 8	/* lines of a tool's text result shown */

enum chat_run { CHAT_RUN_NONE, CHAT_RUN_TEXT, CHAT_RUN_THOUGHT };

struct chat_render {
	int tty;		/* colour and dim */
	int col0;		/* what was rendered ends a line (or nothing was) */
	enum chat_run run;	/* the chunk run being streamed */
	char *msg_id;		/* owned; the messageId of the last chunk, or NULL */
	int at_prompt;		/* the input prompt is the last thing shown: what is typed now
				 * shows right after it */
	struct map calls;	/* toolCallId -> struct chat_call (owned) */
};

void chat_render_init(struct chat_render *r, int tty);
void chat_render_free(struct chat_render *r);
/* One session/update's `update` object. update: borrowed. */
void chat_render_update(struct chat_render *r, const json_t *update, struct buf *out);
/* A session/request_permission: the title, the command or diff, the keys; whose: the label of
 * the child asking (r its renderer), or NULL for the root. params, whose: borrowed. */
void chat_render_ask(struct chat_render *r, const json_t *params, const char *whose, struct buf *out);
/* The option chosen for an ask (or "cancelled"). name: borrowed. */
void chat_render_answer(struct chat_render *r, const char *name, struct buf *out);
/* A session/prompt's answer. stop_reason: borrowed. */
void chat_render_turn_end(struct chat_render *r, const char *stop_reason, struct buf *out);
/* A JSON-RPC error answer: its message and data.details. error: borrowed. */
void chat_render_error(struct chat_render *r, const json_t *error, struct buf *out);
/* A line of the client's own (fmt's text ends with '\n'), dimmed on a terminal. */
void chat_render_note(struct chat_render *r, struct buf *out, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A line of another stream's (a child's): prefix dimmed, then text[0..len) as it was rendered,
 * on a line of its own. */
void chat_render_aside(struct chat_render *r, struct buf *out, const char *prefix, const char *text, size_t len);
/* Appends text with its control bytes shown, never acted on: C0 and DEL as ^X (ESC is ^[), a C1
 * control as ^[ and its letter (CSI: ^[[); newlines and tabs as they are. */
void chat_safe_append(struct buf *out, const char *text, size_t len);
/* A prompt sent: "> line", unless the terminal showed it right after the input prompt. line:
 * borrowed. */
void chat_render_prompt_sent(struct chat_render *r, const char *line, int echoed, struct buf *out);
/* The input prompt, on a line of its own. */
void chat_render_input_prompt(struct chat_render *r, struct buf *out);
/* Ends the current line, if any. */
void chat_render_break(struct chat_render *r, struct buf *out);

#endif
