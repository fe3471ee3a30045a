/*
 * admin_webhooks.c - webhook endpoints over HTTP, for admins
 * (docs/webhooks.md): POST /v1/admin/webhooks registers one (its secret
 * answered once), GET lists them, DELETE /v1/admin/webhooks/{id} removes
 * one, GET /v1/admin/webhooks/deliveries shows each delivery's attempts.
 * Changes are audited as done by the request's key, as meterctl's are
 * by its user (the table's trigger, migration 0022).
 */
#include "meterd_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "meter_webhook.h"

static void
invalid(struct meter_http_request *rq, const char *field, const char *value,
        const char *why)
{
    meter_http_reply_problem(rq, 400, "invalid-body", "Invalid body",
                             json_pack("[{s:s, s:s, s:s}]", "field", field,
                                       "value", value, "reason", why),
                             "%s '%s' %s", field, value, why);
}

/* The body's event_types (absent: all) as types separated by commas into
 * list; false after answering 400. */
static bool
event_types(struct meter_http_request *rq, json_t *types,
            struct meter_buf *list)
{
    size_t i;
    json_t *t;
    if (types && !json_is_array(types)) {
        invalid(rq, "event_types", "", "is not an array of event types");
        return false;
    }
    json_array_foreach(types, i, t)
    {
        const char *s = json_string_value(t);
        char bad[64];
        if (!s || strchr(s, ',') || !meter_webhook_types_valid(s, bad) || !*s) {
            invalid(rq, "event_types", s ? s : "",
                    "is not invoice.finalized, invoice.voided, "
                    "invoice.run_failed, usage.unbilled or alert.triggered");
            return false;
        }
        meter_buf_printf(list, "%s%s", i ? "," : "", s);
    }
    return true;
}

/* Whether url may be an endpoint's: http or https, no spaces, at most
 * 2,000 bytes (as the table checks). */
static bool
url_valid(const char *url)
{
    bool scheme =
        strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0;
    size_t n = strlen(url);
    return scheme && n <= 2000 && n > 8 && !strpbrk(url, " \t\r\n\v\f");
}

void
meterd_webhooks_add(struct meter_http_request *rq)
{
    size_t len;
    const char *body = meter_http_body(rq, &len);
    json_error_t jerr;
    json_t *o =
               json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &jerr),
           *types = NULL;
    const char *url = NULL, *given = NULL;
    struct meter_buf list = {.max = 4096};
    char secret[METER_WEBHOOK_SECRET_MAX] = "";
    PGconn *db = NULL;
    if (!o ||
        json_unpack_ex(o, &jerr, JSON_STRICT, "{s:s, s?o, s?s}", "url", &url,
                       "event_types", &types, "secret", &given) < 0) {
        meter_http_reply_problem(rq, 400, "invalid-body", "Invalid body", NULL,
                                 "expected {\"url\": URL, \"event_types\"?: "
                                 "[TYPE], \"secret\"?: \"whsec_...\"}: %s",
                                 jerr.text);
        goto out;
    }
    if (!url_valid(url)) {
        invalid(rq, "url", url,
                "is not an http or https URL of at most 2000 bytes");
        goto out;
    }
    if (!event_types(rq, types, &list))
        goto out;
    meter_buf_str(&list, "");
    if (given && !meter_webhook_secret_valid(given)) {
        /* Never echoed: it is a secret. */
        invalid(rq, "secret", "(not shown)",
                "is not whsec_ and the base64 of 24 to 64 bytes");
        goto out;
    }
    if (list.failed || (!given && meter_webhook_secret_new(secret) < 0)) {
        meter_http_reply_problem(rq, 500, "internal", "Internal error", NULL,
                                 "no memory or no random bytes for a secret");
        goto out;
    }
    const char *use = given ? given : secret;
    db = meter_http_db(rq);
    struct meter_err e = {{0}};
    int64_t id = 0;
    enum meter_db_status st =
        db ? meterd_act_as_key(rq, db, &e) : METER_DB_HARD;
    if (st >= 0)
        st = meter_db_webhook_add(db, url, list.p, use, &id, &e);
    if (st < 0) {
        meter_http_reply_db_error(rq, db, st, &e,
                                  "the webhook cannot be added");
        goto out;
    }
    meter_http_note(rq, " webhook=%" PRId64, id);
    meter_http_reply_json(
        rq, 201,
        json_pack("{s:I, s:s, s:O, s:s}", "id", (json_int_t)id, "url", url,
                  "event_types", types ? types : json_array(), "secret", use));
out:
    explicit_bzero(secret, sizeof(secret));
    meterd_act_reset(db);
    meter_buf_release(&list);
    json_decref(o);
}

/* Appends endpoint w to the array arg. */
static void
add_webhook(const struct meter_webhook *w, void *arg)
{
    json_t *types = json_array();
    for (const char *p = w->event_types; *p;) {
        size_t n = strcspn(p, ",");
        json_array_append_new(types, json_stringn(p, n));
        p += n + (p[n] == ',');
    }
    json_array_append_new(
        arg,
        json_pack("{s:I, s:s, s:o, s:s, s:o, s:{s:I, s:I, s:I}}", "id",
                  (json_int_t)w->id, "url", w->url, "event_types", types,
                  "created_at", w->created_at, "disabled_at",
                  w->disabled_at[0] ? json_string(w->disabled_at) : json_null(),
                  "deliveries", "pending", (json_int_t)w->pending, "delivered",
                  (json_int_t)w->delivered, "failed", (json_int_t)w->failed));
}

void
meterd_webhooks_list(struct meter_http_request *rq)
{
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *items = json_array();
    enum meter_db_status st =
        db ? meter_db_webhook_list(db, add_webhook, items, &e) : METER_DB_HARD;
    if (st < 0) {
        json_decref(items);
        meter_http_reply_db_error(rq, db, st, &e, "webhooks cannot be read");
        return;
    }
    meter_http_reply_json(rq, 200, json_pack("{s:o}", "webhooks", items));
}

void
meterd_webhooks_remove(struct meter_http_request *rq)
{
    const char *s = meter_http_param(rq, "id");
    uint64_t id;
    if (meter_parse_uint(s, 1, INT64_MAX, &id) < 0) {
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no webhook '%s'", s);
        return;
    }
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    enum meter_db_status st =
        db ? meterd_act_as_key(rq, db, &e) : METER_DB_HARD;
    if (st >= 0)
        st = meter_db_webhook_remove(db, (int64_t)id, &e);
    if (st < 0)
        meter_http_reply_db_error(rq, db, st, &e,
                                  "webhook %" PRIu64 " cannot be removed", id);
    else if (st == METER_DB_NONE)
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no live webhook %" PRIu64, id);
    else
        meter_http_reply_json(
            rq, 200,
            json_pack("{s:I, s:b}", "id", (json_int_t)id, "removed", 1));
    meterd_act_reset(db);
}

/* Appends delivery d to the array arg. */
static void
add_delivery(const struct meter_webhook_delivery *d, void *arg)
{
#define OR_NULL(s) ((s)[0] ? json_string(s) : json_null())
    json_array_append_new(
        arg,
        json_pack("{s:I, s:s, s:s, s:o, s:s, s:I, s:s, s:i, s:o, s:o, s:o, "
                  "s:o, s:o}",
                  "seq", (json_int_t)d->seq, "event_id", d->event_id, "type",
                  d->type, "account", OR_NULL(d->account), "created_at",
                  d->created_at, "endpoint_id", (json_int_t)d->endpoint_id,
                  "state", d->state, "attempts", d->attempts, "last_status",
                  d->last_status ? json_integer(d->last_status) : json_null(),
                  "last_error", OR_NULL(d->last_error), "last_attempt_at",
                  OR_NULL(d->last_attempt_at), "next_attempt_at",
                  OR_NULL(d->next_attempt_at), "done_at", OR_NULL(d->done_at)));
#undef OR_NULL
}

void
meterd_webhooks_deliveries(struct meter_http_request *rq)
{
    struct meter_webhook_filter f = {0};
    const char *endpoint = meter_http_query(rq, "endpoint"),
               *failed = meter_http_query(rq, "failed");
    uint64_t v;
    f.event_id = meter_http_query(rq, "event");
    if (endpoint) {
        if (meter_parse_uint(endpoint, 1, INT64_MAX, &v) < 0) {
            meterd_bad_query(rq, "endpoint", endpoint, "is not a webhook id");
            return;
        }
        f.endpoint_id = (int64_t)v;
    }
    if (failed && strcmp(failed, "true") != 0 && strcmp(failed, "false") != 0) {
        meterd_bad_query(rq, "failed", failed, "is not true or false");
        return;
    }
    f.failed = failed && strcmp(failed, "true") == 0;
    if (!meterd_page(rq, &f.after, &f.limit))
        return;
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *items = json_array();
    enum meter_db_status st =
        db ? meter_db_webhook_deliveries(db, &f, add_delivery, items, &e)
           : METER_DB_HARD;
    if (st < 0) {
        json_decref(items);
        meter_http_reply_db_error(rq, db, st, &e, "deliveries cannot be read");
        return;
    }
    meter_http_reply_json(rq, 200, json_pack("{s:o}", "deliveries", items));
}
