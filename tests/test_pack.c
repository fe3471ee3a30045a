/*
 * test_pack.c - an hour of a sandbox's blocks packed into one row
 * (usage_pack.c), against a real PostgreSQL: the seconds read back are
 * the same before and after, in packs and blocks mixed, over any range;
 * a batch sent again after packing is all repeats, a late one is stored
 * and packed into the same pack; an hour is packed only once it ended
 * the settle time ago; and a quarantine takes exactly its key's blocks
 * of its window out of a pack shared with another key's.
 */
#include <stdlib.h>
#include <string.h>

#include "meter_db.h"
#include "testdb.h"

#define HOUR0 1767225600LL /* 2026-01-01T00:00:00Z */

static struct meter_sample
running(const char *sandbox, int64_t ts)
{
    /* CPU moving every second, so that blocks differ. */
    struct meter_sample m = {.s = {ts, 20000, (uint32_t)(ts % 7) * 1000,
                                   1u << 30, (uint64_t)(ts % 5) << 20, 1u << 20,
                                   (uint64_t)(ts % 3)}};
    snprintf(m.account_id, sizeof(m.account_id), "%s", "acme");
    snprintf(m.sandbox_id, sizeof(m.sandbox_id), "%s", sandbox);
    return m;
}

/* Stores seconds [from, to) of sandbox, arriving at `at` from key. */
static struct meter_ingest_result
put(PGconn *db, struct meter_registry *reg, const char *sandbox, int64_t from,
    int64_t to, int64_t at, int64_t key)
{
    size_t n = (size_t)(to - from);
    struct meter_sample *s = calloc(n, sizeof(*s));
    for (size_t i = 0; i < n; i++)
        s[i] = running(sandbox, from + (int64_t)i);
    struct meter_ingest_origin o = {.now_us = at * 1000000, .key_id = key};
    struct meter_ingest_result res = {0};
    struct meter_problems probs = {0};
    struct meter_err e = {{0}};
    if (meter_ingest(db, reg, s, n, &o, &res, &probs, &e) != METER_INGEST_OK) {
        fprintf(stderr, "ingest: %s\n", e.msg);
        test_failures++;
    }
    free(s);
    return res;
}

/* A digest of the seconds of [from, to) read back: their count, and a
 * sum over every field weighted by the second. */
struct digest {
    uint64_t n, sum;
};

static struct digest
read_back(PGconn *db, int64_t from, int64_t to, const char *account)
{
    struct meter_err e = {{0}};
    struct pricing_err pe = {{0}};
    struct digest d = {0, 0};
    struct meter_usage_reader *r =
        meter_usage_reader_new(db, account, from, to, &e);
    if (!r) {
        fprintf(stderr, "reader: %s\n", e.msg);
        test_failures++;
        return d;
    }
    struct pricing_source src = meter_usage_source(r);
    struct pricing_block b;
    int got;
    int64_t last = INT64_MIN;
    while ((got = src.next(src.ctx, &b, &pe)) > 0)
        for (size_t i = 0; i < b.n; i++) {
            const struct pricing_second *x = &b.s[i];
            /* In order, once each, inside the range. */
            if (x->ts < from || x->ts >= to ||
                (strcmp(b.sandbox_id, "sb-1") == 0 && x->ts <= last)) {
                fprintf(stderr, "second %lld read out of order or range\n",
                        (long long)x->ts);
                test_failures++;
            }
            if (strcmp(b.sandbox_id, "sb-1") == 0)
                last = x->ts;
            d.n++;
            d.sum += (uint64_t)x->ts *
                     (x->vcpu + x->cpu_used + x->mem_bytes + x->mem_used_bytes +
                      x->disk_bytes + x->egress_bytes + 1);
        }
    if (got != 0)
        fprintf(stderr, "reader: %s\n", pe.msg);
    CHECK(got == 0);
    meter_usage_reader_free(r);
    return d;
}

static bool
same(struct digest a, struct digest b)
{
    if (a.n == b.n && a.sum == b.sum)
        return true;
    fprintf(stderr, "read back %llu seconds (sum %llu), want %llu (%llu)\n",
            (unsigned long long)a.n, (unsigned long long)a.sum,
            (unsigned long long)b.n, (unsigned long long)b.sum);
    return false;
}

/* Merges the rollups (which queue the hours), then packs everything
 * that ended settle seconds ago; returns the blocks packed. */
static uint64_t
pack(PGconn *db, int64_t settle)
{
    struct meter_err e = {{0}};
    struct meter_pack_result res;
    if (meter_db_usage_pack_due(db, settle, &res, &e) < 0) {
        fprintf(stderr, "pack: %s\n", e.msg);
        test_failures++;
        return 0;
    }
    CHECK(!res.busy);
    return res.blocks;
}

static long
count(PGconn *db, const char *sql)
{
    return testdb_count(db, sql);
}

static void
test_pack_and_read(PGconn *db, struct meter_registry *reg)
{
    /* Two hours of sb-1 in 60 s batches off the minute (blocks of 17
     * and 43 seconds), and a sandbox of a few seconds. */
    for (int64_t t = HOUR0 + 17; t < HOUR0 + 7157; t += 60)
        put(db, reg, "sb-1", t, t + 60, t + 61, 0);
    put(db, reg, "sb-2", HOUR0 + 100, HOUR0 + 103, HOUR0 + 200, 0);
    long blocks = count(db, "SELECT count(*) FROM usage_blocks");
    CHECK(blocks > 200);
    struct digest all = read_back(db, HOUR0, HOUR0 + 7200, "acme");
    CHECK(all.n == 7140 + 3);
    struct digest mid = read_back(db, HOUR0 + 1800, HOUR0 + 3630, "acme");
    struct digest everyone = read_back(db, HOUR0, HOUR0 + 7200, NULL);

    /* Not yet: the last hour ended less than the settle time ago. */
    int64_t now = count(db, "SELECT extract(epoch FROM now())::bigint");
    int64_t age = now - (HOUR0 + 7200); /* since the second hour ended */
    long first = count(db, "SELECT count(*) FROM usage_blocks"
                           " WHERE minute < 29453760 + 60");
    CHECK(pack(db, age + 30) == (uint64_t)first);
    CHECK(count(db, "SELECT count(*) FROM usage_packs") == 2); /* hour 0 */
    CHECK(count(db, "SELECT count(*) FROM usage_pack_queue") == 1);
    CHECK(same(read_back(db, HOUR0, HOUR0 + 7200, "acme"), all));
    CHECK(same(read_back(db, HOUR0 + 1800, HOUR0 + 3630, "acme"), mid));
    /* Then the second hour too, all blocks gone. */
    CHECK(pack(db, age - 30) > 0);
    CHECK(count(db, "SELECT count(*) FROM usage_blocks") == 0);
    CHECK(count(db, "SELECT count(*) FROM usage_packs") == 3);
    CHECK(count(db, "SELECT count(*) FROM usage_pack_queue") == 0);
    CHECK(count(db, "SELECT count(*) FROM usage_packs WHERE minute % 60 <> 0"
                    " OR first_arrival > last_arrival") == 0);
    /* No key sent these: none recorded. */
    CHECK(count(db, "SELECT count(*) FROM usage_packs"
                    " WHERE key_ids <> '{}'") == 0);
    CHECK(same(read_back(db, HOUR0, HOUR0 + 7200, "acme"), all));
    CHECK(same(read_back(db, HOUR0 + 1800, HOUR0 + 3630, "acme"), mid));
    CHECK(same(read_back(db, HOUR0, HOUR0 + 7200, NULL), everyone));

    /* Sent again: all repeats, nothing stored. A batch half old, half
     * new: the new half stored, as a block beside the pack. */
    struct meter_ingest_result r =
        put(db, reg, "sb-1", HOUR0 + 17, HOUR0 + 137, HOUR0 + 9000, 0);
    CHECK(r.accepted == 0 && r.duplicates == 120);
    r = put(db, reg, "sb-1", HOUR0 + 7200 - 90, HOUR0 + 7200, HOUR0 + 9000, 0);
    CHECK(r.accepted == 43 && r.duplicates == 47);
    r = put(db, reg, "sb-1", HOUR0, HOUR0 + 17, HOUR0 + 9001, 0);
    CHECK(r.accepted == 17 && r.duplicates == 0);
    CHECK(count(db, "SELECT count(*) FROM usage_blocks") == 2);
    struct digest late = read_back(db, HOUR0, HOUR0 + 7200, "acme");
    CHECK(late.n == all.n + 43 + 17);
    /* The late blocks join their packs: still one pack an hour. */
    CHECK(pack(db, 0) == 2);
    CHECK(count(db, "SELECT count(*) FROM usage_blocks") == 0);
    CHECK(count(db, "SELECT count(*) FROM usage_packs") == 3);
    CHECK(same(read_back(db, HOUR0, HOUR0 + 7200, "acme"), late));
    r = put(db, reg, "sb-1", HOUR0, HOUR0 + 7200, HOUR0 + 9002, 0);
    CHECK(r.accepted == 0 && r.duplicates == 7200);
}

/* The pack of one hour of sb-9 holds the blocks of three batches: key
 * a's, key b's, then a's again. */
static void
test_quarantine(PGconn *db, struct meter_registry *reg)
{
    struct meter_err e = {{0}};
    char token[METER_TOKEN_LEN + 1];
    int64_t a, b;
    CHECK(meter_db_key_create(db, METER_ROLE_HOST, NULL, "a", NULL, token, &a,
                              &e) >= 0);
    CHECK(meter_db_key_create(db, METER_ROLE_HOST, NULL, "b", NULL, token, &b,
                              &e) >= 0);
    int64_t h = HOUR0 + 4 * 3600, t1 = h + 5000, t2 = t1 + 60, t3 = t2 + 60;
    put(db, reg, "sb-9", h + 10, h + 70, t1, a);
    put(db, reg, "sb-9", h + 70, h + 130, t2, b);
    put(db, reg, "sb-9", h + 130, h + 190, t3, a);
    struct digest before = read_back(db, h, h + 3600, "acme");
    struct digest second = read_back(db, h + 70, h + 130, "acme");
    struct digest third = read_back(db, h + 130, h + 190, "acme");
    CHECK(before.n == 180);
    CHECK(pack(db, 0) == 6);
    char q1[256];
    snprintf(q1, sizeof(q1),
             "SELECT count(*) FROM usage_packs WHERE minute = 29453760 + 4 * 60"
             " AND key_ids = '{%lld,%lld}' AND first_arrival ="
             " to_timestamp(%lld) AND last_arrival = to_timestamp(%lld)",
             (long long)a, (long long)b, (long long)t1, (long long)t3);
    CHECK(count(db, q1) == 1);

    /* a's first batch only: its window ends before a's second. */
    struct meter_quarantine q;
    CHECK(meter_db_usage_quarantine(db, a, t1, t2, "test", &q, &e) >= 0);
    CHECK(q.blocks == 2 && q.seconds == 60);
    struct digest kept = read_back(db, h, h + 3600, "acme");
    CHECK(kept.n == 120 && kept.sum == second.sum + third.sum);
    CHECK(count(db, "SELECT count(*) FROM usage_blocks") == 0);
    CHECK(count(db, "SELECT count(*) FROM usage_packs WHERE minute = 29453760"
                    " + 4 * 60") == 1);
    /* The rest of the pack is still exact: b's seconds are repeats. */
    struct meter_ingest_result r =
        put(db, reg, "sb-9", h + 70, h + 130, t3 + 100, b);
    CHECK(r.accepted == 0 && r.duplicates == 60);
    /* A window holding only b's batch takes none of a's; b's key. */
    CHECK(meter_db_usage_quarantine(db, a, t2, t3, "test", &q, &e) >= 0);
    CHECK(q.blocks == 0);
    /* Nor unpacks any: a's next batch arrived at the window's end. */
    CHECK(count(db, "SELECT count(*) FROM usage_blocks") == 0);
    CHECK(meter_db_usage_quarantine(db, b, t2, t2 + 1, "test", &q, &e) >= 0);
    CHECK(q.blocks == 2 && q.seconds == 60);
    CHECK(same(read_back(db, h, h + 3600, "acme"), third));
    /* The last of it: the pack is gone, not left empty. */
    CHECK(meter_db_usage_quarantine(db, a, t3, t3 + 1, "test", &q, &e) >= 0);
    CHECK(q.blocks == 2 && q.seconds == 60);
    CHECK(read_back(db, h, h + 3600, "acme").n == 0);
    CHECK(count(db, "SELECT count(*) FROM usage_packs WHERE minute = 29453760"
                    " + 4 * 60") == 0);
    /* The seconds set aside can be stored again. */
    r = put(db, reg, "sb-9", h + 10, h + 70, t3 + 200, b);
    CHECK(r.accepted == 60);
}

/* More sandboxes in an hour than a pack transaction takes: the hour
 * stays queued until the last of them is packed. */
static void
test_many_sandboxes(PGconn *db, struct meter_registry *reg)
{
    enum { N = 501 };
    struct meter_sample *s = calloc(N, sizeof(*s));
    int64_t h = HOUR0 + 8 * 3600;
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof(id), "many-%03d", i);
        s[i] = running(id, h + i);
    }
    struct meter_ingest_origin o = {.now_us = (h + 3600) * 1000000};
    struct meter_ingest_result res = {0};
    struct meter_problems probs = {0};
    struct meter_err e = {{0}};
    CHECK(meter_ingest(db, reg, s, N, &o, &res, &probs, &e) == METER_INGEST_OK);
    free(s);
    long blocks = count(db, "SELECT count(*) FROM usage_blocks");
    CHECK(blocks >= N);
    CHECK(pack(db, 0) == (uint64_t)blocks);
    CHECK(count(db, "SELECT count(*) FROM usage_blocks") == 0);
    CHECK(count(db, "SELECT count(*) FROM usage_packs WHERE minute = 29453760"
                    " + 8 * 60") == N);
    CHECK(count(db, "SELECT count(*) FROM usage_pack_queue") == 0);
}

int
main(void)
{
    struct testdb t;
    PGconn *db = testdb_create_migrated(&t);
    struct meter_registry *reg = meter_registry_new();
    test_pack_and_read(db, reg);
    test_quarantine(db, reg);
    test_many_sandboxes(db, reg);
    meter_registry_free(reg);
    testdb_drop(&t, db);
    return test_result();
}
