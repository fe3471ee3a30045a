/*
 * bench_db.h - a database of a benchmark's own: created, migrated, and
 * dropped at the end (unless kept), in the cluster of
 * $METER_DATABASE_URL, else the embedded one of the current directory.
 */
#ifndef BENCH_DB_H
#define BENCH_DB_H

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

/* Creates and migrates database PREFIX_PID; returns a connection to it. */
static inline PGconn *
bench_db_create(struct bench_db *b, const char *prefix)
{
    struct meter_err e = {{0}};
    char q[128];
    if (!(b->admin = meter_db_connect(NULL, &e)))
        bench_db_die("database", e.msg);
    snprintf(b->name, sizeof(b->name), "%s_%d", prefix, (int)getpid());
    snprintf(q, sizeof(q), "CREATE DATABASE %s", b->name);
    if (meter_db_exec(b->admin, "cannot create the database", q, 0, NULL, NULL,
                      NULL, NULL, &e) < 0)
        bench_db_die("database", e.msg);
    const char *base = getenv("METER_DATABASE_URL");
    b->cluster = NULL;
    if (!base || !*base) {
        if (!(b->cluster = meter_cluster_open(NULL, &e)))
            bench_db_die("database", e.msg);
        base = meter_cluster_conninfo(b->cluster);
    }
    snprintf(b->conninfo, sizeof(b->conninfo), "%s dbname=%s", base, b->name);
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
