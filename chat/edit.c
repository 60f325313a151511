/* The line editor on a terminal (chat/edit.h). */
#include "chat/edit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>
#include <wchar.h>

#include "base/xmalloc.h"
#include "chat/term.h"
#include "chat/texts.h"

#define PASTE_ON "\033[?2004h"		/* the terminal marks a paste */
#define PASTE_OFF "\033[?2004l"
#define PASTE_BEGIN "\033[200~"
#define PASTE_END "\033[201~"
#define PASTE_MAX ((size_t)8 << 20)	/* a paste longer than this is cut (the rest still read) */
#define EDIT_NEXT_MS 100		/* a key's next byte comes at once: longer, the key is dropped */
#define PASTE_NEXT_MS 1000		/* a paste's next byte: longer, the paste ends there */

static struct chat_edit *
edit_of(EditLine *el)
{
	struct err e;
	const struct edit_api *api;
	void *ed = NULL;

	err_clear(&e);
	if ((api = edit_dl_load(&e)) != NULL)	/* loaded already: the same table */
		api->el_get(el, EL_CLIENTDATA, &ed);
	return ed;
}

static char *
edit_prompt(EditLine *el)
{
	(void)el;
	return (char *)CHAT_PROMPT;
}

static char *
edit_prompt_more(EditLine *el)
{
	(void)el;
	return (char *)CHAT_PROMPT_MORE;
}

/* One byte of stdin, waiting at most ms (-1: for ever): 1, 0 when none came in time, -1 when the
 * terminal is gone (ed->gone set). */
static int
edit_byte(struct chat_edit *ed, unsigned char *c, int ms)
{
	struct pollfd p = { ed->in_fd, POLLIN, 0 };

	for (;;) {
		int r = poll(&p, 1, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			return 0;
		ssize_t n = r > 0 ? read(ed->in_fd, c, 1) : -1;
		if (n == 1)
			return 1;
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		ed->gone = 1;	/* end of file, a hang-up (EIO), or poll failed */
		return -1;
	}
}

/*
 * libedit's reader: the key the loop saw readable, then the rest of a key's bytes only if they
 * come at once. A key that waits for another (a lone Esc, the start of an unfinished sequence)
 * gets -1 after EDIT_NEXT_MS and is dropped: libedit never blocks the loop waiting for a person.
 * UTF-8 is decoded here (the locale is the terminal's, chat_main sets it).
 */
static int
edit_getc(EditLine *el, wchar_t *wc)
{
	struct chat_edit *ed = edit_of(el);
	unsigned char b[MB_LEN_MAX];
	size_t n = 0, want;
	mbstate_t st;

	if (ed == NULL || ed->gone)
		return 0;
	if (edit_byte(ed, &b[0], ed->first ? 0 : EDIT_NEXT_MS) <= 0)
		return ed->gone ? 0 : -1;
	ed->first = 0;
	n = 1;
	want = b[0] < 0x80 ? 1 : b[0] >= 0xf0 ? 4 : b[0] >= 0xe0 ? 3 : b[0] >= 0xc0 ? 2 : 1;
	while (n < want && n < sizeof(b)) {
		if (edit_byte(ed, &b[n], EDIT_NEXT_MS) <= 0)
			return ed->gone ? 0 : -1;
		n++;
	}
	memset(&st, 0, sizeof(st));
	if (mbrtowc(wc, (const char *)b, n, &st) != n)
		*wc = b[0] < 0x80 ? b[0] : 0xfffd;	/* not UTF-8: shown as U+FFFD, never raw */
	return 1;
}

/*
 * Bound to the start of a bracketed paste: its bytes are read here up to its end (or until none
 * comes for PASTE_NEXT_MS) and inserted as text. A terminal sends a pasted line break as '\r': it
 * becomes '\n'; line breaks at the very end are dropped, so a paste never sends itself.
 */
static unsigned char
edit_paste(EditLine *el, int ch)
{
	struct chat_edit *ed = edit_of(el);
	static const char end[] = PASTE_END;
	size_t matched = 0;
	struct buf text;
	unsigned char c;

	(void)ch;
	if (ed == NULL)
		return CC_NORM;
	buf_init(&text);
	while (matched < sizeof(end) - 1 && edit_byte(ed, &c, PASTE_NEXT_MS) > 0) {
		if (c == (unsigned char)end[matched]) {
			matched++;	/* the end marker's bytes are held back until it is whole */
			continue;
		}
		if (matched > 0 && text.len < PASTE_MAX)
			buf_append(&text, end, matched);
		matched = c == (unsigned char)end[0];
		if (matched)
			continue;
		if (c == '\r')
			c = '\n';
		if (text.len < PASTE_MAX)
			buf_append(&text, &c, 1);
	}
	while (text.len > 0 && text.data[text.len - 1] == '\n')
		text.len--;
	if (text.len > 0) {
		buf_append(&text, "", 1);
		ed->api->el_insertstr(el, text.data);
	}
	buf_free(&text);
	return CC_REFRESH;
}

int
chat_edit_init(struct chat_edit *ed, const char *hist_path, void (*on_line)(void *, const char *, size_t),
    void (*on_eof)(void *), void *arg, struct err *e)
{
	static const char *const off[] = { "^R", "^S", "^V", "^X", "^Z" };
	HistEvent hev;

	memset(ed, 0, sizeof(*ed));
	buf_init(&ed->gathered);
	buf_init(&ed->shown_gathered);
	if ((ed->api = edit_dl_load(e)) == NULL)
		return -1;
	ed->in_fd = STDIN_FILENO;
	ed->on_line = on_line;
	ed->on_eof = on_eof;
	ed->arg = arg;
	ed->el = ed->api->el_init("acp-agent", stdin, stdout, stderr);
	ed->hist = ed->api->history_init();
	if (ed->el == NULL || ed->hist == NULL) {
		chat_edit_free(ed);
		return err_set(e, ERR_USAGE, "libedit could not start on this terminal");
	}
	ed->api->history(ed->hist, &hev, H_SETSIZE, CHAT_EDIT_HISTORY);
	ed->api->history(ed->hist, &hev, H_SETUNIQUE, 1);
	if (hist_path) {
		ed->hist_path = xstrdup(hist_path);
		ed->api->history(ed->hist, &hev, H_LOAD, ed->hist_path);	/* none yet: an empty history */
	}
	ed->api->el_set(ed->el, EL_CLIENTDATA, ed);
	ed->api->el_set(ed->el, EL_EDITOR, "emacs");
	ed->api->el_set(ed->el, EL_SIGNAL, 0);		/* the loop owns the signals */
	ed->api->el_set(ed->el, EL_GETCFN, edit_getc);
	ed->api->el_set(ed->el, EL_PROMPT, edit_prompt);
	ed->api->el_set(ed->el, EL_HIST, ed->api->history, ed->hist);
	/* the keys that would wait for more keys in a mode of their own (search, a quoted key, a
	 * prefix), and the terminal's suspend key, which a raw terminal reads as a key: nothing */
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++)
		ed->api->el_set(ed->el, EL_BIND, off[i], "ed-unassigned", NULL);
	ed->api->el_set(ed->el, EL_ADDFN, "acp-paste", "a bracketed paste, as text", edit_paste);
	ed->api->el_set(ed->el, EL_BIND, PASTE_BEGIN, "acp-paste", NULL);
	ed->api->el_set(ed->el, EL_UNBUFFERED, 1);
	/* going unbuffered drew the prompt: taken off until the bottom of the screen draws it */
	chat_term_write("\r\033[K" PASTE_ON, strlen("\r\033[K" PASTE_ON));
	return 0;
}

/* Saves the history through a descriptor of ours, readable by its owner only (it holds what
 * was typed), never through a link or into a FIFO. */
static void
edit_save(struct chat_edit *ed)
{
	HistEvent hev;
	struct stat st;
	FILE *f;
	int fd;

	if (ed->hist_path == NULL)
		return;
	fd = open(ed->hist_path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		return;		/* no state directory yet, or not ours: the history is not kept */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fchmod(fd, 0600) < 0 || ftruncate(fd, 0) < 0 ||
	    (f = fdopen(fd, "w")) == NULL) {
		close(fd);
		return;
	}
	ed->api->history(ed->hist, &hev, H_SAVE_FP, f);
	fclose(f);
}

void
chat_edit_free(struct chat_edit *ed)
{
	if (ed->api == NULL) {
		buf_free(&ed->gathered);
		buf_free(&ed->shown_gathered);
		return;
	}
	if (ed->el) {
		ed->api->el_set(ed->el, EL_UNBUFFERED, 0);
		ed->api->el_set(ed->el, EL_PREP_TERM, 0);
		chat_term_write(PASTE_OFF, strlen(PASTE_OFF));
		ed->api->el_end(ed->el);
	}
	if (ed->hist)
		ed->api->history_end(ed->hist);
	free(ed->hist_path);
	buf_free(&ed->gathered);
	buf_free(&ed->shown_gathered);
	memset(ed, 0, sizeof(*ed));
}

/* The editor emptied and its history position reset (its line was taken, or dropped); the
 * terminal raw again (a reset leaves it cooked). */
static void
edit_reset(struct chat_edit *ed)
{
	ed->api->el_reset(ed->el);
	ed->api->el_set(ed->el, EL_PREP_TERM, 1);
}

/* A whole line (without its '\n'): gathered when it ends with '\', else the prompt is done. */
static void
edit_line(struct chat_edit *ed, const char *line, size_t len)
{
	HistEvent hev;
	char *whole;
	size_t n;

	if (len > 0 && line[len - 1] == '\\') {
		buf_puts(&ed->shown_gathered, ed->gathered.len ? CHAT_PROMPT_MORE : CHAT_PROMPT);
		buf_append(&ed->shown_gathered, line, len);
		buf_append(&ed->shown_gathered, "\n", 1);
		buf_append(&ed->gathered, line, len - 1);
		buf_append(&ed->gathered, "\n", 1);
		ed->api->el_set(ed->el, EL_PROMPT, edit_prompt_more);
		return;
	}
	buf_append(&ed->gathered, line, len);
	n = ed->gathered.len;
	whole = buf_steal(&ed->gathered);
	buf_init(&ed->gathered);
	ed->api->el_set(ed->el, EL_PROMPT, edit_prompt);
	if (n > 0 && whole[strspn(whole, " \t\n")] != '\0') {
		ed->api->history(ed->hist, &hev, H_ENTER, whole);
		edit_save(ed);
	}
	ed->last_prompt = ed->shown_gathered.len ? CHAT_PROMPT_MORE : CHAT_PROMPT;
	ed->last_line = line;
	ed->last_len = len;
	ed->on_line(ed->arg, whole, n);		/* shown_gathered still tells what is on the screen */
	ed->last_line = NULL;
	ed->last_len = 0;
	buf_consume(&ed->shown_gathered, ed->shown_gathered.len);
	free(whole);
}

void
chat_edit_read(struct chat_edit *ed)
{
	int count = 0;
	const char *s;

	if (ed->api == NULL)
		return;
	ed->first = 1;
	s = ed->api->el_gets(ed->el, &count);
	if (ed->gone) {
		ed->shown = 0;
		ed->on_eof(ed->arg);
		return;
	}
	if (s == NULL || count <= 0)
		return;		/* a key that did not end a line (or was dropped) */
	/* Ctrl-D on an empty line: libedit gives the end-of-file character alone */
	if (count == 1 && ((unsigned char)s[0] == 4 || (unsigned char)s[0] == ed->eof_char)) {
		ed->shown = 0;
		ed->on_eof(ed->arg);
		return;
	}
	if (s[count - 1] != '\n' && s[count - 1] != '\r')
		return;
	char *line = xstrndup(s, (size_t)count - 1);
	ed->shown = 0;
	edit_reset(ed);		/* the next prompt starts empty, from the history's end */
	edit_line(ed, line, (size_t)count - 1);
	free(line);
}

void
chat_edit_show(struct chat_edit *ed)
{
	if (ed->api == NULL)
		return;
	/* the lines of a prompt gathered so far, then the line being typed */
	chat_term_write(ed->shown_gathered.data ? ed->shown_gathered.data : "", ed->shown_gathered.len);
	ed->api->el_set(ed->el, EL_REFRESH);
	ed->shown = 1;
}

int
chat_text_rows(const char *text, size_t len, int cols, int *col, int typed)
{
	mbstate_t st;
	int rows = 0;
	size_t i = 0;

	memset(&st, 0, sizeof(st));
	if (cols < 1)
		cols = 80;
	while (i < len) {
		unsigned char c = (unsigned char)text[i];
		if (!typed && c == '\033' && i + 1 < len && text[i + 1] == '[') {
			/* one of our colour codes: ESC [ parameters, a final letter */
			i += 2;
			while (i < len && !(text[i] >= '@' && text[i] <= '~'))
				i++;
			i++;
			continue;
		}
		if (c == '\n') {
			rows++;
			*col = 0;
			i++;
			continue;
		}
		int w = 1;
		size_t n = 1;
		if (c == '\t') {
			w = 8 - *col % 8;
		} else if (c < 0x20 || c == 0x7f) {
			w = typed ? 2 : 1;	/* the editor shows ^X */
		} else if (c >= 0x80) {
			wchar_t wc;
			n = mbrtowc(&wc, text + i, len - i, &st);
			if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
				memset(&st, 0, sizeof(st));
				n = 1;
			} else if ((w = wcwidth(wc)) < 0) {
				w = 1;
			}
		}
		if (*col + w > cols) {
			rows++;
			*col = 0;
		}
		*col += w;
		i += n;
		if (typed && *col >= cols) {
			/* the editor moves to the next row as soon as a row is full */
			rows++;
			*col = 0;
		}
	}
	return rows;
}

void
chat_edit_rows(const struct chat_edit *ed, int cols, int *rows, int *cursor_row)
{
	const char *prompt = ed->gathered.len ? CHAT_PROMPT_MORE : CHAT_PROMPT;
	const LineInfo *li;
	int col = 0, r, g = 0;

	*rows = 1;
	*cursor_row = 0;
	if (ed->api == NULL)
		return;
	if (ed->shown_gathered.len)
		g = chat_text_rows(ed->shown_gathered.data, ed->shown_gathered.len, cols, &col, 1);
	col = 0;
	li = ed->api->el_line(ed->el);
	chat_text_rows(prompt, strlen(prompt), cols, &col, 1);
	r = chat_text_rows(li->buffer, (size_t)(li->cursor - li->buffer), cols, &col, 1);
	*cursor_row = g + r;
	r += chat_text_rows(li->cursor, (size_t)(li->lastchar - li->cursor), cols, &col, 1);
	*rows = g + r + 1;
}

void
chat_edit_drop(struct chat_edit *ed)
{
	if (ed->api == NULL)
		return;
	edit_reset(ed);
	buf_consume(&ed->gathered, ed->gathered.len);
	buf_consume(&ed->shown_gathered, ed->shown_gathered.len);
	ed->api->el_set(ed->el, EL_PROMPT, edit_prompt);
}

void
chat_edit_resize(struct chat_edit *ed)
{
	if (ed->api)
		ed->api->el_resize(ed->el);
}

void
chat_edit_suspend(struct chat_edit *ed)
{
	if (ed->api == NULL)
		return;
	ed->api->el_set(ed->el, EL_PREP_TERM, 0);
	chat_term_write(PASTE_OFF, strlen(PASTE_OFF));
}

void
chat_edit_continue(struct chat_edit *ed)
{
	if (ed->api == NULL)
		return;
	/* libedit believes the terminal raw still: cooked, then raw, so it is set again */
	ed->api->el_set(ed->el, EL_PREP_TERM, 0);
	ed->api->el_set(ed->el, EL_PREP_TERM, 1);
	chat_term_write(PASTE_ON, strlen(PASTE_ON));
}
