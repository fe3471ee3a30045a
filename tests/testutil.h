/*
 * testutil.h - the small harness of the C tests: checks that count
 * failures and say where, and a fresh database per test.
 */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

extern int test_failures;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,   \
                    #cond);                                                    \
            test_failures++;                                                   \
        }                                                                      \
    } while (0)

#define CHECK_STR(got, want)                                                   \
    do {                                                                       \
        const char *got_ = (got), *want_ = (want);                             \
        if (!got_ || strcmp(got_, want_) != 0) {                               \
            fprintf(stderr, "%s:%d: got '%s', want '%s'\n", __FILE__,          \
                    __LINE__, got_ ? got_ : "(null)", want_);                  \
            test_failures++;                                                   \
        }                                                                      \
    } while (0)

/* Exit status for the end of main: 0 if every check held. */
int test_result(void);

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
/* Closes db and drops the database. */
void testdb_drop(struct testdb *t, PGconn *db);

#endif
