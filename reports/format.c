/*
 * format.c - the strings of a document that every rendering shows the
 * same way: a line's numbers, the total, the title.
 */
#include "report_int.h"

#include <inttypes.h>
#include <string.h>

void
report_line_cells(const struct report_line *l, struct report_cells *c)
{
    c->quantity[0] = c->unit_price[0] = '\0';
    if (l->has_quantity)
        pricing_dec_format(l->quantity, 6, c->quantity, sizeof(c->quantity));
    if (l->has_unit_price)
        report_format_rate(l->unit_price, c->unit_price, sizeof(c->unit_price));
    pricing_dec_format(l->amount, 6, c->amount, sizeof(c->amount));
}

void
report_total_text(const struct report_invoice *inv, char *buf, size_t n)
{
    char t[64];
    pricing_money_format(inv->total, inv->currency, t, sizeof(t));
    snprintf(buf, n, "%s %s", t, inv->currency);
}

void
report_invoice_title(const struct report_invoice *inv, char *buf, size_t n)
{
    bool credit = strcmp(inv->kind, "credit_note") == 0;
    if (inv->number[0])
        snprintf(buf, n, "%s %s", credit ? "Credit note" : "Invoice",
                 inv->number);
    else
        snprintf(buf, n, "Draft %s %" PRId64,
                 credit ? "credit note" : "invoice", inv->id);
}
