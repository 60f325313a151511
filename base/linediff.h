/*
 * The one line diff (Myers' greedy search between a common head and tail): which lines of an
 * old text a shortest edit script removes and which lines of a new text it adds. The workspace
 * turns the marks into the hunks an editor reviews (workspace/diff.c), the chat into the unified
 * diff a terminal shows (chat/diff.c).
 */
#ifndef BASE_LINEDIFF_H
#define BASE_LINEDIFF_H

#include <stddef.h>
#include <stdint.h>

/* A text cut into lines: line i is s[off[i]..off[i+1]), its '\n' included (a last line without
 * one counts); h[i] its hash. noeol: lines compare without their '\n'. */
struct linediff_lines {
	const char *s;
	size_t n;
	size_t *off;		/* n + 1 entries, owned */
	uint64_t *h;		/* owned */
	int noeol;
};

void linediff_split(struct linediff_lines *l, const char *s, size_t len, int noeol);
void linediff_lines_free(struct linediff_lines *l);
/* Whether line i of a and line j of b are the same line. */
int linediff_same(const struct linediff_lines *a, size_t i, const struct linediff_lines *b, size_t j);
/* Line i's length without its '\n'. */
size_t linediff_len(const struct linediff_lines *l, size_t i);

/*
 * Marks del[i] for every line of a the script removes and ins[j] for every line of b it adds
 * (del: a->n bytes, ins: b->n bytes, zeroed by the caller). Past max_edits changes or work_max
 * steps the search gives up and every line between the common head and tail is marked.
 */
void linediff(const struct linediff_lines *a, const struct linediff_lines *b, size_t max_edits, size_t work_max,
    unsigned char *del, unsigned char *ins);

#endif
