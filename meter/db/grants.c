/*
 * grants.c - credit grants in the database (pricing rules section 14):
 * the grants an account has received, with the balances its final
 * documents left them, and giving one.
 *
 * A book's grants are not stored: they follow from the account's
 * assignments (the first period on a version listing each). An
 * operator's are rows of credit_grants. Balances are not stored either:
 * a grant's balance is its amount plus the amounts of its credit_grant
 * lines in final documents, so a credit note, whose lines are the voided
 * invoice's negated, gives back what that invoice spent.
 */
#include "db_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The largest grant an operator gives (as credit_grants checks it). */
#define GRANT_AMOUNT_MAX ((pricing_i128)1000000000000000 * PRICING_ONE)

void
meter_db_grants_release(struct meter_db_grants *gs)
{
    free(gs->g);
    memset(gs, 0, sizeof(*gs));
}

static struct pricing_grant *
find(struct meter_db_grants *gs, const char *id)
{
    for (size_t i = 0; i < gs->n; i++)
        if (strcmp(gs->g[i].id, id) == 0)
            return &gs->g[i];
    return NULL;
}

static int
push(struct meter_db_grants *gs, const struct pricing_grant *g)
{
    if (gs->n == gs->cap) {
        size_t n = gs->cap ? 2 * gs->cap : 8;
        struct pricing_grant *p = realloc(gs->g, n * sizeof(*p));
        if (!p)
            return -1;
        gs->g = p;
        gs->cap = n;
    }
    gs->g[gs->n++] = *g;
    return 0;
}

/* A book's: received in the period of the first assignment to a version
 * that lists it, with that version's amount and expiry. */
static int
book_grants(const struct meter_db_account *acct, struct meter_db_grants *out)
{
    for (size_t i = 0; i < acct->na; i++) {
        int y, m;
        int64_t start, end;
        if (!acct->a[i].book)
            continue; /* an end: no book */
        pricing_period_of(acct->a[i].from, &y, &m, &start, &end);
        struct pricing_grant g[PRICING_GRANTS_MAX];
        size_t k =
            pricing_book_grants(acct->a[i].book, y, m, g, PRICING_GRANTS_MAX);
        for (size_t j = 0; j < k; j++)
            if (!find(out, g[j].id) && push(out, &g[j]) < 0)
                return -1;
    }
    return 0;
}

/* The index among ids[0..n) of row i's first column, from hint on. */
static size_t
row_account(PGresult *r, int i, const struct meter_db_account *const *accts,
            size_t n, size_t hint)
{
    const char *id = PQgetvalue(r, i, 0);
    for (size_t k = 0; k < n; k++) {
        size_t x = (hint + k) % n;
        if (strcmp(accts[x]->id, id) == 0)
            return x;
    }
    return SIZE_MAX;
}

enum meter_db_status
meter_db_accounts_grants(PGconn *db,
                         const struct meter_db_account *const *accts,
                         struct meter_db_grants *const *out, size_t n,
                         struct meter_err *e)
{
    struct meter_buf ids = {0};
    meter_buf_str(&ids, "{");
    for (size_t k = 0; k < n; k++) {
        memset(out[k], 0, sizeof(*out[k]));
        if (book_grants(accts[k], out[k]) < 0) {
            meter_buf_release(&ids);
            return db_hard(e, "out of memory");
        }
        db_array_text(&ids, accts[k]->id);
    }
    meter_buf_str(&ids, "}");
    if (ids.failed)
        return db_hard(e, "out of memory");
    const char *v[] = {ids.p};
    PGresult *r;
    enum meter_db_status st =
        meter_db_exec(db, "cannot read the accounts' grants",
                      "SELECT account_id, grant_id, amount, currency,"
                      " to_char(period, 'YYYY-MM'), coalesce(expires_after, 0)"
                      " FROM credit_grants WHERE account_id = ANY ($1::text[])"
                      " ORDER BY account_id, period, grant_id",
                      1, v, NULL, NULL, &r, e);
    size_t at = 0;
    for (int i = 0; st >= 0 && i < PQntuples(r); i++) {
        if ((at = row_account(r, i, accts, n, at)) == SIZE_MAX)
            continue;
        struct pricing_grant g;
        memset(&g, 0, sizeof(g));
        int y = 0, m = 0;
        snprintf(g.id, sizeof(g.id), "%s", PQgetvalue(r, i, 1));
        snprintf(g.currency, sizeof(g.currency), "%s", PQgetvalue(r, i, 3));
        meter_period_parse(PQgetvalue(r, i, 4), &y, &m);
        g.received = pricing_period_index(y, m);
        if (db_get_int(r, i, 5, &g.expires_after, e) < 0 ||
            db_get_dec(r, i, 2, &g.amount, e) < 0)
            st = METER_DB_HARD;
        g.balance = g.amount;
        if (st >= 0 && push(out[at], &g) < 0)
            st = db_hard(e, "out of memory");
    }
    PQclear(r);
    if (st >= 0)
        st = meter_db_exec(
            db, "cannot read what grants paid",
            "SELECT l.account_id, l.grant_id, sum(l.amount)"
            " FROM invoice_lines l JOIN invoices i USING (account_id,"
            " invoice_id) WHERE l.account_id = ANY ($1::text[])"
            " AND l.kind = 'credit_grant' AND i.status = 'final'"
            " GROUP BY l.account_id, l.grant_id",
            1, v, NULL, NULL, &r, e);
    else
        r = NULL;
    for (int i = 0; st >= 0 && i < PQntuples(r); i++) {
        if ((at = row_account(r, i, accts, n, at)) == SIZE_MAX)
            continue;
        struct pricing_grant *g = find(out[at], PQgetvalue(r, i, 1));
        struct pricing_dec paid;
        if (db_parse_dec(PQgetvalue(r, i, 2), &paid) < 0)
            st = db_hard(e, "grant '%s': what it paid does not read back",
                         PQgetvalue(r, i, 1));
        else if (g &&
                 pricing_dec_add(g->amount, paid, &g->balance) != PRICING_OK)
            st = db_hard(e, "grant '%s': balance overflow", g->id);
    }
    PQclear(r);
    meter_buf_release(&ids);
    return st < 0 ? st : METER_DB_ROWS;
}

enum meter_db_status
meter_db_account_grants(PGconn *db, const struct meter_db_account *acct,
                        struct meter_db_grants *out, struct meter_err *e)
{
    return meter_db_accounts_grants(db, &acct, &out, 1, e);
}

/* ---- listing and giving ------------------------------------------------- */

static enum meter_db_status
list_account(PGconn *db, const char *account, meter_grant_cb *cb, void *arg,
             struct meter_err *e)
{
    struct meter_db_account acct = {.id = account};
    struct meter_db_grants gs = {0};
    enum meter_db_status st = meter_db_account_load(db, &acct, false, e);
    if (st >= 0)
        st = meter_db_account_grants(db, &acct, &gs, e);
    for (size_t i = 0; st >= 0 && i < gs.n; i++) {
        /* A book's grant is named BOOK/ID; an operator's id has no '/'. */
        struct meter_grant g = {.grant = gs.g[i],
                                .from_book = strchr(gs.g[i].id, '/') != NULL};
        snprintf(g.account_id, sizeof(g.account_id), "%s", account);
        cb(&g, arg);
    }
    meter_db_grants_release(&gs);
    meter_db_account_release(&acct);
    return st;
}

enum meter_db_status
meter_db_grants_list(PGconn *db, const char *account, meter_grant_cb *cb,
                     void *arg, struct meter_err *e)
{
    if (account) {
        const char *v[] = {account};
        enum meter_db_status st =
            meter_db_exec(db, "cannot read the account",
                          "SELECT 1 FROM accounts WHERE account_id = $1", 1, v,
                          NULL, NULL, NULL, e);
        return st == METER_DB_ROWS ? list_account(db, account, cb, arg, e) : st;
    }
    struct meter_strtab ids = {0};
    enum meter_db_status st =
        db_strings(db, "cannot list accounts",
                   "SELECT account_id FROM accounts ORDER BY account_id", 0,
                   NULL, &ids, e);
    for (size_t i = 0; st >= 0 && i < ids.n; i++)
        st = list_account(db, ids.str[i], cb, arg, e);
    meter_strtab_release(&ids);
    return st;
}

struct give_arg {
    const char *account, *amount, *id;
    int expires_after;
    int64_t now;
    char *out_id;
};

static enum meter_db_status
give_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct give_arg *a = arg;
    struct meter_db_account acct = {.id = a->account};
    /* Serialize with the account's invoice runs. */
    enum meter_db_status st = meter_db_account_load(db, &acct, true, e);
    meter_db_account_release(&acct);
    if (st < 0)
        return st;
    /* Received in the month of now; in the currency of the book the
     * account is on that day. */
    struct tm tm;
    time_t t = (time_t)a->now;
    gmtime_r(&t, &tm);
    int year = tm.tm_year + 1900, month = tm.tm_mon + 1;
    struct db_params v = {0};
    db_param_text(&v, a->account);
    db_param_date(&v, year, month, tm.tm_mday);
    const char *day = v.v[1];
    PGresult *r;
    st = meter_db_exec(db, "cannot read the account's price book",
                       "SELECT b.currency FROM (SELECT * FROM"
                       " account_price_books a WHERE a.account_id = $1"
                       " AND a.valid_from <= $2::date"
                       " ORDER BY a.valid_from DESC LIMIT 1) a"
                       /* an end: no book that day */
                       " JOIN price_books b USING (price_book_id, version)",
                       v.n, v.v, NULL, NULL, &r, e);
    if (st == METER_DB_NONE)
        st = db_hard(e,
                     "account '%s' has no price book on %s: a grant is in "
                     "the currency of the account's book",
                     a->account, day);
    if (st < 0) {
        PQclear(r);
        return st;
    }
    char currency[4];
    int got = db_get_text(r, 0, 0, currency, sizeof(currency), e);
    PQclear(r);
    if (got < 0)
        return METER_DB_HARD;
    /* Without an id: grant-N, the first N free. */
    for (int n = 1;; n++) {
        char id[PRICING_ID_MAX + 1];
        if (a->id)
            snprintf(id, sizeof(id), "%s", a->id);
        else
            snprintf(id, sizeof(id), "grant-%d", n);
        struct db_params w = {0};
        db_param_text(&w, a->account);
        db_param_text(&w, id);
        db_param_text(&w, a->amount);
        db_param_text(&w, currency);
        db_param_period(&w, year, month);
        if (a->expires_after)
            db_param_int32(&w, a->expires_after);
        else
            db_param_text(&w, NULL);
        db_param_int64(&w, a->now);
        st = meter_db_exec(
            db, "cannot give the grant",
            "INSERT INTO credit_grants (account_id, grant_id, amount,"
            " currency, period, expires_after, created_at) VALUES ($1, $2,"
            " $3::numeric, $4, $5::date, $6::int, to_timestamp($7::bigint))"
            " ON CONFLICT DO NOTHING RETURNING 1",
            w.n, w.v, NULL, NULL, NULL, e);
        if (st == METER_DB_ROWS) {
            snprintf(a->out_id, PRICING_ID_MAX + 1, "%s", id);
            return st;
        }
        if (st < 0)
            return st;
        if (a->id)
            return db_hard(e, "account '%s' already has a grant '%s'",
                           a->account, a->id);
    }
}

enum meter_db_status
meter_db_grant_add(PGconn *db, const char *account, const char *amount,
                   int expires_after, const char *id, int64_t now,
                   char out_id[PRICING_ID_MAX + 1], struct meter_err *e)
{
    struct pricing_dec d;
    if (pricing_dec_parse(amount, 6, &d) != PRICING_OK || d.v <= 0)
        return db_hard(e,
                       "amount '%s' is not an amount above 0 with at most 6 "
                       "decimals",
                       amount);
    if (id && !pricing_id_valid(id))
        return db_hard(e, "grant id '%s' is not 1-64 of A-Za-z0-9._:-", id);
    if (expires_after < 0 || expires_after > PRICING_GRANT_PERIODS_MAX)
        return db_hard(e, "expires after %d periods: give 1 to %d, or none",
                       expires_after, PRICING_GRANT_PERIODS_MAX);
    if (d.v > GRANT_AMOUNT_MAX)
        return db_hard(e, "amount '%s' is above %lld", amount,
                       (long long)(GRANT_AMOUNT_MAX / PRICING_ONE));
    struct give_arg a = {account, amount, id, expires_after, now, out_id};
    return meter_db_transaction(db, "BEGIN", 5, give_attempt, &a, e);
}
