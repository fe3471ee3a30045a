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
    return meter_db_exec(
        db, what,
        "WITH a AS (INSERT INTO accounts (account_id, name) VALUES ($1, $2)"
        "  ON CONFLICT (account_id) DO UPDATE"
        "  SET name = coalesce(EXCLUDED.name, accounts.name)"
        "  RETURNING account_id)"
        " INSERT INTO account_price_books (account_id, valid_from,"
        "  price_book_id, version)"
        " SELECT a.account_id, $4::date, $3::text, (SELECT max(version)"
        "  FROM price_books WHERE price_book_id = $3::text)"
        " FROM a WHERE $3::text IS NOT NULL"
        " ON CONFLICT (account_id, valid_from) DO UPDATE"
        " SET price_book_id = EXCLUDED.price_book_id,"
        "  version = EXCLUDED.version",
        4, values, NULL, NULL, NULL, e);
}
