/* What stays at the bottom of a terminal while output comes (chat/bottom.h). */
#include "chat/bottom.h"

#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "chat/term.h"

void
chat_bottom_init(struct chat_bottom *b)
{
	memset(b, 0, sizeof(*b));
	buf_init(&b->partial);
	buf_init(&b->ask);
	chat_bottom_width(b);
}

void
chat_bottom_free(struct chat_bottom *b)
{
	buf_free(&b->partial);
	buf_free(&b->ask);
}

void
chat_bottom_width(struct chat_bottom *b)
{
	struct winsize ws;

	b->cols = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
}

/* Takes the bottom away: the cursor goes back to the end of the output (the partial line's end,
 * or column 0 of the row after the output), and the rest of the screen is cleared. */
static void
bottom_lift(struct chat_bottom *b, struct chat_edit *ed, struct buf *out)
{
	int up = 0, rows, cursor;

	if (ed->shown) {
		chat_edit_rows(ed, b->cols, &rows, &cursor);
		up = cursor;
	} else if (b->ask_shown) {
		up = b->ask_rows;
	}
	if (!ed->shown && !b->ask_shown)
		return;		/* nothing below the output: the cursor is at its end */
	ed->shown = 0;
	b->ask_shown = 0;
	if (b->partial.len > 0 && b->partial_col < b->cols) {
		/* up to the partial line's last row, after its last character */
		buf_printf(out, "\033[%dA\033[%dG\033[J", up + 1, b->partial_col + 1);
		return;
	}
	/* nothing unended (or it filled its row: what comes next starts the next one) */
	if (up > 0)
		buf_printf(out, "\033[%dA", up);
	buf_puts(out, "\r\033[J");
}

void
chat_bottom_lift(struct chat_bottom *b, struct chat_edit *ed)
{
	struct buf out;

	if (!ed->shown && !b->ask_shown)
		return;
	buf_init(&out);
	bottom_lift(b, ed, &out);
	chat_term_write(out.data, out.len);
	buf_free(&out);
}

void
chat_bottom_flush(struct chat_bottom *b, struct chat_edit *ed, const char *text, size_t len, int want_edit)
{
	struct buf out;
	const char *nl;
	int col = 0;

	buf_init(&out);
	bottom_lift(b, ed, &out);
	buf_append(&out, text, len);
	/* what of the output has no end yet: its last line */
	buf_append(&b->partial, text, len);
	nl = b->partial.len ? memrchr(b->partial.data, '\n', b->partial.len) : NULL;
	if (nl)
		buf_consume(&b->partial, (size_t)(nl + 1 - b->partial.data));
	if (b->partial.len > 0) {
		chat_text_rows(b->partial.data, b->partial.len, b->cols, &col, 0);
		b->partial_col = col;
	}
	if (b->partial.len > 0 && (b->ask.len > 0 || want_edit))
		buf_puts(&out, "\n");	/* the bottom starts on a row of its own */
	if (b->ask.len > 0) {
		col = 0;
		buf_append(&out, b->ask.data, b->ask.len);
		b->ask_rows = chat_text_rows(b->ask.data, b->ask.len, b->cols, &col, 0);
		b->ask_shown = 1;
	}
	chat_term_write(out.data ? out.data : "", out.len);
	buf_free(&out);
	if (b->ask.len == 0 && want_edit)
		chat_edit_show(ed);
}

void
chat_bottom_entered(struct chat_bottom *b, const struct chat_edit *ed, int keep)
{
	struct buf out;
	int col = 0, rows = 0;
	const char *prompt = ed->last_prompt ? ed->last_prompt : "";

	if (keep) {
		/* the unended line and the entered one stay as they are, part of the output */
		buf_consume(&b->partial, b->partial.len);
		return;
	}
	/* the prompt's gathered lines and its last one, as libedit left them, taken off */
	if (ed->shown_gathered.len)
		rows = chat_text_rows(ed->shown_gathered.data, ed->shown_gathered.len, b->cols, &col, 1);
	col = 0;
	chat_text_rows(prompt, strlen(prompt), b->cols, &col, 1);
	rows += chat_text_rows(ed->last_line ? ed->last_line : "", ed->last_len, b->cols, &col, 1) + 1;
	buf_init(&out);
	buf_printf(&out, "\033[%dA\r\033[J", rows);
	chat_term_write(out.data, out.len);
	buf_free(&out);
}

void
chat_bottom_ask_done(struct chat_bottom *b, struct buf *screen)
{
	buf_append(screen, b->ask.data, b->ask.len);
	buf_consume(&b->ask, b->ask.len);
}
