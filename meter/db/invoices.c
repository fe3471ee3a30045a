/*
 * invoices.c - the invoice run of one account and period, the lifecycle
 * (draft, final, void by credit note) and reading documents back
 * (docs/invoicing.md).
 *
 * An account's run is one READ COMMITTED transaction that first locks
 * the account's row, so runs of one account serialize and each sees
 * what the previous committed. Usage is read through one cursor per
 * period (one snapshot), whose count of seconds is recorded: late usage
 * is detected by comparing it with the seconds stored since, so nothing
 * depends on clocks. Numbers come from invoice_numbers, whose row lock
 * lasts until commit: gap-free under concurrent finalization.
 */
#define _GNU_SOURCE /* qsort_r */
#include "db_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

/* Not voided: no final credit note references document d. */
#define NOT_VOIDED(d)                                                          \
    "NOT EXISTS (SELECT 1 FROM invoices c WHERE c.account_id = " d             \
    ".account_id AND c.voids = " d ".invoice_id AND c.status = 'final')"
/* Invoices of an account that are final and not voided. */
#define LIVE_INVOICE                                                           \
    "i.kind = 'invoice' AND i.status = 'final' AND " NOT_VOIDED("i")

/* ---- rating -------------------------------------------------------------- */

/* The periods a document rated, with what it saw of each: the stored
 * seconds it read, and, read before the usage (a later change is then
 * seen as late), the sandboxes whose first run was in the period and the
 * period's usage revision (migration 0013). */
struct rated {
    int year[64], month[64];
    uint64_t seconds[64], first_runs[64], revision[64];
    uint64_t running_s[64], idle_s[64]; /* of the statements priced */
    size_t n;
};

/* What the period holds besides its seconds, read before the usage: the
 * account's sandboxes whose first running minute is in it, and its usage
 * revision (raised by each quarantine that took seconds from it). */
static enum meter_db_status
period_state(PGconn *db, const struct db_account *acct, int year, int month,
             uint64_t *first_runs, uint64_t *revision, struct meter_err *e)
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

/* A slot of rated for (year, month), with what the period held before
 * its usage was read; NULL past 64 periods. */
static size_t
rated_slot(struct rated *rated, const struct db_account *acct, int year,
           int month, uint64_t first_runs, uint64_t revision,
           struct meter_err *e)
{
    if (rated->n == 64) {
        db_hard(e, "account '%s': more than 64 periods in one invoice",
                acct->id);
        return SIZE_MAX;
    }
    size_t slot = rated->n++;
    rated->year[slot] = year;
    rated->month[slot] = month;
    rated->seconds[slot] = rated->running_s[slot] = rated->idle_s[slot] = 0;
    rated->first_runs[slot] = first_runs;
    rated->revision[slot] = revision;
    return slot;
}

/*
 * Rates the account's period from src with its parts' books into lines
 * of inv, adding the statements' running and idle seconds to slot of
 * rated. A period without parts yields no lines.
 */
static enum meter_db_status
rate_source(const struct db_account *acct, int year, int month,
            struct pricing_source src, struct report_invoice *inv,
            struct rated *rated, size_t slot, struct meter_err *e)
{
    struct db_parts parts;
    db_parts_of(acct, year, month, &parts);
    if (parts.n == 0)
        return METER_DB_NONE;
    struct pricing_scope scope = {year, month, 0, acct->id, false};
    struct pricing_statement *st = NULL;
    size_t n = 0;
    struct pricing_err pe = {{0}};
    enum meter_db_status rc = METER_DB_ROWS;
    if (pricing_rate(NULL, src, &scope, parts.p, parts.n, &st, &n, &pe) < 0)
        rc = db_hard(e, "%s", pe.msg);
    for (size_t k = 0; k < n && rc == METER_DB_ROWS; k++) {
        rated->running_s[slot] += st[k].q.running_s;
        rated->idle_s[slot] += st[k].q.credited_s;
        const struct db_assignment *a = parts.a[k];
        const char *book =
            acct->override ? pricing_book_id(acct->override) : a->book_id;
        if (strcmp(st[k].currency, inv->currency) != 0 && inv->currency[0]) {
            rc = db_hard(e,
                         "account '%s' %04d-%02d: price books of two "
                         "currencies (%s, %s) in one period",
                         acct->id, year, month, inv->currency, st[k].currency);
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
rate_period(PGconn *db, const struct db_account *acct, int year, int month,
            struct report_invoice *inv, struct rated *rated,
            struct meter_err *e)
{
    uint64_t first_runs, revision;
    enum meter_db_status st =
        period_state(db, acct, year, month, &first_runs, &revision, e);
    if (st < 0)
        return st;
    size_t slot = rated_slot(rated, acct, year, month, first_runs, revision, e);
    if (slot == SIZE_MAX)
        return METER_DB_HARD;
    struct db_parts parts;
    db_parts_of(acct, year, month, &parts);
    if (parts.n == 0)
        return METER_DB_NONE;
    struct meter_usage_reader *r =
        db_usage_open(db, acct->id, db_period_start(year, month),
                      db_period_end(year, month), false, e);
    if (!r)
        return METER_DB_HARD;
    st = rate_source(acct, year, month, meter_usage_source(r), inv, rated, slot,
                     e);
    rated->seconds[slot] = db_usage_seconds(r);
    meter_usage_reader_free(r);
    return st < 0 ? st : METER_DB_ROWS;
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
static enum meter_db_status
billed_lines(PGconn *db, const struct db_account *acct, int year, int month,
             struct report_invoice *billed, struct meter_err *e)
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

/* The documents of one run: the period's own invoice first, then one per
 * other currency that late usage is billed in (rules section 9). */
struct docs {
    struct report_invoice d[METER_INVOICE_DOCS];
    size_t n;
};

static void
docs_release(struct docs *ds)
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
doc_in(struct docs *ds, const char *currency, struct meter_err *e)
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
add_late(struct docs *ds, int year, int month,
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
late_usage(PGconn *db, const struct db_account *acct, int year, int month,
           struct docs *ds, struct rated *rated, struct meter_err *e)
{
    struct report_invoice fresh = {0}, billed = {0};
    enum meter_db_status st =
        rate_period(db, acct, year, month, &fresh, rated, e);
    if (st >= 0)
        st = billed_lines(db, acct, year, month, &billed, e);
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
spend_grants(const struct db_account *acct, const struct db_grants *gs,
             struct report_invoice *inv, struct meter_err *e)
{
    if (gs->n == 0)
        return METER_DB_ROWS;
    enum meter_db_status st = METER_DB_ROWS;
    struct pricing_dec sum = {0};
    for (size_t i = 0; i < inv->nlines; i++)
        if (pricing_dec_add(sum, inv->lines[i].amount, &sum) != PRICING_OK)
            st = db_hard(e, "account '%s': amount overflow", acct->id);
    size_t *order = calloc(gs->n, sizeof(*order));
    struct pricing_dec *spent = calloc(gs->n, sizeof(*spent));
    if (!order || !spent)
        st = db_hard(e, "out of memory");
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
static void
docs_start(struct docs *ds, const struct db_account *acct, int year, int month,
           const char *seller)
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
static enum meter_db_status
complete(PGconn *db, const struct db_account *acct, int year, int month,
         const struct report_invoice *billed, const int *late, size_t nlate,
         const struct db_grants *gs, struct docs *ds, struct rated *rated,
         struct meter_err *e)
{
    enum meter_db_status st = METER_DB_ROWS;
    if (gs) {
        struct report_invoice none = {0};
        st = add_late(ds, year, month, &none, billed, e);
    }
    for (size_t i = 0; i < nlate && st >= 0; i++)
        st = late_usage(db, acct, late[i] / 12, late[i] % 12 + 1, ds, rated, e);
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

/* ---- storing ------------------------------------------------------------- */

/* Appends inv's lines as invoice_lines rows (COPY text). */
static void
lines_tsv(struct meter_buf *b, const struct report_invoice *inv)
{
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct report_line *l = &inv->lines[i];
        char period[32];
        db_period_text(l->year, l->month, period);
        struct report_cells c;
        report_line_cells(l, &c);
        db_tsv_text(b, inv->account_id);
        db_tsv_int(b, inv->id);
        db_tsv_int(b, (int64_t)i + 1);
        db_tsv_text(b, l->kind);
        db_tsv_text(b, l->corrects[0] ? l->corrects : NULL);
        db_tsv_text(b, period);
        db_tsv_text(b, l->book[0] ? l->book : NULL);
        if (l->book[0])
            db_tsv_int(b, l->version);
        else
            db_tsv_text(b, NULL);
        db_tsv_text(b, l->description);
        db_tsv_text(b, l->has_quantity ? c.quantity : NULL);
        db_tsv_text(b, l->has_quantity ? l->unit : NULL);
        db_tsv_text(b, l->has_unit_price ? c.unit_price : NULL);
        db_tsv_text(b, c.amount);
        db_tsv_text(b, l->instance[0] ? l->instance : NULL);
        db_tsv_text(b, l->grant[0] ? l->grant : NULL);
        db_tsv_end(b);
    }
}

#define COPY_LINES                                                             \
    "COPY invoice_lines (account_id, invoice_id, line_no, kind, corrects,"     \
    " period, price_book_id, version, description, quantity, unit,"            \
    " unit_price, amount, instance, grant_id) FROM STDIN"

/* Appends what inv rated, period by period, as invoice_usage rows. */
static void
usage_tsv(struct meter_buf *b, const struct report_invoice *inv,
          const struct rated *rated)
{
    for (size_t i = 0; i < rated->n; i++) {
        char period[32];
        db_period_text(rated->year[i], rated->month[i], period);
        db_tsv_text(b, inv->account_id);
        db_tsv_int(b, inv->id);
        db_tsv_text(b, period);
        db_tsv_int(b, (int64_t)rated->seconds[i]);
        db_tsv_int(b, (int64_t)rated->first_runs[i]);
        db_tsv_int(b, (int64_t)rated->running_s[i]);
        db_tsv_int(b, (int64_t)rated->idle_s[i]);
        db_tsv_int(b, (int64_t)rated->revision[i]);
        db_tsv_end(b);
    }
}

#define COPY_USAGE                                                             \
    "COPY invoice_usage (account_id, invoice_id, period, samples,"             \
    " first_runs, running_s, idle_s, revision) FROM STDIN"

#define COPY_REVENUE                                                           \
    "COPY invoice_revenue (account_id, invoice_id, day, kind,"                 \
    " price_book_id, version, amount) FROM STDIN"

/* The document's total as stored: to its currency's minor unit. */
static void
total_text(const struct report_invoice *inv, char *buf, size_t n)
{
    pricing_money_format(inv->total, inv->currency, buf, n);
}

/* Numbers the n documents docs[] in order (one statement: the year's
 * row stays locked until commit, so numbers are gap-free and never
 * given twice), hashes them and makes them final. */
static enum meter_db_status
finalize(PGconn *db, struct report_invoice *const *docs, size_t n,
         struct meter_err *e)
{
    if (n == 0)
        return METER_DB_NONE;
    char count[24];
    snprintf(count, sizeof(count), "%zu", n);
    const char *c[] = {count};
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot number the invoices",
        "INSERT INTO invoice_numbers (year, last)"
        " VALUES (extract(year FROM now() AT TIME ZONE 'UTC')::int, $1::int)"
        " ON CONFLICT (year) DO UPDATE SET last = invoice_numbers.last"
        " + $1::int RETURNING year, last, to_char(now() AT TIME ZONE 'UTC',"
        " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
        1, c, NULL, NULL, &r, e);
    if (st < 0)
        return st;
    int year = 0, last = 0;
    if (db_get_int(r, 0, 0, &year, e) < 0 ||
        db_get_int(r, 0, 1, &last, e) < 0) {
        PQclear(r);
        return METER_DB_HARD;
    }
    char at[32];
    snprintf(at, sizeof(at), "%s", PQgetvalue(r, 0, 2));
    PQclear(r);
    struct meter_buf accts = {0}, ids = {0}, numbers = {0}, hashes = {0};
    meter_buf_str(&accts, "{");
    meter_buf_str(&ids, "{");
    meter_buf_str(&numbers, "{");
    meter_buf_str(&hashes, "{");
    for (size_t i = 0; i < n && st >= 0; i++) {
        struct report_invoice *inv = docs[i];
        snprintf(inv->number, sizeof(inv->number), "%04d-%06ld", year,
                 (long)last - (long)n + 1 + (long)i);
        snprintf(inv->finalized_at, sizeof(inv->finalized_at), "%s", at);
        if (report_invoice_hash(inv, inv->sha256, e) < 0)
            st = METER_DB_HARD;
        snprintf(inv->status, sizeof(inv->status), "final");
        db_array_text(&accts, inv->account_id);
        db_array_int(&ids, inv->id);
        db_array_text(&numbers, inv->number);
        db_array_text(&hashes, inv->sha256);
    }
    meter_buf_str(&accts, "}");
    meter_buf_str(&ids, "}");
    meter_buf_str(&numbers, "}");
    meter_buf_str(&hashes, "}");
    if (st >= 0 &&
        (accts.failed || ids.failed || numbers.failed || hashes.failed))
        st = db_hard(e, "out of memory");
    const char *v[] = {accts.p, ids.p, numbers.p, hashes.p, at};
    if (st >= 0)
        st = meter_db_exec(
            db, "cannot finalize the invoices",
            "UPDATE invoices i SET status = 'final', number = x.number,"
            " sha256 = decode(x.sha256, 'hex'),"
            " finalized_at = $5::timestamptz"
            " FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[])"
            "  AS x (account_id, invoice_id, number, sha256)"
            " WHERE i.account_id = x.account_id"
            " AND i.invoice_id = x.invoice_id AND i.status = 'draft'",
            5, v, NULL, NULL, NULL, e);
    meter_buf_release(&accts);
    meter_buf_release(&ids);
    meter_buf_release(&numbers);
    meter_buf_release(&hashes);
    return st < 0 ? st : METER_DB_ROWS;
}

/* ---- the run, in batches of accounts ------------------------------------ */

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
        " WHERE a.valid_from < $2::date AND ($3::text IS NULL"
        "  OR a.account_id = $3::text)"
        " AND NOT EXISTS (SELECT 1 FROM account_price_books n"
        "  WHERE n.account_id = a.account_id AND n.valid_from > a.valid_from"
        "  AND n.valid_from <= $1::date)"
        " ORDER BY a.account_id",
        v.n, v.v, out, e);
}

/* One account of a batch, and what the run read and made of it. */
struct bill {
    struct db_account acct;
    struct meter_invoice_outcome *out;
    enum { BILL_RATE, BILL_NONE, BILL_DONE, BILL_FAILED } state;
    char error[sizeof(((struct meter_err *)0)->msg)];
    struct db_parts parts;
    uint64_t first_runs, revision;
    struct report_invoice billed; /* final lines of the period */
    int late[64];                 /* earlier periods to rate again */
    size_t nlate;
    int *finals; /* periods before with a final invoice */
    size_t nfinals;
    struct db_grants grants;
    struct {
        int64_t id;
        char currency[4];
    } drafts[16]; /* the period's drafts */
    size_t ndrafts;
    struct db_period_days days;
    struct docs ds;
    struct rated rated;
};

struct batch {
    int year, month;
    bool finalize;
    const char *seller;
    struct bill *b;
    size_t n;
    struct db_books *books;
    const struct pricing_book *override; /* preview */
};

static void
bill_fail(struct bill *b, const char *msg)
{
    b->state = BILL_FAILED;
    snprintf(b->error, sizeof(b->error), "%s", msg);
}

static void
bill_reset(struct bill *b)
{
    const char *id = b->acct.id;
    struct meter_invoice_outcome *out = b->out;
    db_account_release(&b->acct);
    report_invoice_release(&b->billed);
    free(b->finals);
    db_grants_release(&b->grants);
    docs_release(&b->ds);
    memset(b, 0, sizeof(*b));
    b->acct.id = id;
    b->out = out;
}

/* The index of the bill of row i's first column (an account id), from
 * *at on: rows come in the bills' order or near it. */
static struct bill *
row_bill(struct batch *bt, PGresult *r, int i, size_t *at)
{
    const char *id = PQgetvalue(r, i, 0);
    for (size_t k = 0; k < bt->n; k++) {
        size_t x = (*at + k) % bt->n;
        if (strcmp(bt->b[x].acct.id, id) == 0) {
            *at = x;
            return &bt->b[x];
        }
    }
    return NULL;
}

/* "{id,...}" of the bills in state (or every bill with all), "{pk,...}"
 * the same when pks. */
static void
bill_array(const struct batch *bt, bool all, bool pks, struct meter_buf *out)
{
    meter_buf_str(out, "{");
    for (size_t k = 0; k < bt->n; k++) {
        if (!all && bt->b[k].state != BILL_RATE)
            continue;
        if (pks)
            db_array_int(out, bt->b[k].acct.pk);
        else
            db_array_text(out, bt->b[k].acct.id);
    }
    meter_buf_str(out, "}");
}

/* Runs sql with the ids of the batch's bills to rate ($1), its period
 * ($2) and, with pks, their keys ($3); each row goes to fn with the bill
 * its first column names. */
static enum meter_db_status
for_rows(PGconn *db, struct batch *bt, const char *what, const char *sql,
         bool pks,
         int (*fn)(struct batch *bt, struct bill *b, PGresult *r, int i,
                   struct meter_err *e),
         struct meter_err *e)
{
    struct meter_buf ids = {0}, keys = {0};
    bill_array(bt, false, false, &ids);
    bill_array(bt, false, true, &keys);
    if (ids.failed || keys.failed) {
        meter_buf_release(&ids);
        meter_buf_release(&keys);
        return db_hard(e, "out of memory");
    }
    char period[32];
    db_period_text(bt->year, bt->month, period);
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
        struct bill *b = row_bill(bt, r, i, &at);
        if (b && b->state == BILL_RATE && fn(bt, b, r, i, e) < 0)
            st = METER_DB_HARD;
    }
    PQclear(r);
    return st;
}

static int
take_final(struct batch *bt, struct bill *b, PGresult *r, int i,
           struct meter_err *e)
{
    (void)bt;
    (void)e;
    /* Final in its books' currency: the period stands. (One of late
     * usage in another currency does not: voided, the period's own
     * invoice is issued again beside it.) */
    if (strcmp(PQgetvalue(r, i, 2),
               pricing_book_currency(b->parts.p[0].book)) != 0)
        return 0;
    b->state = BILL_DONE;
    b->out->already_final = true;
    snprintf(b->out->number, sizeof(b->out->number), "%s", PQgetvalue(r, i, 1));
    return 0;
}

static int
take_state(struct batch *bt, struct bill *b, PGresult *r, int i,
           struct meter_err *e)
{
    (void)bt;
    return db_get_uint64(r, i, 1, &b->first_runs, e) < 0 ||
                   db_get_uint64(r, i, 2, &b->revision, e) < 0
               ? -1
               : 0;
}

static int
take_billed(struct batch *bt, struct bill *b, PGresult *r, int i,
            struct meter_err *e)
{
    (void)bt;
    if (!b->billed.nlines)
        snprintf(b->billed.currency, sizeof(b->billed.currency), "%s",
                 PQgetvalue(r, i, 14));
    if (strcmp(b->billed.currency, PQgetvalue(r, i, 14)) != 0) {
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "account '%s' %04d-%02d: billed in two currencies (%s, %s)",
                 b->acct.id, bt->year, bt->month, b->billed.currency,
                 PQgetvalue(r, i, 14));
        bill_fail(b, msg);
        return 0;
    }
    return line_from_row(r, i, 1, &b->billed, e);
}

static int
take_late(struct batch *bt, struct bill *b, PGresult *r, int i,
          struct meter_err *e)
{
    (void)bt;
    (void)e;
    int y, m;
    meter_period_parse(PQgetvalue(r, i, 1), &y, &m);
    if (b->nlate == 64) {
        bill_fail(b, "more than 64 periods of late usage in one invoice");
        return 0;
    }
    b->late[b->nlate++] = pricing_period_index(y, m);
    return 0;
}

static int
take_finals(struct batch *bt, struct bill *b, PGresult *r, int i,
            struct meter_err *e)
{
    (void)bt;
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
take_draft(struct batch *bt, struct bill *b, PGresult *r, int i,
           struct meter_err *e)
{
    (void)bt;
    /* One draft per currency: at most the documents of a run. */
    if (b->ndrafts == sizeof(b->drafts) / sizeof(b->drafts[0]))
        return meter_fail(e, "account '%s': more than %zu drafts of a period",
                          b->acct.id, b->ndrafts);
    if (db_get_int64(r, i, 1, &b->drafts[b->ndrafts].id, e) < 0 ||
        db_get_text(r, i, 2, b->drafts[b->ndrafts].currency,
                    sizeof(b->drafts[b->ndrafts].currency), e) < 0)
        return -1;
    b->ndrafts++;
    return 0;
}

/* The HARD status, naming the period, when an earlier period in which
 * the account had a book has no final invoice: grants look back, so an
 * account's periods are finalized in order (rules section 14). A voided
 * period had one; its corrected invoice may come later. */
static bool
finalized_before(struct batch *bt, struct bill *b)
{
    if (b->acct.na == 0)
        return true;
    int y, m;
    int64_t start, end;
    pricing_period_of(b->acct.a[0].from, &y, &m, &start, &end);
    for (int p = pricing_period_index(y, m);
         p < pricing_period_index(bt->year, bt->month); p++) {
        struct db_parts parts;
        db_parts_of(&b->acct, p / 12, p % 12 + 1, &parts);
        bool final = false;
        for (size_t i = 0; i < b->nfinals && !final; i++)
            final = b->finals[i] == p;
        if (parts.n && !final) {
            char msg[256];
            snprintf(msg, sizeof(msg),
                     "account '%s': %04d-%02d has no final invoice; an "
                     "account's periods are finalized in order",
                     b->acct.id, p / 12, p % 12 + 1);
            bill_fail(b, msg);
            return false;
        }
    }
    return true;
}

/* Not voided: no final credit note references document d. */
#define LIVE(d)                                                                \
    d ".kind = 'invoice' AND " d ".status = 'final' AND " NOT_VOIDED(d)

/* What the batch's accounts hold besides their usage, read before it. */
static enum meter_db_status
load(PGconn *db, struct batch *bt, bool with_late, struct meter_err *e)
{
    enum meter_db_status st = METER_DB_ROWS;
    if (with_late) {
        st = for_rows(db, bt, "cannot read the accounts' invoices",
                      "SELECT i.account_id, i.number, i.currency"
                      " FROM invoices i WHERE i.account_id = ANY ($1::text[])"
                      " AND i.period = $2::date AND " LIVE("i"),
                      false, take_final, e);
    }
    if (st >= 0)
        st = for_rows(
            db, bt, "cannot read the period's usage state",
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
    if (st < 0 || !with_late)
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
    /* Earlier periods with a live final invoice whose billing may be
     * off: their usage changed since the latest rating that stands
     * (more seconds stored, other first runs, or a quarantine took
     * seconds: its revision), or a credit note took back lines of
     * theirs since. Each gets its late usage. */
    if (st >= 0)
        st = for_rows(
            db, bt, "cannot look for late usage",
            "SELECT a.account_id, to_char(p.period, 'YYYY-MM')"
            " FROM unnest($1::text[], $3::int[]) AS a (account_id, pk)"
            " CROSS JOIN LATERAL (SELECT DISTINCT i.period FROM invoices i"
            "  WHERE i.account_id = a.account_id AND i.period < $2::date"
            "  AND " LIVE(
                "i") ") p"
                     /* the latest that stands: a rating, or a credit note's
                        return */
                     " CROSS JOIN LATERAL (SELECT u.samples, u.first_runs, "
                     "u.revision"
                     "  FROM invoice_usage u JOIN invoices d"
                     "  USING (account_id, invoice_id)"
                     "  WHERE u.account_id = a.account_id AND u.period = "
                     "p.period"
                     "  AND d.status = 'final'"
                     "  AND (d.kind = 'credit_note' OR " NOT_VOIDED(
                         "d") ")"
                              "  ORDER BY u.seq DESC LIMIT 1) last"
                              " WHERE last.samples IS NULL"
                              " OR (SELECT coalesce(sum(h.samples), 0)"
                              "  FROM usage_hourly_totals h WHERE h.account_pk "
                              "= a.pk"
                              "  AND h.hour >= extract(epoch FROM "
                              "p.period)::bigint / 3600"
                              "  AND h.hour < extract(epoch FROM p.period + "
                              "interval '1 month')"
                              "   ::bigint / 3600) <> last.samples"
                              " OR (SELECT count(*) FROM sandboxes s WHERE "
                              "s.account_pk = a.pk"
                              "  AND s.first_running_minute >= extract(epoch "
                              "FROM p.period)"
                              "   ::bigint / 60"
                              "  AND s.first_running_minute < extract(epoch "
                              "FROM p.period"
                              "   + interval '1 month')::bigint / 60) <> "
                              "last.first_runs"
                              " OR coalesce((SELECT v.revision FROM "
                              "usage_revisions v"
                              "  WHERE v.account_pk = a.pk AND v.period = "
                              "p.period), 0)"
                              "  <> coalesce(last.revision, 0)"
                              " ORDER BY a.account_id, p.period",
            true, take_late, e);
    if (st >= 0 && bt->finalize)
        st = for_rows(db, bt, "cannot read the accounts' invoices",
                      "SELECT DISTINCT account_id, to_char(period, 'YYYY-MM')"
                      " FROM invoices WHERE account_id = ANY ($1::text[])"
                      " AND kind = 'invoice' AND status = 'final'"
                      " AND period < $2::date",
                      false, take_finals, e);
    if (st >= 0) {
        /* Their grants, with the balances final documents left. */
        size_t n = 0;
        const struct db_account **accts =
            calloc(bt->n ? bt->n : 1, sizeof(*accts));
        struct db_grants **gs = calloc(bt->n ? bt->n : 1, sizeof(*gs));
        for (size_t k = 0; accts && gs && k < bt->n; k++)
            if (bt->b[k].state == BILL_RATE) {
                accts[n] = &bt->b[k].acct;
                gs[n++] = &bt->b[k].grants;
            }
        st = !accts || !gs ? db_hard(e, "out of memory")
             : n           ? db_accounts_grants(db, accts, gs, n, e)
                           : METER_DB_ROWS;
        free(accts);
        free(gs);
    }
    if (st >= 0)
        st = for_rows(db, bt, "cannot read the period's drafts",
                      "SELECT account_id, invoice_id, currency FROM invoices"
                      " WHERE account_id = ANY ($1::text[])"
                      " AND period = $2::date AND status = 'draft'"
                      " AND kind = 'invoice' ORDER BY account_id, invoice_id",
                      false, take_draft, e);
    return st;
}

static int
by_pk(const void *a, const void *b, void *arg)
{
    const struct bill *x = arg;
    int32_t p = x[*(const size_t *)a].acct.pk,
            q = x[*(const size_t *)b].acct.pk;
    return (p > q) - (p < q);
}

/* The bills to rate, by key: order[0..*n) indexes bt->b. */
static size_t *
rating_order(const struct batch *bt, size_t *n)
{
    size_t *order = calloc(bt->n ? bt->n : 1, sizeof(*order));
    *n = 0;
    for (size_t k = 0; order && k < bt->n; k++)
        if (bt->b[k].state == BILL_RATE)
            order[(*n)++] = k;
    if (order)
        qsort_r(order, *n, sizeof(*order), by_pk, bt->b);
    return order;
}

/* Whether a failure is the batch's (the transaction can go no further)
 * rather than one account's. */
static bool
batch_broken(PGconn *db, enum meter_db_status st)
{
    return st == METER_DB_SOFT || meter_db_lost(db) ||
           PQtransactionStatus(db) == PQTRANS_INERROR;
}

/* Rates each bill's period from one ordered read of the batch's usage,
 * into the first line of its documents. */
static enum meter_db_status
rate_batch(PGconn *db, struct batch *bt, struct meter_err *e)
{
    size_t n;
    size_t *order = rating_order(bt, &n);
    int32_t *pks = calloc(n ? n : 1, sizeof(*pks));
    const char **ids = calloc(n ? n : 1, sizeof(*ids));
    enum meter_db_status st = METER_DB_ROWS;
    struct meter_usage_reader *r = NULL;
    if (!order || !pks || !ids)
        st = db_hard(e, "out of memory");
    for (size_t j = 0; st >= 0 && j < n; j++) {
        pks[j] = bt->b[order[j]].acct.pk;
        ids[j] = bt->b[order[j]].acct.id;
    }
    if (st >= 0 && n &&
        !(r = db_usage_open_batch(db, pks, ids, n,
                                  db_period_start(bt->year, bt->month),
                                  db_period_end(bt->year, bt->month), e)))
        st = METER_DB_HARD;
    for (size_t j = 0; st >= 0 && j < n; j++) {
        struct bill *b = &bt->b[order[j]];
        struct meter_err ae = {{0}};
        docs_start(&b->ds, &b->acct, bt->year, bt->month, bt->seller);
        size_t slot = rated_slot(&b->rated, &b->acct, bt->year, bt->month,
                                 b->first_runs, b->revision, &ae);
        enum meter_db_status rs =
            slot == SIZE_MAX
                ? METER_DB_HARD
                : rate_source(&b->acct, bt->year, bt->month,
                              db_usage_account_source(r, b->acct.pk),
                              &b->ds.d[0], &b->rated, slot, &ae);
        if (slot != SIZE_MAX)
            b->rated.seconds[slot] = db_usage_account_seconds(r);
        if (rs < 0 && batch_broken(db, rs)) {
            *e = ae;
            st = rs;
        } else if (rs < 0) {
            bill_fail(b, ae.msg);
        }
    }
    meter_usage_reader_free(r);
    free(order);
    free(pks);
    free(ids);
    return st;
}

/* Completes each bill's documents (late usage, grants, totals) and, when
 * finalizing, checks its earlier periods are final. */
static enum meter_db_status
complete_batch(PGconn *db, struct batch *bt, bool with_late,
               struct meter_err *e)
{
    for (size_t k = 0; k < bt->n; k++) {
        struct bill *b = &bt->b[k];
        if (b->state != BILL_RATE)
            continue;
        struct meter_err ae = {{0}};
        enum meter_db_status st = complete(
            db, &b->acct, bt->year, bt->month, &b->billed, b->late, b->nlate,
            with_late ? &b->grants : NULL, &b->ds, &b->rated, &ae);
        if (st < 0 && batch_broken(db, st)) {
            *e = ae;
            return st;
        }
        if (st < 0)
            bill_fail(b, ae.msg);
        else if (bt->finalize)
            finalized_before(bt, b);
    }
    return METER_DB_ROWS;
}

/* Runs sql with the arrays a1 and a2 as $1 and $2, or, without a2, a1
 * and the batch's period. */
static enum meter_db_status
exec_arrays(PGconn *db, const char *what, const char *sql,
            const struct meter_buf *a1, const struct meter_buf *a2,
            const struct batch *bt, PGresult **res, struct meter_err *e)
{
    if (a1->failed || (a2 && a2->failed))
        return db_hard(e, "out of memory");
    char period[32];
    db_period_text(bt->year, bt->month, period);
    const char *v[] = {a1->p, a2 ? a2->p : period};
    return meter_db_exec(db, what, sql, 2, v, NULL, NULL, res, e);
}

/* The id the bill's draft in currency already has, else 0. */
static int64_t
draft_of(const struct bill *b, const char *currency)
{
    for (size_t i = 0; i < b->ndrafts; i++)
        if (strcmp(b->drafts[i].currency, currency) == 0)
            return b->drafts[i].id;
    return 0;
}

/*
 * Writes the batch's documents as drafts: each replaces the account's
 * draft of the period in its currency (keeping its id), drafts in
 * currencies no longer billed are removed, and so are those of accounts
 * with no book in the period; then the lines, what the first document
 * rated, and the revenue by day, one COPY each.
 */
static enum meter_db_status
store_batch(PGconn *db, struct batch *bt, struct meter_err *e)
{
    struct meter_buf none = {0}, old_a = {0}, old_i = {0}, gone_a = {0},
                     gone_i = {0}, lines = {0}, usage = {0}, revenue = {0};
    enum meter_db_status st = METER_DB_ROWS;
    PGresult *r = NULL;
    meter_buf_str(&none, "{");
    meter_buf_str(&old_a, "{");
    meter_buf_str(&old_i, "{");
    meter_buf_str(&gone_a, "{");
    meter_buf_str(&gone_i, "{");
    bool any_none = false, any_old = false, any_gone = false;
    for (size_t k = 0; k < bt->n; k++) {
        struct bill *b = &bt->b[k];
        if (b->state == BILL_NONE) {
            db_array_text(&none, b->acct.id);
            any_none = true;
        }
        if (b->state != BILL_RATE)
            continue;
        for (size_t i = 0; i < b->ndrafts; i++) {
            bool kept = false;
            for (size_t d = 0; d < b->ds.n && !kept; d++)
                kept = strcmp(b->ds.d[d].currency, b->drafts[i].currency) == 0;
            db_array_text(kept ? &old_a : &gone_a, b->acct.id);
            db_array_int(kept ? &old_i : &gone_i, b->drafts[i].id);
            any_old |= kept;
            any_gone |= !kept;
        }
    }
    meter_buf_str(&none, "}");
    meter_buf_str(&old_a, "}");
    meter_buf_str(&old_i, "}");
    meter_buf_str(&gone_a, "}");
    meter_buf_str(&gone_i, "}");
    /* No book in the period: no invoice, and no stale draft. */
    if (any_none)
        st = exec_arrays(db, "cannot remove a stale draft",
                         "DELETE FROM invoices WHERE account_id ="
                         " ANY ($1::text[]) AND period = $2::date"
                         " AND status = 'draft' AND kind = 'invoice'",
                         &none, NULL, bt, NULL, e);
    if (st >= 0 && any_gone)
        st =
            exec_arrays(db, "cannot remove a stale draft",
                        "DELETE FROM invoices WHERE account_id ="
                        " ANY ($1::text[]) AND invoice_id = ANY ($2::bigint[])",
                        &gone_a, &gone_i, bt, NULL, e);
    /* The drafts kept lose their parts, rewritten below. */
    if (st >= 0 && any_old)
        st =
            exec_arrays(db, "cannot replace a draft",
                        "DELETE FROM invoice_lines WHERE account_id ="
                        " ANY ($1::text[]) AND invoice_id = ANY ($2::bigint[])",
                        &old_a, &old_i, bt, NULL, e);
    if (st >= 0 && any_old)
        st =
            exec_arrays(db, "cannot replace a draft",
                        "DELETE FROM invoice_usage WHERE account_id ="
                        " ANY ($1::text[]) AND invoice_id = ANY ($2::bigint[])",
                        &old_a, &old_i, bt, NULL, e);
    if (st >= 0 && any_old)
        st =
            exec_arrays(db, "cannot replace a draft",
                        "DELETE FROM invoice_revenue WHERE account_id ="
                        " ANY ($1::text[]) AND invoice_id = ANY ($2::bigint[])",
                        &old_a, &old_i, bt, NULL, e);
    char now[32] = "";
    if (st >= 0)
        st = meter_db_exec(db, "cannot read the time",
                           "SELECT to_char(now() AT TIME ZONE 'UTC',"
                           " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
                           0, NULL, NULL, NULL, &r, e);
    if (st >= 0) {
        snprintf(now, sizeof(now), "%s", PQgetvalue(r, 0, 0));
        PQclear(r);
        r = NULL;
    }
    /* Headers: those kept updated, the new inserted in the bills' and
     * documents' order, which gives their ids. Each a row of arrays:
     * account, id (or, new, its place: bill x 8 + document), currency,
     * total, seller, account name. */
    struct meter_buf h[2][6] = {{{0}}};
    for (size_t x = 0; x < 2; x++)
        for (size_t c = 0; c < 6; c++)
            meter_buf_str(&h[x][c], "{");
    size_t count[2] = {0, 0};
    for (size_t k = 0; k < bt->n && st >= 0; k++) {
        struct bill *b = &bt->b[k];
        if (b->state != BILL_RATE)
            continue;
        for (size_t d = 0; d < b->ds.n; d++) {
            struct report_invoice *inv = &b->ds.d[d];
            char total[64];
            total_text(inv, total, sizeof(total));
            inv->id = draft_of(b, inv->currency);
            size_t x = inv->id ? 0 : 1;
            count[x]++;
            db_array_text(&h[x][0], inv->account_id);
            db_array_int(&h[x][1], inv->id
                                       ? inv->id
                                       : (int64_t)(k * METER_INVOICE_DOCS + d));
            db_array_text(&h[x][2], inv->currency);
            db_array_text(&h[x][3], total);
            db_array_text(&h[x][4], inv->seller);
            db_array_text(&h[x][5],
                          inv->account_name[0] ? inv->account_name : NULL);
            snprintf(inv->created_at, sizeof(inv->created_at), "%s", now);
            snprintf(inv->status, sizeof(inv->status), "draft");
        }
    }
    char period[32];
    db_period_text(bt->year, bt->month, period);
    for (size_t x = 0; x < 2 && st >= 0; x++) {
        bool bad = false;
        for (size_t c = 0; c < 6; c++) {
            meter_buf_str(&h[x][c], "}");
            bad |= h[x][c].failed;
        }
        if (bad) {
            st = db_hard(e, "out of memory");
            break;
        }
        if (!count[x])
            continue;
        const char *v[] = {h[x][0].p, h[x][1].p, h[x][2].p, h[x][3].p,
                           h[x][4].p, h[x][5].p, period};
        if (x == 0) {
            st = meter_db_exec(
                db, "cannot store the drafts",
                "UPDATE invoices i SET currency = h.currency, total = h.total,"
                " seller = h.seller, account_name = h.account_name,"
                " created_at = now() FROM unnest($1::text[], $2::bigint[],"
                " $3::text[], $4::numeric[], $5::text[], $6::text[])"
                " AS h (account_id, ref, currency, total, seller,"
                " account_name) WHERE i.account_id = h.account_id"
                " AND i.invoice_id = h.ref",
                6, v, NULL, NULL, NULL, e);
            continue;
        }
        st = meter_db_exec(
            db, "cannot store the drafts",
            "WITH h AS (SELECT * FROM unnest($1::text[], $2::bigint[],"
            "  $3::text[], $4::numeric[], $5::text[], $6::text[])"
            "  AS h (account_id, ref, currency, total, seller, account_name)),"
            " n AS (INSERT INTO invoices (account_id, kind, period, status,"
            "  currency, total, seller, account_name)"
            "  SELECT account_id, 'invoice', $7::date, 'draft', currency,"
            "  total, seller, account_name FROM h ORDER BY ref"
            "  RETURNING account_id, currency, invoice_id)"
            " SELECT h.ref, n.invoice_id FROM n JOIN h"
            " USING (account_id, currency)",
            7, v, NULL, NULL, &r, e);
        for (int i = 0; st >= 0 && i < PQntuples(r); i++) {
            int64_t ref = -1, id = 0;
            if (db_get_int64(r, i, 0, &ref, e) < 0 ||
                db_get_int64(r, i, 1, &id, e) < 0) {
                st = METER_DB_HARD;
                break;
            }
            size_t k = (size_t)ref / METER_INVOICE_DOCS,
                   d = (size_t)ref % METER_INVOICE_DOCS;
            if (ref >= 0 && k < bt->n && d < bt->b[k].ds.n)
                bt->b[k].ds.d[d].id = id;
        }
        PQclear(r);
        r = NULL;
    }
    for (size_t x = 0; x < 2; x++)
        for (size_t c = 0; c < 6; c++)
            meter_buf_release(&h[x][c]);
    /* The drivers of the period's days, for every account at once. */
    size_t n = 0;
    size_t *order = st >= 0 ? rating_order(bt, &n) : NULL;
    int32_t *pks = order ? calloc(n ? n : 1, sizeof(*pks)) : NULL;
    struct db_period_days **days =
        pks ? calloc(n ? n : 1, sizeof(*days)) : NULL;
    if (st >= 0 && !days)
        st = db_hard(e, "out of memory");
    for (size_t j = 0; st >= 0 && j < n; j++) {
        pks[j] = bt->b[order[j]].acct.pk;
        days[j] = &bt->b[order[j]].days;
    }
    if (st >= 0 && n)
        st = db_revenue_drivers(db, pks, n, bt->year, bt->month, days, e);
    free(order);
    free(pks);
    free(days);
    for (size_t k = 0; k < bt->n && st >= 0; k++) {
        struct bill *b = &bt->b[k];
        if (b->state != BILL_RATE)
            continue;
        for (size_t d = 0; d < b->ds.n && st >= 0; d++) {
            lines_tsv(&lines, &b->ds.d[d]);
            st = db_revenue_rows(db, &b->acct, &b->ds.d[d], &b->days, &revenue,
                                 e);
        }
        /* The first document records what the run rated. */
        usage_tsv(&usage, &b->ds.d[0], &b->rated);
    }
    if (st >= 0 && (lines.failed || usage.failed || revenue.failed))
        st = db_hard(e, "out of memory");
    if (st >= 0 && lines.len)
        st = db_copy_in(db, COPY_LINES, lines.p, lines.len,
                        "cannot store invoice lines", e);
    if (st >= 0 && usage.len)
        st = db_copy_in(db, COPY_USAGE, usage.p, usage.len,
                        "cannot store invoice usage", e);
    if (st >= 0 && revenue.len)
        st = db_copy_in(db, COPY_REVENUE, revenue.p, revenue.len,
                        "cannot store the revenue by day", e);
    struct meter_buf *bufs[] = {&none,   &old_a, &old_i, &gone_a,
                                &gone_i, &lines, &usage, &revenue};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        meter_buf_release(bufs[i]);
    return st < 0 ? st : METER_DB_ROWS;
}

/* Finalizes the batch's documents, account by account in the batch's
 * order, each account's own invoice first. */
static enum meter_db_status
finalize_batch(PGconn *db, struct batch *bt, struct meter_err *e)
{
    struct report_invoice **docs =
        calloc(bt->n * METER_INVOICE_DOCS + 1, sizeof(*docs));
    if (!docs)
        return db_hard(e, "out of memory");
    size_t n = 0;
    for (size_t k = 0; k < bt->n; k++)
        for (size_t d = 0; bt->b[k].state == BILL_RATE && d < bt->b[k].ds.n;
             d++)
            docs[n++] = &bt->b[k].ds.d[d];
    enum meter_db_status st = finalize(db, docs, n, e);
    free(docs);
    return st;
}

/* What each bill's run did, for the caller. */
static void
outcomes(struct batch *bt)
{
    for (size_t k = 0; k < bt->n; k++) {
        struct bill *b = &bt->b[k];
        struct meter_invoice_outcome *out = b->out;
        if (b->state == BILL_FAILED) {
            out->failed = true;
            snprintf(out->error, sizeof(out->error), "%s", b->error);
        }
        if (b->state != BILL_RATE)
            continue;
        out->written = true;
        out->id = b->ds.d[0].id;
        snprintf(out->number, sizeof(out->number), "%s", b->ds.d[0].number);
        out->total = b->ds.d[0].total;
        snprintf(out->currency, sizeof(out->currency), "%s",
                 b->ds.d[0].currency);
        for (size_t i = 1; i < b->ds.n; i++) {
            struct meter_invoice_doc *o = &out->other[out->nother++];
            o->id = b->ds.d[i].id;
            snprintf(o->number, sizeof(o->number), "%s", b->ds.d[i].number);
            o->total = b->ds.d[i].total;
            snprintf(o->currency, sizeof(o->currency), "%s",
                     b->ds.d[i].currency);
        }
        for (size_t i = 0; i < b->rated.n; i++)
            out->samples += b->rated.seconds[i];
    }
}

/* Reads the batch's accounts (locked when lock) and sorts them: no such
 * account, a finalization too early, no book in the period, or to rate. */
static enum meter_db_status
start_batch(PGconn *db, struct batch *bt, bool lock, struct meter_err *e)
{
    struct db_account **accts = calloc(bt->n ? bt->n : 1, sizeof(*accts));
    if (!accts)
        return db_hard(e, "out of memory");
    for (size_t k = 0; k < bt->n; k++) {
        bill_reset(&bt->b[k]);
        memset(bt->b[k].out, 0, sizeof(*bt->b[k].out));
        accts[k] = &bt->b[k].acct;
    }
    enum meter_db_status st =
        db_accounts_load(db, accts, bt->n, lock, bt->books, e);
    free(accts);
    if (st < 0)
        return st;
    bool early =
        bt->finalize && db_period_end(bt->year, bt->month) > time(NULL);
    for (size_t k = 0; k < bt->n; k++) {
        struct bill *b = &bt->b[k];
        char msg[256];
        b->acct.override = bt->override;
        db_parts_of(&b->acct, bt->year, bt->month, &b->parts);
        if (b->acct.pk == 0) {
            snprintf(msg, sizeof(msg), "no account '%s'", b->acct.id);
            bill_fail(b, msg);
        } else if (early) {
            snprintf(msg, sizeof(msg),
                     "%04d-%02d has not ended: a period is finalized once "
                     "it is over",
                     bt->year, bt->month);
            bill_fail(b, msg);
        } else {
            b->state = b->parts.n ? BILL_RATE : BILL_NONE;
        }
    }
    return METER_DB_ROWS;
}

static enum meter_db_status
batch_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct batch *bt = arg;
    enum meter_db_status st = start_batch(db, bt, true, e);
    /* A draft is recomputed by any run: it need not wait for the disk. A
     * final invoice must. */
    if (st >= 0 && !bt->finalize)
        st = meter_db_exec(db, "cannot set the commit mode",
                           "SET LOCAL synchronous_commit = off", 0, NULL, NULL,
                           NULL, NULL, e);
    if (st >= 0)
        st = load(db, bt, true, e);
    if (st >= 0)
        st = rate_batch(db, bt, e);
    if (st >= 0)
        st = complete_batch(db, bt, true, e);
    if (st >= 0)
        st = store_batch(db, bt, e);
    if (st >= 0 && bt->finalize)
        st = finalize_batch(db, bt, e);
    if (st >= 0)
        outcomes(bt);
    return st < 0 ? st : METER_DB_ROWS;
}

static void
batch_release(struct batch *bt)
{
    for (size_t k = 0; k < bt->n; k++)
        bill_reset(&bt->b[k]);
}

enum meter_db_status
meter_db_invoice_batch(PGconn *db, const char *const *accounts, size_t n,
                       int year, int month, bool finalize, const char *seller,
                       struct meter_invoice_outcome *out, struct meter_err *e)
{
    struct db_books books = {0};
    struct bill *bills = calloc(n ? n : 1, sizeof(*bills));
    if (!bills)
        return db_hard(e, "out of memory");
    for (size_t k = 0; k < n; k++) {
        bills[k].acct.id = accounts[k];
        bills[k].out = &out[k];
    }
    struct batch bt = {year, month, finalize, seller, bills, n, &books, NULL};
    enum meter_db_status st =
        meter_db_transaction(db, "BEGIN", 5, batch_attempt, &bt, e);
    batch_release(&bt);
    free(bills);
    db_books_release(&books);
    if (st >= 0 || meter_db_lost(db))
        return st;
    if (n == 1) {
        /* A statement the server refused: this account's failure. */
        memset(out, 0, sizeof(*out));
        out->failed = true;
        snprintf(out->error, sizeof(out->error), "%s", e->msg);
        return METER_DB_ROWS;
    }
    /* One account's statement failed the batch: each on its own, so the
     * others are invoiced and the failure is named. */
    for (size_t k = 0; k < n; k++) {
        st = meter_db_invoice_batch(db, &accounts[k], 1, year, month, finalize,
                                    seller, &out[k], e);
        if (st < 0)
            return st;
    }
    return METER_DB_ROWS;
}

enum meter_db_status
meter_db_invoice_run(PGconn *db, const char *account, int year, int month,
                     bool finalize, const char *seller,
                     struct meter_invoice_outcome *out, struct meter_err *e)
{
    enum meter_db_status st = meter_db_invoice_batch(
        db, &account, 1, year, month, finalize, seller, out, e);
    if (st >= 0 && out->failed) {
        meter_fail(e, "%s", out->error);
        return METER_DB_HARD;
    }
    return st;
}

/* ---- what-if ------------------------------------------------------------- */

struct preview_arg {
    struct batch *bt;
    struct report_invoice *inv;
};

static enum meter_db_status
preview_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct preview_arg *a = arg;
    struct batch *bt = a->bt;
    struct bill *b = &bt->b[0];
    enum meter_db_status st = start_batch(db, bt, false, e);
    if (st >= 0 && b->state == BILL_NONE)
        st = db_hard(e, "account '%s' has no price book in %04d-%02d",
                     b->acct.id, bt->year, bt->month);
    else if (st >= 0 && b->state == BILL_FAILED)
        st = db_hard(e, "%s", b->error);
    /* Its own lines only: late usage is billed as it was. */
    if (st >= 0)
        st = load(db, bt, false, e);
    if (st >= 0)
        st = rate_batch(db, bt, e);
    if (st >= 0)
        st = complete_batch(db, bt, false, e);
    if (st >= 0 && b->state == BILL_FAILED)
        st = db_hard(e, "%s", b->error);
    if (st >= 0) {
        report_invoice_release(a->inv);
        *a->inv = b->ds.d[0];
        snprintf(a->inv->status, sizeof(a->inv->status), "draft");
        b->ds.n = 0;
    }
    /* Nothing is stored: roll back whatever happened. */
    return st < 0 ? st : METER_DB_ABORT;
}

enum meter_db_status
meter_db_invoice_preview(PGconn *db, const char *account, int year, int month,
                         const struct pricing_book *book,
                         struct report_invoice *inv, struct meter_err *e)
{
    struct meter_invoice_outcome out;
    struct db_books books = {0};
    struct bill bill = {.acct.id = account, .out = &out};
    struct batch bt = {year, month, false, "", &bill, 1, &books, book};
    struct preview_arg a = {&bt, inv};
    snprintf(inv->status, sizeof(inv->status), "draft");
    enum meter_db_status st = meter_db_transaction(
        db, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 3,
        preview_attempt, &a, e);
    batch_release(&bt);
    db_books_release(&books);
    return st == METER_DB_ABORT ? METER_DB_ROWS : st;
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

/* ---- voiding ------------------------------------------------------------- */

struct void_arg {
    const char *number, *reason;
    char *credit;
};

static enum meter_db_status
void_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct void_arg *a = arg;
    struct report_invoice inv = {0}, note = {0};
    enum meter_db_status st =
        meter_db_invoice_get(db, a->number, NULL, &inv, e);
    if (st == METER_DB_NONE)
        st = db_hard(e, "no invoice '%s'", a->number);
    if (st < 0)
        goto out;
    if (strcmp(inv.kind, "invoice") != 0 || strcmp(inv.status, "final") != 0) {
        st = db_hard(e, "%s '%s' is %s: only a final invoice can be voided",
                     strcmp(inv.kind, "invoice") ? "credit note" : "invoice",
                     a->number, inv.status);
        goto out;
    }
    /* Serialize with the account's runs, then check again. */
    struct db_account acct = {.id = inv.account_id};
    st = db_account_load(db, &acct, true, e);
    db_account_release(&acct);
    if (st < 0)
        goto out;
    note = inv;
    note.lines = NULL;
    note.nlines = note.lines_cap = 0;
    snprintf(note.kind, sizeof(note.kind), "credit_note");
    snprintf(note.voids, sizeof(note.voids), "%s", inv.number);
    snprintf(note.reason, sizeof(note.reason), "%s", a->reason);
    note.number[0] = note.sha256[0] = note.voided_by[0] = '\0';
    note.finalized_at[0] = '\0';
    note.total.v = -inv.total.v;
    for (size_t i = 0; i < inv.nlines && st >= 0; i++) {
        struct report_line l = inv.lines[i];
        l.amount.v = -l.amount.v;
        l.quantity.v = -l.quantity.v;
        /* The invoice's grant line showed the balance it left; voiding
         * gives the amount back (rules section 14). */
        if (strcmp(l.kind, "credit_grant") == 0) {
            char back[48];
            pricing_dec_format(l.amount, 6, back, sizeof(back));
            snprintf(l.description, sizeof(l.description),
                     "credit grant %.40s, %s returned", l.grant, back);
        }
        if (report_invoice_add_line(&note, &l, e) < 0)
            st = METER_DB_HARD;
    }
    if (st < 0)
        goto out;
    char total[64];
    total_text(&note, total, sizeof(total));
    struct db_params v = {0};
    db_param_text(&v, note.account_id);
    db_param_period(&v, note.year, note.month);
    db_param_text(&v, note.currency);
    db_param_text(&v, total);
    db_param_text(&v, note.seller);
    db_param_text(&v, note.account_name[0] ? note.account_name : NULL);
    db_param_int64(&v, inv.id);
    db_param_text(&v, note.reason);
    PGresult *r;
    st = meter_db_exec(
        db, "cannot store the credit note",
        "INSERT INTO invoices (account_id, kind, period, status, currency,"
        " total, seller, account_name, voids, reason)"
        " VALUES ($1, 'credit_note', $2::date, 'draft', $3, $4::numeric, $5,"
        " $6, $7::bigint, $8) RETURNING invoice_id",
        v.n, v.v, NULL, NULL, &r, e);
    if (st < 0) {
        if (strstr(e->msg, "invoices_void_once"))
            meter_fail(e, "invoice '%s' is already void", a->number);
        goto out;
    }
    if (db_get_int64(r, 0, 0, &note.id, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    struct meter_buf lines = {0};
    lines_tsv(&lines, &note);
    st = lines.failed ? db_hard(e, "out of memory")
                      : db_copy_in(db, COPY_LINES, lines.p, lines.len,
                                   "cannot store the credit note", e);
    meter_buf_release(&lines);
    if (st >= 0) {
        /* Every period the note takes lines back from is to be rated
         * again by the account's next invoice. */
        struct db_params u = {0};
        db_param_text(&u, note.account_id);
        db_param_int64(&u, note.id);
        st = meter_db_exec(db, "cannot store the credit note",
                           "INSERT INTO invoice_usage (account_id, invoice_id,"
                           " period) SELECT DISTINCT account_id, invoice_id,"
                           " period FROM invoice_lines WHERE account_id = $1"
                           " AND invoice_id = $2::bigint",
                           u.n, u.v, NULL, NULL, NULL, e);
    }
    if (st >= 0)
        st = db_revenue_negate(db, note.account_id, note.id, inv.id, e);
    struct report_invoice *docs[] = {&note};
    if (st >= 0)
        st = finalize(db, docs, 1, e);
    if (st >= 0)
        snprintf(a->credit, 16, "%s", note.number);
out:
    report_invoice_release(&inv);
    report_invoice_release(&note);
    return st;
}

enum meter_db_status
meter_db_invoice_void(PGconn *db, const char *number, const char *reason,
                      char credit[16], struct meter_err *e)
{
    struct void_arg a = {number, reason, credit};
    return meter_db_transaction(db, "BEGIN", 5, void_attempt, &a, e);
}
