/*
 * test_sim_stats.c - the Monte Carlo's statistics (issue 27, item 3) and
 * its lower bounds (item 2): the stopping rule's floor of 30 trials, the
 * percentiles' intervals by order statistics against ranks computed by
 * hand from the binomial distribution, a book with an unknown price as a
 * lower bound naming its quantity, and the coverage of the mean's 95%
 * interval over 400 seeds on a profile whose true mean is known in
 * closed form.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>

#include "sim.h"
#include "testutil.h"

static struct sim_profile *
profile(const char *json)
{
    struct sim_err e;
    struct sim_profile *p = sim_profile_parse(json, strlen(json), NULL, &e);
    if (!p) {
        fprintf(stderr, "test profile refused: %s\n", e.msg);
        exit(1);
    }
    return p;
}

static struct pricing_book *
book(const char *json)
{
    struct pricing_err e;
    struct pricing_book *b = pricing_book_parse(json, strlen(json), NULL, &e);
    if (!b) {
        fprintf(stderr, "test book refused: %s\n", e.msg);
        exit(1);
    }
    return b;
}

/* cpu at RATE a vCPU-hour, allocated; memory free; storage as given;
 * egress and runs unknown or free. */
#define BOOK(id, rate, storage)                                                \
    "{\"id\": \"" id "\", \"currency\": \"USD\", \"effective_from\": "         \
    "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"" rate    \
    "\", \"per\": \"hour\"}, \"memory\": {\"basis\": \"allocated\", "          \
    "\"unit\": \"GiB\", \"rate\": \"0\", \"per\": \"hour\"}, "                 \
    "\"storage\": " storage ", \"egress\": null, \"per_run\": \"0\"}"

/* 100 sessions of an hour, evenly spaced: no randomness, every month
 * alike; 2 vCPU, 10 GiB of disk. */
static const char fixed[] =
    "{\"sessions\": {\"per_month\": 100, \"length\": {\"dist\": \"fixed\", "
    "\"value\": 3600}}, \"sandbox\": {\"vcpu\": 2, \"memory_gib\": 4, "
    "\"disk_gib\": 10}}";

static struct sim_mc_opts
opts(uint64_t seed, double precision, size_t max, unsigned threads)
{
    return (struct sim_mc_opts){.seed = seed,
                                .precision = precision,
                                .min_trials = 2,
                                .max_trials = max,
                                .threads = threads,
                                .year = 2026,
                                .month = 11,
                                .partial = true};
}

/*
 * The stopping rule's floor: months without randomness have an interval
 * of 0 from the second trial, and the rule may stop only at 30 (not at
 * the batch of 8 before it, 24, nor the one after, 32), whatever
 * min_trials asks and on any threads; a cap below 30 stops there, not
 * converged.
 */
static void
test_min_trials(void)
{
    struct sim_profile *p = profile(fixed);
    struct pricing_book *b = book(BOOK("flat", "0.36", "null"));
    const struct pricing_book *books[1] = {b};
    struct sim_err e;
    static const unsigned threads[] = {1, 3, 9};
    for (size_t t = 0; t < 3; t++) {
        struct sim_mc_opts o = opts(1, 0.01, 1000, threads[t]);
        struct sim_mc_result r;
        CHECK(sim_monte_carlo(p, books, 1, &o, &r, &e) == 0);
        CHECK(r.trials == 30 && r.books[0].trials == 30);
        CHECK(r.books[0].converged && r.books[0].half == 0);
        CHECK(SIM_MIN_TRIALS == 30);
        sim_mc_result_release(&r);
    }
    struct sim_mc_opts o = opts(1, 0.01, 29, 2);
    struct sim_mc_result r;
    CHECK(sim_monte_carlo(p, books, 1, &o, &r, &e) == 0);
    CHECK(r.trials == 29 && r.books[0].trials == 29 && !r.books[0].converged);
    sim_mc_result_release(&r);
    pricing_book_free(b);
    sim_profile_free(p);
}

/*
 * Ranks by hand, B ~ binomial(n, q), alpha/2 = 0.025:
 * - n 10, q 0.5: P(B <= 1) = 11/1024 = 0.0107, P(B <= 2) = 56/1024 =
 *   0.0547, so lo = 2 and, by symmetry, hi = 9; coverage 1 - 22/1024.
 * - n 30, q 0.05: P(B = 0) = 0.95^30 = 0.2146 > 0.025: no rank below,
 *   lo = 1; P(B >= 5) = 0.0156, P(B >= 4) = 0.0608, so hi = 5; coverage
 *   P(B <= 4) - P(B = 0) = 0.9844 - 0.2146 = 0.7697, short of 95%.
 * - n 30, q 0.5: P(B <= 9) = 0.0214, P(B <= 10) = 0.0494: 10 and 21,
 *   1 - 2 x 0.0214 = 0.9572.
 * - n 100, q 0.5: 40 and 61 (the textbook's median interval), 0.9648.
 * - n 1000, q 0.95: 936 and 964, 0.9581.
 */
static void
test_quantile_ranks(void)
{
    static const struct {
        size_t n;
        double q;
        size_t lo, hi;
        double coverage;
    } cases[] = {
        {10, 0.5, 2, 9, 1 - 22.0 / 1024}, {30, 0.05, 1, 5, 0.7697257},
        {30, 0.95, 26, 30, 0.7697257},    {30, 0.5, 10, 21, 0.9572261},
        {100, 0.5, 40, 61, 0.9647998},    {1000, 0.95, 936, 964, 0.9580953},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sim_quantile_ci ci;
        sim_quantile_ranks(cases[i].n, cases[i].q, 0.95, &ci);
        if (ci.lo != cases[i].lo || ci.hi != cases[i].hi ||
            fabs(ci.coverage - cases[i].coverage) > 1e-6) {
            fprintf(stderr, "n %zu q %g: ranks %zu-%zu covering %.7f\n",
                    cases[i].n, cases[i].q, ci.lo, ci.hi, ci.coverage);
            test_failures++;
        }
    }
    /* On a book: the totals at those ranks of the sorted trials. */
    struct pricing_dec sorted[10];
    for (int k = 0; k < 10; k++)
        sorted[k].v = (pricing_i128)(k + 1) * PRICING_ONE;
    struct sim_book_stats b = {.trials = 10, .sorted = sorted};
    struct pricing_dec lo, hi;
    struct sim_quantile_ci ci;
    sim_book_quantile_ci(&b, 0.5, &lo, &hi, &ci);
    CHECK(lo.v == 2 * PRICING_ONE && hi.v == 9 * PRICING_ONE);
}

/*
 * A book with storage null on a profile with disk: a lower bound, its
 * quantity counted. By hand: 100 h x 2 vCPU x 0.36 = 72.00 known; 10
 * GiB for 100 h = 1,000 GiB-hours a month unpriced. Without partial it
 * fails, naming storage, as before.
 */
static void
test_lower_bound(void)
{
    struct sim_profile *p = profile(fixed);
    struct pricing_book *b[2] = {
        book(BOOK("nostore", "0.36", "null")),
        book(BOOK("whole", "0.36",
                  "{\"rate\": \"0.0001\", \"per\": \"hour\"}"))};
    const struct pricing_book *books[2] = {b[0], b[1]};
    struct sim_err e;
    struct sim_mc_opts o = opts(5, 0.01, 40, 2);
    struct sim_mc_result r;
    CHECK(sim_monte_carlo(p, books, 2, &o, &r, &e) == 0);
    const struct sim_book_stats *lb = &r.books[0], *wh = &r.books[1];
    char t[48];
    CHECK(!lb->failed && sim_book_lower_bound(lb));
    CHECK(lb->unpriced == 1u << PRICING_DIM_STORAGE);
    pricing_dec_format(sim_book_mean(lb), 2, t, sizeof(t));
    CHECK_STR(t, "72.00");
    pricing_dec_format(
        sim_dec_div(lb->unpriced_sum[PRICING_DIM_STORAGE], lb->trials), 6, t,
        sizeof(t));
    CHECK_STR(t, "1000.000000");
    /* Priced whole: 72.00 + 1,000 x 0.0001. */
    CHECK(!wh->failed && !sim_book_lower_bound(wh) && wh->unpriced == 0);
    pricing_dec_format(sim_book_mean(wh), 2, t, sizeof(t));
    CHECK_STR(t, "72.10");
    sim_mc_result_release(&r);
    o.partial = false;
    CHECK(sim_monte_carlo(p, books, 2, &o, &r, &e) == 0);
    CHECK(r.books[0].failed && strstr(r.books[0].reason, "uses storage"));
    CHECK(!r.books[1].failed);
    sim_mc_result_release(&r);
    pricing_book_free(b[0]);
    pricing_book_free(b[1]);
    sim_profile_free(p);
}

/*
 * The coverage of the mean's 95% interval over seeds (400, or more), each run
 * to precision (the stopping rule deciding when, from 30 trials on): the
 * interval must hold truth, the true mean known in closed form, in at
 * least 94% of them, and every trial of every seed pooled must give
 * truth within its own noise (or the closed form, not the intervals,
 * would be wrong).
 */
static void
coverage(const char *name, const struct sim_profile *p,
         const struct pricing_book *b, double truth, double precision,
         bool controlled, int seeds)
{
    const struct pricing_book *books[1] = {b};
    const int SEEDS = seeds;
    int covered = 0;
    size_t trials = 0, most = 0;
    double sum = 0, sum2 = 0;
    for (uint64_t seed = 1; seed <= (uint64_t)SEEDS; seed++) {
        struct sim_mc_opts o = opts(seed, precision, 1000, 1);
        o.controlled = controlled;
        struct sim_mc_result r;
        struct sim_err e;
        if (sim_monte_carlo(p, books, 1, &o, &r, &e) < 0) {
            fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, e.msg);
            test_failures++;
            break;
        }
        const struct sim_book_stats *s = &r.books[0];
        CHECK(!s->failed && s->converged && s->trials >= 30);
        CHECK(s->controlled == controlled);
        covered += fabs(s->mean - truth) <= s->half;
        trials += s->trials;
        for (size_t k = 0; k < s->trials; k++) {
            double x = (double)s->totals[k].v / (double)PRICING_ONE;
            sum += x;
            sum2 += x * x;
        }
        most = s->trials > most ? s->trials : most;
        sim_mc_result_release(&r);
    }
    printf("coverage, %s, %s: %d of %d seeds (%.1f%%) hold the true mean "
           "%.4f; %.1f trials a run, at most %zu\n",
           name, controlled ? "controlled" : "plain", covered, SEEDS,
           100.0 * covered / SEEDS, truth, (double)trials / SEEDS, most);
    CHECK(covered >= 94 * SEEDS / 100);
    double n = (double)trials, pooled = sum / n;
    double se = sqrt((sum2 / n - pooled * pooled) / n);
    printf("pooled mean %.4f (standard error %.4f) over %zu trials\n", pooled,
           se, trials);
    CHECK(fabs(pooled - truth) <= 4 * se);
}

/*
 * Sessions arrive as a Poisson process of 0.5 an hour at every hour of
 * the day, 1 vCPU, under a book of 36 a vCPU-hour (0.01 a second, so a
 * month's total is a whole number of cents: no rounding). The month is a
 * steady state: sessions that started before it are in it, cut at its
 * start, and those at its end are cut there. Arrivals fall on whole
 * seconds, uniform in their hour: l = 0.5 / 3,600 a second, at every
 * second. A stationary process whose sessions last L holds l x E[L] of
 * them running at any second (the sum of a session's seconds in the
 * month over its possible starts is L x T exactly), so the expected
 * seconds in the 30 days of November (T = 2,592,000 s) are l x E[L] x T,
 * whatever the cuts.
 *
 * Sessions of a fixed 3,600 s: 1,296,000 s, 12,960.00 a month. Plain:
 * 377 of 400 seeds hold it (94.2%), in 34 trials a run on average, at a
 * precision of 2%.
 *
 * Sessions of exponential lengths, mean 3,600 s, at most 36,000 s, made
 * whole seconds (round, at least 1): E[L] = sum over k >= 1 of P(L >=
 * k) = 1 + sum for k = 2 to 36,000 of P(X >= k - 0.5), a geometric
 * series of ratio exp(-1/3,600). The controlled mean (regression on the
 * arrivals' and the sessions' controls) at a precision of 0.5%, over
 * 1,000 seeds: 956 hold it (95.6%), every one at 30 trials. (Plain, at
 * 2%, measured: 379 of 400, 94.8%, 59 trials a run.)
 *
 * Measured, not tested: controlled on the fixed lengths, whose only
 * control is the arrivals' (a fixed session's seconds in the month are
 * known once it starts): 1,888 of 2,000 seeds (94.4%); on the
 * exponential lengths with the sessions' control counting whole lengths
 * rather than their part in the month, 93.5% of 2,000 at 30 trials,
 * which is why that control is cut at the month's ends.
 *
 * Measured beside it, not tested: on a skewed total (0.05 sessions an
 * hour of 10 h: 36 a month, a coefficient of variation of 17%) the plain
 * intervals held the mean in 95.2% of 400 seeds at a fixed 30 trials but
 * 93.2% when a precision of 5% let the rule stop from 30 on: the floor
 * does not remove what stopping on a small spread costs a skewed total.
 */
static void
test_coverage(void)
{
    struct sim_profile *fixed_len = profile(
        "{\"sessions\": {\"poisson\": {\"per_hour\": 0.5}, \"length\": "
        "{\"dist\": \"fixed\", \"value\": 3600}}, \"sandbox\": {\"vcpu\": 1, "
        "\"memory_gib\": 1, \"disk_gib\": 0}}");
    struct sim_profile *expo = profile(
        "{\"sessions\": {\"poisson\": {\"per_hour\": 0.5}, \"length\": "
        "{\"dist\": \"exponential\", \"mean\": 3600, \"max\": 36000}}, "
        "\"sandbox\": {\"vcpu\": 1, \"memory_gib\": 1, \"disk_gib\": 0}}");
    struct pricing_book *b = book(BOOK("per-second", "36", "null"));
    const double rate = 0.5 / 3600 * 2592000 * 0.01; /* a second of L */
    coverage("fixed 3,600 s", fixed_len, b, rate * 3600, 0.02, false, 400);
    double r = exp(-1.0 / 3600);
    double len = 1 + exp(-1.5 / 3600) * (1 - pow(r, 35999)) / (1 - r);
    coverage("exponential", expo, b, rate * len, 0.005, true, 1000);
    pricing_book_free(b);
    sim_profile_free(fixed_len);
    sim_profile_free(expo);
}

int
main(void)
{
    gsl_set_error_handler_off();
    test_quantile_ranks();
    test_min_trials();
    test_lower_bound();
    test_coverage();
    return test_result();
}
