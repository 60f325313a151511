/* The terminal: settings saved and restored, the one-key mode, the screen. */
#include "chat/term.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

void
chat_term_init(struct chat_term *t)
{
	memset(t, 0, sizeof(*t));
	t->tty_in = isatty(STDIN_FILENO);
	t->tty_out = isatty(STDOUT_FILENO);
	if (t->tty_in && tcgetattr(STDIN_FILENO, &t->orig) == 0)
		t->saved = 1;
}

void
chat_term_keys(struct chat_term *t, int on)
{
	struct termios raw;

	if (!t->saved || t->keys == on)
		return;
	if (!on) {
		chat_term_restore(t);
		return;
	}
	raw = t->orig;
	/* One byte at a time, not echoed; ISIG stays, so Ctrl-C still cancels the turn. */
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0)
		t->keys = 1;
}

void
chat_term_restore(struct chat_term *t)
{
	if (t->saved && t->keys)
		tcsetattr(STDIN_FILENO, TCSANOW, &t->orig);
	t->keys = 0;
}

int
chat_term_write(const char *s, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDOUT_FILENO, s, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		s += n;
		len -= (size_t)n;
	}
	return 0;
}
