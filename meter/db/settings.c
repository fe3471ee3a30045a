/*
 * settings.c - settings of a connection or of its transaction: the
 * statement timeout, read-only sessions, and commits that wait for no
 * disk flush.
 */
#include "db_int.h"

enum meter_db_status
meter_db_set_statement_timeout(PGconn *db, unsigned ms, struct meter_err *e)
{
    struct db_params p = {0};
    db_param_uint64(&p, ms);
    enum meter_db_status st =
        meter_db_exec(db, "cannot set the statement timeout",
                      "SELECT set_config('statement_timeout', $1, false)", p.n,
                      p.v, NULL, NULL, NULL, e);
    return st < 0 ? st : METER_DB_NONE;
}

enum meter_db_status
meter_db_set_read_only(PGconn *db, struct meter_err *e)
{
    enum meter_db_status st = meter_db_exec(
        db, "cannot make the session read-only",
        "SELECT set_config('default_transaction_read_only', 'on', false)", 0,
        NULL, NULL, NULL, NULL, e);
    return st < 0 ? st : METER_DB_NONE;
}

enum meter_db_status
meter_db_commit_async(PGconn *db, struct meter_err *e)
{
    enum meter_db_status st = meter_db_exec(
        db, "cannot set the commit mode", "SET LOCAL synchronous_commit = off",
        0, NULL, NULL, NULL, NULL, e);
    return st < 0 ? st : METER_DB_NONE;
}

enum meter_db_status
meter_db_snapshot_begin(PGconn *db, struct meter_err *e)
{
    enum meter_db_status st =
        meter_db_exec(db, "cannot begin reading the usage",
                      "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0,
                      NULL, NULL, NULL, NULL, e);
    return st < 0 ? st : METER_DB_NONE;
}

void
meter_db_snapshot_end(PGconn *db)
{
    PGresult *r;
    while ((r = PQgetResult(db)))
        PQclear(r);
    if (PQtransactionStatus(db) != PQTRANS_IDLE)
        PQclear(PQexec(db, "ROLLBACK"));
}
