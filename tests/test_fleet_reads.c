/*
 * test_fleet.c - the reports over shards through postgres_fdw
 * (docs/scale.md, "Reads"; meter/db/fleet.c, migration 0018) against
 * real PostgreSQL databases: a catalog holding buckets 0-15 itself
 * (read back through a loopback server), shard 1 16-31 and shard 2
 * 32-63, beside a single server given the same batches. Each report's
 * JSON is the single server's; each report statement's plan, run as
 * the report runs it, sums on the shards (every foreign scan is an
 * aggregate whose remote SQL groups: a statement that stops pushing
 * down fails here); a bucket a shard does not hold is not counted
 * there (a move's copy); the foreign servers follow the map.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "meter_db.h"
#include "testdb.h"

#define JAN 1767225600LL /* 2026-01-01T00:00:00Z */
#define ACCOUNTS 24
#define SANDBOXES 3
#define SECONDS 120

struct fixture {
    struct testdb cat_t, s1_t, s2_t, one_t;
    PGconn *cat, *s1, *s2, *one;
};

/* Seconds [from, from + n) of every sandbox of every account. */
static size_t
make_batch(struct meter_sample *s, int64_t from, int n)
{
    size_t k = 0;
    for (int a = 0; a < ACCOUNTS; a++)
        for (int b = 0; b < SANDBOXES; b++)
            for (int t = 0; t < n; t++) {
                struct meter_sample *x = &s[k++];
                memset(x, 0, sizeof(*x));
                snprintf(x->account_id, sizeof(x->account_id), "acct-%02d", a);
                snprintf(x->sandbox_id, sizeof(x->sandbox_id), "sb-%d", b);
                x->s = (struct pricing_second){from + t,
                                               10000 * (uint32_t)(1 + b),
                                               (uint32_t)(100 * t),
                                               (uint64_t)1 << 30,
                                               (uint64_t)(t + a) << 20,
                                               (uint64_t)(a * 1000 + t),
                                               (uint64_t)t * 7};
            }
    return k;
}

/* The same batches into the catalog (routed) and the single server,
 * over two days, the first merged. */
static void
fixture_up(struct fixture *f)
{
    f->cat = testdb_create_migrated(&f->cat_t);
    f->s1 = testdb_create_migrated(&f->s1_t);
    f->s2 = testdb_create_migrated(&f->s2_t);
    f->one = testdb_create_migrated(&f->one_t);
    struct meter_err e = {{0}};
    CHECK(meter_db_shard_add(f->cat, "one", f->s1_t.conninfo, &e) ==
          METER_DB_ROWS);
    CHECK(meter_db_shard_add(f->cat, "two", f->s2_t.conninfo, &e) ==
          METER_DB_ROWS);
    /* Shards listed, the map still all the catalog's: no server. */
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM pg_foreign_server") == 0);
    /* The map set by hand: the reports build the servers for it. */
    testdb_sql(f->cat,
               "UPDATE shard_buckets SET shard_id = CASE WHEN bucket < 16"
               " THEN 0 WHEN bucket < 32 THEN 1 ELSE 2 END,"
               " epoch = epoch + 1");
    testdb_sql(f->cat, "DELETE FROM bucket_holds WHERE bucket >= 16");
    testdb_sql(f->s1,
               "INSERT INTO bucket_holds SELECT generate_series(16, 31)");
    testdb_sql(f->s2,
               "INSERT INTO bucket_holds SELECT generate_series(32, 63)");

    size_t n = ACCOUNTS * SANDBOXES * SECONDS;
    struct meter_sample *s = malloc(n * sizeof(*s));
    struct meter_shards *sh = meter_shards_new();
    struct meter_shard_links *l = meter_shard_links_new(sh, 0);
    struct meter_registry *reg = meter_registry_new();
    for (int day = 0; day < 2; day++) {
        make_batch(s, JAN + day * 86400 + 3600 * (day + 1), SECONDS);
        struct meter_ingest_origin o = {.now_us = (JAN + 86400 * 3) * 1000000};
        struct meter_problems probs = {0};
        struct meter_ingest_result res;
        CHECK(meter_ingest_routed(f->cat, sh, l, s, n, &o, &res, &probs, &e) ==
              METER_INGEST_OK);
        CHECK(res.accepted == n);
        CHECK(meter_ingest(f->one, reg, s, n, &o, &res, &probs, &e) ==
              METER_INGEST_OK);
        CHECK(res.accepted == n);
        if (day > 0)
            continue;
        /* The first day merged everywhere: both sides of
         * usage_hourly_totals read. */
        PGconn *dbs[] = {f->cat, f->s1, f->s2, f->one};
        for (int d = 0; d < 4; d++) {
            uint64_t rows = 0;
            CHECK(meter_db_usage_merge(dbs[d], 1000000, &rows, &e) >= 0);
        }
    }
    /* Every database holds some. */
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM usage_hourly") > 0);
    CHECK(testdb_count(f->s1, "SELECT count(*) FROM usage_hourly") > 0);
    CHECK(testdb_count(f->s2, "SELECT count(*) FROM usage_hourly") > 0);
    meter_registry_free(reg);
    meter_shard_links_free(l);
    meter_shards_free(sh);
    free(s);
}

static void
fixture_down(struct fixture *f)
{
    testdb_drop(&f->one_t, f->one);
    testdb_drop(&f->s2_t, f->s2);
    testdb_drop(&f->s1_t, f->s1);
    testdb_drop(&f->cat_t, f->cat);
}

/* ---- the reports' JSON --------------------------------------------------- */

enum { OVERVIEW, ACCOUNTS_PAGE, ACCOUNT, USAGE_HOURS, USAGE_DAYS, INVOICES };
#define REPORTS 6
static const char *const names[REPORTS] = {"overview",     "accounts",
                                           "account",      "usage by hour",
                                           "usage by day", "invoices"};

/* Report k of db, or NULL (the hook had it). */
static json_t *
run_report(PGconn *db, int k, int64_t now)
{
    struct meter_err e = {{0}};
    json_t *out = NULL;
    enum meter_db_status st = METER_DB_HARD;
    struct meter_report_query q = {2026, 1, NULL, "revenue", true, 1, 50};
    struct meter_report_invoices qi = {0, 0, NULL, NULL, 1, 50};
    switch (k) {
    case OVERVIEW:
        st = meter_db_report_overview(db, 2026, 1, now, &out, &e);
        break;
    case ACCOUNTS_PAGE:
        st = meter_db_report_accounts(db, &q, &out, &e);
        break;
    case ACCOUNT:
        st = meter_db_report_account(db, "acct-05", 2026, 1, &out, &e);
        break;
    case USAGE_HOURS:
        st = meter_db_report_usage(db, JAN, JAN + 86400 * 3, false, &out, &e);
        break;
    case USAGE_DAYS:
        st = meter_db_report_usage(db, JAN, JAN + 86400 * 3, true, &out, &e);
        break;
    case INVOICES:
        st = meter_db_report_invoices(db, &qi, &out, &e);
        break;
    }
    if (st < 0) {
        fprintf(stderr, "report %s: %s\n", names[k], e.msg);
        test_failures++;
    }
    return out;
}

/* The report without what depends on when it ran; the samples
 * ingested per minute summed into *ingested. */
static char *
comparable(json_t *j, json_int_t *ingested)
{
    *ingested = 0;
    if (!json_is_object(j))
        return json_dumps(j, JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_object_del(j, "as_of");
    json_t *per = json_object_get(j, "ingested_per_minute");
    size_t i;
    json_t *m;
    json_array_foreach(per, i, m)
    {
        *ingested += json_integer_value(json_object_get(m, "samples"));
    }
    json_object_del(j, "ingested_per_minute");
    return json_dumps(j, JSON_SORT_KEYS);
}

/* Every report over the shards is the single server's. */
static void
test_same_as_one(struct fixture *f, int64_t now)
{
    for (int k = 0; k < REPORTS; k++) {
        json_t *a = run_report(f->cat, k, now), *b = run_report(f->one, k, now);
        json_int_t ia, ib;
        char *ta = comparable(a, &ia), *tb = comparable(b, &ib);
        if (!ta || !tb || strcmp(ta, tb) != 0 || ia != ib) {
            fprintf(
                stderr,
                "report %s over shards: %.600s (ingested %" JSON_INTEGER_FORMAT
                ")\none server: %.600s (ingested %" JSON_INTEGER_FORMAT ")\n",
                names[k], ta ? ta : "(none)", ia, tb ? tb : "(none)", ib);
            test_failures++;
        }
        free(ta);
        free(tb);
        json_decref(a);
        json_decref(b);
    }
    /* Not empty: the comparison compares figures. */
    json_t *u = run_report(f->cat, USAGE_DAYS, now);
    json_t *items = json_object_get(u, "items");
    CHECK(json_array_size(items) == 2);
    json_t *ov = run_report(f->cat, OVERVIEW, now);
    json_int_t ingested;
    free(comparable(ov, &ingested));
    CHECK(ingested == 2 * ACCOUNTS * SANDBOXES * SECONDS);
    json_decref(ov);
    json_decref(u);
}

/* ---- the plans ------------------------------------------------------------
 */

struct plan {
    char text[65536];
    int scans;      /* Foreign Scan nodes */
    int aggregates; /* of them, aggregates pushed down */
    int grouped;    /* Remote SQL with GROUP BY and an aggregate */
    int remote;     /* Remote SQL lines */
};

static void
explain(PGconn *db, const char *sql, int n, const char *const *values,
        void *arg)
{
    struct plan *p = arg;
    memset(p, 0, sizeof(*p));
    struct meter_buf b = {0};
    meter_buf_str(&b, "EXPLAIN (VERBOSE, COSTS OFF) ");
    meter_buf_str(&b, sql);
    PGresult *r = PQexecParams(db, b.p, n, NULL, values, NULL, NULL, 0);
    meter_buf_release(&b);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "explain: %s", PQerrorMessage(db));
        test_failures++;
    }
    size_t used = 0;
    for (int i = 0; PQresultStatus(r) == PGRES_TUPLES_OK && i < PQntuples(r);
         i++) {
        const char *line = PQgetvalue(r, i, 0);
        int w = snprintf(p->text + used, sizeof(p->text) - used, "%s\n", line);
        if (w > 0 && (size_t)w < sizeof(p->text) - used)
            used += (size_t)w;
        if (strstr(line, "Foreign Scan"))
            p->scans++;
        if (strstr(line, "Relations: Aggregate on"))
            p->aggregates++;
        const char *sql_at = strstr(line, "Remote SQL: ");
        if (sql_at) {
            p->remote++;
            if (strstr(sql_at, " GROUP BY ") && strstr(sql_at, "sum("))
                p->grouped++;
        }
    }
    PQclear(r);
}

/* Each report statement, as the report runs it: with usage, one
 * foreign scan a shard holding buckets (three), each one the shard's
 * aggregate; the invoices read no usage. */
static void
test_plans(struct fixture *f, int64_t now)
{
    static struct plan p;
    meter_db_report_hook_set(explain, &p);
    for (int k = 0; k < REPORTS; k++) {
        memset(&p, 0, sizeof(p));
        json_t *out = run_report(f->cat, k, now);
        CHECK(out == NULL);
        json_decref(out);
        bool usage = k != INVOICES;
        bool ok = usage ? p.scans >= 3 && p.scans % 3 == 0 &&
                              p.aggregates == p.scans && p.remote == p.scans &&
                              p.grouped == p.scans
                        : p.scans == 0 && p.text[0];
        if (!ok) {
            fprintf(stderr,
                    "report %s: %d foreign scans, %d aggregates, %d of %d "
                    "remote statements grouped:\n%s\n",
                    names[k], p.scans, p.aggregates, p.grouped, p.remote,
                    p.text);
            test_failures++;
        }
    }
    /* One server: its own tables, no foreign scan. */
    for (int k = 0; k < REPORTS; k++) {
        memset(&p, 0, sizeof(p));
        json_decref(run_report(f->one, k, now));
        CHECK(p.scans == 0 && p.text[0]);
    }
    meter_db_report_hook_set(NULL, NULL);
}

/* ---- what is held ----------------------------------------------------------
 */

static json_int_t
fleet_samples(PGconn *db, int64_t now)
{
    json_t *u = run_report(db, USAGE_DAYS, now);
    json_int_t n = 0;
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(u, "items"), i, it)
    {
        n += json_integer_value(json_object_get(it, "samples"));
    }
    json_decref(u);
    return n;
}

/* A bucket's rows on a shard that does not hold it (a move's copy, or
 * what a move left behind) count nowhere; the holder's do. */
static void
test_held_only(struct fixture *f, int64_t now)
{
    json_int_t all = fleet_samples(f->cat, now);
    CHECK(all == 2 * ACCOUNTS * SANDBOXES * SECONDS);
    /* The busiest bucket of shard 2, and its samples. */
    long bucket = testdb_count(f->s2, "SELECT meter_bucket(account_pk)"
                                      " FROM usage_hourly GROUP BY 1"
                                      " ORDER BY sum(samples) DESC, 1 LIMIT 1");
    char b[16];
    snprintf(b, sizeof(b), "%ld", bucket);
    const char *v[] = {b};
    PGresult *r = PQexecParams(f->s2,
                               "SELECT sum(samples) FROM usage_hourly"
                               " WHERE meter_bucket(account_pk) = $1::int",
                               1, NULL, v, NULL, NULL, 0);
    json_int_t in_bucket = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1) {
        json_t *n = json_loads(PQgetvalue(r, 0, 0), JSON_DECODE_ANY, NULL);
        in_bucket = json_is_integer(n) ? json_integer_value(n) : -1;
        json_decref(n);
    }
    PQclear(r);
    r = PQexecParams(f->s2, "DELETE FROM bucket_holds WHERE bucket = $1::int",
                     1, NULL, v, NULL, NULL, 0);
    CHECK(PQresultStatus(r) == PGRES_COMMAND_OK);
    PQclear(r);
    CHECK(in_bucket > 0 && fleet_samples(f->cat, now) == all - in_bucket);
    r = PQexecParams(f->s2, "INSERT INTO bucket_holds (bucket) VALUES ($1)", 1,
                     NULL, v, NULL, NULL, 0);
    CHECK(PQresultStatus(r) == PGRES_COMMAND_OK);
    PQclear(r);
    CHECK(fleet_samples(f->cat, now) == all);
}

/* ---- the servers follow the map --------------------------------------------
 */

static void
test_sync(struct fixture *f, int64_t now)
{
    struct meter_err e = {{0}};
    const char *servers = "SELECT count(*) FROM pg_foreign_server"
                          " WHERE srvname ~ '^meter_shard_'";
    CHECK(testdb_count(f->cat, servers) == 3);
    /* Idempotent. */
    CHECK(meter_db_fleet_sync(f->cat, &e) == 0);
    CHECK(meter_db_fleet_sync(f->cat, &e) == 0);
    CHECK(testdb_count(f->cat, servers) == 3);
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM pg_inherits i"
                               " WHERE i.inhparent ="
                               " 'fleet_hourly_totals'::regclass") == 3);
    /* Every bucket back in the catalog (its own rows then: shards 1 and
     * 2 as if emptied): views of its tables, no server. */
    testdb_sql(f->cat, "UPDATE shard_buckets SET shard_id = 0");
    CHECK(meter_db_fleet_sync(f->cat, &e) == 0);
    CHECK(testdb_count(f->cat, servers) == 0);
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM pg_views"
                               " WHERE viewname = 'fleet_hourly_totals'") == 1);
    /* Set back by hand: the next report builds them again. */
    testdb_sql(f->cat,
               "UPDATE shard_buckets SET shard_id = CASE WHEN bucket < 16"
               " THEN 0 WHEN bucket < 32 THEN 1 ELSE 2 END");
    CHECK(fleet_samples(f->cat, now) == 2 * ACCOUNTS * SANDBOXES * SECONDS);
    CHECK(testdb_count(f->cat, servers) == 3);
}

int
main(void)
{
    struct fixture f;
    fixture_up(&f);
    /* When the batches were stored (their added_at): the overview's
     * samples ingested per minute are theirs. */
    int64_t now = JAN + 86400 * 3;
    test_same_as_one(&f, now);
    test_plans(&f, now);
    test_held_only(&f, now);
    test_sync(&f, now);
    fixture_down(&f);
    return test_result();
}
