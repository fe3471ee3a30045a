/*
 * invoice_write.c - what the invoice run writes (docs/invoicing.md): a
 * batch's drafts, replacing the period's (one statement per table, one
 * COPY for each of lines, usage and revenue), their numbers and final
 * status, and credit notes. Which documents, with which lines, is
 * meter/billing/'s.
 */
#include "db_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
          const struct meter_db_rated *rated, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char period[32];
        db_period_text(rated[i].year, rated[i].month, period);
        db_tsv_text(b, inv->account_id);
        db_tsv_int(b, inv->id);
        db_tsv_text(b, period);
        db_tsv_int(b, (int64_t)rated[i].seconds);
        db_tsv_int(b, (int64_t)rated[i].first_runs);
        db_tsv_int(b, (int64_t)rated[i].running_s);
        db_tsv_int(b, (int64_t)rated[i].idle_s);
        db_tsv_int(b, (int64_t)rated[i].revision);
        db_tsv_end(b);
    }
}

#define COPY_USAGE                                                             \
    "COPY invoice_usage (account_id, invoice_id, period, samples,"             \
    " first_runs, running_s, idle_s, revision) FROM STDIN"

/* Appends a document's revenue cells as invoice_revenue rows. */
static void
revenue_tsv(struct meter_buf *b, const struct report_invoice *inv,
            const struct meter_db_revenue_cell *cells, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct meter_db_revenue_cell *c = &cells[i];
        char day[16], amount[64];
        time_t t = (time_t)(c->day * 86400);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(day, sizeof(day), "%Y-%m-%d", &tm);
        pricing_money_format(c->amount, inv->currency, amount, sizeof(amount));
        db_tsv_text(b, inv->account_id);
        db_tsv_int(b, inv->id);
        db_tsv_text(b, day);
        db_tsv_text(b, c->kind);
        db_tsv_text(b, c->book[0] ? c->book : NULL);
        if (c->book[0])
            db_tsv_int(b, c->version);
        else
            db_tsv_text(b, NULL);
        db_tsv_text(b, amount);
        db_tsv_end(b);
    }
}

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
enum meter_db_status
meter_db_invoices_finalize(PGconn *db, struct report_invoice *const *docs,
                           size_t n, struct meter_err *e)
{
    if (n == 0)
        return METER_DB_NONE;
    struct db_params c = {0};
    db_param_uint64(&c, n);
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot number the invoices",
        "INSERT INTO invoice_numbers (year, last)"
        " VALUES (extract(year FROM now() AT TIME ZONE 'UTC')::int, $1::int)"
        " ON CONFLICT (year) DO UPDATE SET last = invoice_numbers.last"
        " + $1::int RETURNING year, last, to_char(now() AT TIME ZONE 'UTC',"
        " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')",
        c.n, c.v, NULL, NULL, &r, e);
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

/* Deletes from table t the rows of the documents named by the arrays $1
 * (accounts) and $2 (ids), paired: each a probe of the primary key. */
#define DELETE_DOCS(t)                                                         \
    "DELETE FROM " t " x USING unnest($1::text[], $2::bigint[])"               \
    " AS d (account_id, invoice_id) WHERE x.account_id = d.account_id"         \
    " AND x.invoice_id = d.invoice_id"

/* Runs sql with the arrays a1 and a2 as $1 and $2, or, without a2, a1
 * and the period. */
static enum meter_db_status
exec_arrays(PGconn *db, const char *what, const char *sql,
            const struct meter_buf *a1, const struct meter_buf *a2, int year,
            int month, PGresult **res, struct meter_err *e)
{
    if (a1->failed || (a2 && a2->failed))
        return db_hard(e, "out of memory");
    char period[32];
    db_period_text(year, month, period);
    const char *v[] = {a1->p, a2 ? a2->p : period};
    return meter_db_exec(db, what, sql, 2, v, NULL, NULL, res, e);
}

/*
 * Writes the batch's drafts (meter_db.h).
 */
enum meter_db_status
meter_db_drafts_store(PGconn *db, int year, int month, const char *const *none,
                      size_t nnone, const char *const *gone_accounts,
                      const int64_t *gone_ids, size_t ngone,
                      struct meter_db_draft *drafts, size_t n,
                      struct meter_err *e)
{
    struct meter_buf none_a = {0}, old_a = {0}, old_i = {0}, gone_a = {0},
                     gone_i = {0}, lines = {0}, usage = {0}, revenue = {0};
    enum meter_db_status st = METER_DB_ROWS;
    PGresult *r = NULL;
    meter_buf_str(&none_a, "{");
    meter_buf_str(&old_a, "{");
    meter_buf_str(&old_i, "{");
    meter_buf_str(&gone_a, "{");
    meter_buf_str(&gone_i, "{");
    bool any_old = false;
    for (size_t k = 0; k < nnone; k++)
        db_array_text(&none_a, none[k]);
    for (size_t k = 0; k < ngone; k++) {
        db_array_text(&gone_a, gone_accounts[k]);
        db_array_int(&gone_i, gone_ids[k]);
    }
    for (size_t k = 0; k < n; k++)
        if (drafts[k].inv->id) {
            db_array_text(&old_a, drafts[k].inv->account_id);
            db_array_int(&old_i, drafts[k].inv->id);
            any_old = true;
        }
    meter_buf_str(&none_a, "}");
    meter_buf_str(&old_a, "}");
    meter_buf_str(&old_i, "}");
    meter_buf_str(&gone_a, "}");
    meter_buf_str(&gone_i, "}");
    /* No book in the period: no invoice, and no stale draft. */
    if (nnone)
        st = exec_arrays(db, "cannot remove a stale draft",
                         "DELETE FROM invoices WHERE account_id ="
                         " ANY ($1::text[]) AND period = $2::date"
                         " AND status = 'draft' AND kind = 'invoice'",
                         &none_a, NULL, year, month, NULL, e);
    if (st >= 0 && ngone)
        st = exec_arrays(db, "cannot remove a stale draft",
                         DELETE_DOCS("invoices"), &gone_a, &gone_i, year, month,
                         NULL, e);
    /* The drafts kept lose their parts, rewritten below. */
    if (st >= 0 && any_old)
        st = exec_arrays(db, "cannot replace a draft",
                         DELETE_DOCS("invoice_lines"), &old_a, &old_i, year,
                         month, NULL, e);
    if (st >= 0 && any_old)
        st = exec_arrays(db, "cannot replace a draft",
                         DELETE_DOCS("invoice_usage"), &old_a, &old_i, year,
                         month, NULL, e);
    if (st >= 0 && any_old)
        st = exec_arrays(db, "cannot replace a draft",
                         DELETE_DOCS("invoice_revenue"), &old_a, &old_i, year,
                         month, NULL, e);
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
     * account, id (or, new, its place: its index among the drafts), currency,
     * total, seller, account name. */
    struct meter_buf h[2][6] = {{{0}}};
    for (size_t x = 0; x < 2; x++)
        for (size_t c = 0; c < 6; c++)
            meter_buf_str(&h[x][c], "{");
    size_t count[2] = {0, 0};
    for (size_t k = 0; k < n && st >= 0; k++) {
        struct report_invoice *inv = drafts[k].inv;
        char total[64];
        pricing_money_format(inv->total, inv->currency, total, sizeof(total));
        size_t x = inv->id ? 0 : 1;
        count[x]++;
        db_array_text(&h[x][0], inv->account_id);
        db_array_int(&h[x][1], inv->id ? inv->id : (int64_t)k);
        db_array_text(&h[x][2], inv->currency);
        db_array_text(&h[x][3], total);
        db_array_text(&h[x][4], inv->seller);
        db_array_text(&h[x][5],
                      inv->account_name[0] ? inv->account_name : NULL);
        snprintf(inv->created_at, sizeof(inv->created_at), "%s", now);
        snprintf(inv->status, sizeof(inv->status), "draft");
    }
    char period[32];
    db_period_text(year, month, period);
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
            if (ref >= 0 && (size_t)ref < n)
                drafts[ref].inv->id = id;
        }
        PQclear(r);
        r = NULL;
    }
    for (size_t x = 0; x < 2; x++)
        for (size_t c = 0; c < 6; c++)
            meter_buf_release(&h[x][c]);
    for (size_t k = 0; k < n && st >= 0; k++) {
        lines_tsv(&lines, drafts[k].inv);
        usage_tsv(&usage, drafts[k].inv, drafts[k].rated, drafts[k].nrated);
        revenue_tsv(&revenue, drafts[k].inv, drafts[k].cells, drafts[k].ncells);
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
    struct meter_buf *bufs[] = {&none_a, &old_a, &old_i, &gone_a,
                                &gone_i, &lines, &usage, &revenue};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        meter_buf_release(bufs[i]);
    return st < 0 ? st : METER_DB_ROWS;
}

enum meter_db_status
meter_db_credit_note_store(PGconn *db, struct report_invoice *note,
                           int64_t voided, struct meter_err *e)
{
    char total[64];
    total_text(note, total, sizeof(total));
    struct db_params v = {0};
    db_param_text(&v, note->account_id);
    db_param_period(&v, note->year, note->month);
    db_param_text(&v, note->currency);
    db_param_text(&v, total);
    db_param_text(&v, note->seller);
    db_param_text(&v, note->account_name[0] ? note->account_name : NULL);
    db_param_int64(&v, voided);
    db_param_text(&v, note->reason);
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot store the credit note",
        "INSERT INTO invoices (account_id, kind, period, status, currency,"
        " total, seller, account_name, voids, reason)"
        " VALUES ($1, 'credit_note', $2::date, 'draft', $3, $4::numeric, $5,"
        " $6, $7::bigint, $8) RETURNING invoice_id",
        v.n, v.v, NULL, NULL, &r, e);
    if (st < 0) {
        if (strstr(e->msg, "invoices_void_once"))
            meter_fail(e, "invoice '%s' is already void", note->voids);
        return st;
    }
    if (db_get_int64(r, 0, 0, &note->id, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    struct meter_buf lines = {0};
    lines_tsv(&lines, note);
    if (st >= 0)
        st = lines.failed ? db_hard(e, "out of memory")
                          : db_copy_in(db, COPY_LINES, lines.p, lines.len,
                                       "cannot store the credit note", e);
    meter_buf_release(&lines);
    if (st >= 0) {
        /* Every period the note takes lines back from is to be rated
         * again by the account's next invoice. */
        struct db_params u = {0};
        db_param_text(&u, note->account_id);
        db_param_int64(&u, note->id);
        st = meter_db_exec(db, "cannot store the credit note",
                           "INSERT INTO invoice_usage (account_id, invoice_id,"
                           " period) SELECT DISTINCT account_id, invoice_id,"
                           " period FROM invoice_lines WHERE account_id = $1"
                           " AND invoice_id = $2::bigint",
                           u.n, u.v, NULL, NULL, NULL, e);
    }
    if (st >= 0)
        st = db_revenue_negate(db, note->account_id, note->id, voided, e);
    return st < 0 ? st : METER_DB_ROWS;
}

enum meter_db_status
meter_db_run_failures_store(PGconn *db, int year, int month,
                            const char *const *accounts,
                            const char *const *errors, size_t n,
                            struct meter_err *e)
{
    if (n == 0)
        return METER_DB_NONE;
    struct meter_buf accts = {0}, whys = {0};
    meter_buf_str(&accts, "{");
    meter_buf_str(&whys, "{");
    for (size_t k = 0; k < n; k++) {
        db_array_text(&accts, accounts[k]);
        db_array_text(&whys, errors[k]);
    }
    meter_buf_str(&accts, "}");
    meter_buf_str(&whys, "}");
    enum meter_db_status st = METER_DB_HARD;
    if (accts.failed || whys.failed) {
        meter_fail(e, "out of memory");
    } else {
        struct db_params p = {0};
        db_param_period(&p, year, month);
        db_param_text(&p, accts.p);
        db_param_text(&p, whys.p);
        /* An account the catalog does not know has no row to name it. */
        st = meter_db_exec(
            db, "cannot record the run's failures",
            "WITH x AS (SELECT * FROM unnest($2::text[], $3::text[])"
            "  AS x (account_id, error)),"
            " ok AS (DELETE FROM invoice_run_failures f USING x"
            "  WHERE f.account_id = x.account_id AND f.period = $1::date"
            "  AND x.error IS NULL)"
            " INSERT INTO invoice_run_failures (account_id, period, error)"
            " SELECT x.account_id, $1::date, x.error FROM x"
            " JOIN accounts a USING (account_id) WHERE x.error IS NOT NULL"
            " ON CONFLICT (account_id, period) DO UPDATE"
            " SET error = excluded.error, failed_at = now()",
            p.n, p.v, NULL, NULL, NULL, e);
    }
    meter_buf_release(&accts);
    meter_buf_release(&whys);
    return st;
}

enum meter_db_status
meter_db_run_failures_keep(PGconn *db, int year, int month,
                           const char *const *accounts, size_t n,
                           struct meter_err *e)
{
    struct meter_buf ids = {0};
    meter_buf_str(&ids, "{");
    for (size_t k = 0; k < n; k++)
        db_array_text(&ids, accounts[k]);
    meter_buf_str(&ids, "}");
    if (ids.failed)
        return db_hard(e, "out of memory");
    struct db_params p = {0};
    db_param_period(&p, year, month);
    db_param_text(&p, ids.p);
    enum meter_db_status st =
        meter_db_exec(db, "cannot forget the failures of accounts not run",
                      "DELETE FROM invoice_run_failures WHERE period = $1::date"
                      " AND account_id <> ALL ($2::text[])",
                      p.n, p.v, NULL, NULL, NULL, e);
    meter_buf_release(&ids);
    return st;
}
