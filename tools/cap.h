/*
 * The cap on a tool's text to the model (docs/contract.md §19, §20.1): at most TOOLS_CAP bytes. A longer
 * text keeps its first TOOLS_CAP_HEAD bytes and its last bytes, cut on UTF-8 boundaries, with
 *   "[… <n> bytes omitted; full output: <spill path>]"
 * on a line of its own between; the whole text goes to <spill dir>/<name>.out (0600, a new
 * file: "-2", "-3", ... before ".out" when the name is taken). bash keeps its own 8 + 24 KiB.
 */
#ifndef TOOLS_CAP_H
#define TOOLS_CAP_H

#include <stddef.h>

struct agent;

#define TOOLS_CAP ((size_t)256 * 1024)
#define TOOLS_CAP_HEAD ((size_t)128 * 1024)

/*
 * Caps *text (owned, *len bytes, NUL-terminated) for a's tree, replacing it when it is longer.
 * name: the spill file's name (no '/'). When the spill cannot be written the text is still cut
 * and the line says "[… <n> bytes omitted; the spill failed: <why>]".
 */
void tools_cap_text(struct agent *a, const char *name, char **text, size_t *len);

#endif
