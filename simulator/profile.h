/*
 * profile.h - workload profiles for costsim: what a month of sessions
 * looks like (how many, how long, how big, how busy), loaded from JSON
 * (format: docs/simulator.md), and the distributions they draw from.
 *
 * Distributions are sampled with GSL and doubles: they shape the
 * workload, never the money. What they give is turned into whole
 * seconds and bytes before anything is priced. A loaded profile is
 * not changed while it is drawn from, and may be read by several threads
 * at once; each thread draws with its own gsl_rng. The tornado and the
 * break-even (sens.c) move one parameter of a copy (sim_profile_copy,
 * sim_param_set). Errors name the key path and the value:
 * "coding.json: sessions.length.p95: 30 is below the median 60".
 */
#ifndef SIM_PROFILE_H
#define SIM_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

struct sim_err {
    char msg[512];
};

/* Limits of a profile's keys (docs/simulator.md): the loader refuses
 * values past them, and sim_param_set clamps moved values into them. */
#define SIM_MAX_PER_MONTH 10000000  /* sessions.per_month */
#define SIM_MAX_PER_HOUR 100000.0   /* sessions.poisson.per_hour */
#define SIM_MAX_BATCH 100000        /* sessions.batch */
#define SIM_MAX_CONCURRENT 100000   /* sessions.concurrent */
#define SIM_MAX_SESSION_S 2678400.0 /* sessions.length: 31 days */
#define SIM_MAX_VCPU 10000000       /* sandbox.vcpu: 1,000, in 1/10,000 */
#define SIM_MAX_BYTES 1e18          /* sizes, in bytes */
#define SIM_MAX_PAUSE_AFTER_S 86400 /* pauses.after_idle_s */

enum sim_dist_kind {
    SIM_FIXED,       /* value */
    SIM_LOGNORMAL,   /* from median and p95 */
    SIM_EXPONENTIAL, /* mean */
    SIM_HISTOGRAM,   /* bins [from, to) with weights, uniform inside */
};

struct sim_bin {
    double from, to, weight;
};

/* A distribution of a non-negative quantity (seconds, megabytes). */
struct sim_dist {
    enum sim_dist_kind kind;
    double value;         /* fixed */
    double median, p95;   /* lognormal, as written */
    double mu, sigma;     /* lognormal: log-space parameters */
    double mean;          /* exponential */
    double max;           /* draws above it are clamped to it */
    struct sim_bin *bins; /* histogram */
    size_t nbins;
    gsl_ran_discrete_t *table; /* histogram: which bin */
};

/* A draw of d (clamped to d->max). Thread-safe for distinct rngs. */
double sim_dist_draw(const struct sim_dist *d, gsl_rng *rng);
/* The largest value d can give (its max, or its last bin's end). */
double sim_dist_upper(const struct sim_dist *d);

enum sim_arrivals {
    SIM_EVEN,       /* per_month sessions, evenly spaced: no randomness */
    SIM_POISSON,    /* a Poisson process of per_hour, shaped by the day */
    SIM_CONCURRENT, /* concurrent sandboxes, each session followed by the
                       next the second it ends */
};

/* Alternating spells while a session runs. */
struct sim_spell_kind {
    struct sim_dist length; /* seconds */
    double cpu;             /* the fraction of the vCPUs used, as given */
    uint32_t cpu_used;      /* 1/10,000 vCPU: cpu x vcpu, rounded */
};

struct sim_profile {
    char name[65];
    enum sim_arrivals arrivals;
    uint32_t per_month;     /* SIM_EVEN */
    double per_hour;        /* SIM_POISSON: mean arrivals an hour */
    uint32_t concurrent;    /* SIM_CONCURRENT: sandboxes at once */
    double pattern[24];     /* rate factors by UTC hour, mean 1 */
    uint32_t batch;         /* sessions that start at each arrival (>= 1) */
    struct sim_dist length; /* wall-clock seconds of a session */

    uint32_t vcpu; /* 1/10,000 vCPU */
    uint64_t mem_bytes, mem_used_bytes, disk_bytes;

    bool has_activity; /* else: busy for the whole session */
    struct sim_spell_kind busy, idle;
    bool start_idle;

    bool has_egress;
    struct sim_dist egress_mb; /* per session, 10^6 bytes */

    bool pause;             /* idle spells longer than pause_after_s */
    uint32_t pause_after_s; /* are paused past it */
    double pause_probability;
};

/* Parses a profile from JSON text; origin names it in messages (a file
 * name) and may be NULL. NULL on error, with e->msg set. */
struct sim_profile *sim_profile_parse(const char *json, size_t len,
                                      const char *origin, struct sim_err *e);
/* Reads and parses the file at path. */
struct sim_profile *sim_profile_load(const char *path, struct sim_err *e);
/* A copy of p that owns its own histograms, to change and free on its
 * own. NULL when out of memory. */
struct sim_profile *sim_profile_copy(const struct sim_profile *p);
void sim_profile_free(struct sim_profile *p);

/* ---- parameters: what the tornado and the break-even move (param.c) -- */

#define SIM_PARAM_NAME 48 /* the longest key path and its '\0' */
#define SIM_PARAMS_MAX 24 /* more than any profile has */

/*
 * The parameters of p a user would move, each named by its key path, in
 * the profile's order (docs/simulator.md lists them): names[0..n), n
 * returned. A distribution gives its location (value, median, mean, or
 * bins for a histogram) and, lognormal, its p95. With derived, also
 * activity.idle_share (a profile with activity), which the break-even
 * takes and the tornado does not: it moves the idle lengths, already
 * there.
 */
size_t sim_params(const struct sim_profile *p, bool derived,
                  char names[][SIM_PARAM_NAME]);

/* param's value in p, in the profile's units (sessions, an hour's rate,
 * seconds, vCPU, GiB, MB, a fraction), and its step: 1 for a whole
 * number, the smallest change p holds (1/10,000 vCPU; a byte, in GiB),
 * 0 for a real number. -1 if param is not one of p's parameters. */
int sim_param_get(const struct sim_profile *p, const char *param, double *value,
                  double *step);

enum sim_param_status {
    SIM_PARAM_REFUSED = -1, /* p unchanged: why says why */
    SIM_PARAM_SET = 0,      /* to the value, rounded to what p holds */
    SIM_PARAM_CLAMPED = 1,  /* to the bound of the key's range it passed */
};

/*
 * Sets param of p to value (a copy: sim_profile_copy), as the loader
 * would have taken it: rounded to what the profile holds (whole
 * sessions and seconds, 1/10,000 vCPU, whole bytes) and clamped into
 * the key's own range (a fraction to 0-1, a count to at least 1, a
 * session to 31 days), and refused, p unchanged, when the value breaks a
 * rule between keys (a p95 at or below its median) or has no bound to
 * clamp to (a rate at or below 0). The location of a distribution
 * scales all of it (p95, max and bins with it); the vCPUs carry the CPU
 * fractions with them; memory_gib carries memory_used_gib's share.
 * *used receives the value p holds after (sim_param_get's), why (n
 * bytes, may be NULL) what was clamped or refused.
 */
enum sim_param_status sim_param_set(struct sim_profile *p, const char *param,
                                    double value, double *used, char *why,
                                    size_t n);

#endif
