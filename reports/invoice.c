/*
 * invoice.c - the invoice document: its lines (a statement's, per book,
 * and late usage as differences line by line), its total, its JSON, its
 * canonical form and hash, and CSV. HTML and PDF are invoice_html.c and
 * invoice_pdf.c.
 */
#include "report_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

void
report_invoice_release(struct report_invoice *inv)
{
    free(inv->lines);
    inv->lines = NULL;
    inv->nlines = inv->lines_cap = 0;
}

int
report_invoice_add_line(struct report_invoice *inv, const struct report_line *l,
                        struct meter_err *e)
{
    if (inv->nlines == inv->lines_cap) {
        size_t nc = inv->lines_cap ? 2 * inv->lines_cap : 16;
        struct report_line *p = realloc(inv->lines, nc * sizeof(*p));
        if (!p)
            return meter_fail(e, "out of memory");
        inv->lines = p;
        inv->lines_cap = nc;
    }
    inv->lines[inv->nlines++] = *l;
    return 0;
}

int
report_invoice_add_statement(struct report_invoice *inv,
                             const struct pricing_statement *st,
                             const char *book, int version, struct meter_err *e)
{
    for (size_t i = 0; i < st->nlines; i++) {
        const struct pricing_line *p = &st->lines[i];
        struct report_line l = {
            .year = st->year,
            .month = st->month,
            .version = version,
            .has_quantity = p->has_quantity,
            .quantity = p->quantity,
            .has_unit_price = p->has_unit_price,
            .unit_price = p->unit_price,
            .amount = p->amount,
        };
        snprintf(l.kind, sizeof(l.kind), "%s", p->kind);
        snprintf(l.book, sizeof(l.book), "%s", book);
        snprintf(l.description, sizeof(l.description), "%s", p->description);
        snprintf(l.unit, sizeof(l.unit), "%s", p->unit);
        snprintf(l.instance, sizeof(l.instance), "%s", p->instance);
        if (report_invoice_add_line(inv, &l, e) < 0)
            return -1;
    }
    return 0;
}

/* The kind a line bills: its own, or the one a late_usage line corrects. */
static const char *
billed_kind(const struct report_line *l)
{
    return l->corrects[0] ? l->corrects : l->kind;
}

static bool
same_key(const struct report_line *a, const struct report_line *b)
{
    return strcmp(billed_kind(a), billed_kind(b)) == 0 &&
           strcmp(a->book, b->book) == 0 && a->version == b->version &&
           strcmp(a->instance, b->instance) == 0;
}

/* Adds sign x the lines of list matching key into *d; clears
 * d->has_quantity or d->has_unit_price where they stop applying. */
static int
sum_key(struct report_line *d, const struct report_line *key,
        const struct report_line *list, size_t n, int sign, bool *first)
{
    for (size_t i = 0; i < n; i++) {
        const struct report_line *l = &list[i];
        if (!same_key(l, key))
            continue;
        struct pricing_dec a = l->amount, q = l->quantity;
        if (sign < 0) {
            a.v = -a.v;
            q.v = -q.v;
        }
        if (pricing_dec_add(d->amount, a, &d->amount) != PRICING_OK ||
            pricing_dec_add(d->quantity, q, &d->quantity) != PRICING_OK)
            return -1;
        if (*first) {
            snprintf(d->unit, sizeof(d->unit), "%s", l->unit);
            d->has_quantity = l->has_quantity;
            d->has_unit_price = l->has_unit_price;
            d->unit_price = l->unit_price;
            *first = false;
        }
        if (!l->has_quantity || strcmp(l->unit, d->unit) != 0)
            d->has_quantity = false;
        if (!l->has_unit_price ||
            pricing_dec_cmp(l->unit_price, d->unit_price) != 0)
            d->has_unit_price = false;
    }
    return 0;
}

int
report_invoice_add_late(struct report_invoice *inv, int year, int month,
                        const struct report_line *fresh, size_t nfresh,
                        const struct report_line *billed, size_t nbilled,
                        struct meter_err *e)
{
    /* Keys in the order of the fresh lines, then of the billed ones. */
    for (size_t i = 0; i < nfresh + nbilled; i++) {
        const struct report_line *key =
            i < nfresh ? &fresh[i] : &billed[i - nfresh];
        if (strcmp(billed_kind(key), "credit_grant") == 0)
            continue; /* never rated again (rules section 14) */
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = same_key(j < nfresh ? &fresh[j] : &billed[j - nfresh], key);
        if (seen)
            continue;
        struct report_line d = {.year = year, .month = month};
        bool first = true;
        if (sum_key(&d, key, fresh, nfresh, 1, &first) < 0 ||
            sum_key(&d, key, billed, nbilled, -1, &first) < 0)
            return meter_fail(e, "late usage of %04d-%02d: amount overflow",
                              year, month);
        if (d.amount.v == 0)
            continue;
        snprintf(d.kind, sizeof(d.kind), "late_usage");
        snprintf(d.corrects, sizeof(d.corrects), "%s", billed_kind(key));
        snprintf(d.book, sizeof(d.book), "%s", key->book);
        d.version = key->version;
        snprintf(d.instance, sizeof(d.instance), "%s", key->instance);
        snprintf(d.description, sizeof(d.description),
                 "late usage of %04d-%02d: %.120s", year, month,
                 key->description);
        if (!d.has_quantity) {
            d.quantity.v = 0;
            d.unit[0] = '\0';
        }
        if (!d.has_unit_price)
            d.unit_price.v = 0;
        if (report_invoice_add_line(inv, &d, e) < 0)
            return -1;
    }
    return 0;
}

int
report_invoice_total(struct report_invoice *inv, struct meter_err *e)
{
    struct pricing_dec sum = {0};
    for (size_t i = 0; i < inv->nlines; i++)
        if (pricing_dec_add(sum, inv->lines[i].amount, &sum) != PRICING_OK)
            return meter_fail(e, "account '%s' %04d-%02d: amount overflow",
                              inv->account_id, inv->year, inv->month);
    int minor = pricing_currency_minor_unit(inv->currency);
    if (minor < 0)
        return meter_fail(e, "currency '%s' is not one this project accepts",
                          inv->currency);
    if (pricing_dec_round(sum, (unsigned)minor, &inv->total) != PRICING_OK)
        return meter_fail(e, "account '%s' %04d-%02d: amount overflow",
                          inv->account_id, inv->year, inv->month);
    if (inv->total.v < 0)
        inv->total.v = 0;
    return 0;
}

/* ---- JSON ---------------------------------------------------------------- */

static json_t *
str_or_null(const char *s)
{
    return s[0] ? json_string(s) : json_null();
}

static json_t *
line_json(const struct report_line *l)
{
    char period[16];
    snprintf(period, sizeof(period), "%04d-%02d", l->year, l->month);
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(l->kind));
    json_object_set_new(o, "corrects", str_or_null(l->corrects));
    json_object_set_new(o, "period", json_string(period));
    json_object_set_new(o, "price_book", str_or_null(l->book));
    json_object_set_new(o, "price_book_version",
                        l->book[0] ? json_integer(l->version) : json_null());
    /* Only on the lines they name, so that documents without them keep
     * their canonical form. */
    if (l->instance[0])
        json_object_set_new(o, "instance", json_string(l->instance));
    if (l->grant[0])
        json_object_set_new(o, "grant", json_string(l->grant));
    report_priced_json(o, l->description, l->has_quantity ? &l->quantity : NULL,
                       l->unit, l->has_unit_price ? &l->unit_price : NULL,
                       l->amount);
    return o;
}

/* The document; with canonical, without what may change once final. */
static json_t *
invoice_json(const struct report_invoice *inv, bool canonical)
{
    char period[16];
    snprintf(period, sizeof(period), "%04d-%02d", inv->year, inv->month);
    json_t *lines = json_array();
    for (size_t i = 0; i < inv->nlines; i++)
        json_array_append_new(lines, line_json(&inv->lines[i]));
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(inv->id));
    json_object_set_new(o, "kind", json_string(inv->kind));
    json_object_set_new(o, "number", str_or_null(inv->number));
    if (!canonical)
        json_object_set_new(o, "status", json_string(inv->status));
    json_object_set_new(o, "account_id", json_string(inv->account_id));
    json_object_set_new(o, "account_name", str_or_null(inv->account_name));
    json_object_set_new(o, "seller", json_string(inv->seller));
    json_object_set_new(o, "period", json_string(period));
    json_object_set_new(o, "currency", json_string(inv->currency));
    if (!canonical)
        json_object_set_new(o, "created_at", str_or_null(inv->created_at));
    json_object_set_new(o, "finalized_at", str_or_null(inv->finalized_at));
    json_object_set_new(o, "voids", str_or_null(inv->voids));
    json_object_set_new(o, "reason", str_or_null(inv->reason));
    json_object_set_new(o, "lines", lines);
    json_object_set_new(
        o, "total",
        report_dec_json(inv->total, pricing_money_decimals(inv->currency)));
    if (!canonical) {
        json_object_set_new(o, "voided_by", str_or_null(inv->voided_by));
        json_object_set_new(o, "sha256", str_or_null(inv->sha256));
    }
    return o;
}

json_t *
report_invoice_json(const struct report_invoice *inv)
{
    return invoice_json(inv, false);
}

int
report_invoice_hash(const struct report_invoice *inv, char hex[65],
                    struct meter_err *e)
{
    json_t *o = invoice_json(inv, true);
    char *text =
        o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII)
          : NULL;
    json_decref(o);
    if (!text)
        return meter_fail(e, "out of memory");
    uint8_t d[SHA256_DIGEST_SIZE];
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, strlen(text), (const uint8_t *)text);
    sha256_digest(&ctx, sizeof(d), d);
    free(text);
    for (size_t i = 0; i < sizeof(d); i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return 0;
}

/* ---- CSV ----------------------------------------------------------------- */

/* A CSV field, through the project's one formula guard (a description
 * from a book starting with = is shown, not run; a credit's -1.50 stays
 * a number), then its separator. */
static void
csv_field(FILE *out, const char *s, bool last)
{
    meter_csv_write(out, s);
    fputs(last ? "\r\n" : ",", out);
}

static int
invoice_csv(FILE *out, const struct report_invoice *inv)
{
    static const char *const header[] = {
        "document",    "account_id", "period",
        "line",        "kind",       "corrects",
        "line_period", "price_book", "price_book_version",
        "instance",    "grant",      "description",
        "quantity",    "unit",       "unit_price",
        "amount",      "currency"};
    size_t nh = sizeof(header) / sizeof(header[0]);
    for (size_t i = 0; i < nh; i++)
        csv_field(out, header[i], i + 1 == nh);
    char doc[32], period[16], line_period[16], no[24], version[16];
    if (inv->number[0])
        snprintf(doc, sizeof(doc), "%s", inv->number);
    else
        snprintf(doc, sizeof(doc), "%" PRId64, inv->id);
    snprintf(period, sizeof(period), "%04d-%02d", inv->year, inv->month);
    for (size_t i = 0; i < inv->nlines; i++) {
        const struct report_line *l = &inv->lines[i];
        struct report_cells c;
        report_line_cells(l, &c);
        snprintf(no, sizeof(no), "%zu", i + 1);
        snprintf(line_period, sizeof(line_period), "%04d-%02d", l->year,
                 l->month);
        snprintf(version, sizeof(version), "%d", l->version);
        const char *row[] = {doc,
                             inv->account_id,
                             period,
                             no,
                             l->kind,
                             l->corrects,
                             line_period,
                             l->book,
                             l->book[0] ? version : "",
                             l->instance,
                             l->grant,
                             l->description,
                             c.quantity,
                             l->has_quantity ? l->unit : "",
                             c.unit_price,
                             c.amount,
                             inv->currency};
        for (size_t k = 0; k < nh; k++)
            csv_field(out, row[k], k + 1 == nh);
    }
    return 0;
}

const char *
report_invoice_media_type(const char *format)
{
    if (strcmp(format, "json") == 0)
        return "application/json";
    if (strcmp(format, "csv") == 0)
        return "text/csv; charset=utf-8";
    if (strcmp(format, "html") == 0)
        return "text/html; charset=utf-8";
    if (strcmp(format, "pdf") == 0)
        return "application/pdf";
    return NULL;
}

int
report_invoice_write(FILE *out, const struct report_invoice *inv,
                     const char *format, struct meter_err *e)
{
    int rc;
    if (strcmp(format, "json") == 0) {
        json_t *o = report_invoice_json(inv);
        rc = o ? json_dumpf(o, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : -1;
        fputc('\n', out);
        json_decref(o);
    } else if (strcmp(format, "csv") == 0) {
        rc = invoice_csv(out, inv);
    } else if (strcmp(format, "html") == 0) {
        rc = report_invoice_html(out, inv, e);
    } else if (strcmp(format, "pdf") == 0) {
        rc = report_invoice_pdf(out, inv, e);
    } else {
        return meter_fail(e, "format '%s' is not json, csv, html or pdf",
                          format);
    }
    if (rc < 0 || fflush(out) != 0 || ferror(out))
        return e->msg[0] ? -1 : meter_fail(e, "cannot write the invoice");
    return 0;
}
