/*
 * stdin line framing (SPEC §3.1). Pure framing (acp_frame_*) is separate from
 * the ev_io watcher so tests can feed it any split of bytes.
 */
#ifndef ACP_READER_H
#define ACP_READER_H

#include <stddef.h>

#include <ev.h>

#include "base/buf.h"

#define ACP_LINE_MAX ((size_t)64 * 1024 * 1024)

/* line: borrowed for the call, without its '\n' (a trailing '\r' removed). */
typedef void acp_line_fn(void *arg, const char *line, size_t len);
/* Called once per line that went over the limit (after its first ACP_LINE_MAX bytes). */
typedef void acp_overlong_fn(void *arg);

/* Invariant: data[0..scanned) holds no '\n'; skipping drops bytes up to the next '\n'. */
struct acp_frame {
	struct buf in;
	size_t scanned;
	size_t max;
	int skipping;
	acp_line_fn *on_line;
	acp_overlong_fn *on_overlong;
	void *arg;
};

void acp_frame_init(struct acp_frame *f, size_t max, acp_line_fn *on_line,
    acp_overlong_fn *on_overlong, void *arg);
void acp_frame_free(struct acp_frame *f);
void acp_frame_feed(struct acp_frame *f, const char *data, size_t len);	/* data: borrowed */
void acp_frame_eof(struct acp_frame *f);	/* an unterminated tail is a last line */

struct acp_reader {
	ev_io io;		/* first member */
	struct ev_loop *loop;
	int fd;
	int eof;
	struct acp_frame frame;
	void (*on_eof)(void *arg);
	void *arg;
};

void acp_reader_init(struct acp_reader *r, struct ev_loop *loop, int fd, acp_line_fn *on_line,
    acp_overlong_fn *on_overlong, void (*on_eof)(void *), void *arg);
void acp_reader_pause(struct acp_reader *r);
void acp_reader_resume(struct acp_reader *r);
void acp_reader_free(struct acp_reader *r);

#endif
