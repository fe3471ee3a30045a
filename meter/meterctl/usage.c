/*
 * usage.c - `meterctl usage compact --period P [--account ID]`: closing a
 * month's storage, account by account (meter_db_usage_compact), then a
 * VACUUM of its partition, as the tables' owner (ctl_connect_owner).
 * Online; run once a month has ended, before its invoice run
 * (docs/invoicing.md). And `meterctl usage quarantine
 * --key ID --from T --to T --reason TEXT`: the usage a (leaked) key
 * stored set aside (docs/reliability.md). And `meterctl usage pack
 * [--after S]`: what meterd does in the background, at once: each hour
 * that ended S seconds ago packed (meter_db_usage_pack).
 */
#include "ctl_int.h"

#include <getopt.h>
#include <inttypes.h>
#include <string.h>

static int
usage_compact(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"period", required_argument, NULL, 'p'},
        {"account", required_argument, NULL, 'a'},
        {NULL, 0, NULL, 0},
    };
    const char *period = NULL, *account = NULL;
    int year = 0, month = 0, opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'p':
            period = optarg;
            if (meter_period_parse(optarg, &year, &month) < 0)
                return ctl_usage_error("usage compact: --period '%s' is not "
                                       "YYYY-MM",
                                       optarg);
            break;
        case 'a':
            account = optarg;
            if (ctl_check_account("usage compact", "--account", optarg))
                return CTL_USAGE;
            break;
        default:
            return ctl_bad_option("usage compact", argv);
        }
    }
    if (optind < argc)
        return ctl_usage_error("usage compact: unexpected argument '%s'",
                               argv[optind]);
    if (!period)
        return ctl_usage_error("usage compact needs --period YYYY-MM");
    /* The owner: only a table's owner may VACUUM it. */
    PGconn *db = ctl_connect_owner(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    struct meter_strtab accounts = {0};
    int rc = CTL_FAILED;
    if (account ? meter_strtab_intern(&accounts, account, NULL) < 0
                : meter_db_usage_accounts(db, year, month, &accounts, &e) < 0) {
        ctl_failed(&e);
        goto out;
    }
    double t0 = ctl_now();
    uint64_t blocks = 0;
    for (size_t i = 0; i < accounts.n; i++) {
        uint64_t n;
        if (meter_db_usage_compact(db, accounts.str[i], year, month, &n, &e) <
            0) {
            fprintf(stderr, "meterctl: account %s: %s\n", accounts.str[i],
                    e.msg);
            goto out;
        }
        blocks += n;
    }
    if (meter_db_usage_vacuum(db, year, month, &e) < 0) {
        ctl_failed(&e);
        goto out;
    }
    printf("usage compact %04d-%02d: %zu accounts, %" PRIu64
           " blocks rewritten in %.1f s\n",
           year, month, accounts.n, blocks, ctl_now() - t0);
    rc = 0;
out:
    meter_strtab_release(&accounts);
    PQfinish(db);
    return rc;
}

static int
usage_pack(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"after", required_argument, NULL, 'a'},
        {NULL, 0, NULL, 0},
    };
    uint64_t after = 600;
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'a':
            if (meter_parse_uint(optarg, 0, 2678400, &after) < 0)
                return ctl_usage_error("usage pack: --after '%s' is not a "
                                       "number of seconds from 0 to 2678400",
                                       optarg);
            break;
        default:
            return ctl_bad_option("usage pack", argv);
        }
    }
    if (optind < argc)
        return ctl_usage_error("usage pack: unexpected argument '%s'",
                               argv[optind]);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    double t0 = ctl_now();
    struct meter_pack_result res;
    int rc = CTL_FAILED;
    if (meter_db_usage_pack_due(db, (int64_t)after, &res, &e) < 0) {
        ctl_failed(&e);
    } else if (res.busy) {
        fprintf(stderr, "meterctl: usage pack: another merge or pack, or a "
                        "quarantine, is running; try again\n");
    } else {
        printf("usage pack: %" PRIu64 " blocks into %" PRIu64
               " packs in %.1f s\n",
               res.blocks, res.packs, ctl_now() - t0);
        rc = 0;
    }
    PQfinish(db);
    return rc;
}

static int
usage_quarantine(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"key", required_argument, NULL, 'k'},
        {"from", required_argument, NULL, 'f'},
        {"to", required_argument, NULL, 't'},
        {"reason", required_argument, NULL, 'r'},
        {NULL, 0, NULL, 0},
    };
    const char *reason = NULL;
    uint64_t key = 0;
    int64_t from = INT64_MIN, to = INT64_MIN;
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 'k':
            if (meter_parse_uint(optarg, 1, INT64_MAX, &key) < 0)
                return ctl_usage_error("usage quarantine: --key '%s' is not "
                                       "a key number (meterctl keys list)",
                                       optarg);
            break;
        case 'f':
            if (ctl_parse_time("usage quarantine", "--from", optarg, &from))
                return CTL_USAGE;
            break;
        case 't':
            if (ctl_parse_time("usage quarantine", "--to", optarg, &to))
                return CTL_USAGE;
            break;
        case 'r':
            reason = optarg;
            if (!*reason || strlen(reason) > 500)
                return ctl_usage_error("usage quarantine: --reason must have "
                                       "1 to 500 characters");
            break;
        default:
            return ctl_bad_option("usage quarantine", argv);
        }
    }
    if (optind < argc)
        return ctl_usage_error("usage quarantine: unexpected argument '%s'",
                               argv[optind]);
    if (!key || from == INT64_MIN || to == INT64_MIN || !reason)
        return ctl_usage_error("usage quarantine needs --key ID --from T --to "
                               "T --reason TEXT");
    if (to <= from)
        return ctl_usage_error("usage quarantine: --to '%" PRId64
                               "' is not after --from '%" PRId64 "'",
                               to, from);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    struct meter_quarantine q;
    int rc = CTL_FAILED;
    if (meter_db_usage_quarantine(db, (int64_t)key, from, to, reason, &q, &e) <
        0) {
        ctl_failed(&e);
        goto out;
    }
    printf("quarantine %" PRId64 ": key %" PRIu64 ", %" PRId64
           " blocks, %" PRId64 " seconds set aside\n",
           q.id, key, q.blocks, q.seconds);
    rc = 0;
out:
    PQfinish(db);
    return rc;
}

int
ctl_usage(struct ctl *ctl, int argc, char **argv)
{
    if (argc < 2)
        return ctl_usage_error(
            "usage needs a subcommand: compact, pack, quarantine");
    if (strcmp(argv[1], "compact") == 0)
        return usage_compact(ctl, argc - 1, argv + 1);
    if (strcmp(argv[1], "pack") == 0)
        return usage_pack(ctl, argc - 1, argv + 1);
    if (strcmp(argv[1], "quarantine") == 0)
        return usage_quarantine(ctl, argc - 1, argv + 1);
    return ctl_usage_error("unknown usage subcommand '%s'", argv[1]);
}
