/* Reading the person's lines and keys. */
#include "chat/input.h"

#include <errno.h>
#include <string.h>
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
		if (!in->ed->shown) {
			/* the editor is not drawn: keys wait until it is (chat_input_resume) */
			ev_io_stop(in->loop, &in->io);
			in->paused = 1;
			return;
		}
		chat_edit_read(in->ed);	/* the editor reads its key itself */
		return;
	}
	if (in->ed && in->keys && in->skip) {
		/* the rest of a sequence an ask does not take (an arrow, a paste): dropped */
		if (read(w->fd, chunk, 1) == 1)
			in->skip = chat_input_skip(in, (unsigned char)chunk[0]);
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
	if (in->ed && in->keys && n == 1 && chunk[0] == '\033') {
		in->seqlen = 0;
		in->skip = chat_input_skip(in, '\033');	/* an escape sequence is not an answer */
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

/*
 * During an ask, a byte of an escape sequence (an arrow, a function key) or of a bracketed paste
 * is no answer: each is dropped up to its end. 1 while there is more of it to drop.
 */
int
chat_input_skip(struct chat_input *in, unsigned char c)
{
	static const char paste_begin[] = "\033[200~", paste_end[] = "\033[201~";
	size_t n;

	if (in->seqlen < sizeof(in->seq))
		in->seq[in->seqlen++] = (char)c;
	n = in->seqlen;
	if (in->pasting) {
		/* the last bytes seen, to find the paste's end */
		if (n >= sizeof(in->seq)) {
			memmove(in->seq, in->seq + 1, sizeof(in->seq) - 1);
			in->seqlen--;
			n--;
		}
		if (n >= sizeof(paste_end) - 1 && memcmp(in->seq + n - (sizeof(paste_end) - 1), paste_end,
		    sizeof(paste_end) - 1) == 0)
			return in->pasting = 0, in->seqlen = 0, 0;
		return 1;
	}
	if (n == sizeof(paste_begin) - 1 && memcmp(in->seq, paste_begin, n) == 0) {
		in->pasting = 1;
		in->seqlen = 0;
		return 1;
	}
	if (n == 1)
		return 1;					/* ESC */
	if (in->seq[1] == 'O')
		return n < 3 ? 1 : (in->seqlen = 0, 0);	/* SS3: one more byte */
	if (in->seq[1] != '[' || n >= sizeof(in->seq) || (n > 2 && c >= 0x40 && c <= 0x7e))
		return in->seqlen = 0, 0;			/* ended (or not a sequence we know) */
	return 1;
}

void
chat_input_resume(struct chat_input *in)
{
	if (in->paused && !in->eof) {
		in->paused = 0;
		ev_io_start(in->loop, &in->io);
	}
}

void
chat_input_init(struct chat_input *in, struct ev_loop *loop, int fd, reader_line_fn *on_line,
    void (*on_key)(void *, int), void (*on_eof)(void *), void *arg)
{
	in->loop = loop;
	in->keys = 0;
	in->ed = NULL;
	in->paused = 0;
	in->skip = 0;
	in->pasting = 0;
	in->seqlen = 0;
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
