/*
 * run.c - the invoice run, a batch of accounts at a time
 * (docs/invoicing.md). One READ COMMITTED transaction locks the batch's
 * account rows in id order, so runs of one account serialize and each
 * sees what the previous committed; reads what the batch's periods hold
 * in a few statements; rates every account's period from one ordered
 * read of the batch's usage; completes each account's documents (late
 * usage, grants); writes the drafts at once; and, finalizing, numbers
 * them at once in the accounts' order.
 *
 * Over several shards (docs/scale.md) the batch is the same, and so are
 * its documents and their numbers: its accounts' usage is read on each
 * account's shard, each shard's accounts in a few statements and one
 * ordered read, in a read-only snapshot of that shard beside the
 * catalog's transaction.
 */
#define _GNU_SOURCE /* qsort_r */
#include "billing_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum meter_db_status
billing_accounts(PGconn *db, int year, int month, const char *only,
                 struct meter_strtab *out, struct meter_err *e)
{
    return meter_db_invoice_accounts(db, year, month, only, out, e);
}

/* The most databases of usage a batch reads (shards). */
#define USAGE_MAX 256

/* One account of a batch, and what the run read and made of it. */
struct bill {
    struct meter_db_bill db; /* db.acct.id: the caller's */
    struct billing_outcome *out;
    PGconn *usage; /* the database of its usage: its shard, or the
                      catalog itself on one server */
    enum { BILL_RATE, BILL_NONE, BILL_DONE, BILL_FAILED } state;
    bool refused; /* failed as asked: no such account, or finalizing a
                     period not over (no invoice.run_failed event) */
    char error[sizeof(((struct meter_err *)0)->msg)];
    struct billing_parts parts;
    struct billing_docs ds;
    struct billing_rated rated;
};

struct batch {
    int year, month;
    bool finalize;
    const char *seller;
    struct bill *b;
    struct meter_db_bill **dbs; /* &b[k].db */
    size_t n;
    struct meter_db_books *books;
    const struct pricing_book *override; /* preview */
};

static void
bill_fail(struct bill *b, const char *msg)
{
    b->state = BILL_FAILED;
    b->db.active = false;
    snprintf(b->error, sizeof(b->error), "%s", msg);
}

static void
bill_reset(struct bill *b)
{
    const char *id = b->db.acct.id;
    struct billing_outcome *out = b->out;
    PGconn *usage = b->usage;
    meter_db_bill_release(&b->db);
    billing_docs_release(&b->ds);
    memset(b, 0, sizeof(*b));
    b->db.acct.id = id;
    b->out = out;
    b->usage = usage;
}

/* Whether a failure is the batch's (the transaction can go no further)
 * rather than one account's. */
static bool
batch_broken(PGconn *db, enum meter_db_status st)
{
    return st == METER_DB_SOFT || meter_db_lost(db) ||
           PQtransactionStatus(db) == PQTRANS_INERROR;
}

/* Reads the batch's accounts (locked when lock) and sorts them: no such
 * account, a finalization too early, no book in the period, or to rate;
 * then, with live, those whose invoice of the period is final in its
 * books' currency are done. */
static enum meter_db_status
start_batch(PGconn *db, struct batch *bt, bool lock, bool live,
            struct meter_err *e)
{
    for (size_t k = 0; k < bt->n; k++) {
        bill_reset(&bt->b[k]);
        memset(bt->b[k].out, 0, sizeof(*bt->b[k].out));
    }
    enum meter_db_status st =
        meter_db_bills_lock(db, bt->dbs, bt->n, lock, bt->books, e);
    if (st < 0)
        return st;
    bool early =
        bt->finalize && billing_period_end(bt->year, bt->month) > time(NULL);
    for (size_t k = 0; k < bt->n; k++) {
        struct bill *b = &bt->b[k];
        char msg[256];
        b->db.acct.override = bt->override;
        billing_parts_of(&b->db.acct, bt->year, bt->month, &b->parts);
        if (b->db.acct.pk == 0) {
            snprintf(msg, sizeof(msg), "no account '%s'", b->db.acct.id);
            bill_fail(b, msg);
            b->refused = true;
        } else if (early) {
            snprintf(msg, sizeof(msg),
                     "%04d-%02d has not ended: a period is finalized once "
                     "it is over",
                     bt->year, bt->month);
            bill_fail(b, msg);
            b->refused = true;
        } else {
            b->state = b->parts.n ? BILL_RATE : BILL_NONE;
            b->db.active = b->parts.n > 0;
        }
    }
    if (!live)
        return METER_DB_ROWS;
    st = meter_db_bills_read(db, bt->dbs, bt->n, bt->year, bt->month,
                             METER_DB_BILLS_LIVE, e);
    for (size_t k = 0; st >= 0 && k < bt->n; k++) {
        struct bill *b = &bt->b[k];
        /* Final in its books' currency: the period stands. (One of late
         * usage in another currency does not: voided, the period's own
         * invoice is issued again beside it.) */
        for (size_t i = 0; b->state == BILL_RATE && i < b->db.nlive; i++)
            if (strcmp(b->db.live[i].currency,
                       pricing_book_currency(b->parts.p[0].book)) == 0) {
                b->state = BILL_DONE;
                b->db.active = false;
                b->out->already_final = true;
                snprintf(b->out->number, sizeof(b->out->number), "%s",
                         b->db.live[i].number);
            }
    }
    return st;
}

static int
by_pk(const void *a, const void *b, void *arg)
{
    const struct bill *x = arg;
    int32_t p = x[*(const size_t *)a].db.acct.pk,
            q = x[*(const size_t *)b].db.acct.pk;
    return (p > q) - (p < q);
}

/* The distinct databases of the batch's bills' usage, in the bills'
 * order, into conns; how many. */
static size_t
usage_dbs(const struct batch *bt, PGconn **conns)
{
    size_t n = 0;
    for (size_t k = 0; k < bt->n; k++) {
        size_t i = 0;
        while (i < n && conns[i] != bt->b[k].usage)
            i++;
        if (i == n && n < USAGE_MAX)
            conns[n++] = bt->b[k].usage;
    }
    return n;
}

/* Rates the period of each bill whose usage is on usage from one
 * ordered read, into the first of its documents. */
static enum meter_db_status
rate_on(PGconn *db, PGconn *usage, struct batch *bt, struct meter_err *e)
{
    size_t n = 0;
    size_t *order = calloc(bt->n ? bt->n : 1, sizeof(*order));
    int32_t *pks = calloc(bt->n ? bt->n : 1, sizeof(*pks));
    const char **ids = calloc(bt->n ? bt->n : 1, sizeof(*ids));
    enum meter_db_status st = METER_DB_ROWS;
    struct meter_usage_reader *r = NULL;
    if (!order || !pks || !ids)
        st = billing_fail(e, "out of memory");
    for (size_t k = 0; st >= 0 && k < bt->n; k++)
        if (bt->b[k].state == BILL_RATE && bt->b[k].usage == usage)
            order[n++] = k;
    if (st >= 0)
        qsort_r(order, n, sizeof(*order), by_pk, bt->b);
    for (size_t j = 0; st >= 0 && j < n; j++) {
        pks[j] = bt->b[order[j]].db.acct.pk;
        ids[j] = bt->b[order[j]].db.acct.id;
    }
    if (st >= 0 && n &&
        !(r = meter_db_usage_open_batch(
              usage, pks, ids, n, billing_period_start(bt->year, bt->month),
              billing_period_end(bt->year, bt->month), e)))
        st = METER_DB_HARD;
    for (size_t j = 0; st >= 0 && j < n; j++) {
        struct bill *b = &bt->b[order[j]];
        struct meter_err ae = {{0}};
        billing_docs_start(&b->ds, &b->db.acct, bt->year, bt->month,
                           bt->seller);
        size_t slot =
            billing_rated_slot(&b->rated, &b->db.acct, bt->year, bt->month,
                               b->db.first_runs, b->db.revision, &ae);
        enum meter_db_status rs =
            slot == SIZE_MAX
                ? METER_DB_HARD
                : billing_rate_source(
                      &b->db.acct, bt->year, bt->month,
                      meter_db_usage_account_source(r, b->db.acct.pk),
                      &b->ds.d[0], &b->rated, slot, &ae);
        if (slot != SIZE_MAX)
            b->rated.p[slot].seconds = meter_db_usage_account_seconds(r);
        /* A block that does not decode stops the read for every account
         * after it: the batch fails, and runs again account by account,
         * where it is that one account's failure. */
        if (rs < 0 && (batch_broken(db, rs) || batch_broken(usage, rs) ||
                       meter_db_usage_failed(r))) {
            *e = ae;
            st = METER_DB_HARD;
            if (rs == METER_DB_SOFT)
                st = rs;
        } else if (rs < 0) {
            bill_fail(b, ae.msg);
        }
    }
    meter_usage_reader_free(r);
    free(order);
    free(pks);
    free(ids);
    return st;
}

/* Reads what each database of usage holds of its bills (a snapshot of
 * it begun first, if it is not db), then rates them. */
static enum meter_db_status
rate_batch(PGconn *db, struct batch *bt, unsigned what, struct meter_err *e)
{
    PGconn *conns[USAGE_MAX];
    size_t nconns = usage_dbs(bt, conns);
    struct meter_db_bill **mine = calloc(bt->n ? bt->n : 1, sizeof(*mine));
    enum meter_db_status st =
        mine ? METER_DB_ROWS : billing_fail(e, "out of memory");
    for (size_t c = 0; st >= 0 && c < nconns; c++) {
        size_t m = 0;
        for (size_t k = 0; k < bt->n; k++)
            if (bt->b[k].usage == conns[c])
                mine[m++] = &bt->b[k].db;
        if (conns[c] != db)
            st = meter_db_snapshot_begin(conns[c], e);
        if (st >= 0)
            st = meter_db_bills_usage(conns[c], mine, m, bt->year, bt->month,
                                      what, e);
        if (st >= 0)
            st = rate_on(db, conns[c], bt, e);
    }
    free(mine);
    return st;
}

/* Ends the snapshots rate_batch began. */
static void
end_snapshots(PGconn *db, struct batch *bt)
{
    PGconn *conns[USAGE_MAX];
    size_t nconns = usage_dbs(bt, conns);
    for (size_t c = 0; c < nconns; c++)
        if (conns[c] != db)
            meter_db_snapshot_end(conns[c]);
}

/* HARD, naming the period, when an earlier period in which the account
 * had a book has no final invoice: grants look back, so an account's
 * periods are finalized in order (rules section 14). A voided period
 * had one; its corrected invoice may come later. */
static bool
finalized_before(struct batch *bt, struct bill *b)
{
    const struct meter_db_account *acct = &b->db.acct;
    if (acct->na == 0)
        return true;
    int y, m;
    int64_t start, end;
    pricing_period_of(acct->a[0].from, &y, &m, &start, &end);
    for (int p = pricing_period_index(y, m);
         p < pricing_period_index(bt->year, bt->month); p++) {
        struct billing_parts parts;
        billing_parts_of(acct, p / 12, p % 12 + 1, &parts);
        bool final = false;
        for (size_t i = 0; i < b->db.nfinals && !final; i++)
            final = b->db.finals[i] == p;
        if (parts.n && !final) {
            char msg[256];
            snprintf(msg, sizeof(msg),
                     "account '%s': %04d-%02d has no final invoice; an "
                     "account's periods are finalized in order",
                     acct->id, p / 12, p % 12 + 1);
            bill_fail(b, msg);
            return false;
        }
    }
    return true;
}

/* Completes each bill's documents (late usage, grants, totals) and, when
 * finalizing, checks its earlier periods are final. */
static enum meter_db_status
complete_batch(PGconn *db, struct batch *bt, bool with_late,
               struct meter_err *e)
{
    for (size_t k = 0; k < bt->n; k++) {
        struct bill *b = &bt->b[k];
        if (b->state != BILL_RATE)
            continue;
        if (b->db.problem[0]) {
            bill_fail(b, b->db.problem);
            continue;
        }
        struct meter_err ae = {{0}};
        enum meter_db_status st = billing_complete(
            db, b->usage, &b->db.acct, bt->year, bt->month, &b->db.billed,
            b->db.late, b->db.nlate, with_late ? &b->db.grants : NULL, &b->ds,
            &b->rated, &ae);
        /* The catalog's transaction, or the snapshot of this account's
         * shard, can go no further: the batch's failure. */
        if (st < 0 && (batch_broken(db, st) || batch_broken(b->usage, st))) {
            *e = ae;
            return st;
        }
        if (st < 0)
            bill_fail(b, ae.msg);
        else if (bt->finalize)
            finalized_before(bt, b);
    }
    return METER_DB_ROWS;
}

/* The id the bill's draft in currency already has, else 0. */
static int64_t
draft_of(const struct bill *b, const char *currency)
{
    for (size_t i = 0; i < b->db.ndrafts; i++)
        if (strcmp(b->db.drafts[i].currency, currency) == 0)
            return b->db.drafts[i].id;
    return 0;
}

/*
 * Writes the batch's documents as drafts: each replaces the account's
 * draft of the period in its currency (keeping its id); drafts in
 * currencies no longer billed are removed, and so are those of accounts
 * with no book in the period. The first document of an account records
 * what its run rated.
 */
static enum meter_db_status
store_batch(PGconn *db, struct batch *bt, struct meter_err *e)
{
    size_t cap = bt->n ? bt->n : 1;
    const char **none = calloc(cap, sizeof(*none));
    const char **gone_a = calloc(cap * METER_INVOICE_DOCS, sizeof(*gone_a));
    int64_t *gone_i = calloc(cap * METER_INVOICE_DOCS, sizeof(*gone_i));
    struct meter_db_draft *d = calloc(cap * METER_INVOICE_DOCS, sizeof(*d));
    size_t nnone = 0, ngone = 0, nd = 0;
    enum meter_db_status st = METER_DB_ROWS;
    if (!none || !gone_a || !gone_i || !d)
        st = billing_fail(e, "out of memory");
    for (size_t k = 0; st >= 0 && k < bt->n; k++) {
        struct bill *b = &bt->b[k];
        if (b->state == BILL_NONE)
            none[nnone++] = b->db.acct.id;
        if (b->state != BILL_RATE)
            continue;
        for (size_t i = 0; i < b->db.ndrafts; i++) {
            bool kept = false;
            for (size_t x = 0; x < b->ds.n && !kept; x++)
                kept =
                    strcmp(b->ds.d[x].currency, b->db.drafts[i].currency) == 0;
            if (!kept) {
                gone_a[ngone] = b->db.acct.id;
                gone_i[ngone++] = b->db.drafts[i].id;
            }
        }
        for (size_t x = 0; st >= 0 && x < b->ds.n; x++) {
            struct report_invoice *inv = &b->ds.d[x];
            struct meter_db_revenue_cell *cells = NULL;
            size_t ncells = 0;
            inv->id = draft_of(b, inv->currency);
            st = billing_revenue(b->usage, &b->db.acct, inv, &b->db.days,
                                 &cells, &ncells, e);
            d[nd++] =
                (struct meter_db_draft){inv, x == 0 ? b->rated.p : NULL,
                                        x == 0 ? b->rated.n : 0, cells, ncells};
        }
    }
    if (st >= 0)
        st = meter_db_drafts_store(db, bt->year, bt->month, none, nnone, gone_a,
                                   gone_i, ngone, d, nd, e);
    for (size_t i = 0; d && i < nd; i++)
        free((void *)d[i].cells);
    free(none);
    free(gone_a);
    free(gone_i);
    free(d);
    return st;
}

/* Finalizes the batch's documents, account by account in the batch's
 * order, each account's own invoice first. */
static enum meter_db_status
finalize_batch(PGconn *db, struct batch *bt, struct meter_err *e)
{
    struct report_invoice **docs =
        calloc(bt->n * METER_INVOICE_DOCS + 1, sizeof(*docs));
    if (!docs)
        return billing_fail(e, "out of memory");
    size_t n = 0;
    for (size_t k = 0; k < bt->n; k++)
        for (size_t x = 0; bt->b[k].state == BILL_RATE && x < bt->b[k].ds.n;
             x++)
            docs[n++] = &bt->b[k].ds.d[x];
    enum meter_db_status st =
        n ? meter_db_invoices_finalize(db, docs, n, e) : METER_DB_NONE;
    free(docs);
    return st;
}

/* The batch's webhook events, in its transaction: each account it could
 * not bill, and, finalizing, each invoice it made final. */
static enum meter_db_status
batch_events(PGconn *db, struct batch *bt, struct meter_err *e)
{
    enum meter_db_status st = METER_DB_ROWS;
    for (size_t k = 0; st >= 0 && k < bt->n; k++) {
        struct bill *b = &bt->b[k];
        if (b->state == BILL_FAILED && !b->refused)
            st = billing_event_run_failed(db, b->db.acct.id, bt->year,
                                          bt->month, bt->finalize, b->error, e);
        for (size_t x = 0;
             bt->finalize && b->state == BILL_RATE && st >= 0 && x < b->ds.n;
             x++)
            st = billing_event_finalized(db, &b->ds.d[x], e);
    }
    return st;
}

/* What each bill's run did, for the caller. */
static void
outcomes(struct batch *bt)
{
    for (size_t k = 0; k < bt->n; k++) {
        struct bill *b = &bt->b[k];
        struct billing_outcome *out = b->out;
        if (b->state == BILL_FAILED) {
            out->failed = true;
            out->refused = b->refused;
            snprintf(out->error, sizeof(out->error), "%s", b->error);
        }
        if (b->state != BILL_RATE)
            continue;
        out->written = true;
        out->id = b->ds.d[0].id;
        snprintf(out->number, sizeof(out->number), "%s", b->ds.d[0].number);
        out->total = b->ds.d[0].total;
        snprintf(out->currency, sizeof(out->currency), "%s",
                 b->ds.d[0].currency);
        for (size_t i = 1; i < b->ds.n; i++) {
            struct billing_doc *o = &out->other[out->nother++];
            o->id = b->ds.d[i].id;
            snprintf(o->number, sizeof(o->number), "%s", b->ds.d[i].number);
            o->total = b->ds.d[i].total;
            snprintf(o->currency, sizeof(o->currency), "%s",
                     b->ds.d[i].currency);
        }
        for (size_t i = 0; i < b->rated.n; i++)
            out->samples += b->rated.p[i].seconds;
    }
}

static enum meter_db_status
batch_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct batch *bt = arg;
    enum meter_db_status st = start_batch(db, bt, true, true, e);
    /* A draft is recomputed by any run: it need not wait for the disk. A
     * final invoice must. */
    if (st >= 0 && !bt->finalize)
        st = meter_db_commit_async(db, e);
    if (st >= 0)
        st = meter_db_bills_read(db, bt->dbs, bt->n, bt->year, bt->month,
                                 METER_DB_BILLS_HISTORY |
                                     (bt->finalize ? METER_DB_BILLS_FINALS : 0),
                                 e);
    if (st >= 0)
        st = rate_batch(db, bt, METER_DB_BILLS_HISTORY, e);
    if (st >= 0)
        st = complete_batch(db, bt, true, e);
    if (st >= 0)
        st = store_batch(db, bt, e);
    if (st >= 0 && bt->finalize)
        st = finalize_batch(db, bt, e);
    if (st >= 0)
        st = batch_events(db, bt, e);
    if (st >= 0)
        outcomes(bt);
    end_snapshots(db, bt);
    return st < 0 ? st : METER_DB_ROWS;
}

/* The batch of accounts[0..n), whose usage is on usage[k] (NULL: all
 * on db): its bills (free with batch_release). */
static int
batch_init(struct batch *bt, PGconn *db, PGconn *const *usage,
           const char *const *accounts, size_t n, struct billing_outcome *out)
{
    bt->b = calloc(n ? n : 1, sizeof(*bt->b));
    bt->dbs = calloc(n ? n : 1, sizeof(*bt->dbs));
    if (!bt->b || !bt->dbs)
        return -1;
    bt->n = n;
    for (size_t k = 0; k < n; k++) {
        bt->b[k].db.acct.id = accounts[k];
        bt->b[k].usage = usage ? usage[k] : db;
        bt->b[k].out = &out[k];
        bt->dbs[k] = &bt->b[k].db;
    }
    return 0;
}

static void
batch_release(struct batch *bt)
{
    for (size_t k = 0; bt->b && k < bt->n; k++)
        bill_reset(&bt->b[k]);
    free(bt->b);
    free(bt->dbs);
}

struct failed_arg {
    const char *account;
    int year, month;
    bool finalize;
    const char *error;
};

static enum meter_db_status
failed_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct failed_arg *a = arg;
    return billing_event_run_failed(db, a->account, a->year, a->month,
                                    a->finalize, a->error, e);
}

/* The invoice.run_failed event of an account whose own transaction
 * rolled back, in one of its own. An event that cannot be written (the
 * account unknown, the catalog gone meanwhile) is not: the run's result
 * still names the failure. */
static void
failed_event(PGconn *db, const char *account, int year, int month,
             bool finalize, const char *error)
{
    struct failed_arg a = {account, year, month, finalize, error};
    struct meter_err e = {{0}};
    meter_db_transaction(db, "BEGIN", 5, failed_attempt, &a, &e);
}

/* The run of accounts[0..n), account k's usage on usage[k] (NULL: all
 * on db). */
static enum meter_db_status
run_batch(PGconn *db, PGconn *const *usage, const char *const *accounts,
          size_t n, int year, int month, bool finalize, const char *seller,
          struct billing_outcome *out, struct meter_err *e)
{
    struct meter_db_books books = {0};
    struct batch bt = {year, month, finalize, seller, NULL,
                       NULL, 0,     &books,   NULL};
    enum meter_db_status st =
        batch_init(&bt, db, usage, accounts, n, out) < 0
            ? billing_fail(e, "out of memory")
            : meter_db_transaction(db, "BEGIN", 5, batch_attempt, &bt, e);
    batch_release(&bt);
    meter_db_books_release(&books);
    /* Lost, or busy past the retries: no account can be run now. */
    bool lost = meter_db_lost(db);
    for (size_t k = 0; usage && k < n; k++)
        lost = lost || meter_db_lost(usage[k]);
    if (st >= 0 || lost || meter_db_unavailable(db, st))
        return st;
    if (n == 1) {
        /* A statement the server refused: this account's failure. */
        memset(out, 0, sizeof(*out));
        out->failed = true;
        snprintf(out->error, sizeof(out->error), "%s", e->msg);
        failed_event(db, accounts[0], year, month, finalize, out->error);
        return METER_DB_ROWS;
    }
    /* One account's statement failed the batch: each on its own, so the
     * others are invoiced and the failure is named. */
    for (size_t k = 0; k < n; k++) {
        st = run_batch(db, usage ? &usage[k] : NULL, &accounts[k], 1, year,
                       month, finalize, seller, &out[k], e);
        if (st < 0)
            return st;
    }
    return METER_DB_ROWS;
}

/* The status of a shard's connection that meter_shard_links_conn could
 * not give: the shard away (a 503 for meterd), or the map wrong. */
static enum meter_db_status
links_failed(const struct meter_err *e)
{
    char shard[48];
    meter_db_away_shard(e, shard);
    return shard[0] ? METER_DB_SHARD_AWAY : METER_DB_HARD;
}

/* Records which of the batch's accounts failed, and why, and forgets
 * the earlier failures of those that did not: the overview lists them
 * until a run computes their drafts. */
static enum meter_db_status
note_failures(PGconn *db, const char *const *accounts, size_t n, int year,
              int month, const struct billing_outcome *out, struct meter_err *e)
{
    const char **why = calloc(n ? n : 1, sizeof(*why));
    const char **ids = calloc(n ? n : 1, sizeof(*ids));
    if (!why || !ids) {
        free(why);
        free(ids);
        return billing_fail(e, "out of memory");
    }
    /* A refusal (no such account, a period not over) says nothing of
     * the account's draft: neither recorded nor forgotten. */
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        if (out[k].refused)
            continue;
        ids[m] = accounts[k];
        why[m++] = out[k].failed ? out[k].error : NULL;
    }
    enum meter_db_status st =
        meter_db_run_failures_store(db, year, month, ids, why, m, e);
    free(why);
    free(ids);
    return st;
}

/* The batch's run, its usage on usage (NULL: db), its failures noted. */
static enum meter_db_status
run_noted(PGconn *db, PGconn *const *usage, const char *const *accounts,
          size_t n, int year, int month, bool finalize, const char *seller,
          struct billing_outcome *out, struct meter_err *e)
{
    enum meter_db_status st = run_batch(db, usage, accounts, n, year, month,
                                        finalize, seller, out, e);
    if (st >= 0) {
        enum meter_db_status noted =
            note_failures(db, accounts, n, year, month, out, e);
        if (noted < 0)
            st = noted;
    }
    return st;
}

enum meter_db_status
billing_run(PGconn *db, struct meter_shard_links *shards,
            const char *const *accounts, size_t n, int year, int month,
            bool finalize, const char *seller, struct billing_outcome *out,
            struct meter_err *e)
{
    struct meter_err one = {{0}};
    if (meter_db_usage_whole(db, &one) == 0)
        return run_noted(db, NULL, accounts, n, year, month, finalize, seller,
                         out, e);
    /* Usage stored on other shards would be billed as none without
     * them. */
    if (!shards) {
        *e = one;
        return METER_DB_HARD;
    }
    int *shard = calloc(n ? n : 1, sizeof(*shard));
    PGconn **usage = calloc(n ? n : 1, sizeof(*usage));
    enum meter_db_status st =
        !shard || !usage ? billing_fail(e, "out of memory")
                         : meter_db_accounts_shards(db, accounts, n, shard, e);
    /* An account the catalog does not know is none of a shard's: the
     * run says so. */
    for (size_t k = 0; st >= 0 && k < n; k++)
        if (shard[k] >= 0 &&
            !(usage[k] = meter_shard_links_conn(shards, db, shard[k], e)))
            st = links_failed(e);
        else if (shard[k] < 0)
            usage[k] = db;
    if (st >= 0)
        st = run_noted(db, usage, accounts, n, year, month, finalize, seller,
                       out, e);
    /* A shard lost (or busy) under the run, the catalog answering. */
    for (size_t k = 0; usage && st < 0 && st != METER_DB_SHARD_AWAY && k < n;
         k++)
        st = meter_db_shard_failed(db, usage[k], shard[k], NULL, st, e);
    free(shard);
    free(usage);
    return st;
}

enum meter_db_status
billing_run_one(PGconn *db, const char *account, int year, int month,
                bool finalize, const char *seller, struct billing_outcome *out,
                struct meter_err *e)
{
    enum meter_db_status st = billing_run(db, NULL, &account, 1, year, month,
                                          finalize, seller, out, e);
    if (st >= 0 && out->failed) {
        snprintf(e->msg, sizeof(e->msg), "%s", out->error);
        return METER_DB_HARD;
    }
    return st;
}

/* ---- what-if ------------------------------------------------------------- */

struct preview_arg {
    struct batch *bt;
    struct report_invoice *inv;
};

static enum meter_db_status
preview_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct preview_arg *a = arg;
    struct batch *bt = a->bt;
    struct bill *b = &bt->b[0];
    enum meter_db_status st = start_batch(db, bt, false, false, e);
    if (st >= 0 && b->state == BILL_NONE)
        st = billing_fail(e, "account '%s' has no price book in %04d-%02d",
                          b->db.acct.id, bt->year, bt->month);
    else if (st >= 0 && b->state == BILL_FAILED)
        st = billing_fail(e, "%s", b->error);
    /* Its own lines only: late usage is billed as it was. */
    if (st >= 0)
        st = rate_batch(db, bt, 0, e);
    if (st >= 0)
        st = complete_batch(db, bt, false, e);
    if (st >= 0 && b->state == BILL_FAILED)
        st = billing_fail(e, "%s", b->error);
    if (st >= 0) {
        report_invoice_release(a->inv);
        *a->inv = b->ds.d[0];
        snprintf(a->inv->status, sizeof(a->inv->status), "draft");
        b->ds.n = 0;
    }
    end_snapshots(db, bt);
    /* Nothing is stored: roll back whatever happened. */
    return st < 0 ? st : METER_DB_ABORT;
}

enum meter_db_status
billing_preview(PGconn *db, const char *account, int year, int month,
                const struct pricing_book *book, struct report_invoice *inv,
                struct meter_err *e)
{
    struct billing_outcome out;
    struct meter_db_books books = {0};
    struct batch bt = {year, month, false, "", NULL, NULL, 0, &books, book};
    struct preview_arg a = {&bt, inv};
    snprintf(inv->status, sizeof(inv->status), "draft");
    /* Over shards, the account's usage is read on its shard, on a
     * connection of the preview's own. */
    struct meter_err one = {{0}};
    struct meter_shards *sh = NULL;
    struct meter_shard_links *links = NULL;
    PGconn *usage = db;
    int shard = -1;
    enum meter_db_status st = METER_DB_ROWS;
    if (meter_db_usage_whole(db, &one) < 0 &&
        (st = meter_db_accounts_shards(db, &account, 1, &shard, e)) >= 0 &&
        shard >= 0) {
        sh = meter_shards_new();
        links = sh ? meter_shard_links_new(sh, 0) : NULL;
        usage = links ? meter_shard_links_conn(links, db, shard, e) : NULL;
        if (!links)
            st = billing_fail(e, "out of memory");
        else if (!usage)
            st = links_failed(e);
    }
    if (st >= 0)
        st = batch_init(&bt, db, &usage, &account, 1, &out) < 0
                 ? billing_fail(e, "out of memory")
                 : meter_db_transaction(
                       db, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 3,
                       preview_attempt, &a, e);
    batch_release(&bt);
    meter_db_books_release(&books);
    meter_shard_links_free(links);
    meter_shards_free(sh);
    return st == METER_DB_ABORT ? METER_DB_ROWS : st;
}
