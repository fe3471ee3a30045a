/*
 * parts.c - which books an account's period has: the period cut at each
 * change of book, each assignment holding from its day until the
 * account's next one (docs/invoicing.md, "Parts").
 */
#include "billing_int.h"

#include <stdio.h>
#include <string.h>

void
billing_parts_of(const struct meter_db_account *acct, int year, int month,
                 struct billing_parts *out)
{
    int64_t start = billing_period_start(year, month),
            end = billing_period_end(year, month);
    out->n = 0;
    for (size_t i = 0; i < acct->na; i++) {
        int64_t from = acct->a[i].from,
                to = i + 1 < acct->na ? acct->a[i + 1].from : INT64_MAX;
        if (from < start)
            from = start;
        if (to > end)
            to = end;
        /* An end (no book): a part of no book, billed by none. */
        if (from >= to || out->n == 31 || !acct->a[i].book_id[0])
            continue;
        out->p[out->n].book = acct->override ? acct->override : acct->a[i].book;
        out->p[out->n].from = from;
        out->p[out->n].to = to;
        out->a[out->n++] = &acct->a[i];
    }
}

/* ---- an account's period, for a reader outside the invoice run -------- */

struct period_arg {
    const char *account;
    int year, month;
    struct billing_period *out;
};

static enum meter_db_status
period_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct period_arg *a = arg;
    struct meter_db_account acct = {.id = a->account};
    billing_account_period_release(a->out);
    /* No such account is an answer here, not a failure. */
    enum meter_db_status st = meter_db_account_read(db, &acct, e);
    if (st <= 0)
        goto out;
    snprintf(a->out->name, sizeof(a->out->name), "%s", acct.name);
    struct billing_parts parts;
    billing_parts_of(&acct, a->year, a->month, &parts);
    for (size_t i = 0; i < parts.n; i++) {
        struct billing_book_part *p = &a->out->parts[i];
        snprintf(p->book_id, sizeof(p->book_id), "%s", parts.a[i]->book_id);
        p->version = parts.a[i]->version;
        p->from = parts.p[i].from;
        p->to = parts.p[i].to;
        p->book = parts.p[i].book;
    }
    /* The account's books move to the caller, with the parts. */
    a->out->books = acct.books;
    memset(&acct.books, 0, sizeof(acct.books));
    a->out->nparts = parts.n;
    st = METER_DB_ROWS;
out:
    meter_db_account_release(&acct);
    return st;
}

enum meter_db_status
billing_account_period(PGconn *db, const char *account, int year, int month,
                       struct billing_period *out, struct meter_err *e)
{
    struct period_arg a = {account, year, month, out};
    memset(out, 0, sizeof(*out));
    return meter_db_transaction(db,
                                "BEGIN ISOLATION LEVEL REPEATABLE READ "
                                "READ ONLY",
                                3, period_attempt, &a, e);
}

void
billing_account_period_release(struct billing_period *p)
{
    if (!p)
        return;
    meter_db_books_release(&p->books);
    memset(p, 0, sizeof(*p));
}
