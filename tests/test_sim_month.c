/*
 * test_sim_month.c - the simulator's months: distributions against their
 * known moments for a seed, spells that add up, a month without
 * randomness priced through the engine to the cent as computed by hand
 * under books of different rules, and the Monte Carlo's output the same
 * for one thread or two.
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "sim.h"
#include "statement_cmp.h"
#include "testutil.h"

#define DRAWS 200000

static struct sim_profile *
parse(const char *json)
{
    struct sim_err e = {{0}};
    struct sim_profile *p = sim_profile_parse(json, strlen(json), NULL, &e);
    if (!p)
        fprintf(stderr, "profile: %s\n", e.msg);
    CHECK(p != NULL);
    return p;
}

/* d with its trailing zeros cut: "200", "200.01". */
static void
plain_dec(struct pricing_dec d, char *buf, size_t n)
{
    pricing_dec_format(d, PRICING_SCALE, buf, n);
    char *end = strchr(buf, '.') ? buf + strlen(buf) : NULL;
    while (end && end[-1] == '0')
        *--end = '\0';
    if (end && end[-1] == '.')
        end[-1] = '\0';
}

static bool
near(double got, double want, double rel, const char *what)
{
    bool ok = fabs(got - want) <= rel * fabs(want);
    if (!ok) {
        fprintf(stderr, "%s: got %g, want %g within %g%%\n", what, got, want,
                rel * 100);
        test_failures++;
    }
    return ok;
}

/* Draws of the distributions of p's sessions and spells. */
static void
moments(void)
{
    struct sim_profile *p = parse(
        "{\"sessions\": {\"per_month\": 1, \"length\": {\"dist\": "
        "\"lognormal\", \"median\": 60, \"p95\": 600, \"max\": 2e6}}, "
        "\"sandbox\": {\"vcpu\": 1, \"memory_gib\": 1, \"disk_gib\": 0}, "
        "\"activity\": {\"busy\": {\"length\": {\"dist\": \"exponential\", "
        "\"mean\": 40, \"max\": 1e9}, \"cpu\": 1}, \"idle\": {\"length\": "
        "{\"dist\": \"histogram\", \"bins\": [{\"from\": 1, \"to\": 10, "
        "\"weight\": 3}, {\"from\": 10, \"to\": 100, \"weight\": 1}]}, "
        "\"cpu\": 0}}}");
    if (!p)
        return;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 42);
    double *x = malloc(DRAWS * sizeof(*x));
    /* Lognormal from median 60 and p95 600. */
    for (size_t i = 0; i < DRAWS; i++)
        x[i] = sim_dist_draw(&p->length, rng);
    gsl_sort(x, 1, DRAWS);
    double sigma = log(10) / 1.6448536269514722;
    near(gsl_stats_median_from_sorted_data(x, 1, DRAWS), 60, 0.02,
         "lognormal median");
    near(gsl_stats_quantile_from_sorted_data(x, 1, DRAWS, 0.95), 600, 0.03,
         "lognormal p95");
    near(gsl_stats_mean(x, 1, DRAWS), 60 * exp(sigma * sigma / 2), 0.03,
         "lognormal mean");
    /* Exponential: mean and standard deviation both 40. */
    for (size_t i = 0; i < DRAWS; i++)
        x[i] = sim_dist_draw(&p->busy.length, rng);
    near(gsl_stats_mean(x, 1, DRAWS), 40, 0.01, "exponential mean");
    near(gsl_stats_sd(x, 1, DRAWS), 40, 0.02, "exponential sd");
    /* Histogram: 3/4 uniform on [1, 10), 1/4 on [10, 100): mean 4.125 +
     * 13.75, and a quarter above 10. */
    size_t above = 0;
    for (size_t i = 0; i < DRAWS; i++) {
        x[i] = sim_dist_draw(&p->idle.length, rng);
        above += x[i] >= 10;
        CHECK(x[i] >= 1 && x[i] < 100);
    }
    near(gsl_stats_mean(x, 1, DRAWS), 17.875, 0.02, "histogram mean");
    near((double)above / DRAWS, 0.25, 0.02, "histogram upper share");
    free(x);
    gsl_rng_free(rng);
    sim_profile_free(p);
}

/* Poisson arrivals: count per month and the daily pattern's shares; and
 * every session's spells add up to its length and its egress. */
static void
arrivals(void)
{
    struct sim_profile *p = parse(
        "{\"sessions\": {\"poisson\": {\"per_hour\": 10, \"daily_pattern\": "
        "[3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, "
        "1, 1]}, \"length\": {\"dist\": \"exponential\", \"mean\": 300, "
        "\"max\": 3600}}, \"sandbox\": {\"vcpu\": 2, \"memory_gib\": 4, "
        "\"disk_gib\": 1}, \"activity\": {\"busy\": {\"length\": {\"dist\": "
        "\"exponential\", \"mean\": 20}, \"cpu\": 0.5}, \"idle\": "
        "{\"length\": {\"dist\": \"exponential\", \"mean\": 100}, \"cpu\": "
        "0.01}}, \"pauses\": {\"after_idle_s\": 60}, \"egress\": "
        "{\"per_session_mb\": {\"dist\": \"exponential\", \"mean\": 3}}}");
    if (!p)
        return;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    struct sim_month m;
    sim_month_init(&m, 2026, 11);
    struct sim_err e;
    double started = 0, first_hour = 0;
    bool sums = true, paused = false;
    for (int trial = 0; trial < 20; trial++) {
        CHECK(sim_month_generate(&m, p, rng, &e) == 0);
        started += (double)m.started;
        for (size_t k = 0; k < m.nsessions; k++) {
            const struct sim_session *s = &m.sessions[k];
            if (s->start >= m.start && (s->start / 3600) % 24 == 0)
                first_hour++;
            uint64_t n = 0;
            for (size_t i = 0; i < s->nspells; i++) {
                const struct sim_spell *x = &m.spells[s->first + i];
                n += x->seconds;
                paused |= x->paused;
                sums &= x->paused
                            ? x->vcpu == 0 && x->mem_bytes == 0
                            : x->vcpu == 20000 && x->mem_bytes == 4ULL << 30;
            }
            sums &= n == s->seconds;
        }
    }
    CHECK(sums);
    CHECK(paused);
    /* 10 an hour for 720 hours: 7,200 a month (sd 85 a month). */
    near(started / 20, 7200, 0.01, "poisson sessions a month");
    /* The first hour of the day weighs 3 of 26. */
    near(first_hour / started, 3.0 / 26, 0.05, "daily pattern's share");
    sim_month_release(&m);
    gsl_rng_free(rng);
    sim_profile_free(p);
}

/* A profile without randomness: 100 sessions of 3,630 s evenly spaced,
 * 2 vCPU and 4 GiB busy throughout, no disk, no egress. */
static const char fixed_profile[] =
    "{\"sessions\": {\"per_month\": 100, \"length\": {\"dist\": \"fixed\", "
    "\"value\": 3630}}, \"sandbox\": {\"vcpu\": 2, \"memory_gib\": 4, "
    "\"disk_gib\": 0}}";

static struct pricing_book *
book(const char *id)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s.json", BOOKS_DIR, id);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f)
        return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    struct pricing_err e;
    struct pricing_book *b = pricing_book_parse(buf, n, path, &e);
    if (!b)
        fprintf(stderr, "%s\n", e.msg);
    CHECK(b != NULL);
    return b;
}

static const struct {
    const char *book, *total;
} by_hand[] = {
    /* Per second, a subscription: 363,000 s x 2 vCPU x 0.000014 =
     * 10.164, x 4 GiB x 0.0000045 = 6.534, plus the fee of 150. */
    {"e2b-pro", "166.70"},
    /* Per minute rounded up, an instance type, an included credit: each
     * session bills 61 min of nano at 0.1486/h: 6,100 min = 15.107667;
     * less 5.944 of credit. */
    {"codesandbox-build", "9.16"},
    /* Per hour rates, memory per GB, a 60 s minimum the sessions pass:
     * 201.666... vCPU-h x 0.04048 = 8.163467; 4 GiB = 4.294967296 GB,
     * 433.075869 GB-h x 0.004445 = 1.925022. */
    {"aws-fargate", "10.09"},
    /* A monthly credit of 30 covers 14.30946 + 9.68484 of usage. */
    {"modal-starter", "0.00"},
};

static void
hand_computed(void)
{
    struct sim_profile *p = parse(fixed_profile);
    enum { N = sizeof(by_hand) / sizeof(by_hand[0]) };
    const struct pricing_book *books[N];
    for (size_t i = 0; i < N; i++)
        books[i] = book(by_hand[i].book);
    struct sim_month m;
    sim_month_init(&m, 2026, 11);
    struct sim_err e;
    struct sim_priced out[N];
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    CHECK(sim_month_generate(&m, p, rng, &e) == 0);
    CHECK(m.started == 100 && m.nsessions == 100);
    /* The same by hand whether the engine takes runs or seconds. */
    for (int how = SIM_FEED_RUNS; how <= SIM_FEED_SECONDS; how++) {
        CHECK(sim_price_month(&m, books, N, NULL, how, out, &e) == 0);
        for (size_t i = 0; i < N; i++) {
            CHECK(out[i].ok);
            if (!out[i].ok) {
                fprintf(stderr, "%s: %s\n", by_hand[i].book, out[i].err.msg);
                continue;
            }
            char total[48];
            pricing_dec_format(out[i].st->total, 2, total, sizeof(total));
            if (strcmp(total, by_hand[i].total) != 0) {
                fprintf(stderr, "%s (feed %d): got %s, want %s\n",
                        by_hand[i].book, how, total, by_hand[i].total);
                test_failures++;
            }
            CHECK(out[i].st->q.runs == 100);
            CHECK(out[i].st->q.running_s == 363000);
            pricing_statements_free(out[i].st, 1);
        }
    }
    /* The Monte Carlo of a month without randomness: every trial alike,
     * so the interval is 0 and it stops at the stopping rule's floor
     * (SIM_MIN_TRIALS), above the 4 asked. */
    struct sim_mc_opts o = {.seed = 3,
                            .precision = 0.005,
                            .min_trials = 4,
                            .max_trials = 50,
                            .threads = 1,
                            .year = 2026,
                            .month = 11};
    struct sim_mc_result r;
    CHECK(sim_monte_carlo(p, books, N, &o, &r, &e) == 0);
    CHECK(r.trials == 30);
    for (size_t i = 0; i < N; i++) {
        const struct sim_book_stats *b = &r.books[i];
        char mean[48];
        pricing_dec_format(sim_dec_div(b->totals[0], 1), 2, mean, sizeof(mean));
        CHECK_STR(mean, by_hand[i].total);
        CHECK(b->converged && b->half == 0 && b->sessions == 3000);
        CHECK(pricing_dec_cmp(sim_book_quantile(b, 0.05),
                              sim_book_quantile(b, 0.95)) == 0);
    }
    sim_mc_result_release(&r);
    /* A book that needs a price it does not know is reported, not
     * priced as free: aws-lambda has no storage price, and disk is held. */
    struct sim_profile *q = parse(
        "{\"sessions\": {\"per_month\": 10, \"length\": {\"dist\": \"fixed\", "
        "\"value\": 60}}, \"sandbox\": {\"vcpu\": 1, \"memory_gib\": 1, "
        "\"disk_gib\": 1}}");
    struct pricing_book *lambda = book("aws-lambda");
    const struct pricing_book *one[1] = {lambda};
    CHECK(sim_month_generate(&m, q, rng, &e) == 0);
    CHECK(sim_price_month(&m, one, 1, NULL, SIM_FEED_RUNS, out, &e) == 0);
    CHECK(!out[0].ok && strstr(out[0].err.msg, "storage") != NULL);
    pricing_book_free(lambda);
    sim_profile_free(q);
    for (size_t i = 0; i < N; i++)
        pricing_book_free((struct pricing_book *)books[i]);
    gsl_rng_free(rng);
    sim_month_release(&m);
    sim_profile_free(p);
}

/* The same seed gives the same trials, one thread or two. */
static void
threads(void)
{
    struct sim_profile *p = parse(
        "{\"sessions\": {\"poisson\": {\"per_hour\": 1}, \"length\": "
        "{\"dist\": \"lognormal\", \"median\": 300, \"p95\": 1800}}, "
        "\"sandbox\": {\"vcpu\": 2, \"memory_gib\": 4, \"disk_gib\": 1}, "
        "\"activity\": {\"busy\": {\"length\": {\"dist\": \"exponential\", "
        "\"mean\": 30}, \"cpu\": 0.8}, \"idle\": {\"length\": {\"dist\": "
        "\"exponential\", \"mean\": 60}, \"cpu\": 0}}, \"pauses\": "
        "{\"after_idle_s\": 120}}");
    struct pricing_book *b[2] = {book("e2b-hobby"), book("daytona")};
    const struct pricing_book *books[2] = {b[0], b[1]};
    struct sim_mc_opts o = {.seed = 11,
                            .precision = 0.0001,
                            .min_trials = 2,
                            .max_trials = 20,
                            .threads = 1,
                            .year = 2026,
                            .month = 11};
    struct sim_mc_result one, two;
    struct sim_err e;
    CHECK(sim_monte_carlo(p, books, 2, &o, &one, &e) == 0);
    o.threads = 2;
    CHECK(sim_monte_carlo(p, books, 2, &o, &two, &e) == 0);
    CHECK(one.trials == 20 && two.trials == 20);
    for (size_t i = 0; i < 2; i++) {
        CHECK(one.books[i].trials == two.books[i].trials);
        CHECK(one.books[i].sessions == two.books[i].sessions);
        for (size_t k = 0; k < one.books[i].trials; k++)
            CHECK(one.books[i].totals[k].v == two.books[i].totals[k].v);
        /* Trials differ from each other: the seed is per trial. */
        CHECK(one.books[i].totals[0].v != one.books[i].totals[1].v);
    }
    /* Another seed, other months. */
    struct sim_mc_result other;
    o.seed = 12;
    CHECK(sim_monte_carlo(p, books, 2, &o, &other, &e) == 0);
    CHECK(other.books[0].totals[0].v != one.books[0].totals[0].v);
    sim_mc_result_release(&one);
    sim_mc_result_release(&two);
    sim_mc_result_release(&other);
    pricing_book_free(b[0]);
    pricing_book_free(b[1]);
    sim_profile_free(p);
}

/*
 * Draws the month of m again (rng set as for m) session by session, as
 * the Monte Carlo does (sim_price_drawn): the same sessions, the same
 * measures as the whole month's, the same statements as runs (priced
 * from m as runs), or the same errors. Frees drawn's statements.
 */
static void
drawn_alike(const struct sim_month *m, const struct sim_profile *p,
            gsl_rng *rng, const struct pricing_book *const *books,
            size_t nbooks, const struct sim_priced *runs,
            struct sim_priced *drawn, const char *name)
{
    struct sim_month d;
    struct sim_month_use *ud = calloc(nbooks, sizeof(*ud)), um;
    struct sim_err e;
    sim_month_init(&d, m->year, m->month);
    sim_month_begin(&d, p, rng);
    CHECK(sim_price_drawn(&d, books, nbooks, NULL, false, drawn, ud, &e) == 0);
    CHECK(d.dropped + d.nsessions == m->nsessions);
    CHECK(d.started == m->started);
    /* One session is held at a time, not the month. */
    CHECK(d.nsessions <= 1 && d.sessions_cap <= 256);
    /* Each book's measures are the whole month's under its cut. */
    for (size_t i = 0; i < nbooks; i++) {
        CHECK(sim_month_measure(m, sim_book_cut(p, books[i]), &um, &e) == 0);
        if (ud[i].peak_running == um.peak_running &&
            ud[i].longest_run_s == um.longest_run_s &&
            ud[i].peak_disk_bytes == um.peak_disk_bytes)
            continue;
        fprintf(stderr,
                "%s under %s: drawn a session at a time, measures %llu %llu "
                "%llu, the whole month %llu %llu %llu\n",
                name, pricing_book_id(books[i]),
                (unsigned long long)ud[i].peak_running,
                (unsigned long long)ud[i].longest_run_s,
                (unsigned long long)ud[i].peak_disk_bytes,
                (unsigned long long)um.peak_running,
                (unsigned long long)um.longest_run_s,
                (unsigned long long)um.peak_disk_bytes);
        test_failures++;
    }
    free(ud);
    for (size_t i = 0; i < nbooks; i++) {
        const char *why =
            runs[i].ok != drawn[i].ok ? "one failed"
            : !runs[i].ok ? (strcmp(runs[i].err.msg, drawn[i].err.msg)
                                 ? "the errors differ"
                                 : NULL)
                          : statements_differ(runs[i].st, 1, drawn[i].st, 1);
        if (why) {
            fprintf(stderr, "%s under %s: the month and drawn: %s\n", name,
                    pricing_book_id(books[i]), why);
            test_failures++;
        }
        pricing_statements_free(drawn[i].st, 1);
        drawn[i].st = NULL;
    }
    sim_month_release(&d);
}

/*
 * Issue 10's "exact on the same rules": months of every shipped profile,
 * priced under every shipped book as runs (what costsim does) and as
 * the per-second samples they stand for (what the meter would store),
 * give the same statements to the last decimal, or the same error.
 */
static void
runs_and_seconds(void)
{
    static const char *const profiles[] = {"code-execution", "data-analysis",
                                           "coding-agent", "browser-automation",
                                           "rl-evaluation"};
    const struct pricing_book *books[64];
    size_t nbooks = 0;
    DIR *d = opendir(BOOKS_DIR);
    struct dirent *de;
    CHECK(d != NULL);
    while (d && (de = readdir(d)) && nbooks < 64) {
        size_t n = strlen(de->d_name);
        if (n > 5 && strcmp(de->d_name + n - 5, ".json") == 0) {
            char id[256];
            snprintf(id, sizeof(id), "%.*s", (int)(n - 5), de->d_name);
            books[nbooks++] = book(id);
        }
    }
    if (d)
        closedir(d);
    CHECK(nbooks >= 20);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    struct sim_priced *runs = calloc(nbooks, sizeof(*runs));
    struct sim_priced *secs = calloc(nbooks, sizeof(*secs));
    struct sim_priced *drawn = calloc(nbooks, sizeof(*drawn));
    size_t priced = 0, compared = 0;
    for (size_t k = 0; k < sizeof(profiles) / sizeof(profiles[0]); k++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s.json", PROFILES_DIR, profiles[k]);
        struct sim_err e;
        struct sim_profile *p = sim_profile_load(path, &e);
        CHECK(p != NULL);
        if (!p)
            continue;
        struct sim_month m;
        sim_month_init(&m, 2026, 11);
        gsl_rng_set(rng, 100 + k);
        CHECK(sim_month_generate(&m, p, rng, &e) == 0);
        CHECK(sim_price_month(&m, books, nbooks, NULL, SIM_FEED_RUNS, runs,
                              &e) == 0);
        CHECK(sim_price_month(&m, books, nbooks, NULL, SIM_FEED_SECONDS, secs,
                              &e) == 0);
        /* The Monte Carlo's way, the same seed: the same statements. */
        gsl_rng_set(rng, 100 + k);
        drawn_alike(&m, p, rng, books, nbooks, runs, drawn, profiles[k]);
        for (size_t i = 0; i < nbooks; i++) {
            const char *why =
                runs[i].ok != secs[i].ok ? "one failed"
                : !runs[i].ok ? (strcmp(runs[i].err.msg, secs[i].err.msg)
                                     ? "the errors differ"
                                     : NULL)
                              : statements_differ(runs[i].st, 1, secs[i].st, 1);
            if (why) {
                fprintf(stderr, "%s under %s: runs and seconds: %s\n",
                        profiles[k], pricing_book_id(books[i]), why);
                test_failures++;
            }
            priced += runs[i].ok;
            compared++;
            pricing_statements_free(runs[i].st, 1);
            pricing_statements_free(secs[i].st, 1);
        }
        sim_month_release(&m);
        sim_profile_free(p);
    }
    /* Most books price most profiles: the comparison is of statements,
     * not of errors. */
    CHECK(priced * 2 > compared);
    printf("runs and seconds: %zu months of book and profile alike, %zu "
           "priced\n",
           compared, priced);
    free(runs);
    free(secs);
    free(drawn);
    gsl_rng_free(rng);
    for (size_t i = 0; i < nbooks; i++)
        pricing_book_free((struct pricing_book *)books[i]);
}

/* The most sandboxes running, and disk held, at one second of m, second
 * by second: what the measures' sorted and folded changes must give. */
static void
brute_peaks(const struct sim_month *m, uint64_t *running, uint64_t *disk)
{
    size_t n = (size_t)(m->end - m->start) + 1;
    int64_t *dr = calloc(n, sizeof(*dr)), *dd = calloc(n, sizeof(*dd));
    *running = *disk = 0;
    CHECK(dr && dd);
    for (size_t k = 0; dr && dd && k < m->nsessions; k++) {
        const struct sim_session *s = &m->sessions[k];
        int64_t t = s->start;
        for (size_t i = 0; i < s->nspells; i++) {
            const struct sim_spell *x = &m->spells[s->first + i];
            int64_t a = t < m->start ? m->start : t;
            int64_t z = t + x->seconds > m->end ? m->end : t + x->seconds;
            if (a < z) {
                dd[a - m->start] += (int64_t)x->disk_bytes;
                dd[z - m->start] -= (int64_t)x->disk_bytes;
                dr[a - m->start] += !x->paused;
                dr[z - m->start] -= !x->paused;
            }
            t += x->seconds;
        }
    }
    int64_t r = 0, d = 0;
    for (size_t i = 0; dr && dd && i < n; i++) {
        r += dr[i];
        d += dd[i];
        if (r > (int64_t)*running)
            *running = (uint64_t)r;
        if (d > (int64_t)*disk)
            *disk = (uint64_t)d;
    }
    free(dr);
    free(dd);
}

/* A crowd of short sessions with pauses: many sandboxes running at once
 * and many stretches each, so that the measures fold the changes behind
 * the latest start again and again while the month is drawn; their
 * peaks against the month's seconds counted one by one. */
static void
drawn_crowd(void)
{
    struct sim_profile *p = parse(
        "{\"sessions\": {\"poisson\": {\"per_hour\": 20}, \"length\": "
        "{\"dist\": \"lognormal\", \"median\": 3600, \"p95\": 14400}}, "
        "\"sandbox\": {\"vcpu\": 1, \"memory_gib\": 1, \"disk_gib\": 2}, "
        "\"activity\": {\"busy\": {\"length\": {\"dist\": \"exponential\", "
        "\"mean\": 30}, \"cpu\": 1}, \"idle\": {\"length\": {\"dist\": "
        "\"exponential\", \"mean\": 120}, \"cpu\": 0}}, "
        "\"pauses\": {\"after_idle_s\": 60, \"probability\": 0.5}}");
    const struct pricing_book *books[] = {book("e2b-pro")};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    struct sim_priced runs[1], drawn[1];
    struct sim_err e;
    struct sim_month m;
    sim_month_init(&m, 2026, 11);
    if (p && books[0]) {
        gsl_rng_set(rng, 7);
        CHECK(sim_month_generate(&m, p, rng, &e) == 0);
        CHECK(m.nsessions > 10000);
        struct sim_month_use u;
        uint64_t running, disk;
        CHECK(sim_month_measure(&m, SIM_NO_CUT, &u, &e) == 0);
        brute_peaks(&m, &running, &disk);
        CHECK(running > 20 && u.peak_running == running);
        CHECK(u.peak_disk_bytes == disk);
        CHECK(sim_price_month(&m, books, 1, NULL, SIM_FEED_RUNS, runs, &e) ==
              0);
        gsl_rng_set(rng, 7);
        drawn_alike(&m, p, rng, books, 1, runs, drawn, "crowd");
        pricing_statements_free(runs[0].st, 1);
    }
    sim_month_release(&m);
    pricing_book_free((struct pricing_book *)books[0]);
    gsl_rng_free(rng);
    sim_profile_free(p);
}

/*
 * N sandboxes at once (sessions.concurrent): each sandbox's sessions
 * follow one another without a gap, so every second of the month has
 * exactly N sandboxes, in a steady month (sessions from before it, cut
 * at its start) and in a first one (all starting with it); sessions
 * come in order of start, and the month measures N at once. With pauses,
 * fewer run at once, never more, and the sandboxes are still all there
 * (disk held by N).
 */
static void
concurrent(void)
{
    static const char *const json[] = {
        "{\"sessions\": {\"concurrent\": 10, \"length\": {\"dist\": "
        "\"lognormal\", \"median\": 1800, \"p95\": 20000}}, \"sandbox\": "
        "{\"vcpu\": 1, \"memory_gb\": 2, \"disk_gib\": 1}}",
        "{\"sessions\": {\"concurrent\": 3, \"length\": {\"dist\": "
        "\"fixed\", \"value\": 7200}}, \"sandbox\": {\"vcpu\": 1, "
        "\"memory_gb\": 2, \"disk_gib\": 1}, \"activity\": {\"busy\": "
        "{\"length\": {\"dist\": \"exponential\", \"mean\": 30}, \"cpu\": "
        "1}, \"idle\": {\"length\": {\"dist\": \"exponential\", \"mean\": "
        "600}, \"cpu\": 0}}, \"pauses\": {\"after_idle_s\": 60}}",
    };
    static const uint64_t n[] = {10, 3};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    for (size_t k = 0; k < 2; k++) {
        struct sim_profile *p = parse(json[k]);
        for (int first = 0; p && first < 2; first++) {
            struct sim_month m;
            struct sim_err e;
            sim_month_init(&m, 2026, 11);
            m.first = first;
            gsl_rng_set(rng, 11 + k);
            CHECK(sim_month_generate(&m, p, rng, &e) == 0);
            uint64_t secs = 0;
            bool ordered = true;
            for (size_t i = 0; i < m.nsessions; i++) {
                const struct sim_session *x = &m.sessions[i];
                int64_t lo = x->start > m.start ? x->start : m.start;
                int64_t hi = x->start + (int64_t)x->seconds;
                hi = hi < m.end ? hi : m.end;
                secs += hi > lo ? (uint64_t)(hi - lo) : 0;
                ordered &= i == 0 || x->start >= m.sessions[i - 1].start;
                CHECK(!first || x->start >= m.start);
            }
            CHECK(ordered);
            CHECK(secs == n[k] * (uint64_t)(m.end - m.start));
            struct sim_month_use u;
            CHECK(sim_month_measure(&m, SIM_NO_CUT, &u, &e) == 0);
            if (k == 0)
                CHECK(u.peak_running == n[k]);
            else
                CHECK(u.peak_running >= 1 && u.peak_running <= n[k]);
            CHECK(u.peak_disk_bytes == n[k] * (1ULL << 30));
            if (secs != n[k] * (uint64_t)(m.end - m.start))
                fprintf(stderr, "concurrent %zu, first %d: %llu s\n", k, first,
                        (unsigned long long)secs);
            sim_month_release(&m);
        }
        sim_profile_free(p);
    }
    gsl_rng_free(rng);
}

/* A book of 1 a vCPU-hour with the autopause given (NULL: none). */
static struct pricing_book *
paused_book(const char *pauses)
{
    char json[512];
    snprintf(json, sizeof(json),
             "{\"id\": \"p%s\", \"currency\": \"USD\", \"effective_from\": "
             "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
             "\"1\", \"per\": \"hour\"}, \"memory\": {\"basis\": "
             "\"allocated\", \"unit\": \"GiB\", \"rate\": \"0\", \"per\": "
             "\"hour\"}, \"storage\": null, \"egress\": {\"rate\": \"0\"}, "
             "\"per_run\": "
             "\"0\"%s%s%s}",
             pauses ? pauses : "",
             pauses ? ", \"pauses\": {\"after_idle_s\": " : "",
             pauses ? pauses : "", pauses ? "}" : "");
    struct pricing_err e;
    struct pricing_book *b =
        pricing_book_parse(json, strlen(json), "inline", &e);
    if (!b)
        fprintf(stderr, "%s\n", e.msg);
    CHECK(b != NULL);
    return b;
}

/*
 * Each book's own autopause (its "pauses"), unless the profile gives
 * pauses of its own: 100 sessions of an hour, busy 600 s, idle 1,200 s,
 * busy 600 s, idle 1,200 s, without randomness; 900 bytes of egress a
 * session, whose 300 bytes past the first spell split the first idle
 * stretch at its 300th second. An idle stretch longer than the cut is
 * paused from the cut on: running seconds a session of 3,600 (no
 * autopause), 2 x 600 + 2 x 600 (600 s), 3,598 (1,199 s: one second of
 * each stretch), 3,600 (1,200 s: not longer), 1,200 (0 s); the longest
 * stretch running 3,600, 1,200, 1,799, 3,600, 600. The profile's own
 * pauses (after 300 s) override every book's: 1,800 s, the longest 900.
 */
static void
book_pauses(void)
{
    static const char activity[] =
        "{\"sessions\": {\"per_month\": 100, \"length\": {\"dist\": "
        "\"fixed\", \"value\": 3600}}, \"sandbox\": {\"vcpu\": 1, "
        "\"memory_gib\": 1, \"disk_gib\": 0}, \"activity\": {\"busy\": "
        "{\"length\": {\"dist\": \"fixed\", \"value\": 600}, \"cpu\": 1}, "
        "\"idle\": {\"length\": {\"dist\": \"fixed\", \"value\": 1200}, "
        "\"cpu\": 0}}, \"egress\": {\"per_session_mb\": {\"dist\": "
        "\"fixed\", \"value\": 0.0009}}%s}";
    static const struct {
        const char *pauses;
        uint32_t cut;
        uint64_t running, longest, overridden;
    } want[] = {
        {NULL, SIM_NO_CUT, 3600, 3600, 1800},
        {"600", 600, 2400, 1200, 1800},
        {"1199", 1199, 3598, 1799, 1800},
        {"1200", 1200, 3600, 3600, 1800},
        {"0", 0, 1200, 600, 1800},
    };
    enum { N = sizeof(want) / sizeof(want[0]) };
    const struct pricing_book *books[N];
    struct pricing_book *own[N];
    for (size_t i = 0; i < N; i++)
        books[i] = own[i] = paused_book(want[i].pauses);
    for (int override = 0; override <= 1; override++) {
        char json[1024];
        snprintf(json, sizeof(json), activity,
                 override ? ", \"pauses\": {\"after_idle_s\": 300}" : "");
        struct sim_profile *p = parse(json);
        gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
        struct sim_month m;
        struct sim_err e;
        struct sim_priced out[N];
        struct sim_month_use use[N], u;
        sim_month_init(&m, 2026, 11);
        CHECK(sim_month_generate(&m, p, rng, &e) == 0);
        CHECK(m.nsessions == 100);
        for (int how = SIM_FEED_RUNS; how <= SIM_FEED_SECONDS; how++) {
            CHECK(sim_price_month(&m, books, N, NULL, how, out, &e) == 0);
            for (size_t i = 0; i < N; i++) {
                uint64_t run = override ? want[i].overridden : want[i].running;
                CHECK(out[i].ok && out[i].st->q.running_s == 100 * run);
                CHECK(out[i].ok && out[i].st->q.egress == 100 * 900);
                pricing_statements_free(out[i].st, 1);
            }
        }
        for (size_t i = 0; i < N; i++) {
            uint32_t cut = sim_book_cut(p, books[i]);
            CHECK(cut == (override ? SIM_NO_CUT : want[i].cut));
            CHECK(sim_month_measure(&m, cut, &u, &e) == 0);
            CHECK(u.longest_run_s == (override ? 900 : want[i].longest));
            CHECK(u.peak_running == 1);
        }
        /* Drawn a session at a time, as the Monte Carlo does: the same
         * running seconds and measures, book by book. */
        sim_month_begin(&m, p, rng);
        CHECK(sim_price_drawn(&m, books, N, NULL, false, out, use, &e) == 0);
        for (size_t i = 0; i < N; i++) {
            uint64_t run = override ? want[i].overridden : want[i].running;
            CHECK(out[i].ok && out[i].st->q.running_s == 100 * run);
            CHECK(use[i].longest_run_s == (override ? 900 : want[i].longest));
            pricing_statements_free(out[i].st, 1);
        }
        sim_month_release(&m);
        gsl_rng_free(rng);
        sim_profile_free(p);
    }
    for (size_t i = 0; i < N; i++)
        pricing_book_free(own[i]);
}

/*
 * A book's fixed size ("fixed_size": every sandbox runs at it, Sprites'
 * 8 vCPU and 4 GB): a running second is priced at that size whatever
 * the workload asks, its use cut to the size; a paused second holds
 * nothing. 100 sessions of an hour of 2 vCPU and 1 GiB: 8 vCPU-hours
 * and 4 GB-hours a session, where the same book without the size bills
 * 2 and 1.073741824. The size is also the largest sandbox: 8 vCPU fits,
 * 8.0001 does not; 4 GB fits, one byte more does not.
 */
static void
fixed_size(void)
{
    static const char prof[] =
        "{\"sessions\": {\"per_month\": 100, \"length\": {\"dist\": "
        "\"fixed\", \"value\": 3600}}, \"sandbox\": {\"vcpu\": 2, "
        "\"memory_gib\": 1, \"disk_gib\": 0}}";
    static const char fmt[] =
        "{\"id\": \"f\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
        "\"1\", \"per\": \"hour\"}, \"memory\": {\"basis\": \"allocated\", "
        "\"unit\": \"GB\", \"rate\": \"1\", \"per\": \"hour\"}, \"storage\": "
        "null, \"egress\": null, \"per_run\": \"0\"%s}";
    const char *sizes[] = {
        ", \"fixed_size\": {\"unit\": \"GB\", \"vcpu\": \"8\", \"memory\": "
        "\"4\"}",
        ""};
    const char *want_cpu[] = {"800.000000", "200.000000"};
    const char *want_mem[] = {"400.000000", "107.374182"};
    struct pricing_book *b[2];
    for (int i = 0; i < 2; i++) {
        char json[1024];
        snprintf(json, sizeof(json), fmt, sizes[i]);
        struct pricing_err pe;
        b[i] = pricing_book_parse(json, strlen(json), "inline", &pe);
        if (!b[i])
            fprintf(stderr, "%s\n", pe.msg);
        CHECK(b[i] != NULL);
    }
    struct sim_profile *p = parse(prof);
    if (!b[0] || !b[1] || !p)
        return;
    const struct pricing_book *books[2] = {b[0], b[1]};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    struct sim_month m;
    struct sim_err e;
    struct sim_priced out[2];
    sim_month_init(&m, 2026, 11);
    CHECK(sim_month_generate(&m, p, rng, &e) == 0);
    for (int how = SIM_FEED_RUNS; how <= SIM_FEED_SECONDS; how++) {
        CHECK(sim_price_month(&m, books, 2, NULL, how, out, &e) == 0);
        for (int i = 0; i < 2; i++) {
            char cpu[48] = "-", mem[48] = "-";
            for (size_t k = 0; out[i].ok && k < out[i].st->nlines; k++) {
                const struct pricing_line *l = &out[i].st->lines[k];
                if (strcmp(l->kind, "cpu") == 0)
                    pricing_dec_format(l->amount, 6, cpu, sizeof(cpu));
                if (strcmp(l->kind, "memory") == 0)
                    pricing_dec_format(l->amount, 6, mem, sizeof(mem));
            }
            CHECK_STR(cpu, want_cpu[i]);
            CHECK_STR(mem, want_mem[i]);
            if (out[i].ok)
                pricing_statements_free(out[i].st, 1);
        }
    }
    /* The size as the largest sandbox, checked against the month's. */
    static const struct {
        uint64_t vcpu, mem;
        unsigned broken;
    } fit[] = {
        {80000, 4000000000ULL, 0},
        {80001, 4000000000ULL, 1u << SIM_LIMIT_SANDBOX_VCPU},
        {80000, 4000000001ULL, 1u << SIM_LIMIT_SANDBOX_MEMORY},
    };
    for (size_t k = 0; k < sizeof(fit) / sizeof(fit[0]); k++) {
        struct sim_month_use u = {.largest_vcpu = fit[k].vcpu,
                                  .largest_mem_bytes = fit[k].mem};
        struct sim_plan_month pm;
        sim_plan_check(b[0], &u, NULL, &pm);
        CHECK(pm.broken == fit[k].broken);
        sim_plan_check(b[1], &u, NULL, &pm);
        CHECK(pm.broken == 0);
    }
    sim_month_release(&m);
    gsl_rng_free(rng);
    sim_profile_free(p);
    pricing_book_free(b[0]);
    pricing_book_free(b[1]);
}

/* n sessions of len seconds of one sandbox of vcpu and mem_gb, drawn
 * for November 2026 and priced on the 3 books read as how into out
 * (each ok one's statement to free): false if nothing priced. */
static bool
sized_month(int n, int len, const char *vcpu, const char *mem_gb,
            const struct pricing_book *const *books, enum sim_feed how,
            struct sim_priced *out)
{
    char prof[512];
    snprintf(prof, sizeof(prof),
             "{\"sessions\": {\"per_month\": %d, \"length\": {\"dist\": "
             "\"fixed\", \"value\": %d}}, \"sandbox\": {\"vcpu\": %s, "
             "\"memory_gb\": %s, \"disk_gib\": 0}}",
             n, len, vcpu, mem_gb);
    struct sim_profile *p = parse(prof);
    if (!p)
        return false;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    struct sim_month m;
    struct sim_err e;
    sim_month_init(&m, 2026, 11);
    bool ok = sim_month_generate(&m, p, rng, &e) == 0 &&
              sim_price_month(&m, books, 3, NULL, how, out, &e) == 0;
    if (!ok)
        fprintf(stderr, "sized_month: %s\n", e.msg);
    CHECK(ok);
    sim_month_release(&m);
    gsl_rng_free(rng);
    sim_profile_free(p);
    return ok;
}

/*
 * Memory that comes only with whole vCPUs ("memory_per_vcpu", Vercel's
 * 2 GB per vCPU): a running second is priced at the fewest whole vCPUs
 * that hold the workload's vCPUs and memory, with 2 GB each; its use is
 * the workload's. 100 sessions of an hour each, on a book billing
 * allocated vCPU-hours and GB-hours at 1 (and the CPU used, at 1, on a
 * second book), beside the same book without the key:
 * - 2 vCPU and 4 GB: 2 vCPU, 4 GB, as asked;
 * - 2 vCPU and one byte more: 3 vCPU, 6 GB;
 * - 2.0001 vCPU and 1 GB: 3 vCPU, 6 GB;
 * - 0.5 vCPU and 0.5 GB: 1 vCPU, 2 GB, the CPU used still 0.5.
 * 2,000 GB fits in 1,000 vCPU, the most a profile asks; a byte more
 * fails the sized books, naming the size, and the other prices.
 */
static void
memory_per_vcpu(void)
{
    static const char fmt[] =
        "{\"id\": \"v%d\", \"currency\": \"USD\", \"effective_from\": "
        "\"2026-01-01\", \"cpu\": {\"basis\": \"%s\", \"rate\": "
        "\"1\", \"per\": \"hour\"}, \"memory\": {\"basis\": \"allocated\", "
        "\"unit\": \"GB\", \"rate\": \"1\", \"per\": \"hour\"}, \"storage\": "
        "null, \"egress\": null, \"per_run\": \"0\"%s}";
    static const char sized[] =
        ", \"memory_per_vcpu\": {\"unit\": \"GB\", \"memory\": \"2\"}";
    /* Per case: the CPU and memory lines on each book. */
    static const struct {
        const char *vcpu, *mem_gb;
        const char *cpu[3], *mem[3];
    } want[] = {
        {"2", "4", {"200", "200", "200"}, {"400", "400", "400"}},
        {"2", "4.000000001", {"300", "200", "200"}, {"600", "600", "400"}},
        {"2.0001", "1", {"300", "200.01", "200.01"}, {"600", "600", "100"}},
        {"0.5", "0.5", {"100", "50", "50"}, {"200", "200", "50"}},
    };
    struct pricing_book *b[3];
    for (int i = 0; i < 3; i++) {
        char json[1024];
        snprintf(json, sizeof(json), fmt, i, i == 1 ? "used" : "allocated",
                 i < 2 ? sized : "");
        struct pricing_err pe;
        b[i] = pricing_book_parse(json, strlen(json), "inline", &pe);
        if (!b[i])
            fprintf(stderr, "%s\n", pe.msg);
        CHECK(b[i] != NULL);
    }
    if (!b[0] || !b[1] || !b[2])
        goto out;
    const struct pricing_book *books[3] = {b[0], b[1], b[2]};
    struct sim_priced out[3];
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        for (int how = SIM_FEED_RUNS; how <= SIM_FEED_SECONDS; how++) {
            if (!sized_month(100, 3600, want[k].vcpu, want[k].mem_gb, books,
                             how, out))
                continue;
            for (int i = 0; i < 3; i++) {
                char cpu[48] = "-", mem[48] = "-";
                for (size_t j = 0; out[i].ok && j < out[i].st->nlines; j++) {
                    const struct pricing_line *l = &out[i].st->lines[j];
                    if (strcmp(l->kind, "cpu") == 0)
                        plain_dec(l->amount, cpu, sizeof(cpu));
                    if (strcmp(l->kind, "memory") == 0)
                        plain_dec(l->amount, mem, sizeof(mem));
                }
                if (strcmp(cpu, want[k].cpu[i]) != 0 ||
                    strcmp(mem, want[k].mem[i]) != 0) {
                    fprintf(stderr,
                            "memory_per_vcpu: %s vCPU, %s GB on v%d: cpu %s "
                            "(want %s), memory %s (want %s)\n",
                            want[k].vcpu, want[k].mem_gb, i, cpu,
                            want[k].cpu[i], mem, want[k].mem[i]);
                    test_failures++;
                }
                if (out[i].ok)
                    pricing_statements_free(out[i].st, 1);
            }
        }
    }
    for (int more = 0; more <= 1; more++) {
        if (!sized_month(1, 60, "1", more ? "2000.000000001" : "2000", books,
                         SIM_FEED_RUNS, out))
            continue;
        for (int i = 0; i < 3; i++) {
            bool fails = more && i < 2;
            CHECK(out[i].ok == !fails);
            if (fails)
                CHECK(strstr(out[i].err.msg,
                             "takes more than 1000 vCPU of 2000000000 bytes "
                             "each (memory_per_vcpu)") != NULL);
            if (out[i].ok)
                pricing_statements_free(out[i].st, 1);
        }
    }
out:
    for (int i = 0; i < 3; i++)
        pricing_book_free(b[i]);
}

/* Months past December and before January (--months counts on from
 * --month): into the years after and before, each month's bounds. */
static void
periods(void)
{
    static const struct {
        int month, year_got, month_got;
        int64_t start;
    } want[] = {
        {13, 2027, 1, 1798761600},  {24, 2027, 12, 1827619200},
        {25, 2028, 1, 1830297600},  {0, 2025, 12, 1764547200},
        {-11, 2025, 1, 1735689600}, {-12, 2024, 12, 1733011200},
        {12, 2026, 12, 1796083200},
    };
    struct sim_month m;
    sim_month_init(&m, 2026, 11);
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        sim_month_period(&m, 2026, want[i].month);
        if (m.year != want[i].year_got || m.month != want[i].month_got ||
            m.start != want[i].start) {
            fprintf(stderr, "month %d of 2026: %04d-%02d from %lld\n",
                    want[i].month, m.year, m.month, (long long)m.start);
            test_failures++;
        }
    }
    /* A month's end is the next one's start. */
    sim_month_period(&m, 2026, 14);
    CHECK(m.end - m.start == 28 * 86400);
    sim_month_release(&m);
}

int
main(void)
{
    gsl_set_error_handler_off();
    concurrent();
    moments();
    arrivals();
    hand_computed();
    book_pauses();
    periods();
    fixed_size();
    memory_per_vcpu();
    threads();
    runs_and_seconds();
    drawn_crowd();
    return test_result();
}
