/*
 * partitions.c - the monthly partitions of usage_blocks, created ahead
 * of need (0002_usage.sql's usage_blocks_partition does the work under
 * its own advisory lock, so concurrent callers are safe).
 */
#include "meter_db.h"

#include <stdio.h>

int
meter_db_prepare_partitions(PGconn *db, int months, struct meter_err *e)
{
    char last[16];
    snprintf(last, sizeof(last), "%d", months - 1);
    const char *values[] = {last};
    if (meter_db_exec(db,
                      "cannot prepare the usage tables (run 'meterctl "
                      "migrate'?)",
                      "SELECT usage_blocks_partition("
                      "(current_date + make_interval(months => m))::date)"
                      " FROM generate_series(0, $1::int) m",
                      1, values, NULL, NULL, NULL, e) < 0)
        return -1;
    return 0;
}
