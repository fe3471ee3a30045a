/*
 * billing.h - what an invoice means (docs/invoicing.md; the rules of each
 * line are docs/pricing.md): which books and parts an account's period
 * has, rating each part through pricing/, late usage of earlier periods
 * as differences (in another currency on a document of its own), grants
 * spent, drafts replaced, finalization in order, voids by credit note,
 * and documents read back checked against their SHA-256. No SQL here:
 * meter/db/ reads and writes, a batch of accounts at a time.
 *
 * Functions return the database layer's status (meter_db.h) with the
 * message in e. Thread-safe with one connection per thread.
 */
#ifndef BILLING_H
#define BILLING_H

#include "meter_db.h"
#include "report.h"

/* The accounts on a price book during (year, month), or only account
 * `only` if it is: the run's work, in id order. */
enum meter_db_status billing_accounts(PGconn *db, int year, int month,
                                      const char *only,
                                      struct meter_strtab *out,
                                      struct meter_err *e);

/* A document a run wrote. */
struct billing_doc {
    int64_t id;      /* the document's id */
    char number[16]; /* its number when final */
    struct pricing_dec total;
    char currency[4];
};

/* What the run of one account did. */
struct billing_outcome {
    bool written;       /* a draft was written (and finalized if asked) */
    bool already_final; /* the period's invoice is final: nothing done */
    /* The period's own invoice, in its books' currency. */
    int64_t id;
    char number[16];
    struct pricing_dec total;
    char currency[4];
    /* Invoices of the same period holding only late usage of earlier
     * periods billed in other currencies, and the grants of theirs. */
    struct billing_doc other[METER_INVOICE_DOCS - 1];
    size_t nother;
    uint64_t samples; /* stored seconds rated, late periods included */
    bool failed;      /* nothing written: error says why */
    bool refused;     /* failed as asked (no such account, a period not
                         over to finalize): not a draft that failed */
    char error[sizeof(((struct meter_err *)0)->msg)];
};

/* The most accounts billing_run takes at once by default: bounds its
 * memory and how long it holds their rows. */
#define BILLING_BATCH 500

/*
 * The invoice run of accounts[0..n) for (year, month), in one
 * transaction that locks their rows in id order: rates the period's
 * stored usage with the books of its parts, adds the late usage of
 * earlier invoiced periods, and replaces the period's drafts; with
 * finalize also numbers them (in the accounts' order, each account's own
 * invoice first), hashes them and makes them final, once the period has
 * ended. Late usage of a period billed in another currency than this
 * period's books goes on a document of its own, one per currency
 * (out->other). seller names the issuer. An account whose invoice for
 * the period in its books' currency is final gets nothing new
 * (already_final); one with no book in the period loses its drafts.
 * out[k] says what the run of accounts[k] did, or why it failed (failed,
 * error): one account's failure leaves the others' documents written (a
 * statement the server refused runs the batch again account by
 * account). The failure only if the batch could not run: the database
 * lost (meter_db_lost) or busy.
 *
 * db is the catalog. Over several shards (docs/scale.md), each account's
 * usage is read on its shard through shards (this thread's connections
 * to them); the documents, their numbers and their order are those of
 * one server. shards NULL: db must hold every account's usage (one
 * server), else the run fails (usage on other shards would be billed as
 * none).
 */
enum meter_db_status billing_run(PGconn *db, struct meter_shard_links *shards,
                                 const char *const *accounts, size_t n,
                                 int year, int month, bool finalize,
                                 const char *seller,
                                 struct billing_outcome *out,
                                 struct meter_err *e);

/* The same for one account: ROWS, or its failure (HARD, out->error's). */
enum meter_db_status billing_run_one(PGconn *db, const char *account, int year,
                                     int month, bool finalize,
                                     const char *seller,
                                     struct billing_outcome *out,
                                     struct meter_err *e);

/* The invoice the run would compute for the period, every part priced
 * with book instead of the account's (NULL: its own), in inv (release
 * with report_invoice_release); nothing is stored. db is the catalog:
 * over shards the account's usage is read on its shard. */
enum meter_db_status billing_preview(PGconn *db, const char *account, int year,
                                     int month, const struct pricing_book *book,
                                     struct report_invoice *inv,
                                     struct meter_err *e);

/* Reads document ref (a number, or a draft's id) into inv, only among
 * account's when account is not NULL: ROWS, NONE if there is none, or
 * the failure. A final document is checked against the SHA-256 stored
 * when it was issued: one that no longer matches is HARD, with *altered
 * set (altered may be NULL). */
enum meter_db_status billing_document(PGconn *db, const char *ref,
                                      const char *account,
                                      struct report_invoice *inv, bool *altered,
                                      struct meter_err *e);

/* Voids final invoice number with a final credit note giving reason,
 * whose number goes to credit: ROWS, or the failure (already void, not
 * final, no such invoice). */
enum meter_db_status billing_void(PGconn *db, const char *number,
                                  const char *reason, char credit[16],
                                  struct meter_err *e);

/* A part of a period spent on one price book, as the invoice run cuts
 * the period (whole days), with that version of the book as stored. */
struct billing_book_part {
    char book_id[PRICING_ID_MAX + 1];
    int version;
    int64_t from, to;                /* Unix seconds, multiples of 86,400 */
    const struct pricing_book *book; /* parsed; in the period's books */
};

/* An account and the books it is on during one period. */
struct billing_period {
    char name[801]; /* "" if it has none */
    struct billing_book_part parts[31];
    size_t nparts;               /* 0: on no book in the period */
    struct meter_db_books books; /* the parts' books, owned */
};

/* Reads account and the parts of (year, month) it spends on each book,
 * in one read-only transaction: ROWS, NONE if there is no such account,
 * or the failure. Release *out with billing_account_period_release
 * whatever the result. */
enum meter_db_status billing_account_period(PGconn *db, const char *account,
                                            int year, int month,
                                            struct billing_period *out,
                                            struct meter_err *e);
/* Frees the parts' books; p may be NULL. */
void billing_account_period_release(struct billing_period *p);

#endif
