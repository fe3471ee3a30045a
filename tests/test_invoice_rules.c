/*
 * test_invoice_rules.c - rules of the invoice run that a slip in the
 * code could break unseen (issue 26), against a real PostgreSQL: late
 * usage of a period with two instance types (one late line per type), a
 * change of book at midnight (the first second of the new part on the
 * new book), the minimum commit of an account that starts mid-period
 * (prorated by its days), and a credit note that negates quantities as
 * well as amounts. Every expected value is computed by hand beside it.
 */
#include <stdlib.h>
#include <string.h>

#include "meter_db.h"
#include "testdb.h"

#define JAN 1767225600LL /* 2026-01-01T00:00:00Z */
#define DAY 86400LL
#define MID (JAN + 15 * DAY) /* 2026-01-16T00:00:00Z */
#define GIB (1ULL << 30)

/* 1 per vCPU-second, 0.5 a run; granularity 1 s. */
static const char book_x[] =
    "{\"id\": \"book-x\", \"currency\": \"USD\", \"effective_from\": "
    "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"1\", "
    "\"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": "
    "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": null, "
    "\"egress\": null, \"per_run\": \"0.5\"}";
/* 2 per vCPU-second, runs free. */
static const char book_y[] =
    "{\"id\": \"book-y\", \"currency\": \"USD\", \"effective_from\": "
    "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"2\", "
    "\"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": "
    "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": null, "
    "\"egress\": null, \"per_run\": \"0\"}";
/* Instance types only: small (2 vCPU, 4 GiB) 0.002 a second, tiny (1
 * vCPU, 2 GiB) 0.001 a second. */
static const char book_i[] =
    "{\"id\": \"book-i\", \"currency\": \"USD\", \"effective_from\": "
    "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"0\", "
    "\"per\": \"second\"}, \"memory\": {\"basis\": \"allocated\", \"unit\": "
    "\"GiB\", \"rate\": \"0\", \"per\": \"second\"}, \"storage\": null, "
    "\"egress\": null, \"per_run\": \"0\", \"instances\": {\"unit\": \"GiB\", "
    "\"types\": [{\"name\": \"small\", \"vcpu\": \"2\", \"memory\": \"4\", "
    "\"rate\": \"0.002\", \"per\": \"second\"}, {\"name\": \"tiny\", "
    "\"vcpu\": \"1\", \"memory\": \"2\", \"rate\": \"0.001\", \"per\": "
    "\"second\"}]}}";

/* 1 per vCPU-second and a minimum commit of 31 a month. */
static const char book_m[] =
    "{\"id\": \"book-m\", \"currency\": \"USD\", \"effective_from\": "
    "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": \"1\", "
    "\"per\": \"second\"}, \"memory\": null, \"storage\": null, "
    "\"egress\": null, \"per_run\": \"0\", \"minimum_commit\": \"31\"}";

static const struct pricing_second one_vcpu = {0, 10000, 10000, 0, 0, 0, 0};
static const struct pricing_second small = {0,       20000, 10000, 4 * GIB,
                                            4 * GIB, 0,     0};
static const struct pricing_second tiny = {0,       10000, 10000, 2 * GIB,
                                           2 * GIB, 0,     0};

/* How many lines of inv are of kind for the period (y, m). */
static size_t
count_lines(const struct report_invoice *inv, const char *kind, int y, int m)
{
    size_t n = 0;
    for (size_t i = 0; i < inv->nlines; i++)
        n += strcmp(inv->lines[i].kind, kind) == 0 && inv->lines[i].year == y &&
             inv->lines[i].month == m;
    return n;
}

/* The line of inv of kind whose book (book != NULL) or instance type
 * (instance != NULL) is the one given, or NULL. */
static const struct report_line *
find_line(const struct report_invoice *inv, const char *kind, const char *book,
          const char *instance)
{
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct report_line *l = &inv->lines[i];
        if (strcmp(l->kind, kind) == 0 &&
            (!book || strcmp(l->book, book) == 0) &&
            (!instance || strcmp(l->instance, instance) == 0))
            return l;
    }
    return NULL;
}

/* The amount of find_line's line, or "-" if there is none. */
static const char *
line_amount(const struct report_invoice *inv, const char *kind,
            const char *book, const char *instance, char buf[48])
{
    const struct report_line *l = find_line(inv, kind, book, instance);
    return l ? testdb_dec(l->amount, buf) : "-";
}

/* Late usage of a period with two instance types (rules section 15: a
 * late_usage difference matches lines by kind, book and instance type):
 * one late line per type, never merged. */
static void
test_late_instances(PGconn *db, struct meter_registry *reg)
{
    char a[48];
    testdb_account_add(db, "ivan", "book-i", "2026-01-01");
    /* January: small 100 s x 0.002 = 0.2; tiny 100 s x 0.001 = 0.1. */
    testdb_store(db, reg, "ivan", "iv-s", &small, JAN + 100, 100);
    testdb_store(db, reg, "ivan", "iv-t", &tiny, JAN + 1000, 100);
    struct report_invoice jan = testdb_invoice_run(db, "ivan", 2026, 1, true);
    CHECK(jan.number[0] && jan.nlines == 2);
    CHECK_STR(line_amount(&jan, "instance", NULL, "small", a), "0.200000");
    CHECK_STR(line_amount(&jan, "instance", NULL, "tiny", a), "0.100000");

    /* Late, both types: small 50 s (0.1), tiny 30 s (0.03). February
     * carries two late lines, not one of 0.13. */
    testdb_store(db, reg, "ivan", "iv-s", &small, JAN + 5000, 50);
    testdb_store(db, reg, "ivan", "iv-t", &tiny, JAN + 6000, 30);
    struct report_invoice feb = testdb_invoice_run(db, "ivan", 2026, 2, true);
    CHECK(count_lines(&feb, "late_usage", 2026, 1) == 2);
    const struct report_line *ls = find_line(&feb, "late_usage", NULL, "small");
    const struct report_line *lt = find_line(&feb, "late_usage", NULL, "tiny");
    CHECK(ls && lt);
    if (ls && lt) {
        CHECK_STR(ls->corrects, "instance");
        CHECK_STR(lt->corrects, "instance");
        CHECK_STR(testdb_dec(ls->amount, a), "0.100000");
        CHECK_STR(testdb_dec(lt->amount, a), "0.030000");
        /* 50 and 30 seconds of the type, shown in hours: 50 / 3,600 =
         * 0.0138888... and 30 / 3,600 = 0.0083333... */
        CHECK(ls->has_quantity && lt->has_quantity);
        CHECK_STR(testdb_dec(ls->quantity, a), "0.013889");
        CHECK_STR(testdb_dec(lt->quantity, a), "0.008333");
    }
    CHECK_STR(testdb_dec(feb.total, a), "0.130000");

    /* Late, one type only: tiny 10 s (0.01). March carries one line,
     * tiny's; small's difference is zero and left out. */
    testdb_store(db, reg, "ivan", "iv-t", &tiny, JAN + 7000, 10);
    struct report_invoice mar = testdb_invoice_run(db, "ivan", 2026, 3, true);
    CHECK(count_lines(&mar, "late_usage", 2026, 1) == 1);
    CHECK_STR(line_amount(&mar, "late_usage", NULL, "tiny", a), "0.010000");
    CHECK_STR(line_amount(&mar, "late_usage", NULL, "small", a), "-");
    report_invoice_release(&jan);
    report_invoice_release(&feb);
    report_invoice_release(&mar);
}

/* A change of book at midnight: book-x until January 15th, book-y from
 * the 16th. The last second before midnight is rated on book-x (1 x 1),
 * the first of the new part on book-y (1 x 2). Each account's sandbox
 * first runs in the part of its first second (0.5 a run on book-x, free
 * on book-y). */
static void
test_book_change_at_midnight(PGconn *db, struct meter_registry *reg)
{
    static const struct {
        const char *account;
        int64_t from; /* seconds from midnight */
        size_t n;
        const char *cpu_x, *cpu_y;
    } cases[] = {
        {"mid-a", -1, 1, "1.000000", "-"}, /* 23:59:59 */
        {"mid-b", 0, 1, "-", "2.000000"},  /* 00:00:00 */
        {"mid-c", -1, 2, "1.000000", "2.000000"},
        {"mid-d", 1, 1, "-", "2.000000"}, /* 00:00:01 */
    };
    char a[48];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        testdb_account_add(db, cases[i].account, "book-x", "2026-01-01");
        testdb_account_add(db, cases[i].account, "book-y", "2026-01-16");
        testdb_store(db, reg, cases[i].account, cases[i].account, &one_vcpu,
                     MID + cases[i].from, cases[i].n);
        struct report_invoice inv =
            testdb_invoice_run(db, cases[i].account, 2026, 1, false);
        const char *x = line_amount(&inv, "cpu", "book-x", NULL, a);
        if (strcmp(x, cases[i].cpu_x) != 0) {
            fprintf(stderr, "%s: cpu on book-x %s, want %s\n", cases[i].account,
                    x, cases[i].cpu_x);
            test_failures++;
        }
        const char *y = line_amount(&inv, "cpu", "book-y", NULL, a);
        if (strcmp(y, cases[i].cpu_y) != 0) {
            fprintf(stderr, "%s: cpu on book-y %s, want %s\n", cases[i].account,
                    y, cases[i].cpu_y);
            test_failures++;
        }
        report_invoice_release(&inv);
    }
}

/* The minimum commit of an account whose book starts mid-period is
 * prorated by its days on the book (rules section 8): minimum_commit x
 * active days / 31, less the usage. */
static void
test_commit_mid_period(PGconn *db, struct meter_registry *reg)
{
    static const struct {
        const char *account, *from;
        size_t seconds; /* of 1 vCPU on January 20th */
        const char *commit;
    } cases[] = {
        /* from the 15th: 17 days, 31 x 17 / 31 = 17, less 3: 14 */
        {"mia", "2026-01-15", 3, "14.000000"},
        /* from the 1st: the whole month, 31 - 3 = 28 */
        {"mio", "2026-01-01", 3, "28.000000"},
        /* from the 31st, no usage: 31 x 1 / 31 = 1 */
        {"miz", "2026-01-31", 0, "1.000000"},
        /* from the 15th with 17 of usage: 17 - 17 = 0, no line */
        {"mie", "2026-01-15", 17, "-"},
    };
    char a[48];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        testdb_account_add(db, cases[i].account, "book-m", cases[i].from);
        if (cases[i].seconds)
            testdb_store(db, reg, cases[i].account, cases[i].account, &one_vcpu,
                         JAN + 19 * DAY, cases[i].seconds);
        struct report_invoice inv =
            testdb_invoice_run(db, cases[i].account, 2026, 1, false);
        const char *got = line_amount(&inv, "minimum_commit", NULL, NULL, a);
        if (strcmp(got, cases[i].commit) != 0) {
            fprintf(stderr, "%s from %s: minimum commit %s, want %s\n",
                    cases[i].account, cases[i].from, got, cases[i].commit);
            test_failures++;
        }
        report_invoice_release(&inv);
    }
}

/* Voiding: the credit note's lines are the invoice's negated, quantities
 * as well as amounts. cnote: 100 s of 2 vCPU on book-x, cpu 200
 * vCPU-seconds at 1 = 200, one run at 0.5. */
static void
test_credit_note_quantities(PGconn *db, struct meter_registry *reg)
{
    char a[48], b[48];
    struct meter_err e = {{0}};
    const struct pricing_second two = {0, 20000, 20000, 0, 0, 0, 0};
    testdb_account_add(db, "cnote", "book-x", "2026-01-01");
    testdb_store(db, reg, "cnote", "cn-1", &two, JAN + 100, 100);
    struct report_invoice inv = testdb_invoice_run(db, "cnote", 2026, 1, true);
    CHECK(inv.number[0] && inv.nlines == 2);
    char credit[16] = "";
    CHECK(billing_void(db, inv.number, "test", credit, &e) == METER_DB_ROWS);
    struct report_invoice cn;
    memset(&cn, 0, sizeof(cn));
    CHECK(meter_db_invoice_get(db, credit, NULL, &cn, &e) == METER_DB_ROWS);
    CHECK_STR(cn.kind, "credit_note");
    CHECK(cn.nlines == inv.nlines);
    static const struct {
        const char *kind, *quantity, *amount;
    } want[] = {
        {"cpu", "-200.000000", "-200.000000"},
        {"runs", "-1.000000", "-0.500000"},
    };
    for (size_t i = 0; i < cn.nlines && i < 2; i++) {
        const struct report_line *l = &cn.lines[i], *o = &inv.lines[i];
        CHECK_STR(l->kind, want[i].kind);
        CHECK(l->has_quantity && o->has_quantity);
        testdb_dec(l->quantity, a);
        testdb_dec(l->amount, b);
        if (strcmp(a, want[i].quantity) != 0 ||
            strcmp(b, want[i].amount) != 0) {
            fprintf(stderr,
                    "credit note %s line: quantity %s amount %s, "
                    "want %s and %s\n",
                    l->kind, a, b, want[i].quantity, want[i].amount);
            test_failures++;
        }
        /* The invoice's own: the same, positive. */
        CHECK(o->quantity.v == -l->quantity.v && o->amount.v == -l->amount.v);
        CHECK(o->quantity.v > 0 && o->amount.v > 0);
        /* Unit and unit price are not negated. */
        CHECK_STR(l->unit, o->unit);
        CHECK(l->unit_price.v == o->unit_price.v && l->unit_price.v > 0);
    }
    report_invoice_release(&inv);
    report_invoice_release(&cn);
}

int
main(void)
{
    struct testdb t;
    PGconn *db = testdb_create_migrated(&t);
    const char *texts[] = {book_x, book_y, book_i, book_m};
    struct pricing_book *books[4];
    for (int k = 0; k < 4; k++)
        books[k] = testdb_book_add(db, texts[k]);
    struct meter_registry *reg = meter_registry_new();

    test_late_instances(db, reg);
    test_book_change_at_midnight(db, reg);
    test_commit_mid_period(db, reg);
    test_credit_note_quantities(db, reg);

    meter_registry_free(reg);
    for (int k = 0; k < 4; k++)
        pricing_book_free(books[k]);
    testdb_drop(&t, db);
    return test_result();
}
