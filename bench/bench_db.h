/*
 * bench_db.h - a database of a benchmark's own: created, migrated, and
 * dropped at the end (unless kept), in the cluster of
 * $METER_DATABASE_URL, else the embedded one of the current directory.
 * A bench whose data takes minutes to store (report_bench) keeps a
 * database of a fixed name instead: bench_db_attach, bench_db_exists,
 * then bench_db_open or bench_db_make.
 */
#ifndef BENCH_DB_H
#define BENCH_DB_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "meter_cluster.h"
#include "meter_db.h"

struct bench_db {
    char name[64];
    char conninfo[4096]; /* of the bench's database */
    PGconn *admin;       /* to the cluster's own database */
    struct meter_cluster *cluster;
};

static inline void
bench_db_die(const char *what, const char *detail)
{
    fprintf(stderr, "bench: %s: %s\n", what, detail);
    exit(1);
}

/* Runs q, dying with the server's message if it fails. */
static inline PGresult *
bench_sql(PGconn *db, const char *q)
{
    PGresult *r = PQexec(db, q);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        bench_db_die(q, PQerrorMessage(db));
    return r;
}

/* Connects to the cluster and names database NAME (b->conninfo); creates
 * nothing. */
static inline void
bench_db_attach(struct bench_db *b, const char *name)
{
    struct meter_err e = {{0}};
    snprintf(b->name, sizeof(b->name), "%s", name);
    /* The owner's: the bench creates, migrates and drops databases (the
     * worker role, meter_db_connect's default, may not). */
    const char *base = getenv("METER_DATABASE_URL");
    b->cluster = NULL;
    if (!base || !*base) {
        if (!(b->cluster = meter_cluster_open(NULL, &e)))
            bench_db_die("database", e.msg);
        base = meter_cluster_conninfo(b->cluster);
    }
    if (!(b->admin = meter_db_connect(base, &e)))
        bench_db_die("database", e.msg);
    snprintf(b->conninfo, sizeof(b->conninfo), "%s dbname=%s", base, b->name);
}

/* Whether the attached database exists. */
static inline bool
bench_db_exists(struct bench_db *b)
{
    const char *v[] = {b->name};
    PGresult *r =
        PQexecParams(b->admin, "SELECT 1 FROM pg_database WHERE datname = $1",
                     1, NULL, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        bench_db_die("database", PQerrorMessage(b->admin));
    bool found = PQntuples(r) > 0;
    PQclear(r);
    return found;
}

/* Connects to the attached database and applies the migrations it
 * lacks; returns the connection. */
static inline PGconn *
bench_db_open(struct bench_db *b)
{
    struct meter_err e = {{0}};
    PGconn *db = meter_db_connect(b->conninfo, &e);
    struct meter_migration_set set;
    int applied, version;
    char dir[4096];
    if (!db || meter_migrations_default_dir(dir, sizeof(dir), &e) < 0 ||
        meter_migrations_load(dir, &set, &e) < 0 ||
        meter_migrate(db, &set, NULL, NULL, &applied, &version, &e) < 0)
        bench_db_die("migrate", e.msg);
    meter_migrations_release(&set);
    return db;
}

/* Creates the attached database (dropping one of that name first) and
 * migrates it; returns a connection to it. */
static inline PGconn *
bench_db_make(struct bench_db *b)
{
    struct meter_err e = {{0}};
    char q[160];
    snprintf(q, sizeof(q), "DROP DATABASE IF EXISTS %s WITH (FORCE)", b->name);
    if (meter_db_exec(b->admin, "cannot drop the database", q, 0, NULL, NULL,
                      NULL, NULL, &e) < 0)
        bench_db_die("database", e.msg);
    snprintf(q, sizeof(q), "CREATE DATABASE %s", b->name);
    if (meter_db_exec(b->admin, "cannot create the database", q, 0, NULL, NULL,
                      NULL, NULL, &e) < 0)
        bench_db_die("database", e.msg);
    return bench_db_open(b);
}

/* Creates and migrates database PREFIX_PID; returns a connection to it. */
static inline PGconn *
bench_db_create(struct bench_db *b, const char *prefix)
{
    char name[64];
    snprintf(name, sizeof(name), "%s_%d", prefix, (int)getpid());
    bench_db_attach(b, name);
    return bench_db_make(b);
}

/* Drops the database (keep: leaves it, and says where it is). */
static inline void
bench_db_drop(struct bench_db *b, bool keep)
{
    struct meter_err e = {{0}};
    char q[128];
    if (keep) {
        printf("  kept the database for profiling: %s\n", b->conninfo);
    } else {
        snprintf(q, sizeof(q), "DROP DATABASE %s WITH (FORCE)", b->name);
        if (meter_db_exec(b->admin, "cannot drop the database", q, 0, NULL,
                          NULL, NULL, NULL, &e) < 0)
            fprintf(stderr, "bench: %s\n", e.msg);
    }
    PQfinish(b->admin);
    meter_cluster_free(b->cluster);
}

#endif
