/* The line editor on a terminal (chat/edit.h). */
#include "chat/edit.h"

#include <errno.h>
#include <fcntl.h>
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
#define PASTE_MAX ((size_t)8 << 20)	/* a paste longer than this is cut */

static struct chat_edit *
edit_of(EditLine *el, const struct edit_api *api)
{
	void *ed = NULL;

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

/*
 * Bound to the start of a bracketed paste: the pasted bytes are read here, up to its end, and
 * inserted as text (a terminal sends a pasted line break as '\r': it becomes '\n'; one at the
 * very end is dropped, so a paste never sends itself). The bytes are already in stdin: this
 * read waits for nothing the terminal has not sent.
 */
static unsigned char
edit_paste(EditLine *el, int ch)
{
	const struct edit_api *api = NULL;
	struct chat_edit *ed;
	struct buf text;
	char c;

	(void)ch;
	/* the table is the one loaded: edit_dl_load returns it again without loading */
	struct err e;
	err_clear(&e);
	api = edit_dl_load(&e);
	if (api == NULL || (ed = edit_of(el, api)) == NULL)
		return CC_NORM;
	buf_init(&text);
	for (;;) {
		ssize_t n = read(ed->in_fd, &c, 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (c == '\r')
			c = '\n';
		if (text.len < PASTE_MAX)
			buf_append(&text, &c, 1);
		if (text.len >= sizeof(PASTE_END) - 1 &&
		    memcmp(text.data + text.len - (sizeof(PASTE_END) - 1), PASTE_END, sizeof(PASTE_END) - 1) == 0) {
			text.len -= sizeof(PASTE_END) - 1;
			break;
		}
	}
	if (text.len > 0 && text.data[text.len - 1] == '\n')
		text.len--;
	if (text.len > 0) {
		buf_append(&text, "", 1);
		api->el_insertstr(el, text.data);
	}
	buf_free(&text);
	return CC_REFRESH;
}

int
chat_edit_init(struct chat_edit *ed, const char *hist_path, void (*on_line)(void *, const char *, size_t),
    void (*on_eof)(void *), void *arg, struct err *e)
{
	HistEvent hev;

	memset(ed, 0, sizeof(*ed));
	buf_init(&ed->gathered);
	if ((ed->api = edit_dl_load(e)) == NULL)
		return -1;
	ed->in_fd = STDIN_FILENO;
	/* the terminal's end-of-file key as the person set it (libedit's raw mode hides it) */
	struct termios t;
	ed->eof_char = tcgetattr(ed->in_fd, &t) == 0 && t.c_cc[VEOF] ? t.c_cc[VEOF] : 4;
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
	ed->api->el_set(ed->el, EL_PROMPT, edit_prompt);
	ed->api->el_set(ed->el, EL_HIST, ed->api->history, ed->hist);
	ed->api->el_set(ed->el, EL_ADDFN, "acp-paste", "a bracketed paste, as text", edit_paste);
	ed->api->el_set(ed->el, EL_BIND, PASTE_BEGIN, "acp-paste", NULL);
	ed->api->el_set(ed->el, EL_UNBUFFERED, 1);
	chat_term_write(PASTE_ON, strlen(PASTE_ON));
	return 0;
}

/* Saves the history, readable by its owner only (it holds what was typed). */
static void
edit_save(struct chat_edit *ed)
{
	HistEvent hev;
	int fd;

	if (ed->hist_path == NULL)
		return;
	fd = open(ed->hist_path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;		/* no state directory yet, or not ours: the history is not kept */
	fchmod(fd, 0600);
	close(fd);
	ed->api->history(ed->hist, &hev, H_SAVE, ed->hist_path);
}

void
chat_edit_free(struct chat_edit *ed)
{
	if (ed->api == NULL) {
		buf_free(&ed->gathered);
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
	memset(ed, 0, sizeof(*ed));
}

/* The editor's buffer emptied (its line was taken, or dropped). */
static void
edit_empty(struct chat_edit *ed)
{
	const LineInfo *li = ed->api->el_line(ed->el);

	ed->api->el_cursor(ed->el, (int)(li->lastchar - li->cursor));
	li = ed->api->el_line(ed->el);
	ed->api->el_deletestr(ed->el, (int)(li->cursor - li->buffer));
}

/* A whole line (without its '\n'): gathered when it ends with '\', else the prompt is done. */
static void
edit_line(struct chat_edit *ed, const char *line, size_t len)
{
	HistEvent hev;
	char *whole;
	size_t n;

	if (len > 0 && line[len - 1] == '\\') {
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
	ed->on_line(ed->arg, whole, n);
	free(whole);
}

void
chat_edit_read(struct chat_edit *ed)
{
	int count = 0, avail = 0;
	const char *s;

	if (ed->api == NULL)
		return;
	/* readable with nothing to read: the terminal is gone (a hangup, a closed pty) */
	if (ioctl(ed->in_fd, FIONREAD, &avail) == 0 && avail == 0) {
		ed->shown = 0;
		ed->on_eof(ed->arg);
		return;
	}
	s = ed->api->el_gets(ed->el, &count);
	if (s == NULL || count <= 0)
		return;		/* a key that did not end a line */
	/* Ctrl-D on an empty line: the tty's end-of-file character alone */
	if (count == 1 && (unsigned char)s[0] == ed->eof_char) {
		ed->shown = 0;
		ed->on_eof(ed->arg);
		return;
	}
	if (s[count - 1] != '\n' && s[count - 1] != '\r')
		return;
	/* A line: libedit left the terminal cooked until its next read; raw again now, so what is
	 * typed next is not echoed by the terminal meanwhile. */
	char *line = xstrndup(s, (size_t)count - 1);
	ed->shown = 0;
	edit_empty(ed);		/* the next prompt starts empty */
	ed->api->el_set(ed->el, EL_PREP_TERM, 1);
	edit_line(ed, line, (size_t)count - 1);
	free(line);
}

void
chat_edit_show(struct chat_edit *ed)
{
	if (ed->api == NULL)
		return;
	ed->api->el_set(ed->el, EL_REFRESH);
	ed->shown = 1;
}

int
chat_text_rows(const char *text, size_t len, int cols, int *col)
{
	mbstate_t st;
	int rows = 0;
	size_t i = 0;

	memset(&st, 0, sizeof(st));
	if (cols < 1)
		cols = 80;
	while (i < len) {
		unsigned char c = (unsigned char)text[i];
		if (c == '\033' && i + 1 < len && text[i + 1] == '[') {
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
	}
	return rows;
}

void
chat_edit_rows(const struct chat_edit *ed, int cols, int *rows, int *cursor_row)
{
	const char *prompt = ed->gathered.len ? CHAT_PROMPT_MORE : CHAT_PROMPT;
	const LineInfo *li;
	int col = 0, r;

	*rows = 1;
	*cursor_row = 0;
	if (ed->api == NULL)
		return;
	li = ed->api->el_line(ed->el);
	chat_text_rows(prompt, strlen(prompt), cols, &col);
	r = chat_text_rows(li->buffer, (size_t)(li->cursor - li->buffer), cols, &col);
	*cursor_row = r;
	r += chat_text_rows(li->cursor, (size_t)(li->lastchar - li->cursor), cols, &col);
	*rows = r + 1;
}

void
chat_edit_drop(struct chat_edit *ed)
{
	if (ed->api == NULL)
		return;
	edit_empty(ed);
	buf_consume(&ed->gathered, ed->gathered.len);
	ed->api->el_set(ed->el, EL_PROMPT, edit_prompt);
}

void
chat_edit_resize(struct chat_edit *ed)
{
	if (ed->api)
		ed->api->el_resize(ed->el);
}
