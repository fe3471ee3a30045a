/*
 * report.h - what the pricing library computes, for people and
 * programs: statements as JSON (every amount and quantity a decimal
 * string, never a JSON number) and as a text table; invoices (the
 * document, its late-usage lines, its canonical form and hash) as JSON,
 * CSV, HTML and PDF.
 *
 * No database. Functions that write return 0, or -1 with a message in
 * the caller's struct meter_err; nothing here keeps state.
 */
#ifndef REPORT_H
#define REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "meter_util.h"
#include "pricing.h"

/* One statement as a JSON object (new reference; NULL out of memory). */
json_t *report_statement_json(const struct pricing_statement *st);

/* The n statements as an indented JSON array, then a newline. */
int report_statements_json(FILE *out, const struct pricing_statement *st,
                           size_t n, struct meter_err *e);

/* The n statements for a person: one block of lines each. */
int report_statements_table(FILE *out, const struct pricing_statement *st,
                            size_t n, struct meter_err *e);

/* ---- invoices ------------------------------------------------------------ */

#define REPORT_KIND_MAX 32

/* One line of an invoice or credit note. */
struct report_line {
    char kind[REPORT_KIND_MAX + 1];       /* a statement's kind, late_usage */
    char corrects[REPORT_KIND_MAX + 1];   /* late_usage: the kind corrected */
    int year, month;                      /* the period whose usage it bills */
    char book[PRICING_ID_MAX + 1];        /* the pricing book, "" if none */
    int version;                          /* of book */
    char instance[PRICING_ID_MAX + 1];    /* an instance line's type */
    char grant[PRICING_GRANT_ID_MAX + 1]; /* a credit_grant line's */
    char description[160];
    bool has_quantity;
    struct pricing_dec quantity; /* display units, 6 decimals */
    char unit[24];
    bool has_unit_price;
    struct pricing_dec unit_price;
    struct pricing_dec amount; /* 6 decimals */
};

/* An invoice or a credit note; strings are "" where they do not apply. */
struct report_invoice {
    int64_t id;     /* the document's id (a draft is named by it) */
    char kind[16];  /* "invoice" or "credit_note" */
    char status[8]; /* "draft", "final", or "void" (a credit note voids it) */
    char number[16];
    char account_id[PRICING_ID_MAX + 1];
    char account_name[801]; /* 200 characters of UTF-8 */
    char seller[801];
    int year, month; /* the period */
    char currency[4];
    char created_at[32], finalized_at[32]; /* RFC 3339 UTC */
    char voids[16];                        /* credit note: number voided */
    char voided_by[16];                    /* void invoice: the credit note */
    char reason[501];                      /* credit note: why */
    char sha256[65];                       /* hex, of the canonical form */
    struct report_line *lines;
    size_t nlines, lines_cap;
    struct pricing_dec total; /* to the currency's minor unit */
};

/* A line's numbers as written everywhere: quantity (6 decimals), unit
 * price (exact, trailing zeros dropped), amount (6 decimals); "" where a
 * line has none. */
struct report_cells {
    char quantity[64], unit_price[64], amount[64];
};
void report_line_cells(const struct report_line *l, struct report_cells *c);

/* Frees inv's lines (inv itself is the caller's). */
void report_invoice_release(struct report_invoice *inv);

/* Appends a copy of l. */
int report_invoice_add_line(struct report_invoice *inv,
                            const struct report_line *l, struct meter_err *e);

/* Appends st's lines, naming book and version, billed to st's period. */
int report_invoice_add_statement(struct report_invoice *inv,
                                 const struct pricing_statement *st,
                                 const char *book, int version,
                                 struct meter_err *e);

/*
 * Late usage (docs/invoicing.md): for period (year, month), what a fresh
 * rating gives (fresh) less what documents already billed for it
 * (billed: their lines of that period), line by line, matched by the
 * kind (or the kind a late_usage line corrects), book, version and
 * instance type. credit_grant lines are never rated again and take no
 * part. Each nonzero difference is appended as a late_usage line.
 */
int report_invoice_add_late(struct report_invoice *inv, int year, int month,
                            const struct report_line *fresh, size_t nfresh,
                            const struct report_line *billed, size_t nbilled,
                            struct meter_err *e);

/* Sets total: the sum of the lines rounded half to even to the
 * currency's minor unit, never below zero. */
int report_invoice_total(struct report_invoice *inv, struct meter_err *e);

/* The document as JSON (new reference; NULL out of memory). */
json_t *report_invoice_json(const struct report_invoice *inv);

/* SHA-256 (hex) of the canonical form: the JSON without status, sha256
 * and voided_by (what can change after finalization), keys sorted,
 * compact, ASCII. */
int report_invoice_hash(const struct report_invoice *inv, char hex[65],
                        struct meter_err *e);

/* Writes inv as format: "json", "csv" (a header, one row per line),
 * "html" (a page to print) or "pdf". */
int report_invoice_write(FILE *out, const struct report_invoice *inv,
                         const char *format, struct meter_err *e);

/* Whether format is one report_invoice_write knows; its media type. */
const char *report_invoice_media_type(const char *format);
/* The Content-Security-Policy source that allows the one inline
 * stylesheet of the "html" format and nothing else ("'sha256-...'"),
 * for a server that sends the document with the pages' policy. */
#define REPORT_STYLE_HASH_LEN 64
void report_invoice_html_style_hash(char out[REPORT_STYLE_HASH_LEN]);

#endif
