/*
 * partitions.c - the monthly partitions of usage_blocks, created ahead
 * of need (0002_usage.sql's usage_blocks_partition does the work under
 * its own advisory lock, so concurrent callers are safe).
 */
#include "db_int.h"

int
meter_db_prepare_partitions(PGconn *db, int months, struct meter_err *e)
{
    struct db_params p = {0};
    db_param_int32(&p, months - 1);
    if (meter_db_exec(db,
                      "cannot prepare the usage tables (run 'meterctl "
                      "migrate'?)",
                      "SELECT usage_blocks_partition("
                      "(current_date + make_interval(months => m))::date)"
                      " FROM generate_series(0, $1::int) m",
                      p.n, p.v, NULL, NULL, NULL, e) < 0)
        return -1;
    return 0;
}
