/*
 * The front matter of a Markdown file, a small strict subset of YAML (docs/contract.md §23.1): a
 * first line `---`, then `key: value` lines, blank lines and `# comments`, a closing `---` line;
 * the rest is the body. A value is a plain string (trimmed), a quoted one ("…" with \" \\ \n \t,
 * or '…' with ''), a `[a, b]` list, or empty with `- item` lines below it (a list). Anything else
 * (indented continuations, block scalars, nested maps, a duplicate key) is refused with the line
 * and the reason: a file the user wrote is checked once, here, and never half-read.
 */
#ifndef BASE_FRONTMATTER_H
#define BASE_FRONTMATTER_H

#include <stddef.h>

#include <jansson.h>

/*
 * Parses text[0..len) (UTF-8, checked by the caller). On success returns 0 with *fields a new
 * object (key -> string, or array of strings; empty when there is no front matter) and *body the
 * offset where the body starts; on failure -1 with why (a NUL-terminated reason, "line N: …").
 */
int frontmatter_parse(const char *text, size_t len, json_t **fields, size_t *body, char *why, size_t whysize);

#endif
