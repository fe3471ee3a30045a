/*
 * revenue.c - a document's total spread over the days whose usage it
 * bills (invoice_revenue), which revenue by day, by book and by pricing
 * model are sums of (docs/dashboards.md).
 *
 * Each line's amount goes to the days of its period on its book (the
 * part of the period it was priced in), in proportion to the usage that
 * drives it on each day, read from the hourly rollups: vCPU-seconds for
 * compute, instances and the autopause credit, byte-seconds of memory,
 * of disk, bytes sent, running seconds for runs. Fees and credits with
 * no usage behind them (subscription, minimum commit, credits) go evenly
 * over the days; so does a line whose days saw none of its driver; a
 * grant goes where the charges it pays went (spread_grant). The
 * split is exact (12 decimals); what rounding the total to the currency
 * took or added is spread evenly; then each (day, kind, book) cell is
 * rounded to the minor unit by largest remainder, so the cells of a
 * document sum to its total exactly.
 */
#include "billing_int.h"

#include <stdlib.h>
#include <string.h>

/* What drives a kind of charge from day to day (columns of the
 * drivers query, after the day). */
enum driver { D_EVEN = -1, D_RUNNING, D_VCPU, D_MEM, D_DISK, D_EGRESS, D_N };

static enum driver
driver_of(const char *kind)
{
    static const struct {
        const char *kind;
        enum driver d;
    } map[] = {
        {"cpu", D_VCPU},     {"instance", D_VCPU}, {"autopause_credit", D_VCPU},
        {"memory", D_MEM},   {"storage", D_DISK},  {"egress", D_EGRESS},
        {"runs", D_RUNNING},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(map[i].kind, kind) == 0)
            return map[i].d;
    return D_EVEN;
}

#define period_days meter_db_period_days

struct cell {
    int64_t day;
    const char *kind, *book; /* point into the document's lines */
    int version;
    pricing_i128 v;   /* exact, then rounded */
    pricing_i128 rem; /* what rounding down left, for largest remainder */
};

struct spread {
    struct period_days *p;
    size_t np;
    struct cell *c;
    size_t nc, cap;
};

static pricing_i128
floor_div(pricing_i128 a, pricing_i128 b)
{
    pricing_i128 q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

/* The drivers of (year, month), read once per period. */
static enum meter_db_status
load_period(PGconn *db, const struct meter_db_account *acct, int year,
            int month, struct spread *s, struct period_days **out,
            struct meter_err *e)
{
    for (size_t i = 0; i < s->np; i++)
        if (s->p[i].year == year && s->p[i].month == month) {
            *out = &s->p[i];
            return METER_DB_ROWS;
        }
    struct period_days *np = realloc(s->p, (s->np + 1) * sizeof(*np));
    if (!np)
        return billing_fail(e, "out of memory");
    s->p = np;
    struct period_days *p = &s->p[s->np];
    enum meter_db_status st =
        meter_db_revenue_drivers(db, &acct->pk, 1, year, month, &p, e);
    if (st < 0)
        return st;
    s->np++;
    *out = p;
    return METER_DB_ROWS;
}

static int
add_to_cell(struct spread *s, int64_t day, const char *kind, const char *book,
            int version, pricing_i128 v)
{
    for (size_t i = 0; i < s->nc; i++) {
        struct cell *c = &s->c[i];
        if (c->day == day && c->version == version &&
            strcmp(c->kind, kind) == 0 && strcmp(c->book, book) == 0) {
            c->v += v;
            return 0;
        }
    }
    if (s->nc == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        struct cell *nc = realloc(s->c, cap * sizeof(*nc));
        if (!nc)
            return -1;
        s->c = nc;
        s->cap = cap;
    }
    s->c[s->nc++] = (struct cell){day, kind, book, version, v, 0};
    return 0;
}

/* Whether day (of the period) is on the line's book: inside a part of
 * the period priced with it. A line of no book, or of a book no part
 * names (an override), has every day of the period. */
static bool
on_book(const struct billing_parts *parts, const struct report_line *l,
        int64_t t)
{
    if (!l->book[0])
        return true;
    bool named = false;
    for (size_t k = 0; k < parts->n; k++) {
        if (strcmp(parts->a[k]->book_id, l->book) != 0 ||
            parts->a[k]->version != l->version)
            continue;
        named = true;
        if (t >= parts->p[k].from && t < parts->p[k].to)
            return true;
    }
    return !named;
}

/* Splits one line over its days into the cells. */
static enum meter_db_status
spread_line(PGconn *db, const struct meter_db_account *acct,
            const struct report_line *l, struct spread *s, struct meter_err *e)
{
    struct period_days *p = NULL;
    enum meter_db_status st =
        load_period(db, acct, l->year, l->month, s, &p, e);
    if (st < 0)
        return st;
    const char *kind =
        strcmp(l->kind, "late_usage") == 0 ? l->corrects : l->kind;
    enum driver d = driver_of(kind);
    struct billing_parts parts;
    billing_parts_of(acct, l->year, l->month, &parts);
    int64_t w[31];
    pricing_i128 total = 0;
    int ndays = 0, heaviest = -1;
    for (int i = 0; i < p->ndays; i++) {
        bool in = on_book(&parts, l, (p->first_day + i) * 86400);
        w[i] = in ? (d == D_EVEN ? 1 : p->w[i][d]) : 0;
        ndays += in;
        total += w[i];
        if (w[i] > 0 && (heaviest < 0 || w[i] > w[heaviest]))
            heaviest = i;
    }
    if (total == 0) { /* no driver on its days: evenly */
        for (int i = 0; i < p->ndays; i++) {
            bool in =
                ndays == 0 || on_book(&parts, l, (p->first_day + i) * 86400);
            w[i] = in;
            total += w[i];
            if (in && heaviest < 0)
                heaviest = i;
        }
    }
    pricing_i128 a = l->amount.v, given = 0;
    for (int i = 0; i < p->ndays; i++) {
        if (!w[i])
            continue;
        pricing_i128 part = floor_div(a * w[i], total);
        given += part;
        if (add_to_cell(s, p->first_day + i, kind, l->book, l->version, part) <
            0)
            return billing_fail(e, "out of memory");
    }
    /* What flooring left (under one unit a day) to the heaviest day. */
    if (add_to_cell(s, p->first_day + heaviest, kind, l->book, l->version,
                    a - given) < 0)
        return billing_fail(e, "out of memory");
    return METER_DB_ROWS;
}

/*
 * A credit grant pays the document: it goes where the charges it pays
 * went, in proportion to each cell's positive amount (so late usage it
 * pays is paid on the days of that usage, and a day's revenue does not
 * turn negative because a grant paid another day's). With nothing
 * positive to pay, it goes to the first cell (or, with no cell, is
 * left to the rounding step, which spreads it).
 */
static int
spread_grant(const struct report_line *l, struct spread *s)
{
    size_t n = s->nc;
    pricing_i128 total = 0, given = 0;
    for (size_t i = 0; i < n; i++)
        if (s->c[i].v > 0)
            total += s->c[i].v;
    if (n == 0)
        return 0;
    pricing_i128 a = l->amount.v;
    /* |a| <= total (a grant pays at most the charges): a * weight fits
     * while total does in 63 bits (9.2 million in the currency); past
     * that, positive cells weigh alike. */
    bool alike = total > INT64_MAX;
    if (alike) {
        total = 0;
        for (size_t i = 0; i < n; i++)
            total += s->c[i].v > 0;
    }
    size_t heaviest = 0;
    for (size_t i = 0; i < n && total > 0; i++) {
        const struct cell c = s->c[i];
        if (c.v <= 0)
            continue;
        if (c.v > s->c[heaviest].v)
            heaviest = i;
        pricing_i128 part = floor_div(a * (alike ? 1 : c.v), total);
        given += part;
        if (add_to_cell(s, c.day, "credit_grant", c.book, c.version, part) < 0)
            return -1;
    }
    const struct cell h = s->c[heaviest];
    return add_to_cell(s, h.day, "credit_grant", h.book, h.version, a - given);
}

static int
by_remainder(const void *a, const void *b)
{
    const struct cell *x = *(struct cell *const *)a,
                      *y = *(struct cell *const *)b;
    if (x->rem != y->rem)
        return x->rem > y->rem ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Makes the cells sum to total exactly, in whole minor units. */
static int
round_cells(struct spread *s, pricing_i128 total, int minor)
{
    if (s->nc == 0)
        return 0;
    pricing_i128 sum = 0;
    for (size_t i = 0; i < s->nc; i++)
        sum += s->c[i].v;
    /* What rounding the total changed, evenly over the cells. */
    pricing_i128 x = total - sum, n = (pricing_i128)s->nc;
    pricing_i128 each = x / n, rest = x - each * n;
    for (size_t i = 0; i < s->nc; i++) {
        s->c[i].v += each;
        if (rest > 0 && (pricing_i128)i < rest)
            s->c[i].v += 1;
        if (rest < 0 && (pricing_i128)i < -rest)
            s->c[i].v -= 1;
    }
    pricing_i128 unit = 1;
    for (int i = minor; i < PRICING_SCALE; i++)
        unit *= 10;
    pricing_i128 floors = 0;
    struct cell **order = malloc(s->nc * sizeof(*order));
    if (!order)
        return -1;
    for (size_t i = 0; i < s->nc; i++) {
        struct cell *c = &s->c[i];
        pricing_i128 f = floor_div(c->v, unit) * unit;
        c->rem = c->v - f;
        c->v = f;
        floors += f;
        order[i] = c;
    }
    /* total is whole minor units and the cells summed to it exactly, so
     * the remainders add up to a whole number of units, fewer than n. */
    pricing_i128 units = (total - floors) / unit;
    qsort(order, s->nc, sizeof(*order), by_remainder);
    for (pricing_i128 i = 0; i < units; i++)
        order[i]->v += unit;
    free(order);
    return 0;
}

enum meter_db_status
billing_revenue(PGconn *usage, const struct meter_db_account *acct,
                const struct report_invoice *inv,
                const struct meter_db_period_days *known,
                struct meter_db_revenue_cell **cells, size_t *ncells,
                struct meter_err *e)
{
    int minor = (int)pricing_money_decimals(inv->currency);
    struct spread s = {0};
    enum meter_db_status st = METER_DB_ROWS;
    *cells = NULL;
    *ncells = 0;
    if (known) {
        if (!(s.p = malloc(sizeof(*s.p))))
            return billing_fail(e, "out of memory");
        s.p[s.np++] = *known;
    }
    /* The charges first, then the grants that pay them. */
    for (size_t i = 0; i < inv->nlines && st >= 0; i++)
        if (strcmp(inv->lines[i].kind, "credit_grant") != 0)
            st = spread_line(usage, acct, &inv->lines[i], &s, e);
    for (size_t i = 0; i < inv->nlines && st >= 0; i++)
        if (strcmp(inv->lines[i].kind, "credit_grant") == 0 &&
            spread_grant(&inv->lines[i], &s) < 0)
            st = billing_fail(e, "out of memory");
    if (st >= 0 && round_cells(&s, inv->total.v, minor) < 0)
        st = billing_fail(e, "out of memory");
    struct meter_db_revenue_cell *out =
        st >= 0 ? calloc(s.nc ? s.nc : 1, sizeof(*out)) : NULL;
    if (st >= 0 && !out)
        st = billing_fail(e, "out of memory");
    for (size_t i = 0; st >= 0 && i < s.nc; i++)
        if (s.c[i].v != 0)
            out[(*ncells)++] = (struct meter_db_revenue_cell){
                s.c[i].day, s.c[i].kind, s.c[i].book, s.c[i].version,
                (struct pricing_dec){s.c[i].v}};
    if (st >= 0)
        *cells = out;
    else
        free(out);
    free(s.p);
    free(s.c);
    return st;
}
