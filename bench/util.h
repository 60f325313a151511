/* What every benchmark needs: a monotonic clock and a sort order for medians. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <stdio.h>

double bench_now_ms(void);
int bench_cmp_double(const void *a, const void *b);	/* qsort order of doubles */
/*
 * Starts argv (argv[0] is the program) with its stdin and stdout on pipes (*to, *from; owned);
 * its stderr goes to /dev/null unless BENCH_DEBUG is set. Returns the pid; exits on failure.
 */
/* A "<field>  <n> kB" line of /proc/<pid>/status (VmRSS:, VmHWM:), in kB; -1 when absent. */
long bench_proc_kb(int pid, const char *field);
int bench_spawn(const char *const argv[], FILE **to, FILE **from);
/* The port a mock server writes to port_file once it listens (waits up to 10 s); 0 if none. */
int bench_wait_port(const char *port_file);

#endif
