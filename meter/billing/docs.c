/*
 * docs.c - an account's documents for a period: its own lines, part by
 * part, rated through pricing/ (pricing_rate with the parts' books);
 * late usage of earlier periods as differences between a fresh rating
 * and what final documents billed (in the currency each is billed in:
 * another currency's on a document of its own, rules section 9); the
 * grants that pay each document (rules section 14); their totals.
 */
#include "billing_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum meter_db_status
billing_fail(struct meter_err *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    return METER_DB_HARD;
}

size_t
billing_rated_slot(struct billing_rated *rated,
                   const struct meter_db_account *acct, int year, int month,
                   uint64_t first_runs, uint64_t revision, struct meter_err *e)
{
    if (rated->n == sizeof(rated->p) / sizeof(rated->p[0])) {
        billing_fail(e, "account '%s': more than 64 periods in one invoice",
                     acct->id);
        return SIZE_MAX;
    }
    size_t slot = rated->n++;
    rated->p[slot] =
        (struct meter_db_rated){year, month, 0, first_runs, revision, 0, 0};
    return slot;
}

/*
 * Rates the account's period from src with its parts' books into lines
 * of inv, adding the statements' running and idle seconds to slot of
 * rated. A period without parts yields no lines.
 */
enum meter_db_status
billing_rate_source(const struct meter_db_account *acct, int year, int month,
                    struct pricing_source src, struct report_invoice *inv,
                    struct billing_rated *rated, size_t slot,
                    struct meter_err *e)
{
    struct billing_parts parts;
    billing_parts_of(acct, year, month, &parts);
    if (parts.n == 0)
        return METER_DB_NONE;
    struct pricing_scope scope = {year, month, 0, acct->id, false};
    struct pricing_statement *st = NULL;
    size_t n = 0;
    struct pricing_err pe = {{0}};
    enum meter_db_status rc = METER_DB_ROWS;
    if (pricing_rate(NULL, src, &scope, parts.p, parts.n, &st, &n, &pe) < 0)
        rc = billing_fail(e, "%s", pe.msg);
    for (size_t k = 0; k < n && rc == METER_DB_ROWS; k++) {
        rated->p[slot].running_s += st[k].q.running_s;
        rated->p[slot].idle_s += st[k].q.credited_s;
        const struct meter_db_assignment *a = parts.a[k];
        const char *book =
            acct->override ? pricing_book_id(acct->override) : a->book_id;
        if (strcmp(st[k].currency, inv->currency) != 0 && inv->currency[0]) {
            rc = billing_fail(e,
                              "account '%s' %04d-%02d: price books of two "
                              "currencies (%s, %s) in one period",
                              acct->id, year, month, inv->currency,
                              st[k].currency);
            break;
        }
        snprintf(inv->currency, sizeof(inv->currency), "%s", st[k].currency);
        if (report_invoice_add_statement(
                inv, &st[k], book, acct->override ? 0 : a->version, e) < 0)
            rc = METER_DB_HARD;
    }
    pricing_statements_free(st, n);
    return rc;
}

/* Rates the account's period, reading its state and then its usage
 * through a reader of its own, into lines of inv, and records in rated
 * what it saw. */
static enum meter_db_status
rate_period(PGconn *db, const struct meter_db_account *acct, int year,
            int month, struct report_invoice *inv, struct billing_rated *rated,
            struct meter_err *e)
{
    uint64_t first_runs, revision;
    enum meter_db_status st =
        meter_db_period_state(db, acct, year, month, &first_runs, &revision, e);
    if (st < 0)
        return st;
    size_t slot =
        billing_rated_slot(rated, acct, year, month, first_runs, revision, e);
    if (slot == SIZE_MAX)
        return METER_DB_HARD;
    struct billing_parts parts;
    billing_parts_of(acct, year, month, &parts);
    if (parts.n == 0)
        return METER_DB_NONE;
    struct meter_usage_reader *r =
        meter_db_usage_open(db, acct->id, billing_period_start(year, month),
                            billing_period_end(year, month), false, e);
    if (!r)
        return METER_DB_HARD;
    st = billing_rate_source(acct, year, month, meter_usage_source(r), inv,
                             rated, slot, e);
    rated->p[slot].seconds = meter_db_usage_seconds(r);
    meter_usage_reader_free(r);
    return st < 0 ? st : METER_DB_ROWS;
}

void
billing_docs_release(struct billing_docs *ds)
{
    for (size_t i = 0; i < ds->n; i++)
        report_invoice_release(&ds->d[i]);
    ds->n = 0;
}

/* The run's document in currency, made (as the first one, for another
 * currency) if there is none yet; NULL past METER_INVOICE_DOCS. The first
 * document takes the currency of the first lines if its period rated
 * none. */
static struct report_invoice *
doc_in(struct billing_docs *ds, const char *currency, struct meter_err *e)
{
    struct report_invoice *main = &ds->d[0];
    if (!main->currency[0])
        snprintf(main->currency, sizeof(main->currency), "%s", currency);
    for (size_t i = 0; i < ds->n; i++)
        if (strcmp(ds->d[i].currency, currency) == 0)
            return &ds->d[i];
    if (ds->n == METER_INVOICE_DOCS) {
        meter_fail(e, "account '%s': late usage in more than %d currencies",
                   main->account_id, METER_INVOICE_DOCS - 1);
        return NULL;
    }
    struct report_invoice *d = &ds->d[ds->n++];
    *d = *main;
    d->lines = NULL;
    d->nlines = d->lines_cap = 0;
    snprintf(d->currency, sizeof(d->currency), "%s", currency);
    return d;
}

/* The difference between a fresh rating of (year, month) and what final
 * documents billed of it, as late_usage lines of the document in its
 * currency. Fresh and billed are in one currency unless the period's
 * books changed currency since it was billed: then the one is billed and
 * the other taken back, each in its own. */
static enum meter_db_status
add_late(struct billing_docs *ds, int year, int month,
         const struct report_invoice *fresh,
         const struct report_invoice *billed, struct meter_err *e)
{
    bool one = !fresh->nlines || !billed->nlines ||
               strcmp(fresh->currency, billed->currency) == 0;
    for (int side = 0; side < (one ? 1 : 2); side++) {
        bool f = one || side == 0, b = one || side == 1;
        const struct report_invoice *by = f && fresh->nlines ? fresh : billed;
        if ((!f || !fresh->nlines) && (!b || !billed->nlines))
            continue;
        struct report_invoice *doc = doc_in(ds, by->currency, e);
        if (!doc || report_invoice_add_late(
                        doc, year, month, f ? fresh->lines : NULL,
                        f ? fresh->nlines : 0, b ? billed->lines : NULL,
                        b ? billed->nlines : 0, e) < 0)
            return METER_DB_HARD;
    }
    return METER_DB_ROWS;
}

/* Late usage of period (year, month): a fresh rating less what is billed,
 * as late_usage lines of the run's documents. */
static enum meter_db_status
late_usage(PGconn *db, PGconn *usage, const struct meter_db_account *acct,
           int year, int month, struct billing_docs *ds,
           struct billing_rated *rated, struct meter_err *e)
{
    struct report_invoice fresh = {0}, billed = {0};
    enum meter_db_status st =
        rate_period(usage, acct, year, month, &fresh, rated, e);
    if (st >= 0)
        st = meter_db_billed_lines(db, acct, year, month, &billed, e);
    if (st >= 0)
        st = add_late(ds, year, month, &fresh, &billed, e);
    report_invoice_release(&fresh);
    report_invoice_release(&billed);
    return st < 0 ? st : METER_DB_ROWS;
}

/*
 * Ends inv with a credit_grant line for each grant of gs that pays it
 * (rules section 14), from the balances final documents left: read
 * under the account's lock, in the transaction that finalizes.
 */
static enum meter_db_status
spend_grants(const struct meter_db_account *acct,
             const struct meter_db_grants *gs, struct report_invoice *inv,
             struct meter_err *e)
{
    if (gs->n == 0)
        return METER_DB_ROWS;
    enum meter_db_status st = METER_DB_ROWS;
    struct pricing_dec sum = {0};
    for (size_t i = 0; i < inv->nlines; i++)
        if (pricing_dec_add(sum, inv->lines[i].amount, &sum) != PRICING_OK)
            st = billing_fail(e, "account '%s': amount overflow", acct->id);
    size_t *order = calloc(gs->n, sizeof(*order));
    struct pricing_dec *spent = calloc(gs->n, sizeof(*spent));
    if (!order || !spent)
        st = billing_fail(e, "out of memory");
    size_t k = st < 0
                   ? 0
                   : pricing_grants_spend(gs->g, gs->n, inv->year, inv->month,
                                          inv->currency, sum, order, spent);
    for (size_t x = 0; x < k && st >= 0; x++) {
        const struct pricing_grant *g = &gs->g[order[x]];
        struct report_line l = {.year = inv->year, .month = inv->month};
        snprintf(l.kind, sizeof(l.kind), "credit_grant");
        snprintf(l.grant, sizeof(l.grant), "%s", g->id);
        pricing_grant_describe(g, l.description, sizeof(l.description));
        l.amount = spent[order[x]];
        if (report_invoice_add_line(inv, &l, e) < 0)
            st = METER_DB_HARD;
    }
    free(order);
    free(spent);
    return st;
}

/* Starts the run's documents: the first, for the account's period. */
void
billing_docs_start(struct billing_docs *ds, const struct meter_db_account *acct,
                   int year, int month, const char *seller)
{
    struct report_invoice *inv = &ds->d[0];
    ds->n = 1;
    inv->year = year;
    inv->month = month;
    snprintf(inv->kind, sizeof(inv->kind), "invoice");
    snprintf(inv->account_id, sizeof(inv->account_id), "%s", acct->id);
    snprintf(inv->account_name, sizeof(inv->account_name), "%s", acct->name);
    snprintf(inv->seller, sizeof(inv->seller), "%s", seller ? seller : "");
}

/*
 * Completes the account's documents for the period once the first holds
 * its own lines: late usage (of its own period, which billed says final
 * documents billed, and of the earlier periods late lists, nlate of
 * them, rated again here), late usage in another currency on a document
 * of its own (rules section 9), the grants of gs that pay each, their
 * totals. Without gs (a preview), the first document alone, with its
 * own lines.
 */
enum meter_db_status
billing_complete(PGconn *db, PGconn *usage, const struct meter_db_account *acct,
                 int year, int month, const struct report_invoice *billed,
                 const int *late, size_t nlate,
                 const struct meter_db_grants *gs, struct billing_docs *ds,
                 struct billing_rated *rated, struct meter_err *e)
{
    enum meter_db_status st = METER_DB_ROWS;
    if (gs) {
        struct report_invoice none = {0};
        st = add_late(ds, year, month, &none, billed, e);
    }
    for (size_t i = 0; i < nlate && st >= 0; i++)
        st = late_usage(db, usage, acct, late[i] / 12, late[i] % 12 + 1, ds,
                        rated, e);
    /* A document of another currency whose differences came to nothing
     * is not issued. */
    size_t kept = 1;
    for (size_t i = 1; i < ds->n; i++) {
        if (ds->d[i].nlines)
            ds->d[kept++] = ds->d[i];
        else
            report_invoice_release(&ds->d[i]);
    }
    ds->n = kept;
    for (size_t i = 0; i < ds->n && st >= 0 && gs; i++)
        st = spend_grants(acct, gs, &ds->d[i], e);
    for (size_t i = 0; i < ds->n && st >= 0; i++)
        if (report_invoice_total(&ds->d[i], e) < 0)
            st = METER_DB_HARD;
    return st < 0 ? st : METER_DB_ROWS;
}
