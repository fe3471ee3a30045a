/*
 * sim.h - the simulator's library: workloads generated second by second,
 * in the form the pricing engine and the meter take (struct
 * pricing_second). meterctl gen, make demo and the benchmarks use the
 * generated fleet; costsim builds months of sessions from a profile
 * (profile.h), prices them through the engine and runs the Monte Carlo.
 *
 * Depends only on pricing/ (and GSL, jansson). Deterministic for a seed.
 * A fleet or a month belongs to one thread; objects from *_new are
 * released with *_free, *_init with *_release, all accepting NULL.
 */
#ifndef SIM_H
#define SIM_H

#include <stddef.h>
#include <stdint.h>

#include "pricing.h"
#include "profile.h"

/* A generated fleet: N slots, each running one sandbox after another,
 * of four shapes (coding agent, evaluation, code run, browser; see
 * fleet.c and meter/README.md). Accounts are slot % accounts. */
struct sim_fleet;
/* NULL when out of memory. start is the first second generated. */
struct sim_fleet *sim_fleet_new(uint64_t seed, size_t sandboxes,
                                size_t accounts, int64_t start);
void sim_fleet_free(struct sim_fleet *f);
/* From now on every slot always runs a sandbox: a waiting slot starts
 * one now, and one that goes is followed by the next the same second. */
void sim_fleet_fill(struct sim_fleet *f);
size_t sim_fleet_size(const struct sim_fleet *f);
/* From now on the fleet is noisy (fleet.c): memory in use and cpu_used
 * move every second, and every shape sends egress in bursts. */
void sim_fleet_noisy(struct sim_fleet *f);
/* The next second sim_fleet_next will generate. */
int64_t sim_fleet_now(const struct sim_fleet *f);

/* Receives n consecutive seconds of one sandbox. */
typedef void sim_fleet_cb(const char *account, const char *sandbox,
                          const struct pricing_second *s, size_t n, void *arg);
/* Generates the next `seconds` seconds of every slot, sandbox by sandbox;
 * returns the number of samples. */
size_t sim_fleet_next(struct sim_fleet *f, uint32_t seconds, sim_fleet_cb *cb,
                      void *arg);

/* ---- months of sessions (month.c) ------------------------------------ */

/*
 * A spell: a run of identical seconds of one session, what the profile's
 * busy, idle and paused stretches become. A paused spell has vcpu,
 * cpu_used and memory 0 (struct pricing_second's rule); egress_bytes is
 * per second.
 *
 * Without the profile's pauses, an idle stretch is drawn running and
 * each book's autopause pauses it as the book is priced (sim_book_cut):
 * its spells carry the stretch's length (idle_run, 0 for any other
 * spell) and where in it they start (idle_off).
 */
struct sim_spell {
    uint32_t seconds;
    bool paused;
    uint32_t vcpu, cpu_used; /* 1/10,000 vCPU */
    uint32_t idle_run, idle_off;
    uint64_t mem_bytes, mem_used_bytes, disk_bytes, egress_bytes;
};

/*
 * A book's autopause for a profile, as a cut: an idle stretch longer
 * than cut seconds is paused from its cut-th second to its end.
 * SIM_NO_CUT (never) unless the profile has activity, says no pauses of
 * its own (which override every book's) and the book has a default
 * (its "pauses").
 */
#define SIM_NO_CUT UINT32_MAX
uint32_t sim_book_cut(const struct sim_profile *p,
                      const struct pricing_book *b);

/* The seconds of x that run under cut, from its start; the rest of x is
 * paused. */
static inline uint32_t
sim_spell_running(const struct sim_spell *x, uint32_t cut)
{
    if (x->paused)
        return 0;
    if (x->idle_run <= cut)
        return x->seconds;
    if (cut <= x->idle_off)
        return 0;
    return cut - x->idle_off < x->seconds ? cut - x->idle_off : x->seconds;
}

struct sim_mem; /* montecarlo.c's count of a thread's memory */
struct sim_month_use;

/*
 * Control variates (docs/simulator.md, "How the mean is estimated"): sums,
 * over a month's draws, of each draw less what it is expected to be
 * given the draws before it (from the profile, in closed form). Each sum
 * is 0 in expectation whatever the month gives, and moves with what the
 * books charge for: more sessions, longer ones, more idle time paused.
 * The Monte Carlo regresses each book's totals on them (montecarlo.c).
 */
enum sim_control {
    SIM_CV_ARRIVALS, /* Poisson arrivals in the month's hours, less rate */
    SIM_CV_LENGTH,   /* sessions' seconds in the month */
    SIM_CV_BUSY,     /* lengths of busy spells drawn */
    SIM_CV_IDLE,     /* lengths of idle spells drawn */
    SIM_CV_PAST,     /* idle spells' seconds past the pause timeout */
    SIM_CV_COIN,     /* pauses decided (1 or 0, less the probability)
                        times the seconds they would pause */
    SIM_CV_EGRESS,   /* sessions' egress, MB */
    SIM_NCONTROLS
};

/* A session: one sandbox, from start, its spells in order. */
struct sim_session {
    int64_t start;
    size_t first, nspells; /* in sim_month.spells */
    uint64_t seconds;      /* wall-clock length */
};

/*
 * One simulated calendar month (UTC) and the sessions that touch it:
 * those that start in it, and those started before it that still run
 * (a steady state: the month is not empty at its start), in order of
 * start. Sessions are cut at the month's end.
 */
struct sim_month {
    int year, month;
    int64_t start, end;
    struct sim_session *sessions;
    size_t nsessions, sessions_cap;
    struct sim_spell *spells;
    size_t nspells, spells_cap;
    size_t started; /* sessions that start inside the month */
    /* The account's first month: no session before it, and the books'
     * credit grants are received in it and spent on it (unless
     * grants_held: the caller keeps their balances from month to month,
     * montecarlo.c's several months). */
    bool first;
    bool grants_held;
    int64_t *times; /* an hour's arrival times, while drawing */
    size_t times_cap;
    /* Drawing, session by session (sim_month_begin, sim_month_draw): */
    const struct sim_profile *p;
    gsl_rng *rng;
    int64_t warm;          /* how long before the month a session may start */
    int64_t next;          /* per_month: the next arrival; Poisson: hour */
    size_t hour_n, hour_i; /* Poisson: the hour's arrivals; the next one */
    int64_t at;            /* the arrival being drawn */
    uint32_t batch_left;   /* its sessions still to draw */
    size_t dropped;        /* sessions drawn before sessions[0] */
    /* Concurrent: each sandbox's next start, a heap in times[0, slots),
     * filled at the first draw. */
    size_t slots;
    bool slots_ready;
    /* The controls' sums over the draws so far (sim_month_begin zeroes
     * them), and what each kind of draw is expected to be. */
    double control[SIM_NCONTROLS];
    double e_length, e_busy, e_idle, e_past, e_egress;
    /* Where the arrays' bytes are counted, against a bound (montecarlo.c,
     * --memory-limit); NULL: not counted. */
    struct sim_mem *mem;
};

void sim_month_init(struct sim_month *m, int year, int month);
/* Moves m to another month (its arrays kept), before sim_month_begin:
 * month may run past 12, into the years after. */
void sim_month_period(struct sim_month *m, int year, int month);
void sim_month_release(struct sim_month *m);
/* Replaces m's sessions with a month drawn from p with rng. -1 when out
 * of memory, or past m->mem's bound. */
int sim_month_generate(struct sim_month *m, const struct sim_profile *p,
                       gsl_rng *rng, struct sim_err *e);
/*
 * The same month, drawn a session at a time: sim_month_begin empties m
 * and starts drawing from p with rng (both kept until the month is
 * drawn); each sim_month_draw appends the next session, in order of
 * start, and returns 1, or 0 when the month has no more (the draws are
 * those of sim_month_generate, in its order). sim_month_drop forgets the
 * sessions drawn so far (the next keeps its number, dropped + index), so
 * that memory holds what is being priced, not the month. -1 (e set)
 * when out of memory or past m->mem's bound; the message then names the
 * profile's key and the size it asked for.
 */
void sim_month_begin(struct sim_month *m, const struct sim_profile *p,
                     gsl_rng *rng);
int sim_month_draw(struct sim_month *m, struct sim_err *e);
void sim_month_drop(struct sim_month *m);

/* ---- pricing a month through the engine (price.c) -------------------- */

/* What one book made of a month: a statement, or why it could not. */
struct sim_priced {
    bool ok;
    struct pricing_err err;       /* when !ok */
    struct pricing_statement *st; /* when ok: one, to free */
};

/* How a month is handed to the engine: each spell as one run of
 * identical seconds (what costsim uses), or as its seconds one by one
 * (the form the meter stores; the tests and the bench compare them). */
enum sim_feed { SIM_FEED_RUNS, SIM_FEED_SECONDS };

/*
 * Prices m under every book i with active[i] (NULL: all) through the
 * engine (pricing_rater_*), one account "sim" and one sandbox per
 * session, fed as how says; the rater sees only the month's seconds,
 * and a session started before it as a sandbox with history, so it
 * starts no run. out[i] receives the month's statement, released with
 * pricing_statements_free(out[i].st, 1); a book that fails (an unknown
 * price, no instance type that fits) gets !ok and the engine's message.
 * Returns -1 (e set) only when out of memory; nothing is then left to
 * free.
 */
int sim_price_month(const struct sim_month *m,
                    const struct pricing_book *const *books, size_t nbooks,
                    const bool *active, enum sim_feed how,
                    struct sim_priced *out, struct sim_err *e);

/*
 * The Monte Carlo's way: draws the month begun in m (sim_month_begin, no
 * session drawn yet) a session at a time, measures each into use[i] for
 * book i (as sim_month_measure with the book's cut) and prices it as
 * sim_price_month with SIM_FEED_RUNS, the same statements, and drops it once
 * priced: memory holds one session's spells and the changes of the sandboxes
 * running still ahead, not the month's sessions x their length. -1 (e set) when
 * out of memory or past m->mem's bound (the message names the profile's
 * key and the size); nothing is then left to free. partial: every
 * rater is pricing_rater_partial, so a book that leaves a price the
 * month needs unknown gives a statement whose unpriced names it, its
 * total a lower bound, instead of !ok.
 */
int sim_price_drawn(struct sim_month *m,
                    const struct pricing_book *const *books, size_t nbooks,
                    const bool *active, bool partial, struct sim_priced *out,
                    struct sim_month_use *use, struct sim_err *e);

/* ---- plan tiers and limits (limits.c) --------------------------------- */

/*
 * What a month's sessions measure against a plan's limits, whatever the
 * book (docs/simulator.md, "Plan tiers and limits"):
 * - peak_running: the most sandboxes running at one second of the
 *   month. Paused ones do not count: providers count running sandboxes
 *   (E2B: "only running sandboxes count toward your concurrency limit").
 * - longest_run_s: the longest stretch a sandbox runs without a pause,
 *   of the stretches with a second in the month, counted whole (before
 *   and after it too). A pause ends it: providers limit how long a
 *   sandbox runs ("pausing resets the runtime window"), not how long it
 *   is kept; a session that is never paused is one stretch.
 * - peak_disk_bytes: the largest total disk held, running or paused, at
 *   one second of the month (section 15's max_storage).
 * - largest_vcpu, largest_mem_bytes, largest_disk_bytes: the largest
 *   sandbox, against the book's "limits" (max_vcpu, max_memory,
 *   max_disk: the largest sandbox the provider runs).
 * Replay fills it from stored usage alike, but sees only the month's
 * seconds: a stretch that began before the month counts from its start.
 */
struct sim_month_use {
    uint64_t peak_running;
    uint64_t longest_run_s;
    uint64_t peak_disk_bytes;
    /* The largest sandbox of the month: vCPUs (1/10,000), memory and
     * disk bytes, each its largest in any spell (replay: not measured,
     * 0). */
    uint64_t largest_vcpu, largest_mem_bytes, largest_disk_bytes;
};

/* Measures m into *u, its idle stretches paused at cut (SIM_NO_CUT: as
 * drawn). -1 (e set) when out of memory. */
int sim_month_measure(const struct sim_month *m, uint32_t cut,
                      struct sim_month_use *u, struct sim_err *e);

/* The limits a month is checked against, in the order reported. */
enum sim_limit {
    SIM_LIMIT_CONCURRENCY, /* sandboxes running at once */
    SIM_LIMIT_SESSION,     /* seconds running without a pause */
    SIM_LIMIT_RUNS,        /* the caps of section 15, from here on */
    SIM_LIMIT_CPU_HOURS,
    SIM_LIMIT_MEMORY_HOURS,
    SIM_LIMIT_EGRESS_GB,
    SIM_LIMIT_STORAGE,
    SIM_LIMIT_SANDBOX_VCPU, /* one sandbox's size (the book's "limits") */
    SIM_LIMIT_SANDBOX_MEMORY,
    SIM_LIMIT_SANDBOX_DISK,
    SIM_NLIMITS
};
/* Their names in JSON: "concurrency", "session_length", "runs", ... */
extern const char *const sim_limit_names[SIM_NLIMITS];
/* Whether l is measured on the month itself (sandboxes at once, the
 * longest stretch, the disk held), not on a book's statement. */
bool sim_limit_of_month(enum sim_limit l);

/* One month of a workload on one book's plan. */
struct sim_plan_month {
    int addon;                    /* -1: the plan itself; else the index
                                     of the add-on bought */
    struct pricing_dec addon_fee; /* its monthly fee; 0 without */
    unsigned broken;              /* bit 1 << SIM_LIMIT_x: broken */
    /* What the month measures, per limit, in the limit's unit: sandboxes,
     * seconds, runs, vCPU-hours, memory unit-hours, GB, storage units
     * (12 decimals, half to even). */
    struct pricing_dec used[SIM_NLIMITS];
};

/*
 * Checks a month (u, and q, the quantities of its statement on b)
 * against b's plan. Concurrency: the plan if the month fits it, else
 * the cheapest add-on that fits (the first on a tie), else broken (and
 * no add-on is bought: none would make it fit). Every other limit is
 * broken when the month is above it; exactly at the limit fits.
 * Comparisons are exact (integers against the book's decimals). q NULL:
 * the caps are not checked.
 */
void sim_plan_check(const struct pricing_book *b, const struct sim_month_use *u,
                    const struct pricing_quantities *q,
                    struct sim_plan_month *out);

/* Whether b has limit l; its value (in the unit of struct
 * sim_plan_month's used) and the unit's name ("sandboxes", "s", "runs",
 * "CPU-hours", "GB-hours" or "GiB-hours", "GB", "GB" or "GiB") go to
 * *value and *unit when they are not NULL. */
bool sim_limit_of(const struct pricing_book *b, enum sim_limit l,
                  struct pricing_dec *value, const char **unit);

/*
 * A broken limit named for people: the measured value, the limit and
 * the book, e.g. "sessions of 3 h exceed a 1 h session limit on
 * novita-free", "412 sandboxes at once exceed novita-paid's 100 (no
 * add-on fits)", "9.5 CPU-hours exceed vercel-hobby's cap of 5". used
 * is in the unit of struct sim_plan_month. Returns the length, as
 * snprintf; 256 bytes always suffice.
 */
size_t sim_limit_message(const struct pricing_book *b, enum sim_limit l,
                         struct pricing_dec used, char *buf, size_t n);

/* ---- Monte Carlo (montecarlo.c) ------------------------------------- */

/* The line kinds costsim breaks costs into, in statement order (a
 * credit_grant line ends a first month's statement), then "addon" (a
 * plan add-on's fee: the simulator's, not the engine's); lines of
 * another kind go to the last, "other". */
#define SIM_NKINDS 14
extern const char *const sim_line_kinds[SIM_NKINDS];

/* Trials before the stopping rule may stop a book, whatever
 * min_trials asks: fewer months of a skewed total give an interval that
 * covers the mean less often than it says (issue 27 measured 92.7% on
 * coding-agent when 8 trials could stop it). */
#define SIM_MIN_TRIALS 30

struct sim_mc_opts {
    uint64_t seed;
    double precision;  /* target half-width of the 95% interval / mean */
    size_t min_trials; /* raised to SIM_MIN_TRIALS; max_trials still caps */
    size_t max_trials;
    unsigned threads; /* >= 1; the results do not depend on it */
    int year, month;  /* the simulated month (the first of months) */
    bool first_month; /* the account's first: see sim_month.first */
    /* A trial is this many months from (year, month) (0 or 1: one),
     * each drawn from the profile with its arrivals times (1 +
     * growth)^k in month k (per_hour, per_month or concurrent, rounded
     * as the profile holds them); a trial's total is the months' sum.
     * With first_month, the books' grants are received in the first and
     * spent month after month until they run out. */
    unsigned months;
    double growth;
    /* A book that leaves a price the workload needs unknown (null) is
     * priced in part (sim_price_drawn's partial): its totals are lower
     * bounds, its unpriced quantities counted (sim_book_stats). false:
     * such a book fails, with the engine's reason. */
    bool partial;
    /* The mean estimated by regression on the month's controls (enum
     * sim_control): far fewer trials for the same interval. false: the
     * plain mean of the totals, exact. */
    bool controlled;
    /* At most this many MiB (costsim's --memory-limit; 0: no bound): the
     * results of max_trials, and on each thread what its month holds;
     * a run that needs more fails, naming the option or the profile's
     * key and the size. */
    uint64_t memory_mib;
    /* Optional: told after each batch, on the calling thread, the trials
     * drawn so far, the cap, and the books still being priced (a
     * progress bar). It must not call back into the Monte Carlo. */
    void (*progress)(size_t trials, size_t max_trials, size_t open, void *arg);
    void *progress_arg;
};

/* One book's results. Money is exact: totals and sums are decimals. */
struct sim_book_stats {
    bool failed;
    char reason[512];           /* when failed: the engine's message */
    size_t trials;              /* priced trials */
    uint64_t months;            /* priced months: trials x sim_mc_opts.months */
    struct pricing_dec *totals; /* each trial's total, in trial order */
    /* With several months (sim_mc_opts.months > 1), the totals of each
     * month summed over the trials: month_sum[k] of month k. */
    struct pricing_dec *month_sum;
    struct pricing_dec *sorted;              /* the same, ascending */
    struct pricing_dec kind_sum[SIM_NKINDS]; /* lines summed over trials */
    uint64_t sessions; /* sessions started, summed over its trials */
    /* Plan limits (sim_plan_check): how many months broke each limit and
     * the largest value measured for it, and how many priced months
     * bought each option (on_option[0] the plan itself, [1 + k] add-on
     * k). The limits of the month itself (sim_limit_of_month) are
     * checked in every month drawn, checked of them, also after the book
     * stopped: a book that converges early is judged on the same months
     * as the others; the caps on the statement, in its priced months. */
    uint64_t broken[SIM_NLIMITS];
    struct pricing_dec worst[SIM_NLIMITS];
    uint64_t on_option[1 + PRICING_ADDONS_MAX];
    uint64_t checked;
    /* Priced in part (sim_mc_opts.partial): the dimensions some trial
     * left unpriced (bit 1 << PRICING_DIM_x; 0: every price known), and
     * their quantities summed over the trials, in the units of
     * pricing_unpriced_quantity. Not 0, every total, the mean, its
     * interval and the percentiles are of the known part: lower bounds. */
    unsigned unpriced;
    struct pricing_dec unpriced_sum[PRICING_NDIMS];
    /* Statistics over the totals as doubles (GSL): the mean, the
     * half-width of its 95% interval (Student t), and whether that
     * half-width met the precision. controlled: both are the
     * regression's on the controls (ncontrols of them varied), else the
     * sample mean's. */
    double mean, half;
    bool converged;
    bool controlled;
    size_t ncontrols;
    /* The regression's sums over the trials: of the controls, of the
     * totals less the first (shift, for precision), and their products. */
    struct sim_cv_sums {
        double shift, sy, syy;
        double sx[SIM_NCONTROLS], sxy[SIM_NCONTROLS];
        double sxx[SIM_NCONTROLS][SIM_NCONTROLS];
    } cv;
};

struct sim_mc_result {
    size_t nbooks;
    struct sim_book_stats *books; /* in the order of the books given */
    size_t trials;                /* trials drawn */
};

/*
 * Draws months of p and prices each under every book, in batches of
 * trials (a trial is o->months months, its total their sum), until the
 * 95% interval of each book's mean total is within precision of it
 * (relative half-width) or max_trials. Trial k is
 * drawn from a generator seeded from (seed, k) alone, and books stop at
 * the end of a batch, so the results depend on the seed, not on the
 * threads (beyond 8 threads, the next batches are drawn ahead and what
 * a stopped book was priced ahead is dropped). A book that cannot price
 * a month is marked failed and priced no more. -1 (e set) when out of
 * memory or a thread cannot start.
 */
int sim_monte_carlo(const struct sim_profile *p,
                    const struct pricing_book *const *books, size_t nbooks,
                    const struct sim_mc_opts *o, struct sim_mc_result *out,
                    struct sim_err *e);
void sim_mc_result_release(struct sim_mc_result *r);

/*
 * The tier chosen among the books of one provider (pricing_book_provider):
 * the index, into books, of the cheapest by exact mean monthly total
 * (add-on fees included; the first on a tie) among those that priced the
 * workload whole (not a lower bound: its price is not known) and broke
 * no limit in any month (sim_book_fits); -1 if none did, or
 * no book has that provider.
 */
int sim_tier_choose(const struct pricing_book *const *books,
                    const struct sim_book_stats *stats, size_t nbooks,
                    const char *provider);
/* b's mean: the exact mean of its totals (0 without trials), or, when
 * b->controlled, the regression's, to 6 decimals. */
struct pricing_dec sim_book_mean(const struct sim_book_stats *b);
/* Whether b's figures are lower bounds (b->unpriced). */
bool sim_book_lower_bound(const struct sim_book_stats *b);
/* Whether b broke no limit in any month checked. */
bool sim_book_fits(const struct sim_book_stats *b);
/* The months limit l was checked in for b: every month drawn for a
 * limit of the month itself, the priced ones for a cap. */
uint64_t sim_book_months_checked(const struct sim_book_stats *b,
                                 enum sim_limit l);

/* ---- sensitivity and break-even (sens.c) ------------------------------- */

/* One parameter of the profile moved down and up by the tornado's
 * percentage: one book's mean monthly total each way. */
struct sim_swing {
    char param[64];               /* the profile's key path */
    bool failed;                  /* the book could not price one side */
    struct pricing_dec low, high; /* mean totals at -pct and +pct */
    bool low_failed, high_failed; /* which side (its mean is then 0) */
    /* The parameter as given, and as moved down and up: rounded or
     * clamped as the profile holds it (sim_param_set), or as given on a
     * side that could not move (low or high is then the base). */
    double value, low_value, high_value;
    char note[320]; /* what was clamped or refused, why a side failed */
};

/* One book's tornado: its swings sorted by |high - low|, largest first. */
struct sim_tornado_book {
    struct pricing_dec base; /* the mean total of the profile as given */
    struct sim_swing *swings;
    size_t nswings;
    size_t trials; /* months of each mean: base, low and high alike */
};

struct sim_tornado {
    double pct;                     /* each parameter moved by +/- pct % */
    size_t nbooks;                  /* in the order of the books given */
    struct sim_tornado_book *books; /* not failed books: nswings 0 */
    char (*notes)[320];             /* parameters left out, and why */
    size_t nnotes;
};

/*
 * Moves each parameter of p (sim_params, without derived ones) by -pct
 * and +pct percent (0 < pct < 100), one at a time, and prices the moved
 * profile under every book that base (sim_monte_carlo of p, books and
 * o) priced. Common random numbers: every moved run has o's seed, so
 * trial k draws from the same generator as the base's trial k, and each
 * book's means (base, low and high) are over the same months, its first
 * min(its base trials, max_trials) (max_trials 0: no cap). A side that
 * sim_param_set refuses or rounds back to the value is not moved (its
 * mean is the base); a parameter neither side of which moves is left
 * out, with a note. Runs on o's threads; costs (2 x parameters) runs of
 * the base's size. -1 (e set) when out of memory.
 */
int sim_tornado(const struct sim_profile *p,
                const struct pricing_book *const *books, size_t nbooks,
                const struct sim_mc_opts *o, const struct sim_mc_result *base,
                double pct, size_t max_trials, struct sim_tornado *out,
                struct sim_err *e);
void sim_tornado_release(struct sim_tornado *t);

/* Where two books' mean monthly totals cross as one parameter moves. */
struct sim_breakeven {
    bool found;     /* they cross (or are equal) in the range */
    double root;    /* found: the parameter's value there, a double */
    bool whole;     /* the parameter takes whole numbers */
    bool converged; /* found: the root finder met its tolerance */
    int crossings;  /* sign changes of the difference the scan saw */
    int iterations; /* of the root finder */
    size_t trials;  /* months at every value */
    /* found: the ends of the last bracket, where the cheaper book
     * changes (a whole parameter: two neighbours), or the root twice if
     * the totals are equal there; else the range's ends. As the profile
     * holds them (sim_param_set). */
    double at[2];
    struct pricing_dec cost[2][2]; /* [at][book]: exact mean totals */
};

/*
 * The value of param (sim_params with derived: the profile's key path,
 * or activity.idle_share) in [lo, hi] at which books[0] and books[1]
 * cost the same a month: f(x) = mean_0(x) - mean_1(x), each mean over
 * the same `trials` months (o's seed, every x: common random numbers),
 * scanned at 9 evenly spaced values for the first sign change from lo,
 * then narrowed with GSL's Brent solver (gsl_root_fsolver_brent) to a
 * whole number, or to 1e-4 of the value or the parameter's step. Not
 * found ("never in range") when no scanned value is a root or brackets
 * one. -1 (e set) when lo or hi is not a value p can take exactly
 * (sim_param_set does not give SIM_PARAM_SET), when a book cannot price
 * a month, when GSL's solver fails, and when out of memory. GSL's error
 * handler must be off (gsl_set_error_handler_off, as costsim does), so
 * that a failure is a status here, not an abort.
 */
int sim_breakeven(const struct sim_profile *p,
                  const struct pricing_book *const books[2],
                  const struct sim_mc_opts *o, size_t trials, const char *param,
                  double lo, double hi, struct sim_breakeven *out,
                  struct sim_err *e);

/* sum / n, exactly to 12 decimals (half to even): a mean of decimals. */
struct pricing_dec sim_dec_div(struct pricing_dec sum, uint64_t n);
/* The trial total at quantile q (0..1) of b, nearest rank: an actual
 * trial's total, exact. */
struct pricing_dec sim_book_quantile(const struct sim_book_stats *b, double q);

/*
 * A distribution-free interval for the q quantile of what n trials
 * estimate, by order statistics: the ranks lo < hi (1-based, into the
 * sorted totals) such that [x_(lo), x_(hi)] holds the true quantile
 * with probability coverage = P(lo <= B < hi), B ~ binomial(n, q) (the
 * trials below it), lo the largest rank with P(B < lo) <= (1 - level)/2
 * and hi the smallest with P(B >= hi) <= (1 - level)/2. When n is too
 * small for such a rank (a p5 of 30 trials has none below), it is 1
 * (or n) and coverage, always the true one, falls short of level.
 * Needs n >= 1 and 0 < q < 1; GSL's error handler off.
 */
struct sim_quantile_ci {
    size_t lo, hi;   /* ranks */
    double coverage; /* of [x_(lo), x_(hi)] */
};
void sim_quantile_ranks(size_t n, double q, double level,
                        struct sim_quantile_ci *out);
/* b's totals at those ranks for level 0.95 (exact), and the ranks. */
void sim_book_quantile_ci(const struct sim_book_stats *b, double q,
                          struct pricing_dec *lo, struct pricing_dec *hi,
                          struct sim_quantile_ci *ci);

#endif
