/*
 * reports.c - what finance's dashboards show, each report one statement
 * that PostgreSQL answers as one JSON document: the body of GET
 * /v1/reports/..., and what the pages render (so a page cannot show
 * another number than its JSON). They read the rollups, merged
 * (usage_hourly_totals, usage_merge.c), and the documents' revenue by
 * day (invoice_revenue), never a block of samples. Amounts are decimal
 * strings in the minor unit of their currency, per currency.
 *
 * The rollups are read through fleet_hourly_totals and fleet_hourly
 * (fleet.c, migration 0018): this database's own on one server, every
 * shard's through postgres_fdw over shards. Every sum of them groups by
 * part (over shards the bucket, the partitions' key; 0 on one server)
 * and the account first, so that each shard sums its own rows and sends
 * the sums (tests/test_fleet_reads.c
 * checks each statement's plan); sums over accounts are taken after.
 */
#include "db_int.h"

#include <string.h>

#include <jansson.h>

/* The period, the next and the one before, and the period's hours
 * [hour_lo, hour_hi): what the statements take as parameters. */
struct bounds {
    int year, month, ny, nm, py, pm;
    int64_t hour_lo, hour_hi;
};

static void
bounds_of(int year, int month, struct bounds *b)
{
    b->year = year;
    b->month = month;
    b->ny = month == 12 ? year + 1 : year;
    b->nm = month == 12 ? 1 : month + 1;
    b->py = month == 1 ? year - 1 : year;
    b->pm = month == 1 ? 12 : month - 1;
    b->hour_lo = db_period_start(year, month) / 3600;
    b->hour_hi = db_period_end(year, month) / 3600;
}

/* The period's first day and the next period's, as parameters. */
static void
param_first_next(struct db_params *p, const struct bounds *b)
{
    db_param_period(p, b->year, b->month);
    db_param_period(p, b->ny, b->nm);
}

/* The period's hours, as parameters. */
static void
param_hours(struct db_params *p, const struct bounds *b)
{
    db_param_int64(p, b->hour_lo);
    db_param_int64(p, b->hour_hi);
}

static meter_db_report_hook *report_hook;
static void *report_hook_arg;

void
meter_db_report_hook_set(meter_db_report_hook *fn, void *arg)
{
    report_hook = fn;
    report_hook_arg = arg;
}

/* Runs sql, whose one row and column is a JSON document, into *out:
 * over the fleet relations as built for the shard map (built again
 * first if it changed), in a read-only transaction where each shard
 * sums its own rows: the statements group by part (the partitions'
 * key) and account first. */
static enum meter_db_status
report(PGconn *db, const char *what, const char *sql, int n,
       const char *const *v, json_t **out, struct meter_err *e)
{
    *out = NULL;
    PGresult *r = NULL;
    enum meter_db_status st = db_fleet_ready(db, e);
    if (st >= 0)
        st = meter_db_exec(db, "cannot begin a transaction", "BEGIN READ ONLY",
                           0, NULL, NULL, NULL, NULL, e);
    if (st < 0)
        return st;
    st = meter_db_exec(db, "cannot set up the report",
                       "SET LOCAL enable_partitionwise_aggregate = on", 0, NULL,
                       NULL, NULL, NULL, e);
    if (st >= 0 && report_hook)
        report_hook(db, sql, n, v, report_hook_arg);
    else if (st >= 0)
        st = meter_db_exec(db, what, sql, n, v, NULL, NULL, &r, e);
    enum meter_db_status done =
        st < 0 ? st
               : meter_db_exec(db, "cannot commit", "COMMIT", 0, NULL, NULL,
                               NULL, NULL, e);
    if (done < 0)
        st = done;
    if (PQtransactionStatus(db) == PQTRANS_INTRANS ||
        PQtransactionStatus(db) == PQTRANS_INERROR)
        PQclear(PQexec(db, "ROLLBACK"));
    if (st < 0 || !r) {
        PQclear(r);
        return st < 0 ? st : METER_DB_NONE; /* NONE: the hook had it */
    }
    json_error_t je;
    *out = json_loads(PQgetvalue(r, 0, 0), JSON_DECODE_ANY, &je);
    PQclear(r);
    if (!*out)
        return db_hard(e, "%s: the database's JSON does not parse: %s", what,
                       je.text);
    return METER_DB_ROWS;
}

/* A document's amounts as revenue: every document counts, so a void
 * invoice and its credit note cancel out, and a period's draft counts
 * until it is final (then it is the final invoice). */
#define REVENUE                                                                \
    " invoice_revenue r JOIN invoices i USING (account_id, invoice_id)"

/* What the period leaves unbilled (docs/dashboards.md), for the period
 * starting on date parameter P, of the accounts where W (a condition on
 * g.account_id): usage stored for hours its account was on no price
 * book, and the accounts whose draft the last invoice run could not
 * compute, each with why. A gap's rollups are read by account and hour,
 * the account's bucket's shard answering. */
#define NOT_BILLED(P, W)                                                       \
    "json_build_object("                                                       \
    " 'no_book', coalesce((SELECT json_agg(json_build_object("                 \
    "  'account_id', g.account_id, 'name', a.name, 'samples', u.samples,"      \
    "  'from', to_char(to_timestamp(u.lo * 3600) AT TIME ZONE 'UTC',"          \
    "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"                                     \
    "  'to', to_char(to_timestamp((u.hi + 1) * 3600) AT TIME ZONE 'UTC',"      \
    "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"                                     \
    "  'why', CASE WHEN g.first_book IS NULL THEN 'on no price book'"          \
    "  ELSE 'on no price book before ' || to_char(g.first_book,"               \
    "  'YYYY-MM-DD') END) ORDER BY g.account_id)"                              \
    "  FROM unbilled_gaps(" P "::date) g JOIN accounts a"                      \
    "  ON a.account_pk = g.account_pk CROSS JOIN LATERAL"                      \
    "  (SELECT sum(s) AS samples, min(lo) AS lo, max(hi) AS hi FROM"           \
    "  (SELECT sum(h.samples) AS s, min(h.hour) AS lo, max(h.hour) AS hi"      \
    "  FROM fleet_hourly_totals h WHERE h.account_pk = g.account_pk"           \
    "  AND h.hour >= g.lo AND h.hour < g.hi GROUP BY h.part, h.account_pk)"    \
    "  x) u WHERE u.samples > 0 AND " W "), '[]'),"                            \
    " 'run_failed', coalesce((SELECT json_agg(json_build_object("              \
    "  'account_id', g.account_id, 'name', a.name, 'why', g.error,"            \
    "  'at', to_char(g.failed_at AT TIME ZONE 'UTC',"                          \
    "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')) ORDER BY g.account_id)"              \
    "  FROM invoice_run_failures g JOIN accounts a USING (account_id)"         \
    "  WHERE g.period = " P "::date AND " W "), '[]'))"

enum meter_db_status
meter_db_report_overview(PGconn *db, int year, int month, int64_t now,
                         json_t **out, struct meter_err *e)
{
    struct bounds b;
    bounds_of(year, month, &b);
    /* Days of the period so far: all of it once it is over. */
    int64_t start = db_period_start(year, month),
            end = db_period_end(year, month);
    int64_t elapsed = now < start  ? 0
                      : now >= end ? (end - start) / 86400
                                   : (now - start) / 86400 + 1;
    struct db_params p = {0};
    param_first_next(&p, &b);
    db_param_period(&p, b.py, b.pm);
    db_param_int64(&p, elapsed);
    db_param_int64(&p, now);
    enum meter_db_status st = report(
        db, "cannot read the overview",
        "WITH rev AS (SELECT r.day, r.account_id, r.kind, r.price_book_id,"
        "  r.version, r.amount, i.currency FROM" REVENUE
        "  WHERE r.day >= $3::date AND r.day < $2::date),"
        /* The period so far: a draft spreads its fees over every day of
         * the period, those to come too (the period's whole). */
        " whole AS (SELECT * FROM rev WHERE day >= $1::date),"
        " cur AS (SELECT * FROM whole WHERE day < $1::date + $4::int),"
        " prev AS (SELECT * FROM rev WHERE day < $1::date),"
        " currencies AS (SELECT DISTINCT currency FROM rev),"
        " idle AS (SELECT sum(u.running_s) AS running_s,"
        "  sum(u.idle_s) AS idle_s FROM (SELECT DISTINCT ON (u.account_id)"
        "  u.running_s, u.idle_s FROM invoice_usage u"
        "  WHERE u.period = $1::date AND u.running_s IS NOT NULL"
        "  ORDER BY u.account_id, u.seq DESC) u)"
        " SELECT json_build_object("
        "  'period', to_char($1::date, 'YYYY-MM'),"
        "  'previous_period', to_char($3::date, 'YYYY-MM'),"
        "  'days_elapsed', $4::int,"
        "  'as_of', to_char(to_timestamp($5::bigint) AT TIME ZONE 'UTC',"
        "   'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        "  'revenue', coalesce((SELECT json_agg(json_build_object("
        "   'currency', c.currency,"
        "   'period_to_date', (SELECT coalesce(sum(amount), 0)::text FROM cur"
        "    WHERE currency = c.currency),"
        "   'period_total', (SELECT coalesce(sum(amount), 0)::text FROM whole"
        "    WHERE currency = c.currency),"
        "   'previous_to_date', (SELECT coalesce(sum(amount), 0)::text"
        "    FROM prev WHERE currency = c.currency"
        "    AND day < $3::date + $4::int),"
        "   'previous_period', (SELECT coalesce(sum(amount), 0)::text"
        "    FROM prev WHERE currency = c.currency))"
        "   ORDER BY c.currency) FROM currencies c), '[]'),"
        "  'revenue_by_day', coalesce((SELECT json_agg(json_build_object("
        "   'day', to_char(day, 'YYYY-MM-DD'), 'currency', currency,"
        "   'period', CASE WHEN day >= $1::date THEN 'current'"
        "    ELSE 'previous' END, 'amount', amount::text)"
        "   ORDER BY day, currency) FROM (SELECT day, currency, sum(amount)"
        "   AS amount FROM (SELECT * FROM prev UNION ALL SELECT * FROM cur) r"
        "   GROUP BY 1, 2) d), '[]'),"
        "  'revenue_by_book', coalesce((SELECT json_agg(json_build_object("
        "   'price_book_id', price_book_id, 'version', version,"
        "   'currency', currency, 'amount', amount::text)"
        "   ORDER BY amount DESC, price_book_id, version) FROM"
        "   (SELECT price_book_id, version, currency, sum(amount) AS amount"
        "   FROM cur GROUP BY 1, 2, 3) x), '[]'),"
        "  'revenue_by_model', coalesce((SELECT json_agg(json_build_object("
        "   'model', model, 'currency', currency, 'amount', amount::text)"
        "   ORDER BY amount DESC, model) FROM (SELECT pricing_model(c.kind,"
        "   (b.book->>'granularity_s')::int) AS model, c.currency,"
        "   sum(c.amount) AS amount FROM cur c LEFT JOIN price_books b"
        "   USING (price_book_id, version) GROUP BY 1, 2) x), '[]'),"
        "  'top_accounts', coalesce((SELECT json_agg(json_build_object("
        "   'account_id', account_id, 'name', name, 'currency', currency,"
        "   'amount', amount::text) ORDER BY currency, amount DESC,"
        "   account_id) FROM (SELECT *, row_number() OVER (PARTITION BY"
        "   currency ORDER BY amount DESC, account_id) AS n FROM"
        "   (SELECT c.account_id, a.name, c.currency, sum(c.amount) AS amount"
        "   FROM cur c JOIN accounts a USING (account_id) GROUP BY 1, 2, 3) t)"
        "   x WHERE n <= 10), '[]'),"
        "  'autopause_credit', coalesce((SELECT json_agg(json_build_object("
        "   'currency', currency, 'amount', amount::text) ORDER BY currency)"
        "   FROM (SELECT currency, sum(amount) AS amount FROM cur"
        "   WHERE kind = 'autopause_credit' GROUP BY 1) x), '[]'),"
        "  'idle', (SELECT json_build_object('running_s',"
        "   coalesce(running_s, 0), 'idle_s', coalesce(idle_s, 0),"
        "   'idle_share', CASE WHEN running_s > 0 THEN"
        "   round(idle_s::numeric / running_s, 4)::text END) FROM idle),"
        "  'ingested_per_minute', coalesce((SELECT json_agg(json_build_object("
        "   'minute', to_char(m AT TIME ZONE 'UTC',"
        "   'YYYY-MM-DD\"T\"HH24:MI\"Z\"'), 'samples', s) ORDER BY m) FROM"
        "   (SELECT m, sum(s) AS s FROM (SELECT h.part,"
        /* the UTC minute, as date_trunc's; but immutable, so a shard
         * computes it */
        "   date_bin('1 minute', h.added_at, to_timestamp(0)) AS m,"
        "   sum(h.samples) AS s FROM fleet_hourly h"
        "   WHERE h.added_at >= to_timestamp($5::bigint - 3600)"
        "   AND h.added_at < to_timestamp($5::bigint + 60) GROUP BY 1, 2) per"
        "   GROUP BY 1) x), '[]'))",
        p.n, p.v, out, e);
    json_t *nb = NULL;
    if (st >= 0 && *out)
        st = meter_db_not_billed(db, year, month, &nb, e);
    if (st >= 0 && *out) {
        json_object_set_new(*out, "not_billed", nb);
    } else if (st < 0) {
        json_decref(*out);
        *out = NULL;
    }
    return st;
}

enum meter_db_status
meter_db_not_billed(PGconn *db, int year, int month, json_t **out,
                    struct meter_err *e)
{
    struct db_params p = {0};
    db_param_period(&p, year, month);
    return report(db, "cannot read what the period leaves unbilled",
                  "SELECT " NOT_BILLED("$1", "true"), p.n, p.v, out, e);
}

enum meter_db_status
meter_db_report_accounts(PGconn *db, const struct meter_report_query *q,
                         json_t **out, struct meter_err *e)
{
    struct bounds b;
    bounds_of(q->year, q->month, &b);
    struct db_params p = {0};
    param_first_next(&p, &b);
    param_hours(&p, &b);
    db_param_text(&p, q->search ? q->search : "");
    db_param_text(&p, q->sort);
    db_param_bool(&p, q->descending);
    db_param_int32(&p, q->per_page);
    db_param_int32(&p, (q->page - 1) * q->per_page);
    /* The sort column is a parameter: one CASE per column and direction,
     * so the statement's text never changes (scripts/check-sql.sh). */
    return report(
        db, "cannot read the accounts",
        "WITH acc AS (SELECT a.account_id, a.account_pk, a.name"
        "  FROM accounts a WHERE $5 = ''"
        "  OR strpos(lower(a.account_id), lower($5)) > 0"
        "  OR strpos(lower(coalesce(a.name, '')), lower($5)) > 0),"
        " rev AS (SELECT r.account_id, i.currency, sum(r.amount) AS amount"
        "  FROM" REVENUE " WHERE r.day >= $1::date AND r.day < $2::date"
        "  GROUP BY 1, 2),"
        " use AS (SELECT h.account_pk, sum(h.vcpu_s) AS v,"
        "  sum(h.mem_byte_s) AS m FROM fleet_hourly_totals h"
        "  WHERE h.hour >= $3::bigint AND h.hour < $4::bigint"
        "  GROUP BY h.part, h.account_pk),"
        " book AS (SELECT DISTINCT ON (p.account_id) p.account_id,"
        "  p.price_book_id, p.version FROM account_price_books p"
        "  WHERE p.valid_from < $2::date"
        "  ORDER BY p.account_id, p.valid_from DESC),"
        " rows AS (SELECT acc.account_id, acc.name, book.price_book_id,"
        "  book.version, rev.currency, coalesce(rev.amount, 0) AS revenue,"
        "  round(coalesce(use.v, 0) / 3600, 3) AS vcpu_hours,"
        "  round(coalesce(use.m, 0) / 3865470566400, 3) AS gib_hours"
        "  FROM acc LEFT JOIN rev USING (account_id)"
        "  LEFT JOIN use USING (account_pk) LEFT JOIN book USING (account_id))"
        " SELECT json_build_object("
        "  'period', to_char($1::date, 'YYYY-MM'),"
        "  'as_of', to_char(now() AT TIME ZONE 'UTC',"
        "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        "  'total', (SELECT count(*) FROM rows),"
        "  'items', coalesce((SELECT json_agg(json_build_object("
        "   'account_id', account_id, 'name', name,"
        "   'price_book_id', price_book_id, 'version', version,"
        "   'currency', currency, 'revenue', revenue::text,"
        "   'vcpu_hours', vcpu_hours::text, 'gib_hours', gib_hours::text)"
        "   ORDER BY n) FROM (SELECT *, row_number() OVER (ORDER BY"
        "   CASE WHEN $6 = 'account' AND NOT $7::bool THEN account_id END,"
        "   CASE WHEN $6 = 'account' AND $7::bool THEN account_id END DESC,"
        "   CASE WHEN $6 = 'name' AND NOT $7::bool THEN name END,"
        "   CASE WHEN $6 = 'name' AND $7::bool THEN name END DESC,"
        "   CASE WHEN $6 = 'book' AND NOT $7::bool THEN price_book_id END,"
        "   CASE WHEN $6 = 'book' AND $7::bool THEN price_book_id END DESC,"
        "   CASE WHEN $6 = 'revenue' AND NOT $7::bool THEN revenue END,"
        "   CASE WHEN $6 = 'revenue' AND $7::bool THEN revenue END DESC,"
        "   CASE WHEN $6 = 'vcpu_hours' AND NOT $7::bool THEN vcpu_hours END,"
        "   CASE WHEN $6 = 'vcpu_hours' AND $7::bool THEN vcpu_hours END DESC,"
        "   CASE WHEN $6 = 'gib_hours' AND NOT $7::bool THEN gib_hours END,"
        "   CASE WHEN $6 = 'gib_hours' AND $7::bool THEN gib_hours END DESC,"
        "   account_id, currency) AS n FROM rows"
        "   ORDER BY n LIMIT $8::int OFFSET $9::int) x), '[]'))",
        p.n, p.v, out, e);
}

enum meter_db_status
meter_db_report_account(PGconn *db, const char *account, int year, int month,
                        json_t **out, struct meter_err *e)
{
    struct bounds b;
    bounds_of(year, month, &b);
    struct db_params p = {0};
    db_param_text(&p, account);
    param_first_next(&p, &b);
    param_hours(&p, &b);
    enum meter_db_status st = report(
        db, "cannot read the account",
        "WITH a AS (SELECT * FROM accounts WHERE account_id = $1)"
        " SELECT CASE WHEN NOT EXISTS (SELECT 1 FROM a) THEN 'null'::json"
        " ELSE json_build_object("
        "  'account_id', (SELECT account_id FROM a),"
        "  'name', (SELECT name FROM a),"
        "  'period', to_char($2::date, 'YYYY-MM'),"
        "  'as_of', to_char(now() AT TIME ZONE 'UTC',"
        "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        "  'price_books', coalesce((SELECT json_agg(json_build_object("
        "   'valid_from', to_char(p.valid_from, 'YYYY-MM-DD'),"
        "   'price_book_id', p.price_book_id, 'version', p.version)"
        "   ORDER BY p.valid_from) FROM account_price_books p"
        "   WHERE p.account_id = $1), '[]'),"
        "  'usage_by_day', coalesce((SELECT json_agg(json_build_object("
        "   'day', to_char(to_timestamp(d * 86400) AT TIME ZONE 'UTC',"
        "   'YYYY-MM-DD'), 'samples', s,"
        "   'running_hours', round(r / 3600.0, 3)::text,"
        "   'vcpu_hours', round(v / 3600, 3)::text,"
        "   'gib_hours', round(m / 3865470566400, 3)::text,"
        "   'storage_gib_hours', round(k / 3865470566400, 3)::text,"
        "   'egress_gb', round(x / 1e9, 3)::text) ORDER BY d)"
        "   FROM (SELECT h.hour / 24 AS d, sum(h.samples) AS s,"
        "   sum(h.running_s) AS r, sum(h.vcpu_s) AS v, sum(h.mem_byte_s) AS m,"
        "   sum(h.disk_byte_s) AS k, sum(h.egress_bytes) AS x"
        "   FROM fleet_hourly_totals h WHERE h.account_pk ="
        "   (SELECT account_pk FROM a) AND h.hour >= $4::bigint"
        /* one account: one bucket */
        "   AND h.hour < $5::bigint GROUP BY h.part, 1) u), '[]'),"
        "  'revenue_by_day', coalesce((SELECT json_agg(json_build_object("
        "   'day', to_char(day, 'YYYY-MM-DD'), 'currency', currency,"
        "   'amount', amount::text) ORDER BY day, currency) FROM"
        "   (SELECT r.day, i.currency, sum(r.amount) AS amount FROM" REVENUE
        "   WHERE r.account_id = $1 AND r.day >= $2::date"
        "   AND r.day < $3::date GROUP BY 1, 2) x), '[]'),"
        "  'estimate', (SELECT json_build_object('invoice_id', i.invoice_id,"
        "   'period', to_char(i.period, 'YYYY-MM'), 'currency', i.currency,"
        "   'total', i.total::text, 'as_of', to_char(i.created_at AT TIME ZONE"
        "   'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')) FROM invoices i"
        "   WHERE i.account_id = $1 AND i.period = $2::date"
        "   AND i.status = 'draft' AND i.kind = 'invoice'"
        /* the period's own; late usage in another currency has its own
         * draft, written after it (docs/invoicing.md) */
        "   ORDER BY i.invoice_id LIMIT 1),"
        "  'invoices', coalesce((SELECT json_agg(json_build_object("
        "   'invoice_id', i.invoice_id, 'number', i.number, 'kind', i.kind,"
        "   'ref', coalesce(i.number, i.invoice_id::text),"
        "   'status', CASE WHEN EXISTS (SELECT 1 FROM invoices c"
        "    WHERE c.account_id = i.account_id AND c.voids = i.invoice_id"
        "    AND c.status = 'final') THEN 'void' ELSE i.status END,"
        "   'period', to_char(i.period, 'YYYY-MM'), 'currency', i.currency,"
        "   'total', i.total::text) ORDER BY i.period DESC, i.invoice_id DESC)"
        "   FROM invoices i WHERE i.account_id = $1), '[]'),"
        "  'not_billed', " NOT_BILLED("$2", "g.account_id = $1") ")"
                                                                 " END",
        p.n, p.v, out, e);
    if (st >= 0 && json_is_null(*out)) {
        json_decref(*out);
        *out = NULL;
        return METER_DB_NONE;
    }
    return st;
}

enum meter_db_status
meter_db_report_usage(PGconn *db, int64_t from, int64_t to, bool daily,
                      json_t **out, struct meter_err *e)
{
    struct db_params p = {0};
    db_param_int64(&p, from / 3600);
    db_param_int64(&p, to / 3600);
    db_param_int32(&p, daily ? 24 : 1);
    return report(
        db, "cannot read the fleet's usage",
        "SELECT json_build_object('granularity', CASE WHEN $3::int = 24"
        "  THEN 'day' ELSE 'hour' END,"
        " 'as_of', to_char(now() AT TIME ZONE 'UTC',"
        "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        " 'from', to_char(to_timestamp($1::bigint * 3600) AT TIME ZONE 'UTC',"
        "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        " 'to', to_char(to_timestamp($2::bigint * 3600) AT TIME ZONE 'UTC',"
        "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        " 'items', coalesce(json_agg(json_build_object("
        "  'start', to_char(to_timestamp(b * 3600) AT TIME ZONE 'UTC',"
        "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), 'accounts', n, 'samples', s,"
        "  'running_hours', round(r / 3600.0, 3)::text,"
        "  'vcpu_hours', round(v / 3600, 3)::text,"
        "  'gib_hours', round(m / 3865470566400, 3)::text,"
        "  'storage_gib_hours', round(k / 3865470566400, 3)::text,"
        "  'egress_gb', round(x / 1e9, 3)::text) ORDER BY b), '[]'))"
        /* By account and hour or day first (a hash of a few thousand
         * groups; on each shard), then by hour or day: a
         * count(DISTINCT) beside the sums sorted every row (to disk, on
         * a fleet-day). */
        " FROM (SELECT b, count(*) AS n, sum(s) AS s, sum(r) AS r,"
        "  sum(v) AS v, sum(m) AS m, sum(k) AS k, sum(x) AS x FROM"
        "  (SELECT h.hour / $3::int * $3::int AS b, h.account_pk,"
        "  sum(h.samples) AS s, sum(h.running_s) AS r, sum(h.vcpu_s) AS v,"
        "  sum(h.mem_byte_s) AS m, sum(h.disk_byte_s) AS k,"
        "  sum(h.egress_bytes) AS x FROM fleet_hourly_totals h"
        "  WHERE h.hour >= $1::bigint AND h.hour < $2::bigint"
        "  GROUP BY h.part, 2, 1)"
        "  per GROUP BY 1) u",
        p.n, p.v, out, e);
}

enum meter_db_status
meter_db_report_invoices(PGconn *db, const struct meter_report_invoices *q,
                         json_t **out, struct meter_err *e)
{
    struct db_params p = {0};
    db_param_text(&p, q->account);
    if (q->year)
        db_param_period(&p, q->year, q->month);
    else
        db_param_text(&p, NULL);
    db_param_text(&p, q->status);
    db_param_int32(&p, q->per_page);
    db_param_int32(&p, (q->page - 1) * q->per_page);
    return report(
        db, "cannot read the invoices",
        "WITH d AS (SELECT i.*, CASE WHEN EXISTS (SELECT 1 FROM invoices c"
        "  WHERE c.account_id = i.account_id AND c.voids = i.invoice_id"
        "  AND c.status = 'final') THEN 'void' ELSE i.status END AS shown"
        "  FROM invoices i WHERE ($1::text IS NULL OR i.account_id = $1::text)"
        "  AND ($2::date IS NULL OR i.period = $2::date)),"
        " rows AS (SELECT * FROM d WHERE $3::text IS NULL OR shown = $3::text)"
        " SELECT json_build_object("
        "  'as_of', to_char(now() AT TIME ZONE 'UTC',"
        "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
        "  'total', (SELECT count(*) FROM rows),"
        "  'items', coalesce((SELECT json_agg(json_build_object("
        "   'invoice_id', invoice_id,"
        "   'ref', coalesce(number, invoice_id::text), 'number', number,"
        "   'account_id', account_id, 'account_name', account_name,"
        "   'kind', kind, 'status', shown,"
        "   'period', to_char(period, 'YYYY-MM'), 'currency', currency,"
        "   'total', total::text,"
        "   'finalized_at', to_char(finalized_at AT TIME ZONE 'UTC',"
        "   'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')) ORDER BY period DESC,"
        "   invoice_id DESC) FROM (SELECT * FROM rows"
        "   ORDER BY period DESC, invoice_id DESC"
        "   LIMIT $4::int OFFSET $5::int) x), '[]'))",
        p.n, p.v, out, e);
}
