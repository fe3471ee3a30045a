/*
 * report_int.h - shared by the files of reports/; private.
 */
#ifndef REPORT_INT_H
#define REPORT_INT_H

#include "report.h"

/* A decimal with its trailing zeros dropped: "0.000014", "150". */
void report_format_rate(struct pricing_dec d, char *buf, size_t n);

/* d rounded to `decimals` places as a JSON string (new reference). */
json_t *report_dec_json(struct pricing_dec d, unsigned decimals);

/* Sets the priced fields of a line's JSON: description, quantity and
 * unit (null without quantity), unit_price (null without), amount. */
void report_priced_json(json_t *o, const char *description,
                        const struct pricing_dec *quantity, const char *unit,
                        const struct pricing_dec *unit_price,
                        struct pricing_dec amount);

/* An invoice's total with its currency: "0.47 USD". */
void report_total_text(const struct report_invoice *inv, char *buf, size_t n);

/* The document's title: "Invoice 2026-000001", "Draft invoice 42",
 * "Credit note 2026-000002". */
void report_invoice_title(const struct report_invoice *inv, char *buf,
                          size_t n);

int report_invoice_html(FILE *out, const struct report_invoice *inv,
                        struct meter_err *e);
int report_invoice_pdf(FILE *out, const struct report_invoice *inv,
                       struct meter_err *e);

#endif
