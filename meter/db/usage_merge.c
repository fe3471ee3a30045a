/*
 * usage_merge.c - the hourly rollups merged to one row per account and
 * hour (migration 0010): what a report over the fleet's month reads
 * instead of one row per batch.
 *
 * One statement marks rows not merged yet (at most a given number) and
 * adds their sums to usage_hourly_merged, and to usage_period_merged
 * by month (migration 0024), so a reader of
 * usage_hourly_totals counts every row once, merged or not, whenever it
 * reads. Rows that arrive during a merge are merged by the next. One
 * merge at a time, and none under a quarantine (audit.c), which takes
 * merged rows back out: a merge that finds either running skips, which
 * costs a reader nothing but speed. meterd merges in the background
 * (meter/meterd/merge.c). The merge also queues the account-hours it saw
 * for packing (usage_pack.c): each batch's hours come through here once.
 * It leaves alone the buckets this database does not hold or is moving
 * to another shard (migration 0019): a move's replication carries no
 * update of usage_hourly, so the rows it copies must not change.
 */
#include "db_int.h"

/* The second key of the merge's lock, in DB_LOCK_QUARANTINE's class. */
#define MERGE_LOCK "1"

struct merge {
    struct db_params p; /* the limit */
    uint64_t *rows;
};

static enum meter_db_status
merge_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct merge *m = arg;
    PGresult *r;
    *m->rows = 0;
    enum meter_db_status st = meter_db_exec(
        db, "cannot merge the hourly usage",
        "SELECT pg_try_advisory_xact_lock(" DB_LOCK_QUARANTINE ", " MERGE_LOCK
        ") AND pg_try_advisory_xact_lock_shared(" DB_LOCK_QUARANTINE ", 0)",
        0, NULL, NULL, NULL, &r, e);
    bool mine = false;
    if (st == METER_DB_ROWS && db_get_bool(r, 0, 0, &mine, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    if (st < 0 || !mine)
        return st < 0 ? st : METER_DB_NONE;
    st = meter_db_exec(
        db, "cannot merge the hourly usage",
        "WITH m AS (UPDATE usage_hourly SET merged = true"
        "  WHERE ctid = ANY (ARRAY(SELECT ctid FROM usage_hourly"
        "  WHERE NOT merged AND meter_bucket(account_pk) = ANY (ARRAY("
        "  SELECT bucket FROM bucket_holds EXCEPT SELECT bucket FROM"
        "  bucket_moves)) LIMIT $1::bigint)) RETURNING account_pk, hour, "
        "samples, running_s, vcpu_s,"
        "  cpu_used_s, mem_byte_s, mem_used_byte_s, disk_byte_s,"
        "  egress_bytes),"
        " s AS (INSERT INTO usage_hourly_merged AS t"
        " SELECT account_pk, hour," DB_ROLLUP_SUMS " FROM m GROUP BY 1, 2"
        " ON CONFLICT (account_pk, hour)"
        " DO UPDATE SET" DB_ROLLUP_ADD_EXCLUDED "),"
        /* and to their periods' sums (0024), which the alerts read. */
        " p AS (INSERT INTO usage_period_merged AS t"
        " SELECT account_pk, meter_period_of(hour)," DB_ROLLUP_SUMS
        " FROM m GROUP BY 1, 2 ON CONFLICT (account_pk, period)"
        " DO UPDATE SET" DB_ROLLUP_ADD_EXCLUDED "),"
        /* Their hours' blocks are to be packed (usage_pack.c). */
        " q AS (INSERT INTO usage_pack_queue SELECT DISTINCT account_pk, hour"
        "  FROM m ON CONFLICT DO NOTHING)"
        " SELECT count(*) FROM m",
        m->p.n, m->p.v, NULL, NULL, &r, e);
    if (st == METER_DB_ROWS && db_get_uint64(r, 0, 0, m->rows, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_usage_merge(PGconn *db, uint64_t limit, uint64_t *rows,
                     struct meter_err *e)
{
    struct merge m = {.rows = rows};
    db_param_uint64(&m.p, limit);
    return meter_db_transaction(db, "BEGIN", 3, merge_attempt, &m, e);
}
