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
    char pk[16], lo[24], hi[24], period[32];
    snprintf(pk, sizeof(pk), "%d", acct->pk);
    snprintf(lo, sizeof(lo), "%lld",
             (long long)(db_period_start(year, month) / 60));
    snprintf(hi, sizeof(hi), "%lld",
             (long long)(db_period_end(year, month) / 60));
    db_period_text(year, month, period);
    const char *v[] = {pk, lo, hi, period};
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot read the period's usage state",
        "SELECT (SELECT count(*) FROM sandboxes WHERE account_pk = $1::int"
        "  AND first_running_minute >= $2::int"
        "  AND first_running_minute < $3::int),"
        " coalesce((SELECT revision FROM usage_revisions"
        "  WHERE account_pk = $1::int AND period = $4::date), 0)",
        4, v, NULL, NULL, &r, e);
    if (st >= 0) {
        *first_runs = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
        *revision = strtoull(PQgetvalue(r, 0, 1), NULL, 10);
    }
    PQclear(r);
    return st;
}

/*
 * Rates the account's period with its parts' books into lines of inv,
 * and records in rated what it saw. A period without parts yields no
 * lines.
 */
static enum meter_db_status
rate_period(PGconn *db, const struct db_account *acct, int year, int month,
            struct report_invoice *inv, struct rated *rated,
            struct meter_err *e)
{
    struct db_parts parts;
    db_parts_of(acct, year, month, &parts);
    if (rated->n == 64)
        return db_hard(e, "account '%s': more than 64 periods in one invoice",
                       acct->id);
    size_t slot = rated->n;
    rated->year[slot] = year;
    rated->month[slot] = month;
    rated->seconds[slot] = 0;
    rated->running_s[slot] = rated->idle_s[slot] = 0;
    enum meter_db_status fr =
        period_state(db, acct, year, month, &rated->first_runs[slot],
                     &rated->revision[slot], e);
    if (fr < 0)
        return fr;
    rated->n++;
    if (parts.n == 0)
        return METER_DB_NONE;
    struct meter_usage_reader *r =
        db_usage_open(db, acct->id, db_period_start(year, month),
                      db_period_end(year, month), false, e);
    if (!r)
        return METER_DB_HARD;
    struct pricing_scope scope = {year, month, 0, acct->id, false};
    struct pricing_statement *st = NULL;
    size_t n = 0;
    struct pricing_err pe = {{0}};
    enum meter_db_status rc = METER_DB_ROWS;
    if (pricing_rate(NULL, meter_usage_source(r), &scope, parts.p, parts.n, &st,
                     &n, &pe) < 0) {
        rc = db_hard(e, "%s", pe.msg);
    } else {
        rated->seconds[slot] = db_usage_seconds(r);
        for (size_t k = 0; k < n && rc == METER_DB_ROWS; k++) {
            rated->running_s[slot] += st[k].q.running_s;
            rated->idle_s[slot] += st[k].q.credited_s;
            const struct db_assignment *a = parts.a[k];
            const char *book =
                acct->override ? pricing_book_id(acct->override) : a->book_id;
            if (strcmp(st[k].currency, inv->currency) != 0 &&
                inv->currency[0]) {
                rc = db_hard(e,
                             "account '%s' %04d-%02d: price books of two "
                             "currencies (%s, %s) in one period",
                             acct->id, year, month, inv->currency,
                             st[k].currency);
                break;
            }
            snprintf(inv->currency, sizeof(inv->currency), "%s",
                     st[k].currency);
            if (report_invoice_add_statement(
                    inv, &st[k], book, acct->override ? 0 : a->version, e) < 0)
                rc = METER_DB_HARD;
        }
    }
    pricing_statements_free(st, n);
    meter_usage_reader_free(r);
    return rc;
}

/* The columns of a line, as line_from_row reads them. */
#define LINE_COLUMNS                                                           \
    "l.kind, coalesce(l.corrects, ''), to_char(l.period, 'YYYY-MM'),"          \
    " coalesce(l.price_book_id, ''), coalesce(l.version, 0), l.description,"   \
    " l.quantity, coalesce(l.unit, ''), l.unit_price, l.amount,"               \
    " coalesce(l.instance, ''), coalesce(l.grant_id, ''), l.account_id"

/* Appends the line of row i of r (LINE_COLUMNS) to inv; -1 if it does not
 * read back. */
static int
line_from_row(PGresult *r, int i, struct report_invoice *inv,
              struct meter_err *e)
{
    struct report_line l = {0};
    snprintf(l.kind, sizeof(l.kind), "%s", PQgetvalue(r, i, 0));
    snprintf(l.corrects, sizeof(l.corrects), "%s", PQgetvalue(r, i, 1));
    meter_period_parse(PQgetvalue(r, i, 2), &l.year, &l.month);
    snprintf(l.book, sizeof(l.book), "%s", PQgetvalue(r, i, 3));
    l.version = (int)strtol(PQgetvalue(r, i, 4), NULL, 10);
    snprintf(l.description, sizeof(l.description), "%s", PQgetvalue(r, i, 5));
    l.has_quantity = !PQgetisnull(r, i, 6);
    snprintf(l.unit, sizeof(l.unit), "%s", PQgetvalue(r, i, 7));
    l.has_unit_price = !PQgetisnull(r, i, 8);
    snprintf(l.instance, sizeof(l.instance), "%s", PQgetvalue(r, i, 10));
    snprintf(l.grant, sizeof(l.grant), "%s", PQgetvalue(r, i, 11));
    if ((l.has_quantity && db_parse_dec(PQgetvalue(r, i, 6), &l.quantity)) ||
        (l.has_unit_price &&
         db_parse_dec(PQgetvalue(r, i, 8), &l.unit_price)) ||
        db_parse_dec(PQgetvalue(r, i, 9), &l.amount))
        return meter_fail(e, "account '%s': a stored line does not read back",
                          PQgetvalue(r, i, 12));
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
    char period[32];
    db_period_text(year, month, period);
    const char *v[] = {acct->id, period};
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot read billed lines",
        "SELECT " LINE_COLUMNS ", i.currency FROM invoice_lines l"
        " JOIN invoices i USING (account_id, invoice_id)"
        " WHERE l.account_id = $1 AND i.status = 'final' AND l.period = $2"
        " AND l.kind <> 'credit_grant'"
        " ORDER BY i.invoice_id, l.line_no",
        2, v, NULL, NULL, &r, e);
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
        else if (line_from_row(r, i, billed, e) < 0)
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

/* Earlier periods with a live final invoice whose billing may be off:
 * their usage changed since the latest rating that stands (more seconds
 * stored, other first runs, or a quarantine took seconds: its revision),
 * or a credit note took back lines of theirs since. Each gets its late
 * usage. */
static enum meter_db_status
late_periods(PGconn *db, const struct db_account *acct, int year, int month,
             struct docs *ds, struct rated *rated, struct meter_err *e)
{
    char period[32], pk[16];
    db_period_text(year, month, period);
    snprintf(pk, sizeof(pk), "%d", acct->pk);
    const char *v[] = {acct->id, period, pk};
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot look for late usage",
        "SELECT to_char(p.period, 'YYYY-MM') FROM"
        " (SELECT DISTINCT i.period FROM invoices i"
        "  WHERE i.account_id = $1 AND i.period < $2::date AND " LIVE_INVOICE
        " ) p"
        /* the latest that stands: a rating, or a credit note's return */
        " CROSS JOIN LATERAL (SELECT u.samples, u.first_runs, u.revision"
        "  FROM invoice_usage u JOIN invoices d USING (account_id, invoice_id)"
        "  WHERE u.account_id = $1 AND u.period = p.period"
        "  AND d.status = 'final'"
        "  AND (d.kind = 'credit_note' OR " NOT_VOIDED(
            "d") ")"
                 "  ORDER BY u.seq DESC LIMIT 1) last"
                 " WHERE last.samples IS NULL"
                 " OR (SELECT coalesce(sum(h.samples), 0)"
                 "   FROM usage_hourly_totals h"
                 "   WHERE h.account_pk = $3::int"
                 "   AND h.hour >= extract(epoch FROM p.period)::bigint / 3600"
                 "   AND h.hour < extract(epoch FROM p.period + interval '1 "
                 "month')"
                 "    ::bigint / 3600) <> last.samples"
                 " OR (SELECT count(*) FROM sandboxes s WHERE s.account_pk = "
                 "$3::int"
                 "   AND s.first_running_minute >= extract(epoch FROM p.period)"
                 "    ::bigint / 60"
                 "   AND s.first_running_minute < extract(epoch FROM p.period"
                 "    + interval '1 month')::bigint / 60) <> last.first_runs"
                 " OR coalesce((SELECT v.revision FROM usage_revisions v"
                 "   WHERE v.account_pk = $3::int AND v.period = p.period), 0)"
                 "   <> coalesce(last.revision, 0)"
                 " ORDER BY p.period",
        3, v, NULL, NULL, &r, e);
    if (st < 0)
        return st;
    for (int i = 0; i < PQntuples(r) && st >= 0; i++) {
        int y, m;
        meter_period_parse(PQgetvalue(r, i, 0), &y, &m);
        st = late_usage(db, acct, y, m, ds, rated, e);
    }
    PQclear(r);
    return st;
}

/*
 * Ends inv with a credit_grant line for each grant that pays it (rules
 * section 14), from the balances final documents left: at finalization,
 * which runs in the same transaction under the account's lock, these are
 * the balances then.
 */
static enum meter_db_status
spend_grants(PGconn *db, const struct db_account *acct,
             struct report_invoice *inv, struct meter_err *e)
{
    struct db_grants gs;
    enum meter_db_status st = db_account_grants(db, acct, &gs, e);
    if (st < 0 || gs.n == 0) {
        db_grants_release(&gs);
        return st;
    }
    struct pricing_dec sum = {0};
    for (size_t i = 0; i < inv->nlines; i++)
        if (pricing_dec_add(sum, inv->lines[i].amount, &sum) != PRICING_OK)
            st = db_hard(e, "account '%s': amount overflow", acct->id);
    size_t *order = calloc(gs.n, sizeof(*order));
    struct pricing_dec *spent = calloc(gs.n, sizeof(*spent));
    if (!order || !spent)
        st = db_hard(e, "out of memory");
    size_t k = st < 0 ? 0
                      : pricing_grants_spend(gs.g, gs.n, inv->year, inv->month,
                                             inv->currency, sum, order, spent);
    for (size_t x = 0; x < k && st >= 0; x++) {
        const struct pricing_grant *g = &gs.g[order[x]];
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
    db_grants_release(&gs);
    return st;
}

/*
 * Computes the account's documents for the period into ds: the first has
 * its own lines, part by part, then late usage (of its own period, if
 * other documents billed some of it, and of earlier invoiced periods);
 * late usage in another currency goes on a document of its own, with
 * the grants of that currency (rules section 9). Without with_late, the
 * first document alone, with its own lines.
 */
static enum meter_db_status
compute(PGconn *db, const struct db_account *acct, int year, int month,
        bool with_late, struct docs *ds, struct rated *rated,
        struct meter_err *e)
{
    struct report_invoice *inv = &ds->d[0];
    ds->n = 1;
    inv->year = year;
    inv->month = month;
    snprintf(inv->kind, sizeof(inv->kind), "invoice");
    snprintf(inv->account_id, sizeof(inv->account_id), "%s", acct->id);
    snprintf(inv->account_name, sizeof(inv->account_name), "%s", acct->name);
    rated->n = 0;
    enum meter_db_status st = rate_period(db, acct, year, month, inv, rated, e);
    if (st >= 0 && with_late) {
        struct report_invoice none = {0}, billed = {0};
        st = billed_lines(db, acct, year, month, &billed, e);
        if (st >= 0)
            st = add_late(ds, year, month, &none, &billed, e);
        report_invoice_release(&billed);
    }
    if (st >= 0 && with_late)
        st = late_periods(db, acct, year, month, ds, rated, e);
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
    for (size_t i = 0; i < ds->n && st >= 0 && with_late; i++)
        st = spend_grants(db, acct, &ds->d[i], e);
    for (size_t i = 0; i < ds->n && st >= 0; i++)
        if (report_invoice_total(&ds->d[i], e) < 0)
            st = METER_DB_HARD;
    return st < 0 ? st : METER_DB_ROWS;
}

/* ---- storing ------------------------------------------------------------- */

/* The lines as JSON rows for json_to_recordset. */
static char *
lines_json(const struct report_invoice *inv)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct report_line *l = &inv->lines[i];
        char period[32], q[64], up[64], amt[64];
        db_period_text(l->year, l->month, period);
        struct report_cells c;
        report_line_cells(l, &c);
        snprintf(q, sizeof(q), "%s", c.quantity);
        snprintf(up, sizeof(up), "%s", c.unit_price);
        snprintf(amt, sizeof(amt), "%s", c.amount);
        json_t *o = json_pack(
            "{s:I, s:s, s:o, s:s, s:o, s:o, s:s, s:o, s:o, s:o, s:s, s:o, s:o}",
            "line_no", (json_int_t)(i + 1), "kind", l->kind, "corrects",
            l->corrects[0] ? json_string(l->corrects) : json_null(), "period",
            period, "price_book_id",
            l->book[0] ? json_string(l->book) : json_null(), "version",
            l->book[0] ? json_integer(l->version) : json_null(), "description",
            l->description, "quantity",
            l->has_quantity ? json_string(q) : json_null(), "unit",
            l->has_quantity ? json_string(l->unit) : json_null(), "unit_price",
            l->has_unit_price ? json_string(up) : json_null(), "amount", amt,
            "instance", l->instance[0] ? json_string(l->instance) : json_null(),
            "grant_id", l->grant[0] ? json_string(l->grant) : json_null());
        if (!o || json_array_append_new(arr, o) < 0) {
            json_decref(arr);
            return NULL;
        }
    }
    char *s = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    return s;
}

static char *
rated_json(const struct rated *rated)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < rated->n; i++) {
        char period[32];
        db_period_text(rated->year[i], rated->month[i], period);
        json_array_append_new(
            arr, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "period", period,
                           "samples", (json_int_t)rated->seconds[i],
                           "first_runs", (json_int_t)rated->first_runs[i],
                           "running_s", (json_int_t)rated->running_s[i],
                           "idle_s", (json_int_t)rated->idle_s[i], "revision",
                           (json_int_t)rated->revision[i]));
    }
    char *s = json_dumps(arr, JSON_COMPACT);
    json_decref(arr);
    return s;
}

/* Writes inv's lines and rated periods under its id (a draft). */
static enum meter_db_status
store_parts(PGconn *db, const struct report_invoice *inv,
            const struct rated *rated, struct meter_err *e)
{
    char id[24];
    snprintf(id, sizeof(id), "%" PRId64, inv->id);
    char *lines = lines_json(inv), *usage = rated ? rated_json(rated) : NULL;
    if (!lines || (rated && !usage)) {
        free(lines);
        free(usage);
        return db_hard(e, "out of memory");
    }
    const char *v[] = {inv->account_id, id, lines};
    enum meter_db_status st = meter_db_exec(
        db, "cannot store invoice lines",
        "INSERT INTO invoice_lines (account_id, invoice_id, line_no, kind,"
        " corrects, period, price_book_id, version, description, quantity,"
        " unit, unit_price, amount, instance, grant_id)"
        " SELECT $1, $2::bigint, x.* FROM json_to_recordset($3::json) AS x"
        " (line_no int, kind text, corrects text, period date,"
        "  price_book_id text, version int, description text,"
        "  quantity numeric, unit text, unit_price numeric, amount numeric,"
        "  instance text, grant_id text)",
        3, v, NULL, NULL, NULL, e);
    if (st >= 0 && usage) {
        const char *u[] = {inv->account_id, id, usage};
        st = meter_db_exec(
            db, "cannot store invoice usage",
            "INSERT INTO invoice_usage (account_id, invoice_id, period,"
            " samples, first_runs, running_s, idle_s, revision)"
            " SELECT $1, $2::bigint, x.period, x.samples, x.first_runs,"
            " x.running_s, x.idle_s, x.revision"
            " FROM json_to_recordset($3::json) AS x (period date,"
            " samples bigint, first_runs bigint, running_s bigint,"
            " idle_s bigint, revision bigint)",
            3, u, NULL, NULL, NULL, e);
    }
    free(lines);
    free(usage);
    return st;
}

/* The document's total as stored: to its currency's minor unit. */
static void
total_text(const struct report_invoice *inv, char *buf, size_t n)
{
    pricing_money_format(inv->total, inv->currency, buf, n);
}

/* Replaces the account's draft of the period in inv's currency with inv
 * (inv->id set): its lines, what it rated (NULL: nothing), and its
 * revenue by day. */
static enum meter_db_status
store_draft(PGconn *db, const struct db_account *acct,
            struct report_invoice *inv, const struct rated *rated,
            struct meter_err *e)
{
    char period[32], total[64];
    db_period_text(inv->year, inv->month, period);
    total_text(inv, total, sizeof(total));
    const char *v[] = {
        inv->account_id, period,
        inv->currency,   total,
        inv->seller,     inv->account_name[0] ? inv->account_name : NULL};
    PGresult *r;
    /* Keep the draft's id across runs: delete its parts, update it. */
    enum meter_db_status st = meter_db_exec(
        db, "cannot store the draft",
        "WITH old AS (SELECT invoice_id FROM invoices WHERE account_id = $1"
        "  AND period = $2::date AND status = 'draft' AND kind = 'invoice'"
        "  AND currency = $3),"
        " l AS (DELETE FROM invoice_lines WHERE account_id = $1"
        "  AND invoice_id IN (SELECT invoice_id FROM old)),"
        " u AS (DELETE FROM invoice_usage WHERE account_id = $1"
        "  AND invoice_id IN (SELECT invoice_id FROM old)),"
        " rv AS (DELETE FROM invoice_revenue WHERE account_id = $1"
        "  AND invoice_id IN (SELECT invoice_id FROM old)),"
        " upd AS (UPDATE invoices SET currency = $3, total = $4::numeric,"
        "  seller = $5, account_name = $6, created_at = now()"
        "  WHERE account_id = $1 AND invoice_id IN (SELECT invoice_id FROM old)"
        "  RETURNING invoice_id),"
        " ins AS (INSERT INTO invoices (account_id, kind, period, status,"
        "  currency, total, seller, account_name)"
        "  SELECT $1, 'invoice', $2::date, 'draft', $3, $4::numeric, $5, $6"
        "  WHERE NOT EXISTS (SELECT 1 FROM old) RETURNING invoice_id)"
        " SELECT invoice_id, to_char(now() AT TIME ZONE 'UTC',"
        "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM upd"
        " UNION ALL SELECT invoice_id, to_char(now() AT TIME ZONE 'UTC',"
        "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM ins",
        6, v, NULL, NULL, &r, e);
    if (st < 0)
        return st;
    inv->id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    snprintf(inv->created_at, sizeof(inv->created_at), "%s",
             PQgetvalue(r, 0, 1));
    snprintf(inv->status, sizeof(inv->status), "draft");
    PQclear(r);
    st = store_parts(db, inv, rated, e);
    return st < 0 ? st : db_revenue_store(db, acct, inv, e);
}

/* Removes the account's drafts of the period in currencies that ds no
 * longer bills (late usage of another currency that came to nothing). */
static enum meter_db_status
drop_other_drafts(PGconn *db, const struct docs *ds, struct meter_err *e)
{
    char period[32], keep[8 * METER_INVOICE_DOCS] = "{";
    db_period_text(ds->d[0].year, ds->d[0].month, period);
    for (size_t i = 0; i < ds->n; i++) {
        size_t len = strlen(keep);
        snprintf(keep + len, sizeof(keep) - len, "%s%s", i ? "," : "",
                 ds->d[i].currency);
    }
    size_t len = strlen(keep);
    snprintf(keep + len, sizeof(keep) - len, "}");
    const char *v[] = {ds->d[0].account_id, period, keep};
    return meter_db_exec(db, "cannot remove a stale draft",
                         "DELETE FROM invoices WHERE account_id = $1"
                         " AND period = $2::date AND status = 'draft'"
                         " AND kind = 'invoice'"
                         " AND currency <> ALL ($3::text[])",
                         3, v, NULL, NULL, NULL, e);
}

/* Gives the draft inv its number, hash and final status. */
static enum meter_db_status
finalize(PGconn *db, struct report_invoice *inv, struct meter_err *e)
{
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot number the invoice",
        "INSERT INTO invoice_numbers (year, last)"
        " VALUES (extract(year FROM now() AT TIME ZONE 'UTC')::int, 1)"
        " ON CONFLICT (year) DO UPDATE SET last = invoice_numbers.last + 1"
        " RETURNING year, last, to_char(now() AT TIME ZONE 'UTC',"
        " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
        0, NULL, NULL, NULL, &r, e);
    if (st < 0)
        return st;
    snprintf(inv->number, sizeof(inv->number), "%04d-%06d",
             (int)strtol(PQgetvalue(r, 0, 0), NULL, 10),
             (int)strtol(PQgetvalue(r, 0, 1), NULL, 10));
    snprintf(inv->finalized_at, sizeof(inv->finalized_at), "%s",
             PQgetvalue(r, 0, 2));
    PQclear(r);
    if (report_invoice_hash(inv, inv->sha256, e) < 0)
        return METER_DB_HARD;
    char id[24];
    snprintf(id, sizeof(id), "%" PRId64, inv->id);
    const char *v[] = {inv->account_id, id, inv->number, inv->sha256,
                       inv->finalized_at};
    st = meter_db_exec(db, "cannot finalize the invoice",
                       "UPDATE invoices SET status = 'final', number = $3,"
                       " sha256 = decode($4, 'hex'),"
                       " finalized_at = $5::timestamptz"
                       " WHERE account_id = $1 AND invoice_id = $2::bigint"
                       " AND status = 'draft'",
                       5, v, NULL, NULL, NULL, e);
    snprintf(inv->status, sizeof(inv->status), "final");
    return st < 0 ? st : METER_DB_ROWS;
}

/* ---- the run ------------------------------------------------------------- */

enum meter_db_status
meter_db_invoice_accounts(PGconn *db, int year, int month, const char *only,
                          struct meter_strtab *out, struct meter_err *e)
{
    char from[32], to[32];
    db_period_text(year, month, from);
    db_period_text(month == 12 ? year + 1 : year, month == 12 ? 1 : month + 1,
                   to);
    const char *v[] = {from, to, only};
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
        3, v, out, e);
}

/* HARD, naming the period, when an earlier period in which the account
 * had a book has no final invoice: grants look back, so an account's
 * periods are finalized in order (rules section 14). A voided period
 * had one; its corrected invoice may come later. */
static enum meter_db_status
finalized_before(PGconn *db, const struct db_account *acct, int year, int month,
                 struct meter_err *e)
{
    if (acct->na == 0)
        return METER_DB_NONE;
    char period[32];
    db_period_text(year, month, period);
    const char *v[] = {acct->id, period};
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot read the account's invoices",
        "SELECT DISTINCT to_char(period, 'YYYY-MM') FROM invoices"
        " WHERE account_id = $1 AND kind = 'invoice' AND status = 'final'"
        " AND period < $2::date",
        2, v, NULL, NULL, &r, e);
    if (st < 0)
        return st;
    int y, m;
    int64_t start, end;
    pricing_period_of(acct->a[0].from, &y, &m, &start, &end);
    for (int p = pricing_period_index(y, m);
         st >= 0 && p < pricing_period_index(year, month); p++) {
        struct db_parts parts;
        db_parts_of(acct, p / 12, p % 12 + 1, &parts);
        char want[16];
        snprintf(want, sizeof(want), "%04d-%02d", p / 12, p % 12 + 1);
        bool final = false;
        for (int i = 0; i < PQntuples(r) && !final; i++)
            final = strcmp(PQgetvalue(r, i, 0), want) == 0;
        if (parts.n && !final)
            st = db_hard(e,
                         "account '%s': %s has no final invoice; an "
                         "account's periods are finalized in order",
                         acct->id, want);
    }
    PQclear(r);
    return st;
}

struct run_arg {
    const char *account, *seller;
    int year, month;
    bool finalize;
    struct meter_invoice_outcome *out;
};

static enum meter_db_status
run_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct run_arg *a = arg;
    struct meter_invoice_outcome *out = a->out;
    struct db_account acct = {.id = a->account};
    struct docs ds = {0};
    struct rated rated = {0};
    char period[32];
    db_period_text(a->year, a->month, period);
    memset(out, 0, sizeof(*out));

    enum meter_db_status st = db_account_load(db, &acct, true, e);
    if (st < 0)
        goto out;
    /* A draft is recomputed by any run: it need not wait for the disk. A
     * final invoice must. */
    if (!a->finalize &&
        (st = meter_db_exec(db, "cannot set the commit mode",
                            "SET LOCAL synchronous_commit = off", 0, NULL, NULL,
                            NULL, NULL, e)) < 0)
        goto out;
    if (a->finalize && db_period_end(a->year, a->month) > time(NULL)) {
        st = db_hard(e,
                     "%04d-%02d has not ended: a period is finalized once "
                     "it is over",
                     a->year, a->month);
        goto out;
    }
    struct db_parts parts;
    db_parts_of(&acct, a->year, a->month, &parts);
    const char *v[] = {acct.id, period,
                       parts.n ? pricing_book_currency(parts.p[0].book) : NULL};
    if (parts.n == 0) {
        /* No book in the period: no invoice, and no stale draft. */
        st = meter_db_exec(db, "cannot remove a stale draft",
                           "DELETE FROM invoices WHERE account_id = $1 AND"
                           " period = $2::date AND status = 'draft'"
                           " AND kind = 'invoice'",
                           2, v, NULL, NULL, NULL, e);
        goto out;
    }
    /* A live final invoice of the period in its books' currency stands:
     * nothing to do. (One of late usage in another currency does not:
     * voided, the period's own invoice is issued again beside it.) */
    PGresult *r;
    st = meter_db_exec(db, "cannot read the account's invoices",
                       "SELECT i.number FROM invoices i WHERE i.account_id = $1"
                       " AND i.period = $2::date AND i.currency = $3"
                       " AND " LIVE_INVOICE,
                       3, v, NULL, NULL, &r, e);
    if (st < 0)
        goto out;
    if (st == METER_DB_ROWS) {
        out->already_final = true;
        snprintf(out->number, sizeof(out->number), "%s", PQgetvalue(r, 0, 0));
        PQclear(r);
        st = METER_DB_NONE;
        goto out;
    }
    PQclear(r);
    snprintf(ds.d[0].seller, sizeof(ds.d[0].seller), "%s", a->seller);
    st = compute(db, &acct, a->year, a->month, true, &ds, &rated, e);
    /* The first document records what the run rated. */
    for (size_t i = 0; i < ds.n && st >= 0; i++)
        st = store_draft(db, &acct, &ds.d[i], i == 0 ? &rated : NULL, e);
    if (st >= 0)
        st = drop_other_drafts(db, &ds, e);
    if (st >= 0 && a->finalize)
        st = finalized_before(db, &acct, a->year, a->month, e);
    for (size_t i = 0; i < ds.n && st >= 0 && a->finalize; i++)
        st = finalize(db, &ds.d[i], e);
    if (st >= 0) {
        out->written = true;
        out->id = ds.d[0].id;
        snprintf(out->number, sizeof(out->number), "%s", ds.d[0].number);
        out->total = ds.d[0].total;
        snprintf(out->currency, sizeof(out->currency), "%s", ds.d[0].currency);
        for (size_t i = 1; i < ds.n; i++) {
            struct meter_invoice_doc *o = &out->other[out->nother++];
            o->id = ds.d[i].id;
            snprintf(o->number, sizeof(o->number), "%s", ds.d[i].number);
            o->total = ds.d[i].total;
            snprintf(o->currency, sizeof(o->currency), "%s", ds.d[i].currency);
        }
        for (size_t i = 0; i < rated.n; i++)
            out->samples += rated.seconds[i];
        st = METER_DB_ROWS;
    }
out:
    db_account_release(&acct);
    docs_release(&ds);
    return st;
}

enum meter_db_status
meter_db_invoice_run(PGconn *db, const char *account, int year, int month,
                     bool finalize, const char *seller,
                     struct meter_invoice_outcome *out, struct meter_err *e)
{
    struct run_arg a = {account, seller, year, month, finalize, out};
    return meter_db_transaction(db, "BEGIN", 5, run_attempt, &a, e);
}

/* ---- what-if ------------------------------------------------------------- */

struct preview_arg {
    const char *account;
    int year, month;
    const struct pricing_book *book;
    struct report_invoice *inv;
};

static enum meter_db_status
preview_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct preview_arg *a = arg;
    struct db_account acct = {.id = a->account, .override = a->book};
    struct rated rated = {0};
    struct docs ds = {0};
    enum meter_db_status st = db_account_load(db, &acct, false, e);
    if (st >= 0) {
        struct db_parts parts;
        db_parts_of(&acct, a->year, a->month, &parts);
        if (parts.n == 0)
            st = db_hard(e, "account '%s' has no price book in %04d-%02d",
                         a->account, a->year, a->month);
    }
    /* Its own lines only: late usage is billed as it was. */
    if (st >= 0 && (st = compute(db, &acct, a->year, a->month, false, &ds,
                                 &rated, e)) >= 0) {
        report_invoice_release(a->inv);
        *a->inv = ds.d[0];
        snprintf(a->inv->status, sizeof(a->inv->status), "draft");
        ds.n = 0;
    }
    docs_release(&ds);
    db_account_release(&acct);
    /* Nothing is stored: roll back whatever happened. */
    return st < 0 ? st : METER_DB_ABORT;
}

enum meter_db_status
meter_db_invoice_preview(PGconn *db, const char *account, int year, int month,
                         const struct pricing_book *book,
                         struct report_invoice *inv, struct meter_err *e)
{
    struct preview_arg a = {account, year, month, book, inv};
    snprintf(inv->status, sizeof(inv->status), "draft");
    enum meter_db_status st = meter_db_transaction(
        db, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 3,
        preview_attempt, &a, e);
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

/* Fills the header of inv from row i of r (DOC_COLUMNS). */
static int
doc_header(PGresult *r, int i, struct report_invoice *inv)
{
    memset(inv, 0, sizeof(*inv));
    inv->id = strtoll(PQgetvalue(r, i, 0), NULL, 10);
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
    return db_parse_dec(PQgetvalue(r, i, 15), &inv->total);
}

/* The lines of document inv->id. */
static enum meter_db_status
doc_lines(PGconn *db, struct report_invoice *inv, struct meter_err *e)
{
    char id[24];
    snprintf(id, sizeof(id), "%" PRId64, inv->id);
    const char *v[] = {inv->account_id, id};
    PGresult *r;
    enum meter_db_status st =
        meter_db_exec(db, "cannot read invoice lines",
                      "SELECT " LINE_COLUMNS " FROM invoice_lines l"
                      " WHERE l.account_id = $1 AND l.invoice_id = $2::bigint"
                      " ORDER BY l.line_no",
                      2, v, NULL, NULL, &r, e);
    for (int i = 0; st >= 0 && i < PQntuples(r); i++)
        if (line_from_row(r, i, inv, e) < 0)
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
    char idtext[24];
    snprintf(idtext, sizeof(idtext), "%" PRIu64, id);
    const char *v[] = {number ? ref : NULL, number ? NULL : idtext, account};
    PGresult *r;
    enum meter_db_status st =
        meter_db_exec(db, "cannot read the invoice",
                      "SELECT " DOC_COLUMNS " FROM invoices i"
                      " WHERE (i.number = $1 OR i.invoice_id = $2::bigint)"
                      " AND ($3::text IS NULL OR i.account_id = $3::text)",
                      3, v, NULL, NULL, &r, e);
    if (st != METER_DB_ROWS) {
        PQclear(r);
        return st;
    }
    int bad = doc_header(r, 0, inv);
    PQclear(r);
    if (bad)
        return db_hard(e, "invoice '%s': its total does not read back", ref);
    return doc_lines(db, inv, e);
}

enum meter_db_status
meter_db_invoice_list(PGconn *db, const struct meter_invoice_filter *f,
                      meter_invoice_cb *cb, void *arg, struct meter_err *e)
{
    char period[32] = "", after[24], limit[24];
    if (f->year)
        db_period_text(f->year, f->month, period);
    snprintf(after, sizeof(after), "%" PRId64, f->after);
    snprintf(limit, sizeof(limit), "%d", f->limit > 0 ? f->limit : 100);
    const char *v[] = {f->account, period[0] ? period : NULL, f->status, after,
                       limit};
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
                      5, v, NULL, NULL, &r, e);
    if (st < 0)
        return st;
    for (int i = 0; i < PQntuples(r); i++) {
        struct report_invoice inv;
        if (doc_header(r, i, &inv) == 0)
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
    char period[32], total[64], voids[24];
    db_period_text(note.year, note.month, period);
    total_text(&note, total, sizeof(total));
    snprintf(voids, sizeof(voids), "%" PRId64, inv.id);
    const char *v[] = {
        note.account_id, period,
        note.currency,   total,
        note.seller,     note.account_name[0] ? note.account_name : NULL,
        voids,           note.reason};
    PGresult *r;
    st = meter_db_exec(
        db, "cannot store the credit note",
        "INSERT INTO invoices (account_id, kind, period, status, currency,"
        " total, seller, account_name, voids, reason)"
        " VALUES ($1, 'credit_note', $2::date, 'draft', $3, $4::numeric, $5,"
        " $6, $7::bigint, $8) RETURNING invoice_id",
        8, v, NULL, NULL, &r, e);
    if (st < 0) {
        if (strstr(e->msg, "invoices_void_once"))
            meter_fail(e, "invoice '%s' is already void", a->number);
        goto out;
    }
    note.id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    st = store_parts(db, &note, NULL, e);
    if (st >= 0) {
        /* Every period the note takes lines back from is to be rated
         * again by the account's next invoice. */
        char id[24];
        snprintf(id, sizeof(id), "%" PRId64, note.id);
        const char *u[] = {note.account_id, id};
        st = meter_db_exec(db, "cannot store the credit note",
                           "INSERT INTO invoice_usage (account_id, invoice_id,"
                           " period) SELECT DISTINCT account_id, invoice_id,"
                           " period FROM invoice_lines WHERE account_id = $1"
                           " AND invoice_id = $2::bigint",
                           2, u, NULL, NULL, NULL, e);
    }
    if (st >= 0)
        st = db_revenue_negate(db, note.account_id, note.id, inv.id, e);
    if (st >= 0)
        st = finalize(db, &note, e);
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
