/*
 * profile.h - workload profiles for costsim: what a month of sessions
 * looks like (how many, how long, how big, how busy), loaded from JSON
 * (format: docs/simulator.md), and the distributions they draw from.
 *
 * Distributions are sampled with GSL and doubles: they shape the
 * workload, never the money. What they give is turned into whole
 * seconds and bytes before anything is priced. A loaded profile is
 * immutable and may be read by several threads at once; each thread
 * draws with its own gsl_rng. Errors name the key path and the value:
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
    SIM_EVEN,    /* per_month sessions, evenly spaced: no randomness */
    SIM_POISSON, /* a Poisson process of per_hour, shaped by the day */
};

/* Alternating spells while a session runs. */
struct sim_spell_kind {
    struct sim_dist length; /* seconds */
    uint32_t cpu_used;      /* 1/10,000 vCPU, from the fraction given */
};

struct sim_profile {
    char name[65];
    enum sim_arrivals arrivals;
    uint32_t per_month;     /* SIM_EVEN */
    double per_hour;        /* SIM_POISSON: mean arrivals an hour */
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
void sim_profile_free(struct sim_profile *p);

#endif
