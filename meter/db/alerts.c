/*
 * alerts.c - usage alerts and spend limits (migration 0023,
 * docs/alerts.md): rules, their evaluation over the period's rollups,
 * and the crossings, each raised once per period with an
 * alert.triggered event in the same transaction.
 *
 * A rule's value is the period's running amount, estimated from the
 * merged rollups' sums and the account's book today (pricing_estimate),
 * or a quantity of the period's usage. The sums are the period's rows
 * of fleet_period_totals (migration 0024: a row an account once
 * merged), read in one statement that groups by part and account, so
 * that over shards each shard sums its own accounts (reports.c's way).
 */
#include "db_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The second key of the evaluation's lock, in DB_LOCK_QUARANTINE's
 * class: one evaluation at a time over every meterd. */
#define ALERTS_LOCK "3"

enum metric {
    M_AMOUNT,
    M_VCPU,
    M_GIB,
    M_STORAGE,
    M_EGRESS,
    M_RUNNING,
    NMETRICS
};
static const char *const metric_names[NMETRICS] = {
    "amount",    "vcpu_hours",   "gib_hours", "storage_gib_hours",
    "egress_gb", "running_hours"};

struct rule {
    int64_t id;
    char account[PRICING_ID_MAX + 1]; /* "": every account */
    char name[201];
    enum metric metric;
    struct pricing_dec threshold;
    char threshold_s[48];
    char currency[4];
    int percents[10];
    size_t npercents;
};

/* One account's sums of the period and its book today. */
struct usage {
    char account[PRICING_ID_MAX + 1];
    struct pricing_totals t;
    struct pricing_dec q[NMETRICS]; /* the quantities, 6 decimals */
    char book[PRICING_ID_MAX + 1];  /* "": on none */
    int version;
};

/* ---- reading --------------------------------------------------------------
 */

static int
parse_percents(const char *s, struct rule *r)
{
    /* "{80,100}" */
    r->npercents = 0;
    for (const char *p = s + 1; *p && *p != '}' && r->npercents < 10;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 1000)
            return -1;
        r->percents[r->npercents++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    return r->npercents ? 0 : -1;
}

static enum meter_db_status
read_rules(PGconn *db, const char *account, struct rule **out, size_t *n,
           struct meter_err *e)
{
    const char *v[] = {account};
    PGresult *r = NULL;
    *out = NULL;
    *n = 0;
    enum meter_db_status st = meter_db_exec(
        db, "cannot read the alert rules",
        "SELECT rule_id, coalesce(account_id, ''), name, metric,"
        " threshold::text, coalesce(currency, ''), percents::text"
        " FROM alert_rules WHERE removed_at IS NULL"
        " AND ($1::text IS NULL OR account_id IS NULL OR account_id = $1)"
        " ORDER BY rule_id",
        1, v, NULL, NULL, &r, e);
    int rows = st >= 0 ? PQntuples(r) : 0;
    if (rows && !(*out = calloc((size_t)rows, sizeof(**out))))
        st = db_hard(e, "out of memory");
    for (int i = 0; st >= 0 && i < rows; i++) {
        struct rule *x = &(*out)[i];
        if (db_get_int64(r, i, 0, &x->id, e) < 0)
            st = METER_DB_HARD;
        snprintf(x->account, sizeof(x->account), "%s", PQgetvalue(r, i, 1));
        snprintf(x->name, sizeof(x->name), "%s", PQgetvalue(r, i, 2));
        x->metric = NMETRICS;
        for (int m = 0; m < NMETRICS; m++)
            if (strcmp(PQgetvalue(r, i, 3), metric_names[m]) == 0)
                x->metric = (enum metric)m;
        snprintf(x->threshold_s, sizeof(x->threshold_s), "%s",
                 PQgetvalue(r, i, 4));
        snprintf(x->currency, sizeof(x->currency), "%s", PQgetvalue(r, i, 5));
        if (st >= 0 && (x->metric == NMETRICS ||
                        pricing_dec_parse(x->threshold_s, 6, &x->threshold) !=
                            PRICING_OK ||
                        parse_percents(PQgetvalue(r, i, 6), x) < 0))
            st = db_hard(e, "alert rule %lld does not read back",
                         (long long)x->id);
    }
    PQclear(r);
    if (st < 0) {
        free(*out);
        *out = NULL;
        return st;
    }
    *n = (size_t)rows;
    return rows ? METER_DB_ROWS : METER_DB_NONE;
}

/* A numeric's text, an integer, into a u128. */
static int
u128_of(const char *s, pricing_u128 *out)
{
    pricing_u128 v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (((pricing_u128)-1) - 9) / 10)
            return -1;
        v = v * 10 + (pricing_u128)(*s - '0');
    }
    *out = v;
    return 0;
}

/* The period's sums of the accounts the rules watch (account only, if
 * not NULL) with their book on day today. */
static enum meter_db_status
read_usage(PGconn *db, int year, int month, const char *today,
           const char *account, struct usage **out, size_t *n,
           struct meter_err *e)
{
    *out = NULL;
    *n = 0;
    enum meter_db_status st = db_fleet_ready(db, e);
    if (st < 0)
        return st;
    struct db_params p = {0};
    db_param_period(&p, year, month);
    db_param_text(&p, today);
    db_param_text(&p, account);
    PGresult *r = NULL;
    st = meter_db_exec(
        db, "cannot read the usage the alerts watch",
        "WITH u AS (SELECT h.account_pk, sum(h.samples) AS s,"
        "  sum(h.running_s) AS r, sum(h.vcpu_s) AS v, sum(h.cpu_used_s) AS c,"
        "  sum(h.mem_byte_s) AS m, sum(h.mem_used_byte_s) AS mu,"
        "  sum(h.disk_byte_s) AS d, sum(h.egress_bytes) AS x"
        "  FROM fleet_period_totals h WHERE h.period = $1::date"
        "  GROUP BY h.part, h.account_pk),"
        " t AS (SELECT account_pk, sum(s) AS s, sum(r) AS r, sum(v) AS v,"
        "  sum(c) AS c, sum(m) AS m, sum(mu) AS mu, sum(d) AS d, sum(x) AS x"
        "  FROM u GROUP BY account_pk)"
        /* The one account asked for is answered without usage too. */
        " SELECT a.account_id, coalesce(t.s, 0), coalesce(t.r, 0),"
        "  trunc(coalesce(t.v, 0) * 10000)::text,"
        "  trunc(coalesce(t.c, 0) * 10000)::text, trunc(coalesce(t.m, "
        "0))::text,"
        "  trunc(coalesce(t.mu, 0))::text, trunc(coalesce(t.d, 0))::text,"
        "  trunc(coalesce(t.x, 0))::text,"
        "  trunc(coalesce(t.v, 0) / 3600, 6)::text,"
        "  trunc(coalesce(t.m, 0) / 3865470566400, 6)::text,"
        "  trunc(coalesce(t.d, 0) / 3865470566400, 6)::text,"
        "  trunc(coalesce(t.x, 0) / 1e9, 6)::text,"
        "  trunc(coalesce(t.r, 0) / 3600.0, 6)::text,"
        "  coalesce(b.price_book_id, ''), coalesce(b.version, 0)"
        " FROM accounts a LEFT JOIN t USING (account_pk)"
        " LEFT JOIN LATERAL (SELECT p.price_book_id, p.version"
        "  FROM account_price_books p WHERE p.account_id = a.account_id"
        "  AND p.valid_from <= $2::date ORDER BY p.valid_from DESC LIMIT 1) b"
        "  ON true"
        " WHERE ($3::text IS NULL AND t.account_pk IS NOT NULL"
        "  AND EXISTS (SELECT 1 FROM alert_rules r"
        "  WHERE r.removed_at IS NULL AND (r.account_id IS NULL"
        "  OR r.account_id = a.account_id))) OR a.account_id = $3"
        " ORDER BY a.account_id",
        p.n, p.v, NULL, NULL, &r, e);
    int rows = st >= 0 ? PQntuples(r) : 0;
    if (rows && !(*out = calloc((size_t)rows, sizeof(**out))))
        st = db_hard(e, "out of memory");
    for (int i = 0; st >= 0 && i < rows; i++) {
        struct usage *u = &(*out)[i];
        snprintf(u->account, sizeof(u->account), "%s", PQgetvalue(r, i, 0));
        snprintf(u->book, sizeof(u->book), "%s", PQgetvalue(r, i, 14));
        int bad = db_get_uint64(r, i, 1, &u->t.samples, e) < 0 ||
                  db_get_uint64(r, i, 2, &u->t.running_s, e) < 0 ||
                  u128_of(PQgetvalue(r, i, 3), &u->t.vcpu) < 0 ||
                  u128_of(PQgetvalue(r, i, 4), &u->t.cpu_used) < 0 ||
                  u128_of(PQgetvalue(r, i, 5), &u->t.mem_byte_s) < 0 ||
                  u128_of(PQgetvalue(r, i, 6), &u->t.mem_used_byte_s) < 0 ||
                  u128_of(PQgetvalue(r, i, 7), &u->t.disk_byte_s) < 0 ||
                  u128_of(PQgetvalue(r, i, 8), &u->t.egress_bytes) < 0 ||
                  db_get_int(r, i, 15, &u->version, e) < 0;
        for (int m = M_VCPU; !bad && m < NMETRICS; m++)
            bad = pricing_dec_parse(PQgetvalue(r, i, 9 + m - M_VCPU), 6,
                                    &u->q[m]) != PRICING_OK;
        if (bad)
            st = db_hard(e, "the usage of account '%s' does not read back",
                         u->account);
    }
    PQclear(r);
    if (st < 0) {
        free(*out);
        *out = NULL;
        return st;
    }
    *n = (size_t)rows;
    return st;
}

/* ---- evaluating ------------------------------------------------------------
 */

/* Books parsed once an evaluation. */
struct book_entry {
    char id[PRICING_ID_MAX + 1];
    int version;
    struct pricing_book *book;
    char error[512];
};
struct books {
    struct book_entry *v;
    size_t n, cap;
};

static void
books_release(struct books *b)
{
    for (size_t i = 0; i < b->n; i++)
        pricing_book_free(b->v[i].book);
    free(b->v);
    memset(b, 0, sizeof(*b));
}

/* Version version of book id: NULL with *why if it cannot be had. */
static const struct pricing_book *
book_of(PGconn *db, struct books *b, const char *id, int version,
        const char **why)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->v[i].version == version && strcmp(b->v[i].id, id) == 0) {
            *why = b->v[i].error;
            return b->v[i].book;
        }
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        struct book_entry *v = realloc(b->v, cap * sizeof(*v));
        if (!v) {
            *why = "out of memory";
            return NULL;
        }
        b->v = v;
        b->cap = cap;
    }
    size_t k = b->n++;
    snprintf(b->v[k].id, sizeof(b->v[k].id), "%s", id);
    b->v[k].version = version;
    b->v[k].book = NULL;
    struct db_params p = {0};
    db_param_text(&p, id);
    db_param_int32(&p, version);
    PGresult *r = NULL;
    struct meter_err e = {{0}};
    if (meter_db_exec(db, "cannot read the price book",
                      "SELECT book::text FROM price_books"
                      " WHERE price_book_id = $1 AND version = $2::int",
                      p.n, p.v, NULL, NULL, &r, &e) > 0) {
        struct pricing_err pe = {{0}};
        b->v[k].book = pricing_book_parse(
            PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0), id, &pe);
        snprintf(b->v[k].error, sizeof(b->v[k].error), "%s", pe.msg);
    } else {
        snprintf(b->v[k].error, sizeof(b->v[k].error), "%.500s",
                 e.msg[0] ? e.msg : "no such book");
    }
    PQclear(r);
    *why = b->v[k].error;
    return b->v[k].book;
}

/* Rule x's value for account u into *value: 1, or 0 (with why) when it
 * has none: an amount of an account on no book, on one in another
 * currency, or one the estimate cannot price. */
static int
rule_value(PGconn *db, struct books *bk, const struct rule *x,
           const struct usage *u, int year, int month,
           struct pricing_dec *value, char *why, size_t why_len)
{
    if (x->metric != M_AMOUNT) {
        *value = u->q[x->metric];
        return 1;
    }
    if (!u->book[0]) {
        snprintf(why, why_len, "on no price book");
        return 0;
    }
    const char *err;
    const struct pricing_book *b = book_of(db, bk, u->book, u->version, &err);
    if (!b) {
        snprintf(why, why_len, "price book '%s': %.80s", u->book, err);
        return 0;
    }
    if (strcmp(pricing_book_currency(b), x->currency) != 0) {
        snprintf(why, why_len, "its book '%s' is in %s", u->book,
                 pricing_book_currency(b));
        return 0;
    }
    struct pricing_err pe = {{0}};
    if (pricing_estimate(b, &u->t, year, month, value, &pe) < 0) {
        snprintf(why, why_len, "%.150s", pe.msg);
        return 0;
    }
    return 1;
}

/* Whether value is at least pct percent of threshold (exact). */
static bool
crossed(struct pricing_dec value, struct pricing_dec threshold, int pct)
{
    struct pricing_dec v100, lim;
    if (pricing_dec_mul_int(value, 100, &v100) != PRICING_OK)
        return true; /* beyond any threshold */
    if (pricing_dec_mul_int(threshold, pct, &lim) != PRICING_OK)
        return false;
    return pricing_dec_cmp(v100, lim) >= 0;
}

/* Whether rule x watches account. */
static bool
watches(const struct rule *x, const char *account)
{
    return !x->account[0] || strcmp(x->account, account) == 0;
}

struct crossing {
    const struct rule *rule;
    const char *account;
    int percent;
    char value[48];
};

/* Crossings in the order of their key: account, rule, percent. */
static int
by_key(const void *a, const void *b)
{
    const struct crossing *x = *(const struct crossing *const *)a,
                          *y = *(const struct crossing *const *)b;
    int c = strcmp(x->account, y->account);
    if (c)
        return c;
    if (x->rule->id != y->rule->id)
        return x->rule->id < y->rule->id ? -1 : 1;
    return (x->percent > y->percent) - (x->percent < y->percent);
}

/* Stores the crossings not raised yet in the period, in one statement,
 * then each new one's alert.triggered event: *raised counts them. */
static enum meter_db_status
raise_crossings(PGconn *db, const struct crossing *c, size_t n, int year,
                int month, int *raised, struct meter_err *e)
{
    if (n == 0)
        return METER_DB_NONE;
    struct meter_buf accts = {0}, rules = {0}, pcts = {0}, values = {0};
    meter_buf_str(&accts, "{");
    meter_buf_str(&rules, "{");
    meter_buf_str(&pcts, "{");
    meter_buf_str(&values, "{");
    for (size_t i = 0; i < n; i++) {
        db_array_text(&accts, c[i].account);
        db_array_int(&rules, c[i].rule->id);
        db_array_int(&pcts, c[i].percent);
        db_array_text(&values, c[i].value);
    }
    meter_buf_str(&accts, "}");
    meter_buf_str(&rules, "}");
    meter_buf_str(&pcts, "}");
    meter_buf_str(&values, "}");
    struct db_params p = {0};
    db_param_text(&p, accts.p);
    db_param_text(&p, rules.p);
    db_param_text(&p, pcts.p);
    db_param_text(&p, values.p);
    db_param_period(&p, year, month);
    PGresult *r = NULL;
    /* The new ones come back by their key, found again in c sorted. */
    enum meter_db_status st =
        accts.failed || rules.failed || pcts.failed || values.failed
            ? db_hard(e, "out of memory")
            : meter_db_exec(
                  db, "cannot record the alerts",
                  "INSERT INTO alert_crossings (account_id, rule_id, period,"
                  " percent, value) SELECT x.a, x.r, $5::date, x.p,"
                  " x.v::numeric FROM unnest($1::text[], $2::bigint[],"
                  " $3::int[], $4::text[]) AS x (a, r, p, v)"
                  " ON CONFLICT DO NOTHING"
                  " RETURNING account_id, rule_id, percent",
                  p.n, p.v, NULL, NULL, &r, e);
    meter_buf_release(&accts);
    meter_buf_release(&rules);
    meter_buf_release(&pcts);
    meter_buf_release(&values);
    char period[16];
    snprintf(period, sizeof(period), "%04d-%02d", year, month);
    const struct crossing **sorted = st > 0 ? calloc(n, sizeof(*sorted)) : NULL;
    if (st > 0 && !sorted)
        st = db_hard(e, "out of memory");
    for (size_t i = 0; sorted && i < n; i++)
        sorted[i] = &c[i];
    if (sorted)
        qsort(sorted, n, sizeof(*sorted), by_key);
    /* Their accounts' rows first, in id order: each account's events are
     * numbered in the order they commit (webhooks.c), as billing's. */
    if (st > 0) {
        struct meter_buf ids = {0};
        meter_buf_str(&ids, "{");
        for (int row = 0; row < PQntuples(r); row++)
            db_array_text(&ids, PQgetvalue(r, row, 0));
        meter_buf_str(&ids, "}");
        const char *v[] = {ids.p};
        st = ids.failed
                 ? db_hard(e, "out of memory")
                 : meter_db_exec(db, "cannot lock the alerts' accounts",
                                 "SELECT 1 FROM accounts"
                                 " WHERE account_id = ANY ($1::text[])"
                                 " ORDER BY account_id FOR NO KEY UPDATE",
                                 1, v, NULL, NULL, NULL, e);
        meter_buf_release(&ids);
        if (st >= 0)
            st = METER_DB_ROWS;
    }
    for (int row = 0; st > 0 && row < PQntuples(r); row++) {
        struct crossing key = {.account = PQgetvalue(r, row, 0)};
        struct rule kr;
        const struct crossing *kp = &key, **found = NULL;
        key.rule = &kr;
        if (db_get_int64(r, row, 1, &kr.id, e) == 0 &&
            db_get_int(r, row, 2, &key.percent, e) == 0)
            found = bsearch(&kp, sorted, n, sizeof(*sorted), by_key);
        if (!found) {
            st = db_hard(e, "a crossing stored is none of those raised");
            break;
        }
        const struct crossing *x = *found;
        const struct rule *rule = x->rule;
        json_t *payload = json_pack(
            "{s:I, s:s, s:s, s:s, s:s, s:i, s:s, s:s?, s:s}", "rule_id",
            (json_int_t)rule->id, "name", rule->name, "account_id", x->account,
            "metric", metric_names[rule->metric], "threshold",
            rule->threshold_s, "percent", x->percent, "value", x->value,
            "currency", rule->currency[0] ? rule->currency : NULL, "period",
            period);
        st = payload ? meter_db_event_add(db, "alert.triggered", x->account,
                                          payload, e)
                     : db_hard(e, "out of memory");
        json_decref(payload);
        if (st >= 0)
            (*raised)++;
    }
    free(sorted);
    PQclear(r);
    return st;
}

struct eval {
    int year, month;
    const char *today;
    int *raised;
    size_t *watched;
};

static enum meter_db_status
eval_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct eval *a = arg;
    *a->raised = 0;
    *a->watched = 0;
    PGresult *r = NULL;
    enum meter_db_status st =
        meter_db_exec(db, "cannot take the alerts' lock",
                      "SELECT pg_try_advisory_xact_lock(" DB_LOCK_QUARANTINE
                      ", " ALERTS_LOCK ")",
                      0, NULL, NULL, NULL, &r, e);
    bool mine = st > 0 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    if (st < 0 || !mine)
        return st; /* another meterd evaluates now */
    struct rule *rules = NULL;
    struct usage *use = NULL;
    struct crossing *cross = NULL;
    size_t nrules = 0, nuse = 0, ncross = 0, cap = 0;
    struct books bk = {0};
    st = read_rules(db, NULL, &rules, &nrules, e);
    if (st > 0)
        st = read_usage(db, a->year, a->month, a->today, NULL, &use, &nuse, e);
    for (size_t i = 0; st >= 0 && i < nuse; i++) {
        for (size_t k = 0; k < nrules; k++) {
            if (!watches(&rules[k], use[i].account))
                continue;
            struct pricing_dec value;
            char why[160];
            if (!rule_value(db, &bk, &rules[k], &use[i], a->year, a->month,
                            &value, why, sizeof(why)))
                continue;
            for (size_t q = 0; q < rules[k].npercents; q++) {
                if (!crossed(value, rules[k].threshold, rules[k].percents[q]))
                    continue;
                if (ncross == cap) {
                    size_t ncap = cap ? 2 * cap : 64;
                    struct crossing *m = realloc(cross, ncap * sizeof(*m));
                    if (!m) {
                        st = db_hard(e, "out of memory");
                        break;
                    }
                    cross = m;
                    cap = ncap;
                }
                struct crossing *c = &cross[ncross++];
                c->rule = &rules[k];
                c->account = use[i].account;
                c->percent = rules[k].percents[q];
                pricing_dec_format(value, 6, c->value, sizeof(c->value));
            }
        }
    }
    *a->watched = nuse;
    if (st >= 0)
        st =
            raise_crossings(db, cross, ncross, a->year, a->month, a->raised, e);
    books_release(&bk);
    free(cross);
    free(use);
    free(rules);
    return st < 0 ? st : METER_DB_ROWS;
}

/* The period of now, and its day as "YYYY-MM-DD" in p's first value. */
static void
period_today(int64_t now, int *year, int *month, struct db_params *p)
{
    int64_t start, end;
    pricing_period_of(now, year, month, &start, &end);
    db_param_date(p, *year, *month, (int)((now - start) / 86400) + 1);
}

enum meter_db_status
meter_db_alerts_evaluate(PGconn *db, int64_t now, int *raised, size_t *watched,
                         struct meter_err *e)
{
    int year, month;
    struct db_params p = {0};
    period_today(now, &year, &month, &p);
    struct eval a = {year, month, p.v[0], raised, watched};
    return meter_db_transaction(db, "BEGIN", 3, eval_attempt, &a, e);
}

/* ---- one account's alerts --------------------------------------------------
 */

enum meter_db_status
meter_db_account_alerts(PGconn *db, const char *account, int64_t scoped_key,
                        int64_t now, json_t **out, struct meter_err *e)
{
    *out = NULL;
    int year, month;
    struct db_params p = {0};
    period_today(now, &year, &month, &p);
    const char *today = p.v[0];
    struct rule *rules = NULL;
    struct usage *use = NULL;
    size_t nrules = 0, nuse = 0;
    struct books bk = {0};
    PGresult *r = NULL;
    struct db_params ka = {0};
    db_param_text(&ka, account);
    db_param_int64(&ka, scoped_key);
    /* A host key limited to some accounts reads only theirs. */
    enum meter_db_status st = meter_db_exec(
        db, "cannot read the account",
        "SELECT 1 FROM accounts WHERE account_id = $1 AND ($2::bigint = 0"
        " OR EXISTS (SELECT 1 FROM host_key_accounts h"
        " WHERE h.key_id = $2::bigint AND h.account_id = $1))",
        ka.n, ka.v, NULL, NULL, NULL, e);
    if (st <= 0)
        return st;
    st = read_rules(db, account, &rules, &nrules, e);
    if (st >= 0)
        st = read_usage(db, year, month, today, account, &use, &nuse, e);
    struct db_params q = {0};
    db_param_text(&q, account);
    db_param_period(&q, year, month);
    if (st >= 0)
        st = meter_db_exec(
            db, "cannot read the account's alerts",
            "SELECT rule_id, percent, value::text, to_char(crossed_at AT TIME"
            " ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM"
            " alert_crossings WHERE account_id = $1 AND period = $2::date"
            " ORDER BY rule_id, percent",
            q.n, q.v, NULL, NULL, &r, e);
    json_t *alerts = json_array();
    for (size_t k = 0; st >= 0 && k < nrules; k++) {
        const struct rule *x = &rules[k];
        struct pricing_dec value = {0};
        char why[160] = "", vs[48] = "0";
        int has = nuse ? rule_value(db, &bk, x, &use[0], year, month, &value,
                                    why, sizeof(why))
                       : 0;
        if (has)
            pricing_dec_format(value, 6, vs, sizeof(vs));
        json_t *pcts = json_array(), *crossings = json_array();
        for (size_t i = 0; i < x->npercents; i++)
            json_array_append_new(pcts, json_integer(x->percents[i]));
        for (int i = 0; r && i < PQntuples(r); i++) {
            int64_t id;
            int pct;
            if (db_get_int64(r, i, 0, &id, e) < 0 ||
                db_get_int(r, i, 1, &pct, e) < 0)
                st = METER_DB_HARD;
            else if (id == x->id)
                json_array_append_new(
                    crossings,
                    json_pack("{s:i, s:s, s:s}", "percent", pct, "value",
                              PQgetvalue(r, i, 2), "at", PQgetvalue(r, i, 3)));
        }
        json_array_append_new(
            alerts,
            json_pack("{s:I, s:s, s:s, s:s, s:s?, s:o, s:o, s:o, s:s?, s:b}",
                      "rule_id", (json_int_t)x->id, "name", x->name, "metric",
                      metric_names[x->metric], "threshold", x->threshold_s,
                      "currency", x->currency[0] ? x->currency : NULL,
                      "percents", pcts, "value",
                      has ? json_string(vs) : json_null(), "crossed", crossings,
                      "why_no_value", has ? NULL : why, "all_accounts",
                      !x->account[0]));
    }
    char period[16];
    snprintf(period, sizeof(period), "%04d-%02d", year, month);
    if (st >= 0)
        *out = json_pack("{s:s, s:s, s:o}", "account_id", account, "period",
                         period, "alerts", alerts);
    else
        json_decref(alerts);
    PQclear(r);
    books_release(&bk);
    free(use);
    free(rules);
    return st < 0 ? st : METER_DB_ROWS;
}

/* ---- rules ------------------------------------------------------------------
 */

enum meter_db_status
meter_db_alert_rule_add(PGconn *db, const struct meter_alert_rule *x,
                        int64_t *id, struct meter_err *e)
{
    struct meter_buf pcts = {0};
    meter_buf_str(&pcts, "{");
    for (size_t i = 0; i < x->npercents; i++)
        db_array_int(&pcts, x->percents[i]);
    meter_buf_str(&pcts, "}");
    if (pcts.failed)
        return db_hard(e, "out of memory");
    const char *v[] = {x->account,   x->name,     x->metric,
                       x->threshold, x->currency, pcts.p};
    PGresult *r = NULL;
    enum meter_db_status st = meter_db_exec(
        db, "cannot add the alert",
        "INSERT INTO alert_rules (account_id, name, metric, threshold,"
        " currency, percents) SELECT $1::text, $2, $3, $4::numeric, $5,"
        " $6::int[] WHERE $1::text IS NULL OR EXISTS (SELECT 1 FROM accounts"
        " WHERE account_id = $1) RETURNING rule_id",
        6, v, NULL, NULL, &r, e);
    meter_buf_release(&pcts);
    if (st > 0 && db_get_int64(r, 0, 0, id, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_alert_rules_list(PGconn *db, json_t **out, struct meter_err *e)
{
    PGresult *r = NULL;
    *out = NULL;
    enum meter_db_status st = meter_db_exec(
        db, "cannot list the alerts",
        "SELECT coalesce(json_agg(json_build_object('rule_id', rule_id,"
        " 'account_id', account_id, 'name', name, 'metric', metric,"
        " 'threshold', threshold::text, 'currency', currency, 'percents',"
        " percents, 'created_at', to_char(created_at AT TIME ZONE 'UTC',"
        " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')) ORDER BY rule_id), '[]')::text"
        " FROM alert_rules WHERE removed_at IS NULL",
        0, NULL, NULL, NULL, &r, e);
    if (st > 0) {
        json_error_t je;
        if (!(*out = json_loads(PQgetvalue(r, 0, 0), 0, &je)))
            st = db_hard(e, "the alerts' JSON does not parse: %s", je.text);
    }
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_alert_rule_remove(PGconn *db, int64_t id, struct meter_err *e)
{
    struct db_params p = {0};
    db_param_int64(&p, id);
    return meter_db_exec(db, "cannot remove the alert",
                         "UPDATE alert_rules SET removed_at = now()"
                         " WHERE rule_id = $1::bigint AND removed_at IS NULL"
                         " RETURNING 1",
                         p.n, p.v, NULL, NULL, NULL, e);
}

/* ---- usage on no book, told ------------------------------------------------
 */

struct unbilled {
    int year, month;
    json_t *none; /* not_billed's no_book */
    int *raised;
};

static enum meter_db_status
unbilled_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct unbilled *a = arg;
    *a->raised = 0;
    size_t i;
    json_t *x;
    char period[16];
    snprintf(period, sizeof(period), "%04d-%02d", a->year, a->month);
    json_array_foreach(a->none, i, x)
    {
        const char *account =
            json_string_value(json_object_get(x, "account_id"));
        struct db_params p = {0};
        db_param_text(&p, account);
        db_param_period(&p, a->year, a->month);
        /* The account's row first: its events in order (webhooks.c). */
        enum meter_db_status st = meter_db_exec(
            db, "cannot tell of usage on no book",
            "WITH a AS (SELECT 1 FROM accounts WHERE account_id = $1"
            "  AND NOT EXISTS (SELECT 1 FROM unbilled_notices n"
            "  WHERE n.account_id = $1 AND n.period = $2::date)"
            "  FOR NO KEY UPDATE)"
            " INSERT INTO unbilled_notices (account_id, period)"
            " SELECT $1, $2::date FROM a ON CONFLICT DO NOTHING RETURNING 1",
            p.n, p.v, NULL, NULL, NULL, e);
        if (st < 0)
            return st;
        if (st == METER_DB_NONE)
            continue; /* told before, this period */
        json_t *payload = json_deep_copy(x);
        json_object_set_new(payload, "period", json_string(period));
        st = meter_db_event_add(db, "usage.unbilled", account, payload, e);
        json_decref(payload);
        if (st < 0)
            return st;
        (*a->raised)++;
    }
    return METER_DB_ROWS;
}

enum meter_db_status
meter_db_unbilled_raise(PGconn *db, int64_t now, int *raised,
                        struct meter_err *e)
{
    int year, month;
    int64_t start, end;
    pricing_period_of(now, &year, &month, &start, &end);
    *raised = 0;
    json_t *nb = NULL;
    enum meter_db_status st = meter_db_not_billed(db, year, month, &nb, e);
    json_t *none = json_object_get(nb, "no_book");
    struct unbilled a = {year, month, none, raised};
    if (st >= 0 && json_array_size(none))
        st = meter_db_transaction(db, "BEGIN", 3, unbilled_attempt, &a, e);
    json_decref(nb);
    return st;
}
