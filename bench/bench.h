/*
 * bench.h - what the benchmarks share: a monotonic clock and sorting of
 * timings.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double
bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int
bench_by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts n timings in place and returns the q-quantile (0 to 1). */
static inline double
bench_quantile(double *v, size_t n, double q)
{
    qsort(v, n, sizeof(*v), bench_by_double);
    return v[(size_t)((double)(n - 1) * q)];
}

/* Prints the machine's load average, "when" it was read. */
static inline void
bench_print_loadavg(const char *when)
{
    char buf[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof(buf), f))
            snprintf(buf, sizeof(buf), "?\n");
        fclose(f);
    }
    printf("  load average %s: %s", when, buf);
}

/* The median, least and greatest of n figures (sorted in place) as
 * "median (min-max)", each with `decimals` decimals, into out (96
 * bytes). */
static inline void
bench_spread(char out[96], double *v, size_t n, int decimals)
{
    qsort(v, n, sizeof(*v), bench_by_double);
    snprintf(out, 96, "%.*f (%.*f-%.*f)", decimals, v[n / 2], decimals, v[0],
             decimals, v[n - 1]);
}

#endif
