/*
 * test_schema.c - the migrations against a real PostgreSQL: applied once,
 * idempotent, refused when edited, atomic when one fails; and the core
 * schema's comments and constraints.
 */
#include <stdlib.h>
#include <string.h>

#include "meter_db.h"
#include "testdb.h"

/* Runs sql; checks it fails with SQLSTATE want (NULL: must succeed). */
static void
expect(PGconn *db, const char *sql, const char *want, int line)
{
    PGresult *r = PQexec(db, sql);
    ExecStatusType st = PQresultStatus(r);
    bool ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (want ? ok || !state || strcmp(state, want) != 0 : !ok) {
        fprintf(stderr, "%s:%d: %s\n  want %s, got %s %s", __FILE__, line, sql,
                want ? want : "success", ok ? "success" : state,
                ok ? "\n" : PQerrorMessage(db));
        test_failures++;
    }
    PQclear(r);
}
#define EXPECT_OK(db, sql) expect(db, sql, NULL, __LINE__)
#define EXPECT_ERR(db, sql, state) expect(db, sql, state, __LINE__)

static void
test_migrate(PGconn *db, struct meter_migration_set *set)
{
    struct meter_err e = {{0}};
    int applied, version;

    CHECK(meter_migrate(db, set, NULL, NULL, &applied, &version, &e) == 0);
    CHECK(applied == (int)set->n);
    CHECK(version == set->items[set->n - 1].version);
    CHECK(testdb_count(db, "SELECT count(*) FROM schema_migrations") ==
          (long)set->n);

    /* A second run applies nothing. */
    CHECK(meter_migrate(db, set, NULL, NULL, &applied, &version, &e) == 0);
    CHECK(applied == 0);
    CHECK(version == set->items[set->n - 1].version);

    /* An applied migration edited: refused by name, nothing applied. */
    struct meter_migration *first = &set->items[0];
    char *orig = first->sql;
    size_t orig_len = first->sql_len;
    first->sql = strdup("-- edited\nSELECT 1;");
    first->sql_len = strlen(first->sql);
    CHECK(meter_migrate(db, set, NULL, NULL, &applied, &version, &e) == -1);
    CHECK(strstr(e.msg, first->file) && strstr(e.msg, "changed"));
    free(first->sql);
    first->sql = orig;
    first->sql_len = orig_len;

    /* Status lists the applied ones as applied. */
    struct meter_migration_status *s;
    size_t n;
    CHECK(meter_migrate_status(db, set, &s, &n, &e) == 0);
    CHECK(n == set->n);
    for (size_t i = 0; i < n; i++)
        CHECK(s[i].state == METER_MIGRATION_APPLIED && s[i].applied_at[0]);
    free(s);
}

static void
test_failed_migration_is_atomic(PGconn *db, struct meter_migration_set *set)
{
    struct meter_err e = {{0}};
    int applied, version;
    struct meter_migration *items =
        calloc(set->n + 1, sizeof(struct meter_migration));
    memcpy(items, set->items, set->n * sizeof(*items));
    int next = set->items[set->n - 1].version + 1;
    char file[32], sql[] = "CREATE TABLE half_done (x int);\n"
                           "SELECT no_such_function();\n";
    snprintf(file, sizeof(file), "%04d_broken.sql", next);
    items[set->n].version = next;
    items[set->n].file = file;
    items[set->n].sql = sql;
    items[set->n].sql_len = strlen(sql);
    struct meter_migration_set bigger = {items, set->n + 1};

    CHECK(meter_migrate(db, &bigger, NULL, NULL, &applied, &version, &e) == -1);
    CHECK(strstr(e.msg, file) && strstr(e.msg, "line 2"));
    CHECK(testdb_count(db, "SELECT count(*) FROM pg_class"
                           " WHERE relname = 'half_done'") == 0);
    CHECK(testdb_count(db, "SELECT max(version) FROM schema_migrations") ==
          set->items[set->n - 1].version);

    struct meter_migration_status *s;
    size_t n;
    CHECK(meter_migrate_status(db, &bigger, &s, &n, &e) == 0);
    CHECK(n == bigger.n && s[n - 1].state == METER_MIGRATION_PENDING);
    free(s);
    free(items);
}

/* Every table, column and function of the schema says what it is. */
static void
test_comments(PGconn *db)
{
    PGresult *r =
        PQexec(db, "SELECT c.relname || coalesce('.' || a.attname, '')"
                   "  FROM pg_class c"
                   "  JOIN pg_namespace n ON n.oid = c.relnamespace"
                   "  LEFT JOIN pg_attribute a ON a.attrelid = c.oid"
                   "   AND a.attnum > 0 AND NOT a.attisdropped"
                   " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')"
                   "   AND obj_description(c.oid, 'pg_class') IS NULL"
                   "    OR (n.nspname = 'public' AND c.relkind IN ('r', 'p')"
                   "        AND a.attnum IS NOT NULL"
                   "        AND col_description(c.oid, a.attnum) IS NULL)");
    CHECK(PQresultStatus(r) == PGRES_TUPLES_OK);
    for (int i = 0; i < PQntuples(r); i++) {
        fprintf(stderr, "no COMMENT ON %s\n", PQgetvalue(r, i, 0));
        test_failures++;
    }
    PQclear(r);
    CHECK(testdb_count(db,
                       "SELECT count(*) FROM pg_class c JOIN pg_namespace n"
                       " ON n.oid = c.relnamespace WHERE n.nspname = 'public'"
                       " AND c.relkind = 'r'") >= 5);
}

static void
test_constraints(PGconn *db)
{
    static const char hash[] =
        "'\\x0000000000000000000000000000000000000000000000000000000000000000'";
    char sql[512];

    EXPECT_OK(db, "INSERT INTO accounts (account_id, name)"
                  " VALUES ('acme-1', 'Acme')");
    EXPECT_ERR(db, "INSERT INTO accounts (account_id) VALUES ('bad id')",
               "23514");
    EXPECT_ERR(db, "INSERT INTO accounts (account_id) VALUES ('')", "23514");
    EXPECT_ERR(db,
               "INSERT INTO accounts (account_id) VALUES"
               " ('a234567890123456789012345678901234567890123456789012345678"
               "901234X')",
               "23514"); /* 65 characters */
    EXPECT_ERR(db, "INSERT INTO accounts (account_id) VALUES ('acme-1')",
               "23505");

    snprintf(sql, sizeof(sql),
             "INSERT INTO api_keys (role, account_id, name, token_hash)"
             " VALUES ('account', 'acme-1', 'reader', %s)",
             hash);
    EXPECT_OK(db, sql);
    EXPECT_ERR(db, sql, "23505"); /* same token hash twice */
    EXPECT_ERR(db,
               "INSERT INTO api_keys (role, name, token_hash)"
               " VALUES ('account', 'x', '\\x01')",
               "23514");
    snprintf(sql, sizeof(sql),
             "INSERT INTO api_keys (role, name, token_hash)"
             " VALUES ('account', 'no account', %s)",
             hash);
    EXPECT_ERR(db, sql, "23514");
    EXPECT_ERR(db,
               "INSERT INTO api_keys (role, account_id, name, token_hash)"
               " VALUES ('host', 'acme-1', 'h', decode(repeat('11', 32),"
               " 'hex'))",
               "23514");
    EXPECT_ERR(db,
               "INSERT INTO api_keys (role, name, token_hash)"
               " VALUES ('root', 'r', decode(repeat('22', 32), 'hex'))",
               "23514");
    EXPECT_ERR(db,
               "INSERT INTO api_keys (role, account_id, name, token_hash)"
               " VALUES ('account', 'nobody', 'n',"
               " decode(repeat('33', 32), 'hex'))",
               "23503");
    EXPECT_OK(db,
              "INSERT INTO api_keys (role, name, token_hash)"
              " VALUES ('host', 'host-1', decode(repeat('44', 32), 'hex'))");

    EXPECT_OK(db, "INSERT INTO price_books"
                  " (price_book_id, version, effective_from, currency, book)"
                  " VALUES ('e2b-pro', 1, '2026-01-01', 'USD',"
                  " '{\"id\": \"e2b-pro\", \"currency\": \"USD\"}')");
    EXPECT_ERR(db,
               "INSERT INTO price_books"
               " (price_book_id, version, effective_from, currency, book)"
               " VALUES ('e2b-pro', 2, '2026-01-01', 'USD',"
               " '{\"id\": \"other\", \"currency\": \"USD\"}')",
               "23514");
    EXPECT_ERR(db,
               "INSERT INTO price_books"
               " (price_book_id, version, effective_from, currency, book)"
               " VALUES ('e2b-pro', 2, '2026-01-01', 'usd',"
               " '{\"id\": \"e2b-pro\", \"currency\": \"usd\"}')",
               "23514");
    EXPECT_ERR(db, "UPDATE price_books SET effective_from = '2025-01-01'",
               "23000");
    EXPECT_ERR(db, "DELETE FROM price_books", "23000");

    EXPECT_OK(db, "INSERT INTO account_price_books"
                  " (account_id, valid_from, price_book_id, version)"
                  " VALUES ('acme-1', '2026-02-01', 'e2b-pro', 1)");
    EXPECT_ERR(db,
               "INSERT INTO account_price_books"
               " (account_id, valid_from, price_book_id, version)"
               " VALUES ('acme-1', '2026-02-01', 'e2b-pro', 1)",
               "23505");
    EXPECT_ERR(db,
               "INSERT INTO account_price_books"
               " (account_id, valid_from, price_book_id, version)"
               " VALUES ('acme-1', '2025-12-01', 'e2b-pro', 1)",
               "23514");
    EXPECT_ERR(db,
               "INSERT INTO account_price_books"
               " (account_id, valid_from, price_book_id, version)"
               " VALUES ('acme-1', '2026-03-01', 'e2b-pro', 9)",
               "23503");
    EXPECT_ERR(db,
               "INSERT INTO account_price_books"
               " (account_id, valid_from, price_book_id, version)"
               " VALUES ('ghost', '2026-03-01', 'e2b-pro', 1)",
               "23503");
    EXPECT_ERR(db, "DELETE FROM accounts WHERE account_id = 'acme-1'", "23503");
}

/* meter_bucket (0016_keys_by_account) is PostgreSQL's own hash partition
 * of account_pk among 64: a table partitioned by hash of the account and
 * the router that sends an account's usage to its bucket agree. */
static void
test_bucket(PGconn *db)
{
    EXPECT_OK(db, "CREATE TEMP TABLE by_account (account_pk integer)"
                  " PARTITION BY HASH (account_pk)");
    CHECK(testdb_count(db,
                       "SELECT count(*) FROM generate_series(-70000,"
                       " 70000) a WHERE NOT satisfies_hash_partition("
                       "'by_account'::regclass, 64, meter_bucket(a), a)") == 0);
    CHECK(testdb_count(db, "SELECT count(*) FROM generate_series(1, 1000) a"
                           " WHERE satisfies_hash_partition("
                           "'by_account'::regclass, 64,"
                           " (meter_bucket(a) + 1) % 64, a)") == 0);
    CHECK(testdb_count(db, "SELECT count(DISTINCT meter_bucket(a))"
                           " FROM generate_series(1, 10000) a") == 64);
    CHECK(testdb_count(db, "SELECT min(meter_bucket(a)) + max(meter_bucket(a))"
                           " FROM generate_series(1, 10000) a") == 63);
    /* Keys of the sandboxes: the account first, the same id under two
     * accounts allowed, twice under one refused. */
    EXPECT_OK(db,
              "INSERT INTO accounts (account_id) VALUES ('bk-a'), ('bk-b')");
    EXPECT_OK(db, "INSERT INTO sandboxes (account_pk, sandbox_id)"
                  " SELECT account_pk, 'sb' FROM accounts"
                  " WHERE account_id IN ('bk-a', 'bk-b')");
    EXPECT_ERR(
        db,
        "INSERT INTO sandboxes (account_pk, sandbox_id)"
        " SELECT account_pk, 'sb' FROM accounts WHERE account_id = 'bk-a'",
        "23505");
}

int
main(void)
{
    struct testdb t;
    struct meter_err e = {{0}};
    struct meter_migration_set set;
    char dir[4096];
    if (meter_migrations_default_dir(dir, sizeof(dir), &e) < 0 ||
        meter_migrations_load(dir, &set, &e) < 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    PGconn *db = testdb_create(&t);
    test_migrate(db, &set);
    test_failed_migration_is_atomic(db, &set);
    test_comments(db);
    test_constraints(db);
    test_bucket(db);
    testdb_drop(&t, db);
    meter_migrations_release(&set);
    return test_result();
}
