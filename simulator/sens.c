/*
 * sens.c - what changes the answer: the tornado (each parameter of a
 * profile moved down and up, the swing of each book's mean) and the
 * break-even (where two books cost the same as one parameter moves,
 * found with GSL's root finding).
 *
 * Both compare Monte Carlo means of moved profiles, so both use common
 * random numbers: every run has the base run's seed, trial k of each
 * drawing from the same generator, and a book's means are over the same
 * trials. The difference of two means is then the parameter's effect
 * and little of the months' noise. Money stays exact: each mean is the
 * exact sum of the trials' totals over their number; only the root
 * finder works on the difference as a double.
 */
#include "sim.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_errno.h>
#include <gsl/gsl_roots.h>

/* Values the break-even scans for a first sign change. */
#define SCAN 9
/* Root finder iterations at most: bisection halves the bracket each
 * time, so 100 is far past any tolerance asked. */
#define MAX_ITER 100
/* The root's tolerance, relative to it: finer would be spurious, the
 * means it solves are Monte Carlo estimates. */
#define REL_TOL 1e-4

/* A message into buf, cut to its n bytes: messages quote other
 * messages (a book's reason), which may be as long as the buffer. */
static void __attribute__((format(printf, 3, 4)))
put(char *buf, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

/* The exact mean of b's first n totals. */
static int
prefix_mean(const struct sim_book_stats *b, size_t n, struct pricing_dec *out,
            struct sim_err *e)
{
    struct pricing_dec sum = {0};
    for (size_t i = 0; i < n && i < b->trials; i++)
        if (pricing_dec_add(sum, b->totals[i], &sum) != PRICING_OK) {
            snprintf(e->msg, sizeof(e->msg), "sums of totals overflow");
            return -1;
        }
    *out = sim_dec_div(sum, n);
    return 0;
}

static pricing_i128
abs_diff(struct pricing_dec a, struct pricing_dec b)
{
    pricing_i128 d = a.v - b.v; /* totals are far from the i128 range */
    return d < 0 ? -d : d;
}

static int
by_swing(const void *x, const void *y)
{
    const struct sim_swing *a = x, *b = y;
    if (a->failed != b->failed)
        return a->failed ? 1 : -1;
    pricing_i128 da = abs_diff(a->high, a->low), db = abs_diff(b->high, b->low);
    if (da != db)
        return da > db ? -1 : 1;
    return strcmp(a->param, b->param);
}

/* One side of a parameter: the value it moved to, and the run. */
struct side {
    bool moved;
    double value;
    char why[200];
    struct sim_mc_result r;
};

static int
run_side(const struct sim_profile *p, const char *param, double value,
         double to, const struct pricing_book *const *books, size_t nbooks,
         const struct sim_mc_opts *o, struct side *s, struct sim_err *e)
{
    struct sim_profile *q = sim_profile_copy(p);
    memset(s, 0, sizeof(*s));
    s->value = value;
    if (!q) {
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        return -1;
    }
    double used = value;
    enum sim_param_status st =
        sim_param_set(q, param, to, &used, s->why, sizeof(s->why));
    if (st != SIM_PARAM_REFUSED && used != value) {
        s->moved = true;
        s->value = used;
    } else if (st == SIM_PARAM_SET && value == 0) {
        snprintf(s->why, sizeof(s->why), "a percentage of 0 is 0");
    } else if (st == SIM_PARAM_SET) {
        snprintf(s->why, sizeof(s->why), "%.10g rounds to %.10g", to, value);
    }
    int rc = s->moved ? sim_monte_carlo(q, books, nbooks, o, &s->r, e) : 0;
    sim_profile_free(q);
    return rc;
}

/* A book's swing for one parameter from the two sides' runs: book k of
 * the runs, i of the tornado. */
static int
fill_swing(struct sim_swing *w, const char *param, double value,
           const struct side s[2], size_t k, const struct sim_tornado_book *tb,
           double pct, struct sim_err *e)
{
    struct pricing_dec *mean[2] = {&w->low, &w->high};
    double *moved[2] = {&w->low_value, &w->high_value};
    bool *failed[2] = {&w->low_failed, &w->high_failed};
    size_t len = 0;
    memset(w, 0, sizeof(*w));
    snprintf(w->param, sizeof(w->param), "%s", param);
    w->value = value;
    for (int j = 0; j < 2; j++) {
        *moved[j] = s[j].value;
        *mean[j] = tb->base;
        if (s[j].why[0] && len < sizeof(w->note))
            len += (size_t)snprintf(w->note + len, sizeof(w->note) - len,
                                    "%s%s%g%%: %s", len ? "; " : "",
                                    j ? "+" : "-", pct, s[j].why);
        if (!s[j].moved)
            continue;
        const struct sim_book_stats *b = &s[j].r.books[k];
        if (b->failed || b->trials < tb->trials) {
            w->failed = *failed[j] = true;
            *mean[j] = (struct pricing_dec){0};
            if (len < sizeof(w->note))
                len += (size_t)snprintf(w->note + len, sizeof(w->note) - len,
                                        "%scannot price %s %.10g: %s",
                                        len ? "; " : "", param, s[j].value,
                                        b->reason);
            continue;
        }
        if (prefix_mean(b, tb->trials, mean[j], e) < 0)
            return -1;
    }
    return 0;
}

int
sim_tornado(const struct sim_profile *p,
            const struct pricing_book *const *books, size_t nbooks,
            const struct sim_mc_opts *o, const struct sim_mc_result *base,
            double pct, size_t max_trials, struct sim_tornado *out,
            struct sim_err *e)
{
    char names[SIM_PARAMS_MAX][SIM_PARAM_NAME];
    size_t np = sim_params(p, false, names);
    size_t nb = nbooks ? nbooks : 1, npriced = 0, most = 0;
    const struct pricing_book **priced = calloc(nb, sizeof(*priced));
    size_t *index = calloc(nb, sizeof(*index));
    struct side side[2] = {0};
    int rc = -1;
    memset(out, 0, sizeof(*out));
    out->pct = pct;
    out->nbooks = nbooks;
    out->books = calloc(nb, sizeof(*out->books));
    out->notes = calloc(np ? np : 1, sizeof(*out->notes));
    if (!priced || !index || !out->books || !out->notes)
        goto oom;
    /* Only the books the base priced; each keeps its own trial count. */
    for (size_t i = 0; i < nbooks; i++) {
        const struct sim_book_stats *b = &base->books[i];
        struct sim_tornado_book *tb = &out->books[i];
        if (b->failed || b->trials == 0)
            continue;
        tb->trials =
            max_trials && b->trials > max_trials ? max_trials : b->trials;
        if (prefix_mean(b, tb->trials, &tb->base, e) < 0)
            goto out;
        if (!(tb->swings = calloc(np ? np : 1, sizeof(*tb->swings))))
            goto oom;
        if (tb->trials > most)
            most = tb->trials;
        priced[npriced] = books[i];
        index[npriced++] = i;
    }
    /* Every moved run prices the same months: trials 0 .. most - 1 of
     * the same seed, none stopping early. */
    struct sim_mc_opts mo = *o;
    mo.precision = 0;
    mo.min_trials = mo.max_trials = most < 2 ? 2 : most;
    mo.progress = NULL; /* a bar would start again for every run */
    for (size_t j = 0; j < np && npriced > 0; j++) {
        double v = 0, factor[2] = {1 - pct / 100, 1 + pct / 100};
        sim_param_get(p, names[j], &v, NULL);
        for (int s = 0; s < 2; s++)
            if (run_side(p, names[j], v, v * factor[s], priced, npriced, &mo,
                         &side[s], e) < 0)
                goto out;
        if (!side[0].moved && !side[1].moved) {
            put(out->notes[out->nnotes++], sizeof(*out->notes),
                "%s %.10g not moved: -%g%%: %s; +%g%%: %s", names[j], v, pct,
                side[0].why, pct, side[1].why);
            continue;
        }
        for (size_t k = 0; k < npriced; k++) {
            struct sim_tornado_book *tb = &out->books[index[k]];
            if (fill_swing(&tb->swings[tb->nswings++], names[j], v, side, k, tb,
                           pct, e) < 0)
                goto out;
        }
        sim_mc_result_release(&side[0].r);
        sim_mc_result_release(&side[1].r);
    }
    for (size_t i = 0; i < nbooks; i++)
        if (out->books[i].nswings > 0)
            qsort(out->books[i].swings, out->books[i].nswings,
                  sizeof(struct sim_swing), by_swing);
    rc = 0;
    goto out;
oom:
    snprintf(e->msg, sizeof(e->msg), "out of memory");
out:
    sim_mc_result_release(&side[0].r);
    sim_mc_result_release(&side[1].r);
    free(priced);
    free(index);
    if (rc < 0)
        sim_tornado_release(out);
    return rc;
}

void
sim_tornado_release(struct sim_tornado *t)
{
    if (!t)
        return;
    for (size_t i = 0; t->books && i < t->nbooks; i++)
        free(t->books[i].swings);
    free(t->books);
    free(t->notes);
    t->books = NULL;
    t->notes = NULL;
    t->nbooks = t->nnotes = 0;
}

/* ---- break-even ---------------------------------------------------- */

/* A value of the parameter already priced: the root finder comes back
 * to values, and a whole parameter rounds many to one. */
struct point {
    double x; /* as the profile holds it */
    struct pricing_dec mean[2];
};

struct be {
    const struct sim_profile *p;
    const struct pricing_book *const *books;
    struct sim_mc_opts o;
    const char *param;
    size_t trials;
    struct point cache[2 * (SCAN + MAX_ITER) + 4];
    size_t ncache;
    bool failed; /* inside GSL's callback: e says why */
    struct sim_err *e;
};

/* The two books' mean totals at param = x, priced once for each value
 * the profile holds (x rounded). NULL, c->e set, on failure. */
static const struct point *
eval(struct be *c, double x)
{
    struct sim_profile *q = sim_profile_copy(c->p);
    struct sim_mc_result r = {0};
    const struct point *pt = NULL;
    char why[256];
    double used = x;
    if (!q) {
        snprintf(c->e->msg, sizeof(c->e->msg), "out of memory");
        goto out;
    }
    if (sim_param_set(q, c->param, x, &used, why, sizeof(why)) ==
        SIM_PARAM_REFUSED) {
        snprintf(c->e->msg, sizeof(c->e->msg), "%s", why);
        goto out;
    }
    for (size_t i = 0; i < c->ncache; i++)
        if (c->cache[i].x == used) {
            pt = &c->cache[i];
            goto out;
        }
    if (c->ncache == sizeof(c->cache) / sizeof(c->cache[0])) {
        snprintf(c->e->msg, sizeof(c->e->msg), "too many values priced");
        goto out;
    }
    if (sim_monte_carlo(q, c->books, 2, &c->o, &r, c->e) < 0)
        goto out;
    struct point *n = &c->cache[c->ncache];
    n->x = used;
    for (int b = 0; b < 2; b++) {
        if (r.books[b].failed || r.books[b].trials < c->trials) {
            put(c->e->msg, sizeof(c->e->msg),
                "price book '%s' cannot price %s %.10g: %s",
                pricing_book_id(c->books[b]), c->param, used,
                r.books[b].reason);
            goto out;
        }
        if (prefix_mean(&r.books[b], c->trials, &n->mean[b], c->e) < 0)
            goto out;
    }
    pt = n;
    c->ncache++;
out:
    sim_mc_result_release(&r);
    sim_profile_free(q);
    return pt;
}

static int
sign(const struct point *pt)
{
    int c = pricing_dec_cmp(pt->mean[0], pt->mean[1]);
    return c < 0 ? -1 : c > 0;
}

/* GSL's function: the difference of the means, as a double. */
static double
difference(double x, void *arg)
{
    struct be *c = arg;
    const struct point *pt = eval(c, x);
    if (!pt) {
        c->failed = true;
        return GSL_NAN;
    }
    return (double)(pt->mean[0].v - pt->mean[1].v) / (double)PRICING_ONE;
}

/* out->at[i] and its costs from a point. */
static void
keep(struct sim_breakeven *out, int i, const struct point *pt)
{
    out->at[i] = pt->x;
    out->cost[i][0] = pt->mean[0];
    out->cost[i][1] = pt->mean[1];
}

/* Narrows [a, b], where the difference changes sign, with Brent. */
static int
narrow(struct be *c, double a, double b, double step, struct sim_breakeven *out)
{
    gsl_root_fsolver *s = gsl_root_fsolver_alloc(gsl_root_fsolver_brent);
    gsl_function f = {difference, c};
    int rc = -1, st;
    if (!s) {
        snprintf(c->e->msg, sizeof(c->e->msg), "out of memory");
        return -1;
    }
    /* A whole parameter: until the bracket's ends are neighbours. Else
     * to REL_TOL of the value, or the parameter's own step. */
    double big = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    double abs_tol = out->whole ? 1 : step > big * 1e-12 ? step : big * 1e-12;
    double rel_tol = out->whole ? 0 : REL_TOL;
    if ((st = gsl_root_fsolver_set(s, &f, a, b)) != GSL_SUCCESS)
        goto gsl_fail;
    for (;;) {
        double lo = gsl_root_fsolver_x_lower(s),
               hi = gsl_root_fsolver_x_upper(s);
        if (gsl_root_test_interval(lo, hi, abs_tol, rel_tol) == GSL_SUCCESS) {
            out->converged = true;
            break;
        }
        if (out->iterations == MAX_ITER)
            break;
        out->iterations++;
        if ((st = gsl_root_fsolver_iterate(s)) != GSL_SUCCESS)
            goto gsl_fail;
    }
    out->root = gsl_root_fsolver_root(s);
    const struct point *lo = eval(c, gsl_root_fsolver_x_lower(s));
    if (!lo)
        goto out;
    keep(out, 0, lo);
    const struct point *hi = eval(c, gsl_root_fsolver_x_upper(s));
    if (!hi)
        goto out;
    keep(out, 1, hi);
    rc = 0;
    goto out;
gsl_fail:
    if (!c->failed)
        snprintf(c->e->msg, sizeof(c->e->msg), "root finding: %s",
                 gsl_strerror(st));
out:
    gsl_root_fsolver_free(s);
    return rc;
}

int
sim_breakeven(const struct sim_profile *p,
              const struct pricing_book *const books[2],
              const struct sim_mc_opts *o, size_t trials, const char *param,
              double lo, double hi, struct sim_breakeven *out,
              struct sim_err *e)
{
    double value, step;
    memset(out, 0, sizeof(*out));
    if (sim_param_get(p, param, &value, &step) < 0) {
        snprintf(e->msg, sizeof(e->msg),
                 "'%s' is not a parameter of this profile", param);
        return -1;
    }
    /* Both ends as given, or the range is not the one asked about. */
    for (int i = 0; i < 2; i++) {
        double end = i ? hi : lo;
        struct sim_profile *q = sim_profile_copy(p);
        char why[256] = "";
        enum sim_param_status st =
            q ? sim_param_set(q, param, end, NULL, why, sizeof(why))
              : SIM_PARAM_REFUSED;
        /* A parameter with a smallest step (a whole number, 1/10,000
         * vCPU) holds the end exactly, or the range is not the one asked
         * about; a real one (a share) is what its spells round to. */
        double held = end;
        if (st == SIM_PARAM_SET && step > 0 &&
            sim_param_get(q, param, &held, NULL) == 0 && held != end) {
            snprintf(why, sizeof(why), "%s: %.10g is held as %.10g", param, end,
                     held);
            st = SIM_PARAM_REFUSED;
        }
        sim_profile_free(q);
        if (!q || st != SIM_PARAM_SET) {
            snprintf(e->msg, sizeof(e->msg), "%s", q ? why : "out of memory");
            return -1;
        }
    }
    if (!(lo < hi)) {
        snprintf(e->msg, sizeof(e->msg), "the range %.10g to %.10g is empty",
                 lo, hi);
        return -1;
    }
    struct be *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(e->msg, sizeof(e->msg), "out of memory");
        return -1;
    }
    int rc = -1;
    c->p = p;
    c->books = books;
    c->o = *o;
    c->o.precision = 0; /* every value the same months, none fewer */
    c->o.min_trials = c->o.max_trials = trials < 2 ? 2 : trials;
    c->o.progress = NULL;
    c->param = param;
    c->trials = trials < 2 ? 2 : trials;
    c->e = e;
    out->trials = c->trials;
    out->whole = step == 1;
    /* The scan, from lo: the first value where the totals are equal, or
     * the first pair of values they change order between. */
    const struct point *prev = NULL, *first = NULL;
    int last = 0;
    for (int i = 0; i < SCAN; i++) {
        double x = i == SCAN - 1 ? hi : lo + (hi - lo) * i / (SCAN - 1);
        const struct point *pt = eval(c, x);
        if (!pt)
            goto out;
        int sg = sign(pt);
        if (i == 0)
            first = pt;
        if (sg != 0 && last != 0 && sg != last)
            out->crossings++;
        if (!out->found && sg == 0) {
            out->found = out->converged = true;
            out->root = pt->x;
            keep(out, 0, pt);
            keep(out, 1, pt);
        } else if (!out->found && prev && sign(prev) * sg < 0) {
            out->found = true;
            if (narrow(c, prev->x, pt->x, step, out) < 0)
                goto out;
        }
        if (sg != 0)
            last = sg;
        /* The cache may have moved nothing: points stay where they are. */
        prev = pt;
    }
    if (!out->found) {
        keep(out, 0, first);
        keep(out, 1, prev);
    }
    rc = 0;
out:
    free(c);
    return rc;
}
