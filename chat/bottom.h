/*
 * What stays at the bottom of a terminal while output comes (docs/contract.md §21): the
 * permission ask being asked, else the line editor's prompt and the line being typed. Output is
 * written above it: the bottom is taken away (the cursor goes back to where it began, the rest
 * of the screen is cleared), the output written, and the bottom drawn again. The output's last
 * line, while it has no end yet (a streamed answer), is drawn again above the bottom each time.
 */
#ifndef CHAT_BOTTOM_H
#define CHAT_BOTTOM_H

#include <stddef.h>

#include "base/buf.h"
#include "chat/edit.h"

struct chat_bottom {
	struct buf partial;	/* the output's last line, not ended yet, as written */
	int partial_col;	/* the column it ends at */
	struct buf ask;		/* the ask to keep at the bottom, as rendered; empty: none */
	int ask_shown;		/* it is drawn */
	int ask_rows;		/* the rows from its first to the cursor's */
	int cols;		/* the screen's width */
};

void chat_bottom_init(struct chat_bottom *b);
void chat_bottom_free(struct chat_bottom *b);
/* The screen's width now (the terminal's, or 80). */
void chat_bottom_width(struct chat_bottom *b);
/* Writes text[0..len) (output) above the bottom, then the ask when there is one, else the
 * editor when want_edit. */
void chat_bottom_flush(struct chat_bottom *b, struct chat_edit *ed, const char *text, size_t len, int want_edit);
/* The editor printed a prompt's last line and moved below it (during its on_line call). keep:
 * it stays (it was sent, it is the conversation's now); else its lines are taken off the screen
 * (it waits, and is shown when it is sent). */
void chat_bottom_entered(struct chat_bottom *b, const struct chat_edit *ed, int keep);
/* Takes what is at the bottom away now (the screen is about to change under it). */
void chat_bottom_lift(struct chat_bottom *b, struct chat_edit *ed);
/* The ask was answered or withdrawn: its block is output now, appended to screen. */
void chat_bottom_ask_done(struct chat_bottom *b, struct buf *screen);

#endif
