/*
 * testdb.h - a fresh database per test, in the test cluster.
 */
#ifndef TESTDB_H
#define TESTDB_H

#include <libpq-fe.h>

#include "testutil.h"

struct testdb {
    char name[64];
    char conninfo[4096]; /* of the fresh database */
    char admin[4096];    /* of the maintenance database */
};

/* Creates a fresh, empty database in the test cluster
 * ($METER_TEST_DATABASE_URL, else the embedded cluster of the current
 * directory, which ctest's fixture starts). If the server cannot be
 * reached it exits: with failure under CI=true, else with 77 (skipped). */
PGconn *testdb_create(struct testdb *t);
/* testdb_create, then every migration of the project applied; exits
 * with failure if they cannot be. */
PGconn *testdb_create_migrated(struct testdb *t);
/* The one integer that sql returns; -1 and a failed check if it fails. */
long testdb_count(PGconn *db, const char *sql);
/* Closes db and drops the database. */
void testdb_drop(struct testdb *t, PGconn *db);

#endif
