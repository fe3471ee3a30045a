/*
 * costsim_int.h - what costsim's files share beyond costsim.h (the
 * books, the run and its outputs); private to costsim/.
 */
#ifndef COSTSIM_INT_H
#define COSTSIM_INT_H

#include <stdio.h>
#include <time.h>

#include <jansson.h>

#include "costsim.h"

/* A progress bar on f (stderr), drawn only if f is a terminal
 * (progress.c). cs_progress_update is a sim_mc_opts.progress callback,
 * its arg the struct cs_progress; cs_progress_end erases the bar. */
struct cs_progress {
    FILE *f;
    bool on, shown;
    size_t nbooks;
    struct timespec start, last;
};
void cs_progress_init(struct cs_progress *p, FILE *f, size_t nbooks);
void cs_progress_update(size_t trials, size_t max, size_t open, void *arg);
void cs_progress_end(struct cs_progress *p);

/* ---- the command lines (args.c) ------------------------------------- */

/* The simulated month by default: a 30-day month, so per-month figures
 * are not skewed by a 31st day. */
#define CS_YEAR 2026
#define CS_MONTH 11

/* Prints "CMD: " and the message, then where the usage is, on stderr;
 * returns 2, the exit status of a usage error. */
int cs_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A whole number at most max, no sign. */
bool cs_parse_u64(const char *s, uint64_t max, uint64_t *out);
/* The file of --profile arg: arg itself if it names a path (a '/' in
 * it) or a file that exists, else the installed profile of that name
 * (meter_data_dir's profiles/NAME.json, ".json" added if missing), in
 * out (n bytes): "coding-agent" runs the shipped one from anywhere. */
const char *cs_profile_path(const char *arg, char *out, size_t n);
/* A number ending at stop ('\0': the end); *rest (if not NULL) then
 * points past stop. */
bool cs_parse_double(const char *s, char stop, double *out, const char **rest);

/* The Monte Carlo's options, which the comparison and breakeven share:
 * their getopt values, for struct option tables as CS_MC_OPTIONS. */
enum {
    CS_OPT_SEED = 0x100,
    CS_OPT_PRECISION,
    CS_OPT_MAX_TRIALS,
    CS_OPT_THREADS,
    CS_OPT_MONTH,
    CS_OPT_FIRST_MONTH,
    CS_OPT_MEMORY_LIMIT,
    CS_OPT_METHOD,
    CS_OPT_MONTHS,
    CS_OPT_GROWTH,
};
/* clang-format off */
#define CS_MC_OPTIONS                                              \
    {"seed", required_argument, NULL, CS_OPT_SEED},                \
    {"precision", required_argument, NULL, CS_OPT_PRECISION},      \
    {"max-trials", required_argument, NULL, CS_OPT_MAX_TRIALS},    \
    {"threads", required_argument, NULL, CS_OPT_THREADS},          \
    {"month", required_argument, NULL, CS_OPT_MONTH},              \
    {"first-month", no_argument, NULL, CS_OPT_FIRST_MONTH},        \
    {"memory-limit", required_argument, NULL, CS_OPT_MEMORY_LIMIT}, \
    {"method", required_argument, NULL, CS_OPT_METHOD},            \
    {"months", required_argument, NULL, CS_OPT_MONTHS},            \
    {"growth", required_argument, NULL, CS_OPT_GROWTH}
/* clang-format on */
/* Their defaults: seed 1, precision 0.005, 30 to 1,000 trials, every
 * core, 2026-11, a steady-state month, at most CS_MEMORY_MIB MiB, one
 * month, no growth. */
#define CS_MONTHS_MAX 36
#define CS_MEMORY_MIB 4096 /* as meterctl rate's --memory-limit */
void cs_mc_defaults(struct sim_mc_opts *o);
/* Takes option c (its argument arg) into o if it is one of them: 0
 * taken, 2 a bad value (the usage error printed for cmd), -1 not one of
 * them. */
int cs_mc_option(const char *cmd, int c, const char *arg,
                 struct sim_mc_opts *o);
/* What the options say together, once all are read: 0, or 2 (the
 * usage error printed for cmd). */
int cs_mc_check(const char *cmd, const struct sim_mc_opts *o);

/* costsim replay (replay.c): argv[0] is "replay". Returns the exit
 * status. */
int cs_replay_main(int argc, char **argv);

/* The tornado (sens_out.c): after the table, each priced book in the
 * table's order (order[0..nbooks)); in JSON, run's settings into root
 * and book i's swings into its object. 0, or -1 when out of memory. */
int cs_print_tornado(FILE *f, const struct cs_run *run, const size_t *order);
int cs_tornado_json(json_t *root, const struct cs_run *run);
int cs_tornado_book_json(json_t *book, const struct cs_run *run, size_t i);

/* costsim breakeven (breakeven.c): argv[0] is "breakeven". Returns the
 * exit status. */
int cs_breakeven_main(int argc, char **argv);

#endif
