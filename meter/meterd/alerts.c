/*
 * alerts.c - usage alerts and spend limits over HTTP (docs/alerts.md):
 * admins add, list and remove the rules (/v1/admin/alerts); an account,
 * finance, admin or a host reads an account's alerts with their values
 * now (GET /v1/accounts/{id}/alerts), so that a host can stop a runaway
 * sandbox. The merging thread evaluates them (meterd_alerts_evaluate),
 * and tells of usage stored on no price book, each raised once a period
 * as an event (docs/webhooks.md).
 */
#include "meterd_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A threshold: a decimal string > 0 with at most 6 decimals. */
static bool
threshold_valid(const char *s)
{
    struct pricing_dec d, zero = {0};
    return pricing_dec_parse(s, 6, &d) == PRICING_OK &&
           pricing_dec_cmp(d, zero) > 0;
}

void
meterd_alerts_add(struct meter_http_request *rq)
{
    size_t len;
    const char *body = meter_http_body(rq, &len);
    json_error_t jerr;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr), *pcts;
    const char *account = NULL, *name = NULL, *metric = NULL, *threshold = NULL,
               *currency = NULL;
    if (!o ||
        json_unpack_ex(o, &jerr, JSON_STRICT, "{s?s, s:s, s:s, s:s, s?s, s?o}",
                       "account_id", &account, "name", &name, "metric", &metric,
                       "threshold", &threshold, "currency", &currency,
                       "percents", &pcts) < 0) {
        char why[160];
        meter_http_reply_problem(
            rq, 400, "invalid-body", "Invalid body", NULL,
            "expected {\"account_id\"?: ID, \"name\": text, \"metric\": "
            "amount|vcpu_hours|gib_hours|storage_gib_hours|egress_gb|"
            "running_hours, \"threshold\": DECIMAL, \"currency\"?: CODE, "
            "\"percents\"?: [N]}: %s",
            o ? jerr.text
              : pricing_json_reason(
                    jerr.text,
                    json_error_code(&jerr) == json_error_duplicate_key, body,
                    (size_t)jerr.position, why, sizeof(why)));
        json_decref(o);
        return;
    }
    pcts = json_object_get(o, "percents");
    int percents[10] = {100};
    size_t npercents = 1;
    static const char *const metrics[] = {
        "amount",    "vcpu_hours",    "gib_hours", "storage_gib_hours",
        "egress_gb", "running_hours", NULL};
    bool known = false;
    for (size_t i = 0; metrics[i]; i++)
        known = known || strcmp(metric, metrics[i]) == 0;
    bool amount = strcmp(metric, "amount") == 0;
    if (account && !pricing_id_valid(account)) {
        meterd_bad_field(rq, "account_id", json_object_get(o, "account_id"),
                         "not an account id");
    } else if (!*name || strlen(name) > 200) {
        meterd_bad_field(rq, "name", json_object_get(o, "name"),
                         "not 1 to 200 characters");
    } else if (!known) {
        meterd_bad_field(
            rq, "metric", json_object_get(o, "metric"),
            "not amount, vcpu_hours, gib_hours, storage_gib_hours, "
            "egress_gb or running_hours");
    } else if (!threshold_valid(threshold)) {
        meterd_bad_field(rq, "threshold", json_object_get(o, "threshold"),
                         "not a decimal above 0 with at most 6 decimals");
    } else if (amount != (currency != NULL) ||
               (currency && pricing_currency_minor_unit(currency) < 0)) {
        meterd_bad_field(rq, "currency", json_object_get(o, "currency"),
                         amount ? "an amount's currency, an ISO 4217 code, is "
                                  "required"
                                : "only an amount has a currency");
    } else if (pcts && (!json_is_array(pcts) || json_array_size(pcts) < 1 ||
                        json_array_size(pcts) > 10)) {
        meterd_bad_field(rq, "percents", pcts,
                         "not a list of 1 to 10 percents");
    } else {
        size_t i;
        json_t *x;
        bool ok = true;
        if (pcts) {
            npercents = json_array_size(pcts);
            json_array_foreach(pcts, i, x)
            {
                if (!json_is_integer(x) || json_integer_value(x) < 1 ||
                    json_integer_value(x) > 1000) {
                    meterd_bad_field(rq, "percents", x,
                                     "not a whole percent from 1 to 1000");
                    ok = false;
                    break;
                }
                percents[i] = (int)json_integer_value(x);
                for (size_t k = 0; k < i; k++)
                    ok = ok && percents[k] != percents[i];
                if (!ok) {
                    meterd_bad_field(rq, "percents", x, "given twice");
                    break;
                }
            }
        }
        PGconn *db = ok ? meter_http_db(rq) : NULL;
        struct meter_err e = {{0}};
        struct meter_alert_rule r = {account,  name,     metric,   threshold,
                                     currency, percents, npercents};
        int64_t id = 0;
        enum meter_db_status st = !ok  ? METER_DB_NONE
                                  : db ? meterd_act_as_key(rq, db, &e)
                                       : METER_DB_HARD;
        if (ok && st >= 0)
            st = meter_db_alert_rule_add(db, &r, &id, &e);
        if (!ok)
            ;
        else if (st < 0)
            meter_http_reply_db_error(rq, db, st, &e,
                                      "the alert cannot be added");
        else if (st == METER_DB_NONE)
            meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                     "no account '%s'", account);
        else {
            json_t *list = json_array();
            for (size_t k = 0; k < npercents; k++)
                json_array_append_new(list, json_integer(percents[k]));
            meter_http_reply_json(
                rq, 201,
                json_pack("{s:I, s:s?, s:s, s:s, s:s, s:s?, s:o}", "rule_id",
                          (json_int_t)id, "account_id", account, "name", name,
                          "metric", metric, "threshold", threshold, "currency",
                          currency, "percents", list));
        }
        if (ok)
            meterd_act_reset(db);
    }
    json_decref(o);
}

void
meterd_alerts_list(struct meter_http_request *rq)
{
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *items = NULL;
    enum meter_db_status st =
        db ? meter_db_alert_rules_list(db, &items, &e) : METER_DB_HARD;
    if (st < 0)
        meter_http_reply_db_error(rq, db, st, &e, "the alerts cannot be read");
    else
        meter_http_reply_json(rq, 200, json_pack("{s:o}", "items", items));
}

void
meterd_alerts_remove(struct meter_http_request *rq)
{
    const char *id = meter_http_param(rq, "id");
    uint64_t rule;
    PGconn *db = NULL;
    struct meter_err e = {{0}};
    enum meter_db_status st = METER_DB_NONE;
    if (meter_parse_uint(id, 1, INT64_MAX, &rule) == 0) {
        db = meter_http_db(rq);
        st = db ? meterd_act_as_key(rq, db, &e) : METER_DB_HARD;
        if (st >= 0)
            st = meter_db_alert_rule_remove(db, (int64_t)rule, &e);
    }
    if (st < 0)
        meter_http_reply_db_error(rq, db, st, &e,
                                  "the alert cannot be removed");
    else if (st == METER_DB_NONE)
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no alert '%s'", id);
    else
        meter_http_reply_json(
            rq, 200,
            json_pack("{s:I, s:b}", "rule_id", (json_int_t)rule, "removed", 1));
    meterd_act_reset(db);
}

void
meterd_account_alerts(struct meter_http_request *rq)
{
    const struct meter_principal *who = meter_http_principal(rq);
    const char *account = meter_http_param(rq, "id");
    /* An account key reads its own; another is a 404, as one that does
     * not exist. */
    if (!pricing_id_valid(account) || (who->role == METER_ROLE_ACCOUNT &&
                                       strcmp(account, who->account_id) != 0)) {
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no account '%s'", account);
        return;
    }
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *out = NULL;
    enum meter_db_status st =
        db ? meter_db_account_alerts(
                 db, account,
                 who->role == METER_ROLE_HOST && who->scoped ? who->key_id : 0,
                 (int64_t)time(NULL), &out, &e)
           : METER_DB_HARD;
    if (st < 0)
        meter_http_reply_db_error(rq, db, st, &e, "the alerts cannot be read");
    else if (st == METER_DB_NONE)
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no account '%s'", account);
    else
        meter_http_reply_json(rq, 200, out);
}

void
meterd_alerts_evaluate(PGconn *db)
{
    struct meter_err e = {{0}};
    int raised = 0, told = 0;
    size_t watched = 0;
    int64_t now = (int64_t)time(NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (meter_db_alerts_evaluate(db, now, &raised, &watched, &e) < 0)
        meter_log(METER_LOG_WARN, "alerts: %s", e.msg);
    if (meter_db_unbilled_raise(db, now, &told, &e) < 0)
        meter_log(METER_LOG_WARN, "usage on no book: %s", e.msg);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (raised || told)
        meter_log(METER_LOG_INFO,
                  "alerts: %zu accounts watched, %d alerts raised, %d "
                  "accounts with usage on no book told, in %.0f ms",
                  watched, raised, told,
                  (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                      (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
}
