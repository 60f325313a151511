/*
 * Newline-delimited framing (ACP stdin, docs/contract.md §3.1; MCP stdio servers, §18). Pure framing (frame_*) is separate from
 * the ev_io watcher so tests can feed it any split of bytes.
 */
#ifndef BASE_READER_H
#define BASE_READER_H

#include <stddef.h>

#include <ev.h>

#include "base/buf.h"

#define READER_LINE_MAX ((size_t)64 * 1024 * 1024)

/* line: borrowed for the call, without its '\n' (a trailing '\r' removed). */
typedef void reader_line_fn(void *arg, const char *line, size_t len);
/* Called once per line that went over the limit (after its first READER_LINE_MAX bytes). */
typedef void reader_overlong_fn(void *arg);

/* Invariant: data[0..scanned) holds no '\n'; skipping drops bytes up to the next '\n'. */
struct frame {
	struct buf in;
	size_t scanned;
	size_t max;
	int skipping;
	reader_line_fn *on_line;
	reader_overlong_fn *on_overlong;
	void *arg;
	int emitting;		/* on_line runs: its line may be taken (frame_take) */
	int taken;
	size_t next;		/* while emitting: where the bytes after the line begin */
};

void frame_init(struct frame *f, size_t max, reader_line_fn *on_line,
    reader_overlong_fn *on_overlong, void *arg);
void frame_free(struct frame *f);
void frame_feed(struct frame *f, const char *data, size_t len);	/* data: borrowed */
void frame_eof(struct frame *f);	/* an unterminated tail is a last line */
/* Called from on_line only: the buffer that holds the line is the caller's from now on (free()
 * it, even before on_line returns; the line passed stays where it is in it), and the frame goes
 * on with a new one holding what followed the line. NULL when no line is being emitted, or it was
 * taken already. A large line handed to a worker so, is never copied. */
char *frame_take(struct frame *f);

struct reader {
	ev_io io;		/* first member */
	struct ev_loop *loop;
	int fd;
	int eof;
	struct frame frame;
	void (*on_eof)(void *arg);
	void *arg;
};

void reader_init(struct reader *r, struct ev_loop *loop, int fd, reader_line_fn *on_line,
    reader_overlong_fn *on_overlong, void (*on_eof)(void *), void *arg);
void reader_pause(struct reader *r);
void reader_resume(struct reader *r);
void reader_free(struct reader *r);

#endif
