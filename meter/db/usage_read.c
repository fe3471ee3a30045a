/*
 * usage_read.c - reading stored usage back: the blocks of a time range (and
 * optionally one account), merged per (sandbox, minute), as a
 * struct pricing_source for the rating engine or for export.
 *
 * Rows stream through a server-side cursor in (account, sandbox, minute)
 * order, so each sandbox's seconds come together and in order, and
 * memory does not grow with the range. The rows are blocks and packs
 * (an hour of a sandbox's blocks in one row, usage_pack.c), read in one
 * statement: a pack is opened when reached, and its blocks taken in
 * minute order with the blocks around it.
 */
#include "db_int.h"

#include "meter_sample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FETCH_ROWS "2000"

struct meter_usage_reader {
    PGconn *db;
    PGconn *own_db; /* a connection of its own, to the account's shard */
    PGresult *rows;
    int row, nrows;
    bool done, own_tx;
    int64_t from, to;
    uint64_t seconds;  /* returned so far */
    int64_t first_run; /* the sandbox's first running minute */
    char account[PRICING_ID_MAX + 1];
    char sandbox[PRICING_ID_MAX + 1];
    struct pricing_second out[60];
    /* The pack opened: its blocks, those taken, its sandbox. */
    struct meter_pack_part *pack;
    size_t npack, taken;
    uint8_t *pack_data;
    size_t pack_cap;
    char pack_account[PRICING_ID_MAX + 1];
    char pack_sandbox[PRICING_ID_MAX + 1];
    int32_t pack_first_run;
    /* A batch's reader (meter_db_usage_open_batch): rows carry the
     * account's key, named from the batch's. */
    bool batch;
    const int32_t *pks; /* the batch's accounts, ascending */
    const char *const *ids;
    size_t naccounts;
    int32_t block_account; /* the account of the last block read */
    int32_t pack_account_pk;
    /* The account a source is limited to, and a block read ahead that
     * belongs to a later one. */
    int32_t limit;
    bool pending;
    bool failed; /* the read itself failed: no account can go on */
    struct pricing_block ahead;
    uint64_t limit_seconds;
};

/* A reader of [from, to) on db, and its cursor's first parameters in p:
 * the first minute, the end minute and the hour of the first minute's
 * pack. NULL (and e) when out of memory. */
static struct meter_usage_reader *
reader_new(PGconn *db, int64_t from, int64_t to, struct db_params *p,
           struct meter_err *e)
{
    struct meter_usage_reader *r = calloc(1, sizeof(*r));
    if (!r) {
        meter_fail(e, "out of memory");
        return NULL;
    }
    r->db = db;
    r->from = from;
    r->to = to;
    /* Minutes are int4: clamp a range reaching past their end. */
    int64_t lo_m = from / 60, hi_m = (to + 59) / 60;
    lo_m = lo_m < INT32_MAX ? lo_m : INT32_MAX;
    db_param_int64(p, lo_m);
    db_param_int64(p, hi_m < INT32_MAX ? hi_m : INT32_MAX);
    /* The pack holding lo_m starts at its hour. */
    db_param_int64(p, lo_m - lo_m % 60);
    return r;
}

struct meter_usage_reader *
meter_db_usage_open(PGconn *db, const char *account, int64_t from, int64_t to,
                    bool own_tx, struct meter_err *e)
{
    struct db_params p = {0};
    struct meter_usage_reader *r = reader_new(db, from, to, &p, e);
    if (!r)
        return NULL;
    r->own_tx = own_tx;
    if (account)
        db_param_text(&p, account);
    bool ok = true;
    PGresult *res;
    if (own_tx) {
        res = PQexec(db, "BEGIN ISOLATION LEVEL REPEATABLE READ");
        ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        PQclear(res);
    }
    if (ok) {
        /* One account: its key first, so the scans are index ranges of
         * (account_pk, sandbox_pk, minute). Seconds 0: a pack. */
        res = PQexecParams(
            db,
            account ? "DECLARE usage_cursor BINARY NO SCROLL CURSOR FOR"
                      " WITH a AS (SELECT account_pk FROM accounts"
                      "  WHERE account_id = $4::text)"
                      " SELECT $4::text, s.sandbox_id, b.minute, b.seconds,"
                      "  b.data, coalesce(s.first_running_minute, 2147483647)"
                      " FROM (SELECT sandbox_pk, minute, seconds, data"
                      "  FROM usage_blocks WHERE account_pk = (TABLE a)"
                      "  AND minute >= $1::int AND minute < $2::int"
                      "  UNION ALL SELECT sandbox_pk, minute, 0, data"
                      "  FROM usage_packs WHERE account_pk = (TABLE a)"
                      "  AND minute >= $3::int AND minute < $2::int) b"
                      " JOIN sandboxes s ON s.account_pk = (TABLE a)"
                      "  AND s.sandbox_pk = b.sandbox_pk"
                      " ORDER BY b.sandbox_pk, b.minute"
                    : "DECLARE usage_cursor BINARY NO SCROLL CURSOR FOR"
                      " SELECT a.account_id, s.sandbox_id, b.minute, b.seconds,"
                      "  b.data, coalesce(s.first_running_minute, 2147483647)"
                      " FROM (SELECT account_pk, sandbox_pk, minute, seconds,"
                      "  data FROM usage_blocks"
                      "  WHERE minute >= $1::int AND minute < $2::int"
                      "  UNION ALL SELECT account_pk, sandbox_pk, minute, 0,"
                      "  data FROM usage_packs"
                      "  WHERE minute >= $3::int AND minute < $2::int) b"
                      " JOIN sandboxes s ON s.account_pk = b.account_pk"
                      "  AND s.sandbox_pk = b.sandbox_pk"
                      " JOIN accounts a ON a.account_pk = b.account_pk"
                      " ORDER BY b.account_pk, b.sandbox_pk, b.minute",
            p.n, NULL, p.v, NULL, NULL, 0);
        ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        PQclear(res);
    }
    if (!ok) {
        meter_fail(e, "cannot read stored usage: %s", PQerrorMessage(db));
        if (own_tx)
            PQclear(PQexec(db, "ROLLBACK"));
        free(r);
        return NULL;
    }
    return r;
}

struct meter_usage_reader *
meter_usage_reader_new(PGconn *db, const char *account, int64_t from,
                       int64_t to, struct meter_err *e)
{
    /* One account: on its shard. Every account: only on one server. */
    PGconn *own = NULL;
    if (!account && meter_db_usage_whole(db, e) < 0)
        return NULL;
    if (account && db_account_conn(db, account, &own, NULL, e) < 0)
        return NULL;
    struct meter_usage_reader *r =
        meter_db_usage_open(own ? own : db, account, from, to, true, e);
    if (!r)
        PQfinish(own);
    else
        r->own_db = own;
    return r;
}

uint64_t
meter_db_usage_seconds(const struct meter_usage_reader *r)
{
    return r->seconds;
}

void
meter_usage_reader_free(struct meter_usage_reader *r)
{
    if (!r)
        return;
    PQclear(r->rows);
    PQclear(PQexec(r->db, r->own_tx ? "ROLLBACK" : "CLOSE usage_cursor"));
    PQfinish(r->own_db);
    free(r->pack);
    free(r->pack_data);
    free(r);
}

/* Makes r->row a valid row, fetching more; false at the end. */
static int
have_row(struct meter_usage_reader *r, struct meter_err *e)
{
    if (r->rows && r->row < r->nrows)
        return 1;
    if (r->done)
        return 0;
    PQclear(r->rows);
    r->rows = PQexec(r->db, "FETCH " FETCH_ROWS " FROM usage_cursor");
    db_answered(r->db);
    if (PQresultStatus(r->rows) != PGRES_TUPLES_OK) {
        meter_fail(e, "cannot read stored usage: %s", PQerrorMessage(r->db));
        return -1;
    }
    r->row = 0;
    r->nrows = PQntuples(r->rows);
    if (r->nrows == 0) {
        r->done = true;
        return 0;
    }
    return 1;
}

/* A stored block: a row's, or one of the opened pack's. */
struct part {
    const char *account, *sandbox;
    int32_t first_run, account_pk;
    int64_t minute;
    uint64_t mask;
    const uint8_t *data;
    size_t len;
    bool packed;
};

/* The account, sandbox and first running minute of row i: its columns,
 * but in a batch, whose rows carry the account's key, the account the
 * key names. -1 for an account not of the batch. */
static int
row_names(const struct meter_usage_reader *r, int i, const char **account,
          const char **sandbox, int32_t *first_run, int32_t *account_pk)
{
    PGresult *x = r->rows;
    *sandbox = PQgetvalue(x, i, 1);
    *first_run = (int32_t)meter_be32(PQgetvalue(x, i, 5));
    if (!r->batch) {
        *account = PQgetvalue(x, i, 0);
        *account_pk = 0;
        return 0;
    }
    int32_t apk = (int32_t)meter_be32(PQgetvalue(x, i, 0));
    size_t a = 0, b = r->naccounts;
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (r->pks[mid] < apk)
            a = mid + 1;
        else
            b = mid;
    }
    if (a == r->naccounts || r->pks[a] != apk)
        return -1;
    *account = r->ids[a];
    *account_pk = apk;
    return 0;
}

/* Opens the pack of row r->row (its data copied: the row goes with the
 * next fetch) and moves past the row. */
static int
open_pack(struct meter_usage_reader *r, struct pricing_err *pe)
{
    PGresult *x = r->rows;
    int i = r->row;
    size_t len = (size_t)PQgetlength(x, i, 4);
    int64_t minute = (int32_t)meter_be32(PQgetvalue(x, i, 2));
    if (len > r->pack_cap) {
        uint8_t *grown = realloc(r->pack_data, len);
        if (!grown) {
            snprintf(pe->msg, sizeof(pe->msg), "out of memory");
            return -1;
        }
        r->pack_data = grown;
        r->pack_cap = len;
    }
    if (len)
        memcpy(r->pack_data, PQgetvalue(x, i, 4), len);
    free(r->pack);
    r->pack = NULL;
    r->npack = r->taken = 0;
    if (meter_pack_decode(minute / 60, r->pack_data, len, &r->pack, &r->npack) <
        0) {
        snprintf(pe->msg, sizeof(pe->msg),
                 "stored pack of sandbox '%s' hour %lld is corrupt",
                 PQgetvalue(x, i, 1), (long long)(minute / 60));
        return -1;
    }
    const char *account, *sandbox;
    if (row_names(r, i, &account, &sandbox, &r->pack_first_run,
                  &r->pack_account_pk) < 0) {
        snprintf(pe->msg, sizeof(pe->msg),
                 "a stored pack of an account not of the batch (%d)",
                 (int)meter_be32(PQgetvalue(x, i, 0)));
        return -1;
    }
    snprintf(r->pack_account, sizeof(r->pack_account), "%s", account);
    snprintf(r->pack_sandbox, sizeof(r->pack_sandbox), "%s", sandbox);
    r->row++;
    return 0;
}

/* The next stored block in (account, sandbox, minute) order, not taken
 * yet: 1, 0 at the end, -1 on failure. */
static int
peek(struct meter_usage_reader *r, struct part *p, struct pricing_err *pe)
{
    for (;;) {
        struct meter_err e = {{0}};
        int got = have_row(r, &e);
        if (got < 0) {
            snprintf(pe->msg, sizeof(pe->msg), "%.*s", (int)sizeof(pe->msg) - 1,
                     e.msg);
            return -1;
        }
        PGresult *x = r->rows;
        int i = r->row;
        bool row_packed = got && meter_be64(PQgetvalue(x, i, 3)) == 0;
        const char *account = NULL, *sandbox = NULL;
        int32_t first_run = 0, account_pk = 0;
        if (got &&
            row_names(r, i, &account, &sandbox, &first_run, &account_pk) < 0) {
            snprintf(pe->msg, sizeof(pe->msg),
                     "a stored block of an account not of the batch (%d)",
                     (int)meter_be32(PQgetvalue(x, i, 0)));
            return -1;
        }
        if (r->taken < r->npack) {
            /* The pack's next block goes first unless the row is of the
             * same account and sandbox and an earlier minute (or the
             * same: both). */
            const struct meter_pack_part *q = &r->pack[r->taken];
            if (!got || strcmp(account, r->pack_account) != 0 ||
                strcmp(sandbox, r->pack_sandbox) != 0 ||
                q->minute <= (int32_t)meter_be32(PQgetvalue(x, i, 2))) {
                *p = (struct part){r->pack_account,
                                   r->pack_sandbox,
                                   r->pack_first_run,
                                   r->pack_account_pk,
                                   q->minute,
                                   q->mask,
                                   q->data,
                                   q->len,
                                   true};
                return 1;
            }
        } else if (row_packed) {
            if (open_pack(r, pe) < 0)
                return -1;
            continue;
        }
        if (!got)
            return 0;
        *p = (struct part){
            account,
            sandbox,
            first_run,
            account_pk,
            (int32_t)meter_be32(PQgetvalue(x, i, 2)),
            meter_be64(PQgetvalue(x, i, 3)),
            (const uint8_t *)PQgetvalue(x, i, 4),
            (size_t)PQgetlength(x, i, 4),
            false,
        };
        return 1;
    }
}

static void
take(struct meter_usage_reader *r, const struct part *p)
{
    if (p->packed)
        r->taken++;
    else
        r->row++;
}

/* The next (account, sandbox, minute): every block of it merged, seconds
 * outside [from, to) dropped. A minute stored in one block (the common case) is
 * decoded straight into the output. */
static int
next_block(void *ctx, struct pricing_block *b, struct pricing_err *pe)
{
    struct meter_usage_reader *r = ctx;
    struct pricing_second slots[60], dec[60];
    struct part p;
    int got;
    for (;;) {
        uint64_t have = 0;
        int64_t minute = 0;
        size_t n = 0;
        bool merged = false;
        while ((got = peek(r, &p, pe)) > 0) {
            if (have &&
                (p.minute != minute || strcmp(p.sandbox, r->sandbox) != 0 ||
                 strcmp(p.account, r->account) != 0))
                break; /* the next block starts here */
            if (!have) {
                snprintf(r->account, sizeof(r->account), "%s", p.account);
                snprintf(r->sandbox, sizeof(r->sandbox), "%s", p.sandbox);
                r->first_run = p.first_run;
                r->block_account = p.account_pk;
                minute = p.minute;
            } else if (!merged) {
                /* A second block of the minute: merge by second. */
                for (size_t k = 0; k < n; k++)
                    slots[r->out[k].ts - minute * 60] = r->out[k];
                merged = true;
            }
            size_t got_n;
            if (meter_block_decode(minute, p.mask, p.data, p.len,
                                   have ? dec : r->out, &got_n) < 0) {
                snprintf(pe->msg, sizeof(pe->msg),
                         "stored block of sandbox '%s' minute %lld is corrupt",
                         p.sandbox, (long long)minute);
                return -1;
            }
            if (have)
                for (size_t k = 0; k < got_n; k++)
                    slots[dec[k].ts - minute * 60] = dec[k];
            else
                n = got_n;
            have |= p.mask;
            take(r, &p);
        }
        if (got < 0)
            return -1;
        if (!have)
            return 0;
        if (merged) {
            n = 0;
            for (uint64_t bits = have; bits; bits &= bits - 1)
                r->out[n++] = slots[__builtin_ctzll(bits)];
        }
        if (minute * 60 < r->from || minute * 60 + 60 > r->to) {
            /* The minute reaches outside [from, to). */
            size_t kept = 0;
            for (size_t k = 0; k < n; k++)
                if (r->out[k].ts >= r->from && r->out[k].ts < r->to)
                    r->out[kept++] = r->out[k];
            n = kept;
        }
        if (n == 0)
            continue; /* the whole minute is outside [from, to) */
        b->account_id = r->account;
        b->sandbox_id = r->sandbox;
        b->s = r->out;
        b->n = n;
        b->runs = NULL; /* seconds, one by one */
        b->nruns = 0;
        b->history = true;
        b->first_run_minute =
            r->first_run == INT32_MAX ? INT64_MAX : r->first_run;
        r->seconds += n;
        return 1;
    }
}

struct pricing_source
meter_usage_source(struct meter_usage_reader *r)
{
    struct pricing_source src = {next_block, r};
    return src;
}

/* ---- a batch of accounts ------------------------------------------------ */

struct meter_usage_reader *
meter_db_usage_open_batch(PGconn *db, const int32_t *pks,
                          const char *const *ids, size_t n, int64_t from,
                          int64_t to, struct meter_err *e)
{
    struct db_params p = {0};
    struct meter_usage_reader *r = reader_new(db, from, to, &p, e);
    if (!r)
        return NULL;
    struct meter_buf arr = {0};
    r->batch = true;
    r->pks = pks;
    r->ids = ids;
    r->naccounts = n;
    db_int4_array(&arr, pks, n);
    db_param_int32(&p, n ? pks[0] : 0);
    db_param_int32(&p, n ? pks[n - 1] : -1);
    db_param_text(&p, arr.p);
    /* The accounts' range first, so the scans are index ranges of
     * (account_pk, sandbox_pk, minute); the sandboxes' ids and first runs
     * in the same snapshot as the blocks. Seconds 0: a pack. */
    PGresult *res =
        arr.failed
            ? NULL
            : PQexecParams(
                  db,
                  "DECLARE usage_cursor BINARY NO SCROLL CURSOR FOR"
                  " SELECT b.account_pk, s.sandbox_id, b.minute, b.seconds,"
                  "  b.data, coalesce(s.first_running_minute, 2147483647)"
                  " FROM (SELECT account_pk, sandbox_pk, minute, seconds, data"
                  "  FROM usage_blocks WHERE account_pk BETWEEN $4::int"
                  "  AND $5::int AND account_pk = ANY ($6::int[])"
                  "  AND minute >= $1::int AND minute < $2::int"
                  "  UNION ALL SELECT account_pk, sandbox_pk, minute, 0, data"
                  "  FROM usage_packs WHERE account_pk BETWEEN $4::int"
                  "  AND $5::int AND account_pk = ANY ($6::int[])"
                  "  AND minute >= $3::int AND minute < $2::int) b"
                  " JOIN sandboxes s ON s.account_pk = b.account_pk"
                  "  AND s.sandbox_pk = b.sandbox_pk"
                  " ORDER BY b.account_pk, b.sandbox_pk, b.minute",
                  p.n, NULL, p.v, NULL, NULL, 0);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    db_answered(db);
    meter_buf_release(&arr);
    if (!ok) {
        meter_fail(e, "cannot read stored usage: %s", PQerrorMessage(db));
        free(r);
        return NULL;
    }
    return r;
}

/* The next block of the limited account: those of accounts before it
 * (not rated) are passed over, one of a later account is kept. */
static int
next_of_account(void *ctx, struct pricing_block *b, struct pricing_err *pe)
{
    struct meter_usage_reader *r = ctx;
    for (;;) {
        if (!r->pending) {
            int got = next_block(r, &r->ahead, pe);
            r->failed |= got < 0;
            if (got <= 0)
                return got;
            r->pending = true;
        }
        if (r->block_account > r->limit)
            return 0;
        r->pending = false;
        if (r->block_account == r->limit) {
            *b = r->ahead;
            r->limit_seconds += b->n;
            return 1;
        }
    }
}

struct pricing_source
meter_db_usage_account_source(struct meter_usage_reader *r, int32_t account_pk)
{
    r->limit = account_pk;
    r->limit_seconds = 0;
    struct pricing_source src = {next_of_account, r};
    return src;
}

uint64_t
meter_db_usage_account_seconds(const struct meter_usage_reader *r)
{
    return r->limit_seconds;
}

bool
meter_db_usage_failed(const struct meter_usage_reader *r)
{
    return r->failed;
}
