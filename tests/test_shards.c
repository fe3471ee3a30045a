/*
 * test_shards.c - a batch over several shards (meter_ingest_routed,
 * docs/scale.md) against real PostgreSQL databases: a catalog and two
 * shards, each bucket on one, beside a single server given the same
 * batches. What the shards store together is what the single server
 * stores, second for second; two processes (their own maps and
 * registries) sending overlapping batches at once store each second
 * once; a batch one shard refuses stores nothing on the other; a shard's
 * backend killed between the commits, and a shard lost there, lose and
 * double nothing, the resolver committing what was decided; a process
 * whose map is stale is refused by the shard and routes again; a part
 * left prepared with no decision is rolled back by the resolver; reads
 * of a shard that refuses connections are SHARD_AWAY, naming it; shard
 * add refuses a database listed already under another conninfo; a
 * bucket moved (meter_db_shard_move) to a shard that lags at the fence
 * waits for it, and loses nothing.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "meter_db.h"
#include "testdb.h"

#define JAN 1767225600LL /* 2026-01-01T00:00:00Z */
#define ACCOUNTS 24
#define SANDBOXES 3
#define SECONDS 90

struct fixture {
    struct testdb cat_t, s1_t, s2_t, one_t;
    PGconn *cat, *s1, *s2, *one; /* the catalog, two shards, one server */
};

/* The catalog holds no bucket; shard 1 holds 0-31, shard 2 32-63. */
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
    /* Added again: a name is once, and a shard with usage is refused. */
    CHECK(meter_db_shard_add(f->cat, "one", f->s1_t.conninfo, &e) < 0);
    CHECK(testdb_count(f->s1, "SELECT count(*) FROM bucket_holds") == 0);
    testdb_sql(f->cat,
               "UPDATE shard_buckets SET shard_id = CASE WHEN bucket < 32"
               " THEN 1 ELSE 2 END, epoch = epoch + 1");
    testdb_sql(f->cat, "DELETE FROM bucket_holds");
    testdb_sql(f->s1, "INSERT INTO bucket_holds SELECT generate_series(0, 31)");
    testdb_sql(f->s2,
               "INSERT INTO bucket_holds SELECT generate_series(32, 63)");
}

static void
fixture_down(struct fixture *f)
{
    testdb_drop(&f->one_t, f->one);
    testdb_drop(&f->s2_t, f->s2);
    testdb_drop(&f->s1_t, f->s1);
    testdb_drop(&f->cat_t, f->cat);
}

/* Seconds [from, from + n) of every sandbox of every account, values
 * changing with the second, into s (ACCOUNTS * SANDBOXES * n). */
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
                /* The same sandbox ids in every account. */
                snprintf(x->sandbox_id, sizeof(x->sandbox_id), "sb-%d", b);
                x->s = (struct pricing_second){from + t,
                                               10000 * (uint32_t)(1 + b),
                                               (uint32_t)(100 * t),
                                               (uint64_t)1 << 30,
                                               (uint64_t)(t + a) << 20,
                                               (uint64_t)(a * 1000 + t),
                                               (uint64_t)t};
            }
    return k;
}

struct proc {
    struct meter_shards *sh;
    struct meter_shard_links *l;
};

static struct proc
proc_new(void)
{
    struct proc p;
    p.sh = meter_shards_new();
    p.l = meter_shard_links_new(p.sh, 0);
    return p;
}

static void
proc_free(struct proc *p)
{
    meter_shard_links_free(p->l);
    meter_shards_free(p->sh);
}

static enum meter_ingest_status
routed(PGconn *cat, struct proc *p, const struct meter_sample *s, size_t n,
       struct meter_ingest_result *res)
{
    struct meter_ingest_origin o = {.now_us = (JAN + 86400) * 1000000};
    struct meter_problems probs = {0};
    struct meter_err e = {{0}};
    enum meter_ingest_status st =
        meter_ingest_routed(cat, p->sh, p->l, s, n, &o, res, &probs, &e);
    if (st != METER_INGEST_OK && st != METER_INGEST_INVALID)
        fprintf(stderr, "routed: status %d: %s\n", st, e.msg);
    return st;
}

static int
by_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every second stored in the n databases dbs, one line each, sorted;
 * *count of them. Free the result. */
static char *
stored(PGconn **dbs, int ndb, size_t *count)
{
    size_t n = 0, cap = 1024;
    char **lines = malloc(cap * sizeof(*lines));
    for (int d = 0; d < ndb; d++) {
        struct meter_err e = {{0}};
        struct meter_usage_reader *r =
            meter_usage_reader_new(dbs[d], NULL, 0, JAN + 86400 * 30, &e);
        if (!r) {
            fprintf(stderr, "reader: %s\n", e.msg);
            test_failures++;
            continue;
        }
        struct pricing_source src = meter_usage_source(r);
        struct pricing_block b;
        struct pricing_err pe = {{0}};
        while (src.next(src.ctx, &b, &pe) > 0)
            for (size_t i = 0; i < b.n; i++) {
                const struct pricing_second *x = &b.s[i];
                if (n == cap)
                    lines = realloc(lines, (cap *= 2) * sizeof(*lines));
                char buf[256];
                snprintf(buf, sizeof(buf),
                         "%s %s %" PRId64 " %u %u %" PRIu64 " %" PRIu64
                         " %" PRIu64 " %" PRIu64,
                         b.account_id, b.sandbox_id, x->ts, x->vcpu,
                         x->cpu_used, x->mem_bytes, x->mem_used_bytes,
                         x->disk_bytes, x->egress_bytes);
                lines[n++] = strdup(buf);
            }
        meter_usage_reader_free(r);
    }
    qsort(lines, n, sizeof(*lines), by_text);
    struct meter_buf out = {0};
    for (size_t i = 0; i < n; i++) {
        meter_buf_str(&out, lines[i]);
        meter_buf_str(&out, "\n");
        free(lines[i]);
    }
    free(lines);
    *count = n;
    return out.p ? out.p : strdup("");
}

/* The shards' seconds against the single server's: equal, and count. */
static void
same_as_one(struct fixture *f, size_t want, int line)
{
    size_t n_sharded, n_one;
    /* The catalog holds no bucket (and refuses to read usage). */
    char *sharded = stored((PGconn *[]){f->s1, f->s2}, 2, &n_sharded);
    char *one = stored(&f->one, 1, &n_one);
    if (strcmp(sharded, one) != 0 || n_one != want) {
        fprintf(stderr,
                "%s:%d: shards hold %zu seconds, the single server %zu, "
                "want %zu%s\n",
                __FILE__, line, n_sharded, n_one, want,
                strcmp(sharded, one) ? " (and they differ)" : "");
        test_failures++;
    }
    free(sharded);
    free(one);
}

/* The single server's meter_ingest of the same batch. */
static void
single(PGconn *one, struct meter_registry *reg, const struct meter_sample *s,
       size_t n, const struct meter_ingest_result *want)
{
    struct meter_ingest_origin o = {.now_us = (JAN + 86400) * 1000000};
    struct meter_problems probs = {0};
    struct meter_err e = {{0}};
    struct meter_ingest_result res;
    CHECK(meter_ingest(one, reg, s, n, &o, &res, &probs, &e) ==
          METER_INGEST_OK);
    CHECK(res.accepted == want->accepted &&
          res.duplicates == want->duplicates &&
          res.conflicts == want->conflicts);
}

/* Prepared parts left anywhere. */
static long
prepared(struct fixture *f)
{
    return testdb_count(f->cat, "SELECT count(*) FROM pg_prepared_xacts"
                                " WHERE gid LIKE 'meter:%'");
}

static void
test_split(struct fixture *f, struct meter_registry *reg)
{
    size_t n = ACCOUNTS * SANDBOXES * SECONDS;
    struct meter_sample *s = malloc(n * sizeof(*s));
    make_batch(s, JAN, SECONDS);
    struct proc p = proc_new();
    struct meter_ingest_result res;
    CHECK(routed(f->cat, &p, s, n, &res) == METER_INGEST_OK);
    CHECK(res.accepted == n && res.duplicates == 0 &&
          res.sandboxes == ACCOUNTS * SANDBOXES);
    single(f->one, reg, s, n, &res);
    same_as_one(f, n, __LINE__);
    /* Each account's usage on its bucket's shard, none in the catalog. */
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM usage_blocks") == 0);
    CHECK(testdb_count(f->s1, "SELECT count(*) FROM sandboxes s JOIN"
                              " accounts a USING (account_pk)"
                              " WHERE meter_bucket(a.account_pk) >= 32") == 0);
    CHECK(testdb_count(f->s2, "SELECT count(*) FROM sandboxes s JOIN"
                              " accounts a USING (account_pk)"
                              " WHERE meter_bucket(a.account_pk) < 32") == 0);
    CHECK(testdb_count(f->s1, "SELECT count(*) FROM sandboxes") > 0);
    CHECK(testdb_count(f->s2, "SELECT count(*) FROM sandboxes") > 0);
    /* The shards' account rows are the catalog's keys. */
    CHECK(testdb_count(f->s1, "SELECT count(*) FROM accounts") +
              testdb_count(f->s2, "SELECT count(*) FROM accounts") ==
          ACCOUNTS);
    /* A shard's connection keeps TCP alive (a shard gone at the
     * network is found), the conninfo's own settings aside. */
    struct meter_err ce = {{0}};
    PGconn *s1 = meter_shard_links_conn(p.l, f->cat, 1, &ce);
    CHECK(s1 != NULL && s1 != f->cat);
    PQconninfoOption *opts = s1 ? PQconninfo(s1) : NULL;
    bool alive = false;
    for (PQconninfoOption *x = opts; x && x->keyword; x++)
        alive = alive || (strcmp(x->keyword, "keepalives_idle") == 0 &&
                          x->val && strcmp(x->val, "10") == 0);
    CHECK(alive);
    PQconninfoFree(opts);
    /* Sent again, by another process: all duplicates. */
    struct proc q = proc_new();
    CHECK(routed(f->cat, &q, s, n, &res) == METER_INGEST_OK);
    CHECK(res.accepted == 0 && res.duplicates == n);
    CHECK(prepared(f) == 0);
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM shard_commits") == 0);
    proc_free(&q);
    proc_free(&p);
    free(s);
}

/* Two processes, each sending overlapping halves, at once. */
struct sender {
    struct testdb *t;
    const struct meter_sample *s;
    size_t n;
    uint64_t accepted, duplicates;
    int failures;
};

static void *
send_all(void *arg)
{
    struct sender *x = arg;
    PGconn *cat = PQconnectdb(x->t->conninfo);
    struct proc p = proc_new();
    /* Batches of a few accounts' seconds, each sent twice. */
    for (size_t at = 0; at < x->n; at += 500)
        for (int twice = 0; twice < 2; twice++) {
            struct meter_ingest_result res;
            size_t k = x->n - at < 500 ? x->n - at : 500;
            if (routed(cat, &p, x->s + at, k, &res) != METER_INGEST_OK)
                x->failures++;
            x->accepted += res.accepted;
            x->duplicates += res.duplicates;
        }
    proc_free(&p);
    PQfinish(cat);
    return NULL;
}

static void
test_replicas(struct fixture *f, struct meter_registry *reg)
{
    size_t n = ACCOUNTS * SANDBOXES * SECONDS;
    struct meter_sample *s = malloc(n * sizeof(*s));
    make_batch(s, JAN + 3600, SECONDS);
    /* The first sends it all, the second its last two thirds. */
    struct sender a = {&f->cat_t, s, n, 0, 0, 0};
    struct sender b = {&f->cat_t, s + n / 3, n - n / 3, 0, 0, 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, send_all, &a);
    pthread_create(&tb, NULL, send_all, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.failures == 0 && b.failures == 0);
    CHECK(a.accepted + b.accepted == n);
    CHECK(a.duplicates + b.duplicates == n + 2 * (n - n / 3));
    struct meter_ingest_result want = {n, 0, 0, 0};
    single(f->one, reg, s, n, &want);
    same_as_one(f, 2 * (size_t)ACCOUNTS * SANDBOXES * SECONDS, __LINE__);
    CHECK(prepared(f) == 0);
    free(s);
}

/* A month archived on one shard: the batch is refused whole, nothing
 * stored on the other shard, no part left prepared. */
static void
test_refused_whole(struct fixture *f)
{
    const int64_t mar = 1772323200; /* 2026-03-01 */
    size_t n = ACCOUNTS * SANDBOXES * 2;
    struct meter_sample *s = malloc(n * sizeof(*s));
    make_batch(s, mar + 60, 2);
    testdb_sql(f->s2, "SELECT usage_blocks_partition('2026-03-01')");
    testdb_sql(f->s2, "ALTER TABLE usage_blocks DETACH PARTITION"
                      " usage_blocks_202603");
    struct proc p = proc_new();
    struct meter_ingest_origin o = {.now_us = (mar + 86400) * 1000000};
    struct meter_problems probs = {0};
    struct meter_err e = {{0}};
    struct meter_ingest_result res;
    long before = testdb_count(f->s1, "SELECT count(*) FROM usage_blocks");
    CHECK(meter_ingest_routed(f->cat, p.sh, p.l, s, n, &o, &res, &probs, &e) ==
          METER_INGEST_INVALID);
    CHECK(probs.total == 1 && strstr(probs.items[0].err.reason, "archived"));
    CHECK(testdb_count(f->s1, "SELECT count(*) FROM usage_blocks") == before);
    CHECK(prepared(f) == 0);
    testdb_sql(f->s2, "ALTER TABLE usage_blocks ATTACH PARTITION"
                      " usage_blocks_202603 FOR VALUES FROM (29538720)"
                      " TO (29583360)");
    proc_free(&p);
    free(s);
}

/* Between the commits: the next part's backend killed (committed on a
 * new connection, answered OK), then its shard made unreachable (left
 * prepared: UNAVAILABLE; the resolver commits it once the shard is
 * back, and the resend counts duplicates). */
struct kill {
    PGconn *admin;
    const char *lock_db; /* also refuse connections to it, or NULL */
    int calls;
};

static void
kill_next(PGconn *next, void *arg)
{
    struct kill *k = arg;
    char sql[256];
    k->calls++;
    if (k->lock_db) {
        snprintf(sql, sizeof(sql),
                 "ALTER DATABASE %s WITH ALLOW_CONNECTIONS false", k->lock_db);
        testdb_sql(k->admin, sql);
    }
    snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%d)",
             PQbackendPID(next));
    testdb_sql(k->admin, sql);
}

static void
test_killed_between(struct fixture *f, struct meter_registry *reg)
{
    size_t n = ACCOUNTS * SANDBOXES * 10;
    struct meter_sample *s = malloc(n * sizeof(*s));
    struct proc p = proc_new();
    struct kill k = {f->cat, NULL, 0};
    struct meter_ingest_result res;
    size_t total = 2 * (size_t)ACCOUNTS * SANDBOXES * SECONDS;

    make_batch(s, JAN + 7200, 10);
    meter_shard_links_hook(p.l, kill_next, &k);
    CHECK(routed(f->cat, &p, s, n, &res) == METER_INGEST_OK);
    CHECK(k.calls == 1 && res.accepted == n);
    single(f->one, reg, s, n, &res);
    same_as_one(f, total += n, __LINE__);

    /* The shard lost for good between the commits. */
    make_batch(s, JAN + 7300, 10);
    k = (struct kill){f->cat, f->s2_t.name, 0};
    CHECK(routed(f->cat, &p, s, n, &res) == METER_INGEST_UNAVAILABLE);
    CHECK(k.calls == 1);
    CHECK(prepared(f) == 1);
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM shard_commits"
                               " WHERE committed") == 1);
    /* Unreachable, the resolver fails and forgets nothing. */
    long settled = -1;
    struct meter_err e = {{0}};
    CHECK(meter_db_shards_resolve(f->cat, p.l, 60, &settled, &e) < 0);
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM shard_commits") == 1);
    char sql[256];
    snprintf(sql, sizeof(sql), "ALTER DATABASE %s WITH ALLOW_CONNECTIONS true",
             f->s2_t.name);
    testdb_sql(f->cat, sql);
    meter_shard_links_hook(p.l, NULL, NULL);
    CHECK(meter_db_shards_resolve(f->cat, p.l, 60, &settled, &e) == 0);
    CHECK(settled == 1);
    CHECK(prepared(f) == 0);
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM shard_commits") == 0);
    struct meter_ingest_result want = {n, 0, 0, 0};
    single(f->one, reg, s, n, &want);
    same_as_one(f, total += n, __LINE__);
    /* The resend: every second a duplicate. */
    CHECK(routed(f->cat, &p, s, n, &res) == METER_INGEST_OK);
    CHECK(res.accepted == 0 && res.duplicates == n);
    proc_free(&p);
    free(s);
}

/* A process whose map is stale: bucket 0's accounts moved to shard 2
 * after it read the map; shard 1 refuses, it reads the map again. */
static void
test_stale_map(struct fixture *f, struct meter_registry *reg)
{
    struct proc p = proc_new();
    size_t n = ACCOUNTS * SANDBOXES;
    struct meter_sample *s = malloc(n * sizeof(*s));
    struct meter_ingest_result res;
    make_batch(s, JAN + 9000, 1);
    CHECK(routed(f->cat, &p, s, n, &res) == METER_INGEST_OK);
    /* Every bucket of shard 1 goes to shard 2 (no usage moves: the test
     * writes new seconds only). */
    testdb_sql(f->cat,
               "UPDATE shard_buckets SET shard_id = 2, epoch = epoch + 1"
               " WHERE shard_id = 1");
    testdb_sql(f->s1, "DELETE FROM bucket_holds");
    testdb_sql(f->s2, "INSERT INTO bucket_holds SELECT generate_series(0, 31)");
    long before = testdb_count(f->s2, "SELECT count(*) FROM usage_blocks");
    make_batch(s, JAN + 9001, 1);
    CHECK(routed(f->cat, &p, s, n, &res) == METER_INGEST_OK);
    CHECK(res.accepted == n);
    CHECK(testdb_count(f->s2, "SELECT count(*) FROM usage_blocks") ==
          before + (long)n);
    /* The map as it was, for the tests after: the moved accounts'
     * seconds out of shard 2 again (a move copies them, the test does
     * not) and sent again, to shard 1 now; the single server gets both
     * batches. */
    testdb_sql(f->s2, "DELETE FROM usage_blocks b USING accounts a"
                      " WHERE a.account_pk = b.account_pk"
                      " AND meter_bucket(a.account_pk) < 32");
    testdb_sql(f->cat,
               "UPDATE shard_buckets SET shard_id = 1, epoch = epoch + 1"
               " WHERE bucket < 32");
    testdb_sql(f->s2, "DELETE FROM bucket_holds WHERE bucket < 32");
    testdb_sql(f->s1, "INSERT INTO bucket_holds SELECT generate_series(0, 31)");
    CHECK(routed(f->cat, &p, s, n, &res) == METER_INGEST_OK);
    CHECK(res.accepted + res.duplicates == n && res.accepted > 0 &&
          res.duplicates > 0);
    struct meter_ingest_result want = {n, 0, 0, 0};
    single(f->one, reg, s, n, &want);
    make_batch(s, JAN + 9000, 1);
    single(f->one, reg, s, n, &want);
    same_as_one(f, 2 * (size_t)ACCOUNTS * SANDBOXES * SECONDS + 20 * n + 2 * n,
                __LINE__);
    proc_free(&p);
    free(s);
}

/* A part prepared and never decided (its meterd gone before the
 * decision): kept while young, rolled back once older than the grace,
 * its decision written as a rollback first. */
static void
test_undecided(struct fixture *f)
{
    struct proc p = proc_new();
    testdb_sql(f->s1, "BEGIN");
    testdb_sql(f->s1, "INSERT INTO accounts (account_pk, account_id)"
                      " OVERRIDING SYSTEM VALUE VALUES (999999, 'undecided')");
    testdb_sql(f->s1, "PREPARE TRANSACTION"
                      " 'meter:0123456789abcdef0123456789abcdef:1'");
    long settled;
    struct meter_err e = {{0}};
    CHECK(meter_db_shards_resolve(f->cat, p.l, 3600, &settled, &e) == 0);
    CHECK(settled == 0 && prepared(f) == 1);
    CHECK(meter_db_shards_resolve(f->cat, p.l, 0, &settled, &e) == 0);
    CHECK(settled == 1 && prepared(f) == 0);
    CHECK(testdb_count(f->s1, "SELECT count(*) FROM accounts"
                              " WHERE account_id = 'undecided'") == 0);
    /* The rollback outlives later sweeps: a part of its batch still on
     * its way to PREPARE must find it, not commit alone. */
    CHECK(meter_db_shards_resolve(f->cat, p.l, 0, &settled, &e) == 0);
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM shard_commits"
                               " WHERE gid = 'meter:0123456789abcdef"
                               "0123456789abcdef' AND NOT committed") == 1);
    proc_free(&p);
}

/* Two documents equal but for their ids and times (each database made
 * its own), compared as the JSON they are served as. */
static void
same_document(struct report_invoice *a, struct report_invoice *b, int line)
{
    struct report_invoice *d[] = {a, b};
    char *text[2];
    for (int i = 0; i < 2; i++) {
        d[i]->id = 0;
        d[i]->created_at[0] = d[i]->finalized_at[0] = d[i]->sha256[0] = '\0';
        json_t *j = report_invoice_json(d[i]);
        text[i] = j ? json_dumps(j, JSON_SORT_KEYS) : NULL;
        json_decref(j);
    }
    if (!text[0] || !text[1] || strcmp(text[0], text[1]) != 0) {
        fprintf(stderr, "%s:%d: documents differ:\n  %s\n  %s\n", __FILE__,
                line, text[0] ? text[0] : "?", text[1] ? text[1] : "?");
        test_failures++;
    }
    free(text[0]);
    free(text[1]);
}

/* Runs (year, month) over the shards and on the single server, and
 * compares every account's documents. */
static void
same_run(struct fixture *f, struct proc *p, int year, int month, int line)
{
    const char *ids[ACCOUNTS];
    char names[ACCOUNTS][24];
    struct billing_outcome a[ACCOUNTS], b[ACCOUNTS];
    for (int k = 0; k < ACCOUNTS; k++) {
        snprintf(names[k], sizeof(names[k]), "acct-%02d", k);
        ids[k] = names[k];
    }
    struct meter_err e = {{0}};
    CHECK(billing_run(f->cat, p->l, ids, ACCOUNTS, year, month, true, "Seller",
                      a, &e) == METER_DB_ROWS);
    CHECK(billing_run(f->one, NULL, ids, ACCOUNTS, year, month, true, "Seller",
                      b, &e) == METER_DB_ROWS);
    int docs = 0;
    for (int k = 0; k < ACCOUNTS; k++) {
        if (a[k].failed || b[k].failed)
            fprintf(stderr, "%s:%d: %s: %s / %s\n", __FILE__, line, ids[k],
                    a[k].error, b[k].error);
        CHECK(!a[k].failed && !b[k].failed);
        CHECK(a[k].written == b[k].written && a[k].nother == b[k].nother &&
              a[k].samples == b[k].samples);
        if (!a[k].written || !b[k].written)
            continue;
        CHECK_STR(a[k].number, b[k].number);
        for (size_t x = 0; x <= a[k].nother && x <= b[k].nother; x++) {
            const char *na = x ? a[k].other[x - 1].number : a[k].number;
            const char *nb = x ? b[k].other[x - 1].number : b[k].number;
            struct report_invoice da = {0}, db = {0};
            CHECK(meter_db_invoice_get(f->cat, na, NULL, &da, &e) ==
                  METER_DB_ROWS);
            CHECK(meter_db_invoice_get(f->one, nb, NULL, &db, &e) ==
                  METER_DB_ROWS);
            same_document(&da, &db, line);
            docs++;
            report_invoice_release(&da);
            report_invoice_release(&db);
        }
    }
    CHECK(docs >= ACCOUNTS);
}

/* The invoice run over the shards: each account's usage read on its
 * shard, its documents written in the catalog, and they are the single
 * server's, numbers included: a book changed mid-month, a grant, then
 * late usage of a final month billed the month after. */
static void
test_invoices(struct fixture *f, struct meter_registry *reg)
{
    static const char *books[] = {
        "{\"id\": \"flat\", \"currency\": \"USD\", \"effective_from\": "
        "\"2025-01-01\", \"cpu\": {\"basis\": \"allocated\", \"rate\": "
        "\"0.001\", \"per\": \"second\"}, \"memory\": {\"basis\": "
        "\"allocated\", \"unit\": \"GiB\", \"rate\": \"0.0001\", \"per\": "
        "\"second\"}, \"storage\": {\"rate\": \"0.1\", \"per\": \"month\"}, "
        "\"egress\": {\"rate\": \"0.05\"}, \"per_run\": \"0.01\"}",
        "{\"id\": \"steep\", \"currency\": \"USD\", \"effective_from\": "
        "\"2025-01-01\", \"cpu\": {\"basis\": \"used\", \"rate\": "
        "\"0.002\", \"per\": \"minute\"}, \"memory\": {\"basis\": "
        "\"allocated\", \"unit\": \"GiB\", \"rate\": \"0\", \"per\": "
        "\"second\"}, \"storage\": {\"rate\": \"0\", \"per\": \"month\"}, "
        "\"egress\": {\"rate\": \"0\"}, \"per_run\": \"0\", "
        "\"granularity_s\": 60}",
    };
    PGconn *dbs[] = {f->cat, f->one};
    struct meter_err e = {{0}};
    char given[PRICING_ID_MAX + 1];
    for (int d = 0; d < 2; d++) {
        for (int b = 0; b < 2; b++)
            pricing_book_free(testdb_book_add(dbs[d], books[b]));
        for (int k = 0; k < ACCOUNTS; k++) {
            char id[24];
            snprintf(id, sizeof(id), "acct-%02d", k);
            testdb_account_add(dbs[d], id, "flat", "2026-01-01");
            /* Every third changes book in the middle of January. */
            if (k % 3 == 0)
                testdb_account_add(dbs[d], id, "steep", "2026-01-15");
        }
        CHECK(meter_db_grant_add(dbs[d], "acct-05", "1.50", 3, "welcome", JAN,
                                 given, &e) >= 0);
    }
    struct proc p = proc_new();
    same_run(f, &p, 2026, 1, __LINE__);
    /* Late seconds of January, then February's run bills them. */
    size_t n = ACCOUNTS * SANDBOXES * 5;
    struct meter_sample *s = malloc(n * sizeof(*s));
    struct meter_ingest_result res;
    make_batch(s, JAN + 20000, 5);
    CHECK(routed(f->cat, &p, s, n, &res) == METER_INGEST_OK);
    single(f->one, reg, s, n, &res);
    same_run(f, &p, 2026, 2, __LINE__);
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM invoice_lines"
                               " WHERE kind = 'late_usage'") > 0);
    /* A preview reads the account's usage on its shard too. */
    for (int k = 0; k < 2; k++) {
        const char *id = k ? "acct-07" : "acct-03";
        struct report_invoice pa = {0}, pb = {0};
        CHECK(billing_preview(f->cat, id, 2026, 1, NULL, &pa, &e) ==
              METER_DB_ROWS);
        CHECK(billing_preview(f->one, id, 2026, 1, NULL, &pb, &e) ==
              METER_DB_ROWS);
        CHECK(pa.nlines > 0);
        same_document(&pa, &pb, __LINE__);
        report_invoice_release(&pa);
        report_invoice_release(&pb);
    }
    proc_free(&p);
    free(s);
}

/* Usage read from part of it would be wrong: what reads usage on a
 * catalog that does not hold every bucket, without the shards, refuses,
 * naming why; an invoice run without them stores nothing rather than a
 * bill of no usage. (The run over the shards: test_invoices; the
 * reports, which read the shards: test_fleet_reads.c.) */
static void
test_reads_refused(struct fixture *f)
{
    struct meter_err e = {{0}};
    CHECK(!meter_usage_reader_new(f->cat, NULL, 0, JAN + 86400, &e));
    CHECK(strstr(e.msg, "gives this database 0 of the 64 buckets") != NULL);
    /* The reports read every shard (test_fleet_reads.c). */
    json_t *out = NULL;
    CHECK(meter_db_report_overview(f->cat, 2026, 1, JAN, &out, &e) ==
          METER_DB_ROWS);
    json_decref(out);
    out = NULL;
    /* One account's usage is read on its shard. */
    for (int k = 0; k < 2; k++) {
        const char *id = k ? "acct-07" : "acct-00";
        struct meter_usage_reader *r[2] = {
            meter_usage_reader_new(f->cat, id, 0, JAN + 86400 * 40, &e),
            meter_usage_reader_new(f->one, id, 0, JAN + 86400 * 40, &e)};
        uint64_t n[2] = {0, 0}, disk[2] = {0, 0};
        for (int d = 0; d < 2; d++) {
            CHECK(r[d] != NULL);
            if (!r[d])
                continue;
            struct pricing_source src = meter_usage_source(r[d]);
            struct pricing_block b;
            struct pricing_err pe = {{0}};
            while (src.next(src.ctx, &b, &pe) > 0)
                for (size_t i = 0; i < b.n; i++, n[d]++)
                    disk[d] += b.s[i].disk_bytes;
            meter_usage_reader_free(r[d]);
        }
        CHECK(n[0] > 0 && n[0] == n[1] && disk[0] == disk[1]);
    }
    long before = testdb_count(f->cat, "SELECT count(*) FROM invoices");
    struct billing_outcome o;
    CHECK(billing_run_one(f->cat, "acct-01", 2026, 3, false, "Seller", &o, &e) <
          0);
    CHECK(strstr(e.msg, "gives this database 0 of the 64 buckets") != NULL);
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM invoices") == before);
    /* The single server reads its own. */
    CHECK(meter_db_report_overview(f->one, 2026, 1, JAN, &out, &e) ==
          METER_DB_ROWS);
    json_decref(out);
}

/* A move whose target lags at the fence: in the move's note that the
 * copy is done, the target's usage_hourly is locked (its replication
 * stops at the next row of it) and a batch of the bucket goes to the
 * source; a thread lifts the lock 1.5 s later. The move must wait for
 * the target to catch up: the batch is on the target after it, none of
 * the bucket is left on the source, and the next batch, routed by a
 * stale map, is refused there and lands on the target. */
struct lagging {
    struct fixture *f;
    struct proc *p;
    struct meter_sample *s;
    long bucket;
    PGconn *src; /* the source, as its owner */
    PGconn *lock;
    pthread_t lifter;
    bool started;
};

static void *
lift_lock(void *arg)
{
    struct lagging *g = arg;
    struct timespec t = {1, 500000000L};
    nanosleep(&t, NULL);
    PQclear(PQexec(g->lock, "COMMIT"));
    return NULL;
}

/* The samples of seconds [from, from + 30) of the accounts of bucket
 * in s: how many. */
static size_t
in_bucket(struct fixture *f, struct meter_sample *s, long bucket, int64_t from)
{
    size_t n = make_batch(s, from, 30), k = 0;
    char q[256];
    for (size_t i = 0; i < n; i++) {
        snprintf(q, sizeof(q),
                 "SELECT meter_bucket(account_pk) FROM accounts"
                 " WHERE account_id = '%s'",
                 s[i].account_id);
        if (testdb_count(f->cat, q) == bucket)
            s[k++] = s[i];
    }
    return k;
}

static bool
lagging_note(void *arg, const char *line)
{
    struct lagging *g = arg;
    fprintf(stderr, "move: %s\n", line);
    if (strncmp(line, "copied in ", 10) != 0 || g->started)
        return true;
    /* A merge on the source meanwhile leaves the bucket alone: its
     * rollups marked merged there would stay unmerged on the target,
     * and be counted twice with the merged sums it receives. */
    uint64_t merged;
    struct meter_err e = {{0}};
    CHECK(meter_db_usage_merge(g->src, 1000000, &merged, &e) >= 0);
    char q[160];
    snprintf(q, sizeof(q),
             "SELECT count(*) FROM usage_hourly WHERE merged"
             " AND meter_bucket(account_pk) = %ld",
             g->bucket);
    CHECK(testdb_count(g->src, q) == 0);
    testdb_sql(g->lock, "BEGIN");
    testdb_sql(g->lock, "LOCK TABLE usage_hourly IN SHARE MODE");
    struct meter_ingest_result res;
    size_t n = in_bucket(g->f, g->s, g->bucket, JAN + 20030);
    CHECK(routed(g->f->cat, g->p, g->s, n, &res) == METER_INGEST_OK);
    CHECK(res.accepted == n && n > 0);
    g->started = pthread_create(&g->lifter, NULL, lift_lock, g) == 0;
    CHECK(g->started);
    return true;
}

static void
test_move(struct fixture *f)
{
    struct proc p = proc_new();
    size_t n = ACCOUNTS * SANDBOXES * 30;
    struct meter_sample *s = malloc(n * sizeof(*s));
    struct meter_ingest_result res;
    make_batch(s, JAN + 20000, 30);
    CHECK(routed(f->cat, &p, s, n, &res) == METER_INGEST_OK);
    long bucket = testdb_count(f->cat, "SELECT meter_bucket(account_pk)"
                                       " FROM accounts WHERE account_id ="
                                       " 'acct-00'");
    long in_bucket = testdb_count(f->cat, "SELECT count(*) FROM accounts a"
                                          " JOIN accounts b ON"
                                          " meter_bucket(a.account_pk) ="
                                          " meter_bucket(b.account_pk)"
                                          " WHERE b.account_id = 'acct-00'");
    PGconn *src = bucket < 32 ? f->s1 : f->s2,
           *dst = bucket < 32 ? f->s2 : f->s1;
    const char *dst_conninfo =
        bucket < 32 ? f->s2_t.conninfo : f->s1_t.conninfo;
    char q[256];
    snprintf(q, sizeof(q),
             "SELECT coalesce(sum(samples), 0) FROM usage_hourly_totals"
             " WHERE meter_bucket(account_pk) = %ld",
             bucket);
    long before = testdb_count(src, q);
    CHECK(before >= in_bucket * SANDBOXES * 30);

    struct meter_err e = {{0}};
    struct lagging g = {.f = f,
                        .p = &p,
                        .s = s,
                        .bucket = bucket,
                        .src = src,
                        .lock = meter_db_connect(dst_conninfo, &e)};
    CHECK(g.lock != NULL);
    CHECK(meter_db_shard_move(f->cat, (int)bucket, bucket < 32 ? "two" : "one",
                              NULL, 60, false, lagging_note, &g,
                              &e) == METER_DB_NONE);
    if (e.msg[0])
        fprintf(stderr, "move: %s\n", e.msg);
    CHECK(g.started);
    if (g.started)
        pthread_join(g.lifter, NULL);
    PQfinish(g.lock);
    long batch = in_bucket * SANDBOXES * 30;
    CHECK(testdb_count(dst, q) == before + batch);
    CHECK(testdb_count(src, q) == 0);
    snprintf(q, sizeof(q),
             "SELECT count(*) FROM sandboxes WHERE meter_bucket(account_pk)"
             " = %ld",
             bucket);
    CHECK(testdb_count(src, q) == 0);
    /* p's map is stale: the source refuses, the map is read again. */
    make_batch(s, JAN + 20060, 30);
    CHECK(routed(f->cat, &p, s, n, &res) == METER_INGEST_OK);
    CHECK(res.accepted == n);
    snprintf(q, sizeof(q),
             "SELECT coalesce(sum(samples), 0) FROM usage_hourly_totals"
             " WHERE meter_bucket(account_pk) = %ld",
             bucket);
    CHECK(testdb_count(dst, q) == before + 2 * batch);
    CHECK(testdb_count(src, q) == 0);
    proc_free(&p);
    free(s);
}

/* A move stopped after each of its steps, then run again: the bucket
 * ends up on the other shard whole, nothing of the move left; batches
 * stored meanwhile are there too, and one sent while the bucket is
 * fenced is refused. */
static const char *const stops[] = {"subscribed", "copied in", "fenced",
                                    "bucket ", "replication dropped"};

static bool
stop_note(void *arg, const char *line)
{
    const char *at = arg;
    fprintf(stderr, "move: %s\n", line);
    return strncmp(line, at, strlen(at)) != 0;
}

static long
leftovers(PGconn *db)
{
    return testdb_count(db, "SELECT (SELECT count(*) FROM bucket_moves)"
                            " + (SELECT count(*) FROM pg_publication)"
                            " + (SELECT count(*) FROM pg_subscription)"
                            " + (SELECT count(*) FROM pg_replication_slots)");
}

static void
test_move_resumed(struct fixture *f)
{
    struct proc p = proc_new();
    struct meter_sample *s = malloc(ACCOUNTS * SANDBOXES * 30 * sizeof(*s));
    long bucket = testdb_count(f->cat, "SELECT meter_bucket(account_pk)"
                                       " FROM accounts WHERE account_id ="
                                       " 'acct-05'");
    char q[256];
    snprintf(q, sizeof(q),
             "SELECT coalesce(sum(samples), 0) FROM usage_hourly_totals"
             " WHERE meter_bucket(account_pk) = %ld AND meter_bucket("
             "account_pk) IN (SELECT bucket FROM bucket_holds)",
             bucket);
    /* (test_stale_map left some of it where it is not held) */
    long total = testdb_count(f->s1, q) + testdb_count(f->s2, q);
    CHECK(total > 0);
    for (size_t k = 0; k < sizeof(stops) / sizeof(stops[0]); k++) {
        snprintf(q, sizeof(q),
                 "SELECT shard_id FROM shard_buckets WHERE bucket = %ld",
                 bucket);
        bool on_one = testdb_count(f->cat, q) == 1;
        PGconn *to = on_one ? f->s2 : f->s1, *from = on_one ? f->s1 : f->s2;
        const char *target = on_one ? "two" : "one";
        struct meter_err e = {{0}};
        CHECK(meter_db_shard_move(f->cat, (int)bucket, target, NULL, 60, false,
                                  stop_note, (void *)stops[k],
                                  &e) == METER_DB_HARD);
        CHECK(strstr(e.msg, "stopped after: ") != NULL);
        fprintf(stderr, "move: %s\n", e.msg);
        /* A batch of the bucket while the move is cut short. */
        size_t n = in_bucket(f, s, bucket, JAN + 30000 + 100 * (int64_t)k);
        struct meter_ingest_result res;
        enum meter_ingest_status st = routed(f->cat, &p, s, n, &res);
        if (strcmp(stops[k], "fenced") == 0) {
            CHECK(st == METER_INGEST_UNAVAILABLE);
        } else {
            CHECK(st == METER_INGEST_OK && res.accepted == n);
            total += (long)n;
        }
        e.msg[0] = '\0';
        CHECK(meter_db_shard_move(f->cat, (int)bucket, target, NULL, 60, false,
                                  NULL, NULL, &e) == METER_DB_NONE);
        if (e.msg[0])
            fprintf(stderr, "move again: %s\n", e.msg);
        snprintf(q, sizeof(q),
                 "SELECT coalesce(sum(samples), 0) FROM usage_hourly_totals"
                 " WHERE meter_bucket(account_pk) = %ld",
                 bucket);
        long there = testdb_count(to, q);
        if (there != total)
            fprintf(stderr, "bucket %ld: %ld seconds, want %ld\n", bucket,
                    there, total);
        CHECK(there == total);
        CHECK(testdb_count(from, q) == 0);
        CHECK(leftovers(f->s1) == 0 && leftovers(f->s2) == 0);
        snprintf(q, sizeof(q),
                 "SELECT count(*) FROM bucket_holds WHERE bucket = %ld"
                 " AND NOT moving",
                 bucket);
        CHECK(testdb_count(to, q) == 1 && testdb_count(from, q) == 0);
    }
    /* Called off once fenced: the source keeps the bucket, whole and
     * taking batches; nothing of the move is left; a move done is not
     * called off. */
    snprintf(q, sizeof(q),
             "SELECT shard_id FROM shard_buckets WHERE bucket = %ld", bucket);
    bool on_one = testdb_count(f->cat, q) == 1;
    PGconn *here = on_one ? f->s1 : f->s2, *there = on_one ? f->s2 : f->s1;
    const char *target = on_one ? "two" : "one";
    struct meter_err e = {{0}};
    CHECK(meter_db_shard_move(f->cat, (int)bucket, target, NULL, 60, false,
                              stop_note, (void *)"fenced",
                              &e) == METER_DB_HARD);
    CHECK(meter_db_shard_move(f->cat, (int)bucket, target, NULL, 60, true, NULL,
                              NULL, &e) == METER_DB_NONE);
    size_t n = in_bucket(f, s, bucket, JAN + 31000);
    struct meter_ingest_result res;
    CHECK(routed(f->cat, &p, s, n, &res) == METER_INGEST_OK &&
          res.accepted == n);
    total += (long)n;
    snprintf(q, sizeof(q),
             "SELECT coalesce(sum(samples), 0) FROM usage_hourly_totals"
             " WHERE meter_bucket(account_pk) = %ld",
             bucket);
    CHECK(testdb_count(here, q) == total);
    CHECK(testdb_count(there, q) == 0);
    CHECK(leftovers(f->s1) == 0 && leftovers(f->s2) == 0);
    CHECK(meter_db_shard_move(f->cat, (int)bucket, on_one ? "one" : "two", NULL,
                              60, true, NULL, NULL, &e) == METER_DB_HARD);
    CHECK(strstr(e.msg, "the move is done") != NULL);
    proc_free(&p);
    free(s);
}

static void
no_point(const struct meter_usage_point *p, void *arg)
{
    (void)p;
    (void)arg;
}

/* An account's shard refusing connections: its reads are SHARD_AWAY,
 * which counts as the database away (meterd's 503) though the catalog
 * answers, naming the shard and nothing of libpq's message; a run or a
 * preview of it stores nothing. */
static void
test_shard_away(struct fixture *f)
{
    struct meter_err e = {{0}};
    char sql[256], named[48];
    PGresult *r = PQexec(f->cat, "SELECT account_id FROM accounts WHERE"
                                 " meter_bucket(account_pk) >= 32"
                                 " ORDER BY 1 LIMIT 1");
    char id[PRICING_ID_MAX + 1] = "";
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        snprintf(id, sizeof(id), "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    CHECK(id[0] != '\0');
    snprintf(sql, sizeof(sql), "ALTER DATABASE %s WITH ALLOW_CONNECTIONS false",
             f->s2_t.name);
    testdb_sql(f->cat, sql);
    enum meter_db_status st = meter_db_usage_series(
        f->cat, id, 0, JAN + 86400 * 40, false, 0, 10, no_point, NULL, &e);
    CHECK(st == METER_DB_SHARD_AWAY);
    CHECK(meter_db_unavailable(f->cat, st) && !meter_db_lost(f->cat));
    meter_db_away_shard(&e, named);
    CHECK(strcmp(named, "shard 2 'two'") == 0);
    struct report_invoice inv = {0};
    CHECK(billing_preview(f->cat, id, 2026, 1, NULL, &inv, &e) ==
          METER_DB_SHARD_AWAY);
    meter_db_away_shard(&e, named);
    CHECK(strcmp(named, "shard 2") == 0);
    report_invoice_release(&inv);
    /* The run's fresh links: the shard named, nothing written. */
    long before = testdb_count(f->cat, "SELECT count(*) FROM invoices");
    struct proc p = proc_new();
    const char *ids[] = {id};
    struct billing_outcome o;
    CHECK(billing_run(f->cat, p.l, ids, 1, 2026, 1, false, "Seller", &o, &e) ==
          METER_DB_SHARD_AWAY);
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM invoices") == before);
    proc_free(&p);
    snprintf(sql, sizeof(sql), "ALTER DATABASE %s WITH ALLOW_CONNECTIONS true",
             f->s2_t.name);
    testdb_sql(f->cat, sql);
    CHECK(meter_db_usage_series(f->cat, id, 0, JAN + 86400 * 40, false, 0, 10,
                                no_point, NULL, &e) == METER_DB_ROWS);
    /* Only what names a shard so: no other message gives a name. */
    static const char *const not_named[] = {
        "shard 'x' already holds usage (5 rows): a new shard must be empty",
        "cannot connect to the database at host 'h': refused",
        "shard 2 is not in the shard map",
        "",
    };
    for (size_t i = 0; i < sizeof(not_named) / sizeof(*not_named); i++) {
        meter_fail(&e, "%s", not_named[i]);
        meter_db_away_shard(&e, named);
        CHECK(named[0] == '\0');
    }
}

/* shard add tells a database by what it is, not by its conninfo: the
 * catalog's own and shard one's, each by a conninfo not listed. */
static void
test_add_listed(struct fixture *f)
{
    struct meter_err e = {{0}};
    char other[sizeof(f->cat_t.conninfo) + 32];
    snprintf(other, sizeof(other), "%s application_name=again",
             f->cat_t.conninfo);
    CHECK(meter_db_shard_add(f->cat, "again", other, &e) == METER_DB_HARD);
    CHECK(strstr(e.msg, "listed already as shard 'local' (the catalog's own "
                        "database)") != NULL);
    snprintf(other, sizeof(other), "%s application_name=again",
             f->s1_t.conninfo);
    CHECK(meter_db_shard_add(f->cat, "again", other, &e) == METER_DB_HARD);
    CHECK(strstr(e.msg, "listed already as shard 'one'") != NULL);
    CHECK(testdb_count(f->cat, "SELECT count(*) FROM shards") == 3);
}

int
main(void)
{
    struct fixture f;
    fixture_up(&f);
    struct meter_registry *reg = meter_registry_new();
    test_split(&f, reg);
    test_replicas(&f, reg);
    test_refused_whole(&f);
    test_killed_between(&f, reg);
    test_stale_map(&f, reg);
    test_undecided(&f);
    test_invoices(&f, reg);
    test_reads_refused(&f);
    test_shard_away(&f);
    test_add_listed(&f);
    test_move(&f);
    test_move_resumed(&f);
    meter_registry_free(reg);
    fixture_down(&f);
    return test_result();
}
