/*
 * reports.c - GET /v1/reports/...: the JSON behind every chart and table
 * of the dashboards (docs/dashboards.md). Each report is built once by
 * a function the pages call too (dash_*.c), so a page shows exactly its
 * JSON's numbers. A key of role account reads only its own account's
 * report; the fleet's reports are for finance and admin.
 */
#include "meterd_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PER_PAGE_DEFAULT 50
#define PER_PAGE_MAX 500
/* The longest usage range: a year by day, 31 days by hour. */
#define USAGE_DAYS_MAX 366
#define USAGE_HOURS_MAX (31 * 24)

void
meterd_bad_query(struct meter_http_request *rq, const char *name,
                 const char *value, const char *why)
{
    json_t *errors = json_pack("[{s:s, s:s, s:s}]", "field", name, "value",
                               value ? value : "", "reason", why);
    meter_http_reply_problem(rq, 400, "invalid-query", "Invalid query", errors,
                             "query parameter '%s' value '%s': %s", name,
                             value ? value : "", why);
}

static void
unavailable(struct meter_http_request *rq, const struct meter_err *e)
{
    meter_log(METER_LOG_ERROR, "report: %s", e->msg);
    meter_http_count_db_error(rq);
    meter_http_reply_problem(rq, 503, "unavailable", "Database unavailable",
                             NULL, "the report cannot be read now");
}

bool
meterd_query_period(struct meter_http_request *rq, int *year, int *month)
{
    const char *p = meter_http_query(rq, "period");
    if (!p || !*p) {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        *year = tm.tm_year + 1900;
        *month = tm.tm_mon + 1;
        return true;
    }
    if (meter_period_parse(p, year, month) < 0) {
        meterd_bad_query(rq, "period", p, "not a month YYYY-MM");
        return false;
    }
    return true;
}

json_t *
meterd_report_overview(struct meter_http_request *rq)
{
    int year, month;
    if (!meterd_query_period(rq, &year, &month))
        return NULL;
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *out = NULL;
    if (!db || meter_db_report_overview(db, year, month, (int64_t)time(NULL),
                                        &out, &e) < 0) {
        unavailable(rq, &e);
        return NULL;
    }
    return out;
}

/* The accounts table's query: period, q (search), sort, order, page,
 * per_page; false after replying 400. */
bool
meterd_query_accounts(struct meter_http_request *rq,
                      struct meter_report_query *q)
{
    static const char *const sorts[] = {"account",    "name",      "book",
                                        "revenue",    "vcpu_hours", "gib_hours"};
    memset(q, 0, sizeof(*q));
    if (!meterd_query_period(rq, &q->year, &q->month))
        return false;
    q->search = meter_http_query(rq, "q");
    if (q->search && strlen(q->search) > 200) {
        meterd_bad_query(rq, "q", q->search, "longer than 200 characters");
        return false;
    }
    const char *sort = meter_http_query(rq, "sort");
    q->sort = "revenue";
    q->descending = true;
    if (sort && *sort) {
        q->sort = NULL;
        for (size_t i = 0; i < sizeof(sorts) / sizeof(sorts[0]); i++)
            if (strcmp(sort, sorts[i]) == 0)
                q->sort = sorts[i];
        if (!q->sort) {
            meterd_bad_query(rq, "sort", sort,
                             "account, name, book, revenue, vcpu_hours or "
                             "gib_hours");
            return false;
        }
        q->descending = false;
    }
    const char *order = meter_http_query(rq, "order");
    if (order && *order) {
        if (strcmp(order, "asc") != 0 && strcmp(order, "desc") != 0) {
            meterd_bad_query(rq, "order", order, "asc or desc");
            return false;
        }
        q->descending = strcmp(order, "desc") == 0;
    }
    const char *page = meter_http_query(rq, "page");
    const char *per = meter_http_query(rq, "per_page");
    uint64_t v;
    q->page = 1;
    q->per_page = PER_PAGE_DEFAULT;
    if (page && *page) {
        if (meter_parse_uint(page, 1, 1000000, &v) < 0) {
            meterd_bad_query(rq, "page", page, "not a number from 1");
            return false;
        }
        q->page = (int)v;
    }
    if (per && *per) {
        if (meter_parse_uint(per, 1, PER_PAGE_MAX, &v) < 0) {
            meterd_bad_query(rq, "per_page", per, "not a number from 1 to 500");
            return false;
        }
        q->per_page = (int)v;
    }
    return true;
}

json_t *
meterd_report_accounts(struct meter_http_request *rq,
                       const struct meter_report_query *q)
{
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *out = NULL;
    if (!db || meter_db_report_accounts(db, q, &out, &e) < 0) {
        unavailable(rq, &e);
        return NULL;
    }
    json_object_set_new(out, "page", json_integer(q->page));
    json_object_set_new(out, "per_page", json_integer(q->per_page));
    json_object_set_new(out, "sort", json_string(q->sort));
    json_object_set_new(out, "order", json_string(q->descending ? "desc" : "asc"));
    json_object_set_new(out, "q", json_string(q->search ? q->search : ""));
    return out;
}

json_t *
meterd_report_account(struct meter_http_request *rq, const char *account)
{
    const struct meter_principal *who = meter_http_principal(rq);
    int year, month;
    if (!pricing_id_valid(account)) {
        meterd_bad_query(rq, "id", account, "not an account id");
        return NULL;
    }
    if (!meterd_query_period(rq, &year, &month))
        return NULL;
    /* Another account's page does not exist for an account key. */
    bool foreign = who->role == METER_ROLE_ACCOUNT &&
                   strcmp(who->account_id, account) != 0;
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *out = NULL;
    enum meter_db_status st = METER_DB_NONE;
    if (!foreign && (!db || (st = meter_db_report_account(db, account, year,
                                                          month, &out, &e)) < 0)) {
        unavailable(rq, &e);
        return NULL;
    }
    if (st == METER_DB_NONE) {
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no account '%s'", account);
        return NULL;
    }
    return out;
}

/* from and to (a day YYYY-MM-DD, RFC 3339 or Unix seconds, rounded out
 * to whole hours or days) and granularity: false after replying. */
bool
meterd_query_usage(struct meter_http_request *rq, int64_t *from, int64_t *to,
                   bool *daily)
{
    const char *f = meter_http_query(rq, "from");
    const char *t = meter_http_query(rq, "to");
    const char *g = meter_http_query(rq, "granularity");
    *daily = true;
    if (g && *g) {
        if (strcmp(g, "hour") != 0 && strcmp(g, "day") != 0) {
            meterd_bad_query(rq, "granularity", g, "hour or day");
            return false;
        }
        *daily = strcmp(g, "day") == 0;
    }
    int64_t len = *daily ? 86400 : 3600, now = (int64_t)time(NULL);
    /* Default: the last 30 days by day, the last 24 hours by hour. */
    *to = (now / len + 1) * len;
    *from = *to - (*daily ? 30 : 24) * len;
    if (f && *f && meter_day_parse(f, from) < 0 &&
        meter_time_parse(f, from) < 0) {
        meterd_bad_query(rq, "from", f,
                         "a day YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ or Unix seconds");
        return false;
    }
    if (t && *t) {
        /* A day as the end names the last day included. */
        if (meter_day_parse(t, to) == 0)
            *to += 86400;
        else if (meter_time_parse(t, to) < 0) {
            meterd_bad_query(rq, "to", t,
                             "a day YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ or Unix "
                             "seconds");
            return false;
        }
    }
    *from -= ((*from % len) + len) % len;
    *to = (*to + len - 1) / len * len;
    if (*to <= *from) {
        meterd_bad_query(rq, "to", t, "must be after from");
        return false;
    }
    if ((*to - *from) / len > (*daily ? USAGE_DAYS_MAX : USAGE_HOURS_MAX)) {
        meterd_bad_query(rq, "to", t,
                         *daily ? "at most 366 days by day"
                                : "at most 31 days by hour");
        return false;
    }
    return true;
}

json_t *
meterd_report_usage(struct meter_http_request *rq, int64_t from, int64_t to,
                    bool daily)
{
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *out = NULL;
    if (!db || meter_db_report_usage(db, from, to, daily, &out, &e) < 0) {
        unavailable(rq, &e);
        return NULL;
    }
    return out;
}

/* ---- the routes ---------------------------------------------------------- */

static void
reply(struct meter_http_request *rq, json_t *body)
{
    if (body)
        meter_http_reply_json(rq, 200, body);
}

void
meterd_reports_overview(struct meter_http_request *rq)
{
    reply(rq, meterd_report_overview(rq));
}

void
meterd_reports_accounts(struct meter_http_request *rq)
{
    struct meter_report_query q;
    if (meterd_query_accounts(rq, &q))
        reply(rq, meterd_report_accounts(rq, &q));
}

void
meterd_reports_account(struct meter_http_request *rq)
{
    reply(rq, meterd_report_account(rq, meter_http_param(rq, "id")));
}

void
meterd_reports_usage(struct meter_http_request *rq)
{
    int64_t from, to;
    bool daily;
    if (meterd_query_usage(rq, &from, &to, &daily))
        reply(rq, meterd_report_usage(rq, from, to, daily));
}
