/*
 * test_invoice.c - the invoice run against a real PostgreSQL: drafts
 * (rerun identical, one per account with a book, with or without
 * usage), a mid-period book change cutting segments, a subscription
 * starting mid-month, finalization (gap-free numbers, also from
 * concurrent runs; once only; not before the period ends), immutability
 * enforced by PostgreSQL whoever writes, late usage across two and three
 * periods, voiding by credit note and the corrected invoice, and the
 * invariant: what documents bill for a period equals a fresh rating of
 * everything stored for it.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "meter_db.h"
#include "testdb.h"

#define JAN 1767225600LL /* 2026-01-01T00:00:00Z */
#define FEB 1769904000LL /* 2026-02-01T00:00:00Z */
#define MAR 1772323200LL /* 2026-03-01T00:00:00Z */
#define DAY 86400LL
#define NOW_US ((int64_t)1790000000 * 1000000) /* 2026-09 */

/* Per second: 0.001 a vCPU-second, 0.5 a run; per minute rounding. */
static const char book_a[] =
    "{\"id\": \"book-a\", \"currency\": \"USD\", \"effective_from\": "
    "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0.001\", "
    "\"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": "
    "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": {\"rate\": "
    "\"0\", \"per\": \"month\"}, \"egress\": {\"rate\": \"0\"}, \"per_run\": "
    "\"0.5\", \"granularity_s\": 60}";
/* Twice the cpu rate, half the run fee. */
static const char book_b[] =
    "{\"id\": \"book-b\", \"currency\": \"USD\", \"effective_from\": "
    "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0.002\", "
    "\"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": "
    "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": {\"rate\": "
    "\"0\", \"per\": \"month\"}, \"egress\": {\"rate\": \"0\"}, \"per_run\": "
    "\"0.25\", \"granularity_s\": 60}";
/* book-a in euros. */
static const char book_e[] =
    "{\"id\": \"book-e\", \"currency\": \"EUR\", \"effective_from\": "
    "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0.001\", "
    "\"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": "
    "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": {\"rate\": "
    "\"0\", \"per\": \"month\"}, \"egress\": {\"rate\": \"0\"}, \"per_run\": "
    "\"0.5\", \"granularity_s\": 60}";
/* A subscription of 31 a month and nothing else. */
static const char book_s[] =
    "{\"id\": \"book-s\", \"currency\": \"USD\", \"effective_from\": "
    "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0\", "
    "\"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": "
    "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": {\"rate\": "
    "\"0\", \"per\": \"month\"}, \"egress\": {\"rate\": \"0\"}, \"per_run\": "
    "\"0\", \"subscription\": {\"monthly_fee\": \"31\", \"included_credit\": "
    "\"0\", \"max_concurrency\": null, \"max_session_s\": null}}";

/* 0.001 a vCPU-second and a grant of 10 for three periods. */
static const char book_g[] =
    "{\"id\": \"book-g\", \"currency\": \"USD\", \"effective_from\": "
    "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0.001\", "
    "\"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": "
    "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": {\"rate\": "
    "\"0\", \"per\": \"month\"}, \"egress\": {\"rate\": \"0\"}, \"per_run\": "
    "\"0\", \"grants\": [{\"id\": \"welcome\", \"amount\": \"10\", "
    "\"expires_after_periods\": 3}]}";

static struct pricing_book *books[5];

/* Stores n running seconds of sandbox sb from ts, of vcpu (in 1/10,000)
 * and egress bytes a second, sent by key (0: none) arriving at
 * arrival_us (0: NOW_US). */
static void
store(PGconn *db, struct meter_registry *reg, const char *acct, const char *sb,
      int64_t ts, size_t n, uint32_t vcpu, uint64_t egress, int64_t key,
      int64_t arrival_us)
{
    struct meter_sample *s = calloc(n, sizeof(*s));
    for (size_t i = 0; i < n; i++) {
        s[i].s = (struct pricing_second){ts + (int64_t)i, vcpu, vcpu, 0, 0, 0,
                                         egress};
        snprintf(s[i].account_id, sizeof(s[i].account_id), "%s", acct);
        snprintf(s[i].sandbox_id, sizeof(s[i].sandbox_id), "%s", sb);
    }
    struct meter_ingest_result res;
    struct meter_problems probs = {0};
    struct meter_err e = {{0}};
    struct meter_ingest_origin o = {.now_us = arrival_us ? arrival_us : NOW_US,
                                    .key_id = key};
    CHECK(meter_ingest(db, reg, s, n, &o, &res, &probs, &e) == METER_INGEST_OK);
    CHECK(res.accepted == n);
    free(s);
}

/* Stores n running seconds of 1 vCPU of sandbox sb from ts. */
static void
run(PGconn *db, struct meter_registry *reg, const char *acct, const char *sb,
    int64_t ts, size_t n)
{
    store(db, reg, acct, sb, ts, n, PRICING_CPU_UNIT, 0, 0, 0);
}

static struct billing_outcome
invoice(PGconn *db, const char *acct, int y, int m, bool final)
{
    struct billing_outcome o;
    struct meter_err e = {{0}};
    if (billing_run_one(db, acct, y, m, final, "Test Seller", &o, &e) < 0) {
        fprintf(stderr, "run %s %d-%d: %s\n", acct, y, m, e.msg);
        test_failures++;
        memset(&o, 0, sizeof(o));
    }
    return o;
}

/* The document ref as a struct (released by the caller). */
static struct report_invoice
get(PGconn *db, const char *ref)
{
    struct report_invoice inv;
    struct meter_err e = {{0}};
    CHECK(meter_db_invoice_get(db, ref, NULL, &inv, &e) == METER_DB_ROWS);
    return inv;
}

/* Sum of the lines of inv of kind (NULL: all) and period. */
static struct pricing_dec
sum_lines(const struct report_invoice *inv, const char *kind, int y, int m)
{
    struct pricing_dec s = {0};
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct report_line *l = &inv->lines[i];
        if ((!kind || strcmp(l->kind, kind) == 0) && l->year == y &&
            l->month == m)
            pricing_dec_add(s, l->amount, &s);
    }
    return s;
}

/* What final documents of acct bill for (y, m), from the tables: their
 * lines, credit grants aside (money paid, not usage). */
static struct pricing_dec
billed(PGconn *db, const char *acct, int y, int m)
{
    char sql[512], buf[48];
    snprintf(sql, sizeof(sql),
             "SELECT coalesce(sum(l.amount), 0)::text FROM invoice_lines l"
             " JOIN invoices i USING (account_id, invoice_id)"
             " WHERE l.account_id = '%s' AND i.status = 'final'"
             " AND l.period = '%04d-%02d-01' AND l.kind <> 'credit_grant'",
             acct, y, m);
    PGresult *r = PQexec(db, sql);
    struct pricing_dec d = {0};
    CHECK(PQresultStatus(r) == PGRES_TUPLES_OK);
    snprintf(buf, sizeof(buf), "%s", PQgetvalue(r, 0, 0));
    CHECK(pricing_dec_parse(buf, 12, &d) == PRICING_OK);
    PQclear(r);
    return d;
}

/* A fresh rating of acct's stored (y, m) with one book, through the
 * pipeline directly (not the invoice code): the sum of its lines. */
static struct pricing_dec
fresh(PGconn *db, const char *acct, int y, int m, const struct pricing_book *b)
{
    struct meter_err e = {{0}};
    struct pricing_err pe = {{0}};
    int64_t from = pricing_days_from_civil(y, m, 1) * DAY;
    int64_t to =
        pricing_days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) *
        DAY;
    struct meter_usage_reader *r =
        meter_usage_reader_new(db, acct, from, to, &e);
    struct pricing_statement *st = NULL;
    size_t n = 0;
    struct pricing_scope scope = {y, m, 0, acct, false};
    CHECK(pricing_rate(b, meter_usage_source(r), &scope, NULL, 0, &st, &n,
                       &pe) == 0);
    meter_usage_reader_free(r);
    struct pricing_dec s = {0};
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < st[k].nlines; i++)
            pricing_dec_add(s, st[k].lines[i].amount, &s);
    pricing_statements_free(st, n);
    return s;
}

/* The invariant of docs/invoicing.md for acct's (y, m) on book b: what
 * final documents bill for it is a fresh rating of what is stored; that
 * rating (to 6 decimals) in buf. */
static const char *
billed_is_fresh(PGconn *db, const char *acct, int y, int m,
                const struct pricing_book *b, char buf[48])
{
    char x[48];
    struct pricing_dec want = fresh(db, acct, y, m, b);
    testdb_dec(billed(db, acct, y, m), x);
    testdb_dec(want, buf);
    if (strcmp(x, buf) != 0) {
        fprintf(stderr, "%s %04d-%02d: billed %s, fresh %s\n", acct, y, m, x,
                buf);
        test_failures++;
    }
    return buf;
}

/* The statement must fail, with the server's message holding want. */
static void
refused(PGconn *db, const char *sql, const char *want)
{
    PGresult *r = PQexec(db, sql);
    bool ok = PQresultStatus(r) != PGRES_COMMAND_OK &&
              PQresultStatus(r) != PGRES_TUPLES_OK &&
              strstr(PQerrorMessage(db), want) != NULL;
    if (!ok) {
        fprintf(stderr, "not refused as '%s': %s (%s)\n", want, sql,
                PQerrorMessage(db));
        test_failures++;
    }
    PQclear(r);
}

static void
test_drafts(PGconn *db, struct meter_registry *reg)
{
    char a[48];
    /* acme: 2 runs in January, 90 s and 30 s (billed 120 and 60 s). */
    run(db, reg, "acme", "acme-1", JAN + 1000, 90);
    run(db, reg, "acme", "acme-2", JAN + 5 * DAY, 30);
    struct billing_outcome o = invoice(db, "acme", 2026, 1, false);
    CHECK(o.written && !o.number[0] && o.samples == 120);
    char ref[24];
    snprintf(ref, sizeof(ref), "%" PRId64, o.id);
    struct report_invoice d1 = get(db, ref);
    CHECK_STR(d1.status, "draft");
    CHECK_STR(testdb_dec(sum_lines(&d1, "cpu", 2026, 1), a), "0.180000");
    CHECK_STR(testdb_dec(sum_lines(&d1, "runs", 2026, 1), a), "1.000000");
    CHECK_STR(testdb_dec(d1.total, a), "1.180000");
    CHECK(d1.nlines == 2 && strcmp(d1.lines[0].book, "book-a") == 0 &&
          d1.lines[0].version == 1);

    /* Run again: the same draft, same id, same lines. */
    struct billing_outcome o2 = invoice(db, "acme", 2026, 1, false);
    CHECK(o2.id == o.id);
    struct report_invoice d2 = get(db, ref);
    json_t *j1 = report_invoice_json(&d1), *j2 = report_invoice_json(&d2);
    json_object_del(j1, "created_at");
    json_object_del(j2, "created_at");
    CHECK(json_equal(j1, j2));
    json_decref(j1);
    json_decref(j2);
    report_invoice_release(&d1);
    report_invoice_release(&d2);
    CHECK(testdb_count(db, "SELECT count(*) FROM invoices") == 1);

    /* beta: a subscription from January 15th, no usage: 17 of 31 days. */
    o = invoice(db, "beta", 2026, 1, false);
    snprintf(ref, sizeof(ref), "%" PRId64, o.id);
    struct report_invoice b = get(db, ref);
    CHECK(b.nlines == 1 && strcmp(b.lines[0].kind, "subscription") == 0);
    CHECK_STR(testdb_dec(b.lines[0].amount, a), "17.000000");
    CHECK(strstr(b.lines[0].description, "17 of 31 days") != NULL);
    report_invoice_release(&b);

    /* gamma: book-a, then book-b from the 16th. A running segment
     * crossing midnight is cut there: 30 s each side, each billed 60 s. */
    run(db, reg, "gamma", "gamma-1", JAN + 15 * DAY - 30, 60);
    o = invoice(db, "gamma", 2026, 1, false);
    snprintf(ref, sizeof(ref), "%" PRId64, o.id);
    struct report_invoice g = get(db, ref);
    CHECK(g.nlines == 3);
    if (g.nlines == 3) {
        CHECK_STR(g.lines[0].kind, "cpu");
        CHECK_STR(g.lines[0].book, "book-a");
        CHECK_STR(testdb_dec(g.lines[0].amount, a), "0.060000");
        CHECK_STR(g.lines[1].kind, "runs");
        CHECK_STR(g.lines[2].kind, "cpu");
        CHECK_STR(g.lines[2].book, "book-b");
        /* No second run in the second part: the sandbox ran before. */
        CHECK_STR(testdb_dec(g.lines[2].amount, a), "0.120000");
    }
    report_invoice_release(&g);

    /* No book in the period: no invoice. */
    o = invoice(db, "nobook", 2026, 1, false);
    CHECK(!o.written);

    /* Only the run finalizes: with the number it has just taken. */
    refused(db,
            "UPDATE invoices SET status = 'final', number = '2026-000042',"
            " sha256 = decode(repeat('00', 32), 'hex'), finalized_at = now()"
            " WHERE status = 'draft'",
            "has not been taken");
    refused(db,
            "INSERT INTO invoices (account_id, kind, period, status, number,"
            " currency, total, seller, sha256, finalized_at) VALUES ('acme',"
            " 'invoice', '2026-02-01', 'final', '2026-000043', 'USD', 0, 'x',"
            " decode(repeat('00', 32), 'hex'), now())",
            "created as a draft");
    refused(db, "INSERT INTO invoice_numbers VALUES (2031, 0)", "start at 1");
    /* A year's numbers taken must all be given, by commit. */
    refused(db, "INSERT INTO invoice_numbers VALUES (2031, 7)",
            "numbers 1 to 7 of 2031 are not all given");
}

/* ---- finalization, concurrent ---- */

struct fin_arg {
    const char *conninfo;
    const char *accounts[4];
    int ok;
};

static void *
fin_thread(void *p)
{
    struct fin_arg *a = p;
    struct meter_err e = {{0}};
    PGconn *db = meter_db_connect(a->conninfo, &e);
    for (int i = 0; db && i < 4 && a->accounts[i]; i++) {
        struct billing_outcome o;
        if (billing_run_one(db, a->accounts[i], 2026, 1, true, "Seller", &o,
                            &e) == METER_DB_ROWS &&
            o.number[0])
            a->ok++;
        else
            fprintf(stderr, "finalize %s: %s\n", a->accounts[i], e.msg);
    }
    PQfinish(db);
    return NULL;
}

/* Two batches that share accounts, finalized from two connections at
 * once. */
struct batch_arg {
    const char *conninfo;
    const char *const *accounts;
    size_t n;
    int finals, already, failed;
};

static void *
batch_thread(void *p)
{
    struct batch_arg *a = p;
    struct meter_err e = {{0}};
    struct billing_outcome out[8];
    PGconn *db = meter_db_connect(a->conninfo, &e);
    if (db && billing_run(db, NULL, a->accounts, a->n, 2026, 1, true, "Seller",
                          out, &e) == METER_DB_ROWS) {
        for (size_t i = 0; i < a->n; i++) {
            a->finals += out[i].written && out[i].number[0];
            a->already += out[i].already_final;
            a->failed += out[i].failed;
        }
    } else {
        fprintf(stderr, "batch: %s\n", e.msg);
        a->failed = (int)a->n;
    }
    PQfinish(db);
    return NULL;
}

static void
test_finalize_batches(PGconn *db, struct testdb *t, struct meter_registry *reg)
{
    static const char *const ids[] = {"f1", "f2", "f3", "f4", "f5",
                                      "f6", "f7", "f8", "f9"};
    for (int i = 0; i < 9; i++) {
        testdb_account_add(db, ids[i], "book-s", "2026-01-01");
        run(db, reg, ids[i], ids[i], JAN + 100 * i, 10);
    }
    long before = testdb_count(db, "SELECT count(*) FROM invoices"
                                   " WHERE status = 'final'");
    /* f4-f6 in both, locked by whichever batch comes first. */
    for (int round = 0; round < 2; round++) {
        struct batch_arg a = {t->conninfo, ids, 6, 0, 0, 0},
                         b = {t->conninfo, ids + 3, 6, 0, 0, 0};
        pthread_t ta, tb;
        pthread_create(&ta, NULL, batch_thread, &a);
        pthread_create(&tb, NULL, batch_thread, &b);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        CHECK(a.failed == 0 && b.failed == 0);
        /* The first round finalizes each account once; the second
         * finds them all final. */
        CHECK(a.finals + b.finals == (round == 0 ? 9 : 0));
        CHECK(a.already + b.already == (round == 0 ? 3 : 12));
    }
    CHECK(testdb_count(db, "SELECT count(*) FROM invoices"
                           " WHERE status = 'final'") == before + 9);
    CHECK(testdb_count(db, "SELECT count(*) FROM (SELECT account_id FROM"
                           " invoices WHERE account_id LIKE 'f_'"
                           " AND status = 'final' GROUP BY account_id"
                           " HAVING count(*) = 1) x") == 9);
    /* The year's numbers: each once, none left out. */
    CHECK(testdb_count(db, "SELECT count(DISTINCT number) FROM invoices"
                           " WHERE number LIKE to_char(now() AT TIME ZONE"
                           " 'UTC', 'YYYY') || '-%'") ==
          testdb_count(db, "SELECT max(substr(number, 6)::int) FROM invoices"
                           " WHERE number LIKE to_char(now() AT TIME ZONE"
                           " 'UTC', 'YYYY') || '-%'"));
}

static void
test_finalize(PGconn *db, struct testdb *t, struct meter_registry *reg)
{
    /* Eight accounts finalized from four connections at once. */
    static const char *ids[] = {"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"};
    for (int i = 0; i < 8; i++) {
        testdb_account_add(db, ids[i], "book-s", "2026-01-01");
        run(db, reg, ids[i], ids[i], JAN + 100 * i, 10);
    }
    struct fin_arg args[4] = {
        {t->conninfo, {"c1", "c5", "acme", NULL}, 0},
        {t->conninfo, {"c2", "c6", "beta", NULL}, 0},
        {t->conninfo, {"c3", "c7", "gamma", NULL}, 0},
        {t->conninfo, {"c4", "c8", NULL, NULL}, 0},
    };
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, fin_thread, &args[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CHECK(args[0].ok + args[1].ok + args[2].ok + args[3].ok == 11);
    /* Numbers 1..11 of this year, each once: no gap, no repeat. */
    CHECK(testdb_count(db, "SELECT count(DISTINCT number) FROM invoices"
                           " WHERE status = 'final'") == 11);
    CHECK(testdb_count(db, "SELECT max(substr(number, 6)::int) FROM invoices"
                           " WHERE number LIKE to_char(now() AT TIME ZONE "
                           "'UTC', 'YYYY') || '-%'") == 11);
    CHECK(testdb_count(db, "SELECT count(*) FROM invoices"
                           " WHERE status = 'draft'") == 0);

    /* Finalizing again creates nothing. */
    struct billing_outcome o = invoice(db, "acme", 2026, 1, true);
    CHECK(!o.written && o.already_final && o.number[0]);
    CHECK(testdb_count(db, "SELECT count(*) FROM invoices") == 11);
    char number[16];
    snprintf(number, sizeof(number), "%s", o.number);

    /* A period that has not ended cannot be finalized. */
    struct meter_err e = {{0}};
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    CHECK(billing_run_one(db, "acme", tm.tm_year + 1900, tm.tm_mon + 1, true,
                          "S", &o, &e) == METER_DB_HARD);
    CHECK(strstr(e.msg, "has not ended") != NULL);

    /* The stored hash is the document's. */
    struct report_invoice inv = get(db, number);
    char hex[65];
    CHECK(report_invoice_hash(&inv, hex, &e) == 0);
    CHECK_STR(hex, inv.sha256);
    CHECK_STR(inv.status, "final");
    report_invoice_release(&inv);

    /* PostgreSQL refuses every change to final documents, whoever asks. */
    refused(db, "UPDATE invoices SET total = 0 WHERE status = 'final'",
            "is final and never changes");
    refused(db, "DELETE FROM invoices WHERE status = 'final'",
            "is final and never changes");
    refused(db, "UPDATE invoice_lines SET amount = 0", "never change");
    refused(db, "DELETE FROM invoice_lines", "never change");
    refused(db,
            "INSERT INTO invoice_lines (account_id, invoice_id, line_no, kind,"
            " period, description, amount) SELECT account_id, invoice_id, 99,"
            " 'cpu', period, 'x', 1 FROM invoices WHERE status = 'final'"
            " LIMIT 1",
            "never change");
    refused(db, "UPDATE invoice_usage SET samples = 0", "never change");
    refused(db, "TRUNCATE invoices CASCADE", "never truncated");
    refused(db, "UPDATE invoice_numbers SET last = last + 2",
            "are not all given");
    refused(db, "UPDATE invoice_numbers SET last = last - 1",
            "only ever advance");
    refused(db, "DELETE FROM invoice_numbers", "only ever advance");
    /* The books of an invoiced period are settled. */
    refused(db,
            "UPDATE account_price_books SET version = 1 WHERE account_id ="
            " 'acme'",
            "settled");
    refused(db,
            "INSERT INTO account_price_books (account_id, valid_from,"
            " price_book_id, version) VALUES ('acme', '2026-01-20', 'book-b',"
            " 1)",
            "settled");
    refused(db,
            "UPDATE account_price_books SET account_id = 'nobook' WHERE"
            " account_id = 'acme'",
            "settled");
}

/* ---- late usage, voiding ---- */

/* The invariant for acme's periods: billed = a fresh rating. */
static void
check_all_billed(PGconn *db, int months)
{
    char a[48], b[48];
    for (int m = 1; m <= months; m++) {
        struct pricing_dec x = billed(db, "acme", 2026, m);
        struct pricing_dec y = fresh(db, "acme", 2026, m, books[0]);
        if (pricing_dec_cmp(x, y) != 0) {
            fprintf(stderr, "2026-%02d: billed %s, fresh rating %s\n", m,
                    testdb_dec(x, a), testdb_dec(y, b));
            test_failures++;
        }
    }
}

static void
test_late(PGconn *db, struct meter_registry *reg)
{
    char a[48];
    /* Late: 60 s more in January, after it is final. */
    run(db, reg, "acme", "acme-3", JAN + 7 * DAY, 60);
    run(db, reg, "acme", "acme-4", FEB + 10, 60);
    struct billing_outcome o = invoice(db, "acme", 2026, 2, true);
    CHECK(o.written && o.number[0]);
    struct report_invoice feb = get(db, o.number);
    /* February's own: 60 s and a run; January's late: 60 s and a run. */
    CHECK_STR(testdb_dec(sum_lines(&feb, "cpu", 2026, 2), a), "0.060000");
    CHECK_STR(testdb_dec(sum_lines(&feb, "late_usage", 2026, 1), a),
              "0.560000");
    CHECK(feb.nlines == 4);
    if (feb.nlines == 4) {
        CHECK_STR(feb.lines[2].kind, "late_usage");
        CHECK_STR(feb.lines[2].corrects, "cpu");
        CHECK_STR(feb.lines[3].corrects, "runs");
        CHECK(feb.lines[2].year == 2026 && feb.lines[2].month == 1);
    }
    CHECK_STR(testdb_dec(feb.total, a), "1.120000");
    report_invoice_release(&feb);
    check_all_billed(db, 2);

    /* Late in January again and in February: March carries both (three
     * periods on one invoice). A late second joining a segment changes
     * its padding: 90 s + the next 30 s is one 120 s segment. */
    run(db, reg, "acme", "acme-1", JAN + 1090, 30);
    run(db, reg, "acme", "acme-4", FEB + 70, 5);
    run(db, reg, "acme", "acme-5", MAR + 10, 60);
    run(db, reg, "acme", "acme-mv", MAR + 5000, 60);
    o = invoice(db, "acme", 2026, 3, true);
    struct report_invoice mar = get(db, o.number);
    CHECK_STR(testdb_dec(sum_lines(&mar, "late_usage", 2026, 1), a),
              "0.000000");
    CHECK_STR(testdb_dec(sum_lines(&mar, "late_usage", 2026, 2), a),
              "0.060000");
    report_invoice_release(&mar);
    check_all_billed(db, 3);

    /* Nothing new: April has no late lines. */
    o = invoice(db, "acme", 2026, 4, true);
    struct report_invoice apr = get(db, o.number);
    CHECK(apr.nlines == 0);
    report_invoice_release(&apr);

    /* A late February second of acme-mv moves its first run from March
     * (final) to February (final): May takes the run back from March
     * (whose stored seconds did not change) and bills it in February. */
    run(db, reg, "acme", "acme-mv", FEB + 20000, 1);
    o = invoice(db, "acme", 2026, 5, true);
    struct report_invoice may = get(db, o.number);
    CHECK_STR(testdb_dec(sum_lines(&may, "late_usage", 2026, 3), a),
              "-0.500000");
    CHECK_STR(testdb_dec(sum_lines(&may, "late_usage", 2026, 2), a),
              "0.560000");
    report_invoice_release(&may);
    check_all_billed(db, 5);

    /* Voiding February, which carried January's late usage: the
     * corrected February bills it again (the void took it back). */
    struct meter_err ve = {{0}};
    char feb_no[16], feb_cn[16];
    PGresult *fr = PQexec(db, "SELECT number FROM invoices WHERE account_id ="
                              " 'acme' AND period = '2026-02-01'");
    snprintf(feb_no, sizeof(feb_no), "%s", PQgetvalue(fr, 0, 0));
    PQclear(fr);
    CHECK(billing_void(db, feb_no, "resend", feb_cn, &ve) == METER_DB_ROWS);
    o = invoice(db, "acme", 2026, 2, true);
    CHECK(o.written && o.number[0]);
    struct report_invoice feb2 = get(db, o.number);
    CHECK_STR(testdb_dec(sum_lines(&feb2, "late_usage", 2026, 1), a),
              "0.560000");
    report_invoice_release(&feb2);
    check_all_billed(db, 5);

    /* Void January: a credit note; January shows as void. */
    struct meter_err e = {{0}};
    char jan[16], credit[16];
    PGresult *r = PQexec(db, "SELECT number FROM invoices WHERE account_id ="
                             " 'acme' AND period = '2026-01-01'");
    snprintf(jan, sizeof(jan), "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    CHECK(billing_void(db, jan, "wrong address", credit, &e) == METER_DB_ROWS);
    CHECK(billing_void(db, jan, "again", credit, &e) < 0);
    CHECK(strstr(e.msg, "is void: only a final invoice can be voided") != NULL);
    struct report_invoice v = get(db, jan), cn = get(db, credit);
    CHECK_STR(v.status, "void");
    CHECK_STR(v.voided_by, credit);
    CHECK_STR(cn.kind, "credit_note");
    CHECK_STR(cn.voids, jan);
    CHECK(cn.total.v == -v.total.v && cn.nlines == v.nlines);
    report_invoice_release(&v);
    report_invoice_release(&cn);

    /* The corrected January: its own lines, less what February and
     * March already billed of it, so that nothing is billed twice. */
    o = invoice(db, "acme", 2026, 1, true);
    CHECK(o.written && o.number[0]);
    struct report_invoice fix = get(db, o.number);
    CHECK(sum_lines(&fix, "late_usage", 2026, 1).v < 0);
    report_invoice_release(&fix);
    check_all_billed(db, 5);
}

/* Closing a month rewrites an account's blocks in (sandbox, minute)
 * order and changes nothing else: the same ratings, the same number of
 * blocks, and a stored second is still a duplicate. */
static void
test_compact(PGconn *db, struct meter_registry *reg)
{
    struct meter_err e = {{0}};
    struct pricing_dec before[6];
    for (int m = 1; m <= 5; m++)
        before[m] = fresh(db, "acme", 2026, m, books[0]);
    long blocks = testdb_count(db, "SELECT count(*) FROM usage_blocks");
    struct meter_strtab accounts = {0};
    CHECK(meter_db_usage_accounts(db, 2026, 1, &accounts, &e) >= 0);
    CHECK(meter_strtab_find(&accounts, "acme") >= 0);
    CHECK(meter_strtab_find(&accounts, "nobook") < 0);
    meter_strtab_release(&accounts);
    uint64_t rows, total = 0;
    for (int m = 1; m <= 5; m++) {
        CHECK(meter_db_usage_compact(db, "acme", 2026, m, &rows, &e) >= 0);
        CHECK(meter_db_usage_vacuum(db, 2026, m, &e) >= 0);
        total += rows;
    }
    CHECK(total > 0);
    CHECK(testdb_count(db, "SELECT count(*) FROM usage_blocks") == blocks);
    /* acme's January, physically in (sandbox, minute) order. */
    CHECK(testdb_count(db,
                       "SELECT count(*) FROM (SELECT row_number() OVER (ORDER"
                       " BY ctid) a, row_number() OVER (ORDER BY sandbox_pk,"
                       " minute, ctid) b FROM usage_blocks_202601 WHERE"
                       " account_pk = (SELECT account_pk FROM accounts WHERE"
                       " account_id = 'acme')) x WHERE a <> b") == 0);
    for (int m = 1; m <= 5; m++) {
        struct pricing_dec after = fresh(db, "acme", 2026, m, books[0]);
        CHECK(pricing_dec_cmp(after, before[m]) == 0);
    }
    struct meter_sample s = {.s = {JAN + 1000, 10000, 10000, 0, 0, 0, 0}};
    snprintf(s.account_id, sizeof(s.account_id), "acme");
    snprintf(s.sandbox_id, sizeof(s.sandbox_id), "acme-1");
    struct meter_ingest_result res;
    struct meter_problems probs = {0};
    struct meter_ingest_origin o = {.now_us = NOW_US};
    CHECK(meter_ingest(db, reg, &s, 1, &o, &res, &probs, &e) ==
          METER_INGEST_OK);
    CHECK(res.accepted == 0 && res.duplicates == 1);
}

/* A period cut by a new version of the same book gets its credits once,
 * shared by the parts' days, as its subscription is. */
static void
test_credit_parts(PGconn *db, struct meter_registry *reg)
{
    char a[48];
    static const char v1[] =
        "{\"id\": \"book-p\", \"currency\": \"USD\", \"effective_from\": "
        "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"1\", "
        "\"per\": \"second\"}, \"memory\": null, \"storage\": null, "
        "\"egress\": null, \"per_run\": \"0\", \"promotional_credit\": \"10\"}";
    static const char v2[] =
        "{\"id\": \"book-p\", \"currency\": \"USD\", \"effective_from\": "
        "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"2\", "
        "\"per\": \"second\"}, \"memory\": null, \"storage\": null, "
        "\"egress\": null, \"per_run\": \"0\", \"promotional_credit\": \"10\"}";
    struct pricing_err pe = {{0}};
    struct meter_err e = {{0}};
    int version;
    struct pricing_book *b1 = pricing_book_parse(v1, strlen(v1), "v1", &pe);
    struct pricing_book *b2 = pricing_book_parse(v2, strlen(v2), "v2", &pe);
    CHECK(meter_db_book_add(db, b1, v1, &version, &e) == METER_DB_ROWS);
    testdb_account_add(db, "delta", "book-p", "2026-01-01");
    CHECK(meter_db_book_add(db, b2, v2, &version, &e) == METER_DB_ROWS);
    CHECK(version == 2);
    testdb_account_add(db, "delta", "book-p", "2026-01-16");
    run(db, reg, "delta", "delta-1", JAN + DAY, 100);
    run(db, reg, "delta", "delta-2", JAN + 20 * DAY, 100);
    struct billing_outcome o = invoice(db, "delta", 2026, 1, false);
    char ref[24];
    snprintf(ref, sizeof(ref), "%" PRId64, o.id);
    struct report_invoice inv = get(db, ref);
    /* 10 x 15/31 + 10 x 16/31, each rounded: 4.838710 + 5.161290. */
    CHECK_STR(testdb_dec(sum_lines(&inv, "promotional_credit", 2026, 1), a),
              "-10.000000");
    CHECK(inv.nlines == 4);
    if (inv.nlines == 4) {
        CHECK(inv.lines[0].version == 1 && inv.lines[2].version == 2);
        CHECK_STR(testdb_dec(inv.lines[1].amount, a), "-4.838710");
        CHECK_STR(testdb_dec(inv.lines[3].amount, a), "-5.161290");
    }
    CHECK_STR(testdb_dec(inv.total, a), "290.000000");
    report_invoice_release(&inv);
    pricing_book_free(b1);
    pricing_book_free(b2);
}

/* The credit_grant line of grant id in inv, or NULL. */
static const struct report_line *
grant_line(const struct report_invoice *inv, const char *id)
{
    for (size_t i = 0; i < inv->nlines; i++)
        if (strcmp(inv->lines[i].kind, "credit_grant") == 0 &&
            strcmp(inv->lines[i].grant, id) == 0)
            return &inv->lines[i];
    return NULL;
}

/* The invoice run's document for (acct, y, m) as a struct. */
static struct report_invoice
run_get(PGconn *db, const char *acct, int y, int m, bool final)
{
    struct billing_outcome o = invoice(db, acct, y, m, final);
    char ref[24];
    snprintf(ref, sizeof(ref), "%" PRId64, o.id);
    return get(db, ref);
}

/* Checks grant id's line of inv: its amount and the balance it shows. */
static void
check_grant(const struct report_invoice *inv, const char *id, const char *want,
            const char *left)
{
    char a[48], text[96];
    const struct report_line *l = grant_line(inv, id);
    if (!want) {
        CHECK(l == NULL);
        return;
    }
    CHECK(l != NULL);
    if (!l)
        return;
    CHECK_STR(testdb_dec(l->amount, a), want);
    snprintf(text, sizeof(text), "%s left", left);
    if (!strstr(l->description, text)) {
        fprintf(stderr, "grant line '%s' lacks '%s'\n", l->description, text);
        test_failures++;
    }
    CHECK(l->year == inv->year && l->month == inv->month && !l->book[0]);
}

struct grant_seen {
    int n;
    struct meter_grant last;
};

static void
grant_seen(const struct meter_grant *g, void *arg)
{
    struct grant_seen *s = arg;
    s->n++;
    s->last = *g;
}

/* Rules section 14 in the invoice run: book grants spent in order of
 * finalization, provisional in drafts, lost on expiry, never re-rated by
 * late usage, given back by voids; operator grants. */
static void
test_grants(PGconn *db, struct meter_registry *reg)
{
    char a[48];
    struct meter_err e = {{0}};
    /* gina: 1.000 in January, 2.000 in February, 3.000 in March, 1.000
     * in April, on book-g (a grant of 10 for January to March). */
    run(db, reg, "gina", "gina-1", JAN + 100, 1000);
    run(db, reg, "gina", "gina-2", FEB + 100, 2000);
    run(db, reg, "gina", "gina-3", MAR + 100, 3000);
    const int64_t apr = MAR + 31 * DAY;
    run(db, reg, "gina", "gina-4", apr + 100, 1000);

    /* A draft spends what final documents left: all 10 so far. */
    struct report_invoice d = run_get(db, "gina", 2026, 2, false);
    check_grant(&d, "book-g/welcome", "-2.000000", "8.000000");
    CHECK(d.lines[d.nlines - 1].kind[0] &&
          grant_line(&d, "book-g/welcome") == &d.lines[d.nlines - 1]);
    report_invoice_release(&d);
    /* February cannot be final before January. */
    struct billing_outcome o;
    CHECK(billing_run_one(db, "gina", 2026, 2, true, "S", &o, &e) < 0);
    CHECK(strstr(e.msg, "2026-01 has no final invoice") != NULL);

    struct report_invoice jan = run_get(db, "gina", 2026, 1, true);
    check_grant(&jan, "book-g/welcome", "-1.000000", "9.000000");
    CHECK_STR(testdb_dec(jan.total, a), "0.000000");
    struct report_invoice feb = run_get(db, "gina", 2026, 2, true);
    check_grant(&feb, "book-g/welcome", "-2.000000", "7.000000");
    struct report_invoice mar = run_get(db, "gina", 2026, 3, true);
    check_grant(&mar, "book-g/welcome", "-3.000000", "4.000000");
    /* April is past the grant's three periods: the 4 left are lost. */
    struct report_invoice april = run_get(db, "gina", 2026, 4, true);
    check_grant(&april, "book-g/welcome", NULL, NULL);
    CHECK_STR(testdb_dec(april.total, a), "1.000000");
    struct grant_seen seen = {0};
    CHECK(meter_db_grants_list(db, "gina", grant_seen, &seen, &e) >= 0);
    CHECK(seen.n == 1 && seen.last.from_book);
    CHECK_STR(seen.last.grant.id, "book-g/welcome");
    CHECK_STR(testdb_dec(seen.last.grant.balance, a), "4.000000");
    CHECK(seen.last.grant.received == pricing_period_index(2026, 1) &&
          seen.last.grant.expires_after == 3);

    /* Late usage in January (0.5 more): May bills it, and only the cpu
     * line: January's grant line is never rated again. */
    run(db, reg, "gina", "gina-1", JAN + 2000, 500);
    struct report_invoice may = run_get(db, "gina", 2026, 5, true);
    CHECK_STR(testdb_dec(sum_lines(&may, "late_usage", 2026, 1), a),
              "0.500000");
    for (size_t i = 0; i < may.nlines; i++)
        CHECK(strcmp(may.lines[i].corrects, "credit_grant") != 0);
    check_grant(&may, "book-g/welcome", NULL, NULL);
    CHECK_STR(testdb_dec(may.total, a), "0.500000");

    /* Voiding January gives its 1 back to the expired grant; the
     * corrected January, in the grant's window, spends it again: its
     * usage (1.5) less what May billed of it (0.5), paid by the grant. */
    char credit[16];
    CHECK(billing_void(db, jan.number, "wrong", credit, &e) >= 0);
    /* The credit note's grant line gives the 1 back; it shows no balance
     * (the invoice's line showed what was left then). */
    struct report_invoice note = get(db, credit);
    const struct report_line *gl = grant_line(&note, "book-g/welcome");
    CHECK(gl != NULL);
    if (gl) {
        CHECK_STR(testdb_dec(gl->amount, a), "1.000000");
        CHECK_STR(gl->description, "credit grant book-g/welcome, "
                                   "1.000000 returned");
    }
    report_invoice_release(&note);
    struct report_invoice jan2 = run_get(db, "gina", 2026, 1, true);
    CHECK(jan2.number[0] && strcmp(jan2.number, jan.number) != 0);
    check_grant(&jan2, "book-g/welcome", "-1.000000", "4.000000");
    CHECK_STR(testdb_dec(jan2.total, a), "0.000000");
    seen.n = 0;
    CHECK(meter_db_grants_list(db, "gina", grant_seen, &seen, &e) >= 0);
    CHECK_STR(testdb_dec(seen.last.grant.balance, a), "4.000000");
    /* Grant lines aside, what gina's documents bill for each period is a
     * fresh rating of it. */
    for (int m = 1; m <= 5; m++)
        billed_is_fresh(db, "gina", 2026, m, books[3], a);
    report_invoice_release(&jan);
    report_invoice_release(&feb);
    report_invoice_release(&mar);
    report_invoice_release(&april);
    report_invoice_release(&may);
    report_invoice_release(&jan2);

    /* rita: book-g in January, book-a in February, book-g again from
     * March: the grant is received once, in January. Voiding January
     * gives back to the grant still open. */
    run(db, reg, "rita", "rita-1", JAN + 100, 1000);
    jan = run_get(db, "rita", 2026, 1, true);
    check_grant(&jan, "book-g/welcome", "-1.000000", "9.000000");
    CHECK(billing_void(db, jan.number, "wrong", credit, &e) >= 0);
    jan2 = run_get(db, "rita", 2026, 1, true);
    check_grant(&jan2, "book-g/welcome", "-1.000000", "9.000000");
    seen.n = 0;
    CHECK(meter_db_grants_list(db, "rita", grant_seen, &seen, &e) >= 0);
    CHECK(seen.n == 1);
    CHECK(seen.last.grant.received == pricing_period_index(2026, 1));
    CHECK_STR(testdb_dec(seen.last.grant.balance, a), "9.000000");

    /* Operator grants: received in the month given, in the book's
     * currency; ids unique per account; grant-N when none is given. */
    char id[PRICING_ID_MAX + 1];
    const int64_t mar10 = MAR + 9 * DAY;
    CHECK(meter_db_grant_add(db, "rita", "2.5", 1, NULL, mar10, id, &e) ==
          METER_DB_ROWS);
    CHECK_STR(id, "grant-1");
    CHECK(meter_db_grant_add(db, "rita", "1", 0, "grant-1", mar10, id, &e) < 0);
    CHECK(strstr(e.msg, "already has a grant 'grant-1'") != NULL);
    CHECK(meter_db_grant_add(db, "rita", "100", 0, NULL, mar10, id, &e) ==
          METER_DB_ROWS);
    CHECK_STR(id, "grant-2");
    CHECK(meter_db_grant_add(db, "nobook", "1", 0, NULL, mar10, id, &e) < 0);
    CHECK(strstr(e.msg, "no price book") != NULL);
    CHECK(meter_db_grant_add(db, "rita", "0", 0, NULL, mar10, id, &e) < 0);
    CHECK(strstr(e.msg, "amount '0'") != NULL);
    CHECK(meter_db_grant_add(db, "rita", "0.0000001", 0, NULL, mar10, id, &e) <
          0);
    CHECK(meter_db_grant_add(db, "rita", "1", 0, "no spaces", mar10, id, &e) <
          0);
    CHECK(meter_db_grant_add(db, "ghost", "1", 0, NULL, mar10, id, &e) < 0);
    CHECK(strstr(e.msg, "no account 'ghost'") != NULL);
    refused(db, "UPDATE credit_grants SET amount = 1000", "never changes");
    refused(db, "DELETE FROM credit_grants", "never changes");
    refused(db, "TRUNCATE credit_grants", "never truncated");

    /* March, 10.000 of usage: the book's grant and grant-1 both end
     * with March; the earlier received (January) pays first, 9; grant-1
     * pays the last 1; grant-2, never expiring, comes last and pays
     * nothing. February (book-a, no usage) is finalized first. */
    run(db, reg, "rita", "rita-3", MAR + 100, 10000);
    report_invoice_release(&jan);
    jan = run_get(db, "rita", 2026, 2, true);
    CHECK(jan.nlines == 0 && jan.number[0]);
    mar = run_get(db, "rita", 2026, 3, true);
    check_grant(&mar, "book-g/welcome", "-9.000000", "0.000000");
    check_grant(&mar, "grant-1", "-1.000000", "1.500000");
    check_grant(&mar, "grant-2", NULL, NULL);
    CHECK(mar.nlines == 3 && strcmp(mar.lines[1].grant, "book-g/welcome") == 0);
    CHECK_STR(testdb_dec(mar.total, a), "0.000000");
    seen.n = 0;
    CHECK(meter_db_grants_list(db, "rita", grant_seen, &seen, &e) >= 0);
    CHECK(seen.n == 3 && !seen.last.from_book);
    CHECK_STR(seen.last.grant.id, "grant-2");
    CHECK_STR(seen.last.grant.currency, "USD");
    CHECK(seen.last.grant.received == pricing_period_index(2026, 3) &&
          seen.last.grant.expires_after == 0);
    report_invoice_release(&jan);
    report_invoice_release(&jan2);
    report_invoice_release(&mar);

    /* mona: book-a, then book-g from January 16th: the grant lines come
     * once, after both parts, and pay both. book-a: 100 s billed 120 s
     * (0.12) and a run (0.5); book-g: 1.000. */
    run(db, reg, "mona", "mona-1", JAN + DAY, 100);
    run(db, reg, "mona", "mona-2", JAN + 19 * DAY, 1000);
    jan = run_get(db, "mona", 2026, 1, false);
    size_t grants = 0;
    for (size_t i = 0; i < jan.nlines; i++)
        grants += strcmp(jan.lines[i].kind, "credit_grant") == 0;
    CHECK(grants == 1 && jan.nlines == 4);
    CHECK(jan.nlines == 4 && strcmp(jan.lines[3].kind, "credit_grant") == 0);
    check_grant(&jan, "book-g/welcome", "-1.620000", "8.380000");
    report_invoice_release(&jan);

    /* vera: book-g version 1 in January, version 2 (a grant of 20 for
     * one period) from February: the grant stays as version 1 gave it. */
    struct pricing_err pe = {{0}};
    int version;
    char v2[sizeof(book_g) + 16];
    snprintf(v2, sizeof(v2), "%s", book_g);
    char *amt = strstr(v2, "\"10\""),
         *exp = strstr(v2, "\"expires_after_periods\": 3");
    CHECK(amt && exp);
    if (amt && exp) {
        memcpy(amt, "\"20\"", 4);
        exp[strlen("\"expires_after_periods\": ")] = '1';
    }
    struct pricing_book *g2 = pricing_book_parse(v2, strlen(v2), "v2", &pe);
    CHECK(g2 && meter_db_book_add(db, g2, v2, &version, &e) >= 0 &&
          version == 2);
    testdb_account_add(db, "vera", "book-g", "2026-02-01");
    seen.n = 0;
    CHECK(meter_db_grants_list(db, "vera", grant_seen, &seen, &e) >= 0);
    CHECK(seen.n == 1);
    CHECK_STR(testdb_dec(seen.last.grant.amount, a), "10.000000");
    CHECK(seen.last.grant.expires_after == 3 &&
          seen.last.grant.received == pricing_period_index(2026, 1));
    /* walt, on version 2 only, receives version 2's grant. */
    testdb_account_add(db, "walt", "book-g", "2026-02-01");
    seen.n = 0;
    CHECK(meter_db_grants_list(db, "walt", grant_seen, &seen, &e) >= 0);
    CHECK(seen.n == 1);
    CHECK_STR(testdb_dec(seen.last.grant.amount, a), "20.000000");
    CHECK(seen.last.grant.expires_after == 1 &&
          seen.last.grant.received == pricing_period_index(2026, 2));
    pricing_book_free(g2);
}

/* Creates a host key named name; its id. */
static int64_t
host_key(PGconn *db, const char *name)
{
    struct meter_err e = {{0}};
    char token[METER_TOKEN_LEN + 1];
    int64_t id = 0;
    CHECK(meter_db_key_create(db, METER_ROLE_HOST, NULL, name, NULL, token, &id,
                              &e) == METER_DB_ROWS);
    return id;
}

/* Rules section 9: a quarantine, then a resend of genuine samples into
 * the seconds it freed, leave as many seconds stored as before; the next
 * invoice rates the closed period again all the same. */
static void
test_quarantine_resend(PGconn *db, struct meter_registry *reg)
{
    char a[48];
    struct meter_err e = {{0}};
    int64_t leak = host_key(db, "leaked"), host = host_key(db, "genuine");
    /* A leaked key stores 600 s of 64 vCPUs in January, 10 s before them
     * (the sandbox's first running minute), and a sandbox of its own,
     * arriving on February 1st at 00:00:10. */
    const int64_t arrival = (FEB + 10) * 1000000;
    store(db, reg, "quin", "quin-1", JAN + 100, 10, 64 * PRICING_CPU_UNIT, 0,
          leak, arrival);
    store(db, reg, "quin", "quin-1", JAN + 1000, 600, 64 * PRICING_CPU_UNIT, 0,
          leak, arrival);
    store(db, reg, "quin", "quin-2", JAN + 5000, 60, PRICING_CPU_UNIT, 0, leak,
          arrival);
    /* 600 x 64 x 0.001 = 38.4, a minute of 64 vCPUs 3.84, a minute of 1
     * vCPU 0.06, and two runs. */
    struct report_invoice jan = run_get(db, "quin", 2026, 1, true);
    CHECK_STR(testdb_dec(jan.total, a), "43.300000");
    struct meter_quarantine q;
    if (meter_db_usage_quarantine(db, leak, FEB + 10, FEB + 11, "leaked", &q,
                                  &e) < 0) {
        fprintf(stderr, "quarantine: %s\n", e.msg);
        test_failures++;
    }
    CHECK(q.seconds == 670);
    /* The host resends the seconds of quin-1 as they were: 2 vCPUs. */
    store(db, reg, "quin", "quin-1", JAN + 1000, 600, 2 * PRICING_CPU_UNIT, 0,
          host, (FEB + 20) * 1000000);
    /* quin-1's first run is now the resent one's; quin-2 never ran. */
    PGresult *r = PQexec(db, "SELECT string_agg(sandbox_id || '=' ||"
                             " coalesce(first_running_minute::text, 'none'),"
                             " ' ' ORDER BY sandbox_id) FROM sandboxes"
                             " WHERE sandbox_id LIKE 'quin-%'");
    char want[96];
    snprintf(want, sizeof(want), "quin-1=%lld quin-2=none",
             (long long)(JAN + 1000) / 60);
    CHECK(PQresultStatus(r) == PGRES_TUPLES_OK);
    CHECK_STR(PQgetvalue(r, 0, 0), want);
    PQclear(r);
    /* February bills the difference: 600 x 2 x 0.001 = 1.2 and a run,
     * less 43.3. */
    struct report_invoice feb = run_get(db, "quin", 2026, 2, true);
    CHECK_STR(testdb_dec(sum_lines(&feb, "late_usage", 2026, 1), a),
              "-41.600000");
    CHECK_STR(billed_is_fresh(db, "quin", 2026, 1, books[0], a), "1.700000");
    /* Billed once: March finds nothing more to bill for January. */
    struct report_invoice mar = run_get(db, "quin", 2026, 3, true);
    CHECK(mar.nlines == 0);
    report_invoice_release(&jan);
    report_invoice_release(&feb);
    report_invoice_release(&mar);
}

/* Checks the other document of o: its currency and total; it as a struct
 * (released by the caller). */
static struct report_invoice
other_doc(PGconn *db, const struct billing_outcome *o, const char *currency,
          const char *total)
{
    char a[48], ref[24];
    CHECK(o->nother == 1);
    CHECK_STR(o->other[0].currency, currency);
    CHECK_STR(testdb_dec(o->other[0].total, a), total);
    snprintf(ref, sizeof(ref), "%" PRId64, o->other[0].id);
    return get(db, ref);
}

/* Rules section 9: late usage of a USD period after the account moved to
 * a EUR book is billed on an invoice of its own, in USD, for the current
 * period, paid by the USD grant; the account's other invoices go on. */
static void
test_late_currency(PGconn *db, struct meter_registry *reg)
{
    char a[48];
    struct meter_err e = {{0}};
    /* zed: book-a (USD) from January, book-e (EUR) from March. February:
     * 100 s billed 120 s (0.12) and a run (0.5), paid by a grant of 1 USD
     * received in February. */
    run(db, reg, "zed", "zed-1", FEB + 100, 100);
    char id[PRICING_ID_MAX + 1];
    CHECK(meter_db_grant_add(db, "zed", "1", 0, NULL, FEB + DAY, id, &e) ==
          METER_DB_ROWS);
    struct report_invoice d = run_get(db, "zed", 2026, 1, true);
    report_invoice_release(&d);
    d = run_get(db, "zed", 2026, 2, true);
    check_grant(&d, id, "-0.620000", "0.380000");
    report_invoice_release(&d);
    d = run_get(db, "zed", 2026, 3, true);
    CHECK_STR(d.currency, "EUR");
    report_invoice_release(&d);

    /* One late second, 2026-02-28T23:59:02Z, billed a minute: 0.06. */
    const int64_t late = MAR - 58;
    int64_t key = host_key(db, "zed-host");
    /* April's own usage, in euros: 100 s billed 120 s and a run. */
    const int64_t apr = MAR + 31 * DAY;
    run(db, reg, "zed", "zed-2", apr + 100, 100);
    store(db, reg, "zed", "zed-1", late, 1, PRICING_CPU_UNIT, 0, key,
          (MAR + 40 * DAY) * 1000000);
    struct billing_outcome o = invoice(db, "zed", 2026, 4, false);
    CHECK(o.written && !o.number[0]);
    CHECK_STR(o.currency, "EUR");
    CHECK_STR(testdb_dec(o.total, a), "0.620000");
    struct report_invoice usd = other_doc(db, &o, "USD", "0.000000");
    CHECK_STR(usd.currency, "USD");
    CHECK(usd.year == 2026 && usd.month == 4);
    CHECK(usd.nlines == 2);
    if (usd.nlines == 2) {
        CHECK_STR(usd.lines[0].kind, "late_usage");
        CHECK_STR(usd.lines[0].corrects, "cpu");
        CHECK(usd.lines[0].year == 2026 && usd.lines[0].month == 2);
        CHECK_STR(testdb_dec(usd.lines[0].amount, a), "0.060000");
    }
    check_grant(&usd, id, "-0.060000", "0.320000");
    report_invoice_release(&usd);
    /* The period's own invoice carries none of it. */
    char ref[24];
    snprintf(ref, sizeof(ref), "%" PRId64, o.id);
    d = get(db, ref);
    CHECK(d.nlines == 2);
    CHECK_STR(testdb_dec(sum_lines(&d, "late_usage", 2026, 2), a), "0.000000");
    CHECK(grant_line(&d, id) == NULL);
    CHECK_STR(d.currency, "EUR");
    report_invoice_release(&d);
    /* The account's estimate is the period's own draft. */
    json_t *rep = NULL;
    CHECK(meter_db_report_account(db, "zed", 2026, 4, &rep, &e) ==
          METER_DB_ROWS);
    json_t *est = json_object_get(rep, "estimate");
    CHECK(json_integer_value(json_object_get(est, "invoice_id")) == o.id);
    CHECK_STR(json_string_value(json_object_get(est, "currency")), "EUR");
    json_decref(rep);
    /* Run again, the same drafts, by id. */
    struct billing_outcome o2 = invoice(db, "zed", 2026, 4, false);
    CHECK(o2.id == o.id && o2.nother == 1 && o2.other[0].id == o.other[0].id);

    /* Quarantined, the late second leaves nothing to bill in USD: the
     * USD draft goes. Sent again, it comes back. */
    struct meter_quarantine q;
    CHECK(meter_db_usage_quarantine(db, key, MAR + 40 * DAY, MAR + 41 * DAY,
                                    "test", &q, &e) >= 0);
    CHECK(q.seconds == 1);
    o2 = invoice(db, "zed", 2026, 4, false);
    CHECK(o2.id == o.id && o2.nother == 0);
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM invoices WHERE account_id = 'zed'"
             " AND period = '2026-04-01' AND status = 'draft'");
    PGresult *r = PQexec(db, sql);
    CHECK(PQresultStatus(r) == PGRES_TUPLES_OK &&
          strcmp(PQgetvalue(r, 0, 0), "1") == 0);
    PQclear(r);
    store(db, reg, "zed", "zed-1", late, 1, PRICING_CPU_UNIT, 0, key,
          (MAR + 42 * DAY) * 1000000);

    /* Final: both numbered, in order; February is billed what a fresh
     * rating gives, and May finds nothing late. */
    o = invoice(db, "zed", 2026, 4, true);
    CHECK(o.number[0] && o.nother == 1 && o.other[0].number[0]);
    CHECK(strcmp(o.number, o.other[0].number) < 0);
    usd = other_doc(db, &o, "USD", "0.000000");
    CHECK_STR(usd.status, "final");
    CHECK(usd.nlines == 2);
    report_invoice_release(&usd);
    CHECK_STR(billed_is_fresh(db, "zed", 2026, 2, books[0], a), "0.680000");
    /* A late second of April, in euros, once April's invoices (its own,
     * and the USD one with a grant line of April) are final: May bills
     * it, and May alone. */
    run(db, reg, "zed", "zed-2", apr + 30 * DAY - 58, 1);
    o = invoice(db, "zed", 2026, 5, true);
    CHECK(o.number[0] && o.nother == 0);
    CHECK_STR(o.currency, "EUR");
    CHECK_STR(testdb_dec(o.total, a), "0.060000");
    /* The April invoice in EUR stands; the period is done. */
    o = invoice(db, "zed", 2026, 4, true);
    CHECK(o.already_final && !o.written);
}

/* Rules section 8: a period cut by a change of book rates each part as a
 * period of its own, so its monthly quantities (free_gb) start again.
 * fay: 1 GB free, then 1 a GB; 1 GB of egress in the first part, 1.5 GB
 * in the second. One allowance for the period would bill 1.5. */
static void
test_free_parts(PGconn *db, struct meter_registry *reg)
{
    char a[48];
    static const char v1[] =
        "{\"id\": \"book-f\", \"currency\": \"USD\", \"effective_from\": "
        "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0\", "
        "\"per\": \"second\"}, \"memory\": null, \"storage\": null, "
        "\"egress\": {\"rate\": \"1\", \"free_gb\": \"1\"}, \"per_run\": "
        "\"0\"}";
    static const char v2[] =
        "{\"id\": \"book-f\", \"currency\": \"USD\", \"effective_from\": "
        "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
        "\"0.000\", \"per\": \"second\"}, \"memory\": null, \"storage\": null, "
        "\"egress\": {\"rate\": \"1\", \"free_gb\": \"1\"}, \"per_run\": "
        "\"0\"}";
    struct pricing_book *b1 = testdb_book_add(db, v1);
    testdb_account_add(db, "fay", "book-f", "2026-01-01");
    struct pricing_book *b2 = testdb_book_add(db, v2);
    testdb_account_add(db, "fay", "book-f", "2026-01-16");
    /* 500 MB a second: 2 s on the 5th, 3 s on the 20th. */
    store(db, reg, "fay", "fay-1", JAN + 4 * DAY, 2, PRICING_CPU_UNIT,
          500000000, 0, 0);
    store(db, reg, "fay", "fay-2", JAN + 19 * DAY, 3, PRICING_CPU_UNIT,
          500000000, 0, 0);
    struct report_invoice inv = run_get(db, "fay", 2026, 1, false);
    CHECK(inv.nlines == 1);
    if (inv.nlines == 1) {
        CHECK_STR(inv.lines[0].kind, "egress");
        CHECK(inv.lines[0].version == 2);
        CHECK_STR(testdb_dec(inv.lines[0].amount, a), "0.500000");
    }
    CHECK_STR(testdb_dec(inv.total, a), "0.500000");
    report_invoice_release(&inv);
    pricing_book_free(b1);
    pricing_book_free(b2);
}

int
main(void)
{
    struct testdb t;
    PGconn *db = testdb_create_migrated(&t);
    books[0] = testdb_book_add(db, book_a);
    books[1] = testdb_book_add(db, book_b);
    books[2] = testdb_book_add(db, book_s);
    books[3] = testdb_book_add(db, book_g);
    books[4] = testdb_book_add(db, book_e);
    testdb_account_add(db, "acme", "book-a", "2026-01-01");
    testdb_account_add(db, "beta", "book-s", "2026-01-15");
    testdb_account_add(db, "gamma", "book-a", "2026-01-01");
    testdb_account_add(db, "gamma", "book-b", "2026-01-16");
    testdb_account_add(db, "nobook", NULL, NULL);
    testdb_account_add(db, "gina", "book-g", "2026-01-01");
    testdb_account_add(db, "rita", "book-g", "2026-01-01");
    testdb_account_add(db, "rita", "book-a", "2026-02-01");
    testdb_account_add(db, "rita", "book-g", "2026-03-01");
    testdb_account_add(db, "mona", "book-a", "2026-01-01");
    testdb_account_add(db, "mona", "book-g", "2026-01-16");
    testdb_account_add(db, "vera", "book-g", "2026-01-01");
    testdb_account_add(db, "quin", "book-a", "2026-01-01");
    testdb_account_add(db, "zed", "book-a", "2026-01-01");
    testdb_account_add(db, "zed", "book-e", "2026-03-01");
    struct meter_registry *reg = meter_registry_new();

    test_drafts(db, reg);
    test_finalize(db, &t, reg);
    test_finalize_batches(db, &t, reg);
    test_late(db, reg);
    test_credit_parts(db, reg);
    test_compact(db, reg);
    test_grants(db, reg);
    test_quarantine_resend(db, reg);
    test_late_currency(db, reg);
    test_free_parts(db, reg);

    meter_registry_free(reg);
    for (int k = 0; k < 5; k++)
        pricing_book_free(books[k]);
    testdb_drop(&t, db);
    return test_result();
}
