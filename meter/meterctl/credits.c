/*
 * credits.c - `meterctl credits`: credit grants (pricing rules section
 * 14). `grant` gives an account money to spend over its next invoices;
 * `list` shows every grant an account has received, its books' and its
 * operator's, with the balance its final invoices left.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>

static int
credits_grant(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"expires-after", required_argument, NULL, 'x'},
        {"id", required_argument, NULL, 'i'},
        {NULL, 0, NULL, 0},
    };
    const char *id = NULL;
    uint64_t expires = 0;
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'x':
            if (meter_parse_uint(optarg, 1, PRICING_GRANT_PERIODS_MAX,
                                 &expires) < 0)
                return ctl_usage_error("credits grant: --expires-after '%s' "
                                       "is not a number of periods from 1 "
                                       "to %d",
                                       optarg, PRICING_GRANT_PERIODS_MAX);
            break;
        case 'i':
            id = optarg;
            break;
        default:
            return ctl_bad_option("credits grant", argv);
        }
    }
    if (argc - optind != 2)
        return ctl_usage_error("credits grant needs ACCOUNT AMOUNT "
                               "[--expires-after N] [--id ID]");
    const char *account = argv[optind], *amount = argv[optind + 1];
    if (ctl_check_account("credits grant", "ACCOUNT", account))
        return CTL_USAGE;
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    char given[PRICING_ID_MAX + 1];
    int rc = CTL_FAILED;
    if (meter_db_grant_add(db, account, amount, (int)expires, id,
                           (int64_t)time(NULL), given, &e) < 0) {
        ctl_failed(&e);
    } else {
        printf("grant %s of %s to account %s\n", given, amount, account);
        rc = 0;
    }
    PQfinish(db);
    return rc;
}

static void
list_row(const struct meter_grant *g, void *arg)
{
    (void)arg;
    const struct pricing_grant *x = &g->grant;
    char amount[48], balance[48], last[16] = "never";
    pricing_dec_format(x->amount, 6, amount, sizeof(amount));
    pricing_dec_format(x->balance, 6, balance, sizeof(balance));
    if (x->expires_after) {
        int p = x->received + x->expires_after - 1;
        snprintf(last, sizeof(last), "%04d-%02d", p / 12, p % 12 + 1);
    }
    printf("%-20s %-30s %-8s %14s %14s %-3s %04d-%02d  %-7s\n", g->account_id,
           x->id, g->from_book ? "book" : "operator", amount, balance,
           x->currency, x->received / 12, x->received % 12 + 1, last);
}

static int
credits_list(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"account", required_argument, NULL, 'a'},
        {NULL, 0, NULL, 0},
    };
    const char *account = NULL;
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt != 'a')
            return ctl_bad_option("credits list", argv);
        account = optarg;
        if (ctl_check_account("credits list", "--account", optarg))
            return CTL_USAGE;
    }
    if (optind < argc)
        return ctl_usage_error("credits list: unexpected argument '%s'",
                               argv[optind]);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    printf("%-20s %-30s %-8s %14s %14s %-3s %-8s %-7s\n", "account", "grant",
           "source", "amount", "balance", "cur", "received", "last");
    enum meter_db_status st =
        meter_db_grants_list(db, account, list_row, NULL, &e);
    int rc = 0;
    if (st < 0)
        rc = ctl_failed(&e);
    else if (st == METER_DB_NONE && account) {
        meter_fail(&e, "no account '%s'", account);
        rc = ctl_failed(&e);
    }
    PQfinish(db);
    return rc;
}

int
ctl_credits(struct ctl *ctl, int argc, char **argv)
{
    if (argc < 2)
        return ctl_usage_error("credits needs a subcommand: grant, list");
    if (strcmp(argv[1], "grant") == 0)
        return credits_grant(ctl, argc - 1, argv + 1);
    if (strcmp(argv[1], "list") == 0)
        return credits_list(ctl, argc - 1, argv + 1);
    return ctl_usage_error("unknown credits subcommand '%s'", argv[1]);
}
