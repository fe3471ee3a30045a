/*
 * testdb.c - see testdb.h.
 */
#include "testdb.h"

#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "meter_cluster.h"
#include "meter_db.h"

static void
unreachable(const char *why)
{
    const char *ci = getenv("CI");
    bool in_ci = ci && strcmp(ci, "true") == 0;
    fprintf(stderr, "test database unreachable: %s\n%s\n", why,
            in_ci ? "failing: CI=true requires a database"
                  : "skipping (under CI=true this fails)");
    exit(in_ci ? 1 : 77);
}

PGconn *
testdb_create(struct testdb *t)
{
    struct meter_err e = {{0}};
    const char *base = getenv("METER_TEST_DATABASE_URL");
    struct meter_cluster *c = NULL;
    if (!base || !*base) {
        c = meter_cluster_open(NULL, &e);
        if (!c)
            unreachable(e.msg);
        if (meter_cluster_state(c) != METER_CLUSTER_RUNNING)
            unreachable("the test cluster is not running");
        base = meter_cluster_conninfo(c);
    }
    snprintf(t->admin, sizeof(t->admin), "%s dbname=postgres", base);
    snprintf(t->name, sizeof(t->name), "test_%ld_%ld", (long)getpid(),
             (long)time(NULL));
    snprintf(t->conninfo, sizeof(t->conninfo), "%s dbname=%s", base, t->name);
    meter_cluster_free(c);

    PGconn *admin = PQconnectdb(t->admin);
    if (PQstatus(admin) != CONNECTION_OK)
        unreachable(PQerrorMessage(admin));
    char sql[128];
    snprintf(sql, sizeof(sql), "CREATE DATABASE %s", t->name);
    PGresult *r = PQexec(admin, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "cannot create %s: %s", t->name, PQerrorMessage(admin));
        exit(1);
    }
    PQclear(r);
    PQfinish(admin);

    PGconn *db = PQconnectdb(t->conninfo);
    if (PQstatus(db) != CONNECTION_OK) {
        fprintf(stderr, "cannot connect to %s: %s", t->name,
                PQerrorMessage(db));
        exit(1);
    }
    PQclear(PQexec(db, "SET client_min_messages = warning"));
    return db;
}

void
testdb_drop(struct testdb *t, PGconn *db)
{
    PQfinish(db);
    PGconn *admin = PQconnectdb(t->admin);
    char sql[128];
    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)",
             t->name);
    PQclear(PQexec(admin, sql));
    PQfinish(admin);
}

PGconn *
testdb_create_migrated(struct testdb *t)
{
    PGconn *db = testdb_create(t);
    struct meter_err e = {{0}};
    struct meter_migration_set set = {0};
    char dir[4096];
    int applied, version;
    if (meter_migrations_default_dir(dir, sizeof(dir), &e) < 0 ||
        meter_migrations_load(dir, &set, &e) < 0 ||
        meter_migrate(db, &set, NULL, NULL, &applied, &version, &e) < 0) {
        fprintf(stderr, "migrate: %s\n", e.msg);
        testdb_drop(t, db);
        exit(1);
    }
    meter_migrations_release(&set);
    return db;
}

long
testdb_count(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    long n = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
        n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    else {
        fprintf(stderr, "%s: %s", sql, PQerrorMessage(db));
        test_failures++;
    }
    PQclear(r);
    return n;
}
