/*
 * migrate.c - `meterctl migrate [--status]`: the schema migrations
 * (meter/db/migrate.c applies them), as the schema's owner
 * (meter_db_owner_conninfo).
 */
#include "ctl_int.h"

#include <getopt.h>
#include <stdlib.h>

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

int
ctl_migrate(struct ctl *ctl, int argc, char **argv)
{
    static const struct option opts[] = {
        {"status", no_argument, NULL, 's'},
        {"migrations", required_argument, NULL, 'm'},
        {"db", required_argument, NULL, 'd'},
        {NULL, 0, NULL, 0},
    };
    const char *dir = NULL;
    char default_dir[4096];
    bool status = false;
    int opt;
    ctl_getopt_reset();
    while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (opt) {
        case 's':
            status = true;
            break;
        case 'm':
            dir = optarg;
            break;
        case 'd':
            ctl->db = optarg;
            break;
        default:
            return ctl_bad_option("migrate", argv);
        }
    }
    if (optind < argc)
        return ctl_usage_error("migrate: unexpected argument '%s'",
                               argv[optind]);

    struct meter_err e = {{0}};
    struct meter_migration_set set = {0};
    PGconn *db = NULL;
    char *conninfo = NULL;
    int rc = CTL_FAILED;
    if (!dir) {
        if (meter_migrations_default_dir(default_dir, sizeof(default_dir), &e) <
            0)
            goto out;
        dir = default_dir;
    }
    if (meter_migrations_load(dir, &set, &e) < 0)
        goto out;
    /* The owner: the migrations create and alter what it owns. */
    if (meter_db_owner_conninfo(ctl->db, &conninfo, &e) < 0 ||
        !(db = meter_db_connect(conninfo, &e)))
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
        ctl_failed(&e);
    PQfinish(db);
    free(conninfo);
    meter_migrations_release(&set);
    return rc;
}
