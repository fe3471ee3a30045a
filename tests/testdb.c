/*
 * testdb.c - see testdb.h.
 */
#include "testdb.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "meter_cluster.h"
#include "meter_db.h"

static void
unreachable(const char *why)
{
    const char *ci = getenv("CI");
    bool in_ci = ci && strcmp(ci, "true") == 0;
    fprintf(stderr, "test database unreachable: %s\n%s\n", why,
            in_ci ? "failing: CI=true requires a database"
                  : "skipping (under CI=true this fails)");
    exit(in_ci ? 1 : 77);
}

PGconn *
testdb_create(struct testdb *t)
{
    struct meter_err e = {{0}};
    const char *base = getenv("METER_TEST_DATABASE_URL");
    struct meter_cluster *c = NULL;
    if (!base || !*base) {
        c = meter_cluster_open(NULL, &e);
        if (!c)
            unreachable(e.msg);
        if (meter_cluster_state(c) != METER_CLUSTER_RUNNING)
            unreachable("the test cluster is not running");
        base = meter_cluster_conninfo(c);
    }
    snprintf(t->admin, sizeof(t->admin), "%s dbname=postgres", base);
    static int made; /* several databases a test (test_shards.c) */
    snprintf(t->name, sizeof(t->name), "test_%ld_%ld_%d", (long)getpid(),
             (long)time(NULL), made++);
    snprintf(t->conninfo, sizeof(t->conninfo), "%s dbname=%s", base, t->name);
    meter_cluster_free(c);

    PGconn *admin = PQconnectdb(t->admin);
    if (PQstatus(admin) != CONNECTION_OK)
        unreachable(PQerrorMessage(admin));
    char sql[128];
    snprintf(sql, sizeof(sql), "CREATE DATABASE %s", t->name);
    PGresult *r = PQexec(admin, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "cannot create %s: %s", t->name, PQerrorMessage(admin));
        exit(1);
    }
    PQclear(r);
    PQfinish(admin);

    PGconn *db = PQconnectdb(t->conninfo);
    if (PQstatus(db) != CONNECTION_OK) {
        fprintf(stderr, "cannot connect to %s: %s", t->name,
                PQerrorMessage(db));
        exit(1);
    }
    PQclear(PQexec(db, "SET client_min_messages = warning"));
    return db;
}

void
testdb_drop(struct testdb *t, PGconn *db)
{
    PQfinish(db);
    PGconn *admin = PQconnectdb(t->admin);
    char sql[128];
    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)",
             t->name);
    PQclear(PQexec(admin, sql));
    PQfinish(admin);
}

PGconn *
testdb_create_migrated(struct testdb *t)
{
    PGconn *db = testdb_create(t);
    struct meter_err e = {{0}};
    struct meter_migration_set set = {0};
    char dir[4096];
    int applied, version;
    if (meter_migrations_default_dir(dir, sizeof(dir), &e) < 0 ||
        meter_migrations_load(dir, &set, &e) < 0 ||
        meter_migrate(db, &set, NULL, NULL, &applied, &version, &e) < 0) {
        fprintf(stderr, "migrate: %s\n", e.msg);
        testdb_drop(t, db);
        exit(1);
    }
    meter_migrations_release(&set);
    return db;
}

int
testdb_sql(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    ExecStatusType st = PQresultStatus(r);
    bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!ok) {
        fprintf(stderr, "%s: %s", sql, PQerrorMessage(db));
        test_failures++;
    }
    PQclear(r);
    return ok ? 0 : -1;
}

long
testdb_count(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    long n = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        const char *s = PQgetvalue(r, 0, 0);
        char *end;
        errno = 0;
        n = strtol(s, &end, 10);
        if (end == s || *end || errno) {
            fprintf(stderr, "%s: '%s' is not an integer\n", sql, s);
            test_failures++;
            n = -1;
        }
    } else {
        fprintf(stderr, "%s: %s", sql, PQerrorMessage(db));
        test_failures++;
    }
    PQclear(r);
    return n;
}

struct pricing_book *
testdb_book_add(PGconn *db, const char *text)
{
    struct pricing_err pe = {{0}};
    struct meter_err e = {{0}};
    int version;
    struct pricing_book *b =
        pricing_book_parse(text, strlen(text), "test", &pe);
    if (!b) {
        fprintf(stderr, "test book refused: %s\n", pe.msg);
        test_failures++;
    } else if (meter_db_book_add(db, b, text, &version, &e) != METER_DB_ROWS) {
        fprintf(stderr, "cannot store the test book: %s\n", e.msg);
        test_failures++;
    }
    return b;
}

void
testdb_account_add(PGconn *db, const char *id, const char *book,
                   const char *from)
{
    struct meter_err e = {{0}};
    if (meter_db_account_add(db, id, NULL, book, from, &e) < 0) {
        fprintf(stderr, "account %s: %s\n", id, e.msg);
        test_failures++;
    }
}

void
testdb_store(PGconn *db, struct meter_registry *reg, const char *acct,
             const char *sb, const struct pricing_second *v, int64_t ts,
             size_t n)
{
    struct meter_sample *s = calloc(n ? n : 1, sizeof(*s));
    if (!s) {
        test_failures++;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        s[i].s = *v;
        s[i].s.ts = ts + (int64_t)i;
        snprintf(s[i].account_id, sizeof(s[i].account_id), "%s", acct);
        snprintf(s[i].sandbox_id, sizeof(s[i].sandbox_id), "%s", sb);
    }
    struct meter_ingest_result res;
    struct meter_problems probs = {0};
    struct meter_err e = {{0}};
    struct meter_ingest_origin o = {.now_us = (int64_t)1790000000 * 1000000};
    if (meter_ingest(db, reg, s, n, &o, &res, &probs, &e) != METER_INGEST_OK ||
        res.accepted != n) {
        fprintf(stderr, "store %s/%s at %" PRId64 ": %s\n", acct, sb, ts,
                e.msg);
        test_failures++;
    }
    free(s);
}

struct report_invoice
testdb_invoice_run(PGconn *db, const char *acct, int y, int m, bool final)
{
    struct report_invoice inv;
    struct billing_outcome o;
    struct meter_err e = {{0}};
    char ref[24];
    memset(&inv, 0, sizeof(inv));
    if (billing_run_one(db, acct, y, m, final, "Test Seller", &o, &e) < 0) {
        fprintf(stderr, "run %s %d-%02d: %s\n", acct, y, m, e.msg);
        test_failures++;
        return inv;
    }
    snprintf(ref, sizeof(ref), "%" PRId64, o.id);
    if (meter_db_invoice_get(db, ref, NULL, &inv, &e) != METER_DB_ROWS) {
        fprintf(stderr, "get %s: %s\n", ref, e.msg);
        test_failures++;
        memset(&inv, 0, sizeof(inv));
    }
    return inv;
}

const char *
testdb_dec(struct pricing_dec d, char buf[48])
{
    pricing_dec_format(d, 6, buf, 48);
    return buf;
}
