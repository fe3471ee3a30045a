/*
 * usage_pack.c - an hour of a sandbox's blocks packed into one row
 * (migration 0011, meter/sample/pack.c), once the hour has settled; and
 * a quarantine's blocks taken back out of their packs.
 *
 * The rollup merge (usage_merge.c) queues each account-hour it sees. A
 * pack takes the oldest account-hour due and, for up to PACK_SANDBOXES
 * of its sandboxes at a time, deletes their blocks of the hour and
 * writes each sandbox's pack (its pack so far, if a late batch brought
 * more, and the blocks), in one transaction: readers, which read blocks
 * and packs in one statement, see the seconds in one place or the
 * other. Blocks that a batch stores meanwhile stay blocks, and their
 * rollups queue the hour again. One pack at a time, under the merge's
 * lock, and none under a quarantine. Like the merge, it leaves alone the
 * buckets this database does not hold or is moving (migration 0019).
 */
#include "db_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "meter_sample.h"

/* Sandboxes a transaction (about 120 blocks each at most). */
#define PACK_SANDBOXES 500
#define PACK_SANDBOXES_S "500"

/* A block and its sandbox, for sorting into packs. */
struct part {
    int64_t sandbox_pk;
    size_t order; /* ties: as read */
    struct meter_pack_part p;
};

static int
part_cmp(const void *a, const void *b)
{
    const struct part *x = a, *y = b;
    if (x->sandbox_pk != y->sandbox_pk)
        return x->sandbox_pk < y->sandbox_pk ? -1 : 1;
    if (x->p.minute != y->p.minute)
        return x->p.minute < y->p.minute ? -1 : 1;
    if (x->p.arrived_us != y->p.arrived_us)
        return x->p.arrived_us < y->p.arrived_us ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

static int
key_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Parts to write, and the packs' rows being built. */
struct parts {
    struct part *v;
    size_t n, cap;
};

static int
parts_add(struct parts *ps, int64_t sandbox_pk, const struct meter_pack_part *p)
{
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 256;
        struct part *v = realloc(ps->v, cap * sizeof(*v));
        if (!v)
            return -1;
        ps->v = v;
        ps->cap = cap;
    }
    ps->v[ps->n] = (struct part){sandbox_pk, ps->n, *p};
    ps->n++;
    return 0;
}

/* Adds the parts of a pack of (sandbox, hour) read from row i of r
 * (columns: sandbox_pk, data, binary); the parts point into r. */
static enum meter_db_status
add_pack(struct parts *ps, const PGresult *r, int i, int sb_col, int data_col,
         int64_t hour, struct meter_err *e)
{
    int64_t sandbox_pk = (int64_t)meter_be64(PQgetvalue(r, i, sb_col));
    struct meter_pack_part *v;
    size_t n;
    if (meter_pack_decode(hour, (const uint8_t *)PQgetvalue(r, i, data_col),
                          (size_t)PQgetlength(r, i, data_col), &v, &n) < 0)
        return db_hard(
            e, "the pack of sandbox %" PRId64 " hour %" PRId64 " is corrupt",
            sandbox_pk, hour);
    for (size_t k = 0; k < n; k++)
        if (parts_add(ps, sandbox_pk, &v[k]) < 0) {
            free(v);
            return db_hard(e, "out of memory");
        }
    free(v);
    return METER_DB_NONE;
}

/* Sorts the parts and writes one usage_packs row per sandbox (COPY);
 * *packs receives how many. */
static enum meter_db_status
write_packs(PGconn *db, int32_t account_pk, int64_t hour, struct parts *ps,
            uint64_t *packs, struct meter_err *e)
{
    *packs = 0;
    if (!ps->n)
        return METER_DB_NONE;
    qsort(ps->v, ps->n, sizeof(*ps->v), part_cmp);
    struct meter_buf copy = {0};
    struct meter_pack_part *run = malloc(ps->n * sizeof(*run));
    int64_t *keys = malloc(ps->n * sizeof(*keys));
    uint8_t *data = NULL;
    size_t cap = 0;
    enum meter_db_status st = METER_DB_NONE;
    if (!run || !keys) {
        st = db_hard(e, "out of memory");
        goto out;
    }
    db_copy_header(&copy);
    for (size_t i = 0; i < ps->n;) {
        size_t j = i, n = 0, nkeys = 0;
        int64_t first = INT64_MAX, last = INT64_MIN;
        for (; j < ps->n && ps->v[j].sandbox_pk == ps->v[i].sandbox_pk; j++) {
            const struct meter_pack_part *p = &ps->v[j].p;
            run[n++] = *p;
            first = p->arrived_us < first ? p->arrived_us : first;
            last = p->arrived_us > last ? p->arrived_us : last;
            if (p->key_id)
                keys[nkeys++] = p->key_id;
        }
        qsort(keys, nkeys, sizeof(*keys), key_cmp);
        size_t distinct = 0;
        for (size_t k = 0; k < nkeys; k++)
            if (!distinct || keys[distinct - 1] != keys[k])
                keys[distinct++] = keys[k];
        size_t bound = meter_pack_bound(run, n);
        if (bound > cap) {
            free(data);
            data = malloc(bound);
            cap = data ? bound : 0;
        }
        size_t len = data ? meter_pack_encode(hour, run, n, data) : 0;
        if (!len) {
            st = db_hard(e, "out of memory");
            goto out;
        }
        db_copy_row(&copy, 7);
        db_copy_int4(&copy, account_pk);
        db_copy_int8(&copy, ps->v[i].sandbox_pk);
        db_copy_int4(&copy, (int32_t)(hour * 60));
        db_copy_int8(&copy, first - DB_PG_EPOCH_US);
        db_copy_int8(&copy, last - DB_PG_EPOCH_US);
        db_copy_int8_array(&copy, keys, distinct);
        db_copy_bytes(&copy, data, len);
        (*packs)++;
        i = j;
    }
    db_copy_end(&copy);
    st = copy.failed ? db_hard(e, "out of memory")
                     : db_copy_in(db,
                                  "COPY usage_packs (account_pk, sandbox_pk,"
                                  " minute, first_arrival, last_arrival,"
                                  " key_ids, data)"
                                  " FROM STDIN (FORMAT binary)",
                                  copy.p, copy.len, "cannot write packs", e);
out:
    free(run);
    free(keys);
    free(data);
    meter_buf_release(&copy);
    return st;
}

struct pack {
    struct db_params p; /* settle seconds */
    struct meter_pack_result *out;
};

static enum meter_db_status
pack_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct pack *pk = arg;
    struct meter_pack_result *out = pk->out;
    PGresult *r = NULL, *blocks = NULL, *old = NULL;
    struct parts ps = {0};
    memset(out, 0, sizeof(*out));
    /* The merge's lock (usage_merge.c): one merge or pack at a time. */
    enum meter_db_status st = meter_db_exec(
        db, "cannot pack usage",
        "SELECT pg_try_advisory_xact_lock(" DB_LOCK_QUARANTINE ", 1)"
        " AND pg_try_advisory_xact_lock_shared(" DB_LOCK_QUARANTINE ", 0)",
        0, NULL, NULL, NULL, &r, e);
    bool mine = false;
    if (st == METER_DB_ROWS && db_get_bool(r, 0, 0, &mine, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    out->busy = st >= 0 && !mine;
    if (st < 0 || !mine)
        return st < 0 ? st : METER_DB_NONE;
    /* The oldest account-hour that ended settle seconds ago. */
    st = meter_db_exec(db, "cannot pack usage",
                       "SELECT account_pk, hour FROM usage_pack_queue"
                       " WHERE hour < (extract(epoch FROM now())::bigint"
                       "  - $1::bigint) / 3600 AND meter_bucket(account_pk)"
                       "  = ANY (ARRAY(SELECT bucket FROM bucket_holds EXCEPT"
                       "  SELECT bucket FROM bucket_moves))"
                       " ORDER BY hour, account_pk"
                       " LIMIT 1",
                       pk->p.n, pk->p.v, NULL, NULL, &r, e);
    if (st != METER_DB_ROWS) {
        PQclear(r);
        return st;
    }
    int32_t account_pk;
    int64_t hour;
    if (db_get_int32(r, 0, 0, &account_pk, e) < 0 ||
        db_get_int64(r, 0, 1, &hour, e) < 0) {
        PQclear(r);
        return METER_DB_HARD;
    }
    PQclear(r);
    /* The account and the hour's minutes [lo, hi); the sandboxes after. */
    struct db_params sel = {0};
    db_param_int32(&sel, account_pk);
    db_param_int64(&sel, hour * 60);
    db_param_int64(&sel, hour * 60 + 60);
    out->more = true;
    /* The next sandboxes with blocks in the hour. */
    st = meter_db_exec(
        db, "cannot pack usage",
        "SELECT coalesce(array_agg(sandbox_pk), '{}'), count(*) FROM"
        " (SELECT DISTINCT sandbox_pk FROM usage_blocks WHERE"
        "  account_pk = $1::int AND minute >= $2::int AND minute < $3::int"
        "  ORDER BY 1 LIMIT " PACK_SANDBOXES_S ") s",
        sel.n, sel.v, NULL, NULL, &r, e);
    if (st < 0)
        return st;
    int64_t nsb;
    if (db_get_int64(r, 0, 1, &nsb, e) < 0) {
        PQclear(r);
        return METER_DB_HARD;
    }
    char *sandboxes = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    if (!sandboxes)
        return db_hard(e, "out of memory");
    db_param_text(&sel, sandboxes);
    if (nsb) {
        st = db_exec_binary(
            db, "cannot pack usage",
            "DELETE FROM usage_blocks WHERE account_pk = $1::int"
            " AND sandbox_pk = ANY ($4::bigint[]) AND minute >= $2::int"
            " AND minute < $3::int RETURNING sandbox_pk, minute,"
            " seconds, arrived_at, coalesce(key_id, 0), data",
            sel.n, sel.v, &blocks, e);
        struct db_params packs = {0};
        db_param_int32(&packs, account_pk);
        db_param_int64(&packs, hour * 60);
        db_param_text(&packs, sandboxes);
        if (st == METER_DB_NONE)
            st = db_exec_binary(
                db, "cannot pack usage",
                "DELETE FROM usage_packs WHERE account_pk = $1::int"
                " AND sandbox_pk = ANY ($3::bigint[])"
                " AND minute = $2::int RETURNING sandbox_pk, data",
                packs.n, packs.v, &old, e);
        for (int i = 0; st == METER_DB_NONE && i < PQntuples(old); i++)
            st = add_pack(&ps, old, i, 0, 1, hour, e);
        for (int i = 0; st == METER_DB_NONE && i < PQntuples(blocks); i++) {
            struct meter_pack_part p = {
                .minute = (int32_t)meter_be32(PQgetvalue(blocks, i, 1)),
                .mask = meter_be64(PQgetvalue(blocks, i, 2)),
                .arrived_us = (int64_t)meter_be64(PQgetvalue(blocks, i, 3)) +
                              DB_PG_EPOCH_US,
                .key_id = (int64_t)meter_be64(PQgetvalue(blocks, i, 4)),
                .data = (const uint8_t *)PQgetvalue(blocks, i, 5),
                .len = (size_t)PQgetlength(blocks, i, 5),
            };
            if (parts_add(&ps, (int64_t)meter_be64(PQgetvalue(blocks, i, 0)),
                          &p) < 0)
                st = db_hard(e, "out of memory");
        }
        if (st == METER_DB_NONE) {
            out->blocks = (uint64_t)PQntuples(blocks);
            st = write_packs(db, account_pk, hour, &ps, &out->packs, e);
        }
    }
    /* Fewer than a full set of sandboxes: the hour has no blocks left
     * (those a batch stores from now on queue it again). */
    struct db_params queued = {0};
    db_param_int32(&queued, account_pk);
    db_param_int64(&queued, hour);
    if (st == METER_DB_NONE && nsb < PACK_SANDBOXES)
        st = meter_db_exec(db, "cannot pack usage",
                           "DELETE FROM usage_pack_queue WHERE"
                           " account_pk = $1::int AND hour = $2::int",
                           queued.n, queued.v, NULL, NULL, NULL, e);
    free(ps.v);
    PQclear(blocks);
    PQclear(old);
    free(sandboxes);
    return st < 0 ? st : METER_DB_NONE;
}

enum meter_db_status
meter_db_usage_pack(PGconn *db, int64_t settle_s, struct meter_pack_result *out,
                    struct meter_err *e)
{
    struct pack pk = {.out = out};
    db_param_int64(&pk.p, settle_s);
    return meter_db_transaction(db, "BEGIN", 3, pack_attempt, &pk, e);
}

enum meter_db_status
meter_db_usage_pack_due(PGconn *db, int64_t settle_s,
                        struct meter_pack_result *out, struct meter_err *e)
{
    uint64_t merged;
    struct meter_pack_result res;
    memset(out, 0, sizeof(*out));
    do {
        enum meter_db_status st = meter_db_usage_merge(db, 10000, &merged, e);
        if (st < 0)
            return st;
    } while (merged == 10000);
    do {
        enum meter_db_status st = meter_db_usage_pack(db, settle_s, &res, e);
        if (st < 0)
            return st;
        out->blocks += res.blocks;
        out->packs += res.packs;
    } while (res.more);
    out->busy = res.busy;
    return METER_DB_NONE;
}

/* ---- a quarantine's blocks out of their packs ------------------------- */

/* What is left of a pack once a quarantine's blocks are out of it. */
struct rest {
    int32_t account_pk;
    int64_t hour;
    struct parts parts;
};

enum meter_db_status
db_usage_unpack(PGconn *db, int64_t key_id, int64_t from, int64_t to,
                struct meter_err *e)
{
    struct db_params q = {0};
    db_param_int64(&q, from);
    db_param_int64(&q, to);
    db_param_int64(&q, key_id);
    PGresult *r;
    /* The packs that may hold a block of the key that arrived in [from,
     * to); the caller holds the quarantine's lock, so no pack is written
     * meanwhile. */
    enum meter_db_status st = db_exec_binary(
        db, "cannot unpack usage",
        "SELECT account_pk, sandbox_pk, minute, data FROM usage_packs"
        " WHERE last_arrival >= to_timestamp($1::bigint)"
        " AND first_arrival < to_timestamp($2::bigint)"
        " AND $3::bigint = ANY (key_ids)",
        q.n, q.v, &r, e);
    if (st < 0)
        return st;
    int64_t lo_us = from * 1000000, hi_us = to * 1000000;
    int rows = PQntuples(r);
    struct rest *rest = calloc(rows ? (size_t)rows : 1, sizeof(*rest));
    struct meter_buf blocks = {0}, gone[3] = {{0}};
    size_t nblocks = 0, nrest = 0, ngone = 0;
    if (!rest)
        st = db_hard(e, "out of memory");
    db_copy_header(&blocks);
    for (int i = 0; i < 3; i++)
        meter_buf_str(&gone[i], "{");
    for (int i = 0; st == METER_DB_NONE && i < rows; i++) {
        int32_t account_pk = (int32_t)meter_be32(PQgetvalue(r, i, 0));
        int64_t sandbox_pk = (int64_t)meter_be64(PQgetvalue(r, i, 1));
        int64_t minute = (int32_t)meter_be32(PQgetvalue(r, i, 2));
        struct rest *x = &rest[nrest];
        struct meter_pack_part *v;
        size_t n, moved = 0;
        if (meter_pack_decode(minute / 60, (const uint8_t *)PQgetvalue(r, i, 3),
                              (size_t)PQgetlength(r, i, 3), &v, &n) < 0) {
            st = db_hard(e,
                         "the pack of sandbox %" PRId64 " hour %" PRId64
                         " is corrupt",
                         sandbox_pk, minute / 60);
            break;
        }
        *x = (struct rest){account_pk, minute / 60, {0}};
        for (size_t j = 0; j < n && st == METER_DB_NONE; j++) {
            const struct meter_pack_part *p = &v[j];
            if (p->key_id == key_id && p->arrived_us >= lo_us &&
                p->arrived_us < hi_us) {
                /* Back to a block, as its batch stored it. */
                db_copy_row(&blocks, 7);
                db_copy_int4(&blocks, account_pk);
                db_copy_int8(&blocks, sandbox_pk);
                db_copy_int4(&blocks, (int32_t)p->minute);
                db_copy_int8(&blocks, (int64_t)p->mask);
                db_copy_int8(&blocks, p->arrived_us - DB_PG_EPOCH_US);
                db_copy_bytes(&blocks, p->data, p->len);
                db_copy_int8(&blocks, p->key_id);
                moved++;
            } else if (parts_add(&x->parts, sandbox_pk, p) < 0) {
                st = db_hard(e, "out of memory");
            }
        }
        free(v);
        if (!moved) {
            free(x->parts.v);
            continue;
        }
        const char *sep = ngone++ ? "," : "";
        meter_buf_printf(&gone[0], "%s%" PRId32, sep, account_pk);
        meter_buf_printf(&gone[1], "%s%" PRId64, sep, sandbox_pk);
        meter_buf_printf(&gone[2], "%s%" PRId64, sep, minute);
        nblocks += moved;
        nrest++;
    }
    db_copy_end(&blocks);
    for (int i = 0; i < 3; i++)
        meter_buf_str(&gone[i], "}");
    if (st >= 0 &&
        (blocks.failed || gone[0].failed || gone[1].failed || gone[2].failed))
        st = db_hard(e, "out of memory");
    /* The packs out, what is left of them in again, and the blocks. */
    if (st >= 0 && ngone)
        st = meter_db_exec(
            db, "cannot unpack usage",
            "DELETE FROM usage_packs p USING unnest($1::int[], $2::bigint[],"
            " $3::int[]) g (a, s, m) WHERE p.account_pk = g.a"
            " AND p.sandbox_pk = g.s AND p.minute = g.m",
            3, (const char *const[]){gone[0].p, gone[1].p, gone[2].p}, NULL,
            NULL, NULL, e);
    for (size_t i = 0; st >= 0 && i < nrest; i++) {
        uint64_t packs;
        st = write_packs(db, rest[i].account_pk, rest[i].hour, &rest[i].parts,
                         &packs, e);
    }
    if (st >= 0 && nblocks)
        st = db_copy_in(db,
                        "COPY usage_blocks (account_pk, sandbox_pk, minute,"
                        " seconds, arrived_at, data, key_id) FROM STDIN"
                        " (FORMAT binary)",
                        blocks.p, blocks.len, "cannot unpack usage", e);
    for (size_t i = 0; rest && i < nrest; i++)
        free(rest[i].parts.v);
    free(rest);
    PQclear(r);
    meter_buf_release(&blocks);
    for (int i = 0; i < 3; i++)
        meter_buf_release(&gone[i]);
    return st < 0 ? st : METER_DB_NONE;
}
