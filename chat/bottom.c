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

/* The rows from the first row of the bottom (the partial line's, if any) to the cursor's. */
static int
bottom_rows_up(const struct chat_bottom *b, const struct chat_edit *ed)
{
	int up = 0, rows, cursor;

	if (ed->shown) {
		chat_edit_rows(ed, b->cols, &rows, &cursor);
		up += cursor;
	} else if (b->ask_shown) {
		up += b->ask_rows;
	}
	if (b->partial.len > 0)
		up += b->partial_rows + 1;	/* the partial line, then the row a newline began */
	return up;
}

void
chat_bottom_flush(struct chat_bottom *b, struct chat_edit *ed, const char *text, size_t len, int want_edit)
{
	struct buf out;
	int up = bottom_rows_up(b, ed), col = 0;
	const char *nl;

	buf_init(&out);
	/* take the bottom away: back to where it began, the rest of the screen cleared */
	if (up > 0)
		buf_printf(&out, "\033[%dA", up);
	buf_puts(&out, "\r\033[J");
	ed->shown = 0;
	b->ask_shown = 0;
	/* the unended line again, and what comes after it */
	buf_append(&out, b->partial.data, b->partial.len);
	buf_append(&out, text, len);
	buf_append(&b->partial, text, len);
	nl = b->partial.len ? memrchr(b->partial.data, '\n', b->partial.len) : NULL;
	if (nl)
		buf_consume(&b->partial, (size_t)(nl + 1 - b->partial.data));
	if (b->partial.len > 0) {
		b->partial_rows = chat_text_rows(b->partial.data, b->partial.len, b->cols, &col);
		buf_puts(&out, "\n");	/* the bottom starts on a row of its own */
	}
	if (b->ask.len > 0) {
		col = 0;
		buf_append(&out, b->ask.data, b->ask.len);
		b->ask_rows = chat_text_rows(b->ask.data, b->ask.len, b->cols, &col);
		b->ask_shown = 1;
	}
	chat_term_write(out.data ? out.data : "", out.len);
	buf_free(&out);
	if (b->ask.len == 0 && want_edit)
		chat_edit_show(ed);
}

void
chat_bottom_entered(struct chat_bottom *b, const char *prompt, const char *line, size_t len, int keep)
{
	struct buf out;
	int col = 0, rows;

	if (keep) {
		/* the unended line and the entered one stay as they are, part of the output */
		buf_consume(&b->partial, b->partial.len);
		return;
	}
	rows = chat_text_rows(prompt, strlen(prompt), b->cols, &col);
	rows += chat_text_rows(line, len, b->cols, &col) + 1;
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
