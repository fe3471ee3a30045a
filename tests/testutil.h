/*
 * testutil.h - the small harness of the C tests: checks that count
 * failures and say where. No database (testdb.h has that), so that
 * pure tests link nothing but what they test.
 */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <stdio.h>
#include <string.h>

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

#endif
