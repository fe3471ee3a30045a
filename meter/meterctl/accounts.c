/*
 * accounts.c - `meterctl accounts add ID [--name NAME] [--book BOOK
 * --from YYYY-MM-DD]`: an account, on the latest version of a book from
 * a date; `accounts end ID --from DATE`: on none from a date; `accounts
 * list` and `accounts show ID`.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* `accounts list [--after ID] [--limit N]`: a page of accounts, a line
 * each, and the command for the next page. */
static int
accounts_list(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"after", required_argument, NULL, 'a'},
        {"limit", required_argument, NULL, 'l'},
        {NULL, 0, NULL, 0},
    };
    const char *after = NULL;
    uint64_t limit = 100;
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'a':
            if (ctl_check_account("accounts list", "--after ", optarg))
                return CTL_USAGE;
            after = optarg;
            break;
        case 'l':
            if (meter_parse_uint(optarg, 1, 1000, &limit) < 0)
                return ctl_usage_error("accounts list: --limit '%s' is not "
                                       "a number from 1 to 1000",
                                       optarg);
            break;
        default:
            return ctl_bad_option("accounts list", argv);
        }
    }
    if (optind != argc)
        return ctl_usage_error("accounts list: unexpected argument '%s'",
                               argv[optind]);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    json_t *page = NULL;
    int rc = meter_db_admin_accounts_list(db, after, (int)limit, &page, &e) < 0
                 ? ctl_failed(&e)
                 : 0;
    PQfinish(db);
    if (!rc)
        printf("%-24s %-24s %-20s %s\n", "ACCOUNT", "NAME", "EXTERNAL ID",
               "PRICE BOOK NOW");
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(page, "items"), i, a)
    {
        const char *name = json_string_value(json_object_get(a, "name")),
                   *ext = json_string_value(json_object_get(a, "external_id"));
        json_t *books = json_object_get(a, "price_books");
        json_t *last = json_array_get(books, json_array_size(books) - 1);
        const char *book =
            json_string_value(json_object_get(last, "price_book_id"));
        printf("%-24s %-24s %-20s %s\n",
               json_string_value(json_object_get(a, "id")), name ? name : "-",
               ext ? ext : "-",
               book   ? book
               : last ? "(none: ended)"
                      : "(none)");
    }
    const char *next = json_string_value(json_object_get(page, "next_after"));
    if (next)
        printf("more: meterctl accounts list --after %s\n", next);
    json_decref(page);
    return rc;
}

/* `accounts show ID`: the account as the management API answers it. */
static int
accounts_show(struct ctl *ctl, int argc, char **argv)
{
    if (argc != 3)
        return ctl_usage_error("accounts show needs one account id");
    if (ctl_check_account("accounts show", "", argv[2]))
        return CTL_USAGE;
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    json_t *a = NULL;
    enum meter_db_status st = meter_db_admin_account_get(db, argv[2], &a, &e);
    PQfinish(db);
    if (st == METER_DB_NONE)
        meter_fail(&e, "no account '%s'", argv[2]);
    if (st <= 0)
        return ctl_failed(&e);
    char *text = json_dumps(a, JSON_INDENT(2));
    json_decref(a);
    if (!text)
        return CTL_FAILED;
    puts(text);
    free(text);
    return 0;
}

/* `accounts end ID --from YYYY-MM-DD`: on no book from that day. */
static int
accounts_end(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"from", required_argument, NULL, 'f'},
        {NULL, 0, NULL, 0},
    };
    const char *from = NULL;
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt != 'f')
            return ctl_bad_option("accounts end", argv);
        from = optarg;
    }
    if (optind != argc - 1)
        return ctl_usage_error("accounts end needs one account id");
    if (!from)
        return ctl_usage_error("accounts end needs --from YYYY-MM-DD");
    const char *id = argv[optind];
    if (ctl_check_account("accounts end", "", id))
        return CTL_USAGE;
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    enum meter_db_status st = meter_db_account_end(db, id, from, &e);
    PQfinish(db);
    if (st == METER_DB_NONE)
        meter_fail(&e, "no account '%s'", id);
    if (st <= 0)
        return ctl_failed(&e);
    printf("account %s on no price book from %s\n", id, from);
    return 0;
}

int
ctl_accounts(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"name", required_argument, NULL, 'n'},
        {"book", required_argument, NULL, 'b'},
        {"from", required_argument, NULL, 'f'},
        {NULL, 0, NULL, 0},
    };
    if (argc >= 2 && strcmp(argv[1], "list") == 0)
        return accounts_list(ctl, argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "show") == 0)
        return accounts_show(ctl, argc, argv);
    if (argc >= 2 && strcmp(argv[1], "end") == 0)
        return accounts_end(ctl, argc - 1, argv + 1);
    if (argc < 2 || strcmp(argv[1], "add") != 0)
        return ctl_usage_error(
            "accounts needs the subcommand add, list, show or end");
    argc--;
    argv++;
    const char *name = NULL, *book = NULL, *from = NULL;
    int opt;
    ctl_getopt_reset();
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
            return ctl_bad_option("accounts add", argv);
        }
    }
    if (optind != argc - 1)
        return ctl_usage_error("accounts add needs one account id");
    const char *id = argv[optind];
    if (ctl_check_account("accounts add", "", id))
        return CTL_USAGE;
    if ((book == NULL) != (from == NULL))
        return ctl_usage_error("accounts add: --book and --from go together");
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    int rc = 0;
    if (meter_db_account_add(db, id, name, book, from, &e) < 0)
        rc = ctl_failed(&e);
    else
        printf("account %s%s%s%s%s\n", id, book ? " on price book " : "",
               book ? book : "", book ? " from " : "", from ? from : "");
    PQfinish(db);
    return rc;
}
