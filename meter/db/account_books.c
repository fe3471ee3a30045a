/*
 * account_books.c - an account with the price books it has been on
 * (account_price_books, every version parsed), and the parts of a
 * period spent on each: what the invoice run and grants read.
 */
#define _GNU_SOURCE /* qsort_r */
#include "db_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* "YYYY-MM-DD" at the start of a text into days since the epoch. */
static int64_t
date_days(const char *s)
{
    int y = 0, m = 0, d = 0;
    sscanf(s, "%4d-%2d-%2d", &y, &m, &d);
    return pricing_days_from_civil(y, m, d);
}

void
meter_db_account_release(struct meter_db_account *acct)
{
    free(acct->a);
    acct->a = NULL;
    acct->na = 0;
    meter_db_books_release(&acct->books);
}

/* The account and its assignments, read as a batch of one with its own
 * books: NONE if there is no such account. */
static enum meter_db_status
account_load(PGconn *db, struct meter_db_account *acct, bool lock,
             struct meter_err *e)
{
    enum meter_db_status st =
        meter_db_accounts_load(db, &acct, 1, lock, &acct->books, e);
    return st >= 0 && acct->pk == 0 ? METER_DB_NONE : st;
}

enum meter_db_status
meter_db_account_load(PGconn *db, struct meter_db_account *acct, bool lock,
                      struct meter_err *e)
{
    enum meter_db_status st = account_load(db, acct, lock, e);
    if (st == METER_DB_NONE) {
        meter_fail(e, "no account '%s'", acct->id);
        return METER_DB_HARD;
    }
    return st;
}

enum meter_db_status
meter_db_account_read(PGconn *db, struct meter_db_account *acct,
                      struct meter_err *e)
{
    return account_load(db, acct, false, e);
}

/* ---- a batch of accounts, their books read once ------------------------- */

void
meter_db_books_release(struct meter_db_books *c)
{
    for (size_t i = 0; i < c->n; i++)
        pricing_book_free(c->v[i].book);
    free(c->v);
    memset(c, 0, sizeof(*c));
}

/* Version `version` of book id, parsed, from the cache or read into it. */
static const struct pricing_book *
cached_book(PGconn *db, struct meter_db_books *c, const char *id, int version,
            enum meter_db_status *st, struct meter_err *e)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].version == version && strcmp(c->v[i].id, id) == 0)
            return c->v[i].book;
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        struct meter_db_book_entry *v = realloc(c->v, cap * sizeof(*v));
        if (!v) {
            *st = db_hard(e, "out of memory");
            return NULL;
        }
        c->v = v;
        c->cap = cap;
    }
    struct db_params v = {0};
    db_param_text(&v, id);
    db_param_int32(&v, version);
    PGresult *r;
    *st = meter_db_exec(db, "cannot read a price book",
                        "SELECT book::text FROM price_books"
                        " WHERE price_book_id = $1 AND version = $2::int",
                        v.n, v.v, NULL, NULL, &r, e);
    if (*st == METER_DB_NONE)
        *st = db_hard(e, "no price book %s version %d", id, version);
    if (*st < 0)
        return NULL;
    struct pricing_err pe = {{0}};
    char origin[96];
    snprintf(origin, sizeof(origin), "price book %s version %d", id, version);
    struct pricing_book *b = pricing_book_parse(
        PQgetvalue(r, 0, 0), (size_t)PQgetlength(r, 0, 0), origin, &pe);
    PQclear(r);
    if (!b) {
        *st = db_hard(e, "%s", pe.msg);
        return NULL;
    }
    struct meter_db_book_entry *x = &c->v[c->n++];
    snprintf(x->id, sizeof(x->id), "%s", id);
    x->version = version;
    x->book = b;
    return b;
}

/* The index of id among accts (sorted by id with strcmp: order), or -1. */
static ssize_t
find_account(struct meter_db_account *const *accts, const size_t *order,
             size_t n, const char *id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(accts[order[mid]]->id, id);
        if (c == 0)
            return (ssize_t)order[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static int
by_id(const void *a, const void *b, void *accts)
{
    struct meter_db_account *const *x = accts;
    return strcmp(x[*(const size_t *)a]->id, x[*(const size_t *)b]->id);
}

enum meter_db_status
meter_db_accounts_load(PGconn *db, struct meter_db_account *const *accts,
                       size_t n, bool lock, struct meter_db_books *cache,
                       struct meter_err *e)
{
    struct meter_buf ids = {0};
    size_t *order = calloc(n ? n : 1, sizeof(*order));
    meter_buf_str(&ids, "{");
    for (size_t i = 0; i < n; i++) {
        db_array_text(&ids, accts[i]->id);
        order[i] = i;
        accts[i]->pk = 0;
    }
    meter_buf_str(&ids, "}");
    if (!order || ids.failed) {
        free(order);
        meter_buf_release(&ids);
        return db_hard(e, "out of memory");
    }
    qsort_r(order, n, sizeof(*order), by_id, (void *)accts);
    const char *v[] = {ids.p};
    PGresult *r = NULL;
    /* Locked in one order, so batches that share accounts do not
     * deadlock; NO KEY: ingestion's foreign keys do not wait. */
    enum meter_db_status st = meter_db_exec(
        db, "cannot read the accounts",
        lock ? "SELECT account_id, account_pk, coalesce(name, '') FROM"
               " accounts WHERE account_id = ANY ($1::text[])"
               " ORDER BY account_id FOR NO KEY UPDATE"
             : "SELECT account_id, account_pk, coalesce(name, '') FROM"
               " accounts WHERE account_id = ANY ($1::text[])",
        1, v, NULL, NULL, &r, e);
    for (int i = 0; st >= 0 && i < PQntuples(r); i++) {
        ssize_t k = find_account(accts, order, n, PQgetvalue(r, i, 0));
        if (k < 0)
            continue;
        if (db_get_int32(r, i, 1, &accts[k]->pk, e) < 0)
            st = METER_DB_HARD;
        snprintf(accts[k]->name, sizeof(accts[k]->name), "%s",
                 PQgetvalue(r, i, 2));
    }
    PQclear(r);
    r = NULL;
    if (st >= 0)
        st = meter_db_exec(db, "cannot read the accounts' price books",
                           "SELECT account_id, valid_from, price_book_id,"
                           " version FROM account_price_books"
                           " WHERE account_id = ANY ($1::text[])"
                           " ORDER BY account_id, valid_from",
                           1, v, NULL, NULL, &r, e);
    int rows = st >= 0 ? PQntuples(r) : 0;
    for (int i = 0; i < rows && st >= 0;) {
        int j = i;
        while (j < rows &&
               strcmp(PQgetvalue(r, j, 0), PQgetvalue(r, i, 0)) == 0)
            j++;
        ssize_t k = find_account(accts, order, n, PQgetvalue(r, i, 0));
        struct meter_db_account *acct = k < 0 ? NULL : accts[k];
        if (acct && !(acct->a = calloc((size_t)(j - i), sizeof(*acct->a))))
            st = db_hard(e, "out of memory");
        for (int x = i; acct && x < j && st >= 0; x++) {
            struct meter_db_assignment *as = &acct->a[acct->na++];
            as->from = date_days(PQgetvalue(r, x, 1)) * 86400;
            snprintf(as->book_id, sizeof(as->book_id), "%s",
                     PQgetvalue(r, x, 2));
            if (PQgetisnull(r, x, 2))
                continue; /* an end: on no book from then (book NULL) */
            if (db_get_int(r, x, 3, &as->version, e) < 0)
                st = METER_DB_HARD;
            else
                as->book = (struct pricing_book *)cached_book(
                    db, cache, as->book_id, as->version, &st, e);
        }
        i = j;
    }
    PQclear(r);
    free(order);
    meter_buf_release(&ids);
    return st < 0 ? st : METER_DB_ROWS;
}
