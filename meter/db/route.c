/*
 * route.c - a batch of samples over several shards (docs/scale.md): each
 * account's sandboxes go to the shard that holds its bucket, each
 * shard's part in that shard's own exactly-once transaction (ingest.c).
 *
 * One shard: its transaction commits, as on one server. Several: each
 * part is prepared (PREPARE TRANSACTION meter:BATCH:SHARD), then the
 * batch's decision is written in the catalog (shard_commits), then each
 * part is committed. A part that fails before the decision rolls every
 * prepared part back: nothing stored anywhere. After the decision, a
 * part whose shard is lost stays prepared, holding its sandboxes' rows,
 * and meter_db_shards_resolve commits it when the shard is back; a
 * resend waits for it and then counts it as duplicates. A decision that
 * may or may not have been written (the catalog lost at that moment)
 * leaves every part prepared for the same resolver, which commits them
 * if it finds the decision and rolls them back if it does not.
 */
#include "db_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* Times a batch is routed again after a shard refused a bucket (the map
 * changed under it); a move fences a bucket for a few seconds. */
#define ROUTE_TRIES 40
#define ROUTE_WAIT_MS 100

/* One shard's part of a batch. */
struct part {
    int shard;
    PGconn *db;
    struct db_batch *b;
    int32_t buckets[METER_BUCKETS];
    size_t nbuckets;
    char gid[48];
    bool prepared, committed;
};

/* Looks up the accounts of b's sandboxes in the catalog, creating those
 * it has never seen, and routes each sandbox by its account's bucket. */
static enum meter_db_status
route_accounts(PGconn *catalog, struct meter_shards *sh, struct db_batch *b,
               struct meter_err *e)
{
    size_t n = db_batch_groups(b), unknown = 0;
    struct meter_buf ids = {0};
    meter_buf_str(&ids, "{");
    for (size_t g = 0; g < n; g++) {
        int32_t pk;
        int bucket;
        const char *id = db_batch_account(b, g);
        if (db_shards_account(sh, id, &pk, &bucket)) {
            db_batch_route(b, g, pk, bucket);
            continue;
        }
        /* Groups are in account order: each account once. */
        if (!unknown || strcmp(id, db_batch_account(b, g - 1)) != 0) {
            db_array_text(&ids, id);
            unknown++;
        }
        db_batch_route(b, g, -1, -1);
    }
    meter_buf_str(&ids, "}");
    enum meter_db_status st = METER_DB_NONE;
    PGresult *r = NULL;
    if (ids.failed)
        st = db_hard(e, "out of memory");
    else if (unknown) {
        const char *v[] = {ids.p};
        /* Created in their own transaction: an account without usage
         * costs nothing, and every shard's part needs its key. */
        st = meter_db_exec(catalog, "cannot create accounts",
                           "INSERT INTO accounts (account_id, auto_created)"
                           " SELECT x, true FROM unnest($1::text[]) x"
                           " ORDER BY x ON CONFLICT DO NOTHING",
                           1, v, NULL, NULL, NULL, e);
        if (st >= 0)
            st = meter_db_exec(catalog, "cannot read accounts",
                               "SELECT account_id, account_pk,"
                               " meter_bucket(account_pk) FROM accounts"
                               " WHERE account_id = ANY ($1::text[])"
                               " ORDER BY account_id COLLATE \"C\"",
                               1, v, NULL, NULL, &r, e);
    }
    /* The rows and the groups both in account id order (bytes): routed
     * from the rows, not the cache, which another thread may clear. */
    int rows = st >= 0 && r ? PQntuples(r) : 0, i = 0;
    for (size_t g = 0; st >= 0 && g < n; g++) {
        if (db_batch_bucket(b, g) >= 0)
            continue;
        const char *id = db_batch_account(b, g);
        while (i < rows && strcmp(PQgetvalue(r, i, 0), id) < 0)
            i++;
        int32_t pk, bucket;
        if (i == rows || strcmp(PQgetvalue(r, i, 0), id) != 0)
            st = db_hard(e, "account '%s' could not be created", id);
        else if (db_get_int32(r, i, 1, &pk, e) < 0 ||
                 db_get_int32(r, i, 2, &bucket, e) < 0 || bucket < 0 ||
                 bucket >= METER_BUCKETS)
            st = db_hard(e, "account '%s': no bucket", id);
        else {
            db_batch_route(b, g, pk, bucket);
            db_shards_account_put(sh, id, pk, bucket);
        }
    }
    PQclear(r);
    meter_buf_release(&ids);
    return st < 0 ? st : METER_DB_NONE;
}

/* Splits b by shard into parts[] (ascending shard), *nparts of them. */
static int
split(struct meter_shards *sh, const struct db_batch *b, struct part *parts,
      size_t *nparts, struct meter_err *e)
{
    size_t n = db_batch_groups(b);
    bool *keep = malloc((n ? n : 1) * sizeof(*keep));
    int shard_of[METER_BUCKETS];
    bool used[METER_BUCKETS] = {0};
    if (!keep)
        return meter_fail(e, "out of memory");
    for (int k = 0; k < METER_BUCKETS; k++)
        shard_of[k] = db_shards_of_bucket(sh, k);
    for (size_t g = 0; g < n; g++)
        used[db_batch_bucket(b, g)] = true;
    *nparts = 0;
    /* Each shard with a used bucket, in shard order: two batches prepare
     * their parts in the same order. */
    for (int shard = 0; shard < DB_SHARDS_MAX; shard++) {
        struct part p = {.shard = shard};
        for (int k = 0; k < METER_BUCKETS; k++)
            if (used[k] && shard_of[k] == shard)
                p.buckets[p.nbuckets++] = k;
        if (!p.nbuckets)
            continue;
        for (size_t g = 0; g < n; g++)
            keep[g] = shard_of[db_batch_bucket(b, g)] == shard;
        if (!(p.b = db_batch_part(b, keep))) {
            for (size_t i = 0; i < *nparts; i++)
                db_batch_free(parts[i].b);
            *nparts = 0;
            free(keep);
            return meter_fail(e, "out of memory");
        }
        /* At most one part a bucket: never past METER_BUCKETS. */
        parts[(*nparts)++] = p;
    }
    free(keep);
    return 0;
}

/* A new batch name: meter: and 32 hex digits. */
static int
batch_name(char out[40], struct meter_err *e)
{
    uint8_t r[16];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
        return meter_fail(e, "no random bytes for a batch's name");
    memcpy(out, "meter:", 6);
    for (int i = 0; i < 16; i++)
        snprintf(out + 6 + 2 * i, 3, "%02x", r[i]);
    return 0;
}

/* Rolls back the parts prepared so far; a part that cannot be is left
 * to meter_db_shards_resolve (no decision: it rolls it back). */
static void
roll_back(struct part *parts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (parts[i].prepared) {
            struct meter_err ignored = {{0}};
            bool gone;
            if (db_two_phase(parts[i].db, DB_ROLLBACK_PREPARED, parts[i].gid,
                             &gone, &ignored) >= 0)
                parts[i].prepared = false;
        }
}

/* Writes the decision to commit batch `name`: NONE written, ABORT if a
 * resolver decided to roll it back first, HARD if unknown. */
static enum meter_db_status
decide(PGconn *catalog, const char *name, struct meter_err *e)
{
    const char *v[] = {name};
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        catalog, "cannot write the batch's decision",
        "INSERT INTO shard_commits (gid, committed) VALUES ($1, true)"
        " ON CONFLICT (gid) DO NOTHING RETURNING committed",
        1, v, NULL, NULL, &r, e);
    PQclear(r);
    if (st < 0)
        return st;
    return st == METER_DB_ROWS ? METER_DB_NONE : METER_DB_ABORT;
}

/* Commits part p, on a new connection if its own fails; false if both
 * fail (the part stays prepared, for the resolver). */
static bool
commit_part(PGconn *catalog, struct meter_shard_links *l, struct part *p)
{
    struct meter_err e = {{0}};
    bool gone;
    if (db_two_phase(p->db, DB_COMMIT_PREPARED, p->gid, &gone, &e) >= 0)
        return true;
    PGconn *fresh = db_links_conn(l, catalog, p->shard, true, &e);
    return fresh &&
           db_two_phase(fresh, DB_COMMIT_PREPARED, p->gid, &gone, &e) >= 0;
}

/* Stores the parts: each prepared, the decision, each committed. */
static enum meter_ingest_status
store_parts(PGconn *catalog, struct meter_shard_links *l, struct part *parts,
            size_t nparts, const struct meter_ingest_origin *o,
            struct meter_problems *probs, bool *moved, struct meter_err *e)
{
    struct meter_shards *sh = db_links_shards(l);
    char name[40];
    if (nparts > 1 && batch_name(name, e) < 0)
        return METER_INGEST_ERROR;
    enum meter_ingest_status st = METER_INGEST_OK;
    for (size_t i = 0; i < nparts && st == METER_INGEST_OK; i++) {
        struct part *p = &parts[i];
        if (nparts > 1)
            snprintf(p->gid, sizeof(p->gid), "%s:%d", name, p->shard);
        struct db_part how = {nparts > 1 ? p->gid : NULL, p->buckets,
                              p->nbuckets, false};
        struct meter_registry *reg = db_shards_registry(sh, p->shard);
        p->db = db_links_conn(l, catalog, p->shard, false, e);
        if (!reg || !p->db) {
            st = reg ? METER_INGEST_UNAVAILABLE : METER_INGEST_ERROR;
            break;
        }
        how.shadow = p->db != catalog;
        st = db_batch_store(p->db, reg, p->b, o, &how, probs, moved, e);
        if (st == METER_INGEST_UNAVAILABLE && !*moved &&
            PQstatus(p->db) != CONNECTION_OK)
            db_links_conn(l, catalog, p->shard, true, e); /* next time */
        p->prepared = st == METER_INGEST_OK && nparts > 1;
        p->committed = st == METER_INGEST_OK && nparts == 1;
    }
    if (nparts == 1 || st != METER_INGEST_OK) {
        roll_back(parts, nparts);
        return st;
    }
    enum meter_db_status d = decide(catalog, name, e);
    if (d == METER_DB_ABORT) {
        roll_back(parts, nparts);
        meter_fail(e, "batch %s was rolled back by a resolver", name);
        return METER_INGEST_UNAVAILABLE;
    }
    if (d < 0) /* written or not: the resolver will know */
        return METER_INGEST_UNAVAILABLE;
    bool all = true;
    for (size_t i = 0; i < nparts; i++) {
        if (i)
            db_links_between_commits(l, parts[i].db);
        parts[i].committed = commit_part(catalog, l, &parts[i]);
        all = all && parts[i].committed;
    }
    if (!all) {
        meter_fail(e,
                   "batch %s is decided but a shard was lost before its part "
                   "committed: it will be, when the shard is back",
                   name);
        return METER_INGEST_UNAVAILABLE;
    }
    const char *v[] = {name};
    struct meter_err ignored = {{0}};
    /* Not needed once every part committed; the resolver forgets it
     * anyway if this fails. */
    meter_db_exec(catalog, "cannot forget the decision",
                  "DELETE FROM shard_commits WHERE gid = $1", 1, v, NULL, NULL,
                  NULL, &ignored);
    return METER_INGEST_OK;
}

enum meter_ingest_status
meter_ingest_routed(PGconn *catalog, struct meter_shards *sh,
                    struct meter_shard_links *l, const struct meter_sample *s,
                    size_t n, const struct meter_ingest_origin *o,
                    struct meter_ingest_result *res,
                    struct meter_problems *probs, struct meter_err *e)
{
    struct db_batch *b;
    enum meter_ingest_status st =
        db_batch_open(catalog, s, n, o, res, probs, e, &b);
    if (!b)
        return st;
    size_t sandboxes = res->sandboxes;
    enum meter_db_status rt = route_accounts(catalog, sh, b, e);
    if (rt < 0) {
        db_batch_free(b);
        return meter_db_unavailable(catalog, rt) ? METER_INGEST_UNAVAILABLE
                                                 : METER_INGEST_ERROR;
    }
    struct part parts[METER_BUCKETS];
    size_t nparts = 0;
    bool moved = false;
    for (int tries = 0; tries < ROUTE_TRIES; tries++) {
        if (db_shards_load(sh, catalog, moved, e) < 0) {
            st = meter_db_lost(catalog) ? METER_INGEST_UNAVAILABLE
                                        : METER_INGEST_ERROR;
            break;
        }
        if (split(sh, b, parts, &nparts, e) < 0) {
            st = METER_INGEST_ERROR;
            break;
        }
        st = store_parts(catalog, l, parts, nparts, o, probs, &moved, e);
        if (st == METER_INGEST_OK) {
            memset(res, 0, sizeof(*res));
            for (size_t i = 0; i < nparts; i++) {
                const struct meter_ingest_result *r =
                    db_batch_result(parts[i].b);
                res->accepted += r->accepted;
                res->duplicates += r->duplicates;
                res->conflicts += r->conflicts;
                db_batch_remember(parts[i].b,
                                  db_shards_registry(sh, parts[i].shard));
            }
            res->sandboxes = sandboxes;
        }
        for (size_t i = 0; i < nparts; i++)
            db_batch_free(parts[i].b);
        nparts = 0;
        if (!moved)
            break;
        /* A bucket moved, or is moving: the map again, after a while. */
        struct timespec nap = {0, ROUTE_WAIT_MS * 1000000L};
        nanosleep(&nap, NULL);
    }
    db_batch_free(b);
    return st;
}
