/*
 * db.c - choosing and opening the database connection: --db, then
 * $METER_DATABASE_URL, then the embedded cluster.
 */
#include "meter.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
meter_fail(struct meter_err *e, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
        va_end(ap);
        /* libpq's messages end in a newline; ours do not. */
        size_t n = strlen(e->msg);
        while (n > 0 && (e->msg[n - 1] == '\n' || e->msg[n - 1] == ' '))
            e->msg[--n] = '\0';
    }
    return -1;
}

/* A description of conninfo fit for messages: its host, port and
 * database, never its password. */
static void
describe(const char *conninfo, char *out, size_t n)
{
    PQconninfoOption *opts = PQconninfoParse(conninfo, NULL);
    const char *host = NULL, *port = NULL, *dbname = NULL;
    for (PQconninfoOption *o = opts; o && o->keyword; o++) {
        if (!o->val)
            continue;
        if (strcmp(o->keyword, "host") == 0)
            host = o->val;
        else if (strcmp(o->keyword, "port") == 0)
            port = o->val;
        else if (strcmp(o->keyword, "dbname") == 0)
            dbname = o->val;
    }
    snprintf(out, n, "host '%s' port '%s' database '%s'",
             host ? host : "(default)", port ? port : "(default)",
             dbname ? dbname : "(default)");
    PQconninfoFree(opts);
}

int
meter_db_check_conninfo(const char *conninfo, struct meter_err *e)
{
    char *msg = NULL;
    PQconninfoOption *opts = PQconninfoParse(conninfo, &msg);
    if (!opts) {
        /* The string may hold a password: quote it only if short and
         * password-free, which a malformed one usually is. */
        bool show = !strstr(conninfo, "password") && !strchr(conninfo, '@') &&
                    strlen(conninfo) < 200;
        meter_fail(e, "invalid database conninfo %s%s%s: %s", show ? "'" : "",
                   show ? conninfo : "(hidden)", show ? "'" : "",
                   msg ? msg : "out of memory");
        PQfreemem(msg);
        return -1;
    }
    PQconninfoFree(opts);
    return 0;
}

PGconn *
meter_db_connect(const char *conninfo, struct meter_err *e)
{
    struct meter_cluster *cluster = NULL;
    PGconn *db = NULL;

    if (!conninfo) {
        const char *env = getenv("METER_DATABASE_URL");
        if (env && *env)
            conninfo = env;
    }
    if (!conninfo) {
        cluster = meter_cluster_open(NULL, e);
        if (!cluster || meter_cluster_start(cluster, e) < 0)
            goto out;
        conninfo = meter_cluster_conninfo(cluster);
    }
    if (meter_db_check_conninfo(conninfo, e) < 0)
        goto out;
    db = PQconnectdb(conninfo);
    if (PQstatus(db) != CONNECTION_OK) {
        char where[512];
        describe(conninfo, where, sizeof(where));
        meter_fail(e, "cannot connect to the database at %s: %s", where,
                   PQerrorMessage(db));
        PQfinish(db);
        db = NULL;
        goto out;
    }
    /* Notices such as "relation already exists, skipping" are noise;
     * warnings still reach stderr through libpq's default processor. */
    PQclear(PQexec(db, "SET client_min_messages = warning"));
out:
    meter_cluster_free(cluster);
    return db;
}
