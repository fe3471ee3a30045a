/*
 * reports.c - GET /v1/reports/...: the JSON behind every chart and table
 * of the dashboards (docs/dashboards.md). Each report is built once by
 * a function the pages call too (dashboard.c), so a page shows exactly its
 * JSON's numbers. A key of role account reads only its own account's
 * report; the fleet's reports are for finance and admin. Reports are
 * kept --report-ttl seconds (cache.c), keyed by their checked
 * parameters.
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

/* Builds a report into *out: the database layer's call for one report. */
typedef enum meter_db_status report_fn(PGconn *db, const void *arg,
                                       json_t **out, struct meter_err *e);

/*
 * The text of report key (compact JSON and a newline): from the cache
 * while fresh, else built by fn(arg) and kept. NULL after answering: the
 * database's failure (meter_http_reply_db_error; 503 too while another
 * request's build has just failed), 404 naming `what` when fn finds
 * nothing.
 */
static char *
report_text(struct meter_http_request *rq, const char *key, report_fn *fn,
            const void *arg, const char *what, size_t *len)
{
    bool failed;
    char *text = meterd_cache_get(key, len, &failed);
    if (text)
        return text;
    if (failed) { /* counted and logged by the request whose build failed */
        meter_http_reply_db_error(rq, NULL, METER_DB_SOFT, NULL,
                                  "the report cannot be read");
        return NULL;
    }
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *doc = NULL;
    enum meter_db_status st = db ? fn(db, arg, &doc, &e) : METER_DB_HARD;
    if (st <= METER_DB_NONE)
        meterd_cache_abandon(key);
    if (st < 0) {
        meter_http_reply_db_error(rq, db, st, &e, "the report cannot be read");
        return NULL;
    }
    if (st == METER_DB_NONE) {
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no %s", what);
        return NULL;
    }
    text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    size_t n = text ? strlen(text) : 0;
    char *line = text ? realloc(text, n + 2) : NULL;
    if (!line) {
        meterd_cache_abandon(key);
        free(text);
        meter_http_reply_problem(rq, 500, "internal", "Out of memory", NULL,
                                 "the report could not be written");
        return NULL;
    }
    memcpy(line + n, "\n", 2);
    *len = n + 1;
    meterd_cache_put(key, line, *len);
    return line;
}

/* The document of a report's text (consumed), for the pages. */
static json_t *
parsed(struct meter_http_request *rq, char *text, size_t len)
{
    if (!text)
        return NULL;
    json_error_t je;
    json_t *doc = json_loadb(text, len, 0, &je);
    free(text);
    if (!doc)
        meter_http_reply_problem(rq, 500, "internal", "Internal error", NULL,
                                 "a report does not read back: %s", je.text);
    return doc;
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

static enum meter_db_status
overview_fn(PGconn *db, const void *arg, json_t **out, struct meter_err *e)
{
    const int *ym = arg;
    return meter_db_report_overview(db, ym[0], ym[1], (int64_t)time(NULL), out,
                                    e);
}

static char *
overview_text(struct meter_http_request *rq, size_t *len)
{
    int ym[2];
    if (!meterd_query_period(rq, &ym[0], &ym[1]))
        return NULL;
    char key[48];
    snprintf(key, sizeof(key), "overview %d-%d", ym[0], ym[1]);
    return report_text(rq, key, overview_fn, ym, "overview", len);
}

json_t *
meterd_report_overview(struct meter_http_request *rq)
{
    size_t len = 0;
    char *text = overview_text(rq, &len);
    return parsed(rq, text, len);
}

/* The page number and size of page and per_page: false after replying. */
static bool
query_page(struct meter_http_request *rq, int *page, int *per_page)
{
    const char *p = meter_http_query(rq, "page");
    const char *n = meter_http_query(rq, "per_page");
    uint64_t v;
    *page = 1;
    *per_page = PER_PAGE_DEFAULT;
    if (p && *p) {
        if (meter_parse_uint(p, 1, 1000000, &v) < 0) {
            meterd_bad_query(rq, "page", p, "not a number from 1");
            return false;
        }
        *page = (int)v;
    }
    if (n && *n) {
        if (meter_parse_uint(n, 1, PER_PAGE_MAX, &v) < 0) {
            meterd_bad_query(rq, "per_page", n, "not a number from 1 to 500");
            return false;
        }
        *per_page = (int)v;
    }
    return true;
}

/* The accounts table's query: period, q (search), sort, order, page,
 * per_page; false after replying 400. */
bool
meterd_query_accounts(struct meter_http_request *rq,
                      struct meter_report_query *q)
{
    static const char *const sorts[] = {"account", "name",       "book",
                                        "revenue", "vcpu_hours", "gib_hours"};
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
    return query_page(rq, &q->page, &q->per_page);
}

static enum meter_db_status
accounts_fn(PGconn *db, const void *arg, json_t **out, struct meter_err *e)
{
    const struct meter_report_query *q = arg;
    enum meter_db_status st = meter_db_report_accounts(db, q, out, e);
    if (st < 0)
        return st;
    json_object_set_new(*out, "page", json_integer(q->page));
    json_object_set_new(*out, "per_page", json_integer(q->per_page));
    json_object_set_new(*out, "sort", json_string(q->sort));
    json_object_set_new(*out, "order",
                        json_string(q->descending ? "desc" : "asc"));
    json_object_set_new(*out, "q", json_string(q->search ? q->search : ""));
    return st;
}

static char *
accounts_text(struct meter_http_request *rq, const struct meter_report_query *q,
              size_t *len)
{
    /* The search last: it may hold anything, the rest cannot. */
    struct meter_buf key = {0};
    meter_buf_printf(&key, "accounts %d-%d %s %d %d %d ", q->year, q->month,
                     q->sort, q->descending, q->page, q->per_page);
    meter_buf_str(&key, q->search ? q->search : "");
    char *text = key.failed
                     ? NULL
                     : report_text(rq, key.p, accounts_fn, q, "accounts", len);
    if (key.failed)
        meter_http_reply_problem(rq, 500, "internal", "Out of memory", NULL,
                                 "the report could not be built");
    meter_buf_release(&key);
    return text;
}

json_t *
meterd_report_accounts(struct meter_http_request *rq,
                       const struct meter_report_query *q)
{
    size_t len = 0;
    char *text = accounts_text(rq, q, &len);
    return parsed(rq, text, len);
}

struct account_arg {
    const char *account;
    int year, month;
};

static enum meter_db_status
account_fn(PGconn *db, const void *arg, json_t **out, struct meter_err *e)
{
    const struct account_arg *a = arg;
    return meter_db_report_account(db, a->account, a->year, a->month, out, e);
}

static char *
account_text(struct meter_http_request *rq, const char *account, size_t *len)
{
    const struct meter_principal *who = meter_http_principal(rq);
    int year, month;
    if (!pricing_id_valid(account)) {
        meterd_bad_query(rq, "id", account, "not an account id");
        return NULL;
    }
    if (!meterd_query_period(rq, &year, &month))
        return NULL;
    char what[PRICING_ID_MAX + 16];
    snprintf(what, sizeof(what), "account '%s'", account);
    /* Another account's page does not exist for an account key. */
    if (who->role == METER_ROLE_ACCOUNT &&
        strcmp(who->account_id, account) != 0) {
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no %s", what);
        return NULL;
    }
    char key[PRICING_ID_MAX + 48];
    snprintf(key, sizeof(key), "account %d-%d %s", year, month, account);
    struct account_arg a = {account, year, month};
    return report_text(rq, key, account_fn, &a, what, len);
}

json_t *
meterd_report_account(struct meter_http_request *rq, const char *account)
{
    size_t len = 0;
    char *text = account_text(rq, account, &len);
    return parsed(rq, text, len);
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
    int64_t len = *daily ? 86400 : 3600, span = (*daily ? 30 : 24) * len;
    /* Default: the 30 days (24 hours by hour) up to now, or before to. */
    *to = ((int64_t)time(NULL) / len + 1) * len;
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
    *from = *to - span;
    if (f && *f && meter_day_parse(f, from) < 0 &&
        meter_time_parse(f, from) < 0) {
        meterd_bad_query(
            rq, "from", f,
            "a day YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ or Unix seconds");
        return false;
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

struct usage_arg {
    int64_t from, to;
    bool daily;
};

static enum meter_db_status
usage_fn(PGconn *db, const void *arg, json_t **out, struct meter_err *e)
{
    const struct usage_arg *u = arg;
    return meter_db_report_usage(db, u->from, u->to, u->daily, out, e);
}

static char *
usage_text(struct meter_http_request *rq, int64_t from, int64_t to, bool daily,
           size_t *len)
{
    char key[80];
    snprintf(key, sizeof(key), "usage %" PRId64 " %" PRId64 " %d", from, to,
             daily);
    struct usage_arg u = {from, to, daily};
    return report_text(rq, key, usage_fn, &u, "usage", len);
}

json_t *
meterd_report_usage(struct meter_http_request *rq, int64_t from, int64_t to,
                    bool daily)
{
    size_t len = 0;
    char *text = usage_text(rq, from, to, daily, &len);
    return parsed(rq, text, len);
}

bool
meterd_query_invoices(struct meter_http_request *rq,
                      struct meter_report_invoices *q)
{
    const struct meter_principal *who = meter_http_principal(rq);
    memset(q, 0, sizeof(*q));
    const char *period = meter_http_query(rq, "period");
    const char *status = meter_http_query(rq, "status");
    const char *account = meter_http_query(rq, "account");
    /* An empty field of the page's form is no filter. */
    if (period && *period &&
        meter_period_parse(period, &q->year, &q->month) < 0) {
        meterd_bad_query(rq, "period", period, "not a month YYYY-MM");
        return false;
    }
    if (status && *status && strcmp(status, "draft") != 0 &&
        strcmp(status, "final") != 0 && strcmp(status, "void") != 0) {
        meterd_bad_query(rq, "status", status, "draft, final or void");
        return false;
    }
    q->status = status && *status ? status : NULL;
    if (account && *account && !pricing_id_valid(account)) {
        meterd_bad_query(rq, "account", account, "not an account id");
        return false;
    }
    q->account = account && *account ? account : NULL;
    /* An account key sees its own documents, whatever it asks. */
    if (who->role == METER_ROLE_ACCOUNT)
        q->account = who->account_id;
    return query_page(rq, &q->page, &q->per_page);
}

static enum meter_db_status
invoices_fn(PGconn *db, const void *arg, json_t **out, struct meter_err *e)
{
    const struct meter_report_invoices *q = arg;
    enum meter_db_status st = meter_db_report_invoices(db, q, out, e);
    if (st >= 0) {
        json_object_set_new(*out, "page", json_integer(q->page));
        json_object_set_new(*out, "per_page", json_integer(q->per_page));
    }
    return st;
}

static char *
invoices_text(struct meter_http_request *rq,
              const struct meter_report_invoices *q, size_t *len)
{
    char key[PRICING_ID_MAX + 96];
    snprintf(key, sizeof(key), "invoices %d-%d %s %d %d %s", q->year, q->month,
             q->status ? q->status : "-", q->page, q->per_page,
             q->account ? q->account : "");
    return report_text(rq, key, invoices_fn, q, "invoices", len);
}

json_t *
meterd_report_invoices(struct meter_http_request *rq,
                       const struct meter_report_invoices *q)
{
    size_t len = 0;
    char *text = invoices_text(rq, q, &len);
    return parsed(rq, text, len);
}

/* ---- the routes ---------------------------------------------------------- */

/* The report's text as it is: no parsing on the way out. */
static void
reply(struct meter_http_request *rq, char *text, size_t len)
{
    if (text)
        meter_http_reply_text(rq, 200, "application/json", text, len);
    free(text);
}

void
meterd_reports_overview(struct meter_http_request *rq)
{
    size_t len = 0;
    char *text = overview_text(rq, &len);
    reply(rq, text, len);
}

void
meterd_reports_accounts(struct meter_http_request *rq)
{
    struct meter_report_query q;
    size_t len = 0;
    if (meterd_query_accounts(rq, &q)) {
        char *text = accounts_text(rq, &q, &len);
        reply(rq, text, len);
    }
}

void
meterd_reports_account(struct meter_http_request *rq)
{
    size_t len = 0;
    char *text = account_text(rq, meter_http_param(rq, "id"), &len);
    reply(rq, text, len);
}

void
meterd_reports_invoices(struct meter_http_request *rq)
{
    struct meter_report_invoices q;
    size_t len = 0;
    if (meterd_query_invoices(rq, &q)) {
        char *text = invoices_text(rq, &q, &len);
        reply(rq, text, len);
    }
}

void
meterd_reports_usage(struct meter_http_request *rq)
{
    int64_t from, to;
    bool daily;
    size_t len = 0;
    if (meterd_query_usage(rq, &from, &to, &daily)) {
        char *text = usage_text(rq, from, to, daily, &len);
        reply(rq, text, len);
    }
}
