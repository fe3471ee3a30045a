/*
 * sim_bench.c - how fast costsim prices: session-book pricings a second
 * on one core (one simulated session priced under one book), for each
 * shipped profile, beside the engine rating the same sessions expanded
 * to per-second samples in the same run (the form the meter stores).
 *
 * For each profile a few months are drawn first (not timed: drawing is
 * GSL's, paid once a trial whatever the books), then priced under every
 * shipped book as runs and as seconds, through sim_price_month, the path
 * costsim takes; statements included. Each month's runs and seconds must
 * give the same totals, or the bench fails. A session counts once per
 * book that prices it and once per book that fails on it (a book with
 * no price for a dimension still reads every session until its end).
 *
 * Times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID): figures
 * per core, not disturbed by other work on the machine.
 *
 * Then the Monte Carlo itself, as costsim runs it on one thread:
 * coding-agent on every book to 0.5% and to 0.1%, by the controlled mean
 * (costsim's default) beside the plain mean in the same run, timed, and
 * each book's two means checked to agree (the bench fails otherwise):
 * their difference within z standard errors of a difference, z taken
 * so that all the comparisons of the run hold together 95% of the time
 * (Bonferroni: 48 comparisons of 24 books make z 3.3; two 95% intervals
 * that merely overlap, as this checked at first, fail a run by chance
 * one time in four at that count). Both runs take the first trials of
 * seed 1, each book stopping where its own interval meets the precision,
 * so the two means are of different numbers of the same months: how
 * many controlled means fall outside the plain interval alone is printed
 * too (the books' totals move together, so a plain mean that starts high
 * takes several books' out at once).
 *
 * usage: sim_bench [MONTHS] [REPEATS] [MAX_TRIALS]
 *        (defaults 4, 3 and 200,000)
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_rng.h>

#include "bench.h"
#include "sim.h"

#define MAX_BOOKS 64
#define TARGET 5e6 /* session-book pricings a second a core (issue 10) */

static const char *const profiles[] = {"code-execution", "data-analysis",
                                       "coding-agent", "browser-automation",
                                       "rl-evaluation"};

static size_t
load_books(const struct pricing_book **books)
{
    DIR *d = opendir(BOOKS_DIR);
    struct dirent *de;
    size_t n = 0;
    while (d && (de = readdir(d)) && n < MAX_BOOKS) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", BOOKS_DIR, de->d_name);
        FILE *f = fopen(path, "rb");
        static char text[1 << 20];
        size_t got = f ? fread(text, 1, sizeof(text), f) : 0;
        if (f)
            fclose(f);
        struct pricing_err e;
        struct pricing_book *b = pricing_book_parse(text, got, path, &e);
        if (!b) {
            fprintf(stderr, "sim_bench: %s\n", e.msg);
            exit(1);
        }
        books[n++] = b;
    }
    if (d)
        closedir(d);
    return n;
}

/* Prices the months under every book as how says; returns the seconds
 * taken and writes each month's totals (for the check). */
/* CPU seconds of this thread: "per core", whatever else the machine
 * runs at the time. */
static double
cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double
price(struct sim_month *m, size_t months, const struct pricing_book **books,
      size_t nbooks, enum sim_feed how, struct sim_priced *out,
      struct pricing_dec *totals)
{
    struct sim_err e;
    double t0 = cpu_now();
    for (size_t k = 0; k < months; k++) {
        if (sim_price_month(&m[k], books, nbooks, NULL, how, out, &e) < 0) {
            fprintf(stderr, "sim_bench: %s\n", e.msg);
            exit(1);
        }
        for (size_t i = 0; i < nbooks; i++) {
            totals[k * nbooks + i] =
                out[i].ok ? out[i].st->total : (struct pricing_dec){-1};
            pricing_statements_free(out[i].st, 1);
        }
    }
    return cpu_now() - t0;
}

/* One Monte Carlo of prof on every book, one thread, to precision by
 * the method asked; the CPU seconds it took. */
static double
monte_carlo(const struct sim_profile *prof, const struct pricing_book **books,
            size_t nbooks, double precision, bool controlled, size_t max,
            struct sim_mc_result *r)
{
    struct sim_mc_opts o = {.seed = 1,
                            .precision = precision,
                            .min_trials = SIM_MIN_TRIALS,
                            .max_trials = max,
                            .threads = 1,
                            .year = 2026,
                            .month = 11,
                            .partial = true,
                            .controlled = controlled};
    struct sim_err e;
    double t0 = cpu_now();
    if (sim_monte_carlo(prof, books, nbooks, &o, r, &e) < 0) {
        fprintf(stderr, "sim_bench: %s\n", e.msg);
        exit(1);
    }
    return cpu_now() - t0;
}

/*
 * Issue 27's target: coding-agent on every book to 0.5% in at most 1 s on
 * one core and to 0.1% in at most 10 s, by the controlled mean (the
 * default), beside the plain mean in the same run; and each book's two
 * means agreeing (the same seed; see the top). A book that does not converge
 * within max trials is counted.
 */
static int
monte_carlo_bench(const struct pricing_book **books, size_t nbooks, size_t max)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/coding-agent.json", PROFILES_DIR);
    struct sim_err e;
    struct sim_profile *prof = sim_profile_load(path, &e);
    if (!prof) {
        fprintf(stderr, "sim_bench: %s\n", e.msg);
        return 1;
    }
    static const double precisions[] = {0.005, 0.001};
    static const double targets[] = {1, 10};
    int rc = 0;
    printf("monte carlo: coding-agent on %zu books, one thread, seed 1, at "
           "most %zu trials\n",
           nbooks, max);
    for (size_t k = 0; k < 2; k++) {
        struct sim_mc_result plain, ctl;
        double tp =
            monte_carlo(prof, books, nbooks, precisions[k], false, max, &plain);
        double tc =
            monte_carlo(prof, books, nbooks, precisions[k], true, max, &ctl);
        size_t open_p = 0, open_c = 0, outside = 0, apart = 0, priced = 0;
        /* Every comparison of the run (each priced book at each
         * precision) shares the 5%. */
        double z = gsl_cdf_ugaussian_Qinv(0.05 / (2.0 * 2 * (double)nbooks));
        for (size_t i = 0; i < nbooks; i++) {
            const struct sim_book_stats *a = &plain.books[i],
                                        *b = &ctl.books[i];
            if (a->failed || b->failed)
                continue;
            priced++;
            open_p += !a->converged;
            open_c += !b->converged;
            double d = fabs(b->mean - a->mean), sa = a->half / 1.96,
                   sb = b->half / 1.96, bound = z * sqrt(sa * sa + sb * sb);
            outside += d > a->half;
            if (d > bound) {
                apart++;
                printf("  %s: controlled %.6f +/- %.6f and plain %.6f +/- "
                       "%.6f differ by %.6f, more than %.6f (%.2f standard "
                       "errors)\n",
                       pricing_book_id(books[i]), b->mean, b->half, a->mean,
                       a->half, d, bound, z);
            }
        }
        printf("  to %.1f%%: controlled %6.2f s, %6zu trials, %zu of %zu "
               "books not converged; plain %7.2f s, %6zu trials, %zu not "
               "converged; %.1fx faster; means that disagree: %zu "
               "(controlled means outside the plain interval: %zu); target "
               "%.0f s: %s\n",
               precisions[k] * 100, tc, ctl.trials, open_c, priced, tp,
               plain.trials, open_p, tp / tc, apart, outside, targets[k],
               tc <= targets[k] && open_c == 0 ? "met" : "MISSED");
        if (apart)
            rc = 1;
        sim_mc_result_release(&plain);
        sim_mc_result_release(&ctl);
    }
    sim_profile_free(prof);
    return rc;
}

int
main(int argc, char **argv)
{
    size_t months = (size_t)bench_arg(argc, argv, 1, 4, 1200);
    int repeats = (int)bench_arg(argc, argv, 2, 3, 1000);
    size_t max = (size_t)bench_arg(argc, argv, 3, 200000, 1000000);
    if (months < 1 || repeats < 1 || max < 2) {
        fprintf(stderr, "usage: sim_bench [MONTHS] [REPEATS] [MAX_TRIALS]\n");
        return 2;
    }
    gsl_set_error_handler_off();
    const struct pricing_book *books[MAX_BOOKS];
    size_t nbooks = load_books(books);
    struct sim_priced out[MAX_BOOKS];
    struct pricing_dec *ta = calloc(months * nbooks, sizeof(*ta));
    struct pricing_dec *tb = calloc(months * nbooks, sizeof(*tb));
    struct sim_month *m = calloc(months, sizeof(*m));
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    printf("sim_bench: %zu books, %zu months a profile, best of %d; one "
           "core\n",
           nbooks, months, repeats);
    double worst = 1e300;
    for (size_t p = 0; p < sizeof(profiles) / sizeof(profiles[0]); p++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s.json", PROFILES_DIR, profiles[p]);
        struct sim_err e;
        struct sim_profile *prof = sim_profile_load(path, &e);
        if (!prof) {
            fprintf(stderr, "sim_bench: %s\n", e.msg);
            return 1;
        }
        uint64_t sessions = 0, spells = 0, seconds = 0;
        for (size_t k = 0; k < months; k++) {
            sim_month_init(&m[k], 2026, 11);
            gsl_rng_set(rng, 1000 + k);
            if (sim_month_generate(&m[k], prof, rng, &e) < 0) {
                fprintf(stderr, "sim_bench: %s\n", e.msg);
                return 1;
            }
            for (size_t s = 0; s < m[k].nsessions; s++) {
                const struct sim_session *x = &m[k].sessions[s];
                int64_t lo = x->start > m[k].start ? x->start : m[k].start;
                int64_t hi = x->start + (int64_t)x->seconds;
                if (hi > m[k].end)
                    hi = m[k].end;
                if (lo < hi)
                    sessions++, seconds += (uint64_t)(hi - lo);
            }
            spells += m[k].nspells;
        }
        double best_runs = 1e300, best_secs = 1e300;
        for (int r = 0; r < repeats; r++) {
            double a = price(m, months, books, nbooks, SIM_FEED_RUNS, out, ta);
            double b =
                price(m, months, books, nbooks, SIM_FEED_SECONDS, out, tb);
            best_runs = a < best_runs ? a : best_runs;
            best_secs = b < best_secs ? b : best_secs;
        }
        for (size_t i = 0; i < months * nbooks; i++)
            if (pricing_dec_cmp(ta[i], tb[i]) != 0) {
                fprintf(stderr,
                        "sim_bench: %s: runs and seconds differ "
                        "(book %zu)\n",
                        profiles[p], i % nbooks);
                return 1;
            }
        double pairs = (double)sessions * (double)nbooks;
        double rate = pairs / best_runs;
        worst = rate < worst ? rate : worst;
        printf("%-19s %7.0f sessions/month, %5.1f spells and %7.0f s a "
               "session: runs %6.2f M session-books/s (%.0f ns each); "
               "seconds %7.3f M/s (%.0f M samples/s); runs/seconds %.0fx\n",
               profiles[p], (double)sessions / (double)months,
               (double)spells / (double)sessions,
               (double)seconds / (double)sessions, rate / 1e6, 1e9 / rate,
               pairs / best_secs / 1e6,
               (double)seconds * (double)nbooks / best_secs / 1e6,
               best_secs / best_runs);
        for (size_t k = 0; k < months; k++)
            sim_month_release(&m[k]);
        sim_profile_free(prof);
    }
    printf("slowest profile: %.2f M session-book pricings/s on one core; "
           "target %.0f M\n",
           worst / 1e6, TARGET / 1e6);
    int rc = monte_carlo_bench(books, nbooks, max);
    for (size_t i = 0; i < nbooks; i++)
        pricing_book_free((struct pricing_book *)books[i]);
    gsl_rng_free(rng);
    free(m);
    free(ta);
    free(tb);
    return rc;
}
