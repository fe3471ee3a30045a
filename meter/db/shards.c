/*
 * shards.c - the shard map as a process keeps it, each thread's
 * connections to the shards, listing and adding shards, and settling
 * the parts of batches left prepared (docs/scale.md).
 *
 * The map is read from the catalog when first needed and again when a
 * shard refuses a bucket (ingest.c): nothing else tells a process that
 * it changed, and nothing needs to, since every shard checks each batch
 * against what it holds. An account's bucket never changes, so the
 * accounts' keys are kept as long as the process runs (bounded).
 */
#include "db_int.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHARDS_MAX DB_SHARDS_MAX
/* Accounts whose keys a process keeps at most, then starts over. */
#define ACCOUNTS_MAX 1000000

struct account_key {
    int32_t pk;
    int bucket;
};

struct meter_shards {
    pthread_rwlock_t lock;
    bool loaded;
    int bucket_shard[METER_BUCKETS];
    char *conninfo[SHARDS_MAX]; /* NULL: the catalog's database */
    bool listed[SHARDS_MAX];
    struct meter_strtab accounts;
    struct account_key *keys; /* by account index */
    size_t keys_cap;
    pthread_mutex_t reg_lock;
    struct meter_registry *reg[SHARDS_MAX];
};

struct meter_shard_links {
    struct meter_shards *sh;
    int timeout_ms;
    PGconn *conn[SHARDS_MAX];
    char *conninfo[SHARDS_MAX]; /* what conn[] was opened with */
    meter_ingest_hook *hook;
    void *hook_arg;
};

struct meter_shards *
meter_shards_new(void)
{
    struct meter_shards *sh = calloc(1, sizeof(*sh));
    if (!sh)
        return NULL;
    pthread_rwlock_init(&sh->lock, NULL);
    pthread_mutex_init(&sh->reg_lock, NULL);
    return sh;
}

void
meter_shards_free(struct meter_shards *sh)
{
    if (!sh)
        return;
    for (int i = 0; i < SHARDS_MAX; i++) {
        free(sh->conninfo[i]);
        meter_registry_free(sh->reg[i]);
    }
    meter_strtab_release(&sh->accounts);
    free(sh->keys);
    pthread_rwlock_destroy(&sh->lock);
    pthread_mutex_destroy(&sh->reg_lock);
    free(sh);
}

int
db_shards_load(struct meter_shards *sh, PGconn *catalog, bool again,
               struct meter_err *e)
{
    pthread_rwlock_rdlock(&sh->lock);
    bool loaded = sh->loaded;
    pthread_rwlock_unlock(&sh->lock);
    if (loaded && !again)
        return 0;
    PGresult *r;
    enum meter_db_status st =
        meter_db_exec(catalog, "cannot read the shard map",
                      /* A row a bucket, and one for a shard that holds none. */
                      "SELECT s.shard_id, s.conninfo, b.bucket FROM shards s"
                      " LEFT JOIN shard_buckets b USING (shard_id)"
                      " ORDER BY s.shard_id, b.bucket",
                      0, NULL, NULL, NULL, &r, e);
    if (st < 0)
        return -1;
    int map[METER_BUCKETS];
    char *info[SHARDS_MAX] = {0};
    bool listed[SHARDS_MAX] = {0};
    int rc = 0;
    for (int b = 0; b < METER_BUCKETS; b++)
        map[b] = -1;
    for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
        int32_t id;
        if (db_get_int32(r, i, 0, &id, e) < 0) {
            rc = -1;
            break;
        }
        if (id < 0 || id >= SHARDS_MAX) {
            rc = meter_fail(e, "shard %" PRId32 " is out of range", id);
            break;
        }
        if (!listed[id] && !PQgetisnull(r, i, 1) &&
            !(info[id] = strdup(PQgetvalue(r, i, 1)))) {
            rc = meter_fail(e, "out of memory");
            break;
        }
        listed[id] = true;
        int32_t b;
        if (PQgetisnull(r, i, 2))
            continue;
        if (db_get_int32(r, i, 2, &b, e) < 0)
            rc = -1;
        else if (b < 0 || b >= METER_BUCKETS)
            rc = meter_fail(e, "bucket %" PRId32 " is out of range", b);
        else
            map[b] = id;
    }
    PQclear(r);
    for (int b = 0; rc == 0 && b < METER_BUCKETS; b++)
        if (map[b] < 0)
            rc = meter_fail(e, "the shard map gives bucket %d to no shard", b);
    if (rc < 0) {
        for (int i = 0; i < SHARDS_MAX; i++)
            free(info[i]);
        return -1;
    }
    pthread_rwlock_wrlock(&sh->lock);
    memcpy(sh->bucket_shard, map, sizeof(map));
    for (int i = 0; i < SHARDS_MAX; i++) {
        free(sh->conninfo[i]);
        sh->conninfo[i] = info[i];
        sh->listed[i] = listed[i];
    }
    sh->loaded = true;
    pthread_rwlock_unlock(&sh->lock);
    return 0;
}

int
db_shards_of_bucket(struct meter_shards *sh, int bucket)
{
    pthread_rwlock_rdlock(&sh->lock);
    int id = sh->bucket_shard[bucket];
    pthread_rwlock_unlock(&sh->lock);
    return id;
}

bool
db_shards_account(struct meter_shards *sh, const char *id, int32_t *pk,
                  int *bucket)
{
    pthread_rwlock_rdlock(&sh->lock);
    long i = meter_strtab_find(&sh->accounts, id);
    if (i >= 0) {
        *pk = sh->keys[i].pk;
        *bucket = sh->keys[i].bucket;
    }
    pthread_rwlock_unlock(&sh->lock);
    return i >= 0;
}

void
db_shards_account_put(struct meter_shards *sh, const char *id, int32_t pk,
                      int bucket)
{
    pthread_rwlock_wrlock(&sh->lock);
    if (sh->accounts.n >= ACCOUNTS_MAX)
        meter_strtab_clear(&sh->accounts); /* a cache: start over */
    long i = meter_strtab_intern(&sh->accounts, id, NULL);
    if (i >= 0 && (size_t)i >= sh->keys_cap) {
        size_t cap = sh->keys_cap ? 2 * sh->keys_cap : 1024;
        struct account_key *k = realloc(sh->keys, cap * sizeof(*k));
        if (!k) {
            meter_strtab_clear(&sh->accounts); /* every index its key */
            i = -1;
        } else {
            sh->keys = k;
            sh->keys_cap = cap;
        }
    }
    if (i >= 0)
        sh->keys[i] = (struct account_key){pk, bucket};
    pthread_rwlock_unlock(&sh->lock);
}

struct meter_registry *
db_shards_registry(struct meter_shards *sh, int shard)
{
    pthread_mutex_lock(&sh->reg_lock);
    if (!sh->reg[shard])
        sh->reg[shard] = meter_registry_new();
    struct meter_registry *r = sh->reg[shard];
    pthread_mutex_unlock(&sh->reg_lock);
    return r;
}

int
meter_db_usage_whole(PGconn *db, struct meter_err *e)
{
    PGresult *r;
    int64_t held = 0;
    /* The map in db: on a shard, which lists none, its own database. */
    enum meter_db_status st = meter_db_exec(
        db, "cannot read the shard map",
        "SELECT count(*) FROM shard_buckets b JOIN shards s USING (shard_id)"
        " WHERE s.conninfo IS NULL",
        0, NULL, NULL, NULL, &r, e);
    if (st >= 0 && db_get_int64(r, 0, 0, &held, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    if (st < 0)
        return -1;
    if (held != METER_BUCKETS)
        return meter_fail(e,
                          "the shard map gives this database %" PRId64
                          " of the %d buckets of accounts: usage over "
                          "several shards is not read yet, only stored "
                          "(docs/scale.md)",
                          held, METER_BUCKETS);
    return 0;
}

PGconn *
db_shard_connect(const char *conninfo, struct meter_err *e)
{
    /* A shard that stops answering at the network (no reset) is found
     * by TCP keepalives, not hours later; the conninfo's own settings,
     * after these, win. A URI takes no prefix: as given. */
    if (strncmp(conninfo, "postgres://", 11) == 0 ||
        strncmp(conninfo, "postgresql://", 13) == 0)
        return meter_db_connect(conninfo, e);
    struct meter_buf b = {0};
    meter_buf_printf(&b,
                     "keepalives=1 keepalives_idle=10 keepalives_interval=5 "
                     "keepalives_count=3 %s",
                     conninfo);
    PGconn *c = b.failed ? NULL : meter_db_connect(b.p, e);
    if (b.failed)
        meter_fail(e, "out of memory");
    meter_buf_release(&b);
    return c;
}

/* ---- one thread's connections ----------------------------------------- */

struct meter_shard_links *
meter_shard_links_new(struct meter_shards *sh, int timeout_ms)
{
    struct meter_shard_links *l = calloc(1, sizeof(*l));
    if (l) {
        l->sh = sh;
        l->timeout_ms = timeout_ms;
    }
    return l;
}

void
meter_shard_links_free(struct meter_shard_links *l)
{
    if (!l)
        return;
    for (int i = 0; i < SHARDS_MAX; i++) {
        PQfinish(l->conn[i]);
        free(l->conninfo[i]);
    }
    free(l);
}

void
meter_shard_links_hook(struct meter_shard_links *l,
                       meter_ingest_hook *between_commits, void *arg)
{
    l->hook = between_commits;
    l->hook_arg = arg;
}

void
db_links_between_commits(struct meter_shard_links *l, PGconn *next)
{
    if (l->hook)
        l->hook(next, l->hook_arg);
}

struct meter_shards *
db_links_shards(struct meter_shard_links *l)
{
    return l->sh;
}

PGconn *
db_links_conn(struct meter_shard_links *l, PGconn *catalog, int shard,
              bool fresh, struct meter_err *e)
{
    struct meter_shards *sh = l->sh;
    pthread_rwlock_rdlock(&sh->lock);
    const char *info = sh->conninfo[shard];
    bool listed = sh->listed[shard];
    char *want = info ? strdup(info) : NULL;
    pthread_rwlock_unlock(&sh->lock);
    if (!listed) {
        free(want);
        meter_fail(e, "shard %d is not in the shard map", shard);
        return NULL;
    }
    if (!want) {
        if (info) {
            meter_fail(e, "out of memory");
            return NULL;
        }
        return catalog; /* the catalog's own database */
    }
    PGconn **c = &l->conn[shard];
    bool same = l->conninfo[shard] && strcmp(l->conninfo[shard], want) == 0;
    if (*c && same && !fresh && PQstatus(*c) == CONNECTION_OK) {
        free(want);
        return *c;
    }
    PQfinish(*c);
    free(l->conninfo[shard]);
    l->conninfo[shard] = want;
    *c = db_shard_connect(want, e);
    if (*c && l->timeout_ms > 0 &&
        meter_db_set_statement_timeout(*c, l->timeout_ms, e) < 0) {
        PQfinish(*c);
        *c = NULL;
    }
    if (!*c) /* named by number: a conninfo may hold a password */
        db_shard_away(e, shard, NULL);
    return *c;
}

enum meter_db_status
db_account_conn(PGconn *db, const char *account, PGconn **own,
                struct meter_shard_info *which, struct meter_err *e)
{
    const char *v[] = {account};
    PGresult *r;
    struct meter_shard_info s = {0};
    *own = NULL;
    enum meter_db_status st =
        meter_db_exec(db, "cannot read the account's shard",
                      "SELECT s.shard_id, s.name, s.conninfo FROM accounts a"
                      " JOIN shard_buckets b"
                      " ON b.bucket = meter_bucket(a.account_pk)"
                      " JOIN shards s USING (shard_id) WHERE a.account_id = $1"
                      " AND s.conninfo IS NOT NULL",
                      1, v, NULL, NULL, &r, e);
    if (st == METER_DB_ROWS &&
        (db_get_int32(r, 0, 0, &s.id, e) < 0 ||
         db_get_text(r, 0, 1, s.name, sizeof(s.name), e) < 0))
        st = METER_DB_HARD;
    else if (st == METER_DB_ROWS &&
             !(*own = db_shard_connect(PQgetvalue(r, 0, 2), e)))
        st = db_shard_away(e, s.id, s.name);
    PQclear(r);
    if (which) /* id and name only: a conninfo may hold a password */
        *which = s;
    return st < 0 ? st : METER_DB_NONE;
}

PGconn *
meter_shard_links_conn(struct meter_shard_links *l, PGconn *catalog, int shard,
                       struct meter_err *e)
{
    if (shard < 0 || shard >= SHARDS_MAX) {
        meter_fail(e, "shard %d is out of range", shard);
        return NULL;
    }
    if (db_shards_load(l->sh, catalog, false, e) < 0)
        return NULL;
    /* A shard added since the map was read: read it again. */
    pthread_rwlock_rdlock(&l->sh->lock);
    bool listed = l->sh->listed[shard];
    pthread_rwlock_unlock(&l->sh->lock);
    if (!listed && db_shards_load(l->sh, catalog, true, e) < 0)
        return NULL;
    return db_links_conn(l, catalog, shard, false, e);
}

enum meter_db_status
meter_db_accounts_shards(PGconn *catalog, const char *const *ids, size_t n,
                         int *shard, struct meter_err *e)
{
    struct meter_buf arr = {0};
    meter_buf_str(&arr, "{");
    for (size_t k = 0; k < n; k++) {
        db_array_text(&arr, ids[k]);
        shard[k] = -1;
    }
    meter_buf_str(&arr, "}");
    const char *v[] = {arr.p};
    PGresult *r = NULL;
    enum meter_db_status st =
        arr.failed
            ? db_hard(e, "out of memory")
            : meter_db_exec(catalog, "cannot read the accounts' shards",
                            "SELECT x.i, b.shard_id FROM unnest($1::text[])"
                            " WITH ORDINALITY AS x (id, i)"
                            " JOIN accounts a ON a.account_id = x.id"
                            " JOIN shard_buckets b"
                            "  ON b.bucket = meter_bucket(a.account_pk)",
                            1, v, NULL, NULL, &r, e);
    for (int i = 0; st >= 0 && i < PQntuples(r); i++) {
        int64_t at;
        int32_t s;
        if (db_get_int64(r, i, 0, &at, e) < 0 ||
            db_get_int32(r, i, 1, &s, e) < 0 || at < 1 || (size_t)at > n) {
            st = METER_DB_HARD;
            break;
        }
        shard[at - 1] = s;
    }
    PQclear(r);
    meter_buf_release(&arr);
    return st;
}

/* ---- listing and adding shards ---------------------------------------- */

enum meter_db_status
meter_db_shard_list(PGconn *catalog, meter_shard_cb *cb, void *arg,
                    struct meter_err *e)
{
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        catalog, "cannot list shards",
        "SELECT s.shard_id, s.name, coalesce(s.conninfo, ''), count(b.bucket)"
        " FROM shards s LEFT JOIN shard_buckets b USING (shard_id)"
        " GROUP BY s.shard_id ORDER BY s.shard_id",
        0, NULL, NULL, NULL, &r, e);
    for (int i = 0; st >= 0 && i < PQntuples(r); i++) {
        struct meter_shard_info s = {0};
        int64_t buckets;
        if (db_get_int32(r, i, 0, &s.id, e) < 0 ||
            db_get_text(r, i, 1, s.name, sizeof(s.name), e) < 0 ||
            db_get_text(r, i, 2, s.conninfo, sizeof(s.conninfo), e) < 0 ||
            db_get_int64(r, i, 3, &buckets, e) < 0) {
            st = METER_DB_HARD;
            break;
        }
        s.buckets = (int)buckets;
        cb(&s, arg);
    }
    PQclear(r);
    return st;
}

/* The newest migration applied to db, in *version. */
static enum meter_db_status
schema_version(PGconn *db, int64_t *version, struct meter_err *e)
{
    PGresult *r;
    enum meter_db_status st =
        meter_db_exec(db, "cannot read the schema's version",
                      "SELECT coalesce(max(version), 0) FROM schema_migrations",
                      0, NULL, NULL, NULL, &r, e);
    if (st >= 0 && db_get_int64(r, 0, 0, version, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    return st;
}

/* A database as PostgreSQL tells it apart whatever conninfo reached it:
 * its cluster's system identifier and its oid there (its name for the
 * messages). A standby shares them with its primary, as it shares its
 * data. */
struct identity {
    char sysid[32], oid[16], name[64];
};

static enum meter_db_status
identity(PGconn *db, struct identity *id, struct meter_err *e)
{
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot read the database's identity",
        "SELECT (SELECT system_identifier FROM"
        " pg_control_system())::text, d.oid::text, d.datname"
        " FROM pg_database d WHERE d.datname = current_database()",
        0, NULL, NULL, NULL, &r, e);
    if (st >= 0 && (db_get_text(r, 0, 0, id->sysid, sizeof(id->sysid), e) < 0 ||
                    db_get_text(r, 0, 1, id->oid, sizeof(id->oid), e) < 0 ||
                    db_get_text(r, 0, 2, id->name, sizeof(id->name), e) < 0))
        st = METER_DB_HARD;
    PQclear(r);
    return st;
}

/* Refuses shard `name` (db, reached by conninfo) if it is the database
 * of a shard listed already under another conninfo: the catalog's own
 * (shard 0), or another's, which must answer to be compared. */
static enum meter_db_status
listed_as(PGconn *catalog, PGconn *db, const char *name, const char *conninfo,
          struct meter_err *e)
{
    struct identity mine, theirs;
    PGresult *r = NULL;
    enum meter_db_status st = identity(db, &mine, e);
    if (st >= 0)
        st =
            meter_db_exec(catalog, "cannot read the shards",
                          "SELECT name, conninfo FROM shards ORDER BY shard_id",
                          0, NULL, NULL, NULL, &r, e);
    for (int i = 0; st >= 0 && i < PQntuples(r); i++) {
        const char *other = PQgetvalue(r, i, 0);
        const char *info = PQgetisnull(r, i, 1) ? NULL : PQgetvalue(r, i, 1);
        PGconn *o = info ? meter_db_connect(info, e) : catalog;
        if (!o) {
            char why[sizeof(e->msg)];
            snprintf(why, sizeof(why), "%s", e->msg);
            st = db_hard(e,
                         "cannot tell whether shard '%s' is shard '%s' "
                         "listed already, which does not answer: %s",
                         name, other, why);
            break;
        }
        st = identity(o, &theirs, e);
        if (o != catalog)
            PQfinish(o);
        if (st >= 0 && strcmp(mine.sysid, theirs.sysid) == 0 &&
            strcmp(mine.oid, theirs.oid) == 0)
            st = db_hard(e,
                         "shard '%s' ('%s') is database '%s' of system %s, "
                         "listed already as shard '%s' (%s%s%s)",
                         name, conninfo, mine.name, mine.sysid, other,
                         info ? "'" : "the catalog's own database",
                         info ? info : "", info ? "'" : "");
    }
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_shard_add(PGconn *catalog, const char *name, const char *conninfo,
                   struct meter_err *e)
{
    /* Listed already: refused before the shard is touched (emptying a
     * live shard of its buckets would stop its ingestion). */
    const char *v[] = {name, conninfo};
    PGresult *r = NULL;
    enum meter_db_status st =
        meter_db_exec(catalog, "cannot read the shards",
                      "SELECT name FROM shards WHERE name = $1"
                      " OR conninfo = $2",
                      2, v, NULL, NULL, &r, e);
    if (st == METER_DB_ROWS)
        st = db_hard(e,
                     "shard '%s' is listed already with that name or "
                     "conninfo",
                     PQgetvalue(r, 0, 0));
    PQclear(r);
    if (st < 0)
        return st;
    struct meter_err why = {{0}};
    PGconn *shard = meter_db_connect(conninfo, &why);
    if (!shard)
        return db_hard(e, "cannot reach shard '%s': %s", name, why.msg);
    int64_t mine, theirs;
    st = listed_as(catalog, shard, name, conninfo, e);
    if (st >= 0)
        st = schema_version(catalog, &mine, e);
    if (st >= 0 && (st = schema_version(shard, &theirs, e)) >= 0 &&
        mine != theirs)
        st = db_hard(e,
                     "shard '%s' is at schema version %04" PRId64
                     ", the catalog at %04" PRId64
                     ": run meterctl --db SHARD migrate on it first",
                     name, theirs, mine);
    r = NULL;
    if (st >= 0)
        st = meter_db_exec(shard, "cannot read the shard's usage",
                           "SELECT (SELECT count(*) FROM sandboxes)"
                           " + (SELECT count(*) FROM usage_hourly),"
                           " (SELECT count(*) FROM bucket_holds)",
                           0, NULL, NULL, NULL, &r, e);
    int64_t rows = 0, held = 0;
    if (st >= 0 && (db_get_int64(r, 0, 0, &rows, e) < 0 ||
                    db_get_int64(r, 0, 1, &held, e) < 0))
        st = METER_DB_HARD;
    PQclear(r);
    if (st >= 0 && rows > 0)
        st = db_hard(e,
                     "shard '%s' already holds usage (%" PRId64
                     " rows): a new shard must be empty",
                     name, rows);
    /* Migrated and never added, it holds them all; added, what the map
     * gave it. */
    if (st >= 0 && held != 0 && held != METER_BUCKETS)
        st = db_hard(e,
                     "shard '%s' holds %" PRId64
                     " buckets: it is some catalog's shard already",
                     name, held);
    /* Empty of buckets first: listed in the catalog, it may be given
     * some, and must refuse the rest. */
    if (st >= 0)
        st = meter_db_exec(shard, "cannot empty the shard of buckets",
                           "DELETE FROM bucket_holds", 0, NULL, NULL, NULL,
                           NULL, e);
    PQfinish(shard);
    if (st < 0)
        return st;
    st = meter_db_exec(catalog, "cannot add the shard",
                       "INSERT INTO shards (shard_id, name, conninfo)"
                       " SELECT coalesce(max(shard_id), 0) + 1, $1, $2"
                       " FROM shards",
                       2, v, NULL, NULL, NULL, e);
    /* The reports' foreign servers (fleet.c). */
    if (st >= 0 && meter_db_fleet_sync(catalog, e) < 0)
        st = METER_DB_HARD;
    return st < 0 ? st : METER_DB_ROWS;
}

/* ---- settling prepared parts ------------------------------------------ */

/* The decision of batch gid, written as a rollback first if there is
 * none and decide says to: 1 commit, 0 roll back, -1 none yet. */
static enum meter_db_status
decision(PGconn *catalog, const char *gid, bool decide, int *out,
         struct meter_err *e)
{
    const char *v[] = {gid};
    PGresult *r;
    enum meter_db_status st =
        decide ? meter_db_exec(catalog, "cannot write a batch's decision",
                               "WITH d AS (INSERT INTO shard_commits"
                               " (gid, committed) VALUES ($1, false)"
                               " ON CONFLICT (gid) DO NOTHING RETURNING"
                               " committed) SELECT committed FROM d UNION ALL"
                               " SELECT committed FROM shard_commits"
                               " WHERE gid = $1",
                               1, v, NULL, NULL, &r, e)
               : meter_db_exec(catalog, "cannot read a batch's decision",
                               "SELECT committed FROM shard_commits"
                               " WHERE gid = $1",
                               1, v, NULL, NULL, &r, e);
    *out = -1;
    bool yes;
    if (st == METER_DB_ROWS) {
        if (db_get_bool(r, 0, 0, &yes, e) < 0)
            st = METER_DB_HARD;
        else
            *out = yes;
    }
    PQclear(r);
    return st;
}

/* Settles the prepared parts on db, one of the shards. */
static enum meter_db_status
settle_shard(PGconn *catalog, PGconn *db, int grace_s, long *settled,
             struct meter_err *e)
{
    struct db_params p = {0};
    db_param_int32(&p, grace_s);
    PGresult *r;
    /* Parts are named meter:BATCH:SHARD; the decision is the batch's. */
    enum meter_db_status st =
        meter_db_exec(db, "cannot list prepared parts",
                      "SELECT gid, substr(gid, 1, 38), prepared < now() -"
                      " make_interval(secs => $1::int) FROM pg_prepared_xacts"
                      " WHERE database = current_database()"
                      " AND gid ~ '^meter:[0-9a-f]{32}:[0-9]+$' ORDER BY gid",
                      p.n, p.v, NULL, NULL, &r, e);
    for (int i = 0; st >= 0 && i < PQntuples(r); i++) {
        bool old;
        int commit;
        if (db_get_bool(r, i, 2, &old, e) < 0) {
            st = METER_DB_HARD;
            break;
        }
        st = decision(catalog, PQgetvalue(r, i, 1), old, &commit, e);
        if (st < 0 || commit < 0)
            continue; /* young and undecided: its meterd is at it */
        bool gone;
        st =
            db_two_phase(db, commit ? DB_COMMIT_PREPARED : DB_ROLLBACK_PREPARED,
                         PQgetvalue(r, i, 0), &gone, e);
        if (st >= 0 && !gone)
            *settled += 1;
    }
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_shards_resolve(PGconn *catalog, struct meter_shard_links *l,
                        int grace_s, long *settled, struct meter_err *e)
{
    *settled = 0;
    if (db_shards_load(l->sh, catalog, true, e) < 0)
        return METER_DB_HARD;
    PGresult *r;
    /* A decision to commit is written once every part is prepared: one
     * older than the sweep's start whose parts the sweep, reaching every
     * shard, did not leave prepared, is no longer needed. A rollback,
     * which a resolver may write while a part is still to be prepared,
     * is kept a day, for that part's meterd to find. */
    enum meter_db_status st =
        meter_db_exec(catalog, "cannot read the time", "SELECT now()::text", 0,
                      NULL, NULL, NULL, &r, e);
    char start[64] = "";
    if (st >= 0 && db_get_text(r, 0, 0, start, sizeof(start), e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    /* Every shard, even past one that fails: its parts may hold rows
     * that batches wait for. */
    enum meter_db_status first = st;
    for (int s = 0; st >= 0 && s < SHARDS_MAX; s++) {
        pthread_rwlock_rdlock(&l->sh->lock);
        bool listed = l->sh->listed[s];
        pthread_rwlock_unlock(&l->sh->lock);
        if (!listed)
            continue;
        struct meter_err se = {{0}};
        PGconn *db = db_links_conn(l, catalog, s, false, &se);
        if (db && PQstatus(db) != CONNECTION_OK)
            db = db_links_conn(l, catalog, s, true, &se);
        enum meter_db_status ss =
            db ? settle_shard(catalog, db, grace_s, settled, &se)
               : METER_DB_HARD;
        if (ss < 0 && first >= 0) {
            first = ss;
            *e = se;
        }
        /* The catalog lost: no decision can be read any more. */
        if (ss < 0 && meter_db_lost(catalog))
            st = ss;
    }
    const char *v[] = {start};
    if (first >= 0)
        first =
            meter_db_exec(catalog, "cannot forget decisions",
                          "DELETE FROM shard_commits"
                          " WHERE (committed AND decided_at < $1::timestamptz)"
                          " OR decided_at < $1::timestamptz - interval '1 day'",
                          1, v, NULL, NULL, NULL, e);
    return first < 0 ? first : METER_DB_NONE;
}
