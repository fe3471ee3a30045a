/*
 * main.c - meterctl, administration and batch work: the global options
 * and the table of commands (one file each).
 *
 * Exit status: 0 done, 1 failed (the message says why), 2 usage error.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <string.h>

/* The commands: one row a subcommand (sub NULL: a command without
 * any), with its part of the usage text. main dispatches through this
 * table, and `meterctl help --commands` lists it, so that every
 * subcommand has its --help and a test can find them all. */
static const struct command {
    const char *name, *sub;
    ctl_command *run;
    const char *usage;
} commands[] = {
    {"db", "start", ctl_db,
     "  db start                   start the embedded database of this\n"
     "                             directory (var/pg/); other commands use\n"
     "                             it only while it runs\n"},
    {"db", "stop", ctl_db, "  db stop                    stop it\n"},
    {"db", "status", ctl_db,
     "  db status                  whether it runs, and where its data is\n"},
    {"db", "url", ctl_db,
     "  db url [--worker]          start it if need be and print its\n"
     "                             conninfo as its owner, or (--worker) as\n"
     "                             its worker role, which meterd and the\n"
     "                             daily commands use\n"},
    {"db", "destroy", ctl_db,
     "  db destroy --yes           stop it and delete its data\n"},
    {"migrate", NULL, ctl_migrate,
     "  migrate [--status] [--migrations DIR]\n"
     "                             apply pending schema migrations, or list\n"
     "                             applied and pending ones\n"},
    {"rate", NULL, ctl_rate,
     "  rate --price-book FILE --usage FILE [--usage FILE ...]\n"
     "       [--period YYYY-MM] [--format json|table] [--memory-limit MIB]\n"
     "       [--no-grants]         rate files of samples (JSON array or\n"
     "                             NDJSON) with no database; the book's\n"
     "                             grants carry over its periods\n"
     "  rate --price-book FILE --from T --to T [--account ID] [...]\n"
     "                             rate the stored samples of [from, to)\n"},
    {"books", "add", ctl_books,
     "  books add FILE             store a price book (validated) as its\n"
     "                             next version\n"},
    {"books", "list", ctl_books,
     "  books list                 the stored versions of every book\n"},
    {"accounts", "add", ctl_accounts,
     "  accounts add ID [--name NAME] [--book BOOK --from YYYY-MM-DD]\n"
     "                             add an account, on the latest version\n"
     "                             of a book from a date\n"},
    {"accounts", "end", ctl_accounts,
     "  accounts end ID --from YYYY-MM-DD\n"
     "                             the account on no book from that day\n"},
    {"accounts", "list", ctl_accounts,
     "  accounts list [--after ID] [--limit N]\n"
     "                             a page of accounts and their book now\n"},
    {"accounts", "show", ctl_accounts,
     "  accounts show ID           an account, its metadata and books\n"},
    {"keys", "create", ctl_keys,
     "  keys create --role host|account|finance|admin [--account ID]\n"
     "       --name NAME           create an API key; prints its token once\n"
     "       [--accounts ID,ID...] a host key that may write only these\n"
     "                             accounts' usage\n"},
    {"keys", "list", ctl_keys,
     "  keys list                  list keys (never their tokens)\n"},
    {"keys", "revoke", ctl_keys, "  keys revoke ID             revoke a key\n"},
    {"export", NULL, ctl_export,
     "  export [--account ID] --from T --to T\n"
     "                             write stored samples of [from, to) as\n"
     "                             NDJSON (T: Unix seconds or RFC 3339)\n"},
    {"gen", NULL, ctl_gen,
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
     "                             ends the push at once\n"},
    {"invoice", "run", ctl_invoice,
     "  invoice run --period YYYY-MM [--account ID] [--finalize] [--jobs N]\n"
     "       [--batch N] [--seller NAME]\n"
     "                             rate stored usage into the period's\n"
     "                             drafts (finalize: number them, once the\n"
     "                             period has ended), N accounts to a\n"
     "                             transaction (default 500)\n"},
    {"invoice", "list", ctl_invoice,
     "  invoice list [--period P] [--account ID] [--status draft|final|void]\n"
     "       [--after ID] [--limit N]\n"
     "                             list invoices and credit notes\n"},
    {"invoice", "show", ctl_invoice,
     "  invoice show NUMBER|DRAFT-ID [--format json|csv|html|pdf]\n"
     "       [--output FILE]       one document (a final one checked\n"
     "                             against the SHA-256 stored with it)\n"},
    {"invoice", "void", ctl_invoice,
     "  invoice void NUMBER --reason TEXT\n"
     "                             void a final invoice by a credit note\n"},
    {"invoice", "preview", ctl_invoice,
     "  invoice preview --period P --account ID --price-book FILE\n"
     "                             what-if: the invoice under another book\n"
     "                             and the difference, nothing stored\n"},
    {"usage", "compact", ctl_usage,
     "  usage compact --period YYYY-MM [--account ID]\n"
     "                             close a month's storage: each account's\n"
     "                             blocks rewritten together (online), so\n"
     "                             its invoice run reads them faster\n"},
    {"usage", "pack", ctl_usage,
     "  usage pack [--after S]    pack each sandbox's blocks of every hour\n"
     "                             that ended S seconds ago (default 600)\n"
     "                             into one row, as meterd does\n"},
    {"usage", "quarantine", ctl_usage,
     "  usage quarantine --key ID --from T --to T --reason TEXT\n"
     "                             set aside the usage a key stored in\n"
     "                             [from, to) (arrival time): out of rating\n"
     "                             and invoicing, kept, audited\n"},
    {"credits", "grant", ctl_credits,
     "  credits grant ACCOUNT AMOUNT [--expires-after N] [--id ID]\n"
     "                             give an account credit for its next\n"
     "                             invoices, in its book's currency\n"},
    {"credits", "list", ctl_credits,
     "  credits list [--account ID]\n"
     "                             the grants received, books' and\n"
     "                             operators', with their balances\n"},
    {"audit", NULL, ctl_audit,
     "  audit [--after ID] [--limit N] [--format table|json]\n"
     "                             the audit log: keys, books, accounts'\n"
     "                             books, grants, quarantines, invoices\n"
     "                             finalized, with who and when\n"},
    {"shard", "list", ctl_shard,
     "  shard list                 the shards that hold usage, and how\n"
     "                             many of the 64 buckets each holds\n"},
    {"shard", "add", ctl_shard,
     "  shard add NAME CONNINFO    list a new, empty, migrated database as\n"
     "                             a shard, reached as meterd will reach it\n"},
    {"shard", "move", ctl_shard,
     "  shard move [--abort] BUCKET SHARD [--user ROLE]\n"
     "      [--copy-timeout S]\n"
     "                             move a bucket of accounts (0-63) to\n"
     "                             another shard while meterd stores its\n"
     "                             usage (as the schema's owner: --db or\n"
     "                             $METER_OWNER_DATABASE_URL; ROLE on the\n"
     "                             shards, default the same); run again,\n"
     "                             it finishes a move cut short; --abort\n"
     "                             calls it off, the bucket staying put\n"},
    {"shard", "resolve", ctl_shard,
     "  shard resolve [--grace S]  settle the parts of batches over several\n"
     "                             shards left prepared by a meterd gone:\n"
     "                             committed if decided, else rolled back\n"
     "                             once S seconds old (default 60)\n"},
    {"shard", "sync", ctl_shard,
     "  shard sync                 build the reports' foreign tables for\n"
     "                             the shard map now (a report would)\n"},
    {"webhooks", "add", ctl_webhooks,
     "  webhooks add URL [--events TYPE,TYPE...] [--secret whsec_...]\n"
     "                             send events to URL (default: all\n"
     "                             types); prints a new secret once\n"},
    {"webhooks", "list", ctl_webhooks,
     "  webhooks list              the endpoints (never their secrets)\n"},
    {"webhooks", "remove", ctl_webhooks,
     "  webhooks remove ID         stop sending to an endpoint\n"},
    {"webhooks", "deliveries", ctl_webhooks,
     "  webhooks deliveries [--event ID] [--endpoint ID] [--failed]\n"
     "       [--limit N]           each delivery: attempts, last status\n"
     "                             or error, next try (docs/webhooks.md)\n"},
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char usage_head[] =
    "usage: meterctl [--db CONNINFO] COMMAND [ARGS]\n";
static const char usage_options[] =
    "\n"
    "options:\n"
    "  --db CONNINFO  the database, as a libpq conninfo or URI; default\n"
    "                 $METER_DATABASE_URL, else the embedded database as\n"
    "                 its worker role; migrate and usage compact,\n"
    "                 which need the tables' owner, try\n"
    "                 $METER_OWNER_DATABASE_URL first and take the\n"
    "                 embedded database as its owner\n"
    "  --help         this text; after a command, that command's\n"
    "  --version      print the version\n";

static void
print_usage(FILE *f)
{
    fputs(usage_head, f);
    fputs("\ncommands:\n", f);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fputs(commands[i].usage, f);
    fputs("  help [COMMAND [SUBCOMMAND]]\n"
          "                             show this text, or a command's\n"
          "  help --commands            list every command and subcommand\n",
          f);
    fputs(usage_options, f);
}

/* The usage of command name's rows (of subcommand sub only, unless
 * NULL) to stdout: 0, or a usage error if there are none. */
static int
print_command_usage(const char *name, const char *sub)
{
    bool any = false;
    for (size_t i = 0; i < NCOMMANDS; i++) {
        const struct command *c = &commands[i];
        if (strcmp(c->name, name) != 0 ||
            (sub && (!c->sub || strcmp(c->sub, sub) != 0)))
            continue;
        if (!any)
            printf("usage: meterctl [--db CONNINFO] %s%s%s [ARGS]\n\n", name,
                   sub || c->sub ? " " : "",
                   sub      ? sub
                   : c->sub ? "SUBCOMMAND"
                            : "");
        any = true;
        fputs(c->usage, stdout);
    }
    if (!any)
        return sub ? ctl_usage_error("unknown %s subcommand '%s'", name, sub)
                   : ctl_usage_error("unknown command '%s'", name);
    fputs(usage_options, stdout);
    return 0;
}

/* `meterctl help [--commands | COMMAND [SUB]]`. */
static int
help(int argc, char **argv)
{
    if (argc == 1) {
        print_usage(stdout);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--commands") == 0) {
        for (size_t i = 0; i < NCOMMANDS; i++)
            printf("%s%s%s\n", commands[i].name, commands[i].sub ? " " : "",
                   commands[i].sub ? commands[i].sub : "");
        return 0;
    }
    if (argc > 3)
        return ctl_usage_error("help: unexpected argument '%s'", argv[3]);
    return print_command_usage(argv[1], argc == 3 ? argv[2] : NULL);
}

/* Whether a command's arguments ask for its help (before any "--"). */
static bool
wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return true;
    return false;
}

/* Runs command argv[0] (argc > 0), or prints its help. A subcommand
 * missing from the table is refused here: a command's own file may
 * know more than the table says, but nothing runs unlisted. */
static int
dispatch(struct ctl *ctl, int argc, char **argv)
{
    const struct command *run = NULL;
    bool has_subs = false;
    const char *sub = argc > 1 ? argv[1] : NULL;
    for (size_t i = 0; i < NCOMMANDS; i++) {
        const struct command *c = &commands[i];
        if (strcmp(c->name, argv[0]) != 0)
            continue;
        has_subs = c->sub != NULL;
        if (!c->sub || (sub && strcmp(c->sub, sub) == 0)) {
            run = c;
            break;
        }
        if (!run)
            run = c; /* the command's first: its file names what is
                        missing or wrong */
    }
    if (!run)
        return ctl_usage_error("unknown command '%s'", argv[0]);
    bool known_sub =
        !has_subs || (sub && run->sub && strcmp(run->sub, sub) == 0);
    if (wants_help(argc, argv))
        return print_command_usage(run->name, known_sub ? run->sub : NULL);
    if (has_subs && sub && !known_sub && sub[0] != '-')
        return ctl_usage_error("unknown %s subcommand '%s'", argv[0], sub);
    return run->run(ctl, argc, argv);
}

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
    if (strcmp(argv[optind], "help") == 0)
        return help(argc - optind, argv + optind);
    return dispatch(&ctl, argc - optind, argv + optind);
}
