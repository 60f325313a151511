/* What every benchmark needs: a monotonic clock and a sort order for medians. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

double bench_now_ms(void);
int bench_cmp_double(const void *a, const void *b);	/* qsort order of doubles */

#endif
