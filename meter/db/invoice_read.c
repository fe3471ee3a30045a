/*
 * invoice_read.c - what the invoice run reads, a batch of accounts at a
 * time (docs/invoicing.md): their period's live invoices, its state,
 * the lines final documents billed of it, the earlier periods to rate
 * again, the earlier periods final, the grants and the drafts, each one
 * statement for the batch; the same of one account's earlier period; the
 * accounts to invoice; and documents read back. What it all means is
 * meter/billing/'s.
 */
#include "db_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Not voided: no final credit note references document d. */
#define NOT_VOIDED(d)                                                          \
    "NOT EXISTS (SELECT 1 FROM invoices c WHERE c.account_id = " d             \
    ".account_id AND c.voids = " d ".invoice_id AND c.status = 'final')"
/* Invoices of an account that are final and not voided. */
#define LIVE_INVOICE                                                           \
    "i.kind = 'invoice' AND i.status = 'final' AND " NOT_VOIDED("i")

/* Invoices of d that are final and not voided. */
#define LIVE(d)                                                                \
    d ".kind = 'invoice' AND " d ".status = 'final' AND " NOT_VOIDED(d)

/* What the period holds besides its seconds, read before the usage: the
 * account's sandboxes whose first running minute is in it, and its usage
 * revision (raised by each quarantine that took seconds from it). */
enum meter_db_status
meter_db_period_state(PGconn *db, const struct meter_db_account *acct, int year,
                      int month, uint64_t *first_runs, uint64_t *revision,
                      struct meter_err *e)
{
    struct db_params v = {0};
    db_param_int32(&v, acct->pk);
    db_param_int64(&v, db_period_start(year, month) / 60);
    db_param_int64(&v, db_period_end(year, month) / 60);
    db_param_period(&v, year, month);
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot read the period's usage state",
        "SELECT (SELECT count(*) FROM sandboxes WHERE account_pk = $1::int"
        "  AND first_running_minute >= $2::int"
        "  AND first_running_minute < $3::int),"
        " coalesce((SELECT revision FROM usage_revisions"
        "  WHERE account_pk = $1::int AND period = $4::date), 0)",
        v.n, v.v, NULL, NULL, &r, e);
    if (st >= 0 && (db_get_uint64(r, 0, 0, first_runs, e) < 0 ||
                    db_get_uint64(r, 0, 1, revision, e) < 0))
        st = METER_DB_HARD;
    PQclear(r);
    return st;
}

/* The columns of a line, as line_from_row reads them. */
#define LINE_COLUMNS                                                           \
    "l.kind, coalesce(l.corrects, ''), to_char(l.period, 'YYYY-MM'),"          \
    " coalesce(l.price_book_id, ''), coalesce(l.version, 0), l.description,"   \
    " l.quantity, coalesce(l.unit, ''), l.unit_price, l.amount,"               \
    " coalesce(l.instance, ''), coalesce(l.grant_id, ''), l.account_id"

/* Appends the line of row i of r to inv, its LINE_COLUMNS from column
 * off on; -1 if it does not read back. */
static int
line_from_row(PGresult *r, int i, int off, struct report_invoice *inv,
              struct meter_err *e)
{
    struct report_line l = {0};
#define COL(c) PQgetvalue(r, i, off + (c))
    snprintf(l.kind, sizeof(l.kind), "%s", COL(0));
    snprintf(l.corrects, sizeof(l.corrects), "%s", COL(1));
    meter_period_parse(COL(2), &l.year, &l.month);
    snprintf(l.book, sizeof(l.book), "%s", COL(3));
    if (!PQgetisnull(r, i, off + 4) &&
        db_get_int(r, i, off + 4, &l.version, e) < 0)
        return -1;
    snprintf(l.description, sizeof(l.description), "%s", COL(5));
    l.has_quantity = !PQgetisnull(r, i, off + 6);
    snprintf(l.unit, sizeof(l.unit), "%s", COL(7));
    l.has_unit_price = !PQgetisnull(r, i, off + 8);
    snprintf(l.instance, sizeof(l.instance), "%s", COL(10));
    snprintf(l.grant, sizeof(l.grant), "%s", COL(11));
    if ((l.has_quantity && db_parse_dec(COL(6), &l.quantity)) ||
        (l.has_unit_price && db_parse_dec(COL(8), &l.unit_price)) ||
        db_parse_dec(COL(9), &l.amount))
        return meter_fail(e, "account '%s': a stored line does not read back",
                          COL(12));
#undef COL
    return report_invoice_add_line(inv, &l, e);
}

/* The lines that final documents of the account bill for a period
 * (credit notes cancel the invoices they void), into billed, with their
 * currency (a period's documents bill it in its books' one currency).
 * Grant lines are left out: they are never rated again, and those of an
 * invoice of late usage in another currency are the period's too. */
enum meter_db_status
meter_db_billed_lines(PGconn *db, const struct meter_db_account *acct, int year,
                      int month, struct report_invoice *billed,
                      struct meter_err *e)
{
    struct db_params v = {0};
    db_param_text(&v, acct->id);
    db_param_period(&v, year, month);
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot read billed lines",
        "SELECT " LINE_COLUMNS ", i.currency FROM invoice_lines l"
        " JOIN invoices i USING (account_id, invoice_id)"
        " WHERE l.account_id = $1 AND i.status = 'final' AND l.period = $2"
        " AND l.kind <> 'credit_grant'"
        " ORDER BY i.invoice_id, l.line_no",
        v.n, v.v, NULL, NULL, &r, e);
    for (int i = 0; st >= 0 && i < PQntuples(r); i++) {
        if (i == 0)
            snprintf(billed->currency, sizeof(billed->currency), "%s",
                     PQgetvalue(r, i, 13));
        if (strcmp(billed->currency, PQgetvalue(r, i, 13)) != 0)
            st = db_hard(e,
                         "account '%s' %04d-%02d: billed in two currencies "
                         "(%s, %s)",
                         acct->id, year, month, billed->currency,
                         PQgetvalue(r, i, 13));
        else if (line_from_row(r, i, 0, billed, e) < 0)
            st = METER_DB_HARD;
    }
    PQclear(r);
    return st < 0 ? st : METER_DB_ROWS;
}

enum meter_db_status
meter_db_invoice_accounts(PGconn *db, int year, int month, const char *only,
                          struct meter_strtab *out, struct meter_err *e)
{
    struct db_params v = {0};
    db_param_period(&v, year, month);
    db_param_period(&v, month == 12 ? year + 1 : year,
                    month == 12 ? 1 : month + 1);
    db_param_text(&v, only);
    /* An assignment holds until the account's next one. */
    return db_strings(
        db, "cannot list the accounts to invoice",
        "SELECT DISTINCT a.account_id FROM account_price_books a"
        " WHERE a.valid_from < $2::date AND a.price_book_id IS NOT NULL"
        " AND ($3::text IS NULL"
        "  OR a.account_id = $3::text)"
        " AND NOT EXISTS (SELECT 1 FROM account_price_books n"
        "  WHERE n.account_id = a.account_id AND n.valid_from > a.valid_from"
        "  AND n.valid_from <= $1::date)"
        /* and those with a draft of the period on no book any more (one
         * ended since): the run deletes it */
        " UNION SELECT i.account_id FROM invoices i WHERE i.period = $1::date"
        " AND i.status = 'draft' AND ($3::text IS NULL"
        "  OR i.account_id = $3::text)"
        " ORDER BY 1",
        v.n, v.v, out, e);
}

void
meter_db_bill_release(struct meter_db_bill *b)
{
    meter_db_account_release(&b->acct);
    report_invoice_release(&b->billed);
    free(b->finals);
    free(b->rated);
    meter_db_grants_release(&b->grants);
    b->finals = NULL;
    b->nfinals = 0;
    b->rated = NULL;
    b->nrated = 0;
}

/* The bill of row i's first column (an account id), looked for from *at
 * on: rows come in the bills' order or near it. */
static struct meter_db_bill *
row_bill(struct meter_db_bill *const *bills, size_t n, PGresult *r, int i,
         size_t *at)
{
    const char *id = PQgetvalue(r, i, 0);
    for (size_t k = 0; k < n; k++) {
        size_t x = (*at + k) % n;
        if (strcmp(bills[x]->acct.id, id) == 0) {
            *at = x;
            return bills[x];
        }
    }
    return NULL;
}

/* "{id,...}" of the active bills, or "{pk,...}" with pks. */
static void
bill_array(struct meter_db_bill *const *bills, size_t n, bool pks,
           struct meter_buf *out)
{
    meter_buf_str(out, "{");
    for (size_t k = 0; k < n; k++) {
        if (!bills[k]->active)
            continue;
        if (pks)
            db_array_int(out, bills[k]->acct.pk);
        else
            db_array_text(out, bills[k]->acct.id);
    }
    meter_buf_str(out, "}");
}

/* A batch's statement and what it is about. */
struct batch_read {
    struct meter_db_bill *const *bills;
    size_t n;
    int year, month;
};

/* Runs sql with the ids of the active bills ($1), the period ($2) and,
 * with pks, their keys ($3); each row goes to fn with the bill its first
 * column names (if active). */
static enum meter_db_status
for_rows(PGconn *db, const struct batch_read *br, const char *what,
         const char *sql, bool pks,
         int (*fn)(const struct batch_read *br, struct meter_db_bill *b,
                   PGresult *r, int i, struct meter_err *e),
         struct meter_err *e)
{
    struct meter_buf ids = {0}, keys = {0};
    bill_array(br->bills, br->n, false, &ids);
    bill_array(br->bills, br->n, true, &keys);
    if (ids.failed || keys.failed) {
        meter_buf_release(&ids);
        meter_buf_release(&keys);
        return db_hard(e, "out of memory");
    }
    char period[32];
    db_period_text(br->year, br->month, period);
    const char *v[] = {ids.p, period, keys.p};
    PGresult *r;
    enum meter_db_status st =
        meter_db_exec(db, what, sql, pks ? 3 : 2, v, NULL, NULL, &r, e);
    meter_buf_release(&ids);
    meter_buf_release(&keys);
    if (st < 0)
        return st;
    size_t at = 0;
    for (int i = 0; i < PQntuples(r) && st >= 0; i++) {
        struct meter_db_bill *b = row_bill(br->bills, br->n, r, i, &at);
        if (b && b->active && fn(br, b, r, i, e) < 0)
            st = METER_DB_HARD;
    }
    PQclear(r);
    return st;
}

static int
take_live(const struct batch_read *br, struct meter_db_bill *b, PGresult *r,
          int i, struct meter_err *e)
{
    (void)br;
    if (b->nlive == sizeof(b->live) / sizeof(b->live[0])) {
        snprintf(b->problem, sizeof(b->problem),
                 "account '%s': more than %zu live invoices of a period",
                 b->acct.id, b->nlive);
        return 0;
    }
    int rc = db_get_text(r, i, 1, b->live[b->nlive].number,
                         sizeof(b->live[b->nlive].number), e) < 0 ||
                     db_get_text(r, i, 2, b->live[b->nlive].currency,
                                 sizeof(b->live[b->nlive].currency), e) < 0
                 ? -1
                 : 0;
    b->nlive += rc == 0;
    return rc;
}

static int
take_state(const struct batch_read *br, struct meter_db_bill *b, PGresult *r,
           int i, struct meter_err *e)
{
    (void)br;
    return db_get_uint64(r, i, 1, &b->first_runs, e) < 0 ||
                   db_get_uint64(r, i, 2, &b->revision, e) < 0
               ? -1
               : 0;
}

static int
take_billed(const struct batch_read *br, struct meter_db_bill *b, PGresult *r,
            int i, struct meter_err *e)
{
    if (!b->billed.nlines)
        snprintf(b->billed.currency, sizeof(b->billed.currency), "%s",
                 PQgetvalue(r, i, 14));
    if (strcmp(b->billed.currency, PQgetvalue(r, i, 14)) != 0) {
        snprintf(b->problem, sizeof(b->problem),
                 "account '%s' %04d-%02d: billed in two currencies (%s, %s)",
                 b->acct.id, br->year, br->month, b->billed.currency,
                 PQgetvalue(r, i, 14));
        return 0;
    }
    return line_from_row(r, i, 1, &b->billed, e);
}

static int
take_finals(const struct batch_read *br, struct meter_db_bill *b, PGresult *r,
            int i, struct meter_err *e)
{
    (void)br;
    int y, m;
    meter_period_parse(PQgetvalue(r, i, 1), &y, &m);
    int *f = realloc(b->finals, (b->nfinals + 1) * sizeof(*f));
    if (!f)
        return meter_fail(e, "out of memory");
    b->finals = f;
    b->finals[b->nfinals++] = pricing_period_index(y, m);
    return 0;
}

static int
take_draft(const struct batch_read *br, struct meter_db_bill *b, PGresult *r,
           int i, struct meter_err *e)
{
    (void)br;
    /* One draft per currency: at most the documents of a run. */
    if (b->ndrafts == sizeof(b->drafts) / sizeof(b->drafts[0])) {
        snprintf(b->problem, sizeof(b->problem),
                 "account '%s': more than %zu drafts of a period", b->acct.id,
                 b->ndrafts);
        return 0;
    }
    if (db_get_int64(r, i, 1, &b->drafts[b->ndrafts].id, e) < 0 ||
        db_get_text(r, i, 2, b->drafts[b->ndrafts].currency,
                    sizeof(b->drafts[b->ndrafts].currency), e) < 0)
        return -1;
    b->ndrafts++;
    return 0;
}

enum meter_db_status
meter_db_bills_lock(PGconn *db, struct meter_db_bill *const *bills, size_t n,
                    bool lock, struct meter_db_books *cache,
                    struct meter_err *e)
{
    struct meter_db_account **accts = calloc(n ? n : 1, sizeof(*accts));
    if (!accts)
        return db_hard(e, "out of memory");
    for (size_t k = 0; k < n; k++)
        accts[k] = &bills[k]->acct;
    enum meter_db_status st =
        meter_db_accounts_load(db, accts, n, lock, cache, e);
    free(accts);
    return st;
}

/* The grants of the active bills, with their balances. */
static enum meter_db_status
read_grants(PGconn *db, const struct batch_read *br, struct meter_err *e)
{
    size_t n = 0;
    const struct meter_db_account **accts =
        calloc(br->n ? br->n : 1, sizeof(*accts));
    struct meter_db_grants **gs = calloc(br->n ? br->n : 1, sizeof(*gs));
    for (size_t k = 0; accts && gs && k < br->n; k++)
        if (br->bills[k]->active) {
            accts[n] = &br->bills[k]->acct;
            gs[n++] = &br->bills[k]->grants;
        }
    enum meter_db_status st =
        !accts || !gs ? db_hard(e, "out of memory")
        : n           ? meter_db_accounts_grants(db, accts, gs, n, e)
                      : METER_DB_ROWS;
    free(accts);
    free(gs);
    return st;
}

/* The drivers of the period's days of the active bills (revenue). */
static enum meter_db_status
read_days(PGconn *db, const struct batch_read *br, struct meter_err *e)
{
    size_t n = 0;
    struct meter_db_bill **by = calloc(br->n ? br->n : 1, sizeof(*by));
    int32_t *pks = calloc(br->n ? br->n : 1, sizeof(*pks));
    struct meter_db_period_days **days =
        calloc(br->n ? br->n : 1, sizeof(*days));
    enum meter_db_status st = METER_DB_ROWS;
    if (!by || !pks || !days)
        st = db_hard(e, "out of memory");
    for (size_t k = 0; st >= 0 && k < br->n; k++)
        if (br->bills[k]->active)
            by[n++] = br->bills[k];
    /* Ascending keys (insertion: batches are small next to the run). */
    for (size_t i = 1; st >= 0 && i < n; i++)
        for (size_t j = i; j > 0 && by[j - 1]->acct.pk > by[j]->acct.pk; j--) {
            struct meter_db_bill *x = by[j];
            by[j] = by[j - 1];
            by[j - 1] = x;
        }
    for (size_t i = 0; st >= 0 && i < n; i++) {
        pks[i] = by[i]->acct.pk;
        days[i] = &by[i]->days;
    }
    if (st >= 0 && n)
        st = meter_db_revenue_drivers(db, pks, n, br->year, br->month, days, e);
    free(by);
    free(pks);
    free(days);
    return st;
}

/* Earlier periods with a live final invoice, and what the latest rating
 * of each that stands saw (a rating, or a credit note's return), into
 * each bill's rated: read in the catalog, compared with the usage by
 * meter_db_bills_usage. */
static int
take_rated(const struct batch_read *br, struct meter_db_bill *b, PGresult *r,
           int i, struct meter_err *e)
{
    (void)br;
    struct meter_db_rated_period *p =
        realloc(b->rated, (b->nrated + 1) * sizeof(*p));
    if (!p)
        return meter_fail(e, "out of memory");
    b->rated = p;
    p += b->nrated;
    int y, m;
    meter_period_parse(PQgetvalue(r, i, 1), &y, &m);
    p->period = pricing_period_index(y, m);
    if (db_get_bool(r, i, 2, &p->no_samples, e) < 0 ||
        db_get_uint64(r, i, 3, &p->samples, e) < 0 ||
        db_get_uint64(r, i, 4, &p->first_runs, e) < 0 ||
        db_get_uint64(r, i, 5, &p->revision, e) < 0)
        return -1;
    b->nrated++;
    return 0;
}

/* Earlier periods whose billing may be off: their usage changed since
 * the latest rating that stands (more seconds stored, other first runs,
 * or a quarantine took seconds: its revision), or a credit note took
 * back lines of theirs since. Each gets its late usage. */
static enum meter_db_status
read_late(PGconn *usage, const struct batch_read *br, struct meter_err *e)
{
    struct meter_buf pks = {0}, periods = {0};
    meter_buf_str(&pks, "{");
    meter_buf_str(&periods, "{");
    size_t n = 0;
    for (size_t k = 0; k < br->n; k++) {
        const struct meter_db_bill *b = br->bills[k];
        for (size_t i = 0; b->active && i < b->nrated; i++) {
            char day[32];
            int p = b->rated[i].period;
            db_period_text(p / 12, p % 12 + 1, day);
            db_array_int(&pks, b->acct.pk);
            db_array_text(&periods, day);
            n++;
        }
    }
    meter_buf_str(&pks, "}");
    meter_buf_str(&periods, "}");
    const char *v[] = {pks.p, periods.p};
    PGresult *r = NULL;
    enum meter_db_status st = METER_DB_ROWS;
    if (pks.failed || periods.failed)
        st = db_hard(e, "out of memory");
    /* What each period holds now, in the order asked. */
    else if (n)
        st = meter_db_exec(
            usage, "cannot look for late usage",
            "SELECT (SELECT coalesce(sum(h.samples), 0)"
            "  FROM usage_hourly_totals h WHERE h.account_pk = x.pk"
            "  AND h.hour >= extract(epoch FROM x.period)::bigint / 3600"
            "  AND h.hour < extract(epoch FROM x.period + interval '1 month')"
            "   ::bigint / 3600),"
            " (SELECT count(*) FROM sandboxes s WHERE s.account_pk = x.pk"
            "  AND s.first_running_minute >= extract(epoch FROM x.period)"
            "   ::bigint / 60"
            "  AND s.first_running_minute < extract(epoch FROM x.period"
            "   + interval '1 month')::bigint / 60),"
            " coalesce((SELECT v.revision FROM usage_revisions v"
            "  WHERE v.account_pk = x.pk AND v.period = x.period), 0)"
            " FROM unnest($1::int[], $2::date[]) WITH ORDINALITY"
            "  AS x (pk, period, i) ORDER BY x.i",
            2, v, NULL, NULL, &r, e);
    int row = 0;
    for (size_t k = 0; st >= 0 && k < br->n; k++) {
        struct meter_db_bill *b = br->bills[k];
        for (size_t i = 0; st >= 0 && b->active && i < b->nrated; i++, row++) {
            const struct meter_db_rated_period *p = &b->rated[i];
            uint64_t samples, first_runs, revision;
            if (db_get_uint64(r, row, 0, &samples, e) < 0 ||
                db_get_uint64(r, row, 1, &first_runs, e) < 0 ||
                db_get_uint64(r, row, 2, &revision, e) < 0) {
                st = METER_DB_HARD;
                break;
            }
            if (!p->no_samples && samples == p->samples &&
                first_runs == p->first_runs && revision == p->revision)
                continue;
            if (b->nlate == sizeof(b->late) / sizeof(b->late[0])) {
                snprintf(b->problem, sizeof(b->problem),
                         "account '%s': more than 64 periods of late usage "
                         "in one invoice",
                         b->acct.id);
                continue;
            }
            b->late[b->nlate++] = p->period;
        }
    }
    PQclear(r);
    meter_buf_release(&pks);
    meter_buf_release(&periods);
    return st;
}

enum meter_db_status
meter_db_bills_read(PGconn *db, struct meter_db_bill *const *bills, size_t n,
                    int year, int month, unsigned what, struct meter_err *e)
{
    const struct batch_read br = {bills, n, year, month}, *bt = &br;
    enum meter_db_status st = METER_DB_ROWS;
    if (what & METER_DB_BILLS_LIVE)
        st = for_rows(db, bt, "cannot read the accounts' invoices",
                      "SELECT i.account_id, i.number, i.currency"
                      " FROM invoices i WHERE i.account_id = ANY ($1::text[])"
                      " AND i.period = $2::date AND " LIVE(
                          "i") " ORDER BY i.account_id, i.invoice_id",
                      false, take_live, e);
    if (st < 0 || !(what & METER_DB_BILLS_HISTORY))
        return st;
    st = for_rows(db, bt, "cannot read billed lines",
                  "SELECT l.account_id, " LINE_COLUMNS ", i.currency"
                  " FROM invoice_lines l"
                  " JOIN invoices i USING (account_id, invoice_id)"
                  " WHERE l.account_id = ANY ($1::text[])"
                  " AND i.status = 'final' AND l.period = $2::date"
                  " AND l.kind <> 'credit_grant'"
                  " ORDER BY l.account_id, i.invoice_id, l.line_no",
                  false, take_billed, e);
    if (st >= 0)
        st = for_rows(
            db, bt, "cannot look for late usage",
            "SELECT a.account_id, to_char(p.period, 'YYYY-MM'),"
            " last.samples IS NULL, coalesce(last.samples, 0),"
            " coalesce(last.first_runs, 0), coalesce(last.revision, 0)"
            " FROM unnest($1::text[]) AS a (account_id)"
            " CROSS JOIN LATERAL (SELECT DISTINCT i.period"
            "  FROM invoices i WHERE i.account_id = a.account_id"
            "  AND i.period < $2::date AND " LIVE(
                "i") ") p"
                     /* the latest that stands: a rating, or a credit note's
                        return */
                     " CROSS JOIN LATERAL (SELECT u.samples, u.first_runs,"
                     "  u.revision FROM invoice_usage u JOIN invoices d"
                     "  USING (account_id, invoice_id)"
                     "  WHERE u.account_id = a.account_id"
                     "  AND u.period = p.period AND d.status = 'final'"
                     "  AND (d.kind = 'credit_note' OR " NOT_VOIDED(
                         "d") ")"
                              "  ORDER BY u.seq DESC LIMIT 1) last"
                              " ORDER BY a.account_id, p.period",
            false, take_rated, e);
    if (st >= 0 && (what & METER_DB_BILLS_FINALS))
        st = for_rows(db, bt, "cannot read the accounts' invoices",
                      "SELECT DISTINCT account_id, to_char(period, 'YYYY-MM')"
                      " FROM invoices WHERE account_id = ANY ($1::text[])"
                      " AND kind = 'invoice' AND status = 'final'"
                      " AND period < $2::date",
                      false, take_finals, e);
    /* Their grants, with the balances final documents left. */
    if (st >= 0)
        st = read_grants(db, bt, e);
    if (st >= 0)
        st = for_rows(db, bt, "cannot read the period's drafts",
                      "SELECT account_id, invoice_id, currency FROM invoices"
                      " WHERE account_id = ANY ($1::text[])"
                      " AND period = $2::date AND status = 'draft'"
                      " AND kind = 'invoice' ORDER BY account_id, invoice_id",
                      false, take_draft, e);
    return st;
}

enum meter_db_status
meter_db_bills_usage(PGconn *usage, struct meter_db_bill *const *bills,
                     size_t n, int year, int month, unsigned what,
                     struct meter_err *e)
{
    const struct batch_read br = {bills, n, year, month}, *bt = &br;
    enum meter_db_status st =
        for_rows(usage, bt, "cannot read the period's usage state",
                 "SELECT a.account_id,"
                 " (SELECT count(*) FROM sandboxes s WHERE s.account_pk = a.pk"
                 "  AND s.first_running_minute >= extract(epoch FROM $2::date)"
                 "   ::bigint / 60"
                 "  AND s.first_running_minute < extract(epoch FROM $2::date"
                 "   + interval '1 month')::bigint / 60),"
                 " coalesce((SELECT revision FROM usage_revisions v"
                 "  WHERE v.account_pk = a.pk AND v.period = $2::date), 0)"
                 " FROM unnest($1::text[], $3::int[]) AS a (account_id, pk)",
                 true, take_state, e);
    if (st < 0 || !(what & METER_DB_BILLS_HISTORY))
        return st;
    st = read_late(usage, bt, e);
    if (st >= 0)
        st = read_days(usage, bt, e);
    return st;
}

/* ---- reading back -------------------------------------------------------- */

#define DOC_COLUMNS                                                            \
    "i.invoice_id, i.kind, i.status, coalesce(i.number, ''), i.account_id,"    \
    " coalesce(i.account_name, ''), i.seller, to_char(i.period, 'YYYY-MM'),"   \
    " i.currency, to_char(i.created_at AT TIME ZONE 'UTC',"                    \
    " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"                                      \
    " coalesce(to_char(i.finalized_at AT TIME ZONE 'UTC',"                     \
    " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), ''),"                                 \
    " coalesce((SELECT v.number FROM invoices v WHERE v.account_id ="          \
    "  i.account_id AND v.invoice_id = i.voids), ''),"                         \
    " coalesce((SELECT c.number FROM invoices c WHERE c.account_id ="          \
    "  i.account_id AND c.voids = i.invoice_id), '') AS voided_by,"            \
    " coalesce(i.reason, ''), coalesce(encode(i.sha256, 'hex'), ''),"          \
    " i.total::text"

/* Fills the header of inv from row i of r (DOC_COLUMNS); -1 if it does
 * not read back. */
static int
doc_header(PGresult *r, int i, struct report_invoice *inv, struct meter_err *e)
{
    memset(inv, 0, sizeof(*inv));
    if (db_get_int64(r, i, 0, &inv->id, e) < 0)
        return -1;
    snprintf(inv->kind, sizeof(inv->kind), "%s", PQgetvalue(r, i, 1));
    snprintf(inv->number, sizeof(inv->number), "%s", PQgetvalue(r, i, 3));
    snprintf(inv->account_id, sizeof(inv->account_id), "%s",
             PQgetvalue(r, i, 4));
    snprintf(inv->account_name, sizeof(inv->account_name), "%s",
             PQgetvalue(r, i, 5));
    snprintf(inv->seller, sizeof(inv->seller), "%s", PQgetvalue(r, i, 6));
    meter_period_parse(PQgetvalue(r, i, 7), &inv->year, &inv->month);
    snprintf(inv->currency, sizeof(inv->currency), "%s", PQgetvalue(r, i, 8));
    snprintf(inv->created_at, sizeof(inv->created_at), "%s",
             PQgetvalue(r, i, 9));
    snprintf(inv->finalized_at, sizeof(inv->finalized_at), "%s",
             PQgetvalue(r, i, 10));
    snprintf(inv->voids, sizeof(inv->voids), "%s", PQgetvalue(r, i, 11));
    snprintf(inv->voided_by, sizeof(inv->voided_by), "%s",
             PQgetvalue(r, i, 12));
    snprintf(inv->reason, sizeof(inv->reason), "%s", PQgetvalue(r, i, 13));
    snprintf(inv->sha256, sizeof(inv->sha256), "%s", PQgetvalue(r, i, 14));
    snprintf(inv->status, sizeof(inv->status), "%s",
             inv->voided_by[0] ? "void" : PQgetvalue(r, i, 2));
    return db_get_dec(r, i, 15, &inv->total, e);
}

/* The lines of document inv->id. */
static enum meter_db_status
doc_lines(PGconn *db, struct report_invoice *inv, struct meter_err *e)
{
    struct db_params v = {0};
    db_param_text(&v, inv->account_id);
    db_param_int64(&v, inv->id);
    PGresult *r;
    enum meter_db_status st =
        meter_db_exec(db, "cannot read invoice lines",
                      "SELECT " LINE_COLUMNS " FROM invoice_lines l"
                      " WHERE l.account_id = $1 AND l.invoice_id = $2::bigint"
                      " ORDER BY l.line_no",
                      v.n, v.v, NULL, NULL, &r, e);
    for (int i = 0; st >= 0 && i < PQntuples(r); i++)
        if (line_from_row(r, i, 0, inv, e) < 0)
            st = METER_DB_HARD;
    PQclear(r);
    return st < 0 ? st : METER_DB_ROWS;
}

enum meter_db_status
meter_db_invoice_get(PGconn *db, const char *ref, const char *account,
                     struct report_invoice *inv, struct meter_err *e)
{
    memset(inv, 0, sizeof(*inv));
    /* A number has a dash (2026-000001); a draft is named by its id. */
    bool number = strchr(ref, '-') != NULL;
    uint64_t id = 0;
    if (!number && meter_parse_uint(ref, 1, INT64_MAX, &id) < 0)
        return METER_DB_NONE;
    struct db_params v = {0};
    db_param_text(&v, number ? ref : NULL);
    if (number)
        db_param_text(&v, NULL);
    else
        db_param_uint64(&v, id);
    db_param_text(&v, account);
    PGresult *r;
    enum meter_db_status st =
        meter_db_exec(db, "cannot read the invoice",
                      "SELECT " DOC_COLUMNS " FROM invoices i"
                      " WHERE (i.number = $1 OR i.invoice_id = $2::bigint)"
                      " AND ($3::text IS NULL OR i.account_id = $3::text)",
                      v.n, v.v, NULL, NULL, &r, e);
    if (st != METER_DB_ROWS) {
        PQclear(r);
        return st;
    }
    int bad = doc_header(r, 0, inv, e);
    PQclear(r);
    if (bad)
        return METER_DB_HARD;
    return doc_lines(db, inv, e);
}

enum meter_db_status
meter_db_invoice_list(PGconn *db, const struct meter_invoice_filter *f,
                      meter_invoice_cb *cb, void *arg, struct meter_err *e)
{
    struct db_params v = {0};
    db_param_text(&v, f->account);
    if (f->year)
        db_param_period(&v, f->year, f->month);
    else
        db_param_text(&v, NULL);
    db_param_text(&v, f->status);
    db_param_int64(&v, f->after);
    db_param_int32(&v, f->limit > 0 ? f->limit : 100);
    PGresult *r;
    enum meter_db_status st =
        meter_db_exec(db, "cannot list invoices",
                      "SELECT * FROM (SELECT " DOC_COLUMNS " FROM invoices i"
                      " WHERE ($1::text IS NULL OR i.account_id = $1::text)"
                      " AND ($2::date IS NULL OR i.period = $2::date)"
                      " AND i.invoice_id > $4::bigint) d"
                      " WHERE $3::text IS NULL OR (CASE WHEN d.voided_by <> ''"
                      "  THEN 'void' ELSE d.status END) = $3::text"
                      " ORDER BY d.invoice_id LIMIT $5::int",
                      v.n, v.v, NULL, NULL, &r, e);
    if (st < 0)
        return st;
    for (int i = 0; i < PQntuples(r); i++) {
        struct report_invoice inv;
        if (doc_header(r, i, &inv, e) < 0) {
            st = METER_DB_HARD;
            break;
        }
        cb(&inv, arg);
    }
    PQclear(r);
    return st;
}
