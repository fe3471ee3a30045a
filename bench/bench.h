/*
 * bench.h - what the benchmarks share: a monotonic clock and sorting of
 * timings.
 */
#ifndef BENCH_H
#define BENCH_H

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

#endif
