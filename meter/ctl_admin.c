/*
 * ctl_admin.c - `meterctl books add` and `meterctl accounts add`: price
 * books (validated, stored as a new immutable version) and accounts on
 * a book from a date.
 */
#include "ctl_int.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static int
books_add(PGconn *db, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "meterctl: cannot open '%s': %s\n", path,
                strerror(errno));
        return CTL_FAILED;
    }
    char *text = malloc(1 << 20);
    size_t len = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    bool bad = !text || ferror(f) || !feof(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "meterctl: cannot read '%s' (at most 1 MiB)\n", path);
        free(text);
        return CTL_FAILED;
    }
    text[len] = '\0';
    struct pricing_err e = {{0}};
    struct pricing_book *b = pricing_book_parse(text, len, path, &e);
    if (!b) {
        fprintf(stderr, "meterctl: %s\n", e.msg);
        free(text);
        return CTL_FAILED;
    }
    /* The same text as the last version is not a new version. */
    const char *values[] = {pricing_book_id(b), text};
    PGresult *r = PQexecParams(
        db,
        "WITH last AS (SELECT version, book FROM price_books"
        "  WHERE price_book_id = $1 ORDER BY version DESC LIMIT 1)"
        " INSERT INTO price_books (price_book_id, version, effective_from,"
        "  currency, book)"
        " SELECT $1, coalesce((SELECT version FROM last), 0) + 1,"
        "  ($2::jsonb ->> 'effective_from')::date, $2::jsonb ->> 'currency',"
        "  $2::jsonb"
        " WHERE NOT EXISTS (SELECT 1 FROM last WHERE book = $2::jsonb)"
        " RETURNING version",
        2, NULL, values, NULL, NULL, 0);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        fprintf(stderr, "meterctl: cannot store price book '%s': %s",
                pricing_book_id(b), PQerrorMessage(db));
        rc = CTL_FAILED;
    } else if (PQntuples(r) == 0) {
        printf("price book %s: unchanged\n", pricing_book_id(b));
    } else {
        printf("price book %s: version %s stored\n", pricing_book_id(b),
               PQgetvalue(r, 0, 0));
    }
    PQclear(r);
    pricing_book_free(b);
    free(text);
    return rc;
}

static int
accounts_add(PGconn *db, int argc, char **argv)
{
    static const struct option opts[] = {
        {"name", required_argument, NULL, 'n'},
        {"book", required_argument, NULL, 'b'},
        {"from", required_argument, NULL, 'f'},
        {NULL, 0, NULL, 0},
    };
    const char *name = NULL, *book = NULL, *from = NULL;
    int opt;
    optind = 0; /* 0: glibc re-initializes, permuting again */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'n':
            name = optarg;
            break;
        case 'b':
            book = optarg;
            break;
        case 'f':
            from = optarg;
            break;
        default:
            return ctl_usage_error("accounts add: unknown or incomplete "
                                   "option '%s'",
                                   argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return ctl_usage_error("accounts add needs one account id");
    const char *id = argv[optind];
    if (!pricing_id_valid(id))
        return ctl_usage_error("accounts add: '%s' is not 1-64 of "
                               "A-Za-z0-9._:-",
                               id);
    if ((book == NULL) != (from == NULL))
        return ctl_usage_error("accounts add: --book and --from go together");
    const char *values[] = {id, name, book, from};
    PGresult *r = PQexecParams(
        db,
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
        4, NULL, values, NULL, NULL, 0);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "meterctl: cannot add account '%s': %s", id,
                PQerrorMessage(db));
        rc = CTL_FAILED;
    } else {
        printf("account %s%s%s%s%s\n", id, book ? " on price book " : "",
               book ? book : "", book ? " from " : "", from ? from : "");
    }
    PQclear(r);
    return rc;
}

int
ctl_admin(const char *conninfo, int argc, char **argv)
{
    bool books = strcmp(argv[0], "books") == 0;
    if (argc < 2 || strcmp(argv[1], "add") != 0)
        return ctl_usage_error("%s needs the subcommand add", argv[0]);
    if (books && argc != 3)
        return ctl_usage_error("books add needs one price book file");
    struct meter_err e = {{0}};
    PGconn *db = meter_db_connect(conninfo, &e);
    if (!db) {
        fprintf(stderr, "meterctl: %s\n", e.msg);
        return CTL_FAILED;
    }
    int rc =
        books ? books_add(db, argv[2]) : accounts_add(db, argc - 1, argv + 1);
    PQfinish(db);
    return rc;
}
