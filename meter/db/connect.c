/*
 * connect.c - choosing and opening the database connection: --db, then
 * $METER_DATABASE_URL, then the embedded cluster if it is running.
 * Connecting never starts a database: a program that wants the embedded
 * one starts it first (meterctl db start).
 */
#include "meter_db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meter_cluster.h"

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

int
meter_db_conninfo(const char *flag, char **out, struct meter_err *e)
{
    const char *env = getenv("METER_DATABASE_URL");
    const char *conninfo = flag ? flag : env && *env ? env : NULL;
    struct meter_cluster *cluster = NULL;
    int rc = -1;
    *out = NULL;
    if (!conninfo) {
        cluster = meter_cluster_open(NULL, e);
        if (!cluster)
            goto out;
        if (meter_cluster_state(cluster) != METER_CLUSTER_RUNNING) {
            meter_fail(e, "no database: give --db CONNINFO or set "
                          "METER_DATABASE_URL, or start the embedded one "
                          "with 'meterctl db start'");
            goto out;
        }
        conninfo = meter_cluster_conninfo(cluster);
    }
    if (meter_db_check_conninfo(conninfo, e) < 0)
        goto out;
    if (!(*out = strdup(conninfo))) {
        meter_fail(e, "out of memory");
        goto out;
    }
    rc = 0;
out:
    meter_cluster_free(cluster);
    return rc;
}

PGconn *
meter_db_connect(const char *conninfo, struct meter_err *e)
{
    char *resolved = NULL;
    PGconn *db = NULL;
    if (!conninfo) {
        if (meter_db_conninfo(NULL, &resolved, e) < 0)
            return NULL;
        conninfo = resolved;
    } else if (meter_db_check_conninfo(conninfo, e) < 0) {
        return NULL;
    }
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
    free(resolved);
    return db;
}

bool
meter_db_lost(PGconn *db)
{
    return !db || PQstatus(db) != CONNECTION_OK;
}

int
meter_db_ping(PGconn *db, struct meter_err *e)
{
    return meter_db_exec(db, "the database does not answer", "SELECT 1", 0,
                         NULL, NULL, NULL, NULL, e) < 0
               ? -1
               : 0;
}
