/*
 * meter_cluster.h - the embedded database: a private PostgreSQL cluster
 * for a working directory, under WORKDIR/var/pg/, reachable only through
 * a unix socket. Programs and scripts that want it start it explicitly
 * (meterctl db start, make demo, the tests); connecting never does.
 *
 * When the caller is root the cluster runs as an unprivileged user
 * (METER_PG_USER, default "postgres"); if that user cannot reach
 * WORKDIR/var/pg (a checkout under a 0700 home), the cluster's files go
 * to /var/tmp/meter-pg-HASH and var/pg/data links to them. A socket path
 * too long for sun_path goes to /tmp/meter-pg-HASH. Start, stop and
 * destroy hold an exclusive lock on var/pg/lock, so concurrent calls
 * from several processes are safe; one struct meter_cluster belongs to
 * one thread.
 *
 * Functions return 0 or -1 with a message in e (meter_util.h). The
 * server programs (initdb, pg_ctl) come from $METER_PG_BINDIR, else the
 * directory found when the project was configured.
 */
#ifndef METER_CLUSTER_H
#define METER_CLUSTER_H

#include "meter_util.h"

struct meter_cluster;

enum meter_cluster_state {
    METER_CLUSTER_ABSENT,  /* never initialized */
    METER_CLUSTER_STOPPED, /* initialized, not accepting connections */
    METER_CLUSTER_RUNNING, /* accepting connections */
};

/* Resolves the cluster's paths for workdir (NULL: the current directory).
 * Creates nothing; as root it checks, in a child process, whether the
 * cluster's user can reach workdir. */
struct meter_cluster *meter_cluster_open(const char *workdir,
                                         struct meter_err *e);
void meter_cluster_free(struct meter_cluster *c);

/* Initializes the cluster if needed and starts it unless running; then,
 * running or not before, makes sure of the "meter" database and the
 * worker role. Progress lines go to stderr. */
int meter_cluster_start(struct meter_cluster *c, struct meter_err *e);
/* Stops the cluster if running (fast shutdown). */
int meter_cluster_stop(struct meter_cluster *c, struct meter_err *e);
/* Stops the cluster and deletes its files. */
int meter_cluster_destroy(struct meter_cluster *c, struct meter_err *e);
enum meter_cluster_state meter_cluster_state(const struct meter_cluster *c);

/* The libpq conninfo of the cluster's "meter" database as its owner,
 * the superuser "meter" (migrations, maintenance, by-hand SQL); owned
 * by c. */
const char *meter_cluster_conninfo(const struct meter_cluster *c);
/* The same as the role "meter_worker", which start creates: no
 * attribute but LOGIN, owning nothing, granted what migration 0012
 * grants (meterd and the daily meterctl commands); owned by c. */
const char *meter_cluster_worker_conninfo(const struct meter_cluster *c);
const char *meter_cluster_datadir(const struct meter_cluster *c);
const char *meter_cluster_sockdir(const struct meter_cluster *c);
const char *meter_cluster_logfile(const struct meter_cluster *c);

#endif
