/*
 * shard.c - `meterctl shard`: the shards that hold per-account usage
 * (docs/scale.md). `list` shows each shard and how many of the 64
 * buckets the map gives it; `add` lists a new, empty shard, reached as
 * meterd will reach it; `resolve` settles the parts of batches a meterd
 * left prepared, as meterd's background thread does every
 * --merge-every seconds; `move` moves a bucket of accounts to another
 * shard while meterd stores its usage (meter_db_shard_move); `sync`
 * builds the reports' foreign partitions for the map now, rather than at
 * the next report.
 */
#include "ctl_int.h"

#include <getopt.h>
#include <string.h>

static void
list_row(const struct meter_shard_info *s, void *arg)
{
    (void)arg;
    printf("%-5d %-20s %7d  %s\n", s->id, s->name, s->buckets,
           s->conninfo[0] ? s->conninfo : "(the catalog's database)");
}

static int
shard_list(struct ctl *ctl, int argc, char **argv)
{
    if (argc > 1)
        return ctl_usage_error("shard list: unexpected argument '%s'", argv[1]);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    printf("%-5s %-20s %7s  %s\n", "shard", "name", "buckets", "conninfo");
    int rc =
        meter_db_shard_list(db, list_row, NULL, &e) < 0 ? ctl_failed(&e) : 0;
    PQfinish(db);
    return rc;
}

static int
shard_add(struct ctl *ctl, int argc, char **argv)
{
    if (argc != 3)
        return ctl_usage_error("shard add needs NAME CONNINFO");
    const char *name = argv[1], *conninfo = argv[2];
    size_t n = strlen(name);
    bool ok = n >= 1 && n <= 32 && name[0] >= 'a' && name[0] <= 'z';
    for (size_t i = 0; ok && i < n; i++)
        ok = (name[i] >= 'a' && name[i] <= 'z') ||
             (name[i] >= '0' && name[i] <= '9') || name[i] == '_' ||
             name[i] == '-';
    if (!ok)
        return ctl_usage_error("shard add: NAME '%s' must be 1-32 of a-z, "
                               "0-9, _ and -, starting with a letter",
                               name);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    int rc = 0;
    if (meter_db_shard_add(db, name, conninfo, &e) < 0)
        rc = ctl_failed(&e);
    else
        printf("shard %s added; it holds no bucket yet\n", name);
    PQfinish(db);
    return rc;
}

static int
shard_resolve(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"grace", required_argument, NULL, 'g'},
        {NULL, 0, NULL, 0},
    };
    uint64_t grace = 60;
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt != 'g')
            return ctl_bad_option("shard resolve", argv);
        if (meter_parse_uint(optarg, 0, 86400, &grace) < 0)
            return ctl_usage_error("shard resolve: --grace '%s' is not a "
                                   "number of seconds from 0 to 86400",
                                   optarg);
    }
    if (optind < argc)
        return ctl_usage_error("shard resolve: unexpected argument '%s'",
                               argv[optind]);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    struct meter_shards *sh = meter_shards_new();
    struct meter_shard_links *l = sh ? meter_shard_links_new(sh, 0) : NULL;
    long settled = 0;
    int rc = 0;
    if (!l)
        rc = ctl_failed(&(struct meter_err){"out of memory"});
    else if (meter_db_shards_resolve(db, l, (int)grace, &settled, &e) < 0)
        rc = ctl_failed(&e);
    else
        printf("%ld prepared parts settled\n", settled);
    meter_shard_links_free(l);
    meter_shards_free(sh);
    PQfinish(db);
    return rc;
}

static bool
move_note(void *arg, const char *line)
{
    (void)arg;
    printf("%s\n", line);
    fflush(stdout);
    return true;
}

static int
shard_move(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"user", required_argument, NULL, 'u'},
        {"copy-timeout", required_argument, NULL, 't'},
        {"abort", no_argument, NULL, 'a'},
        {NULL, 0, NULL, 0},
    };
    const char *user = NULL;
    bool abort = false;
    uint64_t copy_s = 3600, bucket;
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (opt == 'u')
            user = optarg;
        else if (opt == 'a')
            abort = true;
        else if (opt != 't')
            return ctl_bad_option("shard move", argv);
        else if (meter_parse_uint(optarg, 1, 86400 * 7, &copy_s) < 0)
            return ctl_usage_error("shard move: --copy-timeout '%s' is not a "
                                   "number of seconds from 1 to 604800",
                                   optarg);
    }
    if (argc - optind != 2)
        return ctl_usage_error("shard move needs BUCKET SHARD");
    if (meter_parse_uint(argv[optind], 0, METER_BUCKETS - 1, &bucket) < 0)
        return ctl_usage_error("shard move: BUCKET '%s' is not a number from "
                               "0 to %d",
                               argv[optind], METER_BUCKETS - 1);
    /* The schema's owner: publishing, subscribing and the sandboxes'
     * sequence are the owner's (and a superuser's on PostgreSQL 15). */
    PGconn *db = ctl_connect_owner(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    int rc = 0;
    if (meter_db_shard_move(db, (int)bucket, argv[optind + 1], user,
                            (int)copy_s, abort, move_note, NULL, &e) < 0)
        rc = ctl_failed(&e);
    PQfinish(db);
    return rc;
}

static int
shard_sync(struct ctl *ctl, int argc, char **argv)
{
    if (argc > 1)
        return ctl_usage_error("shard sync: unexpected argument '%s'", argv[1]);
    PGconn *db = ctl_connect(ctl);
    if (!db)
        return CTL_FAILED;
    struct meter_err e = {{0}};
    int rc = 0;
    if (meter_db_fleet_sync(db, &e) < 0)
        rc = ctl_failed(&e);
    else
        printf("the reports read the shards of the map\n");
    PQfinish(db);
    return rc;
}

int
ctl_shard(struct ctl *ctl, int argc, char **argv)
{
    if (argc < 2)
        return ctl_usage_error(
            "shard needs a subcommand: list, add, move, resolve, sync");
    if (strcmp(argv[1], "list") == 0)
        return shard_list(ctl, argc - 1, argv + 1);
    if (strcmp(argv[1], "add") == 0)
        return shard_add(ctl, argc - 1, argv + 1);
    if (strcmp(argv[1], "resolve") == 0)
        return shard_resolve(ctl, argc - 1, argv + 1);
    if (strcmp(argv[1], "move") == 0)
        return shard_move(ctl, argc - 1, argv + 1);
    if (strcmp(argv[1], "sync") == 0)
        return shard_sync(ctl, argc - 1, argv + 1);
    return ctl_usage_error("unknown shard subcommand '%s'", argv[1]);
}
