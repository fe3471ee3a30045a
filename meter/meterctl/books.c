/*
 * books.c - `meterctl books add FILE`: a price book, validated, stored
 * as its next immutable version.
 */
#include "ctl_int.h"

#include <stdlib.h>
#include <string.h>

#include "pricing.h"

int
ctl_books(struct ctl *ctl, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "add") != 0)
        return ctl_usage_error("books needs the subcommand add");
    if (argc != 3)
        return ctl_usage_error("books add needs one price book file");
    const char *path = argv[2];
    struct meter_err e = {{0}};
    PGconn *db = NULL;
    char *text = NULL;
    int version, rc = CTL_FAILED;
    struct pricing_book *book = ctl_read_book(path, &text);
    if (!book || !(db = ctl_connect(ctl)))
        goto out;
    switch (meter_db_book_add(db, book, text, &version, &e)) {
    case METER_DB_ROWS:
        printf("price book %s: version %d stored\n", pricing_book_id(book),
               version);
        break;
    case METER_DB_NONE:
        printf("price book %s: unchanged\n", pricing_book_id(book));
        break;
    default:
        ctl_failed(&e);
        goto out;
    }
    rc = 0;
out:
    PQfinish(db);
    pricing_book_free(book);
    free(text);
    return rc;
}
