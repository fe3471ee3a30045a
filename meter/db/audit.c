/*
 * audit.c - who the session acts for (the audit log's actor), reading
 * the audit log, and quarantining the usage a key stored. The log itself
 * is written by triggers on the tables acted on (0006_provenance_audit.sql),
 * so that every path that changes them is recorded.
 */
#include "db_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

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
    char a[24], l[24];
    snprintf(a, sizeof(a), "%" PRId64, after);
    snprintf(l, sizeof(l), "%d", limit);
    const char *v[] = {a, l};
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot read the audit log",
        "SELECT audit_id,"
        " to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'),"
        " actor, db_user, action, coalesce(account_id, ''), subject,"
        " detail::text FROM audit_log WHERE audit_id > $1::bigint"
        " ORDER BY audit_id LIMIT $2::int",
        2, v, NULL, NULL, &r, e);
    for (int i = 0; st == METER_DB_ROWS && i < PQntuples(r); i++) {
        struct meter_audit_entry x = {
            .id = strtoll(PQgetvalue(r, i, 0), NULL, 10),
            .at = PQgetvalue(r, i, 1),
            .actor = PQgetvalue(r, i, 2),
            .db_user = PQgetvalue(r, i, 3),
            .action = PQgetvalue(r, i, 4),
            .account = PQgetvalue(r, i, 5),
            .subject = PQgetvalue(r, i, 6),
            .detail = PQgetvalue(r, i, 7),
        };
        cb(&x, arg);
    }
    PQclear(r);
    return st;
}

struct quarantine {
    const char *v[4]; /* key, from, to, reason */
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
    enum meter_db_status st = meter_db_exec(
        db, "cannot quarantine usage",
        "SELECT pg_advisory_xact_lock(" DB_LOCK_QUARANTINE ", 0),"
        " to_timestamp($1::bigint) <= now()",
        1, q->v + 2, NULL, NULL, &r, e);
    bool past = st == METER_DB_ROWS && PQgetvalue(r, 0, 1)[0] == 't';
    PQclear(r);
    if (st < 0)
        return st;
    if (!past)
        return db_hard(e, "cannot quarantine usage: --to %s is in the "
                          "future; batches of the key arriving until then "
                          "would not be set aside (revoke the key, then "
                          "quarantine up to now)",
                       q->v[2]);
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
         * a resend has put back as many seconds (0012). */
        " revised AS (INSERT INTO usage_revisions (account_pk, period,"
        "  revision) SELECT DISTINCT m.account_pk, date_trunc('month',"
        "  to_timestamp(m.minute::bigint * 60) AT TIME ZONE 'UTC')::date, 1"
        "  FROM moved m ON CONFLICT (account_pk, period)"
        "  DO UPDATE SET revision = usage_revisions.revision + 1),"
        /* Rows already merged leave their merged row too (0010). */
        " unmerged AS (UPDATE usage_hourly_merged t SET"
        "  samples = t.samples - d.samples,"
        "  running_s = t.running_s - d.running_s,"
        "  vcpu_s = t.vcpu_s - d.vcpu_s,"
        "  cpu_used_s = t.cpu_used_s - d.cpu_used_s,"
        "  mem_byte_s = t.mem_byte_s - d.mem_byte_s,"
        "  mem_used_byte_s = t.mem_used_byte_s - d.mem_used_byte_s,"
        "  disk_byte_s = t.disk_byte_s - d.disk_byte_s,"
        "  egress_bytes = t.egress_bytes - d.egress_bytes"
        "  FROM (SELECT account_pk, hour, sum(samples) AS samples,"
        "  sum(running_s) AS running_s, sum(vcpu_s) AS vcpu_s,"
        "  sum(cpu_used_s) AS cpu_used_s, sum(mem_byte_s) AS mem_byte_s,"
        "  sum(mem_used_byte_s) AS mem_used_byte_s,"
        "  sum(disk_byte_s) AS disk_byte_s, sum(egress_bytes) AS egress_bytes"
        "  FROM rolls WHERE merged GROUP BY 1, 2) d"
        "  WHERE t.account_pk = d.account_pk AND t.hour = d.hour)"
        " SELECT quarantine_id, blocks, seconds FROM q",
        4, q->v, NULL, NULL, &r, e);
    if (st == METER_DB_ROWS) {
        q->out->id = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        q->out->blocks = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
        q->out->seconds = strtoll(PQgetvalue(r, 0, 2), NULL, 10);
    }
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_usage_quarantine(PGconn *db, int64_t key_id, int64_t from,
                          int64_t to, const char *reason,
                          struct meter_quarantine *out, struct meter_err *e)
{
    char k[24], f[24], t[24];
    snprintf(k, sizeof(k), "%" PRId64, key_id);
    snprintf(f, sizeof(f), "%" PRId64, from);
    snprintf(t, sizeof(t), "%" PRId64, to);
    struct quarantine q = {{k, f, t, reason}, key_id, from, to, out};
    return meter_db_transaction(db, "BEGIN", 5, quarantine_attempt, &q, e);
}
