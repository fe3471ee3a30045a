/*
 * meterctl.c - administration and batch work: the command line, and the
 * db and migrate subcommands (the others are in ctl_*.c).
 *
 * Exit status: 0 done, 1 failed (the message says why), 2 usage error.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: meterctl [--db CONNINFO] COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  db start|stop|status|url   manage the embedded database of this\n"
    "                             directory (var/pg/)\n"
    "  db destroy --yes           stop it and delete its data\n"
    "  migrate [--status] [--migrations DIR]\n"
    "                             apply pending schema migrations, or list\n"
    "                             applied and pending ones\n"
    "  rate --price-book FILE --usage FILE [--usage FILE ...]\n"
    "       [--period YYYY-MM] [--format json|table] [--memory-limit MIB]\n"
    "                             rate files of samples (JSON array or\n"
    "                             NDJSON) with no database\n"
    "  rate --price-book FILE --from T --to T [--account ID] [...]\n"
    "                             rate the stored samples of [from, to)\n"
    "  books add FILE             store a price book (validated) as its\n"
    "                             next version\n"
    "  accounts add ID [--name NAME] [--book BOOK --from YYYY-MM-DD]\n"
    "                             add an account, on the latest version\n"
    "                             of a book from a date\n"
    "  keys create --role host|account|finance|admin [--account ID]\n"
    "       --name NAME           create an API key; prints its token once\n"
    "  keys list                  list keys (never their tokens)\n"
    "  keys revoke ID             revoke a key\n"
    "  export [--account ID] --from T --to T\n"
    "                             write stored samples of [from, to) as\n"
    "                             NDJSON (T: Unix seconds or RFC 3339)\n"
    "  gen [--sandboxes N] [--accounts N] [--seconds N] [--start T]\n"
    "      [--seed N] [--output FILE]\n"
    "                             write a generated fleet as NDJSON\n"
    "  gen --push URL --token T [--batch-seconds N] [--rate N] [--follow]\n"
    "                             push it to meterd in columnar batches\n"
    "  help                       show this text\n"
    "\n"
    "options:\n"
    "  --db CONNINFO  the database, as a libpq conninfo or URI; default\n"
    "                 $METER_DATABASE_URL, else the embedded database\n"
    "  --version      print the version\n";

/* The database given by --db, before or after the command. */
static const char *db_flag;

int
ctl_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("meterctl: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nrun 'meterctl help' for usage\n", stderr);
    return CTL_USAGE;
}

int
ctl_parse_time(const char *s, int64_t *out)
{
    char *end;
    if (meter_parse_rfc3339(s, out) == 0)
        return 0;
    long long v = strtoll(s, &end, 10);
    if (*end || s[0] == '\0' || v < 0 || v > METER_TS_MAX)
        return -1;
    *out = v;
    return 0;
}

static int
failed(const struct meter_err *e)
{
    fprintf(stderr, "meterctl: %s\n", e->msg);
    return CTL_FAILED;
}

/* ---- db ------------------------------------------------------------- */

static int
cmd_db(int argc, char **argv)
{
    struct meter_err e = {{0}};
    struct meter_cluster *c = NULL;
    int rc = CTL_FAILED;
    if (argc < 2)
        return ctl_usage_error("db needs a subcommand: %s",
                               "start, stop, status, url or destroy");
    const char *sub = argv[1];
    bool yes = argc == 3 && strcmp(argv[2], "--yes") == 0;
    if (argc > 2 && !(strcmp(sub, "destroy") == 0 && yes))
        return ctl_usage_error("unexpected argument '%s'", argv[2]);
    if (db_flag)
        return ctl_usage_error(
            "--db '%s' does not apply to 'db', which manages "
            "the embedded database",
            db_flag);
    if (strcmp(sub, "start") != 0 && strcmp(sub, "stop") != 0 &&
        strcmp(sub, "status") != 0 && strcmp(sub, "url") != 0 &&
        strcmp(sub, "destroy") != 0)
        return ctl_usage_error("unknown db subcommand '%s'", sub);
    if (strcmp(sub, "destroy") == 0 && !yes)
        return ctl_usage_error("%s", "db destroy deletes the data: add --yes");

    c = meter_cluster_open(NULL, &e);
    if (!c)
        return failed(&e);
    if (strcmp(sub, "start") == 0 || strcmp(sub, "url") == 0) {
        if (meter_cluster_start(c, &e) < 0)
            goto fail;
        if (strcmp(sub, "url") == 0)
            printf("%s\n", meter_cluster_conninfo(c));
        else
            printf("database running: %s\n", meter_cluster_conninfo(c));
    } else if (strcmp(sub, "stop") == 0) {
        if (meter_cluster_stop(c, &e) < 0)
            goto fail;
        printf("database stopped\n");
    } else if (strcmp(sub, "destroy") == 0) {
        if (meter_cluster_destroy(c, &e) < 0)
            goto fail;
        printf("database destroyed: %s\n", meter_cluster_datadir(c));
    } else {
        static const char *const names[] = {"absent", "stopped", "running"};
        enum meter_cluster_state st = meter_cluster_state(c);
        printf("state: %s\ndata: %s\nsocket: %s\nlog: %s\nurl: %s\n", names[st],
               meter_cluster_datadir(c), meter_cluster_sockdir(c),
               meter_cluster_logfile(c), meter_cluster_conninfo(c));
        /* Like pg_ctl status: 3 when not running, for scripts. */
        rc = st == METER_CLUSTER_RUNNING ? 0 : 3;
        goto out;
    }
    rc = 0;
    goto out;
fail:
    failed(&e);
out:
    meter_cluster_free(c);
    return rc;
}

/* ---- migrate ---------------------------------------------------------- */

static void
print_applied(const struct meter_migration *m, void *arg)
{
    (void)arg;
    printf("applied %s\n", m->file);
    fflush(stdout);
}

static int
print_status(PGconn *db, const struct meter_migration_set *set,
             struct meter_err *e)
{
    static const char *const names[] = {"pending", "applied", "CHANGED",
                                        "MISSING"};
    struct meter_migration_status *s;
    size_t n;
    if (meter_migrate_status(db, set, &s, &n, e) < 0)
        return -1;
    int bad = 0;
    printf("%-8s %-8s %-21s %s\n", "version", "state", "applied_at", "file");
    for (size_t i = 0; i < n; i++) {
        printf("%04d     %-8s %-21s %s\n", s[i].version, names[s[i].state],
               s[i].applied_at[0] ? s[i].applied_at : "-", s[i].file);
        bad |= s[i].state >= METER_MIGRATION_CHANGED;
    }
    free(s);
    if (bad)
        return meter_fail(e, "%s",
                          "an applied migration has changed or is "
                          "missing");
    return 0;
}

static int
cmd_migrate(int argc, char **argv)
{
    static const struct option opts[] = {
        {"status", no_argument, NULL, 's'},
        {"migrations", required_argument, NULL, 'm'},
        {"db", required_argument, NULL, 'd'},
        {NULL, 0, NULL, 0},
    };
    const char *dir = meter_migrations_default_dir();
    bool status = false;
    int opt;
    optind = 0; /* 0: glibc re-initializes, permuting again */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 's':
            status = true;
            break;
        case 'm':
            dir = optarg;
            break;
        case 'd':
            db_flag = optarg;
            break;
        default:
            return ctl_usage_error("migrate: unknown or incomplete option '%s'",
                                   argv[optind - 1]);
        }
    }
    if (optind < argc)
        return ctl_usage_error("migrate: unexpected argument '%s'",
                               argv[optind]);

    struct meter_err e = {{0}};
    struct meter_migration_set set = {0};
    PGconn *db = NULL;
    int rc = CTL_FAILED;
    if (meter_migrations_load(dir, &set, &e) < 0)
        goto out;
    db = meter_db_connect(db_flag, &e);
    if (!db)
        goto out;
    if (status) {
        if (print_status(db, &set, &e) < 0)
            goto out;
    } else {
        int applied, version;
        if (meter_migrate(db, &set, print_applied, NULL, &applied, &version,
                          &e) < 0)
            goto out;
        if (applied == 0)
            printf("schema is at version %04d, up to date: nothing to "
                   "apply\n",
                   version);
        else
            printf("schema is at version %04d (%d migration%s applied)\n",
                   version, applied, applied == 1 ? "" : "s");
    }
    rc = 0;
out:
    if (rc != 0)
        failed(&e);
    PQfinish(db);
    meter_migrations_release(&set);
    return rc;
}

/* ---- main ------------------------------------------------------------- */

int
main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"db", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    opterr = 0;
    /* "+": options stop at the command; its own options follow it. */
    while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (opt) {
        case 'd':
            db_flag = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
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
        fputs(usage_text, stderr);
        return CTL_USAGE;
    }
    const char *cmd = argv[optind];
    argc -= optind;
    argv += optind;
    if (strcmp(cmd, "help") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (strcmp(cmd, "db") == 0)
        return cmd_db(argc, argv);
    if (strcmp(cmd, "migrate") == 0)
        return cmd_migrate(argc, argv);
    if (strcmp(cmd, "rate") == 0)
        return ctl_rate(db_flag, argc, argv);
    if (strcmp(cmd, "keys") == 0)
        return ctl_keys(db_flag, argc, argv);
    if (strcmp(cmd, "export") == 0)
        return ctl_export(db_flag, argc, argv);
    if (strcmp(cmd, "gen") == 0)
        return ctl_gen(argc, argv);
    if (strcmp(cmd, "books") == 0 || strcmp(cmd, "accounts") == 0)
        return ctl_admin(db_flag, argc, argv);
    return ctl_usage_error("unknown command '%s'", cmd);
}
