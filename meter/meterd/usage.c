/*
 * usage.c - GET /v1/usage?account=&from=&to=&granularity=hour|day: an
 * account's usage by hour or day from the rollups, a page at a time. A
 * key of role account reads only its own (another account is a 404).
 */
#include "meterd_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void
add_point(const struct meter_usage_point *p, void *arg)
{
    json_t *items = arg;
    char start[32];
    time_t t = (time_t)p->start;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(start, sizeof(start), "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_array_append_new(
        items,
        json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "start",
                  start, "start_unix", (json_int_t)p->start, "samples",
                  p->samples, "running_s", p->running_s, "vcpu_s", p->vcpu_s,
                  "cpu_used_s", p->cpu_used_s, "mem_byte_s", p->mem_byte_s,
                  "mem_used_byte_s", p->mem_used_byte_s, "disk_byte_s",
                  p->disk_byte_s, "egress_bytes", p->egress_bytes));
}

static void
invalid(struct meter_http_request *rq, const char *name, const char *value,
        const char *why)
{
    json_t *errors = json_pack("[{s:s, s:s, s:s}]", "field", name, "value",
                               value ? value : "", "reason", why);
    meter_http_reply_problem(rq, 400, "invalid-query", "Invalid query", errors,
                             "query parameter '%s' value '%s': %s", name,
                             value ? value : "", why);
}

void
meterd_usage(struct meter_http_request *rq)
{
    const struct meter_principal *who = meter_http_principal(rq);
    const char *account = meter_http_query(rq, "account");
    const char *from_s = meter_http_query(rq, "from");
    const char *to_s = meter_http_query(rq, "to");
    const char *gran = meter_http_query(rq, "granularity");
    int64_t from, to, after;
    int limit;
    bool own = who->role == METER_ROLE_ACCOUNT;
    if (!account && own)
        account = who->account_id;
    if (!account || !pricing_id_valid(account)) {
        invalid(rq, "account", account, "an account id is required");
        return;
    }
    if (!from_s || meter_time_parse(from_s, &from) < 0) {
        invalid(rq, "from", from_s,
                "Unix seconds or YYYY-MM-DDTHH:MM:SSZ required");
        return;
    }
    if (!to_s || meter_time_parse(to_s, &to) < 0) {
        invalid(rq, "to", to_s,
                "Unix seconds or YYYY-MM-DDTHH:MM:SSZ required");
        return;
    }
    if (to <= from) {
        invalid(rq, "to", to_s, "must be after from");
        return;
    }
    if (gran && strcmp(gran, "hour") != 0 && strcmp(gran, "day") != 0) {
        invalid(rq, "granularity", gran, "hour or day");
        return;
    }
    if (!meterd_page(rq, &after, &limit))
        return;
    if (own && strcmp(account, who->account_id) != 0) {
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no account '%s'", account);
        return;
    }
    bool daily = gran && strcmp(gran, "day") == 0;
    json_t *items = json_array();
    struct meter_err e = {{0}};
    PGconn *db = meter_http_db(rq);
    enum meter_db_status st =
        db ? meter_db_usage_series(db, account, from, to, daily, after, limit,
                                   add_point, items, &e)
           : METER_DB_HARD;
    if (st < 0) {
        json_decref(items);
        meter_http_reply_db_error(rq, db, st, &e, "usage cannot be read");
        return;
    }
    size_t n = json_array_size(items);
    json_t *next = json_null();
    if ((int)n == limit) {
        char buf[24];
        snprintf(buf, sizeof(buf), "%" PRId64,
                 (int64_t)json_integer_value(json_object_get(
                     json_array_get(items, n - 1), "start_unix")));
        next = json_string(buf);
    }
    meter_http_reply_json(
        rq, 200,
        json_pack("{s:s, s:s, s:o, s:o}", "account_id", account, "granularity",
                  daily ? "day" : "hour", "items", items, "next_after", next));
}
