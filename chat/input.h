/*
 * The person's input: lines (prompts, and answers without a terminal), or single keys while a
 * permission ask is shown on a terminal. stdin keeps its blocking mode (its file description is
 * the shell's too): one read per wakeup.
 */
#ifndef CHAT_INPUT_H
#define CHAT_INPUT_H

#include <ev.h>

#include "base/reader.h"
#include "chat/edit.h"

struct chat_input {
	ev_io io;		/* first member */
	struct ev_loop *loop;
	int keys;		/* bytes go to on_key one by one, not to lines */
	struct chat_edit *ed;	/* a terminal's line editor: it reads the lines (NULL: the frame does) */
	int paused;		/* stopped while the editor is not drawn */
	int skip;		/* an escape sequence being dropped during an ask (chat_input_skip) */
	int pasting;		/* ... a bracketed paste, up to its end */
	char seq[16];		/* its bytes so far (a paste: the last ones) */
	size_t seqlen;
	int eof;
	struct frame frame;
	void (*on_key)(void *arg, int key);
	void (*on_eof)(void *arg);
	void *arg;
};

/* Starts reading fd. on_line gets each line (borrowed, without '\n'). */
void chat_input_init(struct chat_input *in, struct ev_loop *loop, int fd, reader_line_fn *on_line,
    void (*on_key)(void *, int), void (*on_eof)(void *), void *arg);
void chat_input_stop(struct chat_input *in);
/* Reads again after a pause (the editor is drawn again). */
void chat_input_resume(struct chat_input *in);
/* During an ask: byte c of an escape sequence or a paste, dropped; 1 while more of it follows. */
int chat_input_skip(struct chat_input *in, unsigned char c);
void chat_input_free(struct chat_input *in);

#endif
