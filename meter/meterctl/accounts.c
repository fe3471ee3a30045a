/*
 * accounts.c - `meterctl accounts add ID [--name NAME] [--book BOOK
 * --from YYYY-MM-DD]`: an account, on the latest version of a book from
 * a date.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <string.h>

int
ctl_accounts(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"name", required_argument, NULL, 'n'},
        {"book", required_argument, NULL, 'b'},
        {"from", required_argument, NULL, 'f'},
        {NULL, 0, NULL, 0},
    };
    if (argc < 2 || strcmp(argv[1], "add") != 0)
        return ctl_usage_error("accounts needs the subcommand add");
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
