/*
 * usage_compact.c - closing a month: an account's blocks of the month
 * rewritten together, in (sandbox, minute) order, so that reading them
 * (the invoice run) touches their pages in a row instead of one page a
 * block. Online: one account per transaction, row locks only, so
 * ingestion of late samples goes on (it sees the old rows or the new
 * ones, never neither, and they hold the same seconds).
 */
#include "db_int.h"

#include <stdio.h>

/* The period's bounds divided by unit (60: minutes, 3600: hours), two
 * parameters more of p. */
static void
bounds(int year, int month, int64_t unit, struct db_params *p)
{
    int64_t from, to;
    db_period(year, month, &from, &to);
    db_param_int64(p, from / unit);
    db_param_int64(p, to / unit);
}

enum meter_db_status
meter_db_usage_accounts(PGconn *db, int year, int month,
                        struct meter_strtab *out, struct meter_err *e)
{
    struct db_params p = {0};
    bounds(year, month, 3600, &p);
    return db_strings(db, "cannot list the accounts with usage",
                      "SELECT a.account_id FROM accounts a WHERE EXISTS"
                      " (SELECT 1 FROM usage_hourly h"
                      "  WHERE h.account_pk = a.account_pk"
                      "  AND h.hour >= $1::bigint AND h.hour < $2::bigint)"
                      " ORDER BY a.account_id",
                      p.n, p.v, out, e);
}

struct compact {
    struct db_params p; /* account, first minute, end minute */
    uint64_t rows;
};

static enum meter_db_status
compact_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct compact *c = arg;
    PGresult *r;
    c->rows = 0;
    /* A quarantine (audit.c) waits for compactions and they for it: a
     * row it moves must not be rewritten under it. Packing (usage_pack.c)
     * too: the pack it writes would not be in the rewrite. */
    enum meter_db_status st = meter_db_exec(
        db, "cannot compact usage",
        "SELECT pg_advisory_xact_lock_shared(" DB_LOCK_QUARANTINE ", 0),"
        " pg_advisory_xact_lock(" DB_LOCK_QUARANTINE ", 1)",
        0, NULL, NULL, NULL, NULL, e);
    if (st < 0)
        return st;
    /* Rows rewritten during a move of their bucket would reach the
     * target twice: its replication carries inserts, not deletes. */
    st = meter_db_exec(db, "cannot compact usage",
                       "SELECT bucket FROM bucket_moves WHERE bucket ="
                       " (SELECT meter_bucket(account_pk) FROM accounts"
                       "  WHERE account_id = $1)",
                       1, c->p.v, NULL, NULL, &r, e);
    if (st == METER_DB_ROWS)
        st = db_hard(e,
                     "cannot compact usage: account '%s' is in bucket %s, "
                     "which is moving to another shard: compact it when the "
                     "move is done",
                     c->p.v[0], PQgetvalue(r, 0, 0));
    PQclear(r);
    if (st < 0)
        return st;
    st = meter_db_exec(
        db, "cannot compact usage",
        "WITH moved AS (DELETE FROM usage_blocks WHERE account_pk ="
        "  (SELECT account_pk FROM accounts WHERE account_id = $1)"
        "  AND minute >= $2::int AND minute < $3::int RETURNING *),"
        " kept AS (INSERT INTO usage_blocks SELECT * FROM moved"
        "  ORDER BY sandbox_pk, minute RETURNING 1),"
        " packs AS (DELETE FROM usage_packs WHERE account_pk ="
        "  (SELECT account_pk FROM accounts WHERE account_id = $1)"
        "  AND minute >= $2::int AND minute < $3::int RETURNING *),"
        " packs_kept AS (INSERT INTO usage_packs SELECT * FROM packs"
        "  ORDER BY sandbox_pk, minute RETURNING 1)"
        " SELECT (SELECT count(*) FROM kept)"
        " + (SELECT count(*) FROM packs_kept)",
        c->p.n, c->p.v, NULL, NULL, &r, e);
    if (st == METER_DB_ROWS && db_get_uint64(r, 0, 0, &c->rows, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_usage_compact(PGconn *db, const char *account, int year, int month,
                       uint64_t *rows, struct meter_err *e)
{
    /* Over shards: on each shard (meterctl --db SHARD usage compact). */
    if (meter_db_usage_whole(db, e) < 0)
        return METER_DB_HARD;
    struct compact c = {.rows = 0};
    db_param_text(&c.p, account);
    bounds(year, month, 60, &c.p);
    enum meter_db_status st =
        meter_db_transaction(db, "BEGIN", 5, compact_attempt, &c, e);
    *rows = st >= 0 ? c.rows : 0;
    return st;
}

enum meter_db_status
meter_db_usage_vacuum(PGconn *db, int year, int month, struct meter_err *e)
{
    char name[64], sql[256];
    /* The partition's name is made of digits only. */
    snprintf(name, sizeof(name), "usage_blocks_%04d%02d", year, month);
    const char *v[] = {name};
    PGresult *r;
    enum meter_db_status st =
        meter_db_exec(db, "cannot find the month's usage",
                      "SELECT pg_has_role(relowner, 'USAGE') FROM pg_class"
                      " WHERE oid = to_regclass($1)",
                      1, v, NULL, NULL, &r, e);
    bool owner = false;
    if (st == METER_DB_ROWS && db_get_bool(r, 0, 0, &owner, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    if (st != METER_DB_ROWS)
        return st; /* no partition: nothing stored that month */
    /* VACUUM by another role only warns and skips the table. */
    if (!owner)
        return db_hard(e,
                       "cannot vacuum '%s': only the tables' owner may; "
                       "connect as the owner (METER_OWNER_DATABASE_URL)",
                       name);
    /* Its packs' partition is made with it (0011_usage_packs.sql). */
    char both[128];
    snprintf(both, sizeof(both), "%s, usage_packs_%04d%02d", name, year, month);
    snprintf(sql, sizeof(sql), "VACUUM (ANALYZE) %s", both);
    return meter_db_exec(db, "cannot vacuum the month's usage", sql, 0, NULL,
                         NULL, NULL, NULL, e);
}
