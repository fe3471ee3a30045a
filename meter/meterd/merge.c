/*
 * merge.c - the hourly rollups merged in the background, every
 * --merge-every seconds, on a connection of its own: reports then sum
 * one row per account and hour (usage_merge.c, migration 0010), and no
 * request waits for a merge.
 *
 * Each meterd runs one; a merge that finds another running (a replica's)
 * skips, so replicas share nothing but the database. A backlog (a first
 * start over a year of rollups) is merged a bounded number of rows a
 * transaction, one after the other, until done or stopped. Reports are
 * right whether or not it runs: they read the rows not merged yet as
 * they are. Stopping cuts the connection off (shutdown of its socket),
 * so a database that no longer answers cannot hold meterd's exit; the
 * merge under way is rolled back, which loses nothing.
 *
 * After merging, it packs the account-hours that ended --pack-after
 * seconds ago (usage_pack.c), one transaction after the other, until
 * none is due, another packs, or meterd stops: the same way.
 *
 * Every --alert-every seconds it evaluates the usage alerts
 * (alerts.c, meter/db/alerts.c).
 *
 * Then it settles the parts of batches over several shards that a
 * meterd left prepared (meter_db_shards_resolve, docs/scale.md): those
 * whose batch was decided are committed at once, the others rolled back
 * once they are a minute old.
 */
#include "meterd_int.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>

/* Rows a transaction: about a third of a second's work. */
#define MERGE_ROWS 10000
/* Seconds a prepared part without a decision is left to its meterd. */
#define RESOLVE_GRACE_S 60

static pthread_t thread;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static bool running, stopping;
static int sock = -1; /* the connection's, while it is open */
static const char *conninfo;
static unsigned every_s, pack_after_s, timeout_s;
static struct meter_shard_links *links;

static bool
stopped(void)
{
    pthread_mutex_lock(&lock);
    bool s = stopping;
    pthread_mutex_unlock(&lock);
    return s;
}

/* Closes db, which stop() may no longer cut off. */
static void
disconnect(PGconn **db)
{
    pthread_mutex_lock(&lock);
    sock = -1;
    pthread_mutex_unlock(&lock);
    PQfinish(*db);
    *db = NULL;
}

/* Merges db's rollups until nothing is left, another merges, or meterd
 * stops; false if a merge failed, or db's schema is not this meterd's:
 * a merge of another release's would miss what a migration added to it
 * (0024's sums by month). */
static bool
merge_rows(PGconn *db, const char *where)
{
    struct meter_err e = {{0}};
    uint64_t rows;
    if (meterd_schema_check(db, &e) != METER_DB_ROWS) {
        if (!stopped())
            meter_log(METER_LOG_WARN, "merge%s: not merging: %s", where, e.msg);
        return false;
    }
    do {
        if (meter_db_usage_merge(db, MERGE_ROWS, &rows, &e) < 0) {
            if (!stopped()) /* else cut off by meterd_merge_stop */
                meter_log(METER_LOG_WARN, "merge%s: %s", where, e.msg);
            return false;
        }
        if (rows)
            meter_log(METER_LOG_DEBUG, "merge%s: %llu hourly rows merged",
                      where, (unsigned long long)rows);
    } while (rows == MERGE_ROWS && !stopped());
    return true;
}

/* Merges until nothing is left, another merges, or meterd stops. */
static void
merge_all(PGconn **db)
{
    struct meter_err e = {{0}};
    if (*db && PQstatus(*db) != CONNECTION_OK)
        disconnect(db);
    if (!*db) {
        *db = meter_db_connect(conninfo, &e);
        if (*db &&
            meter_db_set_statement_timeout(*db, timeout_s * 1000, &e) < 0)
            disconnect(db);
        if (!*db) {
            meter_log(METER_LOG_WARN, "merge: %s", e.msg);
            return;
        }
        pthread_mutex_lock(&lock);
        sock = PQsocket(*db);
        if (stopping)
            shutdown(sock, SHUT_RDWR);
        pthread_mutex_unlock(&lock);
    }
    merge_rows(*db, "");
}

/* Packs until nothing is due, another packs, meterd stops, or a merge
 * is due again: a backlog of hours (the first start after migration
 * 0011) is packed a period at a time, the rollups merged in between. */
static void
pack_all(PGconn *db, const char *where)
{
    struct meter_err e = {{0}};
    struct meter_pack_result res;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec >= (time_t)every_s)
            return;
        if (meter_db_usage_pack(db, pack_after_s, &res, &e) < 0) {
            if (!stopped())
                meter_log(METER_LOG_WARN, "pack%s: %s", where, e.msg);
            return;
        }
        if (res.blocks)
            meter_log(METER_LOG_DEBUG, "pack%s: %llu blocks into %llu packs",
                      where, (unsigned long long)res.blocks,
                      (unsigned long long)res.packs);
    } while (res.more && !stopped());
}

/* The shards besides the catalog's database, listed by meter_db_shard_list. */
struct shard_ids {
    int id[256];
    size_t n;
};

static void
note_shard(const struct meter_shard_info *s, void *arg)
{
    struct shard_ids *ids = arg;
    if (s->conninfo[0] && ids->n < sizeof(ids->id) / sizeof(ids->id[0]))
        ids->id[ids->n++] = s->id;
}

/* Merges and packs on each shard (docs/scale.md), as on the catalog. */
static void
shards_work(PGconn *db)
{
    struct shard_ids ids = {{0}, 0};
    struct meter_err e = {{0}};
    if (meter_db_shard_list(db, note_shard, &ids, &e) < 0) {
        if (!stopped())
            meter_log(METER_LOG_WARN, "merge: %s", e.msg);
        return;
    }
    for (size_t i = 0; i < ids.n && !stopped(); i++) {
        char where[32];
        snprintf(where, sizeof(where), " (shard %d)", ids.id[i]);
        PGconn *s = meter_shard_links_conn(links, db, ids.id[i], &e);
        if (!s) {
            meter_log(METER_LOG_WARN, "merge%s: %s", where, e.msg);
            continue;
        }
        if (merge_rows(s, where) && pack_after_s && !stopped())
            pack_all(s, where);
    }
}

/* Settles the prepared parts of every shard. */
static void
resolve(PGconn *db)
{
    struct meter_err e = {{0}};
    long settled;
    if (meter_db_shards_resolve(db, links, RESOLVE_GRACE_S, &settled, &e) < 0) {
        if (!stopped())
            meter_log(METER_LOG_WARN, "resolve: %s", e.msg);
        return;
    }
    if (settled)
        meter_log(METER_LOG_INFO,
                  "resolve: %ld prepared parts of batches settled", settled);
}

/* Whether --alert-every seconds have passed since the alerts were last
 * evaluated (then they are due again from now). */
static bool
alerts_due(void)
{
    static struct timespec last;
    struct timespec now;
    if (!meterd.alert_every)
        return false;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (last.tv_sec && now.tv_sec - last.tv_sec < (time_t)meterd.alert_every)
        return false;
    last = now;
    return true;
}

static void *
run(void *arg)
{
    (void)arg;
    PGconn *db = NULL;
    pthread_mutex_lock(&lock);
    while (!stopping) {
        pthread_mutex_unlock(&lock);
        merge_all(&db);
        if (db && pack_after_s && !stopped())
            pack_all(db, "");
        if (db && !stopped())
            shards_work(db);
        if (db && !stopped())
            resolve(db);
        /* After merging: the rollups the alerts read are fresh. */
        if (db && !stopped() && alerts_due())
            meterd_alerts_evaluate(db);
        pthread_mutex_lock(&lock);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += every_s;
        while (!stopping && pthread_cond_timedwait(&wake, &lock, &until) == 0)
            ;
    }
    pthread_mutex_unlock(&lock);
    if (db)
        disconnect(&db);
    return NULL;
}

int
meterd_merge_start(const char *db, unsigned every, unsigned pack_after,
                   unsigned db_timeout_s, struct meter_err *e)
{
    if (!every)
        return 0;
    conninfo = db;
    every_s = every;
    pack_after_s = pack_after;
    timeout_s = db_timeout_s + 1;
    if (!(links = meter_shard_links_new(meterd.shards, (int)timeout_s * 1000)))
        return meter_fail(e, "out of memory");
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&wake, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&thread, NULL, run, NULL) != 0)
        return meter_fail(e, "cannot start the merging thread");
    running = true;
    return 0;
}

void
meterd_merge_stop(void)
{
    if (!running)
        return;
    pthread_mutex_lock(&lock);
    stopping = true;
    if (sock >= 0)
        shutdown(sock, SHUT_RDWR);
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    pthread_join(thread, NULL);
    running = false;
    meter_shard_links_free(links);
    links = NULL;
}
