/*
 * connect.c - choosing and opening the database connection: --db, then
 * $METER_DATABASE_URL (for the owner, $METER_OWNER_DATABASE_URL first),
 * then the embedded cluster if it is running, as its worker role or its
 * owner.
 * Connecting never starts a database: a program that wants the embedded
 * one starts it first (meterctl db start).
 */
#include "meter_db.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "meter_cluster.h"

/* Seconds to connect, unless the conninfo says otherwise. */
#define DB_CONNECT_TIMEOUT "5"

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

/* flag, else the first of the variables envs set and not empty, else
 * the running embedded cluster's conninfo for the owner or the worker. */
static int
resolve(const char *flag, const char *const *envs, bool owner, char **out,
        struct meter_err *e)
{
    const char *conninfo = flag;
    struct meter_cluster *cluster = NULL;
    int rc = -1;
    *out = NULL;
    for (; !conninfo && *envs; envs++) {
        const char *env = getenv(*envs);
        if (env && *env)
            conninfo = env;
    }
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
        conninfo = owner ? meter_cluster_conninfo(cluster)
                         : meter_cluster_worker_conninfo(cluster);
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

int
meter_db_conninfo(const char *flag, char **out, struct meter_err *e)
{
    static const char *const envs[] = {"METER_DATABASE_URL", NULL};
    return resolve(flag, envs, false, out, e);
}

int
meter_db_owner_conninfo(const char *flag, char **out, struct meter_err *e)
{
    static const char *const envs[] = {"METER_OWNER_DATABASE_URL",
                                       "METER_DATABASE_URL", NULL};
    return resolve(flag, envs, true, out, e);
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
    /* A server that accepts and never answers must not hang the caller:
     * connect_timeout unless the conninfo gives its own (later keywords
     * win, and the expanded conninfo comes after). */
    const char *env = getenv("PGCONNECT_TIMEOUT"); /* libpq's own */
    const char *const keys[] = {"connect_timeout", "dbname", NULL};
    const char *const vals[] = {env && *env ? env : DB_CONNECT_TIMEOUT,
                                conninfo, NULL};
    db = PQconnectdbParams(keys, vals, 1);
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
meter_db_ping(PGconn *db, int timeout_ms, struct meter_err *e)
{
    if (!PQsendQuery(db, "SELECT 1"))
        return meter_fail(e, "the database does not answer: %s",
                          PQerrorMessage(db));
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (!PQconsumeInput(db))
            return meter_fail(e, "the database does not answer: %s",
                              PQerrorMessage(db));
        if (!PQisBusy(db))
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left = timeout_ms - ((now.tv_sec - t0.tv_sec) * 1000 +
                                  (now.tv_nsec - t0.tv_nsec) / 1000000);
        struct pollfd p = {PQsocket(db), POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)left) == 0) {
            /* Frozen: break the connection, so that its next user
             * reconnects rather than waits behind this query. */
            shutdown(PQsocket(db), SHUT_RDWR);
            PQconsumeInput(db);
            PGresult *r;
            while ((r = PQgetResult(db)))
                PQclear(r);
            return meter_fail(e, "the database does not answer within %d ms",
                              timeout_ms);
        }
    }
    PGresult *r;
    bool ok = true;
    while ((r = PQgetResult(db))) {
        ok &= PQresultStatus(r) == PGRES_TUPLES_OK;
        PQclear(r);
    }
    return ok ? 0
              : meter_fail(e, "the database does not answer: %s",
                           PQerrorMessage(db));
}
