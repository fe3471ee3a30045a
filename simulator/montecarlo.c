/*
 * montecarlo.c - simulated months, priced under every book until each
 * book's mean monthly total is known to the precision asked.
 *
 * Reproducibility: trial k draws from a generator seeded from the run's
 * seed and k alone, and the trials of a batch are put together in trial
 * order whichever thread drew them; books stop only between batches. So
 * --threads changes how fast, never what. Money stays exact: each
 * trial's total and lines are decimals from the engine, summed exactly;
 * only the interval and the stopping rule use doubles (GSL statistics).
 * Each priced month is also checked against the book's plan (limits.c):
 * the add-on it has to buy adds its fee, an "addon" line of the
 * simulator's own, and the limits it breaks are counted.
 */
#include "sim_int.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_statistics_double.h>

/* Trials between two looks at the intervals: fixed, not per thread, so
 * that where a book stops does not depend on the threads. More threads
 * than a batch has trials draw the next batches ahead (a round); the
 * looks still come batch by batch, and what a stopped book was priced
 * ahead is dropped, so every core works and the output stays the same. */
#define BATCH 8

const char *const sim_line_kinds[SIM_NKINDS] = {
    "cpu",
    "memory",
    "instance",
    "storage",
    "egress",
    "runs",
    "autopause_credit",
    "subscription",
    "included_credit",
    "promotional_credit",
    "minimum_commit",
    "credit_grant",
    "addon",
    "other",
};

/* What one trial (its months) gave one book: sums over the months;
 * each month's total and plan are in the worker's month arrays. */
struct cell {
    bool priced, ok;
    char reason[512];
    struct pricing_dec total;
    struct pricing_dec kind[SIM_NKINDS];
    unsigned unpriced; /* the statements': dimensions left out */
    struct pricing_dec unpriced_qty[PRICING_NDIMS];
};

/* A trial's month of a book: its total and its plan. */
struct month_cell {
    struct pricing_dec total;
    struct sim_plan_month plan;
};

struct worker {
    const struct sim_profile *const *p; /* one a month */
    const struct pricing_book *const *books;
    size_t nbooks;
    const bool *active;
    const struct sim_mc_opts *o;
    size_t first, count;       /* the batch: trials [first, first + count) */
    unsigned index;            /* takes trials index, index + threads, ... */
    struct cell *cells;        /* count x nbooks */
    struct month_cell *months; /* count x nbooks x months */
    size_t *started;           /* count */
    double (*control)[SIM_NCONTROLS]; /* count */
    struct sim_mem mem;               /* the thread's bound (used: 0) */
    int rc;
    struct sim_err err;
};

static uint64_t
splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Trial k's seed: from the run's seed and k, nothing shared. MT19937
 * takes 32 bits of it. */
static unsigned long
trial_seed(uint64_t seed, size_t k)
{
    uint64_t x = splitmix64(seed ^ splitmix64((uint64_t)k));
    return (unsigned long)((x ^ (x >> 32)) & 0xffffffffUL);
}

static int
kind_index(const char *kind)
{
    for (int i = 0; i < SIM_NKINDS - 1; i++)
        if (strcmp(sim_line_kinds[i], kind) == 0)
            return i;
    return SIM_NKINDS - 1;
}

/* Keeps what the statement says in c: its total, lines by kind and
 * the quantities it left unpriced. */
static void
take(struct cell *c, const struct pricing_book *b,
     const struct pricing_statement *st)
{
    c->unpriced |= st->unpriced;
    if (pricing_dec_add(c->total, st->total, &c->total) != PRICING_OK) {
        c->ok = false;
        snprintf(c->reason, sizeof(c->reason), "totals overflow");
    }
    for (int d = 0; d < PRICING_NDIMS && c->ok; d++) {
        const char *unit;
        struct pricing_err pe;
        struct pricing_dec q;
        if (!(st->unpriced >> d & 1))
            continue;
        if (pricing_unpriced_quantity(b, &st->q, (enum pricing_dim)d, &q, &unit,
                                      &pe) < 0) {
            c->ok = false;
            snprintf(c->reason, sizeof(c->reason), "%s", pe.msg);
        } else if (pricing_dec_add(c->unpriced_qty[d], q,
                                   &c->unpriced_qty[d]) != PRICING_OK) {
            c->ok = false;
            snprintf(c->reason, sizeof(c->reason), "unpriced sums overflow");
        }
    }
    for (size_t l = 0; l < st->nlines && c->ok; l++) {
        struct pricing_dec *k = &c->kind[kind_index(st->lines[l].kind)];
        if (pricing_dec_add(*k, st->lines[l].amount, k) != PRICING_OK) {
            c->ok = false;
            snprintf(c->reason, sizeof(c->reason), "line sums overflow");
        }
    }
}

/* Checks month k against the book's plan (limits.c); the add-on it
 * buys is the simulator's line, added to the engine's total. */
static void
plan(struct cell *c, struct month_cell *mc, const struct pricing_book *b,
     const struct sim_month_use *u, const struct pricing_statement *st)
{
    sim_plan_check(b, u, &st->q, &mc->plan);
    mc->total = st->total;
    struct pricing_dec *k = &c->kind[kind_index("addon")];
    if (mc->plan.addon_fee.v &&
        (pricing_dec_add(c->total, mc->plan.addon_fee, &c->total) !=
             PRICING_OK ||
         pricing_dec_add(mc->total, mc->plan.addon_fee, &mc->total) !=
             PRICING_OK ||
         pricing_dec_add(*k, mc->plan.addon_fee, k) != PRICING_OK)) {
        c->ok = false;
        snprintf(c->reason, sizeof(c->reason), "line sums overflow");
    }
}

static void *
work(void *arg)
{
    struct worker *w = arg;
    const struct sim_mc_opts *o = w->o;
    size_t nb = w->nbooks ? w->nbooks : 1;
    unsigned nm = o->months > 1 ? o->months : 1;
    /* Several months from the account's first: the grants it receives
     * then are spent month after month, their balances held here. */
    bool carry = nm > 1 && o->first_month;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    struct sim_priced *pr = calloc(nb, sizeof(*pr));
    struct sim_month_use *use = calloc(nb, sizeof(*use));
    struct pricing_grant(*grant)[PRICING_GRANTS_MAX] =
        carry ? calloc(nb, sizeof(*grant)) : NULL;
    size_t *ngrant = carry ? calloc(nb, sizeof(*ngrant)) : NULL;
    struct sim_month m;
    sim_month_init(&m, o->year, o->month);
    m.mem = w->mem.limit ? &w->mem : NULL;
    w->rc = -1;
    if (!rng || !pr || !use || (carry && (!grant || !ngrant))) {
        snprintf(w->err.msg, sizeof(w->err.msg), "out of memory");
        goto out;
    }
    for (size_t j = w->index; j < w->count; j += o->threads) {
        gsl_rng_set(rng, trial_seed(o->seed, w->first + j));
        w->started[j] = 0;
        memset(w->control[j], 0, sizeof(w->control[j]));
        for (size_t i = 0; i < w->nbooks; i++) {
            struct cell *c = &w->cells[j * w->nbooks + i];
            memset(c, 0, sizeof(*c));
            c->priced = w->active[i];
            c->ok = true;
            if (carry)
                ngrant[i] = pricing_book_grants(w->books[i], o->year, o->month,
                                                grant[i], PRICING_GRANTS_MAX);
        }
        /* Drawn, measured and priced a session at a time, month after
         * month. */
        for (unsigned k = 0; k < nm; k++) {
            sim_month_period(&m, o->year, o->month + (int)k);
            m.first = o->first_month && k == 0;
            m.grants_held = carry;
            sim_month_begin(&m, w->p[k], rng);
            if (sim_price_drawn(&m, w->books, w->nbooks, w->active, o->partial,
                                pr, use, &w->err) < 0)
                goto out;
            w->started[j] += m.started;
            for (int x = 0; x < SIM_NCONTROLS; x++)
                w->control[j][x] += m.control[x];
            for (size_t i = 0; i < w->nbooks; i++) {
                struct cell *c = &w->cells[j * w->nbooks + i];
                struct month_cell *mc =
                    &w->months[(j * w->nbooks + i) * nm + k];
                struct pricing_err pe;
                memset(mc, 0, sizeof(*mc));
                if (c->priced && c->ok && !pr[i].ok) {
                    c->ok = false;
                    snprintf(c->reason, sizeof(c->reason), "%s", pr[i].err.msg);
                }
                if (!c->priced || !c->ok) {
                    /* The limits of the month itself, for a book that
                     * stopped too (gather takes what it needs). */
                    sim_plan_check(w->books[i], &use[i], NULL, &mc->plan);
                } else if (carry && pricing_statement_spend(
                                        w->books[i], grant[i], ngrant[i],
                                        pr[i].st, &pe) < 0) {
                    /* Failed here: the month's own limits, as for any
                     * book not priced, whatever the threads. */
                    c->ok = false;
                    snprintf(c->reason, sizeof(c->reason), "%s", pe.msg);
                    sim_plan_check(w->books[i], &use[i], NULL, &mc->plan);
                } else {
                    take(c, w->books[i], pr[i].st);
                    plan(c, mc, w->books[i], &use[i], pr[i].st);
                }
                pricing_statements_free(pr[i].st, 1);
                pr[i].st = NULL;
            }
        }
    }
    w->rc = 0;
out:
    sim_month_release(&m);
    free(grant);
    free(ngrant);
    free(use);
    free(pr);
    gsl_rng_free(rng);
    return NULL;
}

static double
dbl(struct pricing_dec d)
{
    return (double)d.v / (double)PRICING_ONE;
}

/* Adds trial total y, with its controls c, to b's regression sums. */
static void
cv_add(struct sim_book_stats *b, struct pricing_dec y,
       const double c[SIM_NCONTROLS])
{
    struct sim_cv_sums *s = &b->cv;
    if (b->trials == 1)
        s->shift = dbl(y);
    double v = dbl(y) - s->shift;
    s->sy += v;
    s->syy += v * v;
    for (int j = 0; j < SIM_NCONTROLS; j++) {
        s->sx[j] += c[j];
        s->sxy[j] += c[j] * v;
        for (int k = 0; k <= j; k++)
            s->sxx[j][k] += c[j] * c[k];
    }
}

/*
 * The mean of b's totals by regression on the controls (each 0 in
 * expectation): the fit's intercept at controls 0, a = ybar - beta .
 * xbar, with beta = Sxx^-1 Sxy over the centred sums, and its variance
 * s^2 (1/n + xbar' Sxx^-1 xbar), s^2 the residuals' on n - k - 1 degrees
 * of freedom (the textbook's least squares; Glasserman, Monte Carlo
 * Methods in Financial Engineering, 4.1). Controls that never moved are
 * left out. false when too few trials for them, or Sxx is singular:
 * the plain mean stands.
 */
static bool
cv_stats(struct sim_book_stats *b)
{
    const struct sim_cv_sums *s = &b->cv;
    double n = (double)b->trials;
    int use[SIM_NCONTROLS], k = 0;
    for (int j = 0; j < SIM_NCONTROLS; j++)
        if (s->sxx[j][j] - s->sx[j] * s->sx[j] / n > 0)
            use[k++] = j;
    if (k == 0 || n < k + 3)
        return false;
    double ybar = s->sy / n, xbar[SIM_NCONTROLS];
    gsl_matrix *S = gsl_matrix_alloc((size_t)k, (size_t)k);
    gsl_vector *sxy = gsl_vector_alloc((size_t)k);
    gsl_vector *beta = gsl_vector_alloc((size_t)k);
    gsl_vector *xb = gsl_vector_alloc((size_t)k);
    gsl_vector *t = gsl_vector_alloc((size_t)k);
    bool ok = false;
    if (!S || !sxy || !beta || !xb || !t)
        goto out;
    for (int a = 0; a < k; a++) {
        int j = use[a];
        xbar[a] = s->sx[j] / n;
        gsl_vector_set(xb, (size_t)a, xbar[a]);
        gsl_vector_set(sxy, (size_t)a, s->sxy[j] - n * xbar[a] * ybar);
        for (int c = 0; c <= a; c++) {
            int l = use[c];
            double v = s->sxx[j][l] - s->sx[j] * s->sx[l] / n;
            gsl_matrix_set(S, (size_t)a, (size_t)c, v);
            gsl_matrix_set(S, (size_t)c, (size_t)a, v);
        }
    }
    if (gsl_linalg_cholesky_decomp1(S) != GSL_SUCCESS ||
        gsl_linalg_cholesky_solve(S, sxy, beta) != GSL_SUCCESS ||
        gsl_linalg_cholesky_solve(S, xb, t) != GSL_SUCCESS)
        goto out;
    double syy = s->syy - n * ybar * ybar, fit = 0, adj = 0, lev = 0;
    for (int a = 0; a < k; a++) {
        fit += gsl_vector_get(beta, (size_t)a) * gsl_vector_get(sxy, (size_t)a);
        adj += gsl_vector_get(beta, (size_t)a) * xbar[a];
        lev += xbar[a] * gsl_vector_get(t, (size_t)a);
    }
    double df = n - k - 1, rss = syy - fit > 0 ? syy - fit : 0;
    b->mean = s->shift + ybar - adj;
    b->half = gsl_cdf_tdist_Pinv(0.975, df) * sqrt(rss / df * (1 / n + lev));
    b->ncontrols = (size_t)k;
    ok = true;
out:
    gsl_matrix_free(S);
    gsl_vector_free(sxy);
    gsl_vector_free(beta);
    gsl_vector_free(xb);
    gsl_vector_free(t);
    return ok;
}

/* Mean and interval of b's totals so far, as doubles: by regression on
 * the controls when controlled asks and it can, else the sample's. */
static void
stats(struct sim_book_stats *b, bool controlled, double *x)
{
    size_t n = b->trials;
    b->controlled = controlled && cv_stats(b);
    if (b->controlled)
        return;
    b->ncontrols = 0;
    for (size_t i = 0; i < n; i++)
        x[i] = dbl(b->totals[i]);
    b->mean = n ? gsl_stats_mean(x, 1, n) : 0;
    b->half = 0;
    if (n >= 2) {
        double sd = gsl_stats_sd_m(x, 1, n, b->mean);
        b->half =
            gsl_cdf_tdist_Pinv(0.975, (double)(n - 1)) * sd / sqrt((double)n);
    }
}

static int
dec_cmp(const void *a, const void *b)
{
    return pricing_dec_cmp(*(const struct pricing_dec *)a,
                           *(const struct pricing_dec *)b);
}

/*
 * What each thread's month may hold under o->memory_mib: what is left
 * once the results (each book's totals, twice, for max trials), a
 * round's cells and each thread's blocks and statements are counted,
 * shared by the threads. -1 (e naming the options) if nothing is left.
 */
static int
bound(struct sim_mem *mem, const struct sim_mc_opts *o, unsigned threads,
      size_t max, size_t round, size_t nbooks, struct sim_err *e)
{
    uint64_t limit = o->memory_mib << 20;
    uint64_t nm = o->months > 1 ? o->months : 1;
    uint64_t fixed =
        (uint64_t)max *
            (2 * nbooks * sizeof(struct pricing_dec) + sizeof(double)) +
        (uint64_t)round *
            (nbooks * (sizeof(struct cell) + nm * sizeof(struct month_cell)) +
             sizeof(size_t) + SIM_NCONTROLS * sizeof(double)) +
        (uint64_t)threads * (SIM_PRICE_CHUNK * sizeof(struct pricing_run) +
                             nbooks * (sizeof(struct sim_priced) +
                                       sizeof(struct sim_month_use)));
    if (fixed >= limit) {
        snprintf(e->msg, sizeof(e->msg),
                 "--memory-limit %llu MiB is less than the %llu MiB that "
                 "--max-trials %zu of %zu books and --threads %u hold before "
                 "any session is drawn",
                 (unsigned long long)o->memory_mib,
                 (unsigned long long)((fixed + (1u << 20) - 1) >> 20), max,
                 nbooks, threads);
        return -1;
    }
    mem->limit = (size_t)((limit - fixed) / threads);
    mem->limit_mib = o->memory_mib;
    mem->threads = threads;
    return 0;
}

/* Draws and prices the trials [first, first + count) on the threads. */
static int
run_batch(struct worker *w, unsigned threads, struct sim_err *e)
{
    if (threads == 1) {
        work(&w[0]);
    } else {
        pthread_t tid[64];
        unsigned started = 0;
        for (; started < threads; started++)
            if (pthread_create(&tid[started], NULL, work, &w[started]) != 0)
                break;
        for (unsigned t = 0; t < started; t++)
            pthread_join(tid[t], NULL);
        if (started < threads) {
            snprintf(e->msg, sizeof(e->msg), "cannot start thread %u",
                     started + 1);
            return -1;
        }
    }
    for (unsigned t = 0; t < threads; t++)
        if (w[t].rc < 0) {
            *e = w[t].err;
            return -1;
        }
    return 0;
}

/* Counts the limits m broke into b: only those of the month itself
 * unless caps (the month was priced). */
static void
count_limits(struct sim_book_stats *b, const struct sim_plan_month *m,
             bool caps)
{
    b->checked++;
    for (int l = 0; l < SIM_NLIMITS; l++) {
        if (!caps && !sim_limit_of_month((enum sim_limit)l))
            continue;
        b->broken[l] += (m->broken >> l) & 1;
        if (pricing_dec_cmp(m->used[l], b->worst[l]) > 0)
            b->worst[l] = m->used[l];
    }
}

/* Puts the batch's cells into the books' results, in trial order. A book
 * no longer active takes nothing if it failed, and if it stopped (at
 * this or an earlier batch) only the limits of the month itself, the
 * same whether or not the month was priced ahead for it: the results
 * do not depend on the threads. */
static int
gather(struct sim_mc_result *r, bool *active, const struct cell *cells,
       const struct month_cell *months, unsigned nm, const size_t *started,
       const double (*control)[SIM_NCONTROLS], size_t count, struct sim_err *e)
{
    for (size_t j = 0; j < count; j++)
        for (size_t i = 0; i < r->nbooks; i++) {
            const struct cell *c = &cells[j * r->nbooks + i];
            const struct month_cell *mc = &months[(j * r->nbooks + i) * nm];
            struct sim_book_stats *b = &r->books[i];
            if (!active[i]) {
                for (unsigned k = 0; k < nm && !b->failed; k++)
                    count_limits(b, &mc[k].plan, false);
                continue;
            }
            if (!c->ok) {
                b->failed = true;
                active[i] = false;
                snprintf(b->reason, sizeof(b->reason), "%s", c->reason);
                continue;
            }
            b->totals[b->trials++] = c->total;
            b->months += nm;
            cv_add(b, c->total, control[j]);
            b->sessions += started[j];
            for (unsigned k = 0; k < nm; k++) {
                b->on_option[1 + mc[k].plan.addon]++;
                count_limits(b, &mc[k].plan, true);
                if (b->month_sum &&
                    pricing_dec_add(b->month_sum[k], mc[k].total,
                                    &b->month_sum[k]) != PRICING_OK) {
                    snprintf(e->msg, sizeof(e->msg), "sums of months overflow");
                    return -1;
                }
            }
            for (int k = 0; k < SIM_NKINDS; k++)
                if (pricing_dec_add(b->kind_sum[k], c->kind[k],
                                    &b->kind_sum[k]) != PRICING_OK) {
                    snprintf(e->msg, sizeof(e->msg), "sums of lines overflow");
                    return -1;
                }
            b->unpriced |= c->unpriced;
            for (int d = 0; d < PRICING_NDIMS; d++)
                if (pricing_dec_add(b->unpriced_sum[d], c->unpriced_qty[d],
                                    &b->unpriced_sum[d]) != PRICING_OK) {
                    snprintf(e->msg, sizeof(e->msg),
                             "sums of unpriced %s overflow",
                             pricing_dim_names[d]);
                    return -1;
                }
        }
    return 0;
}

/* The profile of each month: p, then p with its arrivals grown by
 * growth a month (sim_param_set rounds them as the profile holds them),
 * the copies also in copy[1..nm) to free (copy[0] NULL). -1 (e names
 * the parameter) when a grown value is refused. */
static int
grown(const struct sim_profile *p, unsigned nm, double growth,
      const struct sim_profile **profiles, struct sim_profile **copy,
      struct sim_err *e)
{
    const char *param = p->arrivals == SIM_POISSON ? "sessions.poisson.per_hour"
                        : p->arrivals == SIM_CONCURRENT ? "sessions.concurrent"
                                                        : "sessions.per_month";
    double base;
    profiles[0] = p;
    if (nm > 1 && sim_param_get(p, param, &base, NULL) < 0) {
        snprintf(e->msg, sizeof(e->msg), "%s: cannot be read", param);
        return -1;
    }
    for (unsigned k = 1; k < nm; k++) {
        struct sim_profile *q = sim_profile_copy(p);
        char why[256] = "";
        double v = base * pow(1 + growth, k), used;
        if (!q) {
            snprintf(e->msg, sizeof(e->msg), "out of memory");
            return -1;
        }
        profiles[k] = copy[k] = q;
        /* Clamped is refused too: a month held at a bound would not
         * grow as asked. */
        if (sim_param_set(q, param, v, &used, why, sizeof(why)) !=
            SIM_PARAM_SET) {
            snprintf(e->msg, sizeof(e->msg),
                     "--growth: month %u's %s would be %g: %s", k + 1, param, v,
                     why);
            return -1;
        }
    }
    return 0;
}

int
sim_monte_carlo(const struct sim_profile *p,
                const struct pricing_book *const *books, size_t nbooks,
                const struct sim_mc_opts *o, struct sim_mc_result *out,
                struct sim_err *e)
{
    memset(out, 0, sizeof(*out));
    unsigned threads = o->threads < 1 ? 1 : o->threads > 64 ? 64 : o->threads;
    struct sim_mc_opts opts = *o;
    opts.threads = threads;
    /* The cap is the user's; the floor of the stopping rule is not: a
     * cap below it leaves every book not converged. */
    size_t min =
        o->min_trials < SIM_MIN_TRIALS ? SIM_MIN_TRIALS : o->min_trials;
    size_t max = o->max_trials < 2 ? 2 : o->max_trials;
    size_t round = (threads + BATCH - 1) / BATCH * BATCH;
    unsigned nm = o->months > 1 ? o->months : 1;
    int rc = -1;
    bool *active = calloc(nbooks ? nbooks : 1, sizeof(*active));
    struct cell *cells = calloc(round * (nbooks ? nbooks : 1), sizeof(*cells));
    struct month_cell *months =
        calloc(round * (nbooks ? nbooks : 1) * nm, sizeof(*months));
    const struct sim_profile **profiles = calloc(nm, sizeof(*profiles));
    struct sim_profile **copy = calloc(nm, sizeof(*copy));
    size_t *started = calloc(round, sizeof(*started));
    double(*control)[SIM_NCONTROLS] = calloc(round, sizeof(*control));
    double *x = malloc(max * sizeof(*x));
    struct worker w[64];
    struct sim_mem mem = {0};
    out->books = calloc(nbooks ? nbooks : 1, sizeof(*out->books));
    out->nbooks = nbooks;
    if (!active || !cells || !months || !profiles || !copy || !started ||
        !control || !x || !out->books)
        goto oom;
    if (grown(p, nm, o->growth, profiles, copy, e) < 0)
        goto out;
    if (o->memory_mib && bound(&mem, o, threads, max, round, nbooks, e) < 0)
        goto out;
    for (size_t i = 0; i < nbooks; i++) {
        active[i] = true;
        if (!(out->books[i].totals = malloc(max * sizeof(struct pricing_dec))))
            goto oom;
        if (nm > 1 &&
            !(out->books[i].month_sum = calloc(nm, sizeof(struct pricing_dec))))
            goto oom;
    }
    size_t nactive = nbooks;
    while (out->trials < max && nactive > 0) {
        size_t count = max - out->trials < round ? max - out->trials : round;
        for (unsigned t = 0; t < threads; t++)
            w[t] = (struct worker){profiles,    books,   nbooks, active, &opts,
                                   out->trials, count,   t,      cells,  months,
                                   started,     control, mem,    0,      {{0}}};
        if (run_batch(w, threads, e) < 0)
            goto out;
        for (size_t done = 0, n; done < count && nactive > 0; done += n) {
            n = count - done < BATCH ? count - done : BATCH;
            /* A look at min itself, not the batch after it: the rule may
             * stop a book from its min-th trial on. min is a trial
             * number, so this look is the same for any threads. */
            if (out->trials < min && out->trials + n > min)
                n = min - out->trials;
            if (gather(out, active, cells + done * nbooks,
                       months + done * nbooks * nm, nm, started + done,
                       (const double(*)[SIM_NCONTROLS])control + done, n,
                       e) < 0)
                goto out;
            out->trials += n;
            nactive = 0;
            for (size_t i = 0; i < nbooks; i++) {
                struct sim_book_stats *b = &out->books[i];
                if (!active[i])
                    continue;
                stats(b, o->controlled, x);
                b->converged =
                    b->trials >= min && b->half <= o->precision * fabs(b->mean);
                if (b->converged)
                    active[i] = false;
                else
                    nactive++;
            }
            if (o->progress)
                o->progress(out->trials, max, nactive, o->progress_arg);
        }
    }
    for (size_t i = 0; i < nbooks; i++) {
        struct sim_book_stats *b = &out->books[i];
        stats(b, o->controlled, x);
        if (!(b->sorted =
                  malloc((b->trials ? b->trials : 1) * sizeof(*b->sorted))))
            goto oom;
        memcpy(b->sorted, b->totals, b->trials * sizeof(*b->sorted));
        qsort(b->sorted, b->trials, sizeof(*b->sorted), dec_cmp);
    }
    rc = 0;
    goto out;
oom:
    snprintf(e->msg, sizeof(e->msg), "out of memory");
out:
    for (unsigned k = 0; copy && k < nm; k++)
        sim_profile_free(copy[k]);
    free(copy);
    free(profiles);
    free(active);
    free(cells);
    free(months);
    free(started);
    free(control);
    free(x);
    if (rc < 0)
        sim_mc_result_release(out);
    return rc;
}

void
sim_mc_result_release(struct sim_mc_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->books && i < r->nbooks; i++) {
        free(r->books[i].totals);
        free(r->books[i].sorted);
        free(r->books[i].month_sum);
    }
    free(r->books);
    r->books = NULL;
    r->nbooks = 0;
}

struct pricing_dec
sim_dec_div(struct pricing_dec sum, uint64_t n)
{
    if (n == 0)
        return (struct pricing_dec){0};
    pricing_i128 d = (pricing_i128)n, q = sum.v / d, r = sum.v % d;
    pricing_i128 ar = r < 0 ? -r : r;
    /* Half to even on the remainder, symmetric around zero. */
    if (2 * ar > d || (2 * ar == d && (q & 1)))
        q += sum.v < 0 ? -1 : 1;
    return (struct pricing_dec){q};
}

struct pricing_dec
sim_book_quantile(const struct sim_book_stats *b, double q)
{
    if (b->trials == 0)
        return (struct pricing_dec){0};
    size_t k = (size_t)ceil(q * (double)b->trials);
    if (k < 1)
        k = 1;
    if (k > b->trials)
        k = b->trials;
    return b->sorted[k - 1];
}

/* The largest k in [0, n] with P(B <= k - 1) <= alpha, B ~ binomial(n,
 * q), by bisection (the CDF grows with k); 0 if P(B <= 0) > alpha. */
static size_t
lower_rank(size_t n, double q, double alpha)
{
    size_t lo = 0, hi = n; /* P(B <= lo - 1) <= alpha holds at lo = 0 */
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (gsl_cdf_binomial_P((unsigned)(mid - 1), q, (unsigned)n) <= alpha)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The smallest k in [1, n + 1] with P(B >= k) <= alpha; n + 1 if even
 * P(B >= n) = q^n is above alpha. */
static size_t
upper_rank(size_t n, double q, double alpha)
{
    size_t lo = 1, hi = n + 1; /* P(B >= n + 1) = 0 */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        /* P(B >= mid) = P(B > mid - 1) */
        if (gsl_cdf_binomial_Q((unsigned)(mid - 1), q, (unsigned)n) <= alpha)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

void
sim_quantile_ranks(size_t n, double q, double level,
                   struct sim_quantile_ci *out)
{
    double alpha = (1 - level) / 2;
    size_t lo = lower_rank(n, q, alpha), hi = upper_rank(n, q, alpha);
    /* Short of trials: the extreme trial, and the coverage says so. */
    if (lo < 1)
        lo = 1;
    if (hi > n)
        hi = n;
    out->lo = lo;
    out->hi = hi;
    /* x_(lo) <= the quantile <= x_(hi) when lo <= B <= hi - 1. */
    out->coverage = gsl_cdf_binomial_P((unsigned)(hi - 1), q, (unsigned)n) -
                    gsl_cdf_binomial_P((unsigned)(lo - 1), q, (unsigned)n);
}

void
sim_book_quantile_ci(const struct sim_book_stats *b, double q,
                     struct pricing_dec *lo, struct pricing_dec *hi,
                     struct sim_quantile_ci *ci)
{
    if (b->trials == 0) {
        *ci = (struct sim_quantile_ci){0, 0, 0};
        *lo = *hi = (struct pricing_dec){0};
        return;
    }
    sim_quantile_ranks(b->trials, q, 0.95, ci);
    *lo = b->sorted[ci->lo - 1];
    *hi = b->sorted[ci->hi - 1];
}

/* ---- a book's results, and the tier of a provider ------------------- */

struct pricing_dec
sim_book_mean(const struct sim_book_stats *b)
{
    if (b->controlled)
        return (struct pricing_dec){(pricing_i128)llround(b->mean * 1e6) *
                                    (PRICING_ONE / 1000000)};
    struct pricing_dec sum = {0};
    for (size_t i = 0; i < b->trials; i++)
        if (pricing_dec_add(sum, b->totals[i], &sum) != PRICING_OK)
            return (struct pricing_dec){0}; /* cannot: totals are small */
    return sim_dec_div(sum, b->trials);
}

bool
sim_book_lower_bound(const struct sim_book_stats *b)
{
    return b->unpriced != 0;
}

bool
sim_book_fits(const struct sim_book_stats *b)
{
    for (int l = 0; l < SIM_NLIMITS; l++)
        if (b->broken[l])
            return false;
    return true;
}

uint64_t
sim_book_months_checked(const struct sim_book_stats *b, enum sim_limit l)
{
    return sim_limit_of_month(l) ? b->checked : b->months;
}

int
sim_tier_choose(const struct pricing_book *const *books,
                const struct sim_book_stats *stats, size_t nbooks,
                const char *provider)
{
    int best = -1;
    struct pricing_dec best_mean = {0};
    for (size_t i = 0; i < nbooks; i++) {
        const struct sim_book_stats *s = &stats[i];
        if (strcmp(pricing_book_provider(books[i]), provider) != 0 ||
            !*provider || s->failed || s->trials == 0 ||
            sim_book_lower_bound(s) || !sim_book_fits(s))
            continue;
        struct pricing_dec mean = sim_book_mean(s);
        if (best < 0 || pricing_dec_cmp(mean, best_mean) < 0) {
            best = (int)i;
            best_mean = mean;
        }
    }
    return best;
}
