/* The program's only clock: wall time, or a stepping clock for determinism. */
#ifndef BASE_CLOCK_H
#define BASE_CLOCK_H

#include <stdint.h>

#define CLOCK_DETERMINISTIC_START 1789000000000LL

struct clock {
	int deterministic;
	int64_t next;		/* deterministic: the next reading */
};

void clock_init(struct clock *c, int deterministic);
/* Never let a deterministic clock run behind t (used after a restart). */
void clock_advance_past(struct clock *c, int64_t t);
int64_t clock_now_ms(struct clock *c);
/* Formats ms since the epoch as ISO 8601 UTC with milliseconds into out (>= 25 bytes). */
void clock_iso8601(int64_t ms, char *out, unsigned long size);

#endif
