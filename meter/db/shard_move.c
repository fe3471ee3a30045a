/*
 * shard_move.c - a bucket of accounts moved to another shard while
 * meterd stores its usage (meterctl shard move; migration 0019,
 * docs/scale.md).
 *
 * 1. Copy: the source publishes the bucket's rows and makes a slot; the
 *    target, rid of any rows of the bucket an earlier move left there,
 *    subscribes, copies the tables and follows the source's writes.
 *    Merging and packing leave the bucket alone on both meanwhile
 *    (usage_merge.c): the replication carries no update or delete of
 *    the append-only tables.
 * 2. Fence: once every table is copied, the source takes the bucket's
 *    lock exclusively, which waits for the batches under way (they hold
 *    it shared: bucket_check), marks the bucket moving and raises its
 *    bucket_moves.fences, in one transaction. Batches of the bucket are
 *    refused from then on (MT002), and meterd tries them again.
 * 3. Catch up: logical replication applies in commit order, so once the
 *    fence's row has reached the target, every batch before it has.
 * 4. Switch: the source lets the bucket go; the target takes it (its
 *    sandbox keys moved past the copied ones, the accounts' rows); the
 *    map names the target, where meterd's next try finds it.
 * 5. Clean: the subscription, its slot and the publications dropped,
 *    the source's copy deleted, a few accounts a transaction.
 *
 * Every step can run again: a move cut short is finished by running it
 * again, or called off (call_off) until the map names the target. A
 * target that does not catch up in time gets the fence lifted (the copy
 * goes on, and a new run fences again). One run of a bucket's move at a
 * time: each holds a session lock on the catalog.
 */
#include "db_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The fence's lock: bucket_check (0017) takes it shared. */
#define FENCE_LOCK "7243613"
/* How long the target may take to catch up with a fence, in seconds. */
#define CATCH_UP_S 30
/* The lock a move holds on the catalog for its bucket, while it runs. */
#define MOVE_LOCK "7243616"
/* Accounts whose old rows one transaction deletes. */
#define CLEAN_ACCOUNTS 50

struct move {
    PGconn *catalog;
    int bucket;
    char b[16]; /* the bucket, as text */
    int from, to;
    char from_name[33], to_name[33];
    PGconn *src, *dst; /* as the moving role */
    const char *user;
    int copy_s;
    meter_move_note *note;
    void *arg;
};

/* Tells the operator; -1 with e set if the note says to stop there. */
static int
say(struct move *m, struct meter_err *e, const char *fmt, ...)
{
    if (!m->note)
        return 0;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (m->note(m->arg, line))
        return 0;
    return meter_fail(e, "stopped after: %s", line);
}

static double
now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void
nap_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* A conninfo string (key='value' ...) of what c was opened with, for a
 * server to reach the same database: the subscription's. */
static int
conninfo_of(PGconn *c, struct meter_buf *out, struct meter_err *e)
{
    /* Not passfile: a path of this process's user, not the server's. */
    static const char *const keys[] = {
        "host",    "hostaddr", "port",    "dbname",
        "user",    "password", "sslmode", "sslrootcert",
        "sslcert", "sslkey",   "sslcrl",  "target_session_attrs",
        NULL,
    };
    PQconninfoOption *opts = PQconninfo(c);
    if (!opts)
        return meter_fail(e, "out of memory");
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        bool wanted = false;
        for (int k = 0; keys[k] && !wanted; k++)
            wanted = strcmp(o->keyword, keys[k]) == 0;
        if (!wanted || !o->val || !o->val[0])
            continue;
        meter_buf_printf(out, "%s%s='", out->len ? " " : "", o->keyword);
        for (const char *p = o->val; *p; p++)
            meter_buf_printf(out, "%s%c", *p == '\'' || *p == '\\' ? "\\" : "",
                             *p);
        meter_buf_str(out, "'");
    }
    PQconninfoFree(opts);
    return out->failed ? meter_fail(e, "out of memory") : 0;
}

/* Shard id's database as the moving role: its conninfo (NULL: the
 * catalog's own) with the user replaced. */
static PGconn *
admin_connect(struct move *m, const char *conninfo, const char *name,
              struct meter_err *e)
{
    struct meter_buf own = {0};
    if (!conninfo) {
        if (conninfo_of(m->catalog, &own, e) < 0) {
            meter_buf_release(&own);
            return NULL;
        }
        conninfo = own.p;
    }
    const char *keys[] = {"connect_timeout", "dbname", "user", NULL};
    const char *vals[] = {"10", conninfo, m->user, NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    meter_buf_release(&own);
    if (PQstatus(c) != CONNECTION_OK) {
        meter_fail(e, "cannot reach shard '%s' as role '%s': %s", name, m->user,
                   PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    PQclear(PQexec(c, "SET client_min_messages = warning"));
    return c;
}

/* Runs sql (one parameter or none) on db: its status, the message in e. */
static enum meter_db_status
run(PGconn *db, const char *what, const char *sql, int n, const char *const *v,
    PGresult **r, struct meter_err *e)
{
    return meter_db_exec(db, what, sql, n, v, NULL, NULL, r, e);
}

/* One boolean or number of a one-row answer; -1 on a failure. */
static int
ask_int64(PGconn *db, const char *what, const char *sql, int n,
          const char *const *v, int64_t *out, struct meter_err *e)
{
    PGresult *r;
    enum meter_db_status st = run(db, what, sql, n, v, &r, e);
    int rc = st < 0 ? -1 : 0;
    if (rc == 0 && (st != METER_DB_ROWS || PQgetisnull(r, 0, 0)))
        *out = -1;
    else if (rc == 0 && db_get_int64(r, 0, 0, out, e) < 0)
        rc = -1;
    PQclear(r);
    return rc;
}

/* ---- deleting a bucket's rows --------------------------------------- */

struct clean {
    const char *pks; /* int[] as text */
    bool accounts;   /* their rows in accounts too (not the catalog's) */
    int64_t rows;
};

static enum meter_db_status
clean_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct clean *c = arg;
    const char *v[] = {c->pks, c->accounts ? "true" : "false"};
    int64_t rows;
    /* One statement: the foreign keys are checked at its end. */
    if (ask_int64(db, "cannot delete a moved bucket's rows",
                  "WITH b AS (DELETE FROM usage_blocks"
                  "  WHERE account_pk = ANY ($1::int[]) RETURNING 1),"
                  " p AS (DELETE FROM usage_packs"
                  "  WHERE account_pk = ANY ($1::int[]) RETURNING 1),"
                  " h AS (DELETE FROM usage_hourly"
                  "  WHERE account_pk = ANY ($1::int[]) RETURNING 1),"
                  " m AS (DELETE FROM usage_hourly_merged"
                  "  WHERE account_pk = ANY ($1::int[]) RETURNING 1),"
                  " n AS (DELETE FROM usage_period_merged"
                  "  WHERE account_pk = ANY ($1::int[]) RETURNING 1),"
                  " q AS (DELETE FROM usage_pack_queue"
                  "  WHERE account_pk = ANY ($1::int[]) RETURNING 1),"
                  " s AS (DELETE FROM sandboxes"
                  "  WHERE account_pk = ANY ($1::int[]) RETURNING 1),"
                  " a AS (DELETE FROM accounts WHERE $2::bool"
                  "  AND account_pk = ANY ($1::int[]) RETURNING 1)"
                  " SELECT (SELECT count(*) FROM b) + (SELECT count(*) FROM p)"
                  " + (SELECT count(*) FROM h) + (SELECT count(*) FROM m)"
                  " + (SELECT count(*) FROM n)"
                  " + (SELECT count(*) FROM q) + (SELECT count(*) FROM s)"
                  " + (SELECT count(*) FROM a)",
                  2, v, &rows, e) < 0)
        return METER_DB_HARD;
    c->rows += rows;
    return METER_DB_NONE;
}

/* Deletes every row of the bucket's accounts from db, their accounts'
 * rows too unless db is the catalog's (keep_accounts); adds to *rows.
 * A source's usage has its sandboxes (foreign keys); a target's copy
 * cut short may not (the apply checks none): every table is searched
 * (thorough). */
static int
clean_bucket(struct move *m, PGconn *db, bool keep_accounts, bool thorough,
             int64_t *rows, struct meter_err *e)
{
    PGresult *r;
    const char *v[] = {m->b};
    enum meter_db_status st =
        thorough ? run(db, "cannot list a bucket's accounts",
                       "SELECT account_pk FROM accounts"
                       " WHERE meter_bucket(account_pk) = $1::int"
                       " UNION SELECT account_pk FROM sandboxes"
                       " WHERE meter_bucket(account_pk) = $1::int"
                       " UNION SELECT account_pk FROM usage_blocks"
                       " WHERE meter_bucket(account_pk) = $1::int"
                       " UNION SELECT account_pk FROM usage_packs"
                       " WHERE meter_bucket(account_pk) = $1::int"
                       " UNION SELECT account_pk FROM usage_hourly"
                       " WHERE meter_bucket(account_pk) = $1::int"
                       " UNION SELECT account_pk FROM usage_hourly_merged"
                       " WHERE meter_bucket(account_pk) = $1::int"
                       " UNION SELECT account_pk FROM usage_period_merged"
                       " WHERE meter_bucket(account_pk) = $1::int"
                       " UNION SELECT account_pk FROM usage_pack_queue"
                       " WHERE meter_bucket(account_pk) = $1::int ORDER BY 1",
                       1, v, &r, e)
                 : run(db, "cannot list a bucket's accounts",
                       "SELECT account_pk FROM accounts"
                       " WHERE meter_bucket(account_pk) = $1::int"
                       " UNION SELECT account_pk FROM sandboxes"
                       " WHERE meter_bucket(account_pk) = $1::int ORDER BY 1",
                       1, v, &r, e);
    if (st < 0)
        return -1;
    struct clean c = {.accounts = !keep_accounts};
    int rc = 0;
    for (int i = 0; rc == 0 && i < PQntuples(r); i += CLEAN_ACCOUNTS) {
        struct meter_buf pks = {0};
        meter_buf_str(&pks, "{");
        for (int k = i; k < PQntuples(r) && k < i + CLEAN_ACCOUNTS; k++)
            meter_buf_printf(&pks, "%s%s", k > i ? "," : "",
                             PQgetvalue(r, k, 0));
        meter_buf_str(&pks, "}");
        c.pks = pks.p;
        if (pks.failed)
            rc = meter_fail(e, "out of memory");
        else if (meter_db_transaction(db, "BEGIN", 3, clean_attempt, &c, e) < 0)
            rc = -1;
        meter_buf_release(&pks);
    }
    PQclear(r);
    *rows += c.rows;
    return rc;
}

/* ---- the steps ------------------------------------------------------ */

static enum meter_db_status
drain_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    (void)arg;
    return run(db, "cannot wait for the merges",
               "SELECT pg_advisory_xact_lock(" DB_LOCK_QUARANTINE ", 0)", 0,
               NULL, NULL, e);
}

/* The target gets the source's months of usage, this one and the next:
 * a row of a month it has no partition for would stop its copy (new
 * months are made by batches, and DDL is not replicated). */
static int
months(struct move *m, struct meter_err *e)
{
    PGresult *r;
    if (run(m->src, "cannot list the months of usage",
            "SELECT array_agg(d)::text FROM (SELECT to_date(substr(c.relname,"
            " 14, 6), 'YYYYMM') AS d FROM pg_inherits i"
            " JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = 'usage_blocks'::regclass"
            " UNION SELECT (now() AT TIME ZONE 'UTC')::date"
            " UNION SELECT (now() AT TIME ZONE 'UTC' + interval '1 "
            "month')::date)"
            " x",
            0, NULL, &r, e) < 0)
        return -1;
    const char *v[] = {PQgetvalue(r, 0, 0)};
    enum meter_db_status st =
        run(m->dst, "cannot make the target's months of usage",
            "SELECT usage_blocks_partition(d) FROM unnest($1::date[]) d", 1, v,
            NULL, e);
    PQclear(r);
    return st < 0 ? -1 : 0;
}

/* Drops the move's slot on the source, if there, once its walsender is
 * gone (soon after the subscription is disabled). */
static int
drop_slot(struct move *m, struct meter_err *e)
{
    const char *v[] = {m->b};
    for (int i = 0;; i++) {
        int64_t active;
        if (ask_int64(m->src, "cannot drop the move's replication slot",
                      "SELECT CASE WHEN active THEN 1 ELSE"
                      " (SELECT 0 FROM pg_drop_replication_slot(slot_name))"
                      " END FROM pg_replication_slots"
                      " WHERE slot_name = format('meter_move_%s', $1::int)",
                      1, v, &active, e) < 0)
            return -1;
        if (active != 1)
            return 0;
        if (i == 300)
            return meter_fail(e,
                              "the slot meter_move_%d on shard '%s' is "
                              "still in use after 30 s",
                              m->bucket, m->from_name);
        nap_ms(100);
    }
}

/* Step 1: the source publishes, the target copies and follows. */
static int
copy(struct move *m, bool fresh, struct meter_err *e)
{
    const char *v[] = {m->b, m->to_name};
    if (fresh) {
        /* Rows of the bucket on the target are an earlier move's, from
         * or to it, as long as the target does not hold the bucket. */
        int64_t left = 0, held;
        if (ask_int64(m->dst, "cannot read the target's buckets",
                      "SELECT count(*) FROM bucket_holds"
                      " WHERE bucket = $1::int",
                      1, v, &held, e) < 0)
            return -1;
        if (held)
            return meter_fail(e,
                              "shard '%s' holds bucket %d already, which the "
                              "map gives to shard '%s': mend the map first",
                              m->to_name, m->bucket, m->from_name);
        if (run(m->dst, "cannot drop an earlier move's subscription",
                "SELECT meter_move_unsubscribe($1::int)", 1, v, NULL, e) < 0 ||
            drop_slot(m, e) < 0 ||
            run(m->dst, "cannot drop an earlier move's mark",
                "DELETE FROM bucket_moves WHERE bucket = $1::int", 1, v, NULL,
                e) < 0 ||
            clean_bucket(m, m->dst, m->to == 0, true, &left, e) < 0)
            return -1;
        if (left)
            (void)say(m, e,
                      "deleted %" PRId64 " rows of bucket %d an earlier move "
                      "left on shard '%s'",
                      left, m->bucket, m->to_name);
        if (run(m->src, "cannot mark the bucket as moving",
                "INSERT INTO bucket_moves (bucket, target)"
                " VALUES ($1::int, $2) ON CONFLICT (bucket) DO NOTHING",
                2, v, NULL, e) < 0)
            return -1;
    }
    /* Merges and packs that began before the mark are waited for; the
     * ones after it see it (their lock comes before their statement). */
    if (meter_db_transaction(m->src, "BEGIN", 3, drain_attempt, NULL, e) < 0)
        return -1;
    if (run(m->src, "cannot publish the bucket",
            "SELECT meter_move_publish($1::int)", 1, v, NULL, e) < 0 ||
        /* It waits for the transactions under way: a part left
         * prepared would hold it for ever. */
        run(m->src, "cannot make the move's replication slot",
            "SET statement_timeout = '60s'", 0, NULL, NULL, e) < 0 ||
        run(m->src, "cannot make the move's replication slot",
            "SELECT pg_create_logical_replication_slot("
            " format('meter_move_%s', $1::int), 'pgoutput')"
            " WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots"
            "  WHERE slot_name = format('meter_move_%s', $1::int))",
            1, v, NULL, e) < 0 ||
        run(m->src, "cannot make the move's replication slot",
            "RESET statement_timeout", 0, NULL, NULL, e) < 0 ||
        months(m, e) < 0)
        return -1;
    struct meter_buf info = {0};
    int rc = conninfo_of(m->src, &info, e);
    const char *s[] = {m->b, info.p};
    /* Its error counts are this run's (copied() stops at one). */
    if (rc == 0 &&
        (run(m->dst, "cannot subscribe to the bucket",
             "SELECT meter_move_subscribe($1::int, $2)", 2, s, NULL, e) < 0 ||
         run(m->dst, "cannot subscribe to the bucket",
             "SELECT pg_stat_reset_subscription_stats(oid)"
             " FROM pg_subscription"
             " WHERE subname = format('meter_move_%s', $1::int)",
             1, s, NULL, e) < 0))
        rc = -1;
    meter_buf_release(&info);
    return rc;
}

/* Waits until the target has copied every table (at most m->copy_s). */
static int
copied(struct move *m, struct meter_err *e)
{
    const char *v[] = {m->b};
    double t0 = now_s(), said = t0;
    for (;;) {
        PGresult *r;
        if (run(m->dst, "cannot read the copy's progress",
                "SELECT count(*), count(*) FILTER (WHERE r.srsubstate <> 'r'),"
                " (SELECT coalesce(sum(apply_error_count + sync_error_count),"
                "  0) FROM pg_stat_subscription_stats"
                "  WHERE subname = format('meter_move_%s', $1::int))"
                " FROM pg_subscription s JOIN pg_subscription_rel r"
                "  ON r.srsubid = s.oid"
                " WHERE s.subname = format('meter_move_%s', $1::int)",
                1, v, &r, e) < 0)
            return -1;
        int64_t tables, copying, errors;
        int rc = db_get_int64(r, 0, 0, &tables, e) < 0 ||
                         db_get_int64(r, 0, 1, &copying, e) < 0 ||
                         db_get_int64(r, 0, 2, &errors, e) < 0
                     ? -1
                     : 0;
        PQclear(r);
        if (rc < 0)
            return -1;
        if (errors > 0)
            return meter_fail(e,
                              "the copy of bucket %d to shard '%s' failed "
                              "%" PRId64
                              " times: its server's log says why; run the "
                              "move again once it is mended",
                              m->bucket, m->to_name, errors);
        if (tables > 0 && copying == 0)
            return 0;
        double t = now_s();
        if (t - t0 > m->copy_s)
            return meter_fail(e,
                              "bucket %d: %" PRId64 " of %" PRId64
                              " tables not copied to shard '%s' after %d s: "
                              "run the move again to go on waiting",
                              m->bucket, copying, tables, m->to_name,
                              m->copy_s);
        if (t - said >= 10) {
            (void)say(m, e, "copying: %" PRId64 " of %" PRId64 " tables to go",
                      copying, tables);
            said = t;
        }
        nap_ms(200);
    }
}

struct fence {
    const char *bucket;
    int64_t number;
};

static enum meter_db_status
fence_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct fence *f = arg;
    const char *v[] = {f->bucket};
    /* Batches hold the lock for a few milliseconds; a batch prepared on
     * several shards until it commits, or meterd's resolver settles it
     * (a minute after its meterd is gone). The batches after the fence's
     * request queue behind it: they wait 5 s at most. */
    enum meter_db_status st =
        run(db, "cannot fence the bucket's batches",
            "SET LOCAL lock_timeout = '5s'", 0, NULL, NULL, e);
    if (st >= 0)
        st = run(db, "cannot fence the bucket's batches",
                 "SELECT pg_advisory_xact_lock(" FENCE_LOCK ", $1::int)", 1, v,
                 NULL, e);
    if (st >= 0)
        st = run(db, "cannot fence the bucket's batches",
                 "UPDATE bucket_holds SET moving = true WHERE bucket = $1::int"
                 " RETURNING bucket",
                 1, v, NULL, e);
    if (st == METER_DB_NONE)
        return db_hard(e,
                       "cannot fence bucket %s: the source holds it no "
                       "more (another run of the move?)",
                       f->bucket);
    if (st >= 0 && ask_int64(db, "cannot fence the bucket's batches",
                             "UPDATE bucket_moves SET fences = fences + 1"
                             " WHERE bucket = $1::int RETURNING fences",
                             1, v, &f->number, e) < 0)
        st = METER_DB_HARD;
    if (st >= 0 && f->number < 1)
        return db_hard(e,
                       "cannot fence bucket %s: the source has no mark of "
                       "its move (another run of the move?)",
                       f->bucket);
    return st < 0 ? st : METER_DB_NONE;
}

/* Step 2: the fence; its number into *number. */
static int
fence(struct move *m, int64_t *number, struct meter_err *e)
{
    struct fence f = {m->b, -1};
    if (meter_db_transaction(m->src, "BEGIN", 3, fence_attempt, &f, e) < 0)
        return -1;
    *number = f.number;
    return 0;
}

/* Lifts fence number f (-1: whichever). */
static int
unfence(struct move *m, int64_t f, struct meter_err *e)
{
    char n[24];
    snprintf(n, sizeof(n), "%" PRId64, f);
    const char *v[] = {m->b, n};
    return run(m->src, "cannot lift the fence",
               "UPDATE bucket_holds h SET moving = false FROM bucket_moves v"
               " WHERE h.bucket = $1::int AND v.bucket = h.bucket"
               " AND ($2::bigint < 0 OR v.fences = $2::bigint)",
               2, v, NULL, e) < 0
               ? -1
               : 0;
}

/* Step 3: waits until the target has applied fence number f. */
static int
caught_up(struct move *m, int64_t f, struct meter_err *e)
{
    const char *v[] = {m->b};
    for (double t0 = now_s(); now_s() - t0 < CATCH_UP_S;) {
        int64_t seen;
        if (ask_int64(m->dst, "cannot read the target's progress",
                      "SELECT fences FROM bucket_moves WHERE bucket = $1::int",
                      1, v, &seen, e) < 0)
            return -1;
        if (seen >= f)
            return 0;
        nap_ms(10);
    }
    return meter_fail(e,
                      "shard '%s' did not catch up with bucket %d's fence "
                      "in %d s",
                      m->to_name, m->bucket, CATCH_UP_S);
}

/* Step 4, on the target: the bucket taken, in one transaction. */
static enum meter_db_status
take_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    const char *const *v = arg; /* bucket, pks, ids */
    /* New sandboxes of the moved accounts get keys past the copied
     * ones; its own batches wait the few milliseconds this takes. */
    enum meter_db_status st = run(
        db, "cannot take the bucket",
        "LOCK TABLE sandboxes IN SHARE ROW EXCLUSIVE MODE", 0, NULL, NULL, e);
    if (st >= 0)
        st = run(db, "cannot take the bucket",
                 "SELECT setval(q, k) FROM (SELECT pg_get_serial_sequence("
                 "  'sandboxes', 'sandbox_pk')::regclass AS q,"
                 "  (SELECT max(sandbox_pk) FROM sandboxes) AS k) x"
                 " WHERE k > coalesce(pg_sequence_last_value(q), 0)",
                 0, NULL, NULL, e);
    if (st >= 0)
        st = meter_db_exec(db, "cannot take the bucket's accounts",
                           "INSERT INTO accounts (account_pk, account_id,"
                           " auto_created) OVERRIDING SYSTEM VALUE"
                           " SELECT pk, id, true FROM unnest($1::int[],"
                           " $2::text[]) AS x (pk, id) ORDER BY pk"
                           " ON CONFLICT DO NOTHING",
                           2, v + 1, NULL, NULL, NULL, e);
    if (st >= 0)
        st = run(db, "cannot take the bucket",
                 "INSERT INTO bucket_holds (bucket) VALUES ($1::int)"
                 " ON CONFLICT (bucket) DO UPDATE SET moving = false",
                 1, v, NULL, e);
    return st < 0 ? st : METER_DB_NONE;
}

/* Step 4, in the catalog: the map names the target, and the reports'
 * foreign partitions follow it (fleet.c), in one transaction. ROWS if
 * the map gave the bucket to the source. */
static enum meter_db_status
map_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    const char *const *w = arg; /* bucket, to, from */
    enum meter_db_status st =
        run(db, "cannot switch the map",
            "UPDATE shard_buckets SET shard_id = $2::int, epoch = epoch + 1"
            " WHERE bucket = $1::int AND shard_id = $3::int RETURNING bucket",
            3, w, NULL, e);
    if (st == METER_DB_NONE)
        return METER_DB_ABORT;
    if (st > 0 && meter_db_fleet_sync(db, e) < 0)
        st = METER_DB_HARD;
    return st;
}

/* Step 4: the source lets go of fence number f (-1: it has already),
 * the target takes, the map switches. */
static int
switch_over(struct move *m, int64_t f, struct meter_err *e)
{
    char n[24];
    snprintf(n, sizeof(n), "%" PRId64, f);
    const char *v[] = {m->b, n};
    PGresult *r;
    /* The accounts' rows: a shard's are copies of the catalog's, made by
     * the batches that brought their usage. */
    if (run(m->src, "cannot read the bucket's accounts",
            "SELECT coalesce(array_agg(account_pk ORDER BY account_pk),"
            " '{}')::text, coalesce(array_agg(account_id ORDER BY"
            " account_pk), '{}')::text FROM accounts"
            " WHERE meter_bucket(account_pk) = $1::int",
            1, v, &r, e) < 0)
        return -1;
    const char *t[] = {m->b, PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 1)};
    /* Only under the fence the target caught up with: lifted and raised
     * again by another run, batches since would be lost. */
    enum meter_db_status st =
        f < 0 ? METER_DB_ROWS
              : run(m->src, "cannot let the bucket go",
                    "DELETE FROM bucket_holds h USING bucket_moves v"
                    " WHERE h.bucket = $1::int AND h.moving"
                    " AND v.bucket = h.bucket AND v.fences = $2::bigint"
                    " RETURNING h.bucket",
                    2, v, NULL, e);
    int rc = st < 0 ? -1 : 0;
    if (st == METER_DB_NONE)
        rc = meter_fail(e,
                        "bucket %d: the fence the target caught up with was "
                        "lifted (another run of the move?): run it again",
                        m->bucket);
    if (rc == 0 && meter_db_transaction(m->dst, "BEGIN", 3, take_attempt,
                                        (void *)t, e) < 0)
        rc = -1;
    PQclear(r);
    if (rc < 0)
        return -1;
    char from[16], to[16];
    snprintf(from, sizeof(from), "%d", m->from);
    snprintf(to, sizeof(to), "%d", m->to);
    const char *w[] = {m->b, to, from};
    st =
        meter_db_transaction(m->catalog, "BEGIN", 3, map_attempt, (void *)w, e);
    if (st == METER_DB_ABORT)
        return meter_fail(e,
                          "the map no longer gives bucket %d to shard '%s': "
                          "another move?",
                          m->bucket, m->from_name);
    return st < 0 ? -1 : 0;
}

/* The move's replication dropped: the target's subscription, the
 * source's slot and publications. */
static int
unreplicate(struct move *m, struct meter_err *e)
{
    const char *v[] = {m->b};
    return run(m->dst, "cannot drop the move's subscription",
               "SELECT meter_move_unsubscribe($1::int)", 1, v, NULL, e) < 0 ||
                   drop_slot(m, e) < 0 ||
                   run(m->src, "cannot drop the bucket's publications",
                       "SELECT meter_move_unpublish($1::int)", 1, v, NULL,
                       e) < 0
               ? -1
               : 0;
}

/* The move's marks gone from both sides, and the bucket's rows from
 * side db (the source's old copy, or the target's copy called off:
 * clean_bucket's keep_accounts and thorough), counted into *rows. The
 * source's mark goes last: until then its merges leave the bucket be. */
static int
unmark(struct move *m, PGconn *db, bool keep_accounts, bool thorough,
       int64_t *rows, struct meter_err *e)
{
    const char *v[] = {m->b};
    return run(m->dst, "cannot end the move on the target",
               "DELETE FROM bucket_moves WHERE bucket = $1::int", 1, v, NULL,
               e) < 0 ||
                   clean_bucket(m, db, keep_accounts, thorough, rows, e) < 0 ||
                   run(m->src, "cannot end the move on the source",
                       "DELETE FROM bucket_moves WHERE bucket = $1::int", 1, v,
                       NULL, e) < 0
               ? -1
               : 0;
}

/* Step 5: the replication dropped, then the source's copy. */
static int
clean(struct move *m, struct meter_err *e)
{
    double t0 = now_s();
    int64_t rows = 0;
    if (unreplicate(m, e) < 0 ||
        say(m, e, "replication dropped in %.1f s", now_s() - t0) < 0 ||
        unmark(m, m->src, m->from == 0, false, &rows, e) < 0)
        return -1;
    (void)say(m, e,
              "deleted the %" PRId64
              " rows of bucket %d on shard '%s' in %.1f s",
              rows, m->bucket, m->from_name, now_s() - t0);
    return 0;
}

/* ---- the move ------------------------------------------------------- */

/* The bucket is on the target already: a move cut short while cleaning
 * is finished (its source is the shard that still has its mark). */
static int
finish_elsewhere(struct move *m, struct meter_err *e)
{
    PGresult *r;
    char to[16];
    snprintf(to, sizeof(to), "%d", m->to);
    const char *v[] = {to};
    if (run(m->catalog, "cannot read the shards",
            "SELECT shard_id, name, conninfo FROM shards"
            " WHERE shard_id <> $1::int ORDER BY shard_id",
            1, v, &r, e) < 0)
        return -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < PQntuples(r) && !m->src; i++) {
        const char *name = PQgetvalue(r, i, 1);
        PGconn *c = admin_connect(
            m, PQgetisnull(r, i, 2) ? NULL : PQgetvalue(r, i, 2), name, e);
        int64_t mine = -1;
        const char *w[] = {m->b, m->to_name};
        if (!c ||
            ask_int64(c, "cannot read the shard's moves",
                      "SELECT bucket FROM bucket_moves WHERE bucket = $1::int"
                      " AND target = $2",
                      2, w, &mine, e) < 0) {
            rc = -1;
        } else if (mine >= 0) {
            int32_t id;
            if (db_get_int32(r, i, 0, &id, e) < 0) {
                rc = -1;
            } else {
                m->src = c;
                c = NULL;
                m->from = id;
                snprintf(m->from_name, sizeof(m->from_name), "%s", name);
            }
        }
        PQfinish(c);
    }
    PQclear(r);
    if (rc < 0)
        return -1;
    if (!m->src) {
        (void)say(m, e, "bucket %d is on shard '%s' already", m->bucket,
                  m->to_name);
        return 0;
    }
    (void)say(m, e, "finishing the move of bucket %d from shard '%s'",
              m->bucket, m->from_name);
    return clean(m, e);
}

/* Where the source is: held (and moving), the target it is moving to
 * (NULL: none) and its fences. */
struct state {
    bool held, moving;
    char target[33];
    int64_t fences;
};

static int
source_state(struct move *m, struct state *s, struct meter_err *e)
{
    PGresult *r;
    const char *v[] = {m->b};
    if (run(m->src, "cannot read the source's state",
            "SELECT h.moving, v.target, coalesce(v.fences, 0)"
            " FROM (VALUES ($1::int)) x (bucket)"
            " LEFT JOIN bucket_holds h USING (bucket)"
            " LEFT JOIN bucket_moves v USING (bucket)",
            1, v, &r, e) < 0)
        return -1;
    *s = (struct state){.held = !PQgetisnull(r, 0, 0)};
    int rc = 0;
    if (s->held && db_get_bool(r, 0, 0, &s->moving, e) < 0)
        rc = -1;
    else if (!PQgetisnull(r, 0, 1))
        snprintf(s->target, sizeof(s->target), "%s", PQgetvalue(r, 0, 1));
    if (rc == 0 && db_get_int64(r, 0, 2, &s->fences, e) < 0)
        rc = -1;
    PQclear(r);
    return rc;
}

static int
move(struct move *m, struct meter_err *e)
{
    struct state s;
    if (source_state(m, &s, e) < 0)
        return -1;
    if (s.target[0] && strcmp(s.target, m->to_name) != 0)
        return meter_fail(e,
                          "bucket %d is moving to shard '%s': finish that "
                          "move first (meterctl shard move %d %s)",
                          m->bucket, s.target, m->bucket, s.target);
    if (!s.held && s.fences == 0)
        return meter_fail(e,
                          "shard '%s' does not hold bucket %d, which the map "
                          "gives it, and no move of it is under way",
                          m->from_name, m->bucket);
    /* Its slot lost (a failover, say) under a move begun: the
     * subscription would go on from wherever a new slot starts, past
     * writes it never saw. The copy starts over. */
    bool fresh = !s.target[0];
    if (s.held && !fresh) {
        int64_t slot;
        const char *v[] = {m->b};
        if (ask_int64(m->src, "cannot read the move's slot",
                      "SELECT count(*) FROM pg_replication_slots"
                      " WHERE slot_name = format('meter_move_%s', $1::int)",
                      1, v, &slot, e) < 0)
            return -1;
        if (slot == 0) {
            (void)say(m, e,
                      "the move's replication slot is gone: copying again");
            if (s.moving && unfence(m, -1, e) < 0)
                return -1;
            fresh = true;
            s.moving = false;
        }
    }
    double t0 = now_s(), fenced = 0;
    int64_t f = -1;
    if (s.held) {
        f = s.fences;
        if (!s.moving) {
            (void)say(m, e, "copying bucket %d from shard '%s' to shard '%s'",
                      m->bucket, m->from_name, m->to_name);
            if (copy(m, fresh, e) < 0)
                return -1;
            if (say(m, e, "subscribed in %.1f s", now_s() - t0) < 0 ||
                copied(m, e) < 0 || months(m, e) < 0 ||
                say(m, e, "copied in %.1f s; fencing the bucket's batches",
                    now_s() - t0) < 0 ||
                fence(m, &f, e) < 0 ||
                say(m, e, "fenced (fence %" PRId64 ")", f) < 0)
                return -1;
        }
        fenced = now_s();
        if (caught_up(m, f, e) < 0) {
            struct meter_err why = {{0}};
            char msg[sizeof(e->msg)];
            snprintf(msg, sizeof(msg), "%s", e->msg);
            if (unfence(m, f, &why) < 0)
                return meter_fail(e, "%s; and %s", msg, why.msg);
            return meter_fail(e, "%s: the fence is lifted; run the move again",
                              msg);
        }
    }
    if (switch_over(m, f, e) < 0)
        return -1;
    if (fenced > 0 && say(m, e,
                          "bucket %d is on shard '%s': its batches waited "
                          "%.0f ms at most",
                          m->bucket, m->to_name, (now_s() - fenced) * 1000) < 0)
        return -1;
    return clean(m, e);
}

/* Calls the move off where it stands, before the map names the target:
 * the source holds the bucket, unfenced; the replication and the
 * target's copy are gone. */
static int
call_off(struct move *m, struct meter_err *e)
{
    struct state s;
    const char *v[] = {m->b};
    if (source_state(m, &s, e) < 0)
        return -1;
    if (s.target[0] && strcmp(s.target, m->to_name) != 0)
        return meter_fail(e, "bucket %d is moving to shard '%s', not '%s'",
                          m->bucket, s.target, m->to_name);
    /* Cut short in its switch: the source let go, the target may hold. */
    if (!s.held && (run(m->dst, "cannot give the bucket back",
                        "DELETE FROM bucket_holds WHERE bucket = $1::int", 1, v,
                        NULL, e) < 0 ||
                    run(m->src, "cannot give the bucket back",
                        "INSERT INTO bucket_holds (bucket) VALUES ($1::int)", 1,
                        v, NULL, e) < 0))
        return -1;
    if (s.moving && unfence(m, -1, e) < 0)
        return -1;
    int64_t rows = 0;
    if (unreplicate(m, e) < 0 ||
        unmark(m, m->dst, m->to == 0, true, &rows, e) < 0)
        return -1;
    (void)say(m, e,
              "the move of bucket %d to shard '%s' is called off: it stays on "
              "shard '%s'; %" PRId64 " rows of its copy deleted",
              m->bucket, m->to_name, m->from_name, rows);
    return 0;
}

enum meter_db_status
meter_db_shard_move(PGconn *catalog, int bucket, const char *target,
                    const char *user, int copy_s, bool abort,
                    meter_move_note *note, void *arg, struct meter_err *e)
{
    if (bucket < 0 || bucket >= METER_BUCKETS)
        return db_hard(e, "bucket %d is not one of 0-%d", bucket,
                       METER_BUCKETS - 1);
    struct move m = {
        .catalog = catalog,
        .bucket = bucket,
        .user = user ? user : PQuser(catalog),
        .copy_s = copy_s,
        .note = note,
        .arg = arg,
    };
    snprintf(m.b, sizeof(m.b), "%d", bucket);
    const char *v[] = {m.b, target};
    PGresult *r;
    enum meter_db_status st =
        run(catalog, "cannot read the shard map",
            "SELECT b.shard_id, s.name, s.conninfo, t.shard_id, t.conninfo"
            " FROM shard_buckets b JOIN shards s USING (shard_id),"
            " shards t WHERE b.bucket = $1::int AND t.name = $2",
            2, v, &r, e);
    if (st == METER_DB_NONE) {
        PQclear(r);
        return db_hard(e, "no shard is named '%s' (meterctl shard list)",
                       target);
    }
    if (st < 0)
        return st;
    int32_t from, to;
    if (db_get_int32(r, 0, 0, &from, e) < 0 ||
        db_get_int32(r, 0, 3, &to, e) < 0) {
        PQclear(r);
        return METER_DB_HARD;
    }
    m.from = from;
    m.to = to;
    snprintf(m.from_name, sizeof(m.from_name), "%s", PQgetvalue(r, 0, 1));
    snprintf(m.to_name, sizeof(m.to_name), "%s", target);
    /* One run of a bucket's move at a time. */
    int64_t mine;
    if (ask_int64(catalog, "cannot lock the bucket's move",
                  "SELECT pg_try_advisory_lock(" MOVE_LOCK ", $1::int)::int", 1,
                  v, &mine, e) < 0) {
        PQclear(r);
        return METER_DB_HARD;
    }
    if (mine != 1) {
        PQclear(r);
        return db_hard(e, "another shard move of bucket %d is running", bucket);
    }
    int rc;
    if (m.from == m.to && abort) {
        rc = meter_fail(e,
                        "bucket %d is on shard '%s' already: the move is "
                        "done (move it back instead)",
                        bucket, target);
    } else if (m.from == m.to) {
        m.dst = admin_connect(
            &m, PQgetisnull(r, 0, 4) ? NULL : PQgetvalue(r, 0, 4), target, e);
        rc = m.dst ? finish_elsewhere(&m, e) : -1;
    } else {
        m.src =
            admin_connect(&m, PQgetisnull(r, 0, 2) ? NULL : PQgetvalue(r, 0, 2),
                          m.from_name, e);
        m.dst = m.src
                    ? admin_connect(
                          &m, PQgetisnull(r, 0, 4) ? NULL : PQgetvalue(r, 0, 4),
                          target, e)
                    : NULL;
        rc = !m.dst ? -1 : abort ? call_off(&m, e) : move(&m, e);
    }
    PQclear(r);
    PQfinish(m.src);
    PQfinish(m.dst);
    PQclear(PQexecParams(catalog,
                         "SELECT pg_advisory_unlock(" MOVE_LOCK ", $1::int)", 1,
                         NULL, v, NULL, NULL, 0));
    return rc < 0 ? METER_DB_HARD : METER_DB_NONE;
}
