/*
 * replay_out.c - costsim replay's outputs: a terminal table, or JSON
 * whose amounts are decimal strings and whose lines are the engine's
 * statement lines as meterctl rate writes them (reports/).
 */
#include "replay_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

/* The sum of the lines of the n statements st (6 decimals each). */
static struct pricing_dec
cs_lines_sum(const struct pricing_statement *st, size_t n)
{
    struct pricing_dec s = {0};
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < st[k].nlines; i++)
            if (pricing_dec_add(s, st[k].lines[i].amount, &s) != PRICING_OK)
                return (struct pricing_dec){0}; /* cannot: 6-decimal lines */
    return s;
}

static const char replay_note[] =
    "each book prices the account's stored usage of the period as if the "
    "account had been on it the whole month: subscriptions and minimum "
    "commits for every day, no credit grants; late usage of earlier periods "
    "and quarantined usage are not in it. The account's own books are rated "
    "as its invoice run rates the period, before late usage and grants";

/* Unix seconds as RFC 3339 UTC. */
static const char *
rfc3339(int64_t ts, char *buf, size_t n)
{
    time_t t = (time_t)ts;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, n, "%lld", (long long)ts);
    return buf;
}

/* Unix seconds (a day's start) as YYYY-MM-DD. */
static const char *
day(int64_t ts, char *buf, size_t n)
{
    rfc3339(ts, buf, n);
    if (strlen(buf) > 10)
        buf[10] = '\0';
    return buf;
}

static const char *
fmt(struct pricing_dec d, unsigned decimals, char *buf, size_t n)
{
    pricing_dec_format(d, decimals, buf, n);
    return buf;
}

/* A rate as exact as it is, without trailing zeros. */
static const char *
fmt_rate(struct pricing_dec d, char *buf, size_t n)
{
    pricing_dec_format(d, PRICING_SCALE, buf, n);
    char *end = buf + strlen(buf) - 1;
    while (end > buf && *end == '0')
        *end-- = '\0';
    if (*end == '.')
        *end = '\0';
    return buf;
}

/* Books in the order printed: priced ones by total, then the others,
 * each by file name. */
static const struct cs_replay *sort_rp;

static int
by_total(const void *x, const void *y)
{
    const struct cs_replay_book *a = &sort_rp->books[*(const size_t *)x],
                                *b = &sort_rp->books[*(const size_t *)y];
    if (a->failed != b->failed)
        return a->failed ? 1 : -1;
    /* A lower bound is not a price: after every book priced whole. */
    if (!a->failed && !a->st->unpriced != !b->st->unpriced)
        return a->st->unpriced ? 1 : -1;
    if (!a->failed) {
        int c = pricing_dec_cmp(a->st->total, b->st->total);
        if (c)
            return c;
    }
    return strcmp(a->bk->file, b->bk->file);
}

/* The quantities x's statement left unpriced (pricing_unpriced_quantity);
 * -1 (e set) on overflow. */
static int
unpriced_of(const struct cs_replay_book *x, struct pricing_dec *qty,
            struct pricing_err *e)
{
    for (int d = 0; d < PRICING_NDIMS; d++) {
        const char *unit;
        qty[d] = (struct pricing_dec){0};
        if ((x->st->unpriced >> d & 1) &&
            pricing_unpriced_quantity(x->bk->book, &x->st->q,
                                      (enum pricing_dim)d, &qty[d], &unit,
                                      e) < 0)
            return -1;
    }
    return 0;
}

/* "at least 98.65 USD; 7,650 GiB-hours of storage not priced" */
static const char *
bound_text(const struct cs_replay_book *x, char *buf, size_t n)
{
    struct pricing_dec qty[PRICING_NDIMS];
    struct pricing_err e;
    if (unpriced_of(x, qty, &e) < 0)
        snprintf(buf, n, "%s", e.msg);
    else
        cs_bound_text(x->bk->book, x->st->total, x->st->unpriced, qty, buf, n);
    return buf;
}

static size_t *
order(const struct cs_replay *rp)
{
    size_t *o = malloc((rp->nbooks ? rp->nbooks : 1) * sizeof(*o));
    if (!o)
        return NULL;
    for (size_t i = 0; i < rp->nbooks; i++)
        o[i] = i;
    sort_rp = rp;
    qsort(o, rp->nbooks, sizeof(*o), by_total);
    return o;
}

/* ---- table --------------------------------------------------------------- */

static void
table_lines(FILE *f, const struct pricing_statement *st)
{
    for (size_t i = 0; i < st->nlines; i++) {
        const struct pricing_line *l = &st->lines[i];
        char kind[96], q[48] = "", p[48] = "", a[48];
        snprintf(kind, sizeof(kind), "%s%s%s", l->kind,
                 l->instance[0] ? " " : "", l->instance);
        if (l->has_quantity)
            fmt(l->quantity, 6, q, sizeof(q));
        if (l->has_unit_price)
            fmt_rate(l->unit_price, p, sizeof(p));
        fprintf(f, "    %-20s %20s %-14s %16s %14s\n", kind, q,
                l->has_quantity ? l->unit : "", p,
                fmt(l->amount, 6, a, sizeof(a)));
    }
    if (st->nlines == 0)
        fprintf(f, "    (no lines)\n");
}

static void
table_usage(FILE *f, const struct cs_replay *rp)
{
    const struct cs_usage_facts *u = &rp->facts;
    char t[32];
    fprintf(f,
            "usage: %" PRIu64 " sandboxes, %" PRIu64
            " running seconds, %" PRIu64 " paused seconds, %" PRIu64
            " sessions\n",
            u->sandboxes, u->running_s, u->paused_s, u->sessions);
    if (u->peak)
        fprintf(f,
                "peak concurrency: %" PRIu64 " sandboxes running at once, "
                "first at %s\n",
                u->peak, rfc3339(u->peak_at, t, sizeof(t)));
    else
        fprintf(f, "peak concurrency: 0 (nothing ran)\n");
    if (u->longest_s)
        fprintf(f, "longest session: %" PRIu64 " s, sandbox %s from %s\n",
                u->longest_s, u->longest_sandbox,
                rfc3339(u->longest_from, t, sizeof(t)));
    fprintf(f, "peak disk: %" PRIu64 " bytes held at once\n", u->peak_disk);
    fprintf(f, "limits: %s\n",
            rp->limits_checked ? "checked per book below"
                               : "not checked; the figures above are what "
                                 "they compare");
}

/* Under a priced book: the add-on its plan needs, and every limit the
 * month breaks on it, named (simulator/limits.c). */
static void
table_plan(FILE *f, const struct cs_replay *rp, const struct cs_replay_book *x)
{
    const struct pricing_book *b = x->bk->book;
    const struct sim_plan_month *pm = &x->plan;
    if (!rp->limits_checked || x->failed)
        return;
    bool any = pm->addon >= 0;
    if (pm->addon >= 0) {
        const struct pricing_addon *a =
            &pricing_book_limits(b)->addons[pm->addon];
        const char *cur = pricing_book_currency(b);
        struct pricing_dec with;
        char fee[48], t[48];
        if (pricing_dec_add(x->st->total, a->monthly_fee, &with) != PRICING_OK)
            with = x->st->total;
        fprintf(
            f,
            "    add-on needed: %s (%s a month, %u at once) for %" PRIu64
            " sandboxes at once; the total with it %s\n",
            a->name,
            fmt(a->monthly_fee, pricing_money_decimals(cur), fee, sizeof(fee)),
            a->max_concurrency, rp->facts.peak,
            fmt(with, pricing_money_decimals(cur), t, sizeof(t)));
    }
    for (int l = 0; l < SIM_NLIMITS; l++) {
        char msg[256];
        if (!(pm->broken & (1u << l)))
            continue;
        sim_limit_message(b, (enum sim_limit)l, pm->used[l], msg, sizeof(msg));
        fprintf(f, "    limit broken: %s\n", msg);
        any = true;
    }
    /* The largest sandbox is not measured on replay (replay.c). */
    bool has = false;
    for (int l = 0; l < SIM_LIMIT_SANDBOX_VCPU; l++)
        has |= sim_limit_of(b, (enum sim_limit)l, NULL, NULL);
    if (!any && has)
        fprintf(f, "    limits: none broken\n");
}

static void
table_own(FILE *f, const struct cs_replay *rp)
{
    char a[48], b[48];
    fprintf(f,
            "\nthe account's own books in %04d-%02d, rated as its invoice "
            "run rates the period:\n",
            rp->year, rp->month);
    if (rp->period.nparts == 0)
        fprintf(f, "    none: the account is on no price book in the "
                   "period\n");
    for (size_t k = 0; k < rp->period.nparts; k++) {
        const struct billing_book_part *p = &rp->period.parts[k];
        fprintf(f, "  %s version %d, %s to %s\n", p->book_id, p->version,
                day(p->from, a, sizeof(a)), day(p->to, b, sizeof(b)));
        if (!rp->own_failed && k < rp->nown)
            table_lines(f, &rp->own[k]);
    }
    if (rp->own_failed)
        fprintf(f, "    cannot price: %s\n", rp->own_err.msg);
    else if (rp->nown)
        fprintf(f, "    usage lines: %s %s\n",
                fmt(cs_lines_sum(rp->own, rp->nown), 6, a, sizeof(a)),
                rp->own[0].currency);
    if (!rp->invoiced) {
        fprintf(f, "invoice: none for the period\n");
        return;
    }
    const struct report_invoice *inv = &rp->inv;
    char t[48], u[48], l[48], g[48];
    if (inv->number[0])
        fprintf(f, "invoice %s", inv->number);
    else
        fprintf(f, "invoice draft %lld", (long long)inv->id);
    fprintf(
        f,
        " (%s): total %s %s = usage lines %s + late usage %s + credit "
        "grants %s\n",
        inv->status,
        fmt(inv->total, pricing_money_decimals(inv->currency), t, sizeof(t)),
        inv->currency, fmt(rp->inv_usage, 6, u, sizeof(u)),
        fmt(rp->inv_late, 6, l, sizeof(l)),
        fmt(rp->inv_grants, 6, g, sizeof(g)));
    if (!rp->own_failed && rp->nown) {
        struct pricing_dec d;
        pricing_dec_sub(cs_lines_sum(rp->own, rp->nown), rp->inv_usage, &d);
        fprintf(f,
                "    replay - invoice, usage lines: %s (usage stored or "
                "set aside since it was rated)\n",
                fmt(d, 6, b, sizeof(b)));
    }
}

int
cs_replay_table(FILE *f, const struct cs_replay *rp)
{
    size_t *o = order(rp);
    if (!o)
        return -1;
    fprintf(f, "account %s, period %04d-%02d, %zu books\n", rp->account,
            rp->year, rp->month, rp->nbooks);
    table_usage(f, rp);
    fprintf(f, "note: %s\n\n", replay_note);
    fprintf(f, "%-26s %-4s %14s\n", "book", "cur", "total");
    bool bounds = false;
    for (size_t k = 0; k < rp->nbooks; k++) {
        const struct cs_replay_book *x = &rp->books[o[k]];
        const char *cur = pricing_book_currency(x->bk->book);
        char t[64], m[48];
        bool lower = !x->failed && x->st->unpriced;
        if (lower && !bounds) {
            fprintf(f, "lower bounds: a price these books need is unknown "
                       "(null); the totals are of the known part\n");
            bounds = true;
        }
        if (x->failed) {
            fprintf(f, "%-26s %-4s %14s%s\n", pricing_book_id(x->bk->book), cur,
                    "cannot price",
                    x->account_book ? "  (the account's book)" : "");
            fprintf(f, "    reason: %s\n", x->err.msg);
        } else {
            fmt(x->st->total, pricing_money_decimals(cur), m, sizeof(m));
            if (lower)
                snprintf(t, sizeof(t), ">=%s", m);
            fprintf(f, "%-26s %-4s %14s%s\n", pricing_book_id(x->bk->book), cur,
                    lower ? t : m,
                    x->account_book ? "  (the account's book)" : "");
            if (lower) {
                char text[512];
                fprintf(f, "    lower bound: %s\n",
                        bound_text(x, text, sizeof(text)));
            }
            table_lines(f, x->st);
            table_plan(f, rp, x);
        }
        fprintf(f, "    source: %s\n", x->bk->source[0] ? x->bk->source : "-");
        fprintf(f, "    as_of: %s\n", x->bk->as_of[0] ? x->bk->as_of : "-");
    }
    table_own(f, rp);
    free(o);
    return ferror(f) ? -1 : 0;
}

/* ---- JSON ---------------------------------------------------------------- */

static json_t *
jdec(struct pricing_dec d, unsigned decimals)
{
    char buf[48];
    pricing_dec_format(d, decimals, buf, sizeof(buf));
    return json_string(buf);
}

static json_t *
jtime(int64_t ts, bool set)
{
    char buf[32];
    return set ? json_string(rfc3339(ts, buf, sizeof(buf))) : json_null();
}

static json_t *
usage_json(const struct cs_replay *rp)
{
    const struct cs_usage_facts *u = &rp->facts;
    json_t *longest =
        u->longest_s
            ? json_pack("{s:s, s:o, s:I}", "sandbox_id", u->longest_sandbox,
                        "start", jtime(u->longest_from, true), "seconds",
                        (json_int_t)u->longest_s)
            : json_null();
    return json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:o, s:I, s:o, s:I}", "sandboxes",
        (json_int_t)u->sandboxes, "running_seconds", (json_int_t)u->running_s,
        "paused_seconds", (json_int_t)u->paused_s, "sessions",
        (json_int_t)u->sessions, "peak_concurrency", (json_int_t)u->peak,
        "peak_at", jtime(u->peak_at, u->peak > 0), "longest_session_s",
        (json_int_t)u->longest_s, "longest_session", longest, "peak_disk_bytes",
        (json_int_t)u->peak_disk);
}

/* A statement's lines, as report_statement_json writes them. */
static json_t *
lines_json(const struct pricing_statement *st)
{
    json_t *o = report_statement_json(st);
    json_t *lines = json_incref(json_object_get(o, "lines"));
    json_decref(o);
    return lines;
}

/* The limits the month breaks on a priced book, each with the book's
 * value, what the month measured (exact, in the limit's unit) and its
 * message; [] when none; null when not checked. */
static json_t *
limits_json(const struct cs_replay *rp, const struct cs_replay_book *x)
{
    const struct pricing_book *b = x->bk->book;
    if (!rp->limits_checked)
        return json_null();
    json_t *arr = json_array();
    for (int l = 0; arr && l < SIM_NLIMITS; l++) {
        struct pricing_dec value;
        const char *unit;
        char v[48], u[48], msg[256];
        if (!(x->plan.broken & (1u << l)))
            continue;
        sim_limit_of(b, (enum sim_limit)l, &value, &unit);
        sim_limit_message(b, (enum sim_limit)l, x->plan.used[l], msg,
                          sizeof(msg));
        if (json_array_append_new(
                arr, json_pack("{s:s, s:s, s:s, s:s, s:s}", "limit",
                               sim_limit_names[l], "value",
                               fmt_rate(value, v, sizeof(v)), "unit", unit,
                               "used", fmt_rate(x->plan.used[l], u, sizeof(u)),
                               "message", msg))) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* The add-on the book's plan needs for the month, or null. */
static json_t *
addon_json(const struct cs_replay *rp, const struct cs_replay_book *x)
{
    if (!rp->limits_checked || x->plan.addon < 0)
        return json_null();
    const struct pricing_addon *a =
        &pricing_book_limits(x->bk->book)->addons[x->plan.addon];
    const char *cur = pricing_book_currency(x->bk->book);
    struct pricing_dec with;
    if (pricing_dec_add(x->st->total, a->monthly_fee, &with) != PRICING_OK)
        return NULL;
    return json_pack("{s:s, s:I, s:o, s:o}", "name", a->name, "max_concurrency",
                     (json_int_t)a->max_concurrency, "monthly_fee",
                     jdec(a->monthly_fee, 6), "total_with_addon",
                     jdec(with, pricing_money_decimals(cur)));
}

static json_t *
book_json(const struct cs_replay *rp, const struct cs_replay_book *x)
{
    const char *cur = pricing_book_currency(x->bk->book);
    json_t *j =
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:b}", "id",
                  pricing_book_id(x->bk->book), "file", x->bk->file, "currency",
                  cur, "source", x->bk->source, "as_of", x->bk->as_of,
                  "account_book", x->account_book, "priced", !x->failed);
    if (!j)
        return NULL;
    bool ok;
    if (x->failed)
        ok = !json_object_set_new(j, "reason", json_string(x->err.msg));
    else
        ok = !json_object_set_new(
                 j, "total", jdec(x->st->total, pricing_money_decimals(cur))) &&
             !json_object_set_new(j, "lines", lines_json(x->st)) &&
             !json_object_set_new(j, "limits", limits_json(rp, x)) &&
             !json_object_set_new(j, "addon", addon_json(rp, x));
    if (ok && !x->failed && x->st->unpriced) {
        /* Only on a lower bound: a book priced whole reads as before. */
        struct pricing_dec qty[PRICING_NDIMS];
        struct pricing_err e;
        char text[512];
        json_t *u = NULL;
        ok = unpriced_of(x, qty, &e) == 0 && (u = json_array()) &&
             !json_object_set_new(j, "bound", json_string("lower")) &&
             !json_object_set_new(
                 j, "lower_bound",
                 json_string(bound_text(x, text, sizeof(text)))) &&
             !json_object_set_new(j, "unpriced", u);
        for (int d = 0; ok && d < PRICING_NDIMS; d++) {
            const char *unit;
            struct pricing_dec q;
            json_t *y;
            if (!(x->st->unpriced >> d & 1))
                continue;
            pricing_unpriced_quantity(x->bk->book, &x->st->q,
                                      (enum pricing_dim)d, &q, &unit, &e);
            ok = (y = json_object()) && !json_array_append_new(u, y) &&
                 !json_object_set_new(y, "dimension",
                                      json_string(pricing_dim_names[d])) &&
                 !json_object_set_new(y, "quantity", jdec(qty[d], 6)) &&
                 !json_object_set_new(y, "unit", json_string(unit));
        }
    }
    if (!ok) {
        json_decref(j);
        return NULL;
    }
    return j;
}

static json_t *
own_json(const struct cs_replay *rp)
{
    json_t *parts = json_array();
    char a[32], b[32];
    for (size_t k = 0; parts && k < rp->period.nparts; k++) {
        const struct billing_book_part *p = &rp->period.parts[k];
        json_t *x =
            json_pack("{s:s, s:i, s:s, s:s}", "price_book", p->book_id,
                      "version", p->version, "from", day(p->from, a, sizeof(a)),
                      "to", day(p->to, b, sizeof(b)));
        if (x && !rp->own_failed && k < rp->nown)
            json_object_set_new(x, "lines", lines_json(&rp->own[k]));
        if (!x || json_array_append_new(parts, x)) {
            json_decref(parts);
            return NULL;
        }
    }
    json_t *o = json_pack("{s:o, s:b}", "parts", parts, "priced",
                          rp->period.nparts && !rp->own_failed);
    if (!o)
        return NULL;
    if (rp->own_failed)
        json_object_set_new(o, "reason", json_string(rp->own_err.msg));
    else if (rp->nown)
        json_object_set_new(o, "usage_lines",
                            jdec(cs_lines_sum(rp->own, rp->nown), 6));
    return o;
}

static json_t *
invoice_json(const struct cs_replay *rp)
{
    if (!rp->invoiced)
        return json_null();
    const struct report_invoice *inv = &rp->inv;
    char id[24];
    snprintf(id, sizeof(id), "%lld", (long long)inv->id);
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "number", inv->number, "id",
        id, "status", inv->status, "currency", inv->currency, "total",
        jdec(inv->total, pricing_money_decimals(inv->currency)), "usage_lines",
        jdec(rp->inv_usage, 6), "late_usage", jdec(rp->inv_late, 6),
        "credit_grants", jdec(rp->inv_grants, 6));
    if (o && !rp->own_failed && rp->nown) {
        struct pricing_dec d;
        pricing_dec_sub(cs_lines_sum(rp->own, rp->nown), rp->inv_usage, &d);
        json_object_set_new(o, "replay_minus_invoice_usage", jdec(d, 6));
    }
    return o;
}

int
cs_replay_json(FILE *f, const struct cs_replay *rp)
{
    size_t *o = order(rp);
    json_t *books = json_array();
    json_t *root = NULL;
    char period[16];
    int rc = -1;
    snprintf(period, sizeof(period), "%04d-%02d", rp->year, rp->month);
    if (!o || !books)
        goto out;
    for (size_t k = 0; k < rp->nbooks; k++) {
        json_t *x = book_json(rp, &rp->books[o[k]]);
        if (!x || json_array_append_new(books, x))
            goto out;
    }
    root = json_pack(
        "{s:s, s:s, s:s, s:s, s:o, s:b, s:O, s:o, s:o}", "account", rp->account,
        "name", rp->period.name, "period", period, "note", replay_note, "usage",
        usage_json(rp), "limits_checked", rp->limits_checked, "books", books,
        "account_books", own_json(rp), "invoice", invoice_json(rp));
    if (!root || json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0)
        goto out;
    fputc('\n', f);
    rc = ferror(f) ? -1 : 0;
out:
    free(o);
    json_decref(books);
    json_decref(root);
    return rc;
}
