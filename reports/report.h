/*
 * report.h - renderings of what the pricing library computes, for
 * people and programs: statements as JSON (every amount and quantity a
 * decimal string, never a JSON number) and as a text table. Invoices
 * (CSV, HTML, PDF) and dashboards come here next.
 *
 * No database. Functions that write return 0, or -1 with a message in
 * the caller's struct meter_err; nothing here keeps state.
 */
#ifndef REPORT_H
#define REPORT_H

#include <stddef.h>
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

#endif
