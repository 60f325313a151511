/* Snapshot normalisation: UUIDs, times, paths and agentInfo.version become stable tokens. */
#ifndef SCENARIO_CANON_H
#define SCENARIO_CANON_H

#include <regex.h>
#include <stddef.h>

#include <jansson.h>

struct scenario_canon;

/* paths: replaced by names[i] wherever they appear in strings (borrowed, NULL-terminated). */
struct scenario_canon *scenario_canon_new(const char *const *paths, const char *const *names);
void scenario_canon_free(struct scenario_canon *c);
/* Every match of masks[0..n) in a string becomes <masked> (scenario.json's "mask"); borrowed. */
void scenario_canon_masks(struct scenario_canon *c, const regex_t *masks, size_t n);
/* Normalises one line; returns owned text (non-JSON lines get only string replacements). */
char *scenario_canon_line(struct scenario_canon *c, const char *line);

#endif
