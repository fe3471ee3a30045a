/*
 * main.c - meterctl, administration and batch work: the global options
 * and the table of commands (one file each).
 *
 * Exit status: 0 done, 1 failed (the message says why), 2 usage error.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <string.h>

/* In parts: a string literal is at most 4,095 characters in C99. */
static const char *const usage_text[] = {
    "usage: meterctl [--db CONNINFO] COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  db start|stop|status|url   manage the embedded database of this\n"
    "                             directory (var/pg/); other commands use\n"
    "                             it only while it runs\n"
    "  db url --worker            the conninfo of its worker role, which\n"
    "                             meterd and the daily commands use\n"
    "  db destroy --yes           stop it and delete its data\n"
    "  migrate [--status] [--migrations DIR]\n"
    "                             apply pending schema migrations, or list\n"
    "                             applied and pending ones\n"
    "  rate --price-book FILE --usage FILE [--usage FILE ...]\n"
    "       [--period YYYY-MM] [--format json|table] [--memory-limit MIB]\n"
    "       [--no-grants]         rate files of samples (JSON array or\n"
    "                             NDJSON) with no database; the book's\n"
    "                             grants carry over its periods\n"
    "  rate --price-book FILE --from T --to T [--account ID] [...]\n"
    "                             rate the stored samples of [from, to)\n"
    "  books add FILE             store a price book (validated) as its\n"
    "                             next version\n"
    "  books list                 the stored versions of every book\n"
    "  accounts add ID [--name NAME] [--book BOOK --from YYYY-MM-DD]\n"
    "                             add an account, on the latest version\n"
    "                             of a book from a date\n"
    "  accounts end ID --from YYYY-MM-DD\n"
    "                             the account on no book from that day\n"
    "  accounts list [--after ID] [--limit N]\n"
    "                             a page of accounts and their book now\n"
    "  accounts show ID           an account, its metadata and books\n"
    "  keys create --role host|account|finance|admin [--account ID]\n"
    "       --name NAME           create an API key; prints its token once\n"
    "       [--accounts ID,ID...] a host key that may write only these\n"
    "                             accounts' usage\n"
    "  keys list                  list keys (never their tokens)\n"
    "  keys revoke ID             revoke a key\n"
    "  export [--account ID] --from T --to T\n"
    "                             write stored samples of [from, to) as\n"
    "                             NDJSON (T: Unix seconds or RFC 3339)\n",
    "  gen [--sandboxes N] [--accounts N] [--seconds N] [--start T]\n"
    "      [--seed N] [--noisy] [--output FILE]\n"
    "                             write a generated fleet as NDJSON\n"
    "                             (--noisy: memory in use and CPU moving\n"
    "                             every second, egress in bursts)\n"
    "  gen --push URL --token T [--batch-seconds N] [--rate N] [--follow]\n"
    "      [--retry-for S] [--cacert FILE] [--connections N]\n"
    "                             push it to meterd in columnar batches,\n"
    "                             over N connections (default 4),\n"
    "                             each sent again until acknowledged (a\n"
    "                             200): on a connection refused or cut\n"
    "                             off, or a 503 or 429, waiting 0.1-2 s\n"
    "                             or the Retry-After, for at most S\n"
    "                             seconds a batch (default 60); silent\n"
    "                             60 s counts as cut off; --cacert FILE:\n"
    "                             the CA of an https URL (default: the\n"
    "                             system's), one that does not verify\n"
    "                             ends the push at once\n"
    "  invoice run --period YYYY-MM [--account ID] [--finalize] [--jobs N]\n"
    "       [--batch N] [--seller NAME]\n"
    "                             rate stored usage into the period's\n"
    "                             drafts (finalize: number them, once the\n"
    "                             period has ended), N accounts to a\n"
    "                             transaction (default 500)\n"
    "  invoice list [--period P] [--account ID] [--status draft|final|void]\n"
    "       [--after ID] [--limit N]\n"
    "                             list invoices and credit notes\n"
    "  invoice show NUMBER|DRAFT-ID [--format json|csv|html|pdf]\n"
    "       [--output FILE]       one document\n"
    "  invoice void NUMBER --reason TEXT\n"
    "                             void a final invoice by a credit note\n"
    "  invoice preview --period P --account ID --price-book FILE\n"
    "                             what-if: the invoice under another book\n"
    "                             and the difference, nothing stored\n",
    "  usage compact --period YYYY-MM [--account ID]\n"
    "                             close a month's storage: each account's\n"
    "                             blocks rewritten together (online), so\n"
    "                             its invoice run reads them faster\n"
    "  usage pack [--after S]    pack each sandbox's blocks of every hour\n"
    "                             that ended S seconds ago (default 600)\n"
    "                             into one row, as meterd does\n"
    "  credits grant ACCOUNT AMOUNT [--expires-after N] [--id ID]\n"
    "                             give an account credit for its next\n"
    "                             invoices, in its book's currency\n"
    "  credits list [--account ID]\n"
    "                             the grants received, books' and\n"
    "                             operators', with their balances\n"
    "  usage quarantine --key ID --from T --to T --reason TEXT\n"
    "                             set aside the usage a key stored in\n"
    "                             [from, to) (arrival time): out of rating\n"
    "                             and invoicing, kept, audited\n"
    "  audit [--after ID] [--limit N] [--format table|json]\n"
    "                             the audit log: keys, books, accounts'\n"
    "                             books, grants, quarantines, invoices\n"
    "                             finalized, with who and when\n"
    "  shard list                 the shards that hold usage, and how\n"
    "                             many of the 64 buckets each holds\n"
    "  shard add NAME CONNINFO    list a new, empty, migrated database as\n"
    "                             a shard, reached as meterd will reach it\n"
    "  shard move [--abort] BUCKET SHARD [--user ROLE]\n"
    "      [--copy-timeout S]\n"
    "                             move a bucket of accounts (0-63) to\n"
    "                             another shard while meterd stores its\n"
    "                             usage (as the schema's owner: --db or\n"
    "                             $METER_OWNER_DATABASE_URL; ROLE on the\n"
    "                             shards, default the same); run again,\n"
    "                             it finishes a move cut short; --abort\n"
    "                             calls it off, the bucket staying put\n"
    "  shard resolve [--grace S]  settle the parts of batches over several\n"
    "                             shards left prepared by a meterd gone:\n"
    "                             committed if decided, else rolled back\n"
    "                             once S seconds old (default 60)\n"
    "  shard sync                 build the reports' foreign tables for\n"
    "                             the shard map now (a report would)\n"
    "  webhooks add URL [--events TYPE,TYPE...] [--secret whsec_...]\n"
    "                             send events to URL (default: all\n"
    "                             types); prints a new secret once\n"
    "  webhooks list              the endpoints (never their secrets)\n"
    "  webhooks remove ID         stop sending to an endpoint\n"
    "  webhooks deliveries [--event ID] [--endpoint ID] [--failed]\n"
    "       [--limit N]           each delivery: attempts, last status\n"
    "                             or error, next try (docs/webhooks.md)\n"
    "  help                       show this text\n"
    "\n"
    "options:\n"
    "  --db CONNINFO  the database, as a libpq conninfo or URI; default\n"
    "                 $METER_DATABASE_URL, else the embedded database as\n"
    "                 its worker role; migrate and usage compact,\n"
    "                 which need the tables' owner, try\n"
    "                 $METER_OWNER_DATABASE_URL first and take the\n"
    "                 embedded database as its owner\n"
    "  --version      print the version\n",
};

static void
print_usage(FILE *f)
{
    for (size_t i = 0; i < sizeof(usage_text) / sizeof(usage_text[0]); i++)
        fputs(usage_text[i], f);
}

static const struct {
    const char *name;
    ctl_command *run;
} commands[] = {
    {"db", ctl_db},
    {"migrate", ctl_migrate},
    {"rate", ctl_rate},
    {"books", ctl_books},
    {"accounts", ctl_accounts},
    {"keys", ctl_keys},
    {"export", ctl_export},
    {"gen", ctl_gen},
    {"audit", ctl_audit},
    {"invoice", ctl_invoice},
    {"usage", ctl_usage},
    {"credits", ctl_credits},
    {"shard", ctl_shard},
    {"webhooks", ctl_webhooks},
};

int
main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    struct ctl ctl = {0};
    int opt;
    opterr = 0;
    /* "+": options stop at the command; its own options follow it. */
    while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (opt) {
        case 'd':
            ctl.db = optarg;
            break;
        case 'h':
            print_usage(stdout);
            return 0;
        case 'V':
            printf("meterctl %s\n", METER_VERSION);
            return 0;
        default:
            return ctl_usage_error("unknown or incomplete option '%s'",
                                   argv[optind - 1]);
        }
    }
    if (optind >= argc) {
        print_usage(stderr);
        return CTL_USAGE;
    }
    const char *cmd = argv[optind];
    if (strcmp(cmd, "help") == 0) {
        print_usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(cmd, commands[i].name) == 0)
            return commands[i].run(&ctl, argc - optind, argv + optind);
    return ctl_usage_error("unknown command '%s'", cmd);
}
