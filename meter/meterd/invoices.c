/*
 * invoices.c - the invoice routes: GET /v1/invoices (a page of
 * documents), GET /v1/invoices/{ref} (one, as JSON, CSV, HTML or PDF),
 * POST /v1/invoices/run (finance runs a period). A key of role account
 * sees only its own account's documents: another account's is a 404,
 * as if it did not exist.
 */
#include "meterd_int.h"

#include "billing.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE_DEFAULT 100
#define PAGE_MAX 1000

/* The account a key of role account is limited to, else NULL. */
static const char *
own_account(struct meter_http_request *rq)
{
    const struct meter_principal *who = meter_http_principal(rq);
    return who && who->role == METER_ROLE_ACCOUNT ? who->account_id : NULL;
}

static void
bad_query(struct meter_http_request *rq, const char *name, const char *value,
          const char *why)
{
    json_t *errors = json_pack("[{s:s, s:s, s:s}]", "field", name, "value",
                               value, "reason", why);
    meter_http_reply_problem(rq, 400, "invalid-query", "Invalid query", errors,
                             "query parameter '%s' value '%s': %s", name, value,
                             why);
}

/* The page parameters: after (a cursor) and limit. false after replying. */
bool
meterd_page(struct meter_http_request *rq, int64_t *after, int *limit)
{
    const char *a = meter_http_query(rq, "after");
    const char *l = meter_http_query(rq, "limit");
    uint64_t v;
    *after = 0;
    *limit = PAGE_DEFAULT;
    if (a) {
        if (meter_parse_uint(a, 0, INT64_MAX, &v) < 0) {
            bad_query(rq, "after", a, "not the cursor of a page");
            return false;
        }
        *after = (int64_t)v;
    }
    if (l) {
        if (meter_parse_uint(l, 1, PAGE_MAX, &v) < 0) {
            bad_query(rq, "limit", l, "not a number from 1 to 1000");
            return false;
        }
        *limit = (int)v;
    }
    return true;
}

struct page {
    json_t *items;
    int64_t last;
};

static void
add_item(const struct report_invoice *inv, void *arg)
{
    struct page *p = arg;
    json_t *o = report_invoice_json(inv);
    json_object_del(o, "lines");
    json_array_append_new(p->items, o);
    p->last = inv->id;
}

/* A filter's query parameter, NULL when absent or empty: a form sends
 * every field, and one left empty asks for no filter, as the reports
 * read their parameters. */
static const char *
filter_query(struct meter_http_request *rq, const char *name)
{
    const char *v = meter_http_query(rq, name);
    return v && *v ? v : NULL;
}

void
meterd_invoices_list(struct meter_http_request *rq)
{
    struct meter_invoice_filter f = {0};
    const char *own = own_account(rq);
    const char *account = filter_query(rq, "account");
    const char *period = filter_query(rq, "period");
    const char *status = filter_query(rq, "status");
    if (account && !pricing_id_valid(account)) {
        bad_query(rq, "account", account, "not an account id");
        return;
    }
    if (period && meter_period_parse(period, &f.year, &f.month) < 0) {
        bad_query(rq, "period", period, "not YYYY-MM");
        return;
    }
    if (status && strcmp(status, "draft") && strcmp(status, "final") &&
        strcmp(status, "void")) {
        bad_query(rq, "status", status, "not draft, final or void");
        return;
    }
    if (!meterd_page(rq, &f.after, &f.limit))
        return;
    struct page p = {json_array(), 0};
    /* An account key asking for another account sees nothing. */
    if (own && account && strcmp(own, account) != 0)
        goto reply;
    f.account = own ? own : account;
    f.status = status;
    struct meter_err e = {{0}};
    PGconn *db = meter_http_db(rq);
    enum meter_db_status st =
        db ? meter_db_invoice_list(db, &f, add_item, &p, &e) : METER_DB_HARD;
    if (st < 0) {
        json_decref(p.items);
        meter_http_reply_db_error(rq, db, st, &e, "invoices cannot be read");
        return;
    }
reply:;
    json_t *body = json_pack("{s:o}", "items", p.items);
    char next[24];
    snprintf(next, sizeof(next), "%" PRId64, p.last);
    json_object_set_new(body, "next_after",
                        (int)json_array_size(p.items) == f.limit && p.last
                            ? json_string(next)
                            : json_null());
    meter_http_reply_json(rq, 200, body);
}

/* The format a request asks for: a suffix, else Accept, else JSON. */
static const char *
wanted_format(struct meter_http_request *rq, char *ref)
{
    static const char *const formats[] = {"json", "csv", "html", "pdf"};
    char *dot = strrchr(ref, '.');
    if (dot) {
        for (size_t i = 0; i < 4; i++)
            if (strcmp(dot + 1, formats[i]) == 0) {
                *dot = '\0';
                return formats[i];
            }
        return NULL;
    }
    const char *accept = meter_http_header(rq, "Accept");
    if (!accept || strstr(accept, "application/json") ||
        strstr(accept, "*/*") || strstr(accept, "application/*"))
        return "json";
    if (strstr(accept, "application/pdf"))
        return "pdf";
    if (strstr(accept, "text/csv"))
        return "csv";
    if (strstr(accept, "text/html"))
        return "html";
    return NULL;
}

/* Whether ref names an invoice: a number YYYY-NNNNNN (the column's
 * CHECK) or a draft's id, a positive integer. */
static bool
ref_valid(const char *ref)
{
    uint64_t id;
    if (meter_parse_uint(ref, 1, INT64_MAX, &id) == 0)
        return true;
    if (strlen(ref) != 11 || ref[4] != '-')
        return false;
    for (size_t i = 0; i < 11; i++)
        if (i != 4 && (ref[i] < '0' || ref[i] > '9'))
            return false;
    return true;
}

void
meterd_invoices_get(struct meter_http_request *rq)
{
    char ref[64];
    snprintf(ref, sizeof(ref), "%s", meter_http_param(rq, "ref"));
    const char *format = wanted_format(rq, ref);
    if (!format) {
        meter_http_reply_problem(rq, 406, "not-acceptable", "Not acceptable",
                                 NULL,
                                 "invoices are served as json, csv, html or "
                                 "pdf (a suffix or the Accept header)");
        return;
    }
    /* Refused before any statement: the server checked it is text. */
    if (!ref_valid(ref)) {
        json_t *errors =
            json_pack("[{s:s, s:s, s:s}]", "field", "ref", "value", ref,
                      "reason", "not an invoice number or id");
        meter_http_reply_problem(rq, 400, "invalid-path", "Invalid path",
                                 errors,
                                 "path segment 'ref' value '%s': not an "
                                 "invoice number (2026-000001) or id",
                                 ref);
        return;
    }
    struct report_invoice inv = {0};
    struct meter_err e = {{0}};
    PGconn *db = meter_http_db(rq);
    bool altered = false;
    enum meter_db_status st =
        db ? billing_document(db, ref, own_account(rq), &inv, &altered, &e)
           : METER_DB_HARD;
    if (st == METER_DB_NONE) {
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no invoice '%s'", ref);
        return;
    }
    if (altered) {
        /* A final document that is no longer what was issued. */
        meter_log(METER_LOG_ERROR, "%s", e.msg);
        report_invoice_release(&inv);
        meter_http_reply_problem(rq, 500, "internal", "Invoice altered", NULL,
                                 "invoice '%s' does not match its SHA-256",
                                 ref);
        return;
    }
    if (st < 0) {
        report_invoice_release(&inv);
        meter_http_reply_db_error(rq, db, st, &e, "the invoice cannot be read");
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    int rc = out ? report_invoice_write(out, &inv, format, &e) : -1;
    if (out)
        fclose(out);
    report_invoice_release(&inv);
    if (rc < 0) {
        free(text);
        meter_http_reply_problem(rq, 500, "internal", "Cannot render", NULL,
                                 "the invoice cannot be rendered as %s",
                                 format);
        return;
    }
    if (strcmp(format, "html") == 0) {
        /* In a browser, the pages' policy: no script, never framed. */
        char style[REPORT_STYLE_HASH_LEN];
        report_invoice_html_style_hash(style);
        meter_http_reply_html_style(rq, 200, text, len, style);
    } else {
        meter_http_reply_text(rq, 200, report_invoice_media_type(format), text,
                              len);
    }
    free(text);
}

/* The fields of a document the run wrote: id, total (to the currency's
 * minor unit), currency, and number once final. */
static void
set_document(json_t *o, const struct billing_doc *d)
{
    char total[64], id[24];
    pricing_money_format(d->total, d->currency, total, sizeof(total));
    snprintf(id, sizeof(id), "%" PRId64, d->id);
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "total", json_string(total));
    json_object_set_new(o, "currency", json_string(d->currency));
    if (d->number[0])
        json_object_set_new(o, "number", json_string(d->number));
}

void
meterd_invoices_run(struct meter_http_request *rq)
{
    size_t len;
    const char *body = meter_http_body(rq, &len);
    json_error_t jerr;
    /* A key given twice is refused (naming it), not read as its last. */
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    const char *period = NULL, *account = NULL;
    /* The issuer: the body's, else the service's $METER_SELLER. */
    const char *seller = getenv("METER_SELLER");
    if (!seller || !*seller)
        seller = "Unnamed seller";
    int finalize = 0, year, month;
    if (!o || json_unpack_ex(o, &jerr, JSON_STRICT, "{s:s, s?s, s?b, s?s}",
                             "period", &period, "account", &account, "finalize",
                             &finalize, "seller", &seller) < 0) {
        char why[160];
        meter_http_reply_problem(
            rq, 400, "invalid-body", "Invalid body", NULL,
            "expected {\"period\": \"YYYY-MM\", \"account\"?: ID, "
            "\"finalize\"?: bool, \"seller\"?: text}: %s",
            o ? jerr.text
              : pricing_json_reason(
                    jerr.text,
                    json_error_code(&jerr) == json_error_duplicate_key, body,
                    (size_t)jerr.position, why, sizeof(why)));
        json_decref(o);
        return;
    }
    json_t *errors = NULL;
    if (meter_period_parse(period, &year, &month) < 0)
        errors = json_pack("[{s:s, s:s, s:s}]", "field", "period", "value",
                           period, "reason", "not YYYY-MM");
    else if (account && !pricing_id_valid(account))
        errors = json_pack("[{s:s, s:s, s:s}]", "field", "account", "value",
                           account, "reason", "not an account id");
    else if (!*seller || strlen(seller) > 200)
        errors = json_pack("[{s:s, s:s, s:s}]", "field", "seller", "value",
                           seller, "reason", "not 1-200 characters");
    if (errors) {
        meter_http_reply_problem(rq, 400, "invalid-body", "Invalid body",
                                 errors, "the run's parameters are invalid");
        json_decref(o);
        return;
    }
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    struct meter_strtab ids = {0};
    json_t *items = json_array();
    int failed = 0;
    struct billing_outcome *outs = calloc(BILLING_BATCH, sizeof(*outs));
    /* Finalizations are audited as done by this request's key; the
     * connection serves other keys after it (reset at out). */
    const struct meter_principal *who = meter_http_principal(rq);
    char actor[64];
    snprintf(actor, sizeof(actor), "meterd:key %" PRId64 " (%s)", who->key_id,
             meter_role_name(who->role));
    if (!outs) {
        meter_http_reply_problem(rq, 500, "internal", "Out of memory", NULL,
                                 "the run cannot start");
        goto out;
    }
    enum meter_db_status st =
        db ? meter_db_set_actor(db, actor, &e) : METER_DB_HARD;
    if (st >= 0)
        st = billing_accounts(db, year, month, account, &ids, &e);
    if (st < 0) {
        meter_http_reply_db_error(rq, db, st, &e, "the run cannot start");
        goto out;
    }
    for (size_t first = 0; first < ids.n; first += BILLING_BATCH) {
        size_t n =
            ids.n - first < BILLING_BATCH ? ids.n - first : BILLING_BATCH;
        const char *const *batch = (const char *const *)ids.str + first;
        st = billing_run(db, meterd_thread_links(), batch, n, year, month,
                         finalize, seller, outs, &e);
        if (st < 0) {
            /* Gone, busy (or past --db-timeout): the batches done are
             * done; running it again redoes the rest. */
            meter_http_reply_db_error(rq, db, st, &e,
                                      "the run stopped at account '%s' (%zu "
                                      "of %zu)",
                                      batch[0], first + 1, ids.n);
            goto out;
        }
        for (size_t k = 0; k < n; k++) {
            const struct billing_outcome *r = &outs[k];
            json_t *item = json_pack("{s:s}", "account_id", batch[k]);
            if (r->failed) {
                failed++;
                json_object_set_new(item, "error", json_string(r->error));
                json_array_append_new(items, item);
                continue;
            }
            json_object_set_new(item, "status",
                                json_string(r->already_final ? "already_final"
                                            : r->number[0]   ? "final"
                                            : r->written     ? "draft"
                                                             : "none"));
            if (r->written) {
                struct billing_doc own = {.id = r->id, .total = r->total};
                snprintf(own.number, sizeof(own.number), "%s", r->number);
                snprintf(own.currency, sizeof(own.currency), "%s", r->currency);
                set_document(item, &own);
            } else if (r->number[0]) {
                json_object_set_new(item, "number", json_string(r->number));
            }
            if (r->nother) {
                json_t *other = json_array();
                for (size_t x = 0; x < r->nother; x++) {
                    json_t *d = json_object();
                    set_document(d, &r->other[x]);
                    json_array_append_new(other, d);
                }
                json_object_set_new(item, "other_documents", other);
            }
            json_array_append_new(items, item);
        }
    }
    /* A run of every account forgets the failures of those it no longer
     * runs (their book ended). */
    if (!account &&
        (st = meter_db_run_failures_keep(
             db, year, month, (const char *const *)ids.str, ids.n, &e)) < 0) {
        meter_http_reply_db_error(rq, db, st, &e,
                                  "the run is done; its failures cannot be "
                                  "updated");
        goto out;
    }
    /* The run worked: the accounts that failed are listed, each with
     * why, beside the usage no run bills. */
    json_t *nb = NULL;
    st = meter_db_not_billed(db, year, month, &nb, &e);
    if (st < 0) {
        /* The run is done: its answer stands, this part said missing. */
        meter_log(METER_LOG_WARN,
                  "invoice run %s: what it left unbilled cannot be read: %s",
                  period, e.msg);
        nb = json_null();
    }
    meter_http_reply_json(rq, 200,
                          json_pack("{s:s, s:o, s:i, s:o}", "period", period,
                                    "accounts", json_incref(items), "failed",
                                    failed, "not_billed", nb));
out:
    if (db && !meter_db_lost(db))
        meter_db_set_actor(db, NULL, &e);
    json_decref(items);
    free(outs);
    meter_strtab_release(&ids);
    json_decref(o);
}
