/*
 * statement.c - statements as JSON (amounts and quantities as decimal
 * strings, never JSON numbers) and as a table for a person.
 */
#include "report_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void
report_format_rate(struct pricing_dec d, char *buf, size_t n)
{
    pricing_dec_format(d, PRICING_SCALE, buf, n);
    char *end = buf + strlen(buf) - 1;
    while (*end == '0')
        *end-- = '\0';
    if (*end == '.')
        *end = '\0';
}

json_t *
report_dec_json(struct pricing_dec d, unsigned decimals)
{
    char buf[64];
    pricing_dec_format(d, decimals, buf, sizeof(buf));
    return json_string(buf);
}

static json_t *
u64_json(uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof(buf), "%" PRIu64, v);
    return json_string(buf);
}

void
report_priced_json(json_t *o, const char *description,
                   const struct pricing_dec *quantity, const char *unit,
                   const struct pricing_dec *unit_price,
                   struct pricing_dec amount)
{
    char rate[64];
    json_object_set_new(o, "description", json_string(description));
    json_object_set_new(o, "quantity",
                        quantity ? report_dec_json(*quantity, 6) : json_null());
    json_object_set_new(o, "unit", quantity ? json_string(unit) : json_null());
    if (unit_price)
        report_format_rate(*unit_price, rate, sizeof(rate));
    json_object_set_new(o, "unit_price",
                        unit_price ? json_string(rate) : json_null());
    json_object_set_new(o, "amount", report_dec_json(amount, 6));
}

json_t *
report_statement_json(const struct pricing_statement *inv)
{
    char period[16];
    json_t *lines = json_array();
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct pricing_line *l = &inv->lines[i];
        json_t *o = json_object();
        json_object_set_new(o, "kind", json_string(l->kind));
        if (l->instance[0])
            json_object_set_new(o, "instance", json_string(l->instance));
        if (l->grant[0])
            json_object_set_new(o, "grant", json_string(l->grant));
        report_priced_json(
            o, l->description, l->has_quantity ? &l->quantity : NULL, l->unit,
            l->has_unit_price ? &l->unit_price : NULL, l->amount);
        json_array_append_new(lines, o);
    }
    snprintf(period, sizeof(period), "%04d-%02d", inv->year, inv->month);
    json_t *warnings = json_object();
    json_object_set_new(warnings, "duplicates", u64_json(inv->duplicates));
    json_object_set_new(warnings, "conflicts", u64_json(inv->conflicts));
    json_t *o = json_object();
    json_object_set_new(o, "account_id", json_string(inv->account_id));
    json_object_set_new(o, "period", json_string(period));
    json_object_set_new(o, "currency", json_string(inv->currency));
    json_object_set_new(o, "price_book", json_string(inv->price_book));
    json_object_set_new(o, "lines", lines);
    json_object_set_new(
        o, "total",
        report_dec_json(inv->total, pricing_money_decimals(inv->currency)));
    json_object_set_new(o, "warnings", warnings);
    return o;
}

int
report_statements_json(FILE *out, const struct pricing_statement *st, size_t n,
                       struct meter_err *e)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        if (json_array_append_new(arr, report_statement_json(&st[i])) < 0) {
            json_decref(arr);
            arr = NULL;
        }
    int rc =
        arr ? json_dumpf(arr, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : -1;
    fputc('\n', out);
    json_decref(arr);
    if (rc < 0 || ferror(out))
        return meter_fail(e, "cannot write the statements");
    return 0;
}

int
report_statements_table(FILE *out, const struct pricing_statement *st, size_t n,
                        struct meter_err *e)
{
    for (size_t i = 0; i < n; i++) {
        const struct pricing_statement *v = &st[i];
        char q[64], a[64], r[64], t[64];
        if (i)
            fputc('\n', out);
        fprintf(out, "account %s, period %04d-%02d, price book %s (%s)\n",
                v->account_id, v->year, v->month, v->price_book, v->currency);
        fprintf(out, "  %-18s %22s %-12s %14s %16s\n", "line", "quantity",
                "unit", "unit price", "amount");
        for (size_t k = 0; k < v->nlines; k++) {
            const struct pricing_line *l = &v->lines[k];
            pricing_dec_format(l->quantity, 6, q, sizeof(q));
            pricing_dec_format(l->amount, 6, a, sizeof(a));
            report_format_rate(l->unit_price, r, sizeof(r));
            fprintf(out, "  %-18s %22s %-12s %14s %16s\n", l->kind,
                    l->has_quantity ? q : "", l->has_quantity ? l->unit : "",
                    l->has_unit_price ? r : "", a);
        }
        pricing_money_format(v->total, v->currency, t, sizeof(t));
        fprintf(out, "  %-18s %22s %-12s %14s %16s %s\n", "total", "", "", "",
                t, v->currency);
        if (v->duplicates || v->conflicts)
            fprintf(out,
                    "  warnings: %" PRIu64 " duplicate and %" PRIu64
                    " conflicting seconds ignored\n",
                    v->duplicates, v->conflicts);
    }
    if (fflush(out) != 0 || ferror(out))
        return meter_fail(e, "cannot write the statements");
    return 0;
}
