/*
 * Local file services behind read, write and edit (docs/contract.md §16.2-§16.3): loading a file, the
 * line-numbered text the model reads, content checks and the atomic write, the literal edit.
 * Confinement is workspace/path.h's; the observation rule workspace/obs.h's; the diff shown
 * workspace/diff.h's. <p> in messages is the path as the caller gave it.
 *
 * Errors besides path.h's:
 *   FS_TOO_LARGE      file "<p>" is larger than <limit> (<n> bytes)           (load, edit)
 *                     content for "<p>" is larger than 8 MiB (<n> bytes)      (write)
 *                     the edit would make "<p>" larger than 8 MiB (<n> bytes) (edit)
 *   FS_NOT_UTF8       content for "<p>" is not valid UTF-8                     (write)
 *                     file "<p>" is not valid UTF-8                            (edit)
 *                     new_string is not valid UTF-8                            (edit)
 *   FS_BINARY         file "<p>" is binary (a NUL byte in its first 8 KiB)     (read)
 *   EDIT_NO_MATCH     old_string not found in "<p>"
 *   EDIT_AMBIGUOUS    old_string occurs <n> times in "<p>"; add context or set replace_all
 *   INVALID_ARGUMENT  invalid arguments: "old_string" must not be empty
 */
#ifndef WORKSPACE_FS_H
#define WORKSPACE_FS_H

#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "workspace/path.h"

#define WS_FILE_MAX (8u << 20)		/* bytes write and edit handle */
#define WS_READ_MAX (64u << 20)		/* bytes ws_fs_load takes for read (memory bound) */
#define WS_READ_TEXT_MAX (256u << 10)	/* bytes of text one read returns, footer included */
#define WS_READ_LINES 2000u		/* default limit */
#define WS_LINE_CHARS 2000u		/* characters shown of one line */
#define WS_BINARY_SCAN 8192u		/* a NUL in this many first bytes: FS_BINARY */

/*
 * Reads the whole regular file at path (borrowed) into out (appended; the caller's), at most
 * max bytes (FS_TOO_LARGE beyond). where: as ws_path_open_read fills it (also after
 * FS_NOT_FOUND and FS_IS_DIRECTORY); the caller frees it.
 */
int ws_fs_load(const struct ws_roots *r, const char *path, size_t max, struct ws_path *where,
    struct buf *out, struct err *err);

/* What one read showed: lines first..last (1-based) of total; 0s when nothing was shown. */
struct ws_read_span {
	size_t first, last, total;
	int more;			/* lines remain after last: the footer was added */
};

/*
 * The model's text for data[0..len) (borrowed) from line offset (1-based; 0 means 1) for at
 * most limit lines (0 means WS_READ_LINES), appended to out: "%6zu\t<line>" per line, joined
 * by '\n' (a line's own trailing '\r' dropped), each cut at WS_LINE_CHARS characters, invalid
 * UTF-8 shown as U+FFFD, lines stopped before the text would pass WS_READ_TEXT_MAX; then, when
 * lines remain, "\n[lines <a>-<b> of <n>; continue with offset=<b+1>]". An empty file gives "".
 * An offset past the last line is no error: the text is
 * "[offset <o> is past the end; the file has <n> lines]" and span is 0s but total.
 * FS_BINARY is the only error.
 */
int ws_fs_read_render(const char *p, const char *data, size_t len, size_t offset, size_t limit,
    struct buf *out, struct ws_read_span *span, struct err *err);

/*
 * write's local path: checks the content (FS_TOO_LARGE above WS_FILE_MAX, FS_NOT_UTF8), then
 * ws_path_write (flags: WS_WRITE_SYNC). The observation check is the caller's, before.
 */
int ws_fs_write(const struct ws_roots *r, const char *path, const char *data, size_t len,
    int flags, struct ws_path *out, struct err *err);

/* One edit's outcome. */
struct ws_edit {
	struct buf text;		/* the new content (owned) */
	size_t count;			/* replacements made */
	size_t first_line;		/* 1-based line of the first replacement */
	int crlf;			/* matched only once '\n' was turned into "\r\n" */
};

/*
 * Replaces old_string by new_string (both borrowed, NUL-terminated) in old[0..len), literally:
 * exactly one occurrence, or every one (non-overlapping, left to right) when replace_all. In a
 * file holding "\r\n", a failed match is tried once more with each bare '\n' of both strings
 * turned into "\r\n". Checks the file (FS_TOO_LARGE, FS_NOT_UTF8) and the result's size.
 * out: initialised here, the caller's (ws_edit_free) on success and on failure alike.
 */
int ws_fs_edit(const char *p, const char *old, size_t len, const char *old_string,
    const char *new_string, int replace_all, struct ws_edit *out, struct err *err);
void ws_edit_free(struct ws_edit *e);

#endif
