/*
 * testutil.c - see testutil.h.
 */
#include "testutil.h"

int test_failures;

int
test_result(void)
{
    if (test_failures) {
        fprintf(stderr, "%d check(s) failed\n", test_failures);
        return 1;
    }
    return 0;
}
