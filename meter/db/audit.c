/*
 * audit.c - who the session acts for (the audit log's actor), reading
 * the audit log, and quarantining the usage a key stored. The log itself
 * is written by triggers on the tables acted on (0006_provenance_audit.sql),
 * so that every path that changes them is recorded.
 */
#include "db_int.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

enum meter_db_status
meter_db_set_actor(PGconn *db, const char *actor, struct meter_err *e)
{
    const char *v[] = {actor ? actor : ""};
    return meter_db_exec(db, "cannot set the actor",
                         "SELECT set_config('meter.actor', $1, false)", 1, v,
                         NULL, NULL, NULL, e) < 0
               ? METER_DB_HARD
               : METER_DB_NONE;
}

enum meter_db_status
meter_db_audit_list(PGconn *db, int64_t after, int limit, meter_audit_cb *cb,
                    void *arg, struct meter_err *e)
{
    struct db_params p = {0};
    db_param_int64(&p, after);
    db_param_int32(&p, limit);
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot read the audit log",
        "SELECT audit_id,"
        " to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
        " actor, db_user, action, coalesce(account_id, ''), subject,"
        " detail::text FROM audit_log WHERE audit_id > $1::bigint"
        " ORDER BY audit_id LIMIT $2::int",
        p.n, p.v, NULL, NULL, &r, e);
    for (int i = 0; st == METER_DB_ROWS && i < PQntuples(r); i++) {
        struct meter_audit_entry x = {
            .at = PQgetvalue(r, i, 1),
            .actor = PQgetvalue(r, i, 2),
            .db_user = PQgetvalue(r, i, 3),
            .action = PQgetvalue(r, i, 4),
            .account = PQgetvalue(r, i, 5),
            .subject = PQgetvalue(r, i, 6),
            .detail = PQgetvalue(r, i, 7),
        };
        if (db_get_int64(r, i, 0, &x.id, e) < 0) {
            st = METER_DB_HARD;
            break;
        }
        cb(&x, arg);
    }
    PQclear(r);
    return st;
}

/* A sandbox whose first running minute a quarantine took away. */
struct stale {
    const char *account, *sandbox;
    json_int_t pk, minute, found;
};

/* The first running minute of each stale sandbox of account at or after
 * from (a minute), from what is stored now; found stays -1 if none. */
static enum meter_db_status
first_runs_left(PGconn *db, const char *account, int64_t from, struct stale *x,
                size_t n, struct meter_err *e)
{
    struct meter_usage_reader *r = meter_db_usage_open(
        db, account, from * 60, (int64_t)INT32_MAX * 60, false, e);
    if (!r)
        return METER_DB_HARD;
    struct pricing_source src = meter_usage_source(r);
    struct pricing_block b;
    struct pricing_err pe = {{0}};
    struct stale *cur = NULL;
    int got;
    while ((got = src.next(src.ctx, &b, &pe)) == 1) {
        if (!cur || strcmp(cur->sandbox, b.sandbox_id) != 0) {
            cur = NULL;
            for (size_t i = 0; i < n && !cur; i++)
                if (strcmp(x[i].sandbox, b.sandbox_id) == 0)
                    cur = &x[i];
        }
        if (!cur || cur->found >= 0)
            continue;
        for (size_t i = 0; i < (b.runs ? b.nruns : b.n); i++) {
            const struct pricing_second *s = b.runs ? &b.runs[i].s : &b.s[i];
            if (s->vcpu != 0) {
                cur->found = s->ts / 60;
                break;
            }
        }
    }
    meter_usage_reader_free(r);
    if (got < 0)
        return db_hard(e, "cannot read the usage left: %s", pe.msg);
    return METER_DB_ROWS;
}

/*
 * Ingestion keeps each sandbox's first running minute, and the invoice
 * run counts runs by it (docs/invoicing.md); a quarantine that moved the
 * block holding it cleared it (stale: a JSON array of [account, sandbox
 * pk, sandbox id, minute], by account). Each gets the first running
 * minute of what is left (the minutes before the one lost held none),
 * or stays NULL if nothing running is left. Reads each account's usage
 * from its earliest minute lost: a quarantine is rare.
 */
static enum meter_db_status
restore_first_runs(PGconn *db, const char *stale, struct meter_err *e)
{
    json_error_t je;
    json_t *arr = json_loads(stale, 0, &je), *found = json_array();
    size_t n = json_array_size(arr);
    struct stale *x = n ? calloc(n, sizeof(*x)) : NULL;
    enum meter_db_status st = METER_DB_ROWS;
    if (!arr || !found || (n && !x)) {
        st = db_hard(e, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *row = json_array_get(arr, i);
        x[i] = (struct stale){json_string_value(json_array_get(row, 0)),
                              json_string_value(json_array_get(row, 2)),
                              json_integer_value(json_array_get(row, 1)),
                              json_integer_value(json_array_get(row, 3)), -1};
    }
    for (size_t i = 0, j; i < n && st >= 0; i = j) {
        int64_t from = x[i].minute;
        for (j = i; j < n && strcmp(x[j].account, x[i].account) == 0; j++)
            from = x[j].minute < from ? x[j].minute : from;
        st = first_runs_left(db, x[i].account, from, x + i, j - i, e);
    }
    for (size_t i = 0; i < n && st >= 0; i++)
        if (x[i].found >= 0)
            json_array_append_new(found, json_pack("{s:s, s:I, s:I}", "account",
                                                   x[i].account, "pk", x[i].pk,
                                                   "minute", x[i].found));
    /* Every meterd forgets the first runs it kept (registry.c). */
    if (st >= 0 && n)
        st = meter_db_exec(db, "cannot quarantine usage",
                           "UPDATE first_run_epoch SET epoch = epoch + 1", 0,
                           NULL, NULL, NULL, NULL, e);
    if (st < 0 || json_array_size(found) == 0)
        goto out;
    char *rows = json_dumps(found, JSON_COMPACT);
    const char *v[] = {rows};
    st = rows ? meter_db_exec(db, "cannot quarantine usage",
                              "UPDATE sandboxes s SET first_running_minute ="
                              " x.minute FROM json_to_recordset($1::json)"
                              " AS x (account text, pk bigint, minute int)"
                              " JOIN accounts a ON a.account_id = x.account"
                              " WHERE s.account_pk = a.account_pk"
                              " AND s.sandbox_pk = x.pk",
                              1, v, NULL, NULL, NULL, e)
              : db_hard(e, "out of memory");
    free(rows);
out:
    free(x);
    json_decref(arr);
    json_decref(found);
    return st < 0 ? st : METER_DB_ROWS;
}

struct quarantine {
    struct db_params p; /* key, from, to, reason */
    int64_t key_id, from, to;
    struct meter_quarantine *out;
};

static enum meter_db_status
quarantine_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct quarantine *q = arg;
    PGresult *r;
    /* No compaction rewrites rows under it (usage_compact.c); then, read
     * committed, the statement below sees every batch committed. */
    enum meter_db_status st =
        meter_db_exec(db, "cannot quarantine usage",
                      "SELECT pg_advisory_xact_lock(" DB_LOCK_QUARANTINE ", 0),"
                      " to_timestamp($1::bigint) <= now()",
                      1, q->p.v + 2, NULL, NULL, &r, e);
    bool past = false;
    if (st == METER_DB_ROWS && db_get_bool(r, 0, 1, &past, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    if (st < 0)
        return st;
    /* A move's replication carries no delete of blocks or rollups: what
     * the quarantine takes out here would stay on the target. */
    st = meter_db_exec(db, "cannot quarantine usage",
                       "SELECT bucket, target FROM bucket_moves"
                       " ORDER BY bucket LIMIT 1",
                       0, NULL, NULL, NULL, &r, e);
    if (st == METER_DB_ROWS)
        st = db_hard(e,
                     "cannot quarantine usage: bucket %s is moving to shard "
                     "'%s' (meterctl shard move): quarantine once it is done",
                     PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1));
    PQclear(r);
    if (st < 0)
        return st;
    if (!past)
        return db_hard(e,
                       "cannot quarantine usage: --to %s is in the "
                       "future; batches of the key arriving until then "
                       "would not be set aside (revoke the key, then "
                       "quarantine up to now)",
                       q->p.v[2]);
    /* Blocks of the key already packed (usage_pack.c) are blocks again,
     * as their batches stored them, for the statement below. */
    st = db_usage_unpack(db, q->key_id, q->from, q->to, e);
    if (st < 0)
        return st;
    /* One statement: the blocks and the hourly rows of the same batches
     * (same key, account, hour and arrival) move together, merged rows
     * leave their sums (usage_merge.c, which this lock keeps out), and the
     * quarantine's row (audited) says how many. Blocks of a detached
     * (archived) month are not reached, nor are their rows. The key must
     * exist (the foreign key); a key with nothing stored in the window
     * gives a quarantine of 0 blocks, recorded all the same. */
    st = meter_db_exec(
        db, "cannot quarantine usage",
        "WITH moved AS (DELETE FROM usage_blocks WHERE key_id = $1::bigint"
        "  AND arrived_at >= to_timestamp($2::bigint)"
        "  AND arrived_at < to_timestamp($3::bigint) RETURNING *),"
        " q AS (INSERT INTO usage_quarantines (key_id, from_at, to_at, reason,"
        "  blocks, seconds) SELECT $1::bigint, to_timestamp($2::bigint),"
        "  to_timestamp($3::bigint), $4, count(*), coalesce(sum(length("
        "  replace(seconds::bit(64)::text, '0', ''))), 0) FROM moved"
        "  RETURNING quarantine_id, blocks, seconds),"
        " kept AS (INSERT INTO usage_blocks_quarantined (account_pk,"
        "  sandbox_pk, minute, seconds, arrived_at, data, key_id,"
        "  quarantine_id) SELECT m.account_pk, m.sandbox_pk, m.minute,"
        "  m.seconds, m.arrived_at, m.data, m.key_id, q.quarantine_id"
        "  FROM moved m, q),"
        " rolls AS (DELETE FROM usage_hourly h WHERE h.key_id = $1::bigint"
        "  AND EXISTS (SELECT 1 FROM moved m WHERE"
        "  m.account_pk = h.account_pk AND m.minute / 60 = h.hour"
        "  AND m.arrived_at = h.added_at) RETURNING h.*),"
        " rolls_kept AS (INSERT INTO usage_hourly_quarantined (account_pk,"
        "  hour, samples, running_s, vcpu_s, cpu_used_s, mem_byte_s,"
        "  mem_used_byte_s, disk_byte_s, egress_bytes, added_at, key_id,"
        "  quarantine_id) SELECT h.account_pk, h.hour, h.samples,"
        "  h.running_s, h.vcpu_s, h.cpu_used_s, h.mem_byte_s,"
        "  h.mem_used_byte_s, h.disk_byte_s, h.egress_bytes, h.added_at,"
        "  h.key_id, q.quarantine_id FROM rolls h, q),"
        /* Each account-period it takes seconds from is at a new
         * revision: the invoice run rates a closed one again, even once
         * a resend has put back as many seconds (0013). */
        " revised AS (INSERT INTO usage_revisions (account_pk, period,"
        "  revision) SELECT DISTINCT m.account_pk, date_trunc('month',"
        "  to_timestamp(m.minute::bigint * 60) AT TIME ZONE 'UTC')::date, 1"
        "  FROM moved m ON CONFLICT (account_pk, period)"
        "  DO UPDATE SET revision = usage_revisions.revision + 1),"
        /* Rows already merged leave their merged rows too (0010, 0024). */
        " taken AS (SELECT account_pk, hour," DB_ROLLUP_SUMS
        " FROM rolls WHERE merged GROUP BY 1, 2),"
        " unmerged AS (UPDATE usage_hourly_merged t SET" DB_ROLLUP_TAKE_D
        " FROM taken d WHERE t.account_pk = d.account_pk AND t.hour = d.hour),"
        " unmerged_periods AS (UPDATE usage_period_merged t"
        " SET" DB_ROLLUP_TAKE_D
        " FROM (SELECT account_pk, meter_period_of(hour) AS "
        "period," DB_ROLLUP_SUMS " FROM taken GROUP BY 1, 2) d"
        " WHERE t.account_pk = d.account_pk AND t.period = d.period),"
        /* A sandbox whose first running minute was in a block moved
         * loses it, until restore_first_runs finds it in what is left. */
        /* Locked in (account_pk, sandbox_pk) order, as ingestion locks
         * them. */
        " stale AS (UPDATE sandboxes s SET first_running_minute = NULL"
        "  FROM (SELECT l.account_pk, l.sandbox_pk,"
        "  l.first_running_minute AS minute"
        "  FROM sandboxes l WHERE (l.account_pk, l.sandbox_pk,"
        "  l.first_running_minute) IN (SELECT account_pk, sandbox_pk, minute"
        "  FROM moved) ORDER BY l.account_pk, l.sandbox_pk"
        "  FOR NO KEY UPDATE) m"
        "  WHERE s.account_pk = m.account_pk AND s.sandbox_pk = m.sandbox_pk"
        "  RETURNING s.account_pk, s.sandbox_pk, s.sandbox_id, m.minute)"
        " SELECT quarantine_id, blocks, seconds, (SELECT coalesce(json_agg("
        "  json_build_array(a.account_id, x.sandbox_pk, x.sandbox_id,"
        "  x.minute) ORDER BY a.account_id, x.sandbox_pk), '[]')"
        "  FROM stale x JOIN accounts a USING (account_pk)) FROM q",
        q->p.n, q->p.v, NULL, NULL, &r, e);
    if (st == METER_DB_ROWS) {
        if (db_get_int64(r, 0, 0, &q->out->id, e) < 0 ||
            db_get_int64(r, 0, 1, &q->out->blocks, e) < 0 ||
            db_get_int64(r, 0, 2, &q->out->seconds, e) < 0)
            st = METER_DB_HARD;
        else
            st = restore_first_runs(db, PQgetvalue(r, 0, 3), e);
    }
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_usage_quarantine(PGconn *db, int64_t key_id, int64_t from, int64_t to,
                          const char *reason, struct meter_quarantine *out,
                          struct meter_err *e)
{
    /* Over shards, only the catalog's share would be set aside. */
    if (meter_db_usage_whole(db, e) < 0)
        return METER_DB_HARD;
    struct quarantine q = {
        .key_id = key_id, .from = from, .to = to, .out = out};
    db_param_int64(&q.p, key_id);
    db_param_int64(&q.p, from);
    db_param_int64(&q.p, to);
    db_param_text(&q.p, reason);
    return meter_db_transaction(db, "BEGIN", 5, quarantine_attempt, &q, e);
}
