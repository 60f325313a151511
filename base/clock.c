/* Clock readings in milliseconds since the epoch. */
#include "base/clock.h"

#include <stdio.h>
#include <time.h>

void
clock_init(struct clock *c, int deterministic)
{
	c->deterministic = deterministic;
	c->next = CLOCK_DETERMINISTIC_START;
}

void
clock_advance_past(struct clock *c, int64_t t)
{
	if (c->deterministic && c->next <= t)
		c->next = t + 1;
}

int64_t
clock_now_ms(struct clock *c)
{
	struct timespec ts;

	if (c->deterministic)
		return c->next++;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
clock_iso8601(int64_t ms, char *out, unsigned long size)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&secs, &tm);
	snprintf(out, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
	    tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}
