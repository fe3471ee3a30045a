/*
 * rate_int.h - what the rating engine (rate.c) hands to the pricing of
 * statements (statement.c); private to pricing/.
 */
#ifndef RATE_INT_H
#define RATE_INT_H

#include "pricing_int.h"

/* Seconds [from, to) in which a sandbox's billable storage was level
 * bytes: what the account's allowance (included_per_account) is taken
 * from. */
struct pool_span {
    int64_t from, to;
    uint64_t level;
};

/* The quantities of one account in one period. */
struct rate_acct {
    char account_id[PRICING_ID_MAX + 1];
    int year, month;
    int64_t start, end; /* the period, [start, end) in Unix seconds */
    struct pricing_quantities q;
    uint64_t dups, conflicts;
    /* With an allowance per account: the storage of every sandbox as
     * spans, summed at the end instead of into q.storage; once the spans
     * would take more memory than a total per second of the period,
     * that total instead (dense, end - start seconds). */
    struct pool_span *spans;
    size_t nspans, spans_cap;
    uint64_t *dense;
    struct rate_acct *next; /* hash chain */
};

/* Prices a's quantities with book into *st (docs/pricing.md), for
 * active_days of the period (0: all of it); partial: a dimension of
 * unknown price is left out and named in st->unpriced rather than
 * failing (pricing_rater_partial). On failure st may hold lines:
 * release them with pricing_statements_free. */
int rate_price(const struct pricing_book *book, const struct rate_acct *a,
               int active_days, bool partial, struct pricing_statement *st,
               struct pricing_err *e);

/* A zeroed line of kind at the end of st's lines, not yet counted:
 * rate_keep_line counts it unless its amount is zero. NULL, with e set,
 * when out of memory. */
struct pricing_line *rate_add_line(struct pricing_statement *st,
                                   const char *kind, struct pricing_err *e);
void rate_keep_line(struct pricing_statement *st);

#endif
