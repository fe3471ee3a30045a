/*
 * books.c - price books in the database: each stored version immutable,
 * a new version only when the text changes.
 */
#include "db_int.h"

#include <stdio.h>

enum meter_db_status
meter_db_book_add(PGconn *db, const struct pricing_book *book, const char *text,
                  int *version, struct meter_err *e)
{
    const char *values[] = {pricing_book_id(book), text};
    char what[128];
    snprintf(what, sizeof(what), "cannot store price book '%s'",
             pricing_book_id(book));
    PGresult *r;
    /* The same text as the last version is not a new version. */
    enum meter_db_status st = meter_db_exec(
        db, what,
        "WITH last AS (SELECT version, book FROM price_books"
        "  WHERE price_book_id = $1 ORDER BY version DESC LIMIT 1)"
        " INSERT INTO price_books (price_book_id, version, effective_from,"
        "  currency, book)"
        " SELECT $1, coalesce((SELECT version FROM last), 0) + 1,"
        "  ($2::jsonb ->> 'effective_from')::date, $2::jsonb ->> 'currency',"
        "  $2::jsonb"
        " WHERE NOT EXISTS (SELECT 1 FROM last WHERE book = $2::jsonb)"
        " RETURNING version",
        2, values, NULL, NULL, &r, e);
    *version = 0;
    if (st == METER_DB_ROWS && db_get_int(r, 0, 0, version, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    return st;
}
