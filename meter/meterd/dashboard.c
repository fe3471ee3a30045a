/*
 * dashboard.c - the finance pages: overview, accounts, one account,
 * usage, invoices (docs/dashboards.md). Each renders the report its
 * JSON route returns, built by the same function (reports.c), so the
 * numbers are the API's strings. A page keeps its period, range and
 * filters in its URL (plain GET forms), and every table links to its
 * CSV: the same URL with format=csv&table=ID, which answers exactly the
 * rows and columns shown.
 */
#include "meterd_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Columns: text, a number, a link to prefix + value + query. */
#define COL(k, l)                                                              \
    {                                                                          \
        .key = (k), .label = (l)                                               \
    }
#define NUM(k, l)                                                              \
    {                                                                          \
        .key = (k), .label = (l), .num = true                                  \
    }
#define LINK(k, l, prefix, query)                                              \
    {                                                                          \
        .key = (k), .label = (l), .link = (prefix), .link_query = (query)      \
    }

/* One page being rendered: its HTML, or the CSV of one table. */
struct page {
    struct meter_http_request *rq;
    const char *path;
    const char *const *params; /* the query parameters the page keeps */
    const char *csv;           /* format=csv: the table wanted */
    bool csv_done;
    struct meter_buf html, out;
};

static void
page_init(struct page *p, struct meter_http_request *rq, const char *path,
          const char *const *params)
{
    memset(p, 0, sizeof(*p));
    p->rq = rq;
    p->path = path;
    p->params = params;
    const char *f = meter_http_query(rq, "format");
    if (f && strcmp(f, "csv") == 0) {
        const char *t = meter_http_query(rq, "table");
        p->csv = t ? t : "";
    }
}

/* The page's URL with its kept parameters, k1 and k2 set (a NULL value
 * drops the parameter), into out (unescaped for HTML: the caller
 * escapes it). */
static void
href(struct page *p, struct meter_buf *out, const char *k1, const char *v1,
     const char *k2, const char *v2)
{
    meter_buf_str(out, p->path);
    char sep = '?';
    for (size_t i = 0; p->params[i]; i++) {
        const char *k = p->params[i], *v = meter_http_query(p->rq, k);
        if (k1 && strcmp(k, k1) == 0)
            continue;
        if (k2 && strcmp(k, k2) == 0)
            continue;
        if (!v || !*v)
            continue;
        meter_buf_printf(out, "%c%s=", sep, k);
        meter_buf_urlencode(out, v);
        sep = '&';
    }
    if (k1 && v1) {
        meter_buf_printf(out, "%c%s=", sep, k1);
        meter_buf_urlencode(out, v1);
        sep = '&';
    }
    if (k2 && v2) {
        meter_buf_printf(out, "%c%s=", sep, k2);
        meter_buf_urlencode(out, v2);
    }
}

/* A table of the page: its HTML, or its CSV if that is what was asked. */
static void
table(struct page *p, struct meterd_table *t, json_t *rows)
{
    struct meter_buf csv = {0};
    href(p, &csv, "format", "csv", "table", t->id);
    t->csv_href = csv.failed ? NULL : csv.p;
    if (p->csv && strcmp(p->csv, t->id) == 0 && !p->csv_done) {
        meterd_table_csv(&p->out, t, rows);
        p->csv_done = true;
    }
    meterd_table(&p->html, t, rows);
    meter_buf_release(&csv);
}

/* A section of a page: a heading, a bar chart of value_key over
 * label_key (none if chart is NULL), then the table of the rows. */
struct section {
    const char *id, *heading;
    const char *chart, *unit, *label_key, *value_key;
    struct meterd_table table;
    json_t *rows;
};
#define TABLE(id, caption, cols)                                               \
    {                                                                          \
        (id), (caption), (cols), sizeof(cols) / sizeof((cols)[0]), NULL        \
    }

static void
section(struct page *p, const struct section *s)
{
    struct meter_buf *o = &p->html;
    meter_buf_printf(o, "<section aria-labelledby=\"h-%s\"><h2 id=\"h-%s\">",
                     s->id, s->id);
    meter_buf_html(o, s->heading);
    meter_buf_str(o, "</h2>\n");
    if (s->chart) {
        char id[48];
        snprintf(id, sizeof(id), "chart-%s", s->id);
        meterd_bar_chart(o, id, s->chart, s->unit, s->rows, s->label_key,
                         s->value_key);
    }
    struct meterd_table t = s->table;
    table(p, &t, s->rows);
    meter_buf_str(o, "</section>\n");
}

/* Answers the page (or the CSV asked for); consumes doc. */
static void
page_reply(struct page *p, json_t *doc)
{
    meterd_page_end(&p->html);
    if (p->html.failed || p->out.failed) {
        meter_http_reply_problem(p->rq, 500, "internal", "Out of memory", NULL,
                                 "the page could not be built");
    } else if (p->csv && !p->csv_done) {
        meterd_bad_query(p->rq, "table", p->csv, "no such table on this page");
    } else if (p->csv) {
        char disp[160];
        snprintf(disp, sizeof(disp), "attachment; filename=\"%s.csv\"", p->csv);
        meter_http_reply_header(p->rq, "Content-Disposition", disp);
        meter_http_reply_text(p->rq, 200, "text/csv; charset=utf-8", p->out.p,
                              p->out.len);
    } else {
        meter_http_reply_html(p->rq, 200, p->html.p, p->html.len);
    }
    meter_buf_release(&p->html);
    meter_buf_release(&p->out);
    json_decref(doc);
}

/* The rows of arr whose key is value (a new array). */
static json_t *
rows_where(json_t *arr, const char *key, const char *value)
{
    json_t *out = json_array(), *row;
    size_t i;
    json_array_foreach(arr, i, row)
    {
        char buf[32];
        if (strcmp(meterd_cell(row, key, buf), value) == 0)
            json_array_append(out, row);
    }
    return out;
}

/* The period form, and links to the periods before and after. */
static void
period_form(struct page *p, int year, int month, const char *extra_label,
            const char *extra_name)
{
    struct meter_buf *o = &p->html;
    char cur[24], prev[24], next[24];
    snprintf(cur, sizeof(cur), "%04d-%02d", year % 10000, month % 100);
    snprintf(prev, sizeof(prev), "%04d-%02d",
             (month == 1 ? year - 1 : year) % 10000,
             month == 1 ? 12 : month - 1);
    snprintf(next, sizeof(next), "%04d-%02d",
             (month == 12 ? year + 1 : year) % 10000,
             month == 12 ? 1 : month + 1);
    meter_buf_str(o, "<form class=\"filters\" method=\"get\" action=\"");
    meter_buf_html(o, p->path);
    meter_buf_str(o, "\">\n<label for=\"period\">Period</label> "
                     "<input id=\"period\" name=\"period\" type=\"month\" "
                     "pattern=\"[0-9]{4}-[0-9]{2}\" value=\"");
    meter_buf_html(o, cur);
    meter_buf_str(o, "\">\n");
    if (extra_name) {
        const char *v = meter_http_query(p->rq, extra_name);
        meter_buf_printf(o, "<label for=\"%s\">", extra_name);
        meter_buf_html(o, extra_label);
        meter_buf_printf(
            o, "</label> <input id=\"%s\" name=\"%s\" type=\"search\" value=\"",
            extra_name, extra_name);
        meter_buf_html(o, v ? v : "");
        meter_buf_str(o, "\">\n");
    }
    meter_buf_str(o, "<button type=\"submit\">Show</button>\n</form>\n"
                     "<p class=\"periods\"><a rel=\"prev\" href=\"");
    struct meter_buf h = {0};
    href(p, &h, "period", prev, "page", NULL);
    meter_buf_html(o, h.failed ? "" : h.p);
    meter_buf_str(o, "\">← ");
    meter_buf_html(o, prev);
    meter_buf_str(o, "</a> <a rel=\"next\" href=\"");
    meter_buf_reset(&h);
    href(p, &h, "period", next, "page", NULL);
    meter_buf_html(o, h.failed ? "" : h.p);
    meter_buf_str(o, "\">");
    meter_buf_html(o, next);
    meter_buf_str(o, " →</a></p>\n");
    meter_buf_release(&h);
}

/* ---- overview ------------------------------------------------------------ */

/* One key figure: a label, the value (data-key names its member), and a
 * line under it. */
static void
card(struct meter_buf *o, const char *label, const char *key, const char *value,
     const char *unit, const char *note)
{
    meter_buf_str(o, "<li class=\"card\"><span class=\"label\">");
    meter_buf_html(o, label);
    meter_buf_str(o, "</span> <span class=\"value\" data-key=\"");
    meter_buf_html(o, key);
    meter_buf_str(o, "\">");
    meter_buf_html(o, value && *value ? value : "none");
    meter_buf_str(o, "</span> <span class=\"label\">");
    meter_buf_html(o, unit);
    if (note) {
        meter_buf_str(o, "; ");
        meter_buf_html(o, note);
    }
    meter_buf_str(o, "</span></li>\n");
}

/* The overview's key figures: revenue so far per currency against the
 * previous period's same days, and the idle share. */
static void
key_figures(struct meter_buf *o, json_t *doc)
{
    meter_buf_str(o, "<ul class=\"cards\" aria-label=\"Key figures\">\n");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "revenue"), i, r)
    {
        char buf[32], note[96];
        const char *cur = meterd_cell(r, "currency", buf);
        snprintf(note, sizeof(note), "previous period, same days: %s",
                 json_string_value(json_object_get(r, "previous_to_date")));
        char key[48];
        snprintf(key, sizeof(key), "revenue.%s.period_to_date", cur);
        card(o, "Revenue so far", key,
             json_string_value(json_object_get(r, "period_to_date")), cur,
             note);
    }
    json_t *idle = json_object_get(doc, "idle");
    card(o, "Idle share of running time", "idle.idle_share",
         json_string_value(json_object_get(idle, "idle_share")),
         "credited by autopause", NULL);
    meter_buf_str(o, "</ul>\n");
}

/* What the period leaves unbilled (the report's not_billed): usage on
 * no price book and the accounts whose draft failed, each with why;
 * said in one line when there is none, never left out. query is the
 * period's, for the accounts' links. */
static void
not_billed(struct page *p, json_t *nb, const char *query)
{
    struct meter_buf *o = &p->html;
    json_t *none = json_object_get(nb, "no_book"),
           *failed = json_object_get(nb, "run_failed");
    size_t n = json_array_size(none) + json_array_size(failed);
    meter_buf_str(o, "<section aria-labelledby=\"h-not-billed\"><h2 "
                     "id=\"h-not-billed\">Not billed</h2>\n");
    if (n == 0) {
        meter_buf_str(o, "<p class=\"muted\">0: every account's "
                         "usage is on a price book, and every draft the "
                         "invoice runs tried was computed.</p>\n</section>\n");
        return;
    }
    meter_buf_printf(o,
                     "<p class=\"warning\">%zu: "
                     "%zu with usage on no price book, %zu whose draft the "
                     "last invoice run could not compute. No run bills them "
                     "until this is mended.</p>\n",
                     n, json_array_size(none), json_array_size(failed));
    const struct meterd_col none_cols[] = {
        LINK("account_id", "Account", "/accounts/", query),
        COL("name", "Name"),
        NUM("samples", "Samples"),
        COL("from", "From"),
        COL("to", "To"),
        COL("why", "Why"),
    };
    const struct meterd_col failed_cols[] = {
        LINK("account_id", "Account", "/accounts/", query),
        COL("name", "Name"),
        COL("why", "Why"),
        COL("at", "Run at"),
    };
    struct meterd_table t1 = TABLE("no_book", "Usage on no price book",
                                   none_cols),
                        t2 = TABLE("run_failed", "Drafts that failed",
                                   failed_cols);
    if (json_array_size(none))
        table(p, &t1, none);
    if (json_array_size(failed))
        table(p, &t2, failed);
    meter_buf_str(o, "</section>\n");
}

static const char *const overview_params[] = {"period", NULL};

void
meterd_page_overview(struct meter_http_request *rq)
{
    json_t *doc = meterd_report_overview(rq);
    if (!doc)
        return;
    int year, month;
    meterd_query_period(rq, &year, &month);
    struct page p;
    page_init(&p, rq, "/overview", overview_params);
    struct meter_buf *o = &p.html;
    char title[64];
    snprintf(title, sizeof(title), "Overview of %s",
             json_string_value(json_object_get(doc, "period")));
    meterd_page_begin(o, rq, title, "overview");
    meter_buf_str(o, "<h1>");
    meter_buf_html(o, title);
    meter_buf_str(o, "</h1>\n");
    period_form(&p, year, month, NULL, NULL);
    meter_buf_str(o, "<p class=\"muted\">As of ");
    meter_buf_html(o, json_string_value(json_object_get(doc, "as_of")));
    meter_buf_str(o, "; drafts count until final (docs/dashboards.md).</p>\n");
    key_figures(o, doc);
    char q[32];
    snprintf(q, sizeof(q), "?period=%04d-%02d", year % 10000, month % 100);
    not_billed(&p, json_object_get(doc, "not_billed"), q);

    static const struct meterd_col rev_cols[] = {
        COL("currency", "Currency"),
        NUM("period_to_date", "Period to date"),
        NUM("period_total", "Whole period, fees to come included"),
        NUM("previous_to_date", "Previous period, same days"),
        NUM("previous_period", "Previous period, whole"),
    };
    static const struct meterd_col day_cols[] = {
        COL("day", "Day"),
        COL("currency", "Currency"),
        NUM("amount", "Revenue"),
    };
    static const struct meterd_col book_cols[] = {
        COL("price_book_id", "Price book"),
        NUM("version", "Version"),
        COL("currency", "Currency"),
        NUM("amount", "Revenue"),
    };
    static const struct meterd_col model_cols[] = {
        COL("model", "Pricing model"),
        COL("currency", "Currency"),
        NUM("amount", "Revenue"),
    };
    const struct meterd_col top_cols[] = {
        LINK("account_id", "Account", "/accounts/", q),
        COL("name", "Name"),
        COL("currency", "Currency"),
        NUM("amount", "Revenue"),
    };
    static const struct meterd_col credit_cols[] = {
        COL("currency", "Currency"),
        NUM("amount", "Autopause credit"),
    };
    static const struct meterd_col idle_cols[] = {
        NUM("running_s", "Running seconds"),
        NUM("idle_s", "Idle seconds credited"),
        NUM("idle_share", "Idle share"),
    };
    static const struct meterd_col ingest_cols[] = {
        COL("minute", "Minute"),
        NUM("samples", "Samples"),
    };
    /* The current period's days; the idle figures as a one-row table. */
    json_t *days =
        rows_where(json_object_get(doc, "revenue_by_day"), "period", "current");
    json_t *idle = json_array();
    json_array_append(idle, json_object_get(doc, "idle"));
    const struct section sections[] = {
        {"revenue", "Revenue", NULL, NULL, NULL, NULL,
         TABLE("revenue", "Revenue", rev_cols),
         json_object_get(doc, "revenue")},
        {"days", "Revenue by day", "Revenue by day", "", "day", "amount",
         TABLE("revenue_by_day", "Revenue by day", day_cols), days},
        {"books", "By price book", "Revenue by price book", "", "price_book_id",
         "amount", TABLE("revenue_by_book", "Revenue by price book", book_cols),
         json_object_get(doc, "revenue_by_book")},
        {"models", "By pricing model", "Revenue by pricing model", "", "model",
         "amount",
         TABLE("revenue_by_model", "Revenue by pricing model", model_cols),
         json_object_get(doc, "revenue_by_model")},
        {"top", "Top accounts", NULL, NULL, NULL, NULL,
         TABLE("top_accounts", "Top accounts by revenue", top_cols),
         json_object_get(doc, "top_accounts")},
        {"credit", "Autopause credit given back", NULL, NULL, NULL, NULL,
         TABLE("autopause_credit", "Autopause credit given back", credit_cols),
         json_object_get(doc, "autopause_credit")},
        {"idle", "Idle share of running time", NULL, NULL, NULL, NULL,
         TABLE("idle", "Idle share of running time", idle_cols), idle},
        {"ingest", "Samples ingested per minute, last hour",
         "Samples ingested per minute", "samples", "minute", "samples",
         TABLE("ingested_per_minute", "Samples ingested per minute",
               ingest_cols),
         json_object_get(doc, "ingested_per_minute")},
    };
    for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
        section(&p, &sections[i]);
    json_decref(days);
    json_decref(idle);
    page_reply(&p, doc);
}

/* Links to the pages before and after, of total rows. */
static void
pager(struct page *p, int page, int per_page, json_int_t total,
      const char *what)
{
    struct meter_buf *o = &p->html;
    json_int_t pages = (total + per_page - 1) / per_page;
    meter_buf_printf(o,
                     "<nav class=\"pages\" aria-label=\"Pages\"><p>"
                     "Page %d of %" JSON_INTEGER_FORMAT
                     " (%" JSON_INTEGER_FORMAT " %s)",
                     page, pages ? pages : 1, total, what);
    char num[16];
    struct meter_buf h = {0};
    if (page > 1) {
        snprintf(num, sizeof(num), "%d", page - 1);
        href(p, &h, "page", num, NULL, NULL);
        meter_buf_str(o, " <a rel=\"prev\" href=\"");
        meter_buf_html(o, h.failed ? "" : h.p);
        meter_buf_str(o, "\">Previous page</a>");
    }
    if (page < pages) {
        meter_buf_reset(&h);
        snprintf(num, sizeof(num), "%d", page + 1);
        href(p, &h, "page", num, NULL, NULL);
        meter_buf_str(o, " <a rel=\"next\" href=\"");
        meter_buf_html(o, h.failed ? "" : h.p);
        meter_buf_str(o, "\">Next page</a>");
    }
    meter_buf_release(&h);
    meter_buf_str(o, "</p></nav>\n");
}

/* ---- accounts ------------------------------------------------------------ */

static const char *const accounts_params[] = {
    "period", "q", "sort", "order", "page", "per_page", NULL};

void
meterd_page_accounts(struct meter_http_request *rq)
{
    struct meter_report_query q;
    if (!meterd_query_accounts(rq, &q))
        return;
    json_t *doc = meterd_report_accounts(rq, &q);
    if (!doc)
        return;
    struct page p;
    page_init(&p, rq, "/accounts", accounts_params);
    struct meter_buf *o = &p.html;
    char title[64];
    snprintf(title, sizeof(title), "Accounts in %04d-%02d", q.year % 10000,
             q.month % 100);
    meterd_page_begin(o, rq, title, "accounts");
    meter_buf_str(o, "<h1>");
    meter_buf_html(o, title);
    meter_buf_str(o, "</h1>\n");
    period_form(&p, q.year, q.month, "Account or name contains", "q");

    static const struct {
        const char *key, *label;
        bool num;
    } cols[] = {
        {"account_id", "Account", false},
        {"name", "Name", false},
        {"price_book_id", "Price book", false},
        {"currency", "Currency", false},
        {"revenue", "Revenue", true},
        {"vcpu_hours", "vCPU-hours", true},
        {"gib_hours", "GiB-hours", true},
    };
    /* The sort each header asks for: its column, ascending, or
     * descending when it is already ascending. */
    static const char *const sort_of[] = {
        "account", "name", "book", NULL, "revenue", "vcpu_hours", "gib_hours"};
    struct meterd_col c[7];
    struct meter_buf hrefs[7];
    char period_q[32];
    snprintf(period_q, sizeof(period_q), "?period=%04d-%02d", q.year % 10000,
             q.month % 100);
    for (size_t i = 0; i < 7; i++) {
        memset(&hrefs[i], 0, sizeof(hrefs[i]));
        c[i] = (struct meterd_col){.key = cols[i].key,
                                   .label = cols[i].label,
                                   .num = cols[i].num,
                                   .link = i == 0 ? "/accounts/" : NULL,
                                   .link_query = i == 0 ? period_q : NULL};
        if (!sort_of[i])
            continue;
        bool on = strcmp(q.sort, sort_of[i]) == 0;
        c[i].sorted = on ? (q.descending ? -1 : 1) : 0;
        href(&p, &hrefs[i], "sort", sort_of[i], "order",
             on && !q.descending ? "desc" : "asc");
        c[i].sort_href = hrefs[i].failed ? NULL : hrefs[i].p;
    }
    struct meterd_table t = {"accounts", "Accounts", c, 7, NULL};
    table(&p, &t, json_object_get(doc, "items"));
    for (size_t i = 0; i < 7; i++)
        meter_buf_release(&hrefs[i]);

    pager(&p, q.page, q.per_page,
          json_integer_value(json_object_get(doc, "total")), "accounts");
    page_reply(&p, doc);
}

/* ---- one account --------------------------------------------------------- */

/* What a rule's metric watches, in words. */
static const char *
metric_words(const char *metric)
{
    static const char *const words[][2] = {
        {"amount", "the amount this month"},
        {"vcpu_hours", "vCPU-hours"},
        {"gib_hours", "GiB-hours of memory"},
        {"storage_gib_hours", "GiB-hours of storage"},
        {"egress_gb", "GB of egress"},
        {"running_hours", "hours running"},
    };
    for (size_t i = 0; metric && i < sizeof(words) / sizeof(words[0]); i++)
        if (strcmp(metric, words[i][0]) == 0)
            return words[i][1];
    return metric ? metric : "";
}

/* The account's usage alerts this period (docs/alerts.md): each rule,
 * its value now and the percents crossed; left out when none watches
 * it, and said when they cannot be read. */
static void
alerts_section(struct page *p, struct meter_http_request *rq, const char *id)
{
    struct meter_buf *o = &p->html;
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *doc = NULL;
    enum meter_db_status st =
        db ? meter_db_account_alerts(db, id, 0, (int64_t)time(NULL), &doc, &e)
           : METER_DB_HARD;
    json_t *alerts = json_object_get(doc, "alerts");
    if (st >= 0 && json_array_size(alerts) == 0) {
        json_decref(doc);
        return;
    }
    meter_buf_str(o, "<section aria-labelledby=\"h-alerts\"><h2 "
                     "id=\"h-alerts\">Usage alerts this month</h2>\n");
    if (st < 0) {
        meter_log(METER_LOG_WARN, "account %s: alerts: %s", id, e.msg);
        meter_buf_str(o, "<p class=\"warning\">The alerts cannot be read "
                         "now.</p>\n</section>\n");
        return;
    }
    json_t *rows = json_array();
    size_t i;
    json_t *a;
    json_array_foreach(alerts, i, a)
    {
        struct meter_buf crossed = {0};
        size_t k;
        json_t *c;
        json_array_foreach(json_object_get(a, "crossed"), k, c)
        {
            meter_buf_printf(&crossed, "%s%" JSON_INTEGER_FORMAT "%% at %s",
                             k ? ", " : "",
                             json_integer_value(json_object_get(c, "percent")),
                             json_string_value(json_object_get(c, "at")));
        }
        const char *cur = json_string_value(json_object_get(a, "currency"));
        struct meter_buf limit = {0};
        meter_buf_printf(&limit, "%s%s%s",
                         json_string_value(json_object_get(a, "threshold")),
                         cur ? " " : "", cur ? cur : "");
        const char *value = json_string_value(json_object_get(a, "value"));
        json_array_append_new(
            rows,
            json_pack(
                "{s:O, s:s, s:s, s:s, s:s}", "name", json_object_get(a, "name"),
                "metric",
                metric_words(json_string_value(json_object_get(a, "metric"))),
                "threshold", limit.failed ? "" : limit.p, "value",
                value ? value
                      : json_string_value(json_object_get(a, "why_no_value")),
                "crossed",
                crossed.len && !crossed.failed ? crossed.p : "none yet"));
        meter_buf_release(&crossed);
        meter_buf_release(&limit);
    }
    static const struct meterd_col cols[] = {
        COL("name", "Alert"),          COL("metric", "Watches"),
        NUM("threshold", "Threshold"), NUM("value", "Now"),
        COL("crossed", "Crossed"),
    };
    struct meterd_table t = TABLE("alerts", "Usage alerts", cols);
    table(p, &t, rows);
    json_decref(rows);
    json_decref(doc);
    meter_buf_str(o, "</section>\n");
}

/* Why the account has no draft for the period: its last run's failure,
 * or usage on no price book, else that none was computed or it is final.
 * nb is the account's not_billed. */
static void
no_estimate(struct meter_buf *o, json_t *nb)
{
    json_t *failed = json_array_get(json_object_get(nb, "run_failed"), 0);
    json_t *none = json_array_get(json_object_get(nb, "no_book"), 0);
    if (failed) {
        meter_buf_str(o, "<p class=\"warning\">"
                         "No draft: the invoice run of ");
        meter_buf_html(o, json_string_value(json_object_get(failed, "at")));
        meter_buf_str(o, " could not compute it: ");
        meter_buf_html(o, json_string_value(json_object_get(failed, "why")));
        meter_buf_str(o, ".</p>\n");
    }
    if (none) {
        meter_buf_printf(
            o, "<p class=\"warning\">%" JSON_INTEGER_FORMAT " samples from ",
            json_integer_value(json_object_get(none, "samples")));
        meter_buf_html(o, json_string_value(json_object_get(none, "from")));
        meter_buf_str(o, " to ");
        meter_buf_html(o, json_string_value(json_object_get(none, "to")));
        meter_buf_str(o, " are not billed: the account was ");
        meter_buf_html(o, json_string_value(json_object_get(none, "why")));
        meter_buf_str(o, ".</p>\n");
    }
    if (!failed && !none)
        meter_buf_str(o, "<p>No draft for this period: it is final, or no "
                         "invoice run has computed it yet.</p>\n");
}

static const char *const account_params[] = {"period", NULL};

void
meterd_page_account(struct meter_http_request *rq)
{
    const char *id = meter_http_param(rq, "id");
    json_t *doc = meterd_report_account(rq, id);
    if (!doc)
        return;
    int year, month;
    meterd_query_period(rq, &year, &month);
    struct meter_buf path = {0};
    meter_buf_str(&path, "/accounts/");
    meter_buf_urlencode(&path, id);
    struct page p;
    page_init(&p, rq, path.failed ? "/accounts" : path.p, account_params);
    struct meter_buf *o = &p.html;
    char title[160];
    snprintf(title, sizeof(title), "Account %s in %04d-%02d", id, year % 10000,
             month % 100);
    meterd_page_begin(o, rq, title, "accounts");
    meter_buf_str(o, "<h1>Account ");
    meter_buf_html(o, id);
    const char *name = json_string_value(json_object_get(doc, "name"));
    if (name) {
        meter_buf_str(o, " <span class=\"muted\">");
        meter_buf_html(o, name);
        meter_buf_str(o, "</span>");
    }
    meter_buf_str(o, "</h1>\n");
    period_form(&p, year, month, NULL, NULL);

    json_t *est = json_object_get(doc, "estimate");
    meter_buf_str(o, "<section aria-labelledby=\"h-est\"><h2 "
                     "id=\"h-est\">Unbilled estimate</h2>\n");
    if (json_is_object(est)) {
        meter_buf_str(o,
                      "<p class=\"estimate\"><strong data-key=\"estimate\">");
        meter_buf_html(o, json_string_value(json_object_get(est, "total")));
        meter_buf_str(o, "</strong> ");
        meter_buf_html(o, json_string_value(json_object_get(est, "currency")));
        meter_buf_str(o, ": the period's draft as of ");
        meter_buf_html(o, json_string_value(json_object_get(est, "as_of")));
        meter_buf_str(o, ".</p>\n");
    } else {
        no_estimate(o, json_object_get(doc, "not_billed"));
    }
    meter_buf_str(o, "</section>\n");
    alerts_section(&p, rq, id);

    static const struct meterd_col use_cols[] = {
        COL("day", "Day"),
        NUM("running_hours", "Running hours"),
        NUM("vcpu_hours", "vCPU-hours"),
        NUM("gib_hours", "GiB-hours"),
        NUM("storage_gib_hours", "Storage GiB-hours"),
        NUM("egress_gb", "Egress GB"),
    };
    static const struct meterd_col rev_cols[] = {
        COL("day", "Day"),
        COL("currency", "Currency"),
        NUM("amount", "Revenue"),
    };
    static const struct meterd_col book_cols[] = {
        COL("valid_from", "From"),
        COL("price_book_id", "Price book"),
        NUM("version", "Version"),
    };
    static const struct meterd_col inv_cols[] = {
        LINK("ref", "Document", "/v1/invoices/", NULL),
        COL("number", "Number"),
        COL("kind", "Kind"),
        COL("status", "Status"),
        COL("period", "Period"),
        COL("currency", "Currency"),
        NUM("total", "Total"),
    };
    const struct section sections[] = {
        {"vcpu", "Usage by day", "vCPU-hours by day", "vCPU-hours", "day",
         "vcpu_hours", TABLE("usage_by_day", "Usage by day", use_cols),
         json_object_get(doc, "usage_by_day")},
        {"rev", "Revenue by day", NULL, NULL, NULL, NULL,
         TABLE("revenue_by_day", "Revenue by day", rev_cols),
         json_object_get(doc, "revenue_by_day")},
        {"books", "Price books", NULL, NULL, NULL, NULL,
         TABLE("price_books", "Price books", book_cols),
         json_object_get(doc, "price_books")},
        {"inv", "Invoices", NULL, NULL, NULL, NULL,
         TABLE("invoices", "Invoices and credit notes", inv_cols),
         json_object_get(doc, "invoices")},
    };
    for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
        section(&p, &sections[i]);
    page_reply(&p, doc);
    meter_buf_release(&path);
}

/* ---- usage --------------------------------------------------------------- */

static const char *const usage_params[] = {"from", "to", "granularity", NULL};

void
meterd_page_usage(struct meter_http_request *rq)
{
    int64_t from, to;
    bool daily;
    if (!meterd_query_usage(rq, &from, &to, &daily))
        return;
    json_t *doc = meterd_report_usage(rq, from, to, daily);
    if (!doc)
        return;
    struct page p;
    page_init(&p, rq, "/usage", usage_params);
    struct meter_buf *o = &p.html;
    meterd_page_begin(o, rq, "Fleet usage", "usage");
    meter_buf_str(
        o, "<h1>Fleet usage</h1>\n<form class=\"filters\" method=\"get\" "
           "action=\"/usage\">\n");
    const char *f = meter_http_query(rq, "from"),
               *t_ = meter_http_query(rq, "to");
    meter_buf_str(
        o, "<label for=\"from\">From</label> <input id=\"from\" "
           "name=\"from\" type=\"text\" placeholder=\"YYYY-MM-DD\" value=\"");
    meter_buf_html(o, f ? f : "");
    meter_buf_str(
        o, "\">\n<label for=\"to\">To (included)</label> <input id=\"to\" "
           "name=\"to\" type=\"text\" placeholder=\"YYYY-MM-DD\" value=\"");
    meter_buf_html(o, t_ ? t_ : "");
    meter_buf_str(o, "\">\n<label for=\"granularity\">By</label> "
                     "<select id=\"granularity\" name=\"granularity\">");
    meter_buf_str(o, daily ? "<option value=\"day\" selected>day</option>"
                             "<option value=\"hour\">hour</option>"
                           : "<option value=\"day\">day</option>"
                             "<option value=\"hour\" selected>hour</option>");
    meter_buf_str(
        o, "</select>\n<button type=\"submit\">Show</button>\n</form>\n");
    meter_buf_str(o, "<p class=\"muted\">From ");
    meter_buf_html(o, json_string_value(json_object_get(doc, "from")));
    meter_buf_str(o, " to ");
    meter_buf_html(o, json_string_value(json_object_get(doc, "to")));
    meter_buf_str(o, " (excluded).</p>\n");
    static const struct meterd_col cols[] = {
        COL("start", "Start"),
        NUM("accounts", "Accounts"),
        NUM("samples", "Samples"),
        NUM("running_hours", "Running hours"),
        NUM("vcpu_hours", "vCPU-hours"),
        NUM("gib_hours", "GiB-hours"),
        NUM("storage_gib_hours", "Storage GiB-hours"),
        NUM("egress_gb", "Egress GB"),
    };
    const struct section use = {"vcpu",
                                daily ? "By day" : "By hour",
                                "vCPU-hours",
                                "vCPU-hours",
                                "start",
                                "vcpu_hours",
                                TABLE("usage", "Fleet usage", cols),
                                json_object_get(doc, "items")};
    section(&p, &use);
    page_reply(&p, doc);
}

/* ---- invoices ------------------------------------------------------------ */

static const char *const invoices_params[] = {"period", "status",   "account",
                                              "page",   "per_page", NULL};

void
meterd_page_invoices(struct meter_http_request *rq)
{
    struct meter_report_invoices q;
    if (!meterd_query_invoices(rq, &q))
        return;
    json_t *doc = meterd_report_invoices(rq, &q);
    if (!doc)
        return;
    struct page p;
    page_init(&p, rq, "/invoices", invoices_params);
    struct meter_buf *o = &p.html;
    meterd_page_begin(o, rq, "Invoices", "invoices");
    meter_buf_str(o,
                  "<h1>Invoices</h1>\n<form class=\"filters\" method=\"get\" "
                  "action=\"/invoices\">\n");
    const char *period = meter_http_query(rq, "period");
    const char *status = meter_http_query(rq, "status");
    const char *account = meter_http_query(rq, "account");
    meter_buf_str(o,
                  "<label for=\"period\">Period</label> <input id=\"period\" "
                  "name=\"period\" type=\"month\" value=\"");
    meter_buf_html(o, period ? period : "");
    meter_buf_str(o, "\">\n<label for=\"status\">Status</label> <select "
                     "id=\"status\" name=\"status\">");
    static const char *const statuses[] = {"", "draft", "final", "void"};
    for (size_t i = 0; i < 4; i++) {
        meter_buf_str(o, "<option value=\"");
        meter_buf_str(o, statuses[i]);
        meter_buf_str(o, status && strcmp(status, statuses[i]) == 0
                             ? "\" selected>"
                             : "\">");
        meter_buf_str(o, *statuses[i] ? statuses[i] : "any");
        meter_buf_str(o, "</option>");
    }
    meter_buf_str(o, "</select>\n");
    if (meter_http_principal(rq)->role != METER_ROLE_ACCOUNT) {
        meter_buf_str(o,
                      "<label for=\"account\">Account</label> <input "
                      "id=\"account\" name=\"account\" type=\"text\" value=\"");
        meter_buf_html(o, account ? account : "");
        meter_buf_str(o, "\">\n");
    }
    meter_buf_str(o, "<button type=\"submit\">Show</button>\n</form>\n");
    static const struct meterd_col cols[] = {
        LINK("ref", "Document", "/v1/invoices/", NULL),
        LINK("account_id", "Account", "/accounts/", NULL),
        COL("period", "Period"),
        COL("kind", "Kind"),
        COL("status", "Status"),
        COL("currency", "Currency"),
        NUM("total", "Total"),
        {.key = "ref",
         .label = "PDF",
         .link = "/v1/invoices/",
         .link_query = ".pdf",
         .text = "PDF"},
        {.key = "ref",
         .label = "HTML",
         .link = "/v1/invoices/",
         .link_query = ".html",
         .text = "HTML"},
        {.key = "ref",
         .label = "CSV",
         .link = "/v1/invoices/",
         .link_query = ".csv",
         .text = "CSV"},
        {.key = "ref",
         .label = "JSON",
         .link = "/v1/invoices/",
         .link_query = ".json",
         .text = "JSON"},
    };
    struct meterd_table t = {"invoices", "Invoices and credit notes", cols, 11,
                             NULL};
    table(&p, &t, json_object_get(doc, "items"));
    pager(&p, q.page, q.per_page,
          json_integer_value(json_object_get(doc, "total")), "documents");
    page_reply(&p, doc);
}
