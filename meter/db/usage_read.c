/*
 * usage_read.c - reading stored usage back: the blocks of a time range (and
 * optionally one account), merged per (sandbox, minute), as a
 * struct pricing_source for the rating engine or for export.
 *
 * Rows stream through a server-side cursor in (account, sandbox, minute)
 * order, so each sandbox's seconds come together and in order, and
 * memory does not grow with the range.
 */
#include "db_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FETCH_ROWS "2000"

struct meter_usage_reader {
    PGconn *db;
    PGresult *rows;
    int row, nrows;
    bool done, own_tx;
    int64_t from, to;
    uint64_t seconds;  /* returned so far */
    int64_t first_run; /* the sandbox's first running minute */
    char account[PRICING_ID_MAX + 1];
    char sandbox[PRICING_ID_MAX + 1];
    struct pricing_second out[60];
};

struct meter_usage_reader *
db_usage_open(PGconn *db, const char *account, int64_t from, int64_t to,
              bool own_tx, struct meter_err *e)
{
    struct meter_usage_reader *r = calloc(1, sizeof(*r));
    if (!r) {
        meter_fail(e, "out of memory");
        return NULL;
    }
    r->db = db;
    r->own_tx = own_tx;
    r->from = from;
    r->to = to;
    char lo[32], hi[32];
    /* Minutes are int4: clamp a range reaching past their end. */
    int64_t lo_m = from / 60, hi_m = (to + 59) / 60;
    snprintf(lo, sizeof(lo), "%lld",
             (long long)(lo_m < INT32_MAX ? lo_m : INT32_MAX));
    snprintf(hi, sizeof(hi), "%lld",
             (long long)(hi_m < INT32_MAX ? hi_m : INT32_MAX));
    const char *values[] = {lo, hi, account};
    bool ok = true;
    PGresult *res;
    if (own_tx) {
        res = PQexec(db, "BEGIN ISOLATION LEVEL REPEATABLE READ");
        ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        PQclear(res);
    }
    if (ok) {
        /* One account: its key first, so the scan is an index range of
         * (account_pk, sandbox_pk, minute). */
        res = PQexecParams(
            db,
            account ? "DECLARE usage_cursor BINARY NO SCROLL CURSOR FOR"
                      " SELECT $3::text, s.sandbox_id, b.minute, b.seconds,"
                      "  b.data, coalesce(s.first_running_minute, 2147483647)"
                      " FROM usage_blocks b JOIN sandboxes s"
                      "  ON s.account_pk = b.account_pk"
                      "  AND s.sandbox_pk = b.sandbox_pk"
                      " WHERE b.account_pk = (SELECT account_pk FROM accounts"
                      "   WHERE account_id = $3::text)"
                      "  AND b.minute >= $1::int AND b.minute < $2::int"
                      " ORDER BY b.sandbox_pk, b.minute"
                    : "DECLARE usage_cursor BINARY NO SCROLL CURSOR FOR"
                      " SELECT a.account_id, s.sandbox_id, b.minute, b.seconds,"
                      "  b.data, coalesce(s.first_running_minute, 2147483647)"
                      " FROM usage_blocks b"
                      " JOIN sandboxes s ON s.sandbox_pk = b.sandbox_pk"
                      " JOIN accounts a ON a.account_pk = b.account_pk"
                      " WHERE b.minute >= $1::int AND b.minute < $2::int"
                      " ORDER BY b.account_pk, b.sandbox_pk, b.minute",
            account ? 3 : 2, NULL, values, NULL, NULL, 0);
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
    return db_usage_open(db, account, from, to, true, e);
}

uint64_t
db_usage_seconds(const struct meter_usage_reader *r)
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

/* The next (sandbox, minute): every row of it merged, seconds outside
 * [from, to) dropped. A minute stored in one row (the common case) is
 * decoded straight into the output. */
static int
next_block(void *ctx, struct pricing_block *b, struct pricing_err *pe)
{
    struct meter_usage_reader *r = ctx;
    struct meter_err e = {{0}};
    struct pricing_second slots[60], dec[60];
    int got;
    for (;;) {
        uint64_t have = 0;
        int64_t minute = 0;
        size_t n = 0;
        bool merged = false;
        while ((got = have_row(r, &e)) > 0) {
            PGresult *x = r->rows;
            int i = r->row;
            const char *sandbox = PQgetvalue(x, i, 1);
            int64_t m = (int32_t)meter_be32(PQgetvalue(x, i, 2));
            if (have && (m != minute || strcmp(sandbox, r->sandbox) != 0))
                break; /* the next block starts here */
            if (!have) {
                snprintf(r->account, sizeof(r->account), "%s",
                         PQgetvalue(x, i, 0));
                snprintf(r->sandbox, sizeof(r->sandbox), "%s", sandbox);
                r->first_run = (int32_t)meter_be32(PQgetvalue(x, i, 5));
                minute = m;
            } else if (!merged) {
                /* A second row of the minute: merge by second. */
                for (size_t k = 0; k < n; k++)
                    slots[r->out[k].ts - m * 60] = r->out[k];
                merged = true;
            }
            uint64_t mask = meter_be64(PQgetvalue(x, i, 3));
            size_t got_n;
            if (meter_block_decode(m, mask,
                                   (const uint8_t *)PQgetvalue(x, i, 4),
                                   (size_t)PQgetlength(x, i, 4),
                                   have ? dec : r->out, &got_n) < 0) {
                snprintf(pe->msg, sizeof(pe->msg),
                         "stored block of sandbox '%s' minute %lld is corrupt",
                         sandbox, (long long)m);
                return -1;
            }
            if (have)
                for (size_t k = 0; k < got_n; k++)
                    slots[dec[k].ts - m * 60] = dec[k];
            else
                n = got_n;
            have |= mask;
            r->row++;
        }
        if (got < 0) {
            snprintf(pe->msg, sizeof(pe->msg), "%.*s", (int)sizeof(pe->msg) - 1,
                     e.msg);
            return -1;
        }
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
