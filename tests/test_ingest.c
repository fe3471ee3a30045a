/*
 * test_ingest.c - the ingest transaction against a real PostgreSQL,
 * without HTTP: exactly once (duplicates and conflicts, across batches
 * and within one, the first value standing), the future cutoff on both
 * sides, a sandbox's account, atomicity, a second process's registry,
 * month boundaries, the read-back range's ends, and the rollups; a
 * batch that waits for another only if they share a sandbox; and the
 * transaction runner it goes through.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meter_db.h"
#include "testdb.h"

#define JAN 1767225600LL /* 2026-01-01T00:00:00Z */
#define FEB 1769904000LL /* 2026-02-01T00:00:00Z */
#define NOW_US(s) ((int64_t)(s)*1000000)

static struct meter_sample
paused(const char *account, const char *sandbox, int64_t ts, uint64_t disk)
{
    struct meter_sample m = {.s = {ts, 0, 0, 0, 0, disk, 0}};
    snprintf(m.account_id, sizeof(m.account_id), "%s", account);
    snprintf(m.sandbox_id, sizeof(m.sandbox_id), "%s", sandbox);
    return m;
}

/* The acceptance window ingest() passes: 0, none, unless a test sets it. */
static int64_t max_age;

struct outcome {
    enum meter_ingest_status st;
    struct meter_ingest_result res;
    struct meter_problems probs;
    struct meter_err e;
};

static struct outcome
ingest(PGconn *db, struct meter_registry *reg, const struct meter_sample *s,
       size_t n, int64_t now)
{
    struct outcome o;
    memset(&o, 0, sizeof(o));
    struct meter_ingest_origin from = {.now_us = NOW_US(now),
                                       .max_age = max_age};
    o.st = meter_ingest(db, reg, s, n, &from, &o.res, &o.probs, &o.e);
    if (o.st == METER_INGEST_ERROR || o.st == METER_INGEST_UNAVAILABLE)
        fprintf(stderr, "ingest: %s\n", o.e.msg);
    return o;
}

static bool
result_is(const struct outcome *o, uint64_t accepted, uint64_t dups,
          uint64_t conflicts)
{
    bool ok = o->st == METER_INGEST_OK && o->res.accepted == accepted &&
              o->res.duplicates == dups && o->res.conflicts == conflicts;
    if (!ok)
        fprintf(stderr,
                "status %d: accepted %llu duplicates %llu conflicts "
                "%llu, want %llu %llu %llu\n",
                o->st, (unsigned long long)o->res.accepted,
                (unsigned long long)o->res.duplicates,
                (unsigned long long)o->res.conflicts,
                (unsigned long long)accepted, (unsigned long long)dups,
                (unsigned long long)conflicts);
    return ok;
}

/* The stored seconds of [from, to) of account (NULL: all), by reading
 * them back; *disk_sum and *egress_sum sum their disk_bytes and
 * egress_bytes. */
static size_t
stored_sums(PGconn *db, const char *account, int64_t from, int64_t to,
            uint64_t *disk_sum, uint64_t *egress_sum)
{
    struct meter_err e = {{0}};
    struct pricing_err pe = {{0}};
    struct meter_usage_reader *r =
        meter_usage_reader_new(db, account, from, to, &e);
    size_t n = 0;
    *disk_sum = *egress_sum = 0;
    if (!r) {
        fprintf(stderr, "reader: %s\n", e.msg);
        test_failures++;
        return 0;
    }
    struct pricing_source src = meter_usage_source(r);
    struct pricing_block b;
    int got;
    while ((got = src.next(src.ctx, &b, &pe)) > 0)
        for (size_t i = 0; i < b.n; i++) {
            n++;
            *disk_sum += b.s[i].disk_bytes;
            *egress_sum += b.s[i].egress_bytes;
        }
    CHECK(got == 0);
    meter_usage_reader_free(r);
    return n;
}

/* stored_sums without egress. */
static size_t
stored(PGconn *db, const char *account, int64_t from, int64_t to,
       uint64_t *disk_sum)
{
    uint64_t egress;
    return stored_sums(db, account, from, to, disk_sum, &egress);
}

/* A repeated second that differs from the one that stands only in
 * egress_bytes is a conflict, not a duplicate (rules section 1: equal
 * values after defaults, egress 0 when omitted): against a stored
 * second, and within one batch. The first value stands. */
static void
test_egress_repeat(PGconn *db, struct meter_registry *reg)
{
    /* A running second and a paused one, each with 100 bytes sent. */
    struct meter_sample first[] = {
        {.s = {JAN + 100, 20000, 5000, 1 << 20, 1 << 20, 7, 100}},
        paused("egr", "eg-1", JAN + 101, 7)};
    snprintf(first[0].account_id, sizeof(first[0].account_id), "egr");
    snprintf(first[0].sandbox_id, sizeof(first[0].sandbox_id), "eg-1");
    first[1].s.egress_bytes = 100;
    struct outcome o = ingest(db, reg, first, 2, JAN);
    CHECK(result_is(&o, 2, 0, 0));
    static const struct {
        uint64_t egress;
        bool duplicate;
    } cases[] = {
        {100, true},  /* equal: a duplicate */
        {101, false}, /* a byte more: a conflict */
        {99, false},  /* a byte less: a conflict */
        {0, false},   /* omitted (0): a conflict */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct meter_sample again[2] = {first[0], first[1]};
        again[0].s.egress_bytes = again[1].s.egress_bytes = cases[i].egress;
        o = ingest(db, reg, again, 2, JAN);
        CHECK(result_is(&o, 0, cases[i].duplicate ? 2 : 0,
                        cases[i].duplicate ? 0 : 2));
    }
    uint64_t disk, egress;
    CHECK(stored_sums(db, "egr", JAN, JAN + 3600, &disk, &egress) == 2);
    CHECK(egress == 200);
    /* New seconds within one batch: 5, 5, 6 bytes is one stored, one
     * duplicate, one conflict; 5 stands. */
    struct meter_sample vvw[] = {paused("egr", "eg-2", JAN, 0),
                                 paused("egr", "eg-2", JAN, 0),
                                 paused("egr", "eg-2", JAN, 0)};
    vvw[0].s.egress_bytes = vvw[1].s.egress_bytes = 5;
    vvw[2].s.egress_bytes = 6;
    o = ingest(db, reg, vvw, 3, JAN);
    CHECK(result_is(&o, 1, 1, 1));
    CHECK(stored_sums(db, "egr", JAN, JAN + 3600, &disk, &egress) == 3);
    CHECK(egress == 200 + 5);
}

static void
test_exactly_once(PGconn *db, struct meter_registry *reg)
{
    struct meter_sample a[] = {paused("acme", "sb-1", JAN, 1),
                               paused("acme", "sb-1", JAN + 1, 2)};
    struct outcome o = ingest(db, reg, a, 2, JAN);
    CHECK(result_is(&o, 2, 0, 0));
    o = ingest(db, reg, a, 2, JAN);
    CHECK(result_is(&o, 0, 2, 0));
    /* A changed value is a conflict; the first value stands. */
    struct meter_sample w = paused("acme", "sb-1", JAN, 100);
    o = ingest(db, reg, &w, 1, JAN);
    CHECK(result_is(&o, 0, 0, 1));
    uint64_t disk;
    CHECK(stored(db, "acme", JAN, JAN + 2, &disk) == 2 && disk == 3);
    /* Within one batch of new seconds: V, W, V is one stored, one
     * conflict, one duplicate (judged against the first). */
    struct meter_sample vwv[] = {paused("acme", "sb-2", JAN, 5),
                                 paused("acme", "sb-2", JAN, 6),
                                 paused("acme", "sb-2", JAN, 5)};
    o = ingest(db, reg, vwv, 3, JAN);
    CHECK(result_is(&o, 1, 1, 1));
    CHECK(stored(db, "acme", JAN, JAN + 1, &disk) == 2 && disk == 1 + 5);
    /* Against a stored second: W, W after V is two conflicts. */
    struct meter_sample ww[] = {paused("acme", "sb-2", JAN, 6),
                                paused("acme", "sb-2", JAN, 6)};
    o = ingest(db, reg, ww, 2, JAN);
    CHECK(result_is(&o, 0, 0, 2));
    /* An empty batch stores nothing and succeeds. */
    o = ingest(db, reg, NULL, 0, JAN);
    CHECK(result_is(&o, 0, 0, 0));

    /* Order: a sandbox's seconds in two runs apart, in order (the runs
     * are the order); then runs that meet on one second (every sample
     * sorted): the first in batch order stands. */
    struct meter_sample apart[] = {
        paused("ord", "sb-5", JAN, 1), paused("ord", "sb-5", JAN + 1, 2),
        paused("ord", "sb-6", JAN, 4), paused("ord", "sb-5", JAN + 2, 8),
        paused("ord", "sb-5", JAN + 3, 16)};
    o = ingest(db, reg, apart, 5, JAN);
    CHECK(result_is(&o, 5, 0, 0));
    CHECK(stored(db, "ord", JAN, JAN + 4, &disk) == 5 && disk == 31);
    struct meter_sample meet[] = {paused("ord", "sb-7", JAN + 2, 100),
                                  paused("ord", "sb-8", JAN, 1),
                                  paused("ord", "sb-7", JAN, 200),
                                  paused("ord", "sb-7", JAN + 1, 400),
                                  paused("ord", "sb-7", JAN + 2, 800),
                                  paused("ord", "sb-7", JAN + 2, 100)};
    o = ingest(db, reg, meet, 6, JAN);
    CHECK(result_is(&o, 4, 1, 1));
    CHECK(stored(db, "ord", JAN + 2, JAN + 3, &disk) == 2 && disk == 8 + 100);
}

static void
test_refusals(PGconn *db, struct meter_registry *reg)
{
    /* 300 s ahead of now is accepted; 301 is not. */
    struct meter_sample edge = paused("acme", "sb-3", JAN + 300, 1);
    struct outcome o = ingest(db, reg, &edge, 1, JAN);
    CHECK(result_is(&o, 1, 0, 0));
    struct meter_sample past = paused("acme", "sb-3", JAN + 301, 1);
    o = ingest(db, reg, &past, 1, JAN);
    CHECK(o.st == METER_INGEST_INVALID && o.probs.total == 1);
    CHECK_STR(o.probs.items[0].err.field, "ts");
    CHECK_STR(o.probs.items[0].err.value, "1767225901");
    CHECK(strstr(o.probs.items[0].err.reason, "5 minutes in the future"));

    /* The same sandbox_id under another account is another sandbox
     * (0016_keys_by_account): stored beside acme's sb-1, its seconds
     * neither duplicates nor conflicts of acme's, and its own repeats
     * duplicates of its own. */
    long before = testdb_count(db, "SELECT count(*) FROM usage_blocks");
    struct meter_sample mixed[] = {paused("acme", "sb-new", JAN + 10, 1),
                                   paused("other", "sb-1", JAN + 10, 2)};
    o = ingest(db, reg, mixed, 2, JAN);
    CHECK(result_is(&o, 2, 0, 0));
    CHECK(testdb_count(db, "SELECT count(*) FROM usage_blocks") == before + 2);
    CHECK(testdb_count(db, "SELECT count(*) FROM sandboxes s JOIN accounts a"
                           " USING (account_pk) WHERE s.sandbox_id = 'sb-1'"
                           " AND a.account_id IN ('acme', 'other')") == 2);
    struct meter_sample again = paused("other", "sb-1", JAN + 10, 3);
    o = ingest(db, reg, &again, 1, JAN);
    CHECK(result_is(&o, 0, 0, 1));
    /* One new sandbox id under two accounts in one batch, at the same
     * second: two sandboxes, each a second; sent again, through this
     * registry and through one that knows nothing, two duplicates. */
    struct meter_sample two[] = {paused("x", "sb-9", JAN, 1),
                                 paused("y", "sb-9", JAN, 1)};
    o = ingest(db, reg, two, 2, JAN);
    CHECK(result_is(&o, 2, 0, 0));
    o = ingest(db, reg, two, 2, JAN);
    CHECK(result_is(&o, 0, 2, 0));
    struct meter_registry *fresh = meter_registry_new();
    o = ingest(db, fresh, two, 2, JAN);
    CHECK(result_is(&o, 0, 2, 0));
    meter_registry_free(fresh);
    /* Accounts seen first in samples are created, marked as such. */
    CHECK(testdb_count(db,
                       "SELECT count(*) FROM accounts WHERE account_id = 'acme'"
                       " AND auto_created") == 1);

    /* The acceptance window: with 400 days, a sample exactly 400 days
     * old is taken, one a second older refused naming ts, and a
     * refused batch creates no partition for its month. */
    const char *parts = "SELECT count(*) FROM pg_inherits"
                        " WHERE inhparent = 'usage_blocks'::regclass";
    max_age = 400 * 86400LL;
    const int64_t now = JAN + 400 * 86400LL;
    struct meter_sample oldest = paused("acme", "sb-old", now - max_age, 1);
    o = ingest(db, reg, &oldest, 1, now);
    CHECK(o.st == METER_INGEST_OK && o.res.accepted == 1);
    long nparts = testdb_count(db, parts);
    struct meter_sample older =
        paused("acme", "sb-old2", JAN - 400 * 86400LL, 1);
    o = ingest(db, reg, &older, 1, now);
    CHECK(o.st == METER_INGEST_INVALID && o.probs.total == 1);
    CHECK_STR(o.probs.items[0].err.field, "ts");
    CHECK(strstr(o.probs.items[0].err.reason, "older than the 400 days"));
    older.s.ts = now - max_age - 1;
    o = ingest(db, reg, &older, 1, now);
    CHECK(o.st == METER_INGEST_INVALID && o.probs.total == 1);
    CHECK(testdb_count(db, parts) == nparts);
    max_age = 0;
}

/* Archiving a month is detaching its partition: its samples are then
 * refused naming the month, whether this process knew the partition or
 * not; other months are taken; reattached, it takes samples again. */
static void
test_archived(PGconn *db, struct meter_registry *reg)
{
    const int64_t jun = 1780272000; /* 2026-06-01 */
    struct meter_sample a = paused("acme", "sb-arch", jun + 10, 1);
    struct outcome o = ingest(db, reg, &a, 1, jun + 3600);
    CHECK(result_is(&o, 1, 0, 0));
    PGresult *r = PQexec(db, "ALTER TABLE usage_blocks DETACH PARTITION"
                             " usage_blocks_202606");
    CHECK(PQresultStatus(r) == PGRES_COMMAND_OK);
    PQclear(r);
    struct meter_registry *fresh = meter_registry_new();
    struct meter_registry *both[] = {reg, fresh};
    for (int i = 0; i < 2; i++) {
        struct meter_sample late = paused("acme", "sb-arch", jun + 20, 1);
        o = ingest(db, both[i], &late, 1, jun + 3600);
        CHECK(o.st == METER_INGEST_INVALID && o.probs.total == 1);
        CHECK_STR(o.probs.items[0].err.field, "ts");
        CHECK(strstr(o.probs.items[0].err.reason,
                     "month 2026-06 is archived") != NULL);
    }
    struct meter_sample july = paused("acme", "sb-arch", jun + 30 * 86400, 1);
    o = ingest(db, fresh, &july, 1, jun + 31 * 86400);
    CHECK(result_is(&o, 1, 0, 0));
    r = PQexec(db, "ALTER TABLE usage_blocks ATTACH PARTITION"
                   " usage_blocks_202606 FOR VALUES FROM (29671200) TO"
                   " (29714400)");
    CHECK(PQresultStatus(r) == PGRES_COMMAND_OK);
    PQclear(r);
    struct meter_sample back = paused("acme", "sb-arch", jun + 20, 1);
    o = ingest(db, fresh, &back, 1, jun + 3600);
    CHECK(result_is(&o, 1, 0, 0));
    meter_registry_free(fresh);
}

static void
test_second_process(PGconn *db)
{
    /* Another meterd (its own empty registry) agrees on what is stored
     * and on which account's sandbox is which. */
    struct meter_registry *other = meter_registry_new();
    struct meter_sample a[] = {paused("acme", "sb-1", JAN, 1),
                               paused("acme", "sb-1", JAN + 2, 7)};
    struct outcome o = ingest(db, other, a, 2, JAN);
    CHECK(result_is(&o, 1, 1, 0));
    struct meter_sample theirs = paused("other", "sb-1", JAN + 10, 2);
    o = ingest(db, other, &theirs, 1, JAN);
    CHECK(result_is(&o, 0, 1, 0));
    meter_registry_free(other);
}

/* sandbox_pk is 64-bit (0016_keys_by_account): a sandbox whose key is
 * past 2^32 is stored, found again by another process, and read back. */
static void
test_wide_keys(PGconn *db, struct meter_registry *reg)
{
    PGresult *r = PQexec(db, "ALTER TABLE sandboxes ALTER COLUMN sandbox_pk"
                             " RESTART WITH 8589934593");
    CHECK(PQresultStatus(r) == PGRES_COMMAND_OK);
    PQclear(r);
    struct meter_sample w[] = {paused("wide", "sb-w", JAN + 5, 11),
                               paused("wide", "sb-w", JAN + 6, 12)};
    struct outcome o = ingest(db, reg, w, 2, JAN);
    CHECK(result_is(&o, 2, 0, 0));
    CHECK(testdb_count(db, "SELECT count(*) FROM usage_blocks"
                           " WHERE sandbox_pk = 8589934593") == 1);
    struct meter_registry *fresh = meter_registry_new();
    o = ingest(db, fresh, w, 2, JAN);
    CHECK(result_is(&o, 0, 2, 0));
    meter_registry_free(fresh);
    uint64_t disk;
    CHECK(stored(db, "wide", JAN, JAN + 60, &disk) == 2 && disk == 23);
}

static void
test_months_and_ranges(PGconn *db, struct meter_registry *reg)
{
    /* The last second of January and the first of February: two
     * partitions, and the reader's range is [from, to). */
    struct meter_sample edge[] = {paused("acme", "sb-m", FEB - 1, 10),
                                  paused("acme", "sb-m", FEB, 20)};
    struct outcome o = ingest(db, reg, edge, 2, FEB);
    CHECK(result_is(&o, 2, 0, 0));
    uint64_t disk;
    CHECK(stored(db, "acme", FEB - 1, FEB, &disk) == 1 && disk == 10);
    CHECK(stored(db, "acme", FEB, FEB + 1, &disk) == 1 && disk == 20);
    CHECK(stored(db, "acme", FEB - 1, FEB + 1, &disk) == 2 && disk == 30);
    CHECK(stored(db, "nobody", 0, FEB + 1, &disk) == 0);
    CHECK(testdb_count(db, "SELECT count(*) FROM pg_class"
                           " WHERE relname IN ('usage_blocks_202601',"
                           " 'usage_blocks_202602')") == 2);
    /* Rollups count exactly the seconds stored. */
    long hourly = testdb_count(db, "SELECT sum(samples) FROM usage_hourly");
    size_t all = stored(db, NULL, 0, FEB + 3600, &disk);
    CHECK(hourly == (long)all);
}

/* A batch ingested on a connection of its own, in a thread. */
struct slow_batch {
    const char *conninfo;
    struct meter_registry *reg;
    const struct meter_sample *s;
    size_t n;
    struct outcome o;
};

static void *
slow_thread(void *arg)
{
    struct slow_batch *a = arg;
    struct meter_err e = {{0}};
    PGconn *db = meter_db_connect(a->conninfo, &e);
    if (!db) {
        fprintf(stderr, "slow batch: %s\n", e.msg);
        a->o.st = METER_INGEST_ERROR;
        return NULL;
    }
    a->o = ingest(db, a->reg, a->s, a->n, JAN);
    PQfinish(db);
    return NULL;
}

static double
seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Whether a batch of account 'slow' sleeps in its rollups' trigger. */
static bool
slow_sleeping(PGconn *db)
{
    return testdb_count(db, "SELECT count(*) FROM pg_stat_activity"
                            " WHERE wait_event = 'PgSleep'"
                            " AND datname = current_database()") == 1;
}

/* A batch of 300 new sandboxes holds their locks from the lock to its
 * commit: made 3 s long here by a trigger on its rollups. A batch of
 * another sandbox meanwhile does not wait for it (issue 26: 256 lock
 * buckets, which 300 sandboxes fill, made every batch wait); a batch
 * that shares a second with it waits, then finds it stored. */
static void
test_neighbours(const struct testdb *t, PGconn *db, struct meter_registry *reg)
{
    /* Registered first: a batch that shares a sandbox must wait for the
     * lock, not for a registration. */
    enum { WIDE = 300 };
    static struct meter_sample wide[WIDE];
    for (int i = 0; i < WIDE; i++) {
        char id[32];
        snprintf(id, sizeof(id), "slow-%d", i);
        wide[i] = paused("slow", id, JAN + 5, 1);
    }
    struct outcome o = ingest(db, reg, wide, WIDE, JAN);
    CHECK(result_is(&o, WIDE, 0, 0));
    for (int i = 0; i < WIDE; i++)
        wide[i].s.ts = JAN + 10;
    PQclear(PQexec(db, "CREATE FUNCTION slow_rollup() RETURNS trigger"
                       " LANGUAGE plpgsql AS $$ BEGIN"
                       " IF NEW.account_pk = (SELECT account_pk FROM accounts"
                       "  WHERE account_id = 'slow') THEN"
                       "  PERFORM pg_sleep(3); END IF;"
                       " RETURN NEW; END $$"));
    PQclear(PQexec(db, "CREATE TRIGGER slow_rollup BEFORE INSERT ON"
                       " usage_hourly FOR EACH ROW EXECUTE FUNCTION"
                       " slow_rollup()"));
    struct slow_batch a = {t->conninfo, reg, wide, WIDE, {0}};
    pthread_t th;
    pthread_create(&th, NULL, slow_thread, &a);
    bool sleeping = false;
    for (int i = 0; i < 200 && !sleeping; i++) {
        struct timespec nap = {0, 50000000};
        nanosleep(&nap, NULL);
        sleeping = slow_sleeping(db);
    }
    CHECK(sleeping);
    /* Another sandbox: stored at once, the wide batch still running. */
    struct meter_sample quick = paused("fast", "quick-1", JAN + 10, 7);
    double t0 = seconds_now();
    o = ingest(db, reg, &quick, 1, JAN);
    double waited = seconds_now() - t0;
    CHECK(result_is(&o, 1, 0, 0));
    if (waited >= 1.0)
        fprintf(stderr, "a batch of another sandbox waited %.1f s\n", waited);
    CHECK(waited < 1.0);
    CHECK(slow_sleeping(db));
    /* One of its sandboxes: waits for it, then finds the second stored
     * (without the lock, it would store it a second time). */
    struct meter_sample share[] = {paused("slow", "slow-7", JAN + 10, 1),
                                   paused("slow", "slow-7", JAN + 11, 1)};
    o = ingest(db, reg, share, 2, JAN);
    CHECK(result_is(&o, 1, 1, 0));
    pthread_join(th, NULL);
    CHECK(result_is(&a.o, WIDE, 0, 0));
    PQclear(PQexec(db, "DROP TRIGGER slow_rollup ON usage_hourly"));
    PQclear(PQexec(db, "DROP FUNCTION slow_rollup()"));
}

/* A transaction function: inserts its attempt number, then returns the
 * status planned for that attempt (or fails a statement first). */
struct plan {
    enum meter_db_status status[5];
    bool fail_statement;
    int attempts;
};

static enum meter_db_status
planned(PGconn *db, void *arg, struct meter_err *e)
{
    struct plan *p = arg;
    char sql[96];
    snprintf(sql, sizeof(sql), "INSERT INTO tx_probe VALUES (%d)", p->attempts);
    PQclear(PQexec(db, sql));
    if (p->fail_statement)
        PQclear(PQexec(db, "SELECT 1/0"));
    if (p->status[p->attempts] < 0 && p->status[p->attempts] != METER_DB_ABORT)
        meter_fail(e, "planned failure");
    return p->status[p->attempts++];
}

static void
test_runner(PGconn *db)
{
    struct meter_err e = {{0}};
    PQclear(PQexec(db, "CREATE TABLE tx_probe (attempt int)"));
    /* Retried while SOFT, committed once NONE: only the last attempt's
     * work stays. */
    struct plan p = {{METER_DB_SOFT, METER_DB_SOFT, METER_DB_NONE}, false, 0};
    CHECK(meter_db_transaction(db, "BEGIN", 5, planned, &p, &e) ==
          METER_DB_NONE);
    CHECK(p.attempts == 3);
    CHECK(testdb_count(db, "SELECT count(*) FROM tx_probe") == 1);
    CHECK(testdb_count(db, "SELECT max(attempt) FROM tx_probe") == 2);
    /* SOFT every time: gives up after `attempts`, nothing committed. */
    struct plan soft = {{METER_DB_SOFT, METER_DB_SOFT, METER_DB_SOFT,
                         METER_DB_SOFT, METER_DB_SOFT},
                        false,
                        0};
    CHECK(meter_db_transaction(db, "BEGIN", 3, planned, &soft, &e) ==
          METER_DB_SOFT);
    CHECK(soft.attempts == 3);
    CHECK(testdb_count(db, "SELECT count(*) FROM tx_probe") == 1);
    /* HARD and ABORT: one attempt, rolled back. */
    struct plan hard = {{METER_DB_HARD}, false, 0};
    CHECK(meter_db_transaction(db, "BEGIN", 5, planned, &hard, &e) ==
          METER_DB_HARD);
    struct plan abort_ = {{METER_DB_ABORT}, false, 0};
    CHECK(meter_db_transaction(db, "BEGIN", 5, planned, &abort_, &e) ==
          METER_DB_ABORT);
    CHECK(hard.attempts == 1 && abort_.attempts == 1);
    CHECK(testdb_count(db, "SELECT count(*) FROM tx_probe") == 1);
    /* Success claimed over a failed statement: not a commit. */
    struct plan liar = {{METER_DB_NONE}, true, 0};
    CHECK(meter_db_transaction(db, "BEGIN", 5, planned, &liar, &e) ==
          METER_DB_HARD);
    CHECK(strstr(e.msg, "not committed") != NULL);
    CHECK(testdb_count(db, "SELECT count(*) FROM tx_probe") == 1);
    /* No transaction is left open. */
    CHECK(PQtransactionStatus(db) == PQTRANS_IDLE);
    /* The exec helper: rows, none, and the server's message. */
    CHECK(meter_db_exec(db, "w", "SELECT 1", 0, NULL, NULL, NULL, NULL, &e) ==
          METER_DB_ROWS);
    CHECK(meter_db_exec(db, "w", "SELECT 1 WHERE false", 0, NULL, NULL, NULL,
                        NULL, &e) == METER_DB_NONE);
    CHECK(meter_db_exec(db, "cannot divide", "SELECT 1/0", 0, NULL, NULL, NULL,
                        NULL, &e) == METER_DB_HARD);
    CHECK(strstr(e.msg, "cannot divide: ERROR:  division by zero") == e.msg);
}

int
main(void)
{
    struct testdb t;
    PGconn *db = testdb_create_migrated(&t);
    struct meter_registry *reg = meter_registry_new();
    test_exactly_once(db, reg);
    test_egress_repeat(db, reg);
    test_refusals(db, reg);
    test_second_process(db);
    test_wide_keys(db, reg);
    test_months_and_ranges(db, reg);
    test_archived(db, reg);
    test_neighbours(&t, db, reg);
    test_runner(db);
    meter_registry_free(reg);
    testdb_drop(&t, db);
    return test_result();
}
