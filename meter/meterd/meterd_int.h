/*
 * meterd_int.h - the endpoints of meterd, one file each; private.
 *
 * Adding an endpoint: a file with its handler (and, if it has them, its
 * admission check and metrics), its declaration here, and one row in
 * main.c's route table.
 */
#ifndef METERD_INT_H
#define METERD_INT_H

#include "meter_db.h"
#include "meter_http.h"

/* Process-wide state the endpoints share; set up by main before the
 * server starts. */
struct meterd {
    struct meter_shards *shards; /* the shard map and what is known of
                                    each shard's sandboxes */
    int db_timeout_ms;           /* statement_timeout of the connections
                                    to the shards */
    int64_t max_age;             /* seconds: older samples are refused */
    size_t max_batch_sandboxes;  /* --max-batch-sandboxes: distinct
                                    sandboxes a batch may hold */
    unsigned session_ttl;        /* seconds a browser session lasts */
    unsigned max_sessions;       /* live sessions a key may hold; past it
                                    its oldest ends */
    unsigned merge_every;        /* --merge-every: seconds between merges of
                                    the rollups; 0: never */
    unsigned pack_after;         /* --pack-after: seconds after an hour ends
                                    that its blocks are packed; 0: never */
    unsigned alert_every;        /* --alert-every: seconds between
                                    evaluations of the usage alerts, by the
                                    merging thread; 0: never */
    unsigned webhook_every;      /* --webhook-every: seconds between looks
                                    for due webhook deliveries; 0: never */
    unsigned webhook_timeout;    /* --webhook-timeout: seconds a POST may
                                    take */
    unsigned webhook_divisor;    /* --webhook-backoff-divisor (tests) */
};
extern struct meterd meterd;

/* POST /v1/samples (samples.c) */
bool meterd_samples_admit(struct meter_http_request *rq);
void meterd_samples(struct meter_http_request *rq);
void meterd_samples_metrics(struct meter_buf *out);
/* This request thread's connections to the shards (docs/scale.md),
 * made when first asked for; NULL if out of memory. */
struct meter_shard_links *meterd_thread_links(void);
/* Closes every request thread's connections to the shards. */
void meterd_samples_stop(void);

/* GET /v1/invoices, GET /v1/invoices/{ref}, POST /v1/invoices/run
 * (invoices.c) */
void meterd_invoices_list(struct meter_http_request *rq);
void meterd_invoices_get(struct meter_http_request *rq);
void meterd_invoices_run(struct meter_http_request *rq);

/* The audit log's actor on db: this request's key (what it changes is
 * audited as done by it), until reset, as the connection serves other
 * keys next (admin.c). reset takes NULL. */
enum meter_db_status meterd_act_as_key(struct meter_http_request *rq,
                                       PGconn *db, struct meter_err *e);
void meterd_act_reset(PGconn *db);

/* The management API, /v1/admin/... (admin.c). */
void meterd_admin_account_create(struct meter_http_request *rq);
void meterd_admin_accounts_list(struct meter_http_request *rq);
void meterd_admin_account_get(struct meter_http_request *rq);
void meterd_admin_account_update(struct meter_http_request *rq);
void meterd_admin_account_assign(struct meter_http_request *rq);
void meterd_admin_grant_create(struct meter_http_request *rq);
void meterd_admin_book_upload(struct meter_http_request *rq);
void meterd_admin_books_list(struct meter_http_request *rq);
void meterd_admin_book_get(struct meter_http_request *rq);
void meterd_admin_key_create(struct meter_http_request *rq);
void meterd_admin_keys_list(struct meter_http_request *rq);
void meterd_admin_key_revoke(struct meter_http_request *rq);

/* Usage alerts (alerts.c): POST, GET /v1/admin/alerts, DELETE
 * /v1/admin/alerts/{id}, GET /v1/accounts/{id}/alerts. */
void meterd_alerts_add(struct meter_http_request *rq);
void meterd_alerts_list(struct meter_http_request *rq);
void meterd_alerts_remove(struct meter_http_request *rq);
void meterd_account_alerts(struct meter_http_request *rq);
/* One evaluation of the alerts, and of usage on no book, on db (the
 * merging thread's). */
void meterd_alerts_evaluate(PGconn *db);

/* GET /v1/usage (usage.c) */
void meterd_usage(struct meter_http_request *rq);

/* GET /v1/accounts/{id}/credits (credits.c) */
void meterd_credits(struct meter_http_request *rq);

/* GET /v1/reports/... (reports.c): the JSON behind the dashboards. The
 * meterd_report_* builders answer errors themselves and return NULL;
 * else the report (a new reference), which the pages render too. */
void meterd_reports_overview(struct meter_http_request *rq);
void meterd_reports_accounts(struct meter_http_request *rq);
void meterd_reports_account(struct meter_http_request *rq);
void meterd_reports_usage(struct meter_http_request *rq);
json_t *meterd_report_overview(struct meter_http_request *rq);
bool meterd_query_accounts(struct meter_http_request *rq,
                           struct meter_report_query *q);
json_t *meterd_report_accounts(struct meter_http_request *rq,
                               const struct meter_report_query *q);
json_t *meterd_report_account(struct meter_http_request *rq,
                              const char *account);
void meterd_reports_invoices(struct meter_http_request *rq);
bool meterd_query_invoices(struct meter_http_request *rq,
                           struct meter_report_invoices *q);
json_t *meterd_report_invoices(struct meter_http_request *rq,
                               const struct meter_report_invoices *q);
bool meterd_query_usage(struct meter_http_request *rq, int64_t *from,
                        int64_t *to, bool *daily);
json_t *meterd_report_usage(struct meter_http_request *rq, int64_t from,
                            int64_t to, bool daily);
/* The period=YYYY-MM query parameter (default: the current month). */
bool meterd_query_period(struct meter_http_request *rq, int *year, int *month);
/* Answers 400 invalid-body naming a body's field, its value (NULL: none)
 * and why; returns NULL, for a handler that answers a JSON value. */
json_t *meterd_bad_field(struct meter_http_request *rq, const char *field,
                         json_t *value, const char *why);
/* Answers 400 naming the query parameter, its value and why. */
void meterd_bad_query(struct meter_http_request *rq, const char *name,
                      const char *value, const char *why);

/* The merging thread (merge.c): merges the hourly rollups every `every`
 * seconds on a connection of its own to db (0: never), then packs the
 * hours that ended pack_after seconds ago (0: never); stop joins it. */
int meterd_merge_start(const char *db, unsigned every, unsigned pack_after,
                       unsigned db_timeout_s, struct meter_err *e);
void meterd_merge_stop(void);

/* The delivery thread of webhooks (webhooks.c, docs/webhooks.md):
 * every `every` seconds (0: never), on a connection of its own to db,
 * sends the due deliveries of the outbox, each POST waiting at most
 * timeout seconds; retries wait meter_webhook_retry_ms divided by
 * backoff_divisor (1; more in tests only). stop joins it. */
int meterd_webhooks_start(const char *db, unsigned every, unsigned timeout,
                          unsigned backoff_divisor, unsigned db_timeout_s,
                          struct meter_err *e);
void meterd_webhooks_stop(void);

/* Report texts kept ttl seconds (cache.c): set before the server
 * starts; 0 keeps nothing. get returns a copy (free it), or NULL: the
 * caller builds the text and puts it, or abandons the key if it could
 * not; but with *failed set, the build this caller waited for has just
 * failed, and so does this request. */
void meterd_cache_init(unsigned ttl_s);
char *meterd_cache_get(const char *key, size_t *len, bool *failed);
void meterd_cache_put(const char *key, const char *text, size_t len);
void meterd_cache_abandon(const char *key);
void meterd_cache_clear(void);

/* ---- the dashboard pages (view.c, dashboard.c) ---- */

/* A column of a table: the member key of each row, shown under label. */
struct meterd_col {
    const char *key, *label;
    bool num;                      /* a number: right-aligned */
    const char *link, *link_query; /* cells link to link + value + query */
    const char *sort_href;         /* the header sorts by it (escaped) */
    int sorted;                    /* 1 ascending, -1 descending, 0 not */
    const char *text;              /* a link's text, if not the value */
};
struct meterd_table {
    const char *id, *caption;
    const struct meterd_col *cols;
    size_t ncols;
    const char *csv_href; /* this table as CSV, or NULL */
};
/* A row's member key as text ("" if absent or null). */
const char *meterd_cell(json_t *row, const char *key, char buf[32]);
/* The table of rows, then a link to its CSV. */
void meterd_table(struct meter_buf *out, const struct meterd_table *t,
                  json_t *rows);
/* The same rows and columns as CSV (RFC 4180, a header line). */
void meterd_table_csv(struct meter_buf *out, const struct meterd_table *t,
                      json_t *rows);
/* A bar chart (SVG) of each row's value_key over its label_key, with a
 * title and a text alternative. */
void meterd_bar_chart(struct meter_buf *out, const char *id, const char *title,
                      const char *unit, json_t *rows, const char *label_key,
                      const char *value_key);
/* The pages: GET /overview, /accounts, /accounts/{id}, /usage,
 * /invoices (dashboard.c). */
void meterd_page_overview(struct meter_http_request *rq);
void meterd_page_accounts(struct meter_http_request *rq);
void meterd_page_account(struct meter_http_request *rq);
void meterd_page_usage(struct meter_http_request *rq);
void meterd_page_invoices(struct meter_http_request *rq);

/* The query parameters of a page, after (a cursor, default 0) and limit
 * (1-1000, default 100); false after answering 400. */
bool meterd_page(struct meter_http_request *rq, int64_t *after, int *limit);

/* GET /sign-in, POST /sign-in, POST /sign-out, GET / (signin.c) */
void meterd_signin_form(struct meter_http_request *rq);
void meterd_signin(struct meter_http_request *rq);
void meterd_signout(struct meter_http_request *rq);
void meterd_root(struct meter_http_request *rq);
/* Admission of a form's POST: a body of at most 16 KiB, of a declared
 * length (411, 413): a browser's form is small, and a route anyone may
 * call must not make meterd hold a large body. */
bool meterd_form_admit(struct meter_http_request *rq);

/* ---- the pages' shell (page.c) ---------------------------------------------
 *
 * A page is written into a struct meter_buf: meterd_page_begin, then
 * the page's own content (its <h1> first; every value through
 * meter_buf_html; forms that POST carry the hidden field "csrf" with
 * meter_http_csrf(rq)), then meterd_page_end, and meterd_page_reply.
 */

/* The document up to the page's own content: head (title, the
 * stylesheet /static/dash.css), a skip link, the header with the
 * navigation of the signed-in key's role (active: the section shown,
 * "overview", "accounts", "usage" or "invoices"; NULL for none), who is
 * signed in and the sign-out form; then <main id="main">. On a route
 * with no roles, no navigation. */
void meterd_page_begin(struct meter_buf *out, struct meter_http_request *rq,
                       const char *title, const char *active);
/* Closes what meterd_page_begin opened. */
void meterd_page_end(struct meter_buf *out);
/* Answers rq with the page in out (meter_http_reply_html), or 503 if
 * out failed; releases out. */
void meterd_page_reply(struct meter_http_request *rq, unsigned status,
                       struct meter_buf *out);
/* Appends the page who lands on after sign-in: /overview for finance
 * and admin, /accounts/ID for an account key. */
void meterd_home(const struct meter_principal *who, struct meter_buf *out);

/* GET /static/dash.css, GET /favicon.ico (static.c) */
void meterd_static_css(struct meter_http_request *rq);
void meterd_favicon(struct meter_http_request *rq);

/* GET /overview (overview.c): a placeholder until the dashboard lands */

/* POST, GET /v1/admin/webhooks, DELETE /v1/admin/webhooks/{id},
 * GET /v1/admin/webhooks/deliveries (admin_webhooks.c) */
void meterd_webhooks_add(struct meter_http_request *rq);
void meterd_webhooks_list(struct meter_http_request *rq);
void meterd_webhooks_remove(struct meter_http_request *rq);
void meterd_webhooks_deliveries(struct meter_http_request *rq);

/* GET /healthz, /readyz, /metrics (health.c) */
void meterd_healthz(struct meter_http_request *rq);
void meterd_readyz(struct meter_http_request *rq);
/* Whether db's schema is the one this meterd was built for: at its
 * newest migration METER_SCHEMA, no older (meterctl migrate has not
 * run) and no newer (a later meterd migrated it). ROWS if so; NONE if
 * not, e naming both migrations and what to do; an error if the
 * database could not say. */
enum meter_db_status meterd_schema_check(PGconn *db, struct meter_err *e);
void meterd_metrics(struct meter_http_request *rq);

#endif
