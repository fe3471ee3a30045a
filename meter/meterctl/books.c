/*
 * books.c - `meterctl books add FILE`: a price book, validated, stored
 * as its next immutable version; `books list`: the versions stored.
 */
#include "ctl_int.h"

#include <stdlib.h>
#include <string.h>

#include "pricing.h"

/* `books list`: every stored version, a line each. */
static int
books_list(struct ctl *ctl, int argc)
{
    if (argc != 2)
        return ctl_usage_error("books list takes no argument");
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    json_t *list = NULL;
    int rc = meter_db_books_list(db, &list, &e) < 0 ? ctl_failed(&e) : 0;
    PQfinish(db);
    if (!rc)
        printf("%-28s %7s  %-10s  %-8s  %s\n", "BOOK", "VERSION", "FROM",
               "CURRENCY", "NAME");
    size_t i;
    json_t *b;
    json_array_foreach(list, i, b)
    {
        const char *name = json_string_value(json_object_get(b, "name"));
        printf("%-28s %7" JSON_INTEGER_FORMAT "  %-10s  %-8s  %s\n",
               json_string_value(json_object_get(b, "id")),
               json_integer_value(json_object_get(b, "version")),
               json_string_value(json_object_get(b, "effective_from")),
               json_string_value(json_object_get(b, "currency")),
               name ? name : "");
    }
    json_decref(list);
    return rc;
}

int
ctl_books(struct ctl *ctl, int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "list") == 0)
        return books_list(ctl, argc);
    if (argc < 2 || strcmp(argv[1], "add") != 0)
        return ctl_usage_error("books needs the subcommand add or list");
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
