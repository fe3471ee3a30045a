/*
 * billing_int.h - shared by the files of meter/billing/; private.
 */
#ifndef BILLING_INT_H
#define BILLING_INT_H

#include "billing.h"

/* The calendar month (year, month) as Unix seconds [start, end). */
static inline int64_t
billing_period_start(int year, int month)
{
    int y, m;
    int64_t start, end;
    pricing_period_of(pricing_days_from_civil(year, month, 1) * 86400, &y, &m,
                      &start, &end);
    return start;
}

static inline int64_t
billing_period_end(int year, int month)
{
    int y, m;
    int64_t start, end;
    pricing_period_of(pricing_days_from_civil(year, month, 1) * 86400, &y, &m,
                      &start, &end);
    return end;
}

/* The parts of a period: the days on each book, each assignment holding
 * from its day until the account's next one (an override book, a
 * preview's, prices every part). */
struct billing_parts {
    struct pricing_part p[31];
    const struct meter_db_assignment *a[31];
    size_t n;
};
void billing_parts_of(const struct meter_db_account *acct, int year, int month,
                      struct billing_parts *out);

/* HARD, with the message in e. */
enum meter_db_status billing_fail(struct meter_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The webhook events of billing (events.c, docs/webhooks.md), written
 * in the caller's transaction: final invoice inv made final; credit note
 * note (final) voiding the invoice it names; the run of account for
 * (year, month) failed, saying why. */
enum meter_db_status billing_event_finalized(PGconn *db,
                                             const struct report_invoice *inv,
                                             struct meter_err *e);
enum meter_db_status billing_event_voided(PGconn *db,
                                          const struct report_invoice *note,
                                          struct meter_err *e);
enum meter_db_status billing_event_run_failed(PGconn *db, const char *account,
                                              int year, int month,
                                              bool finalize, const char *error,
                                              struct meter_err *e);

/* The periods a run rated for its account, with what it saw of each
 * (invoice_usage): late usage is detected by comparing with them. */
struct billing_rated {
    struct meter_db_rated p[64];
    size_t n;
};

/* A slot of rated for (year, month), with what the period held before
 * its usage was read; SIZE_MAX (and e) past 64 periods. */
size_t billing_rated_slot(struct billing_rated *rated,
                          const struct meter_db_account *acct, int year,
                          int month, uint64_t first_runs, uint64_t revision,
                          struct meter_err *e);

/* Rates the account's period from src with its parts' books into lines
 * of inv, adding the statements' running and idle seconds to slot of
 * rated. A period without parts yields no lines (NONE). */
enum meter_db_status billing_rate_source(const struct meter_db_account *acct,
                                         int year, int month,
                                         struct pricing_source src,
                                         struct report_invoice *inv,
                                         struct billing_rated *rated,
                                         size_t slot, struct meter_err *e);

/* The documents of one account's run: the period's own invoice first,
 * then one per other currency that late usage is billed in. */
struct billing_docs {
    struct report_invoice d[METER_INVOICE_DOCS];
    size_t n;
};
void billing_docs_release(struct billing_docs *ds);
/* Starts them: the first, for the account's period, issued by seller. */
void billing_docs_start(struct billing_docs *ds,
                        const struct meter_db_account *acct, int year,
                        int month, const char *seller);

/*
 * Completes the account's documents for the period once the first holds
 * its own lines: late usage (of its own period, which billed says final
 * documents billed, and of the earlier periods late lists, nlate of
 * them, rated again here: their documents read through db, their usage
 * through usage), late usage in another currency on a document of its
 * own, the grants of gs that pay each, their totals. Without gs (a
 * preview), the first document alone, with its own lines.
 */
enum meter_db_status
billing_complete(PGconn *db, PGconn *usage, const struct meter_db_account *acct,
                 int year, int month, const struct report_invoice *billed,
                 const int *late, size_t nlate,
                 const struct meter_db_grants *gs, struct billing_docs *ds,
                 struct billing_rated *rated, struct meter_err *e);

/* Document inv's total (a draft of acct, its lines set) spread over the
 * days it bills, into *cells (n of them; the caller frees it, which
 * points into inv's lines), the drivers of other periods read through
 * usage (the database of acct's usage): known are the drivers of one
 * period already
 * read (or NULL), the others read through db. */
enum meter_db_status billing_revenue(PGconn *usage,
                                     const struct meter_db_account *acct,
                                     const struct report_invoice *inv,
                                     const struct meter_db_period_days *known,
                                     struct meter_db_revenue_cell **cells,
                                     size_t *n, struct meter_err *e);

#endif
