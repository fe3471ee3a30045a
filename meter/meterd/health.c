/*
 * health.c - GET /healthz (the process answers), GET /readyz (and its
 * database does, on the schema this meterd knows), GET /metrics
 * (Prometheus text).
 */
#include "meterd_int.h"

#include <string.h>

enum meter_db_status
meterd_schema_check(PGconn *db, struct meter_err *e)
{
    char at[256];
    int version;
    enum meter_db_status st =
        meter_db_schema_at(db, at, sizeof(at), &version, e);
    if (st < 0)
        return st;
    if (strcmp(at, METER_SCHEMA) == 0)
        return METER_DB_ROWS;
    /* METER_SCHEMA is NNNN_name (CMake took it from the file). */
    int want = meter_migration_version(METER_SCHEMA ".sql");
    if (st == METER_DB_NONE)
        meter_fail(e,
                   "the database has no migration applied; this meterd "
                   "needs %s: run meterctl migrate",
                   METER_SCHEMA);
    else if (version < want)
        meter_fail(e,
                   "the database is at migration %s; this meterd needs %s: "
                   "run meterctl migrate",
                   at, METER_SCHEMA);
    else if (version > want)
        meter_fail(e,
                   "the database is at migration %s, newer than this "
                   "meterd's %s: run the meterd of the release that "
                   "brought it",
                   at, METER_SCHEMA);
    else
        meter_fail(e,
                   "the database is at migration %s, not this meterd's %s of "
                   "the same number: it was migrated by another build",
                   at, METER_SCHEMA);
    return METER_DB_NONE;
}

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
    /* Migrated under a running meterd (or rolled back), its statements
     * would fail one by one: not ready, saying why. */
    enum meter_db_status st = meterd_schema_check(db, &e);
    if (st < 0) {
        meter_http_reply_db_error(rq, db, METER_DB_SOFT, &e, "not ready");
        return;
    }
    if (st == METER_DB_NONE) {
        meter_http_reply_problem(rq, 503, "schema-mismatch", "Not ready", NULL,
                                 "%s", e.msg);
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
