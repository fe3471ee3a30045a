/*
 * cluster.c - the embedded PostgreSQL cluster under WORKDIR/var/pg/.
 *
 * Layout, for a workdir whose var/pg the cluster's user can reach:
 *   var/pg/lock             flock()ed by start, stop and destroy
 *   var/pg/data/            the cluster (initdb'd in data.tmp, renamed)
 *   var/pg/postgresql.log   the server's log
 *   var/pg/run/             the unix socket, when the path is short
 * Otherwise base = /var/tmp/meter-pg-HASH holds data/, the log and run/,
 * and var/pg/data is a symbolic link to base/data. HASH is a hash of the
 * absolute path of var/pg, so each checkout has its own cluster.
 *
 * Security rests on the socket directory: mode 0700, owned by the
 * cluster's user; connections through it are trusted (no password), and
 * the server listens on no TCP port.
 *
 * Two roles: DB_USER, initdb's superuser, owns the database and every
 * object the migrations create (meterctl migrate and the maintenance
 * commands connect as it); DB_WORKER, made here at each start with no
 * attribute but LOGIN, owns nothing and gets only what migration 0012
 * grants it (meterd and the daily commands connect as it), so it cannot
 * alter or disable a trigger. The roles guard against what meterd and
 * its keys can do, not against the machine's user, who may connect as
 * either through the socket.
 */
#include "meter_cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#ifndef METER_PG_BINDIR
#define METER_PG_BINDIR "/usr/lib/postgresql/15/bin"
#endif

#define PG_PORT "5432"
#define SOCKET_NAME "/.s.PGSQL." PG_PORT
#define DB_USER "meter"
#define DB_NAME "meter"
#define DB_WORKER "meter_worker" /* the name migration 0012 grants to */

struct meter_cluster {
    char pgdir[PATH_MAX]; /* WORKDIR/var/pg, absolute */
    char base[PATH_MAX];  /* holds data, log, run (pgdir or /var/tmp/..) */
    char datadir[PATH_MAX];
    char sockdir[PATH_MAX];
    char logfile[PATH_MAX];
    char bindir[PATH_MAX];
    char conninfo[2 * PATH_MAX];        /* as DB_USER, the owner */
    char worker_conninfo[2 * PATH_MAX]; /* as DB_WORKER */
    bool as_root; /* run server programs as user uid/gid */
    uid_t uid;
    gid_t gid;
    char user[64];
};

static int fmt_path(char *dst, size_t n, struct meter_err *e, const char *fmt,
                    ...) __attribute__((format(printf, 4, 5)));

static int
fmt_path(char *dst, size_t n, struct meter_err *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(dst, n, fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= n)
        return meter_fail(e, "path too long: '%s'", dst);
    return 0;
}

/* Appends s to dst as a single-quoted libpq conninfo value. */
static int
quote_conninfo(char *dst, size_t n, const char *s)
{
    size_t j = 0;
    if (j + 1 >= n)
        return -1;
    dst[j++] = '\'';
    for (; *s; s++) {
        if (j + 3 >= n)
            return -1;
        if (*s == '\'' || *s == '\\')
            dst[j++] = '\\';
        dst[j++] = *s;
    }
    dst[j++] = '\'';
    dst[j] = '\0';
    return 0;
}

/* Runs fn(arg) in a child with the cluster user's identity; returns the
 * child's exit status, or -1 if it could not run. */
static int
as_cluster_user(const struct meter_cluster *c, int (*fn)(const void *),
                const void *arg)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (c->as_root && (setgroups(0, NULL) != 0 || setgid(c->gid) != 0 ||
                           setuid(c->uid) != 0))
            _exit(126);
        _exit(fn(arg));
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int
can_enter(const void *path)
{
    return access(path, X_OK) == 0 ? 0 : 1;
}

struct meter_cluster *
meter_cluster_open(const char *workdir, struct meter_err *e)
{
    struct meter_cluster *c = calloc(1, sizeof(*c));
    char cwd[PATH_MAX];
    if (!c) {
        meter_fail(e, "out of memory");
        return NULL;
    }
    if (!workdir) {
        if (!getcwd(cwd, sizeof(cwd))) {
            meter_fail(e, "cannot read the current directory: %s",
                       strerror(errno));
            goto fail;
        }
        workdir = cwd;
    }
    if (workdir[0] != '/') {
        meter_fail(e, "working directory '%s' is not absolute", workdir);
        goto fail;
    }
    if (fmt_path(c->pgdir, sizeof(c->pgdir), e, "%s/var/pg",
                 strcmp(workdir, "/") == 0 ? "" : workdir) < 0)
        goto fail;

    const char *bindir = getenv("METER_PG_BINDIR");
    if (!bindir || !*bindir)
        bindir = METER_PG_BINDIR;
    if (fmt_path(c->bindir, sizeof(c->bindir), e, "%s", bindir) < 0)
        goto fail;

    if (geteuid() == 0) {
        const char *name = getenv("METER_PG_USER");
        if (!name || !*name)
            name = "postgres";
        struct passwd *pw = getpwnam(name);
        if (!pw) {
            meter_fail(e,
                       "running as root, the database needs an unprivileged "
                       "user to own it: user '%s' not found (set "
                       "METER_PG_USER)",
                       name);
            goto fail;
        }
        if (pw->pw_uid == 0) {
            meter_fail(e, "METER_PG_USER '%s' is root; initdb refuses root",
                       name);
            goto fail;
        }
        c->as_root = true;
        c->uid = pw->pw_uid;
        c->gid = pw->pw_gid;
        snprintf(c->user, sizeof(c->user), "%s", name);
    } else {
        c->uid = geteuid();
        c->gid = getegid();
    }

    /* The cluster's user must reach var/pg. What we create below the
     * nearest existing directory will be enterable (0755 parents, var/pg
     * given to that user), so that directory decides. */
    char probe[PATH_MAX];
    snprintf(probe, sizeof(probe), "%s", c->pgdir);
    struct stat st;
    while (stat(probe, &st) != 0 || !S_ISDIR(st.st_mode)) {
        char *slash = strrchr(probe, '/');
        if (!slash || slash == probe) {
            snprintf(probe, sizeof(probe), "/");
            break;
        }
        *slash = '\0';
    }
    bool reachable = !c->as_root || as_cluster_user(c, can_enter, probe) == 0;
    uint64_t h = meter_hash(c->pgdir);
    if (reachable) {
        snprintf(c->base, sizeof(c->base), "%s", c->pgdir);
    } else {
        snprintf(c->base, sizeof(c->base), "/var/tmp/meter-pg-%016llx",
                 (unsigned long long)h);
    }
    if (fmt_path(c->datadir, sizeof(c->datadir), e, "%s/data", c->base) < 0 ||
        fmt_path(c->logfile, sizeof(c->logfile), e, "%s/postgresql.log",
                 c->base) < 0 ||
        fmt_path(c->sockdir, sizeof(c->sockdir), e, "%s/run", c->base) < 0)
        goto fail;
    struct sockaddr_un sun;
    if (strlen(c->sockdir) + strlen(SOCKET_NAME) >= sizeof(sun.sun_path))
        snprintf(c->sockdir, sizeof(c->sockdir), "/tmp/meter-pg-%016llx",
                 (unsigned long long)h);

    char host[PATH_MAX + 8];
    if (quote_conninfo(host, sizeof(host), c->sockdir) < 0 ||
        fmt_path(c->conninfo, sizeof(c->conninfo), e,
                 "host=%s port=" PG_PORT " user=" DB_USER " dbname=" DB_NAME,
                 host) < 0 ||
        fmt_path(c->worker_conninfo, sizeof(c->worker_conninfo), e,
                 "host=%s port=" PG_PORT " user=" DB_WORKER " dbname=" DB_NAME,
                 host) < 0)
        goto fail;
    return c;
fail:
    free(c);
    return NULL;
}

void
meter_cluster_free(struct meter_cluster *c)
{
    free(c);
}

const char *
meter_cluster_conninfo(const struct meter_cluster *c)
{
    return c->conninfo;
}

const char *
meter_cluster_worker_conninfo(const struct meter_cluster *c)
{
    return c->worker_conninfo;
}

const char *
meter_cluster_datadir(const struct meter_cluster *c)
{
    return c->datadir;
}

const char *
meter_cluster_sockdir(const struct meter_cluster *c)
{
    return c->sockdir;
}

const char *
meter_cluster_logfile(const struct meter_cluster *c)
{
    return c->logfile;
}

/* Whether the socket directory is the cluster user's own and private:
 * a directory in /tmp with another owner may hold an impostor's socket. */
static bool
sockdir_trusted(const struct meter_cluster *c)
{
    struct stat st;
    return lstat(c->sockdir, &st) == 0 && S_ISDIR(st.st_mode) &&
           st.st_uid == c->uid && (st.st_mode & 077) == 0;
}

static bool
accepting(const struct meter_cluster *c)
{
    return sockdir_trusted(c) && PQping(c->conninfo) == PQPING_OK;
}

enum meter_cluster_state
meter_cluster_state(const struct meter_cluster *c)
{
    struct stat st;
    char version[PATH_MAX + 16];
    if (accepting(c))
        return METER_CLUSTER_RUNNING;
    snprintf(version, sizeof(version), "%s/PG_VERSION", c->datadir);
    return stat(version, &st) == 0 ? METER_CLUSTER_STOPPED
                                   : METER_CLUSTER_ABSENT;
}

/* ---- helpers that change the file system ------------------------------ */

/* Makes directory path (one level) with mode, owned by the cluster user;
 * an existing one must be a real directory, not a link. */
static int
make_dir(const struct meter_cluster *c, const char *path, mode_t mode,
         bool private, struct meter_err *e)
{
    struct stat st;
    bool made = mkdir(path, mode) == 0;
    if (!made && errno != EEXIST)
        return meter_fail(e, "cannot create directory '%s': %s", path,
                          strerror(errno));
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return meter_fail(e, "'%s' is not a directory", path);
    /* A private directory someone else made is refused, never taken. */
    if (private && !made && st.st_uid != c->uid)
        return meter_fail(e,
                          "directory '%s' belongs to another user; "
                          "remove it",
                          path);
    if (c->as_root && st.st_uid != c->uid && chown(path, c->uid, c->gid) != 0)
        return meter_fail(e, "cannot give '%s' to user '%s': %s", path, c->user,
                          strerror(errno));
    if (private && (st.st_mode & 0777) != mode && chmod(path, mode) != 0)
        return meter_fail(e, "cannot set the mode of '%s': %s", path,
                          strerror(errno));
    return 0;
}

/* mkdir -p for the parents of var/pg, owned by whoever runs us. */
static int
make_parents(const char *path, struct meter_err *e)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) == 0)
            chmod(tmp, 0755); /* whatever the umask: the cluster's user
                                 must traverse it */
        else if (errno != EEXIST)
            return meter_fail(e, "cannot create directory '%s': %s", tmp,
                              strerror(errno));
        *p = '/';
    }
    return 0;
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return (flag == FTW_DP ? rmdir(path) : unlink(path)) == 0 ? 0 : -1;
}

static int
remove_tree(const char *path, struct meter_err *e)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0
                               : meter_fail(e, "cannot read '%s': %s", path,
                                            strerror(errno));
    if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
        return meter_fail(e, "cannot remove '%s': %s", path, strerror(errno));
    return 0;
}

struct program {
    const char *base;
    const char *exe;
    const char *const *argv;
};

/* In the child, as the cluster's user: the program, from base, its
 * standard input and output on /dev/null. */
static int
exec_program(const void *arg)
{
    const struct program *p = arg;
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
    }
    if (chdir(p->base) != 0)
        return 126;
    execv(p->exe, (char *const *)p->argv); /* execv does not modify it */
    fprintf(stderr, "meter: cannot run '%s': %s\n", p->exe, strerror(errno));
    return 127;
}

/* Runs a server program (argv[0] is a name in bindir) as the cluster's
 * user from directory base, its standard output discarded. Returns its
 * exit status, or -1 if it could not run. */
static int
run_program(const struct meter_cluster *c, const char *const argv[])
{
    char exe[PATH_MAX];
    if (snprintf(exe, sizeof(exe), "%s/%s", c->bindir, argv[0]) >=
        (int)sizeof(exe))
        return -1;
    fflush(NULL);
    struct program p = {c->base, exe, argv};
    return as_cluster_user(c, exec_program, &p);
}

static int
write_file(const struct meter_cluster *c, const char *path, const char *text,
           const char *mode, struct meter_err *e)
{
    FILE *f = fopen(path, mode);
    if (!f)
        return meter_fail(e, "cannot write '%s': %s", path, strerror(errno));
    int bad = fputs(text, f) < 0;
    bad |= fclose(f) != 0;
    if (bad)
        return meter_fail(e, "cannot write '%s': %s", path, strerror(errno));
    if (c->as_root && chown(path, c->uid, c->gid) != 0)
        return meter_fail(e, "cannot give '%s' to user '%s': %s", path, c->user,
                          strerror(errno));
    return 0;
}

/* Writes a postgresql.conf value: single-quoted, quotes doubled. */
static void
conf_quote(char *dst, size_t n, const char *s)
{
    size_t j = 0;
    dst[j++] = '\'';
    for (; *s && j + 3 < n; s++) {
        if (*s == '\'')
            dst[j++] = '\'';
        dst[j++] = *s;
    }
    dst[j++] = '\'';
    dst[j] = '\0';
}

static int
initialize(struct meter_cluster *c, struct meter_err *e)
{
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof(tmp), "%s.tmp", c->datadir);
    /* A data.tmp is what a start killed during initdb left behind. */
    if (remove_tree(tmp, e) < 0)
        return -1;
    fprintf(stderr, "meter: initializing the embedded database in %s\n",
            c->datadir);
    const char *argv[] = {"initdb",
                          "-D",
                          tmp,
                          "-U",
                          DB_USER,
                          "--auth=trust",
                          "--encoding=UTF8",
                          "--locale=C",
                          "--no-instructions",
                          NULL};
    int rc = run_program(c, argv);
    if (rc != 0) {
        remove_tree(tmp, NULL);
        return meter_fail(e, "initdb of '%s' failed (exit %d)", tmp, rc);
    }
    char conf[PATH_MAX + 32];
    snprintf(conf, sizeof(conf), "%s/postgresql.conf", tmp);
    if (write_file(c, conf,
                   "\n# meter: settings of the embedded database\n"
                   "include_if_exists = 'meter.conf'\n",
                   "a", e) < 0)
        return -1;
    if (rename(tmp, c->datadir) != 0)
        return meter_fail(e, "cannot rename '%s' to '%s': %s", tmp, c->datadir,
                          strerror(errno));
    return 0;
}

static int
create_database(const struct meter_cluster *c, struct meter_err *e)
{
    char admin[sizeof(c->conninfo) + 32];
    snprintf(admin, sizeof(admin), "%s dbname=postgres", c->conninfo);
    PGconn *db = PQconnectdb(admin);
    PGresult *r = NULL;
    int rc = -1;
    if (PQstatus(db) != CONNECTION_OK) {
        meter_fail(e, "cannot connect to the embedded database: %s",
                   PQerrorMessage(db));
        goto out;
    }
    r = PQexec(db, "SELECT 1 FROM pg_database WHERE datname = '" DB_NAME "'");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        meter_fail(e, "cannot list databases: %s", PQerrorMessage(db));
        goto out;
    }
    if (PQntuples(r) == 0) {
        PQclear(r);
        r = PQexec(db, "CREATE DATABASE " DB_NAME);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            meter_fail(e, "cannot create database '" DB_NAME "': %s",
                       PQerrorMessage(db));
            goto out;
        }
    }
    /* The worker role, made or (if a migration made it NOLOGIN, or
     * someone gave it more) set back to a login and nothing else. Under
     * a lock, and altered only when it differs: concurrent starts (the
     * tests' `db url`s) would otherwise race to create it, or fail with
     * "tuple concurrently updated". */
    PQclear(r);
    r = PQexec(db, "DO $$ BEGIN"
                   " PERFORM pg_advisory_xact_lock(7243612, 4);"
                   " IF NOT EXISTS (SELECT 1 FROM pg_roles"
                   "  WHERE rolname = '" DB_WORKER "') THEN"
                   "  CREATE ROLE " DB_WORKER " LOGIN;"
                   " ELSIF NOT EXISTS (SELECT 1 FROM pg_roles"
                   "  WHERE rolname = '" DB_WORKER "' AND rolcanlogin"
                   "  AND NOT (rolsuper OR rolcreatedb OR rolcreaterole"
                   "  OR rolreplication OR rolbypassrls)) THEN"
                   "  ALTER ROLE " DB_WORKER " LOGIN NOSUPERUSER NOCREATEDB"
                   "   NOCREATEROLE NOREPLICATION NOBYPASSRLS;"
                   " END IF;"
                   " END $$");
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        meter_fail(e, "cannot create role '" DB_WORKER "': %s",
                   PQerrorMessage(db));
        goto out;
    }
    rc = 0;
out:
    PQclear(r);
    PQfinish(db);
    return rc;
}

/* Takes var/pg/lock; returns its descriptor (closed to release). */
static int
lock_cluster(const struct meter_cluster *c, struct meter_err *e)
{
    char path[PATH_MAX + 8];
    if (make_parents(c->pgdir, e) < 0 ||
        make_dir(c, c->pgdir, 0755, false, e) < 0)
        return -1;
    snprintf(path, sizeof(path), "%s/lock", c->pgdir);
    /* O_CLOEXEC: the postmaster must not inherit (and hold) the lock. */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        meter_fail(e, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            meter_fail(e, "cannot lock '%s': %s", path, strerror(errno));
            close(fd);
            return -1;
        }
    }
    return fd;
}

/* A quarter of the machine's memory, PostgreSQL's usual advice, between
 * its default of 128 MB and 8 GB: the invoice run reads an account's
 * blocks scattered through a month's partition, and a month that fits
 * in shared buffers reads half again as fast (docs/performance.md). */
static uint64_t
shared_buffers_mb(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    uint64_t mb = pages > 0 && size > 0
                      ? (uint64_t)pages * (uint64_t)size / 4 / (1024 * 1024)
                      : 128;
    return mb < 128 ? 128 : mb > 8192 ? 8192 : mb;
}

/* With the lock held: the directories, the cluster, its settings. */
static int
prepare(struct meter_cluster *c, struct meter_err *e)
{
    if (strcmp(c->base, c->pgdir) != 0) {
        /* /var/tmp is shared: the base must be ours and private. */
        if (make_dir(c, c->base, 0700, true, e) < 0)
            return -1;
        char link[PATH_MAX + 8];
        snprintf(link, sizeof(link), "%s/data", c->pgdir);
        struct stat st;
        if (lstat(link, &st) != 0 && symlink(c->datadir, link) != 0)
            return meter_fail(e, "cannot link '%s' to '%s': %s", link,
                              c->datadir, strerror(errno));
    }
    if (make_dir(c, c->sockdir, 0700, true, e) < 0)
        return -1;
    char version[PATH_MAX + 16];
    struct stat st;
    snprintf(version, sizeof(version), "%s/PG_VERSION", c->datadir);
    if (stat(version, &st) != 0 && initialize(c, e) < 0)
        return -1;

    char sock[2 * PATH_MAX], conf[4 * PATH_MAX], path[PATH_MAX + 16];
    conf_quote(sock, sizeof(sock), c->sockdir);
    snprintf(conf, sizeof(conf),
             "# written by meter at each start; edit postgresql.conf instead\n"
             "listen_addresses = ''\n"
             "port = " PG_PORT "\n"
             "unix_socket_directories = %s\n"
             "unix_socket_permissions = 0700\n"
             "shared_buffers = %lluMB\n"
             /* Ingestion writes WAL fast: at the default 1 GB a
              * checkpoint was forced every 30-40 s, each writing 200 MB
              * (10-17 s on this machine's disk) and making every page
              * touched after it log a full image again, which forced the
              * next; batches waited seconds (docs/performance.md). */
             "max_wal_size = 4GB\n"
             "wal_compression = lz4\n"
             /* A batch over several shards is prepared on each, then
              * committed (docs/scale.md): one prepared transaction
              * at most a connection. */
             "max_prepared_transactions = 100\n"
             /* A bucket moves to another shard by logical replication
              * (meterctl shard move): every database may be a source.
              * A move left half done must not fill the disk with the
              * WAL its slot keeps: past this the slot is lost, and the
              * move, run again, copies afresh. */
             "wal_level = logical\n"
             "max_slot_wal_keep_size = 16GB\n"
             /* The launcher starts a move's subscription worker at most
              * this often: at the default 5 s, every move after another
              * waited up to 5 s to begin copying. A worker that fails
              * is started again as often, which its log then says. */
             "wal_retrieve_retry_interval = 1s\n",
             sock, (unsigned long long)shared_buffers_mb());
    snprintf(path, sizeof(path), "%s/meter.conf", c->datadir);
    return write_file(c, path, conf, "w", e);
}

int
meter_cluster_start(struct meter_cluster *c, struct meter_err *e)
{
    /* Running already: make sure of the database too, which a start
     * killed after pg_ctl may not have created. */
    if (accepting(c))
        return create_database(c, e);
    int lock = lock_cluster(c, e);
    if (lock < 0)
        return -1;
    int rc = -1;
    if (accepting(c)) { /* another process started it while we waited */
        rc = create_database(c, e);
        goto out;
    }
    if (prepare(c, e) < 0)
        goto out;
    fprintf(stderr, "meter: starting the embedded database (log: %s)\n",
            c->logfile);
    const char *argv[] = {"pg_ctl", "start", "-D", c->datadir, "-l", c->logfile,
                          "-w",     "-t",    "60", "-s",       NULL};
    int st = run_program(c, argv);
    if (st != 0) {
        meter_fail(e, "pg_ctl start failed (exit %d); see '%s'", st,
                   c->logfile);
        goto out;
    }
    rc = create_database(c, e);
out:
    close(lock);
    return rc;
}

/* With the lock held: stops the server if pg_ctl finds one running
 * (starting up or not), whatever the socket says. */
static int
stop_locked(struct meter_cluster *c, struct meter_err *e)
{
    struct stat st;
    char version[PATH_MAX + 16];
    snprintf(version, sizeof(version), "%s/PG_VERSION", c->datadir);
    if (stat(version, &st) != 0)
        return 0;
    const char *status[] = {"pg_ctl", "status", "-D", c->datadir, NULL};
    if (run_program(c, status) != 0)
        return 0; /* 3: not running */
    const char *argv[] = {"pg_ctl", "stop", "-D", c->datadir, "-m", "fast",
                          "-w",     "-t",   "60", "-s",       NULL};
    int rc = run_program(c, argv);
    if (rc != 0)
        return meter_fail(e, "pg_ctl stop failed (exit %d); see '%s'", rc,
                          c->logfile);
    return 0;
}

int
meter_cluster_stop(struct meter_cluster *c, struct meter_err *e)
{
    if (meter_cluster_state(c) == METER_CLUSTER_ABSENT)
        return 0;
    int lock = lock_cluster(c, e);
    if (lock < 0)
        return -1;
    int rc = stop_locked(c, e);
    close(lock);
    return rc;
}

int
meter_cluster_destroy(struct meter_cluster *c, struct meter_err *e)
{
    int lock = lock_cluster(c, e);
    if (lock < 0)
        return -1;
    int rc = stop_locked(c, e);
    char link[PATH_MAX + 8];
    snprintf(link, sizeof(link), "%s/data", c->pgdir);
    if (rc == 0 && (remove_tree(c->datadir, e) < 0 ||
                    remove_tree(c->logfile, e) < 0 || remove_tree(link, e) < 0))
        rc = -1;
    /* The socket directory only if it is ours. */
    if (rc == 0 && sockdir_trusted(c) && remove_tree(c->sockdir, e) < 0)
        rc = -1;
    if (rc == 0 && strcmp(c->base, c->pgdir) != 0 &&
        remove_tree(c->base, e) < 0)
        rc = -1;
    close(lock);
    return rc;
}
