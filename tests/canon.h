/* Snapshot normalisation: UUIDs, times, paths and agentInfo.version become stable tokens. */
#ifndef TESTS_CANON_H
#define TESTS_CANON_H

#include <jansson.h>

struct canon;

/* paths: replaced by names[i] wherever they appear in strings (borrowed, NULL-terminated). */
struct canon *canon_new(const char *const *paths, const char *const *names);
void canon_free(struct canon *c);
/* Normalises one line; returns owned text (non-JSON lines get only string replacements). */
char *canon_line(struct canon *c, const char *line);

#endif
