/*
 * statement_cmp.h - whether two lists of statements are the same to the
 * last decimal: every line's every field, the totals and the exact
 * quantities. For the tests that price the same usage two ways (runs
 * and seconds).
 */
#ifndef STATEMENT_CMP_H
#define STATEMENT_CMP_H

#include <stddef.h>

#include "pricing.h"

/* NULL if a and b are the same, else what differs first (a static
 * buffer, overwritten by the next call). */
const char *statements_differ(const struct pricing_statement *a, size_t na,
                              const struct pricing_statement *b, size_t nb);

#endif
