/*
 * testdb.h - a fresh database per test, in the test cluster.
 */
#ifndef TESTDB_H
#define TESTDB_H

#include <libpq-fe.h>

#include "billing.h"
#include "meter_db.h"
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
/* Runs sql (no result wanted): 0, or -1 and a failed check, saying why. */
int testdb_sql(PGconn *db, const char *sql);
/* The one integer that sql returns; -1 and a failed check if it fails. */
long testdb_count(PGconn *db, const char *sql);
/* Closes db and drops the database. */
void testdb_drop(struct testdb *t, PGconn *db);

/* ---- helpers of the invoice tests --------------------------------------
 * Each counts a failed check (saying why) where the step fails. */

/* Stores the price book text and returns it parsed (pricing_book_free),
 * or NULL. */
struct pricing_book *testdb_book_add(PGconn *db, const char *text);
/* Adds account id, on book (NULL: none) from the date from. */
void testdb_account_add(PGconn *db, const char *id, const char *book,
                        const char *from);
/* Stores n consecutive seconds of sandbox sb of acct from ts, each with
 * the values of v (v->ts aside), ingested as of 2026-09: all accepted. */
void testdb_store(PGconn *db, struct meter_registry *reg, const char *acct,
                  const char *sb, const struct pricing_second *v, int64_t ts,
                  size_t n);
/* Runs the invoice of acct's (y, m), final or a draft, and returns the
 * document (report_invoice_release); zeroed if the run fails. */
struct report_invoice testdb_invoice_run(PGconn *db, const char *acct, int y,
                                         int m, bool final);
/* d with 6 decimals, in buf. */
const char *testdb_dec(struct pricing_dec d, char buf[48]);

#endif
