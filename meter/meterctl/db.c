/*
 * db.c - `meterctl db start|stop|status|url [--worker]|destroy`: the
 * embedded database of the current directory (meter/cluster/). The url
 * is the owner's (by-hand SQL, migrations), --worker's the role meterd
 * and the daily commands use.
 */
#include "ctl_int.h"

#include <string.h>

#include "meter_cluster.h"

int
ctl_db(struct ctl *ctl, int argc, char **argv)
{
    struct meter_err e = {{0}};
    struct meter_cluster *c = NULL;
    int rc = CTL_FAILED;
    if (argc < 2)
        return ctl_usage_error("db needs a subcommand: %s",
                               "start, stop, status, url or destroy");
    const char *sub = argv[1];
    bool yes = argc == 3 && strcmp(argv[2], "--yes") == 0;
    bool worker = argc == 3 && strcmp(argv[2], "--worker") == 0;
    if (argc > 3 || (argc == 3 && !(strcmp(sub, "destroy") == 0 && yes) &&
                     !(strcmp(sub, "url") == 0 && worker)))
        return ctl_usage_error("unexpected argument '%s'", argv[argc - 1]);
    if (ctl->db)
        return ctl_usage_error(
            "--db '%s' does not apply to 'db', which manages "
            "the embedded database",
            ctl->db);
    if (strcmp(sub, "start") != 0 && strcmp(sub, "stop") != 0 &&
        strcmp(sub, "status") != 0 && strcmp(sub, "url") != 0 &&
        strcmp(sub, "destroy") != 0)
        return ctl_usage_error("unknown db subcommand '%s'", sub);
    if (strcmp(sub, "destroy") == 0 && !yes)
        return ctl_usage_error("%s", "db destroy deletes the data: add --yes");

    c = meter_cluster_open(NULL, &e);
    if (!c)
        return ctl_failed(&e);
    if (strcmp(sub, "start") == 0 || strcmp(sub, "url") == 0) {
        if (meter_cluster_start(c, &e) < 0)
            goto fail;
        if (strcmp(sub, "url") == 0)
            printf("%s\n", worker ? meter_cluster_worker_conninfo(c)
                                  : meter_cluster_conninfo(c));
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
        printf("state: %s\ndata: %s\nsocket: %s\nlog: %s\nurl: %s\n"
               "worker url: %s\n",
               names[st], meter_cluster_datadir(c), meter_cluster_sockdir(c),
               meter_cluster_logfile(c), meter_cluster_conninfo(c),
               meter_cluster_worker_conninfo(c));
        /* Like pg_ctl status: 3 when not running, for scripts. */
        rc = st == METER_CLUSTER_RUNNING ? 0 : 3;
        goto out;
    }
    rc = 0;
    goto out;
fail:
    ctl_failed(&e);
out:
    meter_cluster_free(c);
    return rc;
}
