/*
 * costsim_out.c - costsim's comparison as a terminal table or as JSON.
 *
 * Money is printed from exact decimals: the mean is the exact sum of the
 * trials' totals divided by their number (--method plain) or the
 * regression's estimate to 6 decimals (controlled, the default), the
 * percentiles are trials' totals, the lines are exact means. The 95%
 * interval is a statistic over doubles (GSL) and is printed as one, and
 * the output says so.
 */
#include "costsim_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static const char plain_note[] =
    "mean, percentiles (nearest rank), lines and cost per 1,000 sessions are "
    "exact decimals from the engine's statements; the 95% interval of the "
    "mean is computed over doubles (GSL, Student t), each percentile's by "
    "order statistics (ranks from the binomial distribution, no assumption "
    "on the totals' shape); a book with a price unknown (null) is a lower "
    "bound: every figure of it is of its known part";

static const char controlled_note[] =
    "the mean is estimated by regressing each book's trial totals on the "
    "trials' control variates (sums of what was drawn less what it is "
    "expected to be, 0 on average; --method plain: the trials' plain mean), "
    "to 6 decimals, with its 95% interval over doubles (GSL, Student t); "
    "percentiles (nearest rank), lines and cost per 1,000 sessions are exact "
    "decimals from the engine's statements, the lines plain means of the "
    "trials (their sum may differ from the mean, within its interval); each "
    "percentile's interval is by order statistics (ranks from the binomial "
    "distribution, no assumption on the totals' shape); a book with a price "
    "unknown (null) is a lower bound: every figure of it is of its known "
    "part";

const char *
cs_stats_note(const struct sim_mc_opts *o)
{
    return o->controlled ? controlled_note : plain_note;
}

struct pricing_dec
cs_per_thousand(const struct sim_book_stats *b)
{
    struct pricing_dec sum = {0};
    for (size_t i = 0; i < b->trials; i++)
        if (pricing_dec_add(sum, b->totals[i], &sum) != PRICING_OK)
            return (struct pricing_dec){0};
    if (pricing_dec_mul_int(sum, 1000, &sum) != PRICING_OK)
        return (struct pricing_dec){0};
    return sim_dec_div(sum, b->sessions);
}

static const char *
fmt(struct pricing_dec d, int decimals, char *buf, size_t n)
{
    pricing_dec_format(d, (unsigned)(decimals < 0 ? 0 : decimals), buf, n);
    return buf;
}

/* Books in the order printed: priced ones by mean, then the others by
 * file name. */
static const struct cs_run *sort_run;

static int
by_mean(const void *x, const void *y)
{
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    const struct sim_book_stats *a = &sort_run->res->books[i],
                                *b = &sort_run->res->books[j];
    if (a->failed != b->failed)
        return a->failed ? 1 : -1;
    /* A lower bound is not a price: ranked apart, after every book
     * priced whole, whatever its known part costs. */
    if (!a->failed && sim_book_lower_bound(a) != sim_book_lower_bound(b))
        return sim_book_lower_bound(a) ? 1 : -1;
    if (!a->failed) {
        int c = pricing_dec_cmp(sim_book_mean(a), sim_book_mean(b));
        if (c)
            return c;
    }
    return strcmp(sort_run->books[i].file, sort_run->books[j].file);
}

size_t *
cs_order(const struct cs_run *run)
{
    size_t *o = malloc((run->nbooks ? run->nbooks : 1) * sizeof(*o));
    if (!o)
        return NULL;
    for (size_t i = 0; i < run->nbooks; i++)
        o[i] = i;
    sort_run = run;
    qsort(o, run->nbooks, sizeof(*o), by_mean);
    return o;
}

/* The names of the dimensions in a sentence. */
static const char *const dim_words[PRICING_NDIMS] = {"CPU", "memory", "storage",
                                                     "egress", NULL};

struct pricing_dec
cs_unpriced_mean(const struct cs_book *bk, const struct sim_book_stats *b,
                 enum pricing_dim d, const char **unit)
{
    /* The unit is the book's, whatever the quantity: ask with none. */
    struct pricing_quantities none = {0};
    struct pricing_dec zero;
    struct pricing_err e;
    pricing_unpriced_quantity(bk->book, &none, d, &zero, unit, &e);
    return sim_dec_div(b->unpriced_sum[d], b->trials);
}

/* q to 2 decimals (none if whole) with a comma every three digits:
 * "7,650", "12.5". */
static const char *
grouped(struct pricing_dec q, char *buf, size_t n)
{
    char raw[48];
    pricing_dec_format(q, 2, raw, sizeof(raw));
    size_t len = strlen(raw);
    if (len > 3 && strcmp(raw + len - 3, ".00") == 0)
        raw[len -= 3] = '\0';
    else if (len > 1 && raw[len - 1] == '0' && strchr(raw, '.'))
        raw[--len] = '\0';
    const char *dot = strchr(raw, '.');
    size_t whole = dot ? (size_t)(dot - raw) : len, k = 0;
    for (size_t i = 0; i < len && k + 1 < n; i++) {
        if (i > 0 && i < whole && raw[0] != '-' && (whole - i) % 3 == 0)
            buf[k++] = ',';
        if (k + 1 < n)
            buf[k++] = raw[i];
    }
    buf[k] = '\0';
    return buf;
}

const char *
cs_bound_text(const struct pricing_book *book, struct pricing_dec known,
              unsigned unpriced, const struct pricing_dec *qty, char *buf,
              size_t n)
{
    const char *cur = pricing_book_currency(book);
    char mean[48];
    pricing_money_format(known, cur, mean, sizeof(mean));
    size_t k = (size_t)snprintf(buf, n, "at least %s %s", mean, cur);
    const char *sep = "; ";
    for (int d = 0; d < PRICING_NDIMS && k < n; d++) {
        if (!(unpriced >> d & 1))
            continue;
        const char *unit;
        char q[64];
        struct pricing_quantities none = {0};
        struct pricing_dec zero;
        struct pricing_err e;
        /* The unit is the book's, whatever the quantity: ask with none. */
        pricing_unpriced_quantity(book, &none, (enum pricing_dim)d, &zero,
                                  &unit, &e);
        /* GB stays GB; vCPU-hour, GiB-hour and run take an s. */
        bool plural = strcmp(unit, "GB") != 0;
        k += (size_t)snprintf(buf + k, n - k, "%s%s %s%s%s%s", sep,
                              grouped(qty[d], q, sizeof(q)), unit,
                              plural ? "s" : "", dim_words[d] ? " of " : "",
                              dim_words[d] ? dim_words[d] : "");
        sep = ", ";
    }
    if (k < n)
        snprintf(buf + k, n - k, " not priced");
    return buf;
}

const char *
cs_lower_bound_text(const struct cs_book *bk, const struct sim_book_stats *b,
                    char *buf, size_t n)
{
    struct pricing_dec qty[PRICING_NDIMS];
    const char *unit;
    for (int d = 0; d < PRICING_NDIMS; d++)
        qty[d] = cs_unpriced_mean(bk, b, (enum pricing_dim)d, &unit);
    return cs_bound_text(bk->book, sim_book_mean(b), b->unpriced, qty, buf, n);
}

const char *
cs_quantile_ci_text(const struct cs_book *bk, const struct sim_book_stats *b,
                    double q, char *buf, size_t n)
{
    const char *cur = pricing_book_currency(bk->book);
    struct pricing_dec lo, hi;
    struct sim_quantile_ci ci;
    char a[48], z[48];
    sim_book_quantile_ci(b, q, &lo, &hi, &ci);
    pricing_money_format(lo, cur, a, sizeof(a));
    pricing_money_format(hi, cur, z, sizeof(z));
    if (ci.coverage < 0.95)
        snprintf(buf, n, "%s-%s (covers %.0f%%)", a, z,
                 floor(ci.coverage * 100));
    else
        snprintf(buf, n, "%s-%s", a, z);
    return buf;
}

double
cs_sessions_per_month(const struct sim_book_stats *b)
{
    return b->months ? (double)b->sessions / (double)b->months : 0;
}

struct pricing_dec
cs_month_mean(const struct sim_book_stats *b, unsigned k)
{
    return sim_dec_div(b->month_sum[k], b->trials);
}

void
cs_month_name(const struct sim_mc_opts *o, unsigned k, char *buf, size_t n)
{
    int m = o->month - 1 + (int)k;
    snprintf(buf, n, "%04d-%02d", o->year + m / 12, m % 12 + 1);
}

void
cs_print_by_month(FILE *f, const struct cs_run *run, size_t i)
{
    const struct sim_book_stats *b = &run->res->books[i];
    const char *cur = pricing_book_currency(run->books[i].book);
    if (run->opts->months < 2 || !b->month_sum || b->trials == 0)
        return;
    fprintf(f, "    by month (mean):");
    for (unsigned k = 0; k < run->opts->months; k++) {
        char name[16], a[48];
        cs_month_name(run->opts, k, name, sizeof(name));
        pricing_money_format(cs_month_mean(b, k), cur, a, sizeof(a));
        fprintf(f, "%s %s %s", k ? "," : "", name, a);
    }
    fputc('\n', f);
}

int
cs_print_table(FILE *f, const struct cs_run *run)
{
    size_t *o = cs_order(run);
    if (!o)
        return -1;
    const struct sim_mc_opts *opt = run->opts;
    fprintf(f, "profile %s (%s), month %04d-%02d%s, seed %llu, %zu trials\n",
            run->profile->name[0] ? run->profile->name : "-", run->profile_path,
            opt->year, opt->month,
            opt->first_month ? " (the first: grants received)" : "",
            (unsigned long long)opt->seed, run->res->trials);
    if (opt->months > 1)
        fprintf(f,
                "%u months from %04d-%02d, the arrivals %+g%% a month: each "
                "figure is of the %u months' total (a trial is %u months), "
                "each month's mean a plain mean of the trials%s\n",
                opt->months, opt->year, opt->month, opt->growth * 100,
                opt->months, opt->months,
                opt->first_month ? "; the grants spent month after month" : "");
    fprintf(f, "note: %s\n\n", cs_stats_note(opt));
    fprintf(f, "%-26s %-4s %12s %11s %12s %12s %12s %12s %7s\n", "book", "cur",
            opt->months > 1 ? "mean/total" : "mean/month", "95% +/-", "p5",
            "p50", "p95", "per 1k sess", "trials");
    bool bounds = false;
    for (size_t k = 0; k < run->nbooks; k++) {
        size_t i = o[k];
        const struct cs_book *bk = &run->books[i];
        const struct sim_book_stats *b = &run->res->books[i];
        const char *cur = pricing_book_currency(bk->book);
        int mu = (int)pricing_money_decimals(cur);
        char m[64], p5[48], p50[48], p95[48], pk[48];
        bool lower = !b->failed && sim_book_lower_bound(b);
        if (lower && !bounds) {
            fprintf(f, "lower bounds: a price these books need is unknown "
                       "(null); every figure is of the known part\n");
            bounds = true;
        }
        if (lower) {
            /* ">=" before the mean: never read as a price. */
            char known[48];
            snprintf(m, sizeof(m), ">=%s",
                     fmt(sim_book_mean(b), mu, known, 48));
        }
        if (b->failed) {
            fprintf(f, "%-26s %-4s %12s\n", pricing_book_id(bk->book), cur,
                    "cannot price");
            fprintf(f, "    reason: %s\n", b->reason);
        } else {
            fprintf(f, "%-26s %-4s %12s %11.*f %12s %12s %12s %12s %7zu%s\n",
                    pricing_book_id(bk->book), cur,
                    lower ? m : fmt(sim_book_mean(b), mu, m, 48), mu, b->half,
                    fmt(sim_book_quantile(b, 0.05), mu, p5, 48),
                    fmt(sim_book_quantile(b, 0.5), mu, p50, 48),
                    fmt(sim_book_quantile(b, 0.95), mu, p95, 48),
                    b->sessions ? fmt(cs_per_thousand(b), mu, pk, 48) : "-",
                    b->trials, b->converged ? "" : " (not converged)");
            char text[512];
            if (lower)
                fprintf(f, "    lower bound: %s\n",
                        cs_lower_bound_text(bk, b, text, sizeof(text)));
            fprintf(f, "    percentiles' 95%% intervals: p5 %s,",
                    cs_quantile_ci_text(bk, b, 0.05, text, sizeof(text)));
            fprintf(f, " p50 %s,",
                    cs_quantile_ci_text(bk, b, 0.5, text, sizeof(text)));
            fprintf(f, " p95 %s\n",
                    cs_quantile_ci_text(bk, b, 0.95, text, sizeof(text)));
            fprintf(f, "    lines (mean):");
            bool any = false;
            for (int j = 0; j < SIM_NKINDS; j++) {
                if (b->kind_sum[j].v == 0)
                    continue;
                char a[48];
                fprintf(f, "%s %s %s", any ? "," : "", sim_line_kinds[j],
                        fmt(sim_dec_div(b->kind_sum[j], b->trials), mu, a, 48));
                any = true;
            }
            fprintf(f, "%s\n", any ? "" : " none");
            cs_print_by_month(f, run, i);
            cs_print_plan(f, run, i);
            cs_print_pauses(f, run, i);
        }
        fprintf(f, "    source: %s\n", bk->source[0] ? bk->source : "-");
        fprintf(f, "    as_of: %s\n", bk->as_of[0] ? bk->as_of : "-");
    }
    int rc = cs_print_tiers(f, run);
    if (rc == 0 && run->tornado)
        rc = cs_print_tornado(f, run, o);
    free(o);
    return rc;
}

static json_t *
jdec(struct pricing_dec d, unsigned decimals)
{
    char buf[48];
    pricing_dec_format(d, decimals, buf, sizeof(buf));
    return json_string(buf);
}

/* Book i's mean of each month, [{"month", "mean"}], with several
 * months; null with one. */
static json_t *
by_month_json(const struct cs_run *run, size_t i)
{
    const struct sim_book_stats *b = &run->res->books[i];
    json_t *a;
    if (run->opts->months < 2 || !b->month_sum || !(a = json_array()))
        return json_null();
    for (unsigned k = 0; k < run->opts->months; k++) {
        char name[16];
        cs_month_name(run->opts, k, name, sizeof(name));
        if (json_array_append_new(a,
                                  json_pack("{s:s, s:o}", "month", name, "mean",
                                            jdec(cs_month_mean(b, k), 6)))) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* The autopause book i was priced under: {"after_idle_s", "from"}, or
 * null. */
static json_t *
pauses_json(const struct cs_run *run, size_t i)
{
    uint32_t after;
    const char *from = cs_pauses(run, i, &after);
    return from ? json_pack("{s:I, s:s}", "after_idle_s", (json_int_t)after,
                            "from", from)
                : json_null();
}

static json_t *
book_json(const struct cs_run *run, size_t i)
{
    const struct cs_book *bk = &run->books[i];
    const struct sim_book_stats *b = &run->res->books[i];
    json_t *j = json_object();
    if (!j)
        return NULL;
    const char *cur = pricing_book_currency(bk->book);
    unsigned d = pricing_money_decimals(cur);
    bool ok =
        !json_object_set_new(j, "id", json_string(pricing_book_id(bk->book))) &&
        !json_object_set_new(j, "file", json_string(bk->file)) &&
        !json_object_set_new(j, "currency", json_string(cur)) &&
        !json_object_set_new(j, "source", json_string(bk->source)) &&
        !json_object_set_new(j, "as_of", json_string(bk->as_of)) &&
        !json_object_set_new(j, "priced", json_boolean(!b->failed));
    if (ok && b->failed)
        return !json_object_set_new(j, "reason", json_string(b->reason))
                   ? j
                   : (json_decref(j), NULL);
    json_t *lines = json_object();
    ok = ok && lines && !json_object_set_new(j, "lines", lines);
    for (int k = 0; ok && k < SIM_NKINDS; k++)
        if (b->kind_sum[k].v)
            ok = !json_object_set_new(
                lines, sim_line_kinds[k],
                jdec(sim_dec_div(b->kind_sum[k], b->trials), 6));
    ok = ok &&
         !json_object_set_new(j, "trials",
                              json_integer((json_int_t)b->trials)) &&
         !json_object_set_new(j, "converged", json_boolean(b->converged)) &&
         !json_object_set_new(j, "mean", jdec(sim_book_mean(b), 6)) &&
         !json_object_set_new(j, "ci95_half_width", json_real(b->half)) &&
         !json_object_set_new(j, "controls",
                              json_integer((json_int_t)b->ncontrols)) &&
         !json_object_set_new(j, "pauses", pauses_json(run, i)) &&
         !json_object_set_new(j, "by_month", by_month_json(run, i)) &&
         !json_object_set_new(j, "p5", jdec(sim_book_quantile(b, 0.05), d)) &&
         !json_object_set_new(j, "p50", jdec(sim_book_quantile(b, 0.5), d)) &&
         !json_object_set_new(j, "p95", jdec(sim_book_quantile(b, 0.95), d)) &&
         !json_object_set_new(j, "sessions_per_month",
                              json_real(cs_sessions_per_month(b))) &&
         !json_object_set_new(j, "per_1000_sessions",
                              b->sessions ? jdec(cs_per_thousand(b), 6)
                                          : json_null());
    static const struct {
        const char *key;
        double q;
    } pct[] = {{"p5_ci95", 0.05}, {"p50_ci95", 0.5}, {"p95_ci95", 0.95}};
    for (size_t k = 0; ok && k < 3; k++) {
        struct pricing_dec lo, hi;
        struct sim_quantile_ci ci;
        json_t *x = json_object();
        sim_book_quantile_ci(b, pct[k].q, &lo, &hi, &ci);
        ok = x && !json_object_set_new(j, pct[k].key, x) &&
             !json_object_set_new(x, "low", jdec(lo, d)) &&
             !json_object_set_new(x, "high", jdec(hi, d)) &&
             !json_object_set_new(x, "low_rank",
                                  json_integer((json_int_t)ci.lo)) &&
             !json_object_set_new(x, "high_rank",
                                  json_integer((json_int_t)ci.hi)) &&
             !json_object_set_new(x, "coverage", json_real(ci.coverage));
    }
    if (ok && sim_book_lower_bound(b)) {
        /* Added only to a lower bound: a book priced whole reads as
         * before. */
        char text[512];
        json_t *u = json_array();
        ok = u && !json_object_set_new(j, "bound", json_string("lower")) &&
             !json_object_set_new(
                 j, "lower_bound",
                 json_string(cs_lower_bound_text(bk, b, text, sizeof(text)))) &&
             !json_object_set_new(j, "unpriced", u);
        for (int k = 0; ok && k < PRICING_NDIMS; k++) {
            if (!(b->unpriced >> k & 1))
                continue;
            const char *unit;
            struct pricing_dec m =
                cs_unpriced_mean(bk, b, (enum pricing_dim)k, &unit);
            json_t *x = json_object();
            ok = x && !json_array_append_new(u, x) &&
                 !json_object_set_new(x, "dimension",
                                      json_string(pricing_dim_names[k])) &&
                 !json_object_set_new(x, "mean", jdec(m, 6)) &&
                 !json_object_set_new(x, "unit", json_string(unit));
        }
    }
    if (!ok) {
        json_decref(j);
        return NULL;
    }
    return j;
}

int
cs_print_json(FILE *f, const struct cs_run *run)
{
    size_t *o = cs_order(run);
    json_t *root = json_object(), *books = json_array();
    char month[16];
    int rc = -1;
    snprintf(month, sizeof(month), "%04d-%02d", run->opts->year,
             run->opts->month);
    if (!o || !root || !books ||
        json_object_set_new(root, "profile", json_string(run->profile_path)) ||
        json_object_set_new(root, "name", json_string(run->profile->name)) ||
        json_object_set_new(root, "month", json_string(month)) ||
        json_object_set_new(root, "first_month",
                            json_boolean(run->opts->first_month)) ||
        json_object_set_new(root, "seed",
                            json_integer((json_int_t)run->opts->seed)) ||
        json_object_set_new(root, "precision",
                            json_real(run->opts->precision)) ||
        json_object_set_new(root, "trials",
                            json_integer((json_int_t)run->res->trials)) ||
        json_object_set_new(
            root, "method",
            json_string(run->opts->controlled ? "controlled" : "plain")) ||
        json_object_set_new(
            root, "months",
            json_integer(run->opts->months > 1 ? run->opts->months : 1)) ||
        json_object_set_new(root, "growth_pct",
                            json_real(run->opts->growth * 100)) ||
        json_object_set_new(root, "note",
                            json_string(cs_stats_note(run->opts))) ||
        (run->tornado && cs_tornado_json(root, run) < 0))
        goto out;
    json_t *b = books;
    books = NULL;
    if (json_object_set_new(root, "books", b))
        goto out;
    for (size_t k = 0; k < run->nbooks; k++) {
        json_t *x = book_json(run, o[k]);
        if (!x || json_array_append_new(b, x) || cs_plan_json(x, run, o[k]) ||
            (run->tornado && cs_tornado_book_json(x, run, o[k]) < 0))
            goto out;
    }
    if (cs_tiers_json(root, run) < 0)
        goto out;
    if (json_dumpf(root, f, JSON_INDENT(2)) < 0)
        goto out;
    fputc('\n', f);
    rc = 0;
out:
    free(o);
    json_decref(books);
    json_decref(root);
    return rc;
}
