/* Reading the person's lines and keys. */
#include "chat/input.h"

#include <errno.h>
#include <unistd.h>

#define CHAT_INPUT_CHUNK 4096

static void
chat_input_overlong(void *arg)
{
	(void)arg;	/* a line over 64 MiB typed or piped: dropped */
}

static void
chat_input_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct chat_input *in = (struct chat_input *)w;
	char chunk[CHAT_INPUT_CHUNK];
	ssize_t n;

	(void)loop;
	(void)revents;
	if (in->ed && !in->keys) {
		chat_edit_read(in->ed);	/* the editor reads its key itself */
		return;
	}
	/* With an editor, one key at a time: what follows an ask's answer is the editor's to read. */
	n = read(w->fd, chunk, in->ed ? 1 : sizeof(chunk));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		chat_input_stop(in);
		in->eof = 1;
		frame_eof(&in->frame);
		in->on_eof(in->arg);
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (!in->keys) {
			/* The ask was answered: what follows it is typed text. */
			frame_feed(&in->frame, chunk + i, (size_t)(n - i));
			return;
		}
		in->on_key(in->arg, (unsigned char)chunk[i]);
		if (!ev_is_active(&in->io))
			return;		/* the key ended the chat */
	}
}

void
chat_input_init(struct chat_input *in, struct ev_loop *loop, int fd, reader_line_fn *on_line,
    void (*on_key)(void *, int), void (*on_eof)(void *), void *arg)
{
	in->loop = loop;
	in->keys = 0;
	in->ed = NULL;
	in->eof = 0;
	in->on_key = on_key;
	in->on_eof = on_eof;
	in->arg = arg;
	frame_init(&in->frame, READER_LINE_MAX, on_line, chat_input_overlong, arg);
	ev_io_init(&in->io, chat_input_cb, fd, EV_READ);
	ev_io_start(loop, &in->io);
}

void
chat_input_stop(struct chat_input *in)
{
	ev_io_stop(in->loop, &in->io);
}

void
chat_input_free(struct chat_input *in)
{
	chat_input_stop(in);
	frame_free(&in->frame);
}
