/*
 * args.c - what costsim's commands share on their command lines: usage
 * errors, numbers, and the Monte Carlo's options (the comparison and
 * breakeven take the same ones).
 */
#include "costsim_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meter_util.h"

int
cs_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(%s --help for usage)\n", cmd);
    return 2;
}

bool
cs_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!*s || *s == '-')
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return false;
    *out = v;
    return true;
}

const char *
cs_profile_path(const char *arg, char *out, size_t n)
{
    char dir[4096];
    struct meter_err e;
    if (strchr(arg, '/') || access(arg, F_OK) == 0 ||
        meter_data_dir("profiles", dir, sizeof(dir), &e) < 0)
        return arg;
    size_t len = strlen(arg);
    bool ext = len > 5 && strcmp(arg + len - 5, ".json") == 0;
    int k = snprintf(out, n, "%s/%s%s", dir, arg, ext ? "" : ".json");
    if (k < 0 || (size_t)k >= n || access(out, F_OK) != 0)
        return arg; /* the error then names what was given */
    return out;
}

bool
cs_parse_double(const char *s, char stop, double *out, const char **rest)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || end == s || *end != stop)
        return false;
    *out = x;
    if (rest)
        *rest = end + 1;
    return true;
}

/* Every core online (at most 64). */
static unsigned
cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
}

void
cs_mc_defaults(struct sim_mc_opts *o)
{
    *o = (struct sim_mc_opts){.seed = 1,
                              .precision = 0.005,
                              .min_trials = SIM_MIN_TRIALS,
                              .max_trials = 1000,
                              .threads = cores(),
                              .year = CS_YEAR,
                              .month = CS_MONTH,
                              .memory_mib = CS_MEMORY_MIB,
                              .months = 1,
                              .controlled = true};
}

int
cs_mc_option(const char *cmd, int c, const char *arg, struct sim_mc_opts *o)
{
    uint64_t v;
    double x;
    int y, mo, end = 0;
    switch (c) {
    case CS_OPT_SEED:
        /* At most INT64_MAX, so that JSON gives it back as it was. */
        if (!cs_parse_u64(arg, INT64_MAX, &o->seed))
            return cs_usage_error(cmd,
                                  "--seed '%s' is not a whole number from 0 "
                                  "to 9223372036854775807",
                                  arg);
        return 0;
    case CS_OPT_PRECISION:
        if (!cs_parse_double(arg, '\0', &x, NULL) || !(x > 0 && x < 1))
            return cs_usage_error(cmd,
                                  "--precision '%s' is not a number "
                                  "between 0 and 1",
                                  arg);
        o->precision = x;
        return 0;
    case CS_OPT_MAX_TRIALS:
        if (!cs_parse_u64(arg, 1000000, &v) || v < 2)
            return cs_usage_error(cmd,
                                  "--max-trials '%s' is not a whole number "
                                  "from 2 to 1,000,000",
                                  arg);
        o->max_trials = v;
        if (o->min_trials > v)
            o->min_trials = v;
        return 0;
    case CS_OPT_THREADS:
        if (!cs_parse_u64(arg, 64, &v) || v < 1)
            return cs_usage_error(cmd,
                                  "--threads '%s' is not a whole number "
                                  "from 1 to 64",
                                  arg);
        o->threads = (unsigned)v;
        return 0;
    case CS_OPT_MONTH:
        if (sscanf(arg, "%4d-%2d%n", &y, &mo, &end) != 2 || end != 7 ||
            arg[end] || y < 1970 || y > 9999 || mo < 1 || mo > 12)
            return cs_usage_error(cmd, "--month '%s' is not a month YYYY-MM",
                                  arg);
        o->year = y;
        o->month = mo;
        return 0;
    case CS_OPT_FIRST_MONTH:
        o->first_month = true;
        return 0;
    case CS_OPT_MEMORY_LIMIT:
        /* As meterctl rate's: whole MiB, 1 to 2^40. */
        if (meter_parse_uint(arg, 1, (uint64_t)1 << 40, &v) < 0)
            return cs_usage_error(cmd,
                                  "--memory-limit '%s' is not a number of "
                                  "MiB from 1 to 1099511627776",
                                  arg);
        o->memory_mib = v;
        return 0;
    case CS_OPT_MONTHS:
        if (!cs_parse_u64(arg, CS_MONTHS_MAX, &v) || v < 1)
            return cs_usage_error(cmd,
                                  "--months '%s' is not a whole number "
                                  "from 1 to %d",
                                  arg, CS_MONTHS_MAX);
        o->months = (unsigned)v;
        return 0;
    case CS_OPT_GROWTH:
        /* A percent a month: the arrivals of month k are times (1 +
         * PCT / 100)^k. */
        if (!cs_parse_double(arg, '\0', &x, NULL) || !(x > -100 && x <= 1000))
            return cs_usage_error(cmd,
                                  "--growth '%s' is not a percent a month "
                                  "above -100 and at most 1000",
                                  arg);
        o->growth = x / 100;
        return 0;
    case CS_OPT_METHOD:
        if (strcmp(arg, "controlled") != 0 && strcmp(arg, "plain") != 0)
            return cs_usage_error(
                cmd, "--method '%s' is not controlled or plain", arg);
        o->controlled = strcmp(arg, "controlled") == 0;
        return 0;
    default:
        return -1;
    }
}

int
cs_mc_check(const char *cmd, const struct sim_mc_opts *o)
{
    if (o->growth != 0 && o->months < 2)
        return cs_usage_error(cmd, "--growth needs --months 2 or more");
    return 0;
}
