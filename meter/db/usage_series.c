/*
 * usage_series.c - an account's usage by hour or day, from the rollups
 * (usage_hourly_totals): what dashboards and the usage endpoint read, without
 * decoding a block. Over shards, read on the account's shard, on a
 * connection of the call's own (docs/scale.md).
 */
#include "db_int.h"

static enum meter_db_status
series(PGconn *db, const char *account, int64_t from, int64_t to, bool daily,
       int64_t after, int limit, meter_usage_cb *cb, void *arg,
       struct meter_err *e)
{
    int64_t len = daily ? 86400 : 3600;
    struct db_params p = {0};
    db_param_text(&p, account);
    /* Whole buckets: from rounded down, to rounded up. */
    db_param_int64(&p, (from - ((from % len) + len) % len) / 3600);
    db_param_int64(&p, (to + len - 1) / len * len / 3600);
    db_param_int32(&p, daily ? 24 : 1);
    db_param_int64(&p, after);
    db_param_int32(&p, limit);
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot read usage",
        "SELECT h.hour / $4::int * $4::int * 3600 AS start, sum(h.samples),"
        " sum(h.running_s), sum(h.vcpu_s), sum(h.cpu_used_s),"
        " sum(h.mem_byte_s), sum(h.mem_used_byte_s), sum(h.disk_byte_s),"
        " sum(h.egress_bytes)"
        /* The account's key first: both of the view's parts are then
         * read by it (a join would read every account's rows not merged
         * yet). */
        " FROM usage_hourly_totals h WHERE h.account_pk ="
        " (SELECT account_pk FROM accounts WHERE account_id = $1)"
        " AND h.hour >= $2::bigint"
        " AND h.hour < $3::bigint"
        " AND h.hour / $4::int * $4::int * 3600 > $5::bigint"
        " GROUP BY 1 ORDER BY 1 LIMIT $6::int",
        p.n, p.v, NULL, NULL, &r, e);
    if (st < 0)
        return st;
    for (int i = 0; i < PQntuples(r); i++) {
        struct meter_usage_point u = {0,
                                      PQgetvalue(r, i, 1),
                                      PQgetvalue(r, i, 2),
                                      PQgetvalue(r, i, 3),
                                      PQgetvalue(r, i, 4),
                                      PQgetvalue(r, i, 5),
                                      PQgetvalue(r, i, 6),
                                      PQgetvalue(r, i, 7),
                                      PQgetvalue(r, i, 8)};
        if (db_get_int64(r, i, 0, &u.start, e) < 0) {
            st = METER_DB_HARD;
            break;
        }
        cb(&u, arg);
    }
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_usage_series(PGconn *db, const char *account, int64_t from, int64_t to,
                      bool daily, int64_t after, int limit, meter_usage_cb *cb,
                      void *arg, struct meter_err *e)
{
    PGconn *shard;
    struct meter_shard_info which;
    enum meter_db_status st = db_account_conn(db, account, &shard, &which, e);
    if (st < 0)
        return st;
    st = series(shard ? shard : db, account, from, to, daily, after, limit, cb,
                arg, e);
    /* The catalog answered and the shard did not (lost, busy): the
     * shard is away, not the statement wrong. */
    st = meter_db_shard_failed(db, shard, which.id, which.name, st, e);
    PQfinish(shard);
    return st;
}
