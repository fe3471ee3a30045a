/*
 * statement_cmp.c - see statement_cmp.h.
 */
#include "statement_cmp.h"

#include <stdio.h>
#include <string.h>

static char why[512];

static const char *
dec_differ(const char *what, size_t i, size_t l, struct pricing_dec x,
           struct pricing_dec y)
{
    if (pricing_dec_cmp(x, y) == 0)
        return NULL;
    char a[48], b[48];
    pricing_dec_format(x, 12, a, sizeof(a));
    pricing_dec_format(y, 12, b, sizeof(b));
    snprintf(why, sizeof(why), "statement %zu line %zu: %s %s and %s", i, l,
             what, a, b);
    return why;
}

static const char *
line_differ(size_t i, size_t l, const struct pricing_line *x,
            const struct pricing_line *y)
{
    const char *d;
    if (strcmp(x->kind, y->kind) || strcmp(x->instance, y->instance) ||
        strcmp(x->grant, y->grant) || strcmp(x->description, y->description) ||
        strcmp(x->unit, y->unit) || x->has_quantity != y->has_quantity ||
        x->has_unit_price != y->has_unit_price) {
        snprintf(why, sizeof(why),
                 "statement %zu line %zu: '%s' '%s' and '%s' '%s'", i, l,
                 x->kind, x->description, y->kind, y->description);
        return why;
    }
    if ((d = dec_differ("quantity", i, l, x->quantity, y->quantity)) ||
        (d = dec_differ("unit price", i, l, x->unit_price, y->unit_price)) ||
        (d = dec_differ("amount", i, l, x->amount, y->amount)))
        return d;
    return NULL;
}

const char *
statements_differ(const struct pricing_statement *a, size_t na,
                  const struct pricing_statement *b, size_t nb)
{
    if (na != nb) {
        snprintf(why, sizeof(why), "%zu statements and %zu", na, nb);
        return why;
    }
    for (size_t i = 0; i < na; i++) {
        const struct pricing_statement *x = &a[i], *y = &b[i];
        const char *d;
        if (strcmp(x->account_id, y->account_id) || x->year != y->year ||
            x->month != y->month || strcmp(x->currency, y->currency) ||
            strcmp(x->price_book, y->price_book)) {
            snprintf(why, sizeof(why), "statement %zu: %s %d-%d and %s %d-%d",
                     i, x->account_id, x->year, x->month, y->account_id,
                     y->year, y->month);
            return why;
        }
        if (x->nlines != y->nlines) {
            snprintf(why, sizeof(why), "statement %zu: %zu lines and %zu", i,
                     x->nlines, y->nlines);
            return why;
        }
        for (size_t l = 0; l < x->nlines; l++)
            if ((d = line_differ(i, l, &x->lines[l], &y->lines[l])))
                return d;
        if ((d = dec_differ("total", i, 0, x->total, y->total)))
            return d;
        if (memcmp(&x->q, &y->q, sizeof(x->q)) != 0) {
            snprintf(why, sizeof(why),
                     "statement %zu: quantities differ (running %llu and "
                     "%llu, credited %llu and %llu, padding %llu and %llu)",
                     i, (unsigned long long)x->q.running_s,
                     (unsigned long long)y->q.running_s,
                     (unsigned long long)x->q.credited_s,
                     (unsigned long long)y->q.credited_s,
                     (unsigned long long)x->q.padding_s,
                     (unsigned long long)y->q.padding_s);
            return why;
        }
        if (x->duplicates != y->duplicates || x->conflicts != y->conflicts) {
            snprintf(why, sizeof(why),
                     "statement %zu: repeats %llu/%llu and %llu/%llu", i,
                     (unsigned long long)x->duplicates,
                     (unsigned long long)x->conflicts,
                     (unsigned long long)y->duplicates,
                     (unsigned long long)y->conflicts);
            return why;
        }
    }
    return NULL;
}
