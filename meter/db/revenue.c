/*
 * revenue.c - what revenue by day is made of (docs/dashboards.md): the
 * usage that drives each kind of charge, day by day, read from the
 * hourly rollups for a batch of accounts at once; and a credit note's
 * revenue, the voided document's negated. How a document's total is
 * spread over its days is meter/billing/revenue.c's.
 */
#include "db_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The drivers, in the order of struct meter_db_period_days's w. */
enum { D_N = 5 };
#define period_days meter_db_period_days

/* Each driver of the accounts' days as a share of the period's whole,
 * out of 10^9: account_pk, day, then the drivers. */
#define DRIVERS_SQL                                                            \
    "WITH d AS (SELECT h.account_pk, h.hour / 24 AS day,"                      \
    "  sum(h.running_s) AS r, sum(h.vcpu_s) AS v, sum(h.mem_byte_s) AS m,"     \
    "  sum(h.disk_byte_s) AS k, sum(h.egress_bytes) AS x"                      \
    "  FROM usage_hourly_totals h WHERE h.account_pk = ANY ($1::int[])"        \
    "  AND h.hour >= $2::bigint AND h.hour < $3::bigint GROUP BY 1, 2)"        \
    " SELECT account_pk, day, coalesce(floor(r * 1e9 / nullif(sum(r)"          \
    "  OVER (PARTITION BY account_pk), 0)), 0),"                               \
    "  coalesce(floor(v * 1e9 / nullif(sum(v) OVER (PARTITION BY account_pk)," \
    "  0)), 0),"                                                               \
    "  coalesce(floor(m * 1e9 / nullif(sum(m) OVER (PARTITION BY account_pk)," \
    "  0)), 0),"                                                               \
    "  coalesce(floor(k * 1e9 / nullif(sum(k) OVER (PARTITION BY account_pk)," \
    "  0)), 0),"                                                               \
    "  coalesce(floor(x * 1e9 / nullif(sum(x) OVER (PARTITION BY account_pk)," \
    "  0)), 0)"                                                                \
    " FROM d ORDER BY account_pk, day"

/* Sets out[k] to the drivers of (year, month) of account pks[k] (n of
 * them, ascending), in one statement. */
enum meter_db_status
meter_db_revenue_drivers(PGconn *db, const int32_t *pks, size_t n, int year,
                         int month, struct meter_db_period_days *const *out,
                         struct meter_err *e)
{
    int64_t from = db_period_start(year, month),
            to = db_period_end(year, month);
    for (size_t k = 0; k < n; k++) {
        memset(out[k], 0, sizeof(*out[k]));
        out[k]->year = year;
        out[k]->month = month;
        out[k]->first_day = from / 86400;
        out[k]->ndays = (int)((to - from) / 86400);
    }
    struct meter_buf arr = {0};
    db_int4_array(&arr, pks, n);
    char lo[24], hi[24];
    snprintf(lo, sizeof(lo), "%" PRId64, from / 3600);
    snprintf(hi, sizeof(hi), "%" PRId64, to / 3600);
    const char *v[] = {arr.p, lo, hi};
    PGresult *r;
    enum meter_db_status st =
        arr.failed ? db_hard(e, "out of memory")
                   : meter_db_exec(db, "cannot read the usage by day",
                                   DRIVERS_SQL, 3, v, NULL, NULL, &r, e);
    meter_buf_release(&arr);
    if (st < 0)
        return st;
    size_t k = 0;
    for (int i = 0; i < PQntuples(r) && st >= 0; i++) {
        int32_t pk = 0;
        int64_t day = 0;
        if (db_get_int32(r, i, 0, &pk, e) < 0 ||
            db_get_int64(r, i, 1, &day, e) < 0) {
            st = METER_DB_HARD;
            break;
        }
        while (k < n && pks[k] < pk)
            k++;
        if (k == n)
            break;
        if (pks[k] != pk)
            continue;
        struct period_days *p = out[k];
        day -= p->first_day;
        if (day < 0 || day >= p->ndays)
            continue;
        for (int d = 0; d < D_N && st >= 0; d++)
            if (db_get_int64(r, i, d + 2, &p->w[day][d], e) < 0)
                st = METER_DB_HARD;
    }
    PQclear(r);
    return st < 0 ? st : METER_DB_ROWS;
}

enum meter_db_status
db_revenue_negate(PGconn *db, const char *account, int64_t note, int64_t voided,
                  struct meter_err *e)
{
    struct db_params v = {0};
    db_param_text(&v, account);
    db_param_int64(&v, note);
    db_param_int64(&v, voided);
    return meter_db_exec(
        db, "cannot store the credit note's revenue",
        "INSERT INTO invoice_revenue (account_id, invoice_id, day, kind,"
        " price_book_id, version, amount)"
        " SELECT account_id, $2::bigint, day, kind, price_book_id, version,"
        " -amount FROM invoice_revenue WHERE account_id = $1"
        " AND invoice_id = $3::bigint",
        v.n, v.v, NULL, NULL, NULL, e);
}
