/*
 * The line editor on a terminal (docs/contract.md §21): libedit (base/edit_dl.h) in its
 * unbuffered mode, fed one byte per wake-up of the loop, so the agent's output keeps coming
 * while a line is typed. It keeps the history (under the state directory, 0600), takes a
 * bracketed paste as text (its newlines included: a paste is one prompt), and joins a line
 * ended by '\' with the next one (the prompt says "... " meanwhile).
 */
#ifndef CHAT_EDIT_H
#define CHAT_EDIT_H

#include <stddef.h>

#include "base/buf.h"
#include "base/edit_dl.h"

#define CHAT_EDIT_HISTORY 1000	/* prompts kept */

struct chat_edit {
	const struct edit_api *api;	/* NULL: not started (no libedit, or not a terminal) */
	EditLine *el;
	History *hist;
	char *hist_path;		/* owned, or NULL: the history is not kept */
	struct buf gathered;		/* a prompt's lines so far, each ended by '\' */
	struct buf shown_gathered;	/* the same as drawn: each with its prompt and its '\' */
	const char *last_prompt;	/* the prompt the line just entered was typed after */
	const char *last_line;		/* that line, during on_line (borrowed), and its length */
	size_t last_len;
	int shown;			/* the prompt and the line are drawn at the bottom */
	int first;			/* the next byte read is the one the loop saw readable */
	int gone;			/* stdin ended or hung up */
	int in_fd;
	unsigned char eof_char;		/* Ctrl-D, or what the terminal's VEOF is */
	void (*on_line)(void *arg, const char *line, size_t len);
	void (*on_eof)(void *arg);
	void *arg;
};

/* Starts the editor on stdin and stdout (a terminal both): 0, or -1 with e (libedit is not
 * installed). hist_path: borrowed, may be NULL. Nothing is drawn yet. Keys that would wait for
 * more keys (search, a quoted key, a prefix, the suspend key) do nothing; a key whose bytes do
 * not come at once is dropped, so the loop is never held by the editor. */
int chat_edit_init(struct chat_edit *ed, const char *hist_path, void (*on_line)(void *, const char *, size_t),
    void (*on_eof)(void *), void *arg, struct err *e);
/* The terminal as it was, bracketed paste off, the history saved. */
void chat_edit_free(struct chat_edit *ed);
/* stdin is readable: one key through the editor (a whole line goes to on_line). */
void chat_edit_read(struct chat_edit *ed);
/* Draws the prompt's gathered lines, the prompt and the line being typed from column 0 of the
 * cursor's row. */
void chat_edit_show(struct chat_edit *ed);
/* The rows the gathered lines, the prompt and the line take on a screen cols wide, and the row
 * the cursor is on (from the first). */
void chat_edit_rows(const struct chat_edit *ed, int cols, int *rows, int *cursor_row);
/* Drops the line being typed (Ctrl-C), and a prompt's gathered lines. */
void chat_edit_drop(struct chat_edit *ed);
/* The terminal changed size. */
void chat_edit_resize(struct chat_edit *ed);
/* The chat is about to stop (Ctrl-Z): the terminal cooked, bracketed paste off. */
void chat_edit_suspend(struct chat_edit *ed);
/* The chat was stopped (Ctrl-Z) and goes on: the terminal raw again, bracketed paste on. */
void chat_edit_continue(struct chat_edit *ed);
/* The rows text[0..len) takes from column *col on a screen cols wide, counted from 0, and the
 * column it ends at in *col. Output (typed 0): our colour codes take no column, a row wraps when a
 * character no longer fits (the terminal's deferred wrap). The editor's text (typed 1): control
 * bytes take two columns (^X), and a full row wraps at once, as libedit draws it. Tabs go to the
 * next multiple of 8, '\n' starts a row, wide characters take two. */
int chat_text_rows(const char *text, size_t len, int cols, int *col, int typed);

#endif
