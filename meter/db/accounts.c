/*
 * accounts.c - accounts, and which price book each is on from which
 * date (account_price_books, keyed by account first).
 */
#include "meter_db.h"

#include <stdio.h>

enum meter_db_status
meter_db_account_add(PGconn *db, const char *id, const char *name,
                     const char *book, const char *from, struct meter_err *e)
{
    const char *values[] = {id, name, book, from};
    char what[128];
    snprintf(what, sizeof(what), "cannot add account '%s'", id);
    /* With a book never stored, nothing is written (the account
     * neither): the statement returns no row, which is told by name
     * rather than as the NOT NULL of a version there is none of. */
    enum meter_db_status st = meter_db_exec(
        db, what,
        "WITH v AS (SELECT max(version) AS version FROM price_books"
        "  WHERE price_book_id = $3::text),"
        " a AS (INSERT INTO accounts (account_id, name)"
        "  SELECT $1, $2 FROM v"
        "  WHERE $3::text IS NULL OR v.version IS NOT NULL"
        "  ON CONFLICT (account_id) DO UPDATE"
        "  SET name = coalesce(EXCLUDED.name, accounts.name)"
        "  RETURNING account_id),"
        " p AS (INSERT INTO account_price_books (account_id, valid_from,"
        "  price_book_id, version)"
        "  SELECT a.account_id, $4::date, $3::text, v.version"
        "  FROM a, v WHERE $3::text IS NOT NULL"
        "  ON CONFLICT (account_id, valid_from) DO UPDATE"
        "  SET price_book_id = EXCLUDED.price_book_id,"
        "   version = EXCLUDED.version)"
        " SELECT 1 FROM a",
        4, values, NULL, NULL, NULL, e);
    if (st == METER_DB_NONE && book) {
        meter_fail(e, "%s: no price book '%s' (meterctl books add FILE)", what,
                   book);
        return METER_DB_HARD;
    }
    return st;
}
