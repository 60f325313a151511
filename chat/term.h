/*
 * The person's terminal: whether stdin and the screen are terminals, the one-key mode of a
 * permission ask (no line editing, no echo; Ctrl-C still a signal), and writing the screen.
 */
#ifndef CHAT_TERM_H
#define CHAT_TERM_H

#include <stddef.h>
#include <termios.h>

struct chat_term {
	int tty_in;		/* stdin is a terminal: asks read one key */
	int tty_out;		/* the screen is a terminal: colour, the input prompt */
	int saved;		/* orig holds stdin's settings */
	int keys;		/* the one-key mode is on */
	struct termios orig;
};

void chat_term_init(struct chat_term *t);
/* Turns the one-key mode on or off (a no-op without a terminal). */
void chat_term_keys(struct chat_term *t, int on);
/* Gives stdin its settings back (at exit, and on every way out). */
void chat_term_restore(struct chat_term *t);
/* Writes all of s to the screen; -1 when it cannot (a closed pipe: output is dropped). s: borrowed. */
int chat_term_write(const char *s, size_t len);

#endif
