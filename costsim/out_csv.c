/*
 * out_csv.c - costsim's comparison as CSV (RFC 4180), for a spreadsheet:
 * a header row, then one row per book in the order of the table, with
 * the figures of the JSON output in the same decimals, so both read the
 * same. The shape is in docs/simulator.md.
 *
 * A column per line kind rather than a row per (book, kind): a book's
 * figures stay on one row, where a spreadsheet sorts and charts them.
 * Its line columns add up to its plain mean within half a minor unit a
 * month, since each month's total is the sum of its lines rounded to the
 * cent (N halves with --months N). With several months, a column of
 * each month's mean follows the lines.
 * After them, as the table shows them: the book's provider, its plan
 * (add-ons bought and limits broken, "; " between) and the tier chosen
 * for its provider.
 */
#include "costsim_int.h"

#include <stdlib.h>
#include <string.h>

#include "meter_util.h"

/* A field through the project's one CSV guard (meter_csv_write): text
 * from a book (its id, source, reason) that would start a spreadsheet
 * formula gets a leading ', numbers are written as they are. */
static void
field(FILE *f, const char *s, bool last)
{
    meter_csv_write(f, s);
    fputs(last ? "\r\n" : ",", f);
}

static void
num(FILE *f, const char *s)
{
    field(f, s, false);
}

static void
dec(FILE *f, struct pricing_dec d, unsigned decimals)
{
    char buf[48];
    pricing_dec_format(d, decimals, buf, sizeof(buf));
    num(f, buf);
}

static void
real(FILE *f, double x)
{
    char buf[64];
    snprintf(buf, sizeof(buf), "%.6f", x);
    num(f, buf);
}

/* A percentile's 95% interval: its two trial totals and its coverage. */
static void
quantile_ci(FILE *f, const struct sim_book_stats *b, double q, unsigned d)
{
    struct pricing_dec lo, hi;
    struct sim_quantile_ci ci;
    sim_book_quantile_ci(b, q, &lo, &hi, &ci);
    dec(f, lo, d);
    dec(f, hi, d);
    real(f, ci.coverage);
}

/* A lower bound's unpriced quantities, their means a month, one field:
 * "storage 7650.000000 GiB-hour; egress 12.000000 GB" (empty when every
 * price is known). */
static void
unpriced(FILE *f, const struct cs_book *bk, const struct sim_book_stats *b)
{
    char text[512] = "";
    size_t k = 0;
    for (int x = 0; x < PRICING_NDIMS && k < sizeof(text); x++) {
        if (!(b->unpriced >> x & 1))
            continue;
        const char *unit;
        char m[48];
        pricing_dec_format(cs_unpriced_mean(bk, b, (enum pricing_dim)x, &unit),
                           6, m, sizeof(m));
        k += (size_t)snprintf(text + k, sizeof(text) - k, "%s%s %s %s",
                              k ? "; " : "", pricing_dim_names[x], m, unit);
    }
    field(f, text, false);
}

/* Book i's add-ons and broken limits, as the table says them under it,
 * one field, "; " between ("" for a book without a plan). */
static int
plan(FILE *f, const struct cs_run *run, size_t i)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return -1;
    cs_print_plan_as(m, run, i, "", "; ");
    if (fclose(m) != 0 || !text) {
        free(text);
        return -1;
    }
    if (len >= 2)
        text[len - 2] = '\0'; /* the last "; " */
    field(f, text, false);
    free(text);
    return 0;
}

/* The tier chosen for each provider, as the table's lines say it. */
struct tiers {
    size_t n;
    const char *provider[64];
    char *text[64];
};

static void
keep_tier(const char *provider, const char *text, void *arg)
{
    struct tiers *t = arg;
    if (t->n < 64) {
        t->provider[t->n] = provider;
        t->text[t->n++] = strdup(text);
    }
}

static const char *
tier_of(const struct tiers *t, const char *provider)
{
    for (size_t k = 0; k < t->n; k++)
        if (strcmp(t->provider[k], provider) == 0)
            return t->text[k] ? t->text[k] : "";
    return "";
}

int
cs_print_csv(FILE *f, const struct cs_run *run)
{
    static const char *const head[] = {
        "book", "file", "currency", "priced", "reason",
    };
    /* Columns of a priced book only, before its lines. */
    static const char *const stats[] = {
        "trials",
        "converged",
        "bound",
        "unpriced",
        "mean",
        "ci95_half_width",
        "controls",
        "pauses_after_idle_s",
        "pauses_from",
        "p5",
        "p50",
        "p95",
        "p5_ci95_low",
        "p5_ci95_high",
        "p5_ci95_coverage",
        "p50_ci95_low",
        "p50_ci95_high",
        "p50_ci95_coverage",
        "p95_ci95_low",
        "p95_ci95_high",
        "p95_ci95_coverage",
        "per_1000_sessions",
        "sessions_per_month",
    };
    struct tiers tiers = {0};
    size_t *o = cs_order(run);
    int rc = -1;
    if (!o || cs_tiers_each(run, keep_tier, &tiers) < 0)
        goto out;
    size_t nstats = sizeof(stats) / sizeof(stats[0]);
    for (size_t h = 0; h < sizeof(head) / sizeof(head[0]); h++)
        num(f, head[h]);
    for (size_t h = 0; h < nstats; h++)
        num(f, stats[h]);
    for (int k = 0; k < SIM_NKINDS; k++) {
        char col[48];
        snprintf(col, sizeof(col), "line_%s", sim_line_kinds[k]);
        num(f, col);
    }
    /* With several months, each month's mean. */
    unsigned nm = run->opts->months > 1 ? run->opts->months : 0;
    for (unsigned k = 0; k < nm; k++) {
        char col[32], name[16];
        cs_month_name(run->opts, k, name, sizeof(name));
        snprintf(col, sizeof(col), "month_%s", name);
        num(f, col);
    }
    num(f, "provider");
    num(f, "plan");
    num(f, "provider_tier");
    num(f, "source");
    field(f, "as_of", true);
    for (size_t r = 0; r < run->nbooks; r++) {
        const struct cs_book *bk = &run->books[o[r]];
        const struct sim_book_stats *b = &run->res->books[o[r]];
        const char *cur = pricing_book_currency(bk->book);
        unsigned d = pricing_money_decimals(cur);
        char trials[32];
        snprintf(trials, sizeof(trials), "%zu", b->trials);
        field(f, pricing_book_id(bk->book), false);
        field(f, bk->file, false);
        num(f, cur);
        num(f, b->failed ? "false" : "true");
        field(f, b->failed ? b->reason : "", false);
        if (b->failed) {
            for (size_t k = 0; k < nstats + SIM_NKINDS + nm; k++)
                num(f, "");
        } else {
            num(f, trials);
            num(f, b->converged ? "true" : "false");
            num(f, sim_book_lower_bound(b) ? "lower" : "");
            unpriced(f, bk, b);
            dec(f, sim_book_mean(b), 6);
            real(f, b->half);
            char nc[32];
            snprintf(nc, sizeof(nc), "%zu", b->ncontrols);
            num(f, nc);
            uint32_t after = 0;
            const char *from = cs_pauses(run, o[r], &after);
            char as[16];
            snprintf(as, sizeof(as), "%u", after);
            num(f, from ? as : "");
            num(f, from ? from : "");
            dec(f, sim_book_quantile(b, 0.05), d);
            dec(f, sim_book_quantile(b, 0.5), d);
            dec(f, sim_book_quantile(b, 0.95), d);
            quantile_ci(f, b, 0.05, d);
            quantile_ci(f, b, 0.5, d);
            quantile_ci(f, b, 0.95, d);
            if (b->sessions)
                dec(f, cs_per_thousand(b), 6);
            else
                num(f, "");
            real(f, cs_sessions_per_month(b));
            for (int k = 0; k < SIM_NKINDS; k++)
                dec(f, sim_dec_div(b->kind_sum[k], b->trials), 6);
            for (unsigned k = 0; k < nm; k++)
                dec(f, cs_month_mean(b, k), 6);
        }
        const char *provider = pricing_book_provider(bk->book);
        field(f, provider, false);
        if (plan(f, run, o[r]) < 0)
            goto out;
        field(f, *provider ? tier_of(&tiers, provider) : "", false);
        field(f, bk->source, false);
        field(f, bk->as_of, true);
    }
    rc = 0;
out:
    for (size_t k = 0; k < tiers.n; k++)
        free(tiers.text[k]);
    free(o);
    return rc;
}
