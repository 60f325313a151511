/*
 * The diff shown for write and edit (docs/contract.md §16.5), ready for ACP's
 * {type: "diff", path, oldText, newText}. While both texts fit in WS_DIFF_WHOLE_MAX, oldText
 * and newText are the whole files. Beyond, they are made of the changed hunks only, each with
 * WS_DIFF_CONTEXT lines of context, in file order, and every run of unchanged lines left out
 * (before, between and after the hunks) is one line, the same in both texts:
 *   "… <n> unchanged lines …\n"       (U+2026; "line" when n is 1)
 * so the editor shows it as context. A new file (old NULL) is its whole text, whatever its
 * size. Texts are valid UTF-8 (invalid bytes of an old file shown as U+FFFD).
 *
 * Lines are compared whole ('\n' included). The edit script is Myers' shortest one when it
 * needs at most WS_DIFF_MAX_EDITS line insertions and deletions after the common head and tail
 * are taken off; otherwise everything between head and tail is one change (still correct,
 * only coarser).
 */
#ifndef WORKSPACE_DIFF_H
#define WORKSPACE_DIFF_H

#include <stddef.h>

#define WS_DIFF_WHOLE_MAX (256u << 10)
#define WS_DIFF_CONTEXT 3u
#define WS_DIFF_MAX_EDITS 1000u

/* One hunk: 1-based first lines and line counts, context included (a count may be 0). */
struct ws_hunk {
	size_t old_line, old_count;
	size_t new_line, new_count;
};

/* Invariant: hunks are in file order and never touch (> 2 * context lines apart). */
struct ws_diff {
	char *old_text;			/* owned, NUL-terminated; NULL for a new file */
	char *new_text;			/* owned, NUL-terminated */
	int partial;			/* 1: the texts are the hunks */
	struct ws_hunk *hunks;		/* owned; none when nothing changed */
	size_t nhunks;
};

/* old: borrowed, NULL for a new file; new_text: borrowed. d is the caller's to free. */
void ws_diff_make(struct ws_diff *d, const char *old, size_t old_len, const char *new_text,
    size_t new_len);
void ws_diff_free(struct ws_diff *d);

#endif
