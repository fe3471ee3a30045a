/*
 * ingest.c - stores a validated batch of samples exactly once, in one
 * transaction: sandboxes registered (accounts created on first sight;
 * a sandbox is a sandbox_id of an account), repeats within the batch and
 * against stored seconds told apart as duplicates and conflicts, new seconds
 * written as per-minute blocks (binary COPY), and the hourly rollups of exactly
 * those seconds.
 *
 * Exactly once with several writers: the transaction locks the row of
 * each of its sandboxes in `sandboxes` (in sandbox order, so writers
 * cannot deadlock) before it reads what is stored, so two batches with
 * seconds of one sandbox are checked and written one after the other;
 * batches of other sandboxes do not wait. Row locks, not advisory ones:
 * PostgreSQL keeps them in the rows, not in its shared lock table, so a
 * batch locks exactly its sandboxes however many, where advisory locks
 * had to share 256 buckets among them and a batch of a few hundred
 * sandboxes held nearly all of them, making every other batch wait for
 * it. Nothing is stored unless the batch commits.
 */
#define _GNU_SOURCE /* qsort_r */
#include "db_int.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FUTURE_S 300

/* One sandbox of a batch, and what the registry knows of it. */
struct group {
    size_t first, end; /* its samples in ord[first, end) */
    bool known;        /* sb is set */
    bool fresh;        /* to remember once committed: new to the registry,
                          or a lower first running minute */
    int32_t run_min;   /* first running minute the batch stores, or
                          INT32_MAX */
    struct db_sandbox sb;
    int32_t account_pk; /* routed: the account's key and bucket, from the */
    int bucket;         /* catalog (route.c) */
};

/* ---- small helpers ---------------------------------------------------- */

/* Appends a u128 as decimal digits. */
static void
buf_u128(struct meter_buf *b, pricing_u128 v)
{
    char tmp[48], *p = tmp + sizeof(tmp);
    *--p = '\0';
    do {
        *--p = (char)('0' + (int)(v % 10));
        v /= 10;
    } while (v);
    meter_buf_str(b, p);
}

/* ---- the batch -------------------------------------------------------- */

/* One (sandbox, minute) block to write. */
struct block {
    size_t group;
    int64_t minute;
    uint64_t mask;              /* the seconds still to write */
    uint32_t at[60];            /* by second: the sample that stands */
    size_t extra_first, nextra; /* its later copies in batch.extras */
};

/* A later copy, in batch order, of a second the batch already has. */
struct extra {
    uint32_t sample;
    uint8_t sec;
    bool counted;
};

struct db_batch {
    const struct meter_sample *s;
    size_t n;
    size_t *ord; /* sample indexes by (sandbox, ts, index) */
    struct group *groups;
    size_t ngroups;
    struct block *blocks;
    size_t nblocks;
    struct extra *extras;
    size_t nextras;
    struct meter_ingest_result res;
    int64_t epoch; /* the registry's first_run_epoch when it was read */
};

/* The stored value of sample i. */
static const struct pricing_second *
second_of(const struct db_batch *b, uint32_t i)
{
    return &b->s[i].s;
}

/* Counts a repeat of a second against the value that stands. */
static void
count_repeat(struct db_batch *b, const struct pricing_second *standing,
             const struct pricing_second *repeat)
{
    if (memcmp(standing, repeat, sizeof(*repeat)) == 0)
        b->res.duplicates++;
    else
        b->res.conflicts++;
}

/* Orders two samples' sandboxes: by account, then sandbox id. */
static int
sandbox_cmp(const struct meter_sample *a, const struct meter_sample *b)
{
    int c = strcmp(a->account_id, b->account_id);
    return c ? c : strcmp(a->sandbox_id, b->sandbox_id);
}

static int
by_sandbox_ts_index(const void *x, const void *y, void *base)
{
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    const struct meter_sample *a = (const struct meter_sample *)base + i;
    const struct meter_sample *b = (const struct meter_sample *)base + j;
    int c = sandbox_cmp(a, b);
    if (c)
        return c;
    if (a->s.ts != b->s.ts)
        return a->s.ts < b->s.ts ? -1 : 1;
    return (i > j) - (i < j);
}

/* A run of samples in batch order: one sandbox, seconds ascending. */
struct run {
    size_t first, n;
};

static int
by_run_start(const void *x, const void *y, void *base)
{
    const struct run *r = x, *q = y;
    return by_sandbox_ts_index(&r->first, &q->first, base);
}

/* Whether sample i comes strictly before sample j in the batch's order. */
static bool
before(const struct db_batch *b, size_t i, size_t j)
{
    return by_sandbox_ts_index(&i, &j, (void *)b->s) < 0;
}

/* b->ord: the samples by (account, sandbox, ts, index). A body lists a
 * sandbox's seconds together and in order (the columnar form always does): its
 * runs, sorted by their first sample, are then the order already, which
 * a check of each seam confirms; else every sample is sorted. */
static int
order(struct db_batch *b)
{
    struct run *runs = malloc((b->n ? b->n : 1) * sizeof(*runs));
    if (!runs)
        return -1;
    size_t nruns = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct run *r = nruns ? &runs[nruns - 1] : NULL;
        if (r && b->s[i].s.ts > b->s[i - 1].s.ts &&
            sandbox_cmp(&b->s[i], &b->s[i - 1]) == 0)
            r->n++;
        else
            runs[nruns++] = (struct run){i, 1};
    }
    qsort_r(runs, nruns, sizeof(*runs), by_run_start, (void *)b->s);
    size_t k = 0;
    bool sorted = true;
    for (size_t r = 0; r < nruns; r++) {
        if (k && !before(b, b->ord[k - 1], runs[r].first))
            sorted = false;
        for (size_t i = 0; i < runs[r].n; i++)
            b->ord[k++] = runs[r].first + i;
    }
    free(runs);
    if (!sorted)
        qsort_r(b->ord, b->n, sizeof(*b->ord), by_sandbox_ts_index,
                (void *)b->s);
    return 0;
}

/* Orders the batch (b->ord); returns its distinct sandboxes, or -1 when
 * out of memory. */
static long
sort_batch(struct db_batch *b)
{
    b->ord = malloc((b->n ? b->n : 1) * sizeof(*b->ord));
    if (!b->ord || order(b) < 0)
        return -1;
    long n = 0;
    for (size_t k = 0; k < b->n; k++)
        n += k == 0 || sandbox_cmp(&b->s[b->ord[k]], &b->s[b->ord[k - 1]]) != 0;
    return n;
}

/* Splits the ordered batch into its `sandboxes` groups; checks what
 * needs no database: seconds in the future or older than max_age (0: no
 * bound). */
static int
prepare(struct db_batch *b, size_t sandboxes, int64_t now, int64_t max_age,
        struct meter_problems *probs)
{
    b->groups = malloc((sandboxes ? sandboxes : 1) * sizeof(*b->groups));
    if (!b->groups)
        return -1;
    for (size_t i = 0; i < b->n; i++) {
        int64_t ts = b->s[i].s.ts;
        if (ts <= now + FUTURE_S && (!max_age || ts >= now - max_age))
            continue;
        char v[32], why[96];
        snprintf(v, sizeof(v), "%lld", (long long)ts);
        if (ts > now + FUTURE_S)
            meter_problems_add(probs, i, "ts", v,
                               "more than 5 minutes in the future");
        if (max_age && ts < now - max_age) {
            snprintf(why, sizeof(why),
                     "older than the %lld days that samples are accepted for",
                     (long long)(max_age / 86400));
            meter_problems_add(probs, i, "ts", v, why);
        }
    }
    for (size_t i = 0; i < b->n;) {
        struct group *g = &b->groups[b->ngroups++];
        const struct meter_sample *first = &b->s[b->ord[i]];
        g->first = i;
        g->known = false;
        size_t j = i;
        while (j < b->n && sandbox_cmp(&b->s[b->ord[j]], first) == 0)
            j++;
        g->end = j;
        i = j;
    }
    return 0;
}

/* Appends "{"a","b"}" of the batch's groups' sandbox or account ids, for
 * those not yet known; ids are of [A-Za-z0-9._:-] so need no escaping. */
static void
id_array(struct meter_buf *out, const struct db_batch *b, bool account)
{
    bool first = true;
    meter_buf_str(out, "{");
    for (size_t i = 0; i < b->ngroups; i++) {
        if (b->groups[i].known)
            continue;
        const struct meter_sample *x = &b->s[b->ord[b->groups[i].first]];
        meter_buf_str(out, first ? "\"" : ",\"");
        meter_buf_str(out, account ? x->account_id : x->sandbox_id);
        meter_buf_str(out, "\"");
        first = false;
    }
    meter_buf_str(out, "}");
}

/* A statement with text parameters and no result wanted. */
static enum meter_db_status
exec_cmd(PGconn *db, const char *sql, int nparams, const char *const *values,
         const char *what, struct meter_err *e)
{
    enum meter_db_status st =
        meter_db_exec(db, what, sql, nparams, values, NULL, NULL, NULL, e);
    return st < 0 ? st : METER_DB_NONE;
}

/* The group of a sandbox: groups are in (account, sandbox id) order. */
static struct group *
find_group(struct db_batch *b, const char *account, const char *id)
{
    struct meter_sample key;
    snprintf(key.account_id, sizeof(key.account_id), "%s", account);
    snprintf(key.sandbox_id, sizeof(key.sandbox_id), "%s", id);
    size_t lo = 0, hi = b->ngroups;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = sandbox_cmp(&key, &b->s[b->ord[b->groups[mid].first]]);
        if (c == 0)
            return &b->groups[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* Fills groups[].sb from the registry, then the database; registers
 * new sandboxes (and accounts). */
static enum meter_db_status
resolve(PGconn *db, struct meter_registry *reg, struct db_batch *b,
        struct meter_err *e)
{
    size_t unknown = 0;
    b->epoch = db_registry_epoch(reg);
    for (size_t i = 0; i < b->ngroups; i++) {
        const struct meter_sample *x = &b->s[b->ord[b->groups[i].first]];
        b->groups[i].known = db_registry_get(reg, x->account_id, x->sandbox_id,
                                             &b->groups[i].sb);
        b->groups[i].fresh = false;
        b->groups[i].run_min = INT32_MAX;
        unknown += !b->groups[i].known;
    }
    for (int pass = 0; unknown > 0 && pass < 2; pass++) {
        struct meter_buf ids = {0}, accts = {0};
        id_array(&ids, b, false);
        id_array(&accts, b, true);
        if (ids.failed || accts.failed) {
            meter_buf_release(&ids);
            meter_buf_release(&accts);
            return db_hard(e, "out of memory");
        }
        const char *p1[] = {ids.p, accts.p};
        int rc = METER_DB_NONE;
        if (pass == 1) {
            /* Register what is new: accounts first, then sandboxes. A
             * concurrent registration of the same sandbox waits on the
             * unique index, then does nothing; the select sees it. Each
             * in the order of its key, as every batch does: two batches
             * that both bring new sandboxes wait for each other's in one
             * order, never in a circle (a deadlock, then retries). */
            rc = exec_cmd(db,
                          "INSERT INTO accounts (account_id, auto_created)"
                          " SELECT DISTINCT x, true FROM unnest($1::text[]) x"
                          " ORDER BY x ON CONFLICT DO NOTHING",
                          1, p1 + 1, "cannot create accounts", e);
            if (rc == METER_DB_NONE)
                rc = exec_cmd(db,
                              "INSERT INTO sandboxes (account_pk, sandbox_id)"
                              " SELECT a.account_pk, x.sid"
                              " FROM unnest($1::text[], $2::text[])"
                              "  AS x (sid, aid)"
                              " JOIN accounts a ON a.account_id = x.aid"
                              " ORDER BY a.account_pk, x.sid"
                              " ON CONFLICT (account_pk, sandbox_id)"
                              " DO NOTHING",
                              2, p1, "cannot register sandboxes", e);
        }
        PGresult *r = NULL;
        if (rc == METER_DB_NONE) {
            r = PQexecParams(db,
                             "SELECT s.sandbox_id, s.sandbox_pk, s.account_pk,"
                             " a.account_id, coalesce(s.first_running_minute,"
                             " 2147483647)"
                             " FROM unnest($1::text[], $2::text[])"
                             "  AS x (sid, aid)"
                             " JOIN accounts a ON a.account_id = x.aid"
                             " JOIN sandboxes s ON s.account_pk = a.account_pk"
                             "  AND s.sandbox_id = x.sid",
                             2, NULL, p1, NULL, NULL, 0);
            if (PQresultStatus(r) != PGRES_TUPLES_OK)
                rc = db_failed(db, r, "cannot read sandboxes", e);
        }
        meter_buf_release(&ids);
        meter_buf_release(&accts);
        if (rc != METER_DB_NONE)
            return rc;
        for (int row = 0; row < PQntuples(r); row++) {
            struct group *g =
                find_group(b, PQgetvalue(r, row, 3), PQgetvalue(r, row, 0));
            if (!g || g->known)
                continue;
            if (db_get_text(r, row, 3, g->sb.account_id,
                            sizeof(g->sb.account_id), e) < 0 ||
                db_get_int64(r, row, 1, &g->sb.sandbox_pk, e) < 0 ||
                db_get_int32(r, row, 2, &g->sb.account_pk, e) < 0 ||
                db_get_int32(r, row, 4, &g->sb.first_run, e) < 0) {
                PQclear(r);
                return METER_DB_HARD;
            }
            g->known = g->fresh = true;
            unknown--;
        }
        PQclear(r);
    }
    if (unknown > 0)
        return db_hard(e, "could not register %zu sandboxes", unknown);
    return METER_DB_NONE;
}

/* Groups each sandbox's seconds into minute blocks. The first copy of a
 * second in batch order stands for it; later copies are set aside as
 * extras, counted once it is known what stands (check_stored). */
static int
build_blocks(struct db_batch *b)
{
    size_t nblocks = 0;
    for (size_t gi = 0; gi < b->ngroups; gi++) {
        int64_t last = INT64_MIN;
        for (size_t k = b->groups[gi].first; k < b->groups[gi].end; k++) {
            int64_t minute = b->s[b->ord[k]].s.ts / 60;
            nblocks += minute != last;
            last = minute;
        }
    }
    b->blocks = malloc((nblocks ? nblocks : 1) * sizeof(*b->blocks));
    b->extras = malloc((b->n ? b->n : 1) * sizeof(*b->extras));
    if (!b->blocks || !b->extras)
        return -1;
    b->nblocks = b->nextras = 0;
    for (size_t gi = 0; gi < b->ngroups; gi++) {
        const struct group *g = &b->groups[gi];
        struct block *cur = NULL;
        int64_t prev_ts = INT64_MIN;
        for (size_t k = g->first; k < g->end; k++) {
            uint32_t idx = (uint32_t)b->ord[k];
            int64_t ts = b->s[idx].s.ts;
            int64_t minute = ts / 60;
            if (!cur || cur->minute != minute) {
                cur = &b->blocks[b->nblocks++];
                cur->group = gi;
                cur->minute = minute;
                cur->mask = 0;
                cur->extra_first = b->nextras;
                cur->nextra = 0;
            }
            uint8_t sec = (uint8_t)(ts % 60);
            if (ts == prev_ts) {
                b->extras[b->nextras++] = (struct extra){idx, sec, false};
                cur->nextra++;
                continue;
            }
            prev_ts = ts;
            cur->mask |= (uint64_t)1 << sec;
            cur->at[sec] = idx;
        }
    }
    return 0;
}

/* Counts the extras that check_stored did not: against the first copy. */
static void
count_extras(struct db_batch *b)
{
    for (size_t i = 0; i < b->nblocks; i++) {
        const struct block *k = &b->blocks[i];
        for (size_t x = k->extra_first; x < k->extra_first + k->nextra; x++)
            if (!b->extras[x].counted)
                count_repeat(b, second_of(b, k->at[b->extras[x].sec]),
                             second_of(b, b->extras[x].sample));
    }
}

/* Drops from block k the seconds of a stored block (minute, mask, data),
 * counting the batch's copies of them as repeats. */
static enum meter_db_status
drop_stored(struct db_batch *b, struct block *k, uint64_t stored,
            const uint8_t *data, size_t len, struct meter_err *e)
{
    struct pricing_second old[60];
    size_t n;
    if (meter_block_decode(k->minute, stored, data, len, old, &n) < 0)
        return db_hard(e, "stored block of minute %lld is corrupt",
                       (long long)k->minute);
    for (size_t i = 0; i < n; i++) {
        int sec = (int)(old[i].ts % 60);
        uint64_t bit = (uint64_t)1 << sec;
        if (!(k->mask & bit))
            continue;
        /* The stored value stands: the batch's copies repeat it. */
        count_repeat(b, &old[i], second_of(b, k->at[sec]));
        for (size_t x = k->extra_first; x < k->extra_first + k->nextra; x++) {
            struct extra *ex = &b->extras[x];
            if (ex->sec == sec) {
                count_repeat(b, &old[i], second_of(b, ex->sample));
                ex->counted = true;
            }
        }
        k->mask &= ~bit;
    }
    return METER_DB_NONE;
}

/* Drops from the blocks of the hour starting at block `first` the
 * seconds a pack of that sandbox and hour holds (usage_pack.c). */
static enum meter_db_status
drop_packed(struct db_batch *b, size_t first, const uint8_t *data, size_t len,
            struct meter_err *e)
{
    int64_t hour = b->blocks[first].minute / 60;
    size_t group = b->blocks[first].group;
    struct meter_pack_part *v;
    size_t n;
    if (meter_pack_decode(hour, data, len, &v, &n) < 0)
        return db_hard(e, "stored pack of hour %lld is corrupt",
                       (long long)hour);
    enum meter_db_status st = METER_DB_NONE;
    /* The sandbox's blocks are in minute order: the hour's come first. */
    for (size_t i = first;
         st == METER_DB_NONE && i < b->nblocks && b->blocks[i].group == group &&
         b->blocks[i].minute / 60 == hour;
         i++)
        for (size_t x = 0; st == METER_DB_NONE && x < n; x++)
            if (v[x].minute == b->blocks[i].minute &&
                (v[x].mask & b->blocks[i].mask))
                st = drop_stored(b, &b->blocks[i], v[x].mask, v[x].data,
                                 v[x].len, e);
    free(v);
    return st;
}

/* Drops from the blocks the seconds already stored, in blocks or in
 * packs, counting them. */
static enum meter_db_status
check_stored(PGconn *db, struct db_batch *b, struct meter_err *e)
{
    struct meter_buf acct = {0}, sb = {0}, min = {0}, mask = {0}, first = {0};
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    meter_buf_str(&acct, "{");
    meter_buf_str(&sb, "{");
    meter_buf_str(&min, "{");
    meter_buf_str(&mask, "{");
    meter_buf_str(&first, "{");
    for (size_t i = 0; i < b->nblocks; i++) {
        const struct block *k = &b->blocks[i];
        const struct group *g = &b->groups[k->group];
        const char *sep = i ? "," : "";
        meter_buf_printf(&acct, "%s%d", sep, g->sb.account_pk);
        meter_buf_printf(&sb, "%s%" PRId64, sep, g->sb.sandbox_pk);
        meter_buf_printf(&min, "%s%lld", sep, (long long)k->minute);
        meter_buf_printf(&mask, "%s%lld", sep, (long long)k->mask);
        /* The first block of each sandbox and hour looks for a pack. */
        bool opens = i == 0 || k->group != k[-1].group ||
                     k->minute / 60 != k[-1].minute / 60;
        meter_buf_printf(&first, "%s%s", sep, opens ? "t" : "f");
        lo = k->minute < lo ? k->minute : lo;
        hi = k->minute > hi ? k->minute : hi;
    }
    meter_buf_str(&acct, "}");
    meter_buf_str(&sb, "}");
    meter_buf_str(&min, "}");
    meter_buf_str(&mask, "}");
    meter_buf_str(&first, "}");
    struct db_params p = {0};
    db_param_text(&p, acct.p);
    db_param_text(&p, sb.p);
    db_param_text(&p, min.p);
    db_param_text(&p, mask.p);
    db_param_int64(&p, lo);
    db_param_int64(&p, hi);
    db_param_text(&p, first.p);
    int rc = METER_DB_NONE;
    PGresult *r = NULL;
    if (acct.failed || sb.failed || min.failed || mask.failed || first.failed) {
        rc = db_hard(e, "out of memory");
        goto out;
    }
    /* Binary results: ordinality and seconds as int8 (0 for a pack),
     * data as bytes. One statement, one snapshot: a pack written
     * meanwhile is seen with its blocks gone, or not at all. */
    rc = db_exec_binary(
        db, "cannot read stored usage",
        /* LATERAL: one index probe per block, whatever the planner
         * guesses of the unnest; a join could scan the partition. */
        "WITH k AS MATERIALIZED (SELECT * FROM unnest($1::int[], $2::bigint[],"
        "  $3::int[], $4::bigint[], $7::bool[]) WITH ORDINALITY"
        "  AS k (account_pk, sandbox_pk, minute, mask, opens, i))"
        " SELECT k.i, u.seconds, u.data FROM k"
        " CROSS JOIN LATERAL (SELECT seconds, data FROM usage_blocks b"
        "  WHERE b.account_pk = k.account_pk AND b.sandbox_pk = k.sandbox_pk"
        "  AND b.minute = k.minute AND b.seconds & k.mask <> 0"
        "  AND b.minute BETWEEN $5::int AND $6::int) u"
        " UNION ALL SELECT k.i, 0, u.data FROM k"
        " CROSS JOIN LATERAL (SELECT data FROM usage_packs p"
        "  WHERE p.account_pk = k.account_pk AND p.sandbox_pk = k.sandbox_pk"
        "  AND p.minute = k.minute - k.minute % 60"
        "  AND p.minute BETWEEN $5::int - 59 AND $6::int) u WHERE k.opens",
        p.n, p.v, &r, e);
    for (int row = 0; rc == METER_DB_NONE && row < PQntuples(r); row++) {
        size_t i = meter_be64(PQgetvalue(r, row, 0)) - 1;
        uint64_t stored = meter_be64(PQgetvalue(r, row, 1));
        const uint8_t *data = (const uint8_t *)PQgetvalue(r, row, 2);
        size_t len = (size_t)PQgetlength(r, row, 2);
        rc = stored ? drop_stored(b, &b->blocks[i], stored, data, len, e)
                    : drop_packed(b, i, data, len, e);
    }
out:
    PQclear(r);
    meter_buf_release(&acct);
    meter_buf_release(&sb);
    meter_buf_release(&min);
    meter_buf_release(&mask);
    meter_buf_release(&first);
    return rc;
}

/* Writes the blocks (binary COPY) and the rollups of their seconds. */
static enum meter_db_status
write_blocks(PGconn *db, struct db_batch *b,
             const struct meter_ingest_origin *o, struct meter_err *e)
{
    /* The rollups' columns, each an array parameter ("{1,2}"): the
     * statement stays a constant, whatever the batch. */
    struct meter_buf copy = {0}, roll[10] = {{0}};
    uint8_t data[METER_BLOCK_MAX];
    struct pricing_second tmp[60];
    int rc = METER_DB_NONE;

    db_copy_header(&copy);
    /* Rollups: an accumulator per run of blocks of one (account, hour);
     * the INSERT below sums those of equal key. */
    struct roll {
        int32_t account_pk;
        int64_t hour;
        uint64_t samples, running;
        pricing_u128 vcpu, used, mem, mem_used, disk, egress;
    } *rolls = calloc(b->nblocks ? b->nblocks : 1, sizeof(*rolls));
    size_t nrolls = 0;
    if (!rolls)
        return db_hard(e, "out of memory");

    for (size_t i = 0; i < b->nblocks; i++) {
        const struct block *k = &b->blocks[i];
        struct group *g = &b->groups[k->group];
        if (!k->mask)
            continue;
        size_t n = 0;
        for (int sec = 0; sec < 60; sec++)
            if (k->mask & ((uint64_t)1 << sec))
                tmp[n++] = *second_of(b, k->at[sec]);
        size_t len = meter_block_encode(tmp, n, data);
        b->res.accepted += n;

        db_copy_row(&copy, 7);
        db_copy_int4(&copy, g->sb.account_pk);
        db_copy_int8(&copy, g->sb.sandbox_pk);
        db_copy_int4(&copy, (int32_t)k->minute);
        db_copy_int8(&copy, (int64_t)k->mask);
        db_copy_int8(&copy, o->now_us - DB_PG_EPOCH_US);
        db_copy_bytes(&copy, data, len);
        if (o->key_id)
            db_copy_int8(&copy, o->key_id);
        else
            db_copy_null(&copy);

        int64_t hour = k->minute / 60;
        struct roll *x = nrolls ? &rolls[nrolls - 1] : NULL;
        if (!x || x->account_pk != g->sb.account_pk || x->hour != hour) {
            x = &rolls[nrolls++];
            x->account_pk = g->sb.account_pk;
            x->hour = hour;
        }
        for (size_t j = 0; j < n; j++) {
            if (tmp[j].vcpu != 0 && k->minute < g->run_min)
                g->run_min = (int32_t)k->minute;
            x->samples++;
            x->running += tmp[j].vcpu != 0;
            x->vcpu += tmp[j].vcpu;
            x->used += tmp[j].cpu_used;
            x->mem += tmp[j].mem_bytes;
            x->mem_used += tmp[j].mem_used_bytes;
            x->disk += tmp[j].disk_bytes;
            x->egress += tmp[j].egress_bytes;
        }
    }
    db_copy_end(&copy);
    if (copy.failed) {
        rc = db_hard(e, "out of memory");
        goto out;
    }
    if (b->res.accepted == 0)
        goto out;

    rc = db_copy_in(
        db,
        "COPY usage_blocks (account_pk, sandbox_pk, minute,"
        " seconds, arrived_at, data, key_id) FROM STDIN (FORMAT binary)",
        copy.p, copy.len, "cannot store usage", e);
    if (rc < 0)
        goto out;

    /* Sum the accumulators of equal key (several sandboxes). */
    bool failed = false;
    for (int c = 0; c < 10; c++)
        meter_buf_str(&roll[c], "{");
    for (size_t j = 0; j < nrolls; j++) {
        const struct roll *x = &rolls[j];
        const char *sep = j ? "," : "";
        meter_buf_printf(&roll[0], "%s%d", sep, x->account_pk);
        meter_buf_printf(&roll[1], "%s%lld", sep, (long long)x->hour);
        meter_buf_printf(&roll[2], "%s%llu", sep,
                         (unsigned long long)x->samples);
        meter_buf_printf(&roll[3], "%s%llu", sep,
                         (unsigned long long)x->running);
        pricing_u128 v[] = {x->vcpu,     x->used, x->mem,
                            x->mem_used, x->disk, x->egress};
        for (int c = 0; c < 6; c++) {
            meter_buf_str(&roll[4 + c], sep);
            buf_u128(&roll[4 + c], v[c]);
        }
    }
    struct db_params cols = {0};
    for (int c = 0; c < 10; c++) {
        meter_buf_str(&roll[c], "}");
        failed |= roll[c].failed;
        db_param_text(&cols, roll[c].p);
    }
    if (failed) {
        rc = db_hard(e, "out of memory");
        goto out;
    }
    /* The key and the arrival of the blocks: a quarantine finds the
     * rows of the batches whose blocks it moves by them. */
    if (o->key_id)
        db_param_int64(&cols, o->key_id);
    else
        db_param_text(&cols, NULL);
    db_param_int64(&cols, o->now_us);
    rc = exec_cmd(db,
                  "INSERT INTO usage_hourly (account_pk, hour, samples,"
                  " running_s, vcpu_s, cpu_used_s, mem_byte_s,"
                  " mem_used_byte_s, disk_byte_s, egress_bytes, key_id,"
                  " added_at)"
                  " SELECT a, h, sum(s), sum(r), round(sum(v) / 10000, 4),"
                  "  round(sum(u) / 10000, 4), sum(m), sum(mu), sum(d), sum(e),"
                  "  $11::bigint,"
                  "  'epoch'::timestamptz + $12::bigint * interval '1 us'"
                  " FROM unnest($1::int[], $2::int[], $3::bigint[],"
                  "  $4::bigint[], $5::numeric[], $6::numeric[],"
                  "  $7::numeric[], $8::numeric[], $9::numeric[],"
                  "  $10::numeric[]) AS x (a, h, s, r, v, u, m, mu, d, e)"
                  " GROUP BY a, h",
                  cols.n, cols.v, "cannot store rollups", e);
out:
    free(rolls);
    meter_buf_release(&copy);
    for (int c = 0; c < 10; c++)
        meter_buf_release(&roll[c]);
    return rc;
}

/* Lowers the stored first running minute of the batch's sandboxes that
 * run earlier than it, all of them (trust_cache false) or those whose
 * known first run is later; the first_run_epoch in *epoch. */
static enum meter_db_status
lower_first_runs(PGconn *db, struct db_batch *b, bool trust_cache,
                 int64_t *epoch, struct meter_err *e)
{
    struct meter_buf acct = {0}, pk = {0}, min = {0};
    const char *sep = "";
    meter_buf_str(&acct, "{");
    meter_buf_str(&pk, "{");
    meter_buf_str(&min, "{");
    for (size_t i = 0; i < b->ngroups; i++) {
        const struct group *g = &b->groups[i];
        if (g->run_min == INT32_MAX ||
            (trust_cache && g->run_min >= g->sb.first_run))
            continue;
        meter_buf_printf(&acct, "%s%" PRId32, sep, g->sb.account_pk);
        meter_buf_printf(&pk, "%s%" PRId64, sep, g->sb.sandbox_pk);
        meter_buf_printf(&min, "%s%" PRId32, sep, g->run_min);
        sep = ",";
    }
    meter_buf_str(&acct, "}");
    meter_buf_str(&pk, "}");
    meter_buf_str(&min, "}");
    const char *p[] = {acct.p, pk.p, min.p};
    PGresult *r = NULL;
    enum meter_db_status rc =
        acct.failed || pk.failed || min.failed
            ? db_hard(e, "out of memory")
            : meter_db_exec(db, "cannot note first runs",
                            "WITH u AS (UPDATE sandboxes s"
                            " SET first_running_minute = k.m"
                            " FROM unnest($1::int[], $2::bigint[], $3::int[])"
                            "  AS k (a, pk, m)"
                            " WHERE s.account_pk = k.a AND s.sandbox_pk = k.pk"
                            " AND (s.first_running_minute IS NULL OR"
                            "  s.first_running_minute > k.m))"
                            " SELECT epoch FROM first_run_epoch",
                            3, p, NULL, NULL, &r, e);
    if (rc == METER_DB_ROWS) {
        if (db_get_int64(r, 0, 0, epoch, e) < 0)
            rc = METER_DB_HARD;
    } else if (rc >= 0)
        rc = db_hard(e, "cannot note first runs: first_run_epoch is empty");
    PQclear(r);
    meter_buf_release(&acct);
    meter_buf_release(&pk);
    meter_buf_release(&min);
    return rc < 0 ? rc : METER_DB_NONE;
}

/* Lowers the first running minute of the sandboxes whose batch stores
 * an earlier one than known (rarely more than their first batch). What
 * the batch was told is trusted while first_run_epoch stays as it was
 * when the registry was read (resolve): a quarantine that took a first
 * run away raises it, and then every sandbox of the batch is checked,
 * and the registry starts over. The sandboxes' row locks
 * (lock_sandboxes) order this after such a quarantine's commit. */
static enum meter_db_status
note_first_runs(PGconn *db, struct meter_registry *reg, struct db_batch *b,
                struct meter_err *e)
{
    int64_t epoch;
    enum meter_db_status rc = lower_first_runs(db, b, true, &epoch, e);
    if (rc < 0)
        return rc;
    bool stale = epoch != b->epoch;
    db_registry_epoch_seen(reg, epoch);
    if (stale && (rc = lower_first_runs(db, b, false, &epoch, e)) < 0)
        return rc;
    for (size_t i = 0; i < b->ngroups; i++) {
        struct group *g = &b->groups[i];
        if (stale)
            g->fresh = false; /* read again by the next batch */
        else if (g->run_min < g->sb.first_run) {
            g->sb.first_run = g->run_min;
            g->fresh = true;
        }
    }
    return METER_DB_NONE;
}

/* For a scoped key: the samples of accounts it may not write, as
 * problems; ABORT if there are any. */
static enum meter_db_status
check_scope(PGconn *db, struct db_batch *b, int64_t key_id,
            struct meter_problems *probs, struct meter_err *e)
{
    struct meter_buf ids = {0};
    for (size_t i = 0; i < b->ngroups; i++)
        b->groups[i].known = false; /* id_array lists every group */
    id_array(&ids, b, true);
    if (ids.failed) {
        meter_buf_release(&ids);
        return db_hard(e, "out of memory");
    }
    struct db_params p = {0};
    db_param_int64(&p, key_id);
    db_param_text(&p, ids.p);
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot read the key's accounts",
        "SELECT DISTINCT x FROM unnest($2::text[]) x WHERE NOT EXISTS"
        " (SELECT 1 FROM host_key_accounts h WHERE h.key_id = $1::bigint"
        "  AND h.account_id = x)",
        p.n, p.v, NULL, NULL, &r, e);
    meter_buf_release(&ids);
    for (int row = 0; st >= 0 && row < PQntuples(r); row++) {
        const char *account = PQgetvalue(r, row, 0);
        for (size_t k = 0; k < b->n; k++)
            if (strcmp(b->s[k].account_id, account) == 0) {
                meter_problems_add(probs, k, "account_id", account,
                                   "this host key may not write this "
                                   "account's usage");
                break; /* the first sample of each account */
            }
    }
    PQclear(r);
    if (st < 0)
        return st;
    return probs->total ? METER_DB_ABORT : METER_DB_NONE;
}

/* Creates the monthly partitions the batch needs, in their own
 * transactions, before the batch's, which nothing refuses any more once
 * its samples and its key's scope are checked; ABORT naming the first
 * sample of an archived month. */
static enum meter_db_status
ensure_partitions(PGconn *db, struct meter_registry *reg, struct db_batch *b,
                  struct meter_problems *probs, struct meter_err *e)
{
    for (size_t i = 0; i < b->nblocks; i++) {
        int y, m;
        int64_t start, end;
        pricing_period_of(b->blocks[i].minute * 60, &y, &m, &start, &end);
        int64_t key = (int64_t)y * 12 + m;
        if (db_registry_month_known(reg, key))
            continue;
        struct db_params p = {0};
        db_param_period(&p, y, m);
        PGresult *r =
            PQexecParams(db, "SELECT usage_blocks_partition($1::date)", p.n,
                         NULL, p.v, NULL, NULL, 0);
        const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
        if (state && strcmp(state, "MT001") == 0) {
            /* Archived (0005_archived_months.sql): refused by name, at
             * the batch's first sample of the month. */
            PQclear(r);
            char month[16], why[96];
            snprintf(month, sizeof(month), "%04d-%02d", y, m);
            snprintf(why, sizeof(why),
                     "the month %s is archived: its samples are no longer "
                     "accepted",
                     month);
            /* The batch's first sample of the month: a part of a
             * routed batch holds some of the samples (b->ord). */
            size_t first = SIZE_MAX;
            for (size_t k = 0; k < b->n; k++) {
                size_t at = b->ord[k];
                if (b->s[at].s.ts >= start && b->s[at].s.ts < end && at < first)
                    first = at;
            }
            char v[32];
            snprintf(v, sizeof(v), "%lld", (long long)b->s[first].s.ts);
            meter_problems_add(probs, first, "ts", v, why);
            return METER_DB_ABORT;
        }
        if (PQresultStatus(r) != PGRES_TUPLES_OK)
            return db_failed(db, r, "cannot create a partition", e);
        PQclear(r);
        db_registry_month_add(reg, key);
    }
    return METER_DB_NONE;
}

/* ensure_partitions, again while it deadlocks: creating a partition
 * locks usage_blocks, then sandboxes for its foreign key, where a
 * concurrent batch may hold sandboxes and wait for usage_blocks.
 * PostgreSQL ends one of the two; the batch's transaction is retried by
 * meter_db_transaction, the creation here. SOFT if it never succeeds. */
static enum meter_db_status
ensure_partitions_retried(PGconn *db, struct meter_registry *reg,
                          struct db_batch *b, struct meter_problems *probs,
                          struct meter_err *e)
{
    enum meter_db_status st = METER_DB_SOFT;
    for (int i = 0; i < 5 && st == METER_DB_SOFT; i++) {
        if (i) {
            struct timespec nap = {0, (long)(10 + rand() % 40) * 1000000};
            nanosleep(&nap, NULL);
        }
        st = ensure_partitions(db, reg, b, probs, e);
    }
    return st;
}

/* Locks the rows of the batch's sandboxes, in (account_pk, sandbox_pk)
 * order (the sort below the lock: no deadlock between writers). FOR NO
 * KEY UPDATE lets the foreign keys of usage_blocks (FOR KEY SHARE)
 * through. */
static enum meter_db_status
lock_sandboxes(PGconn *db, const struct db_batch *b, struct meter_err *e)
{
    struct meter_buf accts = {0}, pks = {0};
    meter_buf_str(&accts, "{");
    meter_buf_str(&pks, "{");
    for (size_t i = 0; i < b->ngroups; i++) {
        const char *sep = i ? "," : "";
        meter_buf_printf(&accts, "%s%" PRId32, sep, b->groups[i].sb.account_pk);
        meter_buf_printf(&pks, "%s%" PRId64, sep, b->groups[i].sb.sandbox_pk);
    }
    meter_buf_str(&accts, "}");
    meter_buf_str(&pks, "}");
    const char *p[] = {accts.p, pks.p};
    enum meter_db_status rc =
        accts.failed || pks.failed
            ? db_hard(e, "out of memory")
            : exec_cmd(db,
                       "SELECT count(*) FROM (SELECT 1"
                       " FROM unnest($1::int[], $2::bigint[]) AS k (a, pk)"
                       " JOIN sandboxes s ON s.account_pk = k.a"
                       "  AND s.sandbox_pk = k.pk"
                       " ORDER BY s.account_pk, s.sandbox_pk"
                       " FOR NO KEY UPDATE OF s) l",
                       2, p, "cannot lock sandboxes", e);
    meter_buf_release(&accts);
    meter_buf_release(&pks);
    return rc;
}

/* One attempt of the batch's transaction (meter_db_transaction). */
struct attempt {
    struct meter_registry *reg;
    struct db_batch *b;
    const struct meter_ingest_origin *o;
    const struct db_part *part; /* NULL: not routed */
    int tries;
    bool moved; /* this database refused a bucket (MT002) */
};

/* A routed part's first statements: its accounts' shadow rows on a shard
 * that is not the catalog (for the foreign keys), then the check that
 * this database holds its buckets (bucket_check, 0017_shard_map). */
static enum meter_db_status
check_part(PGconn *db, struct attempt *a, struct meter_err *e)
{
    const struct db_part *p = a->part;
    struct meter_buf pks = {0}, ids = {0}, buckets = {0};
    db_int4_array(&buckets, p->buckets, p->nbuckets);
    meter_buf_str(&pks, "{");
    meter_buf_str(&ids, "{");
    for (size_t i = 0; i < a->b->ngroups; i++) {
        const struct group *g = &a->b->groups[i];
        if (i && g->account_pk == g[-1].account_pk)
            continue;
        meter_buf_printf(&pks, "%s%" PRId32, i ? "," : "", g->account_pk);
        db_array_text(&ids, a->b->s[a->b->ord[g->first]].account_id);
    }
    meter_buf_str(&pks, "}");
    meter_buf_str(&ids, "}");
    enum meter_db_status st = METER_DB_NONE;
    if (pks.failed || ids.failed || buckets.failed)
        st = db_hard(e, "out of memory");
    if (st == METER_DB_NONE && p->shadow)
        st = exec_cmd(db,
                      "INSERT INTO accounts (account_pk, account_id,"
                      " auto_created) OVERRIDING SYSTEM VALUE"
                      " SELECT pk, id, true FROM unnest($1::int[],"
                      " $2::text[]) AS x (pk, id) ORDER BY pk"
                      " ON CONFLICT DO NOTHING",
                      2, (const char *const[]){pks.p, ids.p},
                      "cannot register the shard's accounts", e);
    if (st == METER_DB_NONE) {
        const char *v[] = {buckets.p};
        PGresult *r = PQexecParams(db, "SELECT bucket_check($1::int[])", 1,
                                   NULL, v, NULL, NULL, 0);
        db_answered(db);
        const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
        a->moved = state && strcmp(state, "MT002") == 0;
        if (PQresultStatus(r) != PGRES_TUPLES_OK)
            st = db_failed(db, r, "cannot check the shard's buckets", e);
        else
            PQclear(r);
    }
    meter_buf_release(&pks);
    meter_buf_release(&ids);
    meter_buf_release(&buckets);
    return st;
}

static enum meter_db_status
ingest_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct attempt *a = arg;
    struct db_batch *b = a->b;
    /* Each attempt starts from the batch alone: blocks, counts and
     * registrations of a rolled-back attempt are gone. */
    if (a->tries++ > 0) {
        free(b->blocks);
        free(b->extras);
        b->blocks = NULL;
        b->extras = NULL;
        b->nblocks = 0;
        memset(&b->res, 0, sizeof(b->res));
        if (build_blocks(b) < 0)
            return db_hard(e, "out of memory");
    }
    enum meter_db_status rc = a->part ? check_part(db, a, e) : METER_DB_NONE;
    if (rc == METER_DB_NONE)
        rc = resolve(db, a->reg, b, e);
    if (rc == METER_DB_NONE)
        rc = lock_sandboxes(db, b, e);
    if (rc == METER_DB_NONE)
        rc = check_stored(db, b, e);
    if (rc == METER_DB_NONE) {
        count_extras(b);
        rc = write_blocks(db, b, a->o, e);
    }
    if (rc == METER_DB_NONE)
        rc = note_first_runs(db, a->reg, b, e);
    return rc;
}

/* ---- the batch, for this file and route.c ------------------------------ */

void
db_batch_free(struct db_batch *b)
{
    if (!b)
        return;
    free(b->ord);
    free(b->groups);
    free(b->blocks);
    free(b->extras);
    free(b);
}

enum meter_ingest_status
db_batch_open(PGconn *db, const struct meter_sample *s, size_t n,
              const struct meter_ingest_origin *o,
              struct meter_ingest_result *res, struct meter_problems *probs,
              struct meter_err *e, struct db_batch **out)
{
    struct db_batch *b = calloc(1, sizeof(*b));
    enum meter_ingest_status st = METER_INGEST_ERROR;
    memset(res, 0, sizeof(*res));
    *out = NULL;
    if (!b) {
        meter_fail(e, "out of memory");
        return st;
    }
    b->s = s;
    b->n = n;
    long sandboxes = sort_batch(b);
    if (sandboxes < 0) {
        meter_fail(e, "out of memory");
        goto out;
    }
    /* Refused before anything grows with the sandboxes: their groups,
     * blocks, registrations and locks. */
    res->sandboxes = (size_t)sandboxes;
    if (o->max_sandboxes && res->sandboxes > o->max_sandboxes) {
        st = METER_INGEST_TOO_LARGE;
        goto out;
    }
    if (prepare(b, res->sandboxes, o->now_us / 1000000, o->max_age, probs) <
        0) {
        meter_fail(e, "out of memory");
        goto out;
    }
    if (probs->total) {
        st = METER_INGEST_INVALID;
        goto out;
    }
    st = METER_INGEST_OK;
    if (n == 0)
        goto out;
    if (o->scoped) {
        enum meter_db_status in = check_scope(db, b, o->key_id, probs, e);
        if (in == METER_DB_ABORT)
            st = METER_INGEST_FORBIDDEN;
        else if (in < 0)
            st = meter_db_unavailable(db, in) ? METER_INGEST_UNAVAILABLE
                                              : METER_INGEST_ERROR;
        if (in != METER_DB_NONE)
            goto out;
    }
    *out = b;
    return st;
out:
    db_batch_free(b);
    return st;
}

size_t
db_batch_groups(const struct db_batch *b)
{
    return b->ngroups;
}

const char *
db_batch_account(const struct db_batch *b, size_t g)
{
    return b->s[b->ord[b->groups[g].first]].account_id;
}

void
db_batch_route(struct db_batch *b, size_t g, int32_t account_pk, int bucket)
{
    b->groups[g].account_pk = account_pk;
    b->groups[g].bucket = bucket;
}

int
db_batch_bucket(const struct db_batch *b, size_t g)
{
    return b->groups[g].bucket;
}

struct db_batch *
db_batch_part(const struct db_batch *b, const bool *keep)
{
    size_t groups = 0, samples = 0;
    for (size_t g = 0; g < b->ngroups; g++)
        if (keep[g]) {
            groups++;
            samples += b->groups[g].end - b->groups[g].first;
        }
    struct db_batch *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->s = b->s;
    p->n = samples;
    p->ord = malloc((samples ? samples : 1) * sizeof(*p->ord));
    p->groups = malloc((groups ? groups : 1) * sizeof(*p->groups));
    if (!p->ord || !p->groups) {
        db_batch_free(p);
        return NULL;
    }
    for (size_t g = 0; g < b->ngroups; g++) {
        if (!keep[g])
            continue;
        const struct group *from = &b->groups[g];
        struct group *to = &p->groups[p->ngroups++];
        *to = *from;
        to->first = p->ngroups == 1 ? 0 : to[-1].end;
        to->end = to->first + (from->end - from->first);
        memcpy(p->ord + to->first, b->ord + from->first,
               (from->end - from->first) * sizeof(*p->ord));
    }
    return p;
}

const struct meter_ingest_result *
db_batch_result(const struct db_batch *b)
{
    return &b->res;
}

void
db_batch_remember(struct db_batch *b, struct meter_registry *reg)
{
    for (size_t i = 0; i < b->ngroups; i++) {
        const struct group *g = &b->groups[i];
        if (g->fresh)
            db_registry_put(reg, b->s[b->ord[g->first]].sandbox_id, &g->sb,
                            b->epoch);
    }
}

enum meter_ingest_status
db_batch_store(PGconn *db, struct meter_registry *reg, struct db_batch *b,
               const struct meter_ingest_origin *o, const struct db_part *part,
               struct meter_problems *probs, bool *moved, struct meter_err *e)
{
    if (moved)
        *moved = false;
    /* The minutes of the batch tell which partitions it needs. */
    if (build_blocks(b) < 0) {
        meter_fail(e, "out of memory");
        return METER_INGEST_ERROR;
    }
    enum meter_db_status made = ensure_partitions_retried(db, reg, b, probs, e);
    if (made == METER_DB_ABORT)
        return METER_INGEST_INVALID;
    if (made < 0) {
        /* Still deadlocking: busy, not broken (the host sends again). */
        return meter_db_unavailable(db, made) ? METER_INGEST_UNAVAILABLE
                                              : METER_INGEST_ERROR;
    }
    struct attempt a = {reg, b, o, part, 0, false};
    enum meter_ingest_status st = METER_INGEST_ERROR;
    switch (db_transaction_ends(db, "BEGIN", 5, ingest_attempt, &a,
                                part ? part->gid : NULL, e)) {
    case METER_DB_NONE:
    case METER_DB_ROWS:
        st = METER_INGEST_OK;
        break;
    case METER_DB_ABORT:
        st = METER_INGEST_INVALID;
        break;
    case METER_DB_SOFT:
    case METER_DB_SHARD_AWAY: /* not from one database's transaction */
        /* Still deadlocking after five tries: busy, not broken. */
        st = METER_INGEST_UNAVAILABLE;
        break;
    case METER_DB_HARD:
        if (a.moved) {
            /* Routed by an old map: the caller reads it again. */
            if (moved)
                *moved = true;
            st = METER_INGEST_UNAVAILABLE;
            break;
        }
        st = meter_db_unavailable(db, METER_DB_HARD) ? METER_INGEST_UNAVAILABLE
                                                     : METER_INGEST_ERROR;
        /* A month known to this process may have been archived since:
         * forget what is known and look again. */
        db_registry_months_clear(reg);
        if (st == METER_INGEST_ERROR &&
            ensure_partitions_retried(db, reg, b, probs, e) == METER_DB_ABORT)
            st = METER_INGEST_INVALID;
        break;
    }
    return st;
}

enum meter_ingest_status
meter_ingest(PGconn *db, struct meter_registry *reg,
             const struct meter_sample *s, size_t n,
             const struct meter_ingest_origin *o,
             struct meter_ingest_result *res, struct meter_problems *probs,
             struct meter_err *e)
{
    struct db_batch *b;
    enum meter_ingest_status st = db_batch_open(db, s, n, o, res, probs, e, &b);
    if (!b)
        return st;
    size_t sandboxes = res->sandboxes;
    st = db_batch_store(db, reg, b, o, NULL, probs, NULL, e);
    if (st == METER_INGEST_OK) {
        *res = b->res;
        res->sandboxes = sandboxes;
        db_batch_remember(b, reg);
    }
    db_batch_free(b);
    return st;
}
