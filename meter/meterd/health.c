/*
 * health.c - GET /healthz (the process answers), GET /readyz (and its
 * database does), GET /metrics (Prometheus text).
 */
#include "meterd_int.h"

void
meterd_healthz(struct meter_http_request *rq)
{
    meter_http_reply_text(rq, 200, "text/plain", "ok\n", 3);
}

void
meterd_readyz(struct meter_http_request *rq)
{
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    if (!db || meter_db_ping(db, 2000, &e) < 0) {
        /* Not ready is a 503 whatever the ping's failure. */
        meter_http_reply_db_error(rq, db, METER_DB_SOFT, &e, "not ready");
        return;
    }
    meter_http_reply_text(rq, 200, "text/plain", "ready\n", 6);
}

void
meterd_metrics(struct meter_http_request *rq)
{
    struct meter_buf out = {0};
    meter_http_metrics(meter_http_server(rq), &out);
    if (out.failed) {
        meter_buf_release(&out);
        meter_http_reply_problem(rq, 503, "saturated", "Out of memory", NULL,
                                 "the metrics cannot be rendered now");
        return;
    }
    meter_http_reply_text(rq, 200, "text/plain; version=0.0.4", out.p, out.len);
    meter_buf_release(&out);
}
