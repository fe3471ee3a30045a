/*
 * bench.h - what the benchmarks share: a monotonic clock, sorting of
 * timings, and numbers read from arguments and from what tools print,
 * checked (a figure read wrong is worse than none).
 */
#ifndef BENCH_H
#define BENCH_H

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Whether a number parsed from s ended at end as wanted: where `then`
 * begins, or ("" ) at the end of s, blanks and a newline aside. */
static inline int
bench_ends(const char *end, const char *then)
{
    if (*then)
        return strncmp(end, then, strlen(then)) == 0;
    return end[strspn(end, " \t\r\n")] == '\0';
}

/* The integer at the start of s (blanks before it skipped) that ends
 * where then begins (bench_ends): 0 and *out, or -1 if there is none,
 * it ends elsewhere, or it overflows. */
static inline int
bench_int(const char *s, const char *then, long long *out)
{
    s += strspn(s, " \t");
    if ((*s < '0' || *s > '9') && *s != '-')
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || errno == ERANGE || !bench_ends(end, then))
        return -1;
    *out = v;
    return 0;
}

/* The same for a decimal number (finite). */
static inline int
bench_num(const char *s, const char *then, double *out)
{
    s += strspn(s, " \t");
    if ((*s < '0' || *s > '9') && *s != '-' && *s != '.')
        return -1;
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || !bench_ends(end, then))
        return -1;
    *out = v;
    return 0;
}

/* argv[i] as an integer in [0, max], def if there are fewer arguments;
 * anything else ends the program (status 2) saying so. */
static inline long long
bench_arg(int argc, char **argv, int i, long long def, long long max)
{
    long long v;
    if (argc <= i)
        return def;
    if (bench_int(argv[i], "", &v) < 0 || v < 0 || v > max) {
        fprintf(stderr, "%s: argument %d '%s' is not a number from 0 to %lld\n",
                argv[0], i, argv[i], max);
        exit(2);
    }
    return v;
}

#endif
