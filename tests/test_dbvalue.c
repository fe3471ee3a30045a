/*
 * test_dbvalue.c - the typed values of the database layer (meter/db/
 * value.c) against results of the real server: each reader takes what
 * the server writes for its type and refuses, naming the column and the
 * value, NULL, garbage, trailing garbage and what is out of its range;
 * the parameters come out as the server reads them back. Table-driven,
 * every boundary by hand.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "db_int.h"
#include "testdb.h"

/* The text t (NULL: SQL NULL) as column "amount" of a one-row result. */
static PGresult *
one(PGconn *db, const char *t)
{
    const char *v[] = {t};
    PGresult *r = PQexecParams(db, "SELECT $1::text AS amount", 1, NULL, v,
                               NULL, NULL, 0);
    CHECK(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1);
    return r;
}

/* A failed read's message names the column and, if there is one, the
 * value; the output was left as it was. */
static void
check_refused(const struct meter_err *e, const char *value, const char *why)
{
    if (!strstr(e->msg, "column 0 (amount) of row 0") ||
        (value && !strstr(e->msg, value)) || !strstr(e->msg, why)) {
        fprintf(stderr, "message '%s' lacks the column, '%s' or '%s'\n", e->msg,
                value ? value : "", why);
        test_failures++;
    }
}

static const struct {
    const char *text; /* NULL: SQL NULL */
    int ok;           /* 1: reads; 0: refused */
    int64_t want;
    const char *why; /* of a refusal */
} int64_cases[] = {
    {"0", 1, 0, NULL},
    {"42", 1, 42, NULL},
    {"-42", 1, -42, NULL},
    {"9223372036854775807", 1, INT64_MAX, NULL},
    {"-9223372036854775808", 1, INT64_MIN, NULL},
    {"9223372036854775808", 0, 0, "out of range"},
    {"-9223372036854775809", 0, 0, "out of range"},
    {"99999999999999999999999", 0, 0, "out of range"},
    {NULL, 0, 0, "NULL"},
    {"", 0, 0, "not an integer"},
    {"abc", 0, 0, "not an integer"},
    {"12x", 0, 0, "not an integer"},
    {"12 ", 0, 0, "not an integer"},
    {" 12", 0, 0, "not an integer"},
    {"+12", 0, 0, "not an integer"},
    {"-", 0, 0, "not an integer"},
    {"1.5", 0, 0, "not an integer"},
    {"0x10", 0, 0, "not an integer"},
};

static void
test_int64(PGconn *db)
{
    for (size_t i = 0; i < sizeof(int64_cases) / sizeof(int64_cases[0]); i++) {
        PGresult *r = one(db, int64_cases[i].text);
        struct meter_err e = {{0}};
        int64_t got = 7;
        int rc = db_get_int64(r, 0, 0, &got, &e);
        if (int64_cases[i].ok) {
            CHECK(rc == 0 && got == int64_cases[i].want);
        } else {
            CHECK(rc == -1 && got == 7);
            check_refused(&e, int64_cases[i].text, int64_cases[i].why);
        }
        PQclear(r);
    }
}

/* The narrower and the unsigned integers: their own ends. */
static const struct {
    const char *text;
    int ok32, okint, oku64;
    int64_t want; /* for the signed ones */
    uint64_t want_u;
} narrow_cases[] = {
    {"2147483647", 1, 1, 1, INT32_MAX, 2147483647u},
    {"-2147483648", 1, 1, 0, INT32_MIN, 0},
    {"2147483648", 0, 0, 1, 0, 2147483648u},
    {"-2147483649", 0, 0, 0, 0, 0},
    {"18446744073709551615", 0, 0, 1, 0, UINT64_MAX},
    {"18446744073709551616", 0, 0, 0, 0, 0},
    {"-1", 1, 1, 0, -1, 0}, /* strtoull alone reads UINT64_MAX */
    {"0", 1, 1, 1, 0, 0},
    {"7x", 0, 0, 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0},
};

static void
test_narrow(PGconn *db)
{
    for (size_t i = 0; i < sizeof(narrow_cases) / sizeof(narrow_cases[0]);
         i++) {
        PGresult *r = one(db, narrow_cases[i].text);
        struct meter_err e = {{0}};
        int32_t i32 = 7;
        int in = 7;
        uint64_t u = 7;
        int rc = db_get_int32(r, 0, 0, &i32, &e);
        CHECK(narrow_cases[i].ok32 ? rc == 0 && i32 == narrow_cases[i].want
                                   : rc == -1 && i32 == 7);
        rc = db_get_int(r, 0, 0, &in, &e);
        CHECK(narrow_cases[i].okint ? rc == 0 && in == narrow_cases[i].want
                                    : rc == -1 && in == 7);
        rc = db_get_uint64(r, 0, 0, &u, &e);
        CHECK(narrow_cases[i].oku64 ? rc == 0 && u == narrow_cases[i].want_u
                                    : rc == -1 && u == 7);
        if (!narrow_cases[i].oku64)
            check_refused(&e, narrow_cases[i].text,
                          narrow_cases[i].text ? "" : "NULL");
        PQclear(r);
    }
}

static void
test_bool_dec_text(PGconn *db)
{
    static const struct {
        const char *text;
        int ok;
        bool want;
    } bools[] = {{"t", 1, true},  {"f", 1, false}, {"true", 0, false},
                 {"T", 0, false}, {"", 0, false},  {"tt", 0, false},
                 {NULL, 0, false}};
    for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++) {
        PGresult *r = one(db, bools[i].text);
        struct meter_err e = {{0}};
        bool got = true;
        int rc = db_get_bool(r, 0, 0, &got, &e);
        CHECK(bools[i].ok ? rc == 0 && got == bools[i].want
                          : rc == -1 && got == true);
        if (!bools[i].ok)
            check_refused(&e, bools[i].text,
                          bools[i].text ? "boolean" : "NULL");
        PQclear(r);
    }

    static const struct {
        const char *text;
        int ok;
        const char *want; /* 6 decimals */
    } decs[] = {
        {"12.5", 1, "12.500000"},
        {"-0.000001", 1, "-0.000001"},
        {"0.000000000001", 1, "0.000000"}, /* 12 places: the scale */
        {"0.0000000000001", 0, NULL},      /* 13 */
        {"12.5x", 0, NULL},
        {"abc", 0, NULL},
        {"", 0, NULL},
        {NULL, 0, NULL},
    };
    for (size_t i = 0; i < sizeof(decs) / sizeof(decs[0]); i++) {
        PGresult *r = one(db, decs[i].text);
        struct meter_err e = {{0}};
        struct pricing_dec d = {.v = 7};
        char buf[48];
        int rc = db_get_dec(r, 0, 0, &d, &e);
        if (decs[i].ok) {
            CHECK(rc == 0);
            CHECK_STR(testdb_dec(d, buf), decs[i].want);
        } else {
            CHECK(rc == -1 && d.v == 7);
            check_refused(&e, decs[i].text, decs[i].text ? "decimal" : "NULL");
        }
        PQclear(r);
    }

    /* Text: exactly what fits, NULL as "", one byte too many refused. */
    char buf[4] = "old";
    struct meter_err e = {{0}};
    PGresult *r = one(db, "abc");
    CHECK(db_get_text(r, 0, 0, buf, sizeof(buf), &e) == 0);
    CHECK_STR(buf, "abc");
    PQclear(r);
    r = one(db, "abcd");
    CHECK(db_get_text(r, 0, 0, buf, sizeof(buf), &e) == -1);
    CHECK_STR(buf, "abc");
    check_refused(&e, "abcd", "longer than 3 bytes");
    PQclear(r);
    r = one(db, NULL);
    CHECK(db_get_text(r, 0, 0, buf, sizeof(buf), &e) == 0);
    CHECK_STR(buf, "");
    PQclear(r);
    /* A long value is quoted cut, not whole. */
    char big[200];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    r = one(db, big);
    CHECK(db_get_int64(r, 0, 0, &(int64_t){0}, &e) == -1);
    CHECK(strlen(e.msg) < 160 && strstr(e.msg, "xxx...' is not") != NULL);
    PQclear(r);
}

/* What the server writes for each type reads back; fields that are not
 * there, or binary, are refused; e may be NULL. */
static void
test_server_types(PGconn *db)
{
    PGresult *r = PQexec(db, "SELECT 42::bigint AS a, -7::int AS b,"
                             " true AS c, false AS d, 12.50::numeric AS f,"
                             " 'x'::text AS g");
    CHECK(PQresultStatus(r) == PGRES_TUPLES_OK);
    struct meter_err e = {{0}};
    int64_t a;
    int32_t b;
    bool c = false, d = true;
    struct pricing_dec f;
    char g[2], buf[48];
    CHECK(db_get_int64(r, 0, 0, &a, &e) == 0 && a == 42);
    CHECK(db_get_int32(r, 0, 1, &b, &e) == 0 && b == -7);
    CHECK(db_get_bool(r, 0, 2, &c, &e) == 0 && c);
    CHECK(db_get_bool(r, 0, 3, &d, &e) == 0 && !d);
    CHECK(db_get_dec(r, 0, 4, &f, &e) == 0);
    CHECK_STR(testdb_dec(f, buf), "12.500000");
    CHECK(db_get_text(r, 0, 5, g, sizeof(g), &e) == 0);
    CHECK_STR(g, "x");
    /* The message names the column by number and name. */
    CHECK(db_get_bool(r, 0, 0, &c, &e) == -1);
    CHECK(strstr(e.msg, "column 0 (a) of row 0: '42' is not a boolean"));
    CHECK(db_get_int64(r, 1, 0, &a, &e) == -1);
    CHECK(strstr(e.msg, "column 0 of row 1: no such field"));
    CHECK(db_get_int64(r, 0, 6, &a, &e) == -1);
    CHECK(strstr(e.msg, "column 6 of row 0: no such field"));
    CHECK(db_get_int64(r, 0, -1, &a, NULL) == -1);
    CHECK(db_get_int64(NULL, 0, 0, &a, &e) == -1);
    PQclear(r);
    r = PQexecParams(db, "SELECT 42::bigint AS a", 0, NULL, NULL, NULL, NULL,
                     1);
    CHECK(db_get_int64(r, 0, 0, &a, &e) == -1);
    CHECK(strstr(e.msg, "binary"));
    PQclear(r);
}

/* Parameters: their text, and what the server reads of them. */
static void
test_params(PGconn *db)
{
    struct db_params p = {0};
    uint8_t bytes[3] = {0, 1, 255};
    db_param_int64(&p, INT64_MIN);
    db_param_int64(&p, INT64_MAX);
    db_param_int32(&p, INT32_MIN);
    db_param_uint64(&p, UINT64_MAX);
    db_param_period(&p, 2026, 2);
    db_param_date(&p, 2026, 12, 31);
    db_param_bool(&p, true);
    db_param_text(&p, NULL);
    db_param_text(&p, "héllo");
    db_param_bytes(&p, bytes, sizeof(bytes));
    CHECK(p.n == 10);
    CHECK_STR(p.v[0], "-9223372036854775808");
    CHECK_STR(p.v[1], "9223372036854775807");
    CHECK_STR(p.v[2], "-2147483648");
    CHECK_STR(p.v[3], "18446744073709551615");
    CHECK_STR(p.v[4], "2026-02-01");
    CHECK_STR(p.v[5], "2026-12-31");
    CHECK_STR(p.v[6], "t");
    CHECK(p.v[7] == NULL);
    CHECK(p.fmt[8] == 0 && p.fmt[9] == 1 && p.len[9] == 3);

    struct meter_err e = {{0}};
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot read the parameters back",
        "SELECT $1::bigint, $2::bigint, $3::int, $4::numeric,"
        " to_char($5::date, 'YYYY-MM-DD'), $6::date - $5::date, $7::bool,"
        " $8::text IS NULL, $9::text, encode($10::bytea, 'hex')",
        p.n, p.v, p.len, p.fmt, &r, &e);
    CHECK(st == METER_DB_ROWS);
    if (st == METER_DB_ROWS) {
        int64_t lo, hi;
        int32_t small;
        uint64_t u;
        int days;
        bool t, null;
        char date[16], text[16], hex[8];
        CHECK(db_get_int64(r, 0, 0, &lo, &e) == 0 && lo == INT64_MIN);
        CHECK(db_get_int64(r, 0, 1, &hi, &e) == 0 && hi == INT64_MAX);
        CHECK(db_get_int32(r, 0, 2, &small, &e) == 0 && small == INT32_MIN);
        CHECK(db_get_uint64(r, 0, 3, &u, &e) == 0 && u == UINT64_MAX);
        CHECK(db_get_text(r, 0, 4, date, sizeof(date), &e) == 0);
        CHECK_STR(date, "2026-02-01");
        CHECK(db_get_int(r, 0, 5, &days, &e) == 0 && days == 333);
        CHECK(db_get_bool(r, 0, 6, &t, &e) == 0 && t);
        CHECK(db_get_bool(r, 0, 7, &null, &e) == 0 && null);
        CHECK(db_get_text(r, 0, 8, text, sizeof(text), &e) == 0);
        CHECK_STR(text, "héllo");
        CHECK(db_get_text(r, 0, 9, hex, sizeof(hex), &e) == 0);
        CHECK_STR(hex, "0001ff");
    }
    PQclear(r);

    /* One parameter too many: the statement fails, it does not run
     * with some missing. */
    struct db_params many = {0};
    for (int i = 0; i < DB_PARAMS_MAX; i++)
        db_param_int32(&many, i);
    CHECK(many.n == DB_PARAMS_MAX);
    db_param_int32(&many, DB_PARAMS_MAX);
    CHECK(many.n == -1);
    db_param_text(&many, "x");
    CHECK(many.n == -1);
    st = meter_db_exec(db, "too many", "SELECT 1", many.n, many.v, NULL, NULL,
                       NULL, &e);
    CHECK(st == METER_DB_HARD);
    CHECK_STR(e.msg, "too many: more than 16 parameters");
    /* The connection is not taken for lost. */
    CHECK(!meter_db_lost(db));
    CHECK(meter_db_exec(db, "after", "SELECT 1", 0, NULL, NULL, NULL, NULL,
                        &e) == METER_DB_ROWS);
}

int
main(void)
{
    struct testdb t;
    PGconn *db = testdb_create(&t);
    test_int64(db);
    test_narrow(db);
    test_bool_dec_text(db);
    test_server_types(db);
    test_params(db);
    testdb_drop(&t, db);
    return test_result();
}
