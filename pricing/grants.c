/*
 * grants.c - credit grants (rules section 14): which grants a book
 * gives, when one can be spent, and the order and amounts in which an
 * invoice spends them. The balances themselves are the caller's: the
 * invoice run keeps them in the database, offline rating in memory
 * (pricing_statements_grant).
 */
#include "rate_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
pricing_period_index(int year, int month)
{
    return year * 12 + month - 1;
}

size_t
pricing_book_grants(const struct pricing_book *book, int year, int month,
                    struct pricing_grant *out, size_t max)
{
    for (size_t i = 0; i < book->ngrants && i < max; i++) {
        const struct book_grant *g = &book->grants[i];
        memset(&out[i], 0, sizeof(out[i]));
        snprintf(out[i].id, sizeof(out[i].id), "%s/%s", book->id, g->id);
        snprintf(out[i].currency, sizeof(out[i].currency), "%s",
                 book->currency);
        out[i].amount = out[i].balance = g->amount;
        out[i].received = pricing_period_index(year, month);
        out[i].expires_after = g->expires_after;
    }
    return book->ngrants;
}

bool
pricing_grant_spendable(const struct pricing_grant *g, int year, int month,
                        const char *currency)
{
    int p = pricing_period_index(year, month);
    return g->balance.v > 0 && strcmp(g->currency, currency) == 0 &&
           p >= g->received &&
           (g->expires_after == 0 ||
            (int64_t)p < (int64_t)g->received + g->expires_after);
}

void
pricing_grant_describe(const struct pricing_grant *g, char *buf, size_t n)
{
    char left[48];
    pricing_dec_format(g->balance, 6, left, sizeof(left));
    snprintf(buf, n, "credit grant %.40s, %.30s left", g->id, left);
}

/* The spending order: soonest expiry first, never last; then the period
 * received; then the id. */
static bool
before(const struct pricing_grant *a, const struct pricing_grant *b)
{
    if ((a->expires_after == 0) != (b->expires_after == 0))
        return b->expires_after == 0;
    if (a->expires_after && b->expires_after) {
        long ea = (long)a->received + a->expires_after,
             eb = (long)b->received + b->expires_after;
        if (ea != eb)
            return ea < eb;
    }
    if (a->received != b->received)
        return a->received < b->received;
    return strcmp(a->id, b->id) < 0;
}

size_t
pricing_grants_spend(struct pricing_grant *g, size_t n, int year, int month,
                     const char *currency, struct pricing_dec total,
                     size_t *order, struct pricing_dec *spent)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        spent[i].v = 0;
        if (!pricing_grant_spendable(&g[i], year, month, currency))
            continue;
        /* Insertion into order[0..k), kept sorted. */
        size_t j = k++;
        for (; j > 0 && before(&g[i], &g[order[j - 1]]); j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    size_t paid = 0;
    for (size_t x = 0; x < k; x++) {
        struct pricing_grant *gr = &g[order[x]];
        if (total.v <= 0)
            break;
        pricing_i128 pay = gr->balance.v < total.v ? gr->balance.v : total.v;
        spent[order[x]].v = -pay;
        gr->balance.v -= pay;
        total.v -= pay;
        order[paid++] = order[x];
    }
    return paid;
}

int
pricing_statement_spend(const struct pricing_book *book,
                        struct pricing_grant *g, size_t n,
                        struct pricing_statement *st, struct pricing_err *e)
{
    struct pricing_dec sum = {0};
    for (size_t i = 0; i < st->nlines; i++)
        if (pricing_dec_add(sum, st->lines[i].amount, &sum) != PRICING_OK)
            goto overflow;
    size_t order[PRICING_GRANTS_MAX];
    struct pricing_dec spent[PRICING_GRANTS_MAX];
    size_t k = pricing_grants_spend(g, n, st->year, st->month, st->currency,
                                    sum, order, spent);
    for (size_t x = 0; x < k; x++) {
        const struct pricing_grant *gr = &g[order[x]];
        struct pricing_line *l = rate_add_line(st, "credit_grant", e);
        if (!l)
            return -1;
        snprintf(l->grant, sizeof(l->grant), "%s", gr->id);
        pricing_grant_describe(gr, l->description, sizeof(l->description));
        l->amount = spent[order[x]];
        rate_keep_line(st);
        if (pricing_dec_add(sum, l->amount, &sum) != PRICING_OK)
            goto overflow;
    }
    if (pricing_dec_round(sum, (unsigned)book->minor_unit, &st->total) !=
        PRICING_OK)
        goto overflow;
    if (st->total.v < 0)
        st->total.v = 0;
    return 0;
overflow:
    snprintf(e->msg, sizeof(e->msg), "account '%s' %04d-%02d: amount overflow",
             st->account_id, st->year, st->month);
    return -1;
}

int
pricing_statements_grant(const struct pricing_book *book,
                         struct pricing_statement *st, size_t n,
                         struct pricing_err *e)
{
    if (book->ngrants == 0)
        return 0;
    struct pricing_grant g[PRICING_GRANTS_MAX];
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        /* An account's first statement is its first period. */
        if (i == 0 || strcmp(st[i].account_id, st[i - 1].account_id) != 0)
            ng = pricing_book_grants(book, st[i].year, st[i].month, g,
                                     PRICING_GRANTS_MAX);
        if (pricing_statement_spend(book, g, ng, &st[i], e) < 0)
            return -1;
    }
    return 0;
}
