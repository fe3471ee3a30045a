/*
 * migrate.c - applies migrations/NNNN_name.sql in order, each in one
 * transaction with its record in schema_migrations, and refuses to run
 * when a file that was applied has changed since.
 *
 * Checksums are SHA-256 of the file's bytes, computed by the server
 * (sha256(bytea)) so that the project needs no crypto library here.
 */
#include "db_int.h"

#include <ctype.h>
#include <stdbool.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Any constant: the key of the advisory lock migrators serialize on. */
#define MIGRATE_LOCK_KEY "7243612001"
#define MAX_MIGRATION_BYTES (16 * 1024 * 1024)

static const char create_table_sql[] =
    "CREATE TABLE IF NOT EXISTS schema_migrations ("
    " version integer PRIMARY KEY CHECK (version > 0),"
    " file text NOT NULL,"
    " sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),"
    " applied_at timestamptz NOT NULL DEFAULT now());"
    "COMMENT ON TABLE schema_migrations IS"
    " 'migrations applied by meterctl migrate, one row each';"
    "COMMENT ON COLUMN schema_migrations.version IS"
    " 'NNNN of the file migrations/NNNN_name.sql';"
    "COMMENT ON COLUMN schema_migrations.file IS"
    " 'base name of the file applied';"
    "COMMENT ON COLUMN schema_migrations.sha256 IS"
    " 'SHA-256 of the file as applied; a changed file is refused';"
    "COMMENT ON COLUMN schema_migrations.applied_at IS"
    " 'when the migration was committed';";

int
meter_migrations_default_dir(char *out, size_t n, struct meter_err *e)
{
    const char *env = getenv("METER_MIGRATIONS_DIR");
    if (!env || !*env)
        return meter_data_dir("migrations", out, n, e);
    if ((size_t)snprintf(out, n, "%s", env) >= n)
        return meter_fail(e, "METER_MIGRATIONS_DIR is too long");
    return 0;
}

int
meter_migration_version(const char *file)
{
    size_t n = strlen(file);
    if (n < 10 || strcmp(file + n - 4, ".sql") != 0 || file[4] != '_')
        return -1;
    int version = 0;
    for (int i = 0; i < 4; i++) {
        if (!isdigit((unsigned char)file[i]))
            return -1;
        version = version * 10 + (file[i] - '0');
    }
    for (size_t i = 5; i < n - 4; i++)
        if (!islower((unsigned char)file[i]) &&
            !isdigit((unsigned char)file[i]) && file[i] != '_')
            return -1;
    return version > 0 ? version : -1;
}

/* A migration's text: capped, and free of NUL bytes (it goes to the
 * server as one string). */
static int
read_migration(const char *path, char **out, size_t *len, struct meter_err *e)
{
    if (meter_file_read(path, MAX_MIGRATION_BYTES, out, len, e) < 0)
        return -1;
    if (memchr(*out, '\0', *len)) {
        free(*out);
        *out = NULL;
        return meter_fail(e, "'%s' holds a NUL byte", path);
    }
    return 0;
}

static int
by_version(const void *a, const void *b)
{
    const struct meter_migration *x = a, *y = b;
    return (x->version > y->version) - (x->version < y->version);
}

int
meter_migrations_load(const char *dir, struct meter_migration_set *set,
                      struct meter_err *e)
{
    set->items = NULL;
    set->n = 0;
    size_t cap = 0;
    DIR *d = opendir(dir);
    if (!d)
        return meter_fail(e, "cannot open migrations directory '%s': %s", dir,
                          strerror(errno));
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 4 || strcmp(de->d_name + n - 4, ".sql") != 0)
            continue;
        int version = meter_migration_version(de->d_name);
        if (version < 0) {
            meter_fail(e,
                       "migration file '%s/%s' is not named NNNN_name.sql "
                       "(name of a-z, 0-9 and _)",
                       dir, de->d_name);
            goto fail;
        }
        if (set->n == cap) {
            cap = cap ? 2 * cap : 16;
            void *p = realloc(set->items, cap * sizeof(*set->items));
            if (!p) {
                meter_fail(e, "out of memory");
                goto fail;
            }
            set->items = p;
        }
        struct meter_migration *m = &set->items[set->n];
        char path[4096];
        if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
            (int)sizeof(path)) {
            meter_fail(e, "path too long: '%s'", dir);
            goto fail;
        }
        m->version = version;
        m->sql = NULL;
        m->file = strdup(de->d_name);
        if (!m->file) {
            meter_fail(e, "out of memory");
            goto fail;
        }
        set->n++;
        if (read_migration(path, &m->sql, &m->sql_len, e) < 0)
            goto fail;
    }
    closedir(d);
    d = NULL;
    if (set->n > 0)
        qsort(set->items, set->n, sizeof(*set->items), by_version);
    for (size_t i = 1; i < set->n; i++) {
        if (set->items[i].version == set->items[i - 1].version) {
            meter_fail(e, "migrations '%s' and '%s' have the same version",
                       set->items[i - 1].file, set->items[i].file);
            goto fail;
        }
    }
    return 0;
fail:
    if (d)
        closedir(d);
    meter_migrations_release(set);
    return -1;
}

void
meter_migrations_release(struct meter_migration_set *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->n; i++) {
        free(set->items[i].file);
        free(set->items[i].sql);
    }
    free(set->items);
    set->items = NULL;
    set->n = 0;
}

/* ---- database side ---------------------------------------------------- */

static int
exec_ok(PGconn *db, const char *sql, struct meter_err *e)
{
    PGresult *r = PQexec(db, sql);
    ExecStatusType st = PQresultStatus(r);
    int rc = 0;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        rc = meter_fail(e, "database error: %s", PQerrorMessage(db));
    PQclear(r);
    return rc;
}

/* The SHA-256 of m's contents, as 64 hex digits. */
static int
checksum(PGconn *db, const struct meter_migration *m, char out[65],
         struct meter_err *e)
{
    struct db_params p = {0};
    db_param_bytes(&p, m->sql, (int)m->sql_len);
    PGresult *r = PQexecParams(db, "SELECT encode(sha256($1::bytea), 'hex')",
                               p.n, NULL, p.v, p.len, p.fmt, 0);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        rc = meter_fail(e, "cannot checksum '%s': %s", m->file,
                        PQerrorMessage(db));
    else if (db_get_text(r, 0, 0, out, 65, e) < 0)
        rc = -1;
    PQclear(r);
    return rc;
}

struct applied {
    int version;
    char file[256];
    char sha256[65];
    char applied_at[64];
};

/* Reads schema_migrations into *out, by version; creates the table if
 * missing when create is set, else treats a missing one as empty. */
static int
read_applied(PGconn *db, bool create, struct applied **out, size_t *n,
             struct meter_err *e)
{
    *out = NULL;
    *n = 0;
    if (create) {
        if (exec_ok(db, create_table_sql, e) < 0)
            return -1;
    } else {
        PGresult *r = PQexec(db, "SELECT to_regclass('schema_migrations')"
                                 " IS NOT NULL");
        if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
            meter_fail(e, "cannot read schema_migrations: %s",
                       PQerrorMessage(db));
            PQclear(r);
            return -1;
        }
        bool exists;
        int got = db_get_bool(r, 0, 0, &exists, e);
        PQclear(r);
        if (got < 0)
            return -1;
        if (!exists) {
            *out = calloc(1, sizeof(**out));
            return *out ? 0 : meter_fail(e, "out of memory");
        }
    }
    PGresult *r = PQexec(db, "SELECT version, file, sha256,"
                             " to_char(applied_at AT TIME ZONE 'UTC',"
                             " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
                             " FROM schema_migrations ORDER BY version");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        meter_fail(e, "cannot read schema_migrations: %s", PQerrorMessage(db));
        PQclear(r);
        return -1;
    }
    size_t rows = (size_t)PQntuples(r);
    struct applied *a = calloc(rows ? rows : 1, sizeof(*a));
    if (!a) {
        PQclear(r);
        return meter_fail(e, "out of memory");
    }
    for (int i = 0; i < (int)rows; i++) {
        struct applied *x = &a[i];
        if (db_get_int(r, i, 0, &x->version, e) < 0 ||
            db_get_text(r, i, 1, x->file, sizeof(x->file), e) < 0 ||
            db_get_text(r, i, 2, x->sha256, sizeof(x->sha256), e) < 0 ||
            db_get_text(r, i, 3, x->applied_at, sizeof(x->applied_at), e) < 0) {
            free(a);
            PQclear(r);
            return -1;
        }
    }
    PQclear(r);
    *out = a;
    *n = rows;
    return 0;
}

static const struct applied *
find_applied(const struct applied *a, size_t n, int version)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].version == version)
            return &a[i];
    return NULL;
}

static const struct meter_migration *
find_file(const struct meter_migration_set *set, int version)
{
    for (size_t i = 0; i < set->n; i++)
        if (set->items[i].version == version)
            return &set->items[i];
    return NULL;
}

/* The line of sql at 1-based character position pos. */
static int
line_of(const char *sql, long pos)
{
    int line = 1;
    for (long i = 0; sql[i] && i < pos - 1; i++)
        line += sql[i] == '\n';
    return line;
}

static int
apply_one(PGconn *db, const struct meter_migration *m, const char *sha,
          struct meter_err *e)
{
    if (exec_ok(db, "BEGIN", e) < 0)
        return -1;
    PGresult *r = PQexec(db, m->sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        const char *pos = PQresultErrorField(r, PG_DIAG_STATEMENT_POSITION);
        const char *msg = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        uint64_t at;
        if (pos && meter_parse_uint(pos, 1, INT32_MAX, &at) == 0)
            meter_fail(e, "migration '%s' failed at line %d: %s", m->file,
                       line_of(m->sql, (long)at),
                       msg ? msg : PQerrorMessage(db));
        else
            meter_fail(e, "migration '%s' failed: %s", m->file,
                       msg ? msg : PQerrorMessage(db));
        PQclear(r);
        PQclear(PQexec(db, "ROLLBACK"));
        return -1;
    }
    PQclear(r);
    struct db_params p = {0};
    db_param_int32(&p, m->version);
    db_param_text(&p, m->file);
    db_param_text(&p, sha);
    r = PQexecParams(db,
                     "INSERT INTO schema_migrations (version, file, sha256)"
                     " VALUES ($1, $2, $3)",
                     p.n, NULL, p.v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        meter_fail(e, "cannot record migration '%s': %s", m->file,
                   PQerrorMessage(db));
        PQclear(r);
        PQclear(PQexec(db, "ROLLBACK"));
        return -1;
    }
    PQclear(r);
    if (exec_ok(db, "COMMIT", e) < 0)
        return meter_fail(e, "cannot commit migration '%s': %s", m->file,
                          PQerrorMessage(db));
    return 0;
}

int
meter_migrate(PGconn *db, const struct meter_migration_set *set,
              meter_migrate_cb *cb, void *arg, int *applied, int *version,
              struct meter_err *e)
{
    struct applied *done = NULL;
    size_t ndone = 0;
    char(*sums)[65] = NULL;
    int rc = -1;
    *applied = 0;
    *version = 0;

    if (exec_ok(db, "SELECT pg_advisory_lock(" MIGRATE_LOCK_KEY ")", e) < 0)
        return -1;
    if (read_applied(db, true, &done, &ndone, e) < 0)
        goto out;
    sums = calloc(set->n ? set->n : 1, sizeof(*sums));
    if (!sums) {
        meter_fail(e, "out of memory");
        goto out;
    }
    /* Check everything before changing anything. */
    for (size_t i = 0; i < set->n; i++)
        if (checksum(db, &set->items[i], sums[i], e) < 0)
            goto out;
    for (size_t i = 0; i < ndone; i++) {
        const struct meter_migration *m = find_file(set, done[i].version);
        if (!m) {
            meter_fail(e,
                       "applied migration '%s' (version %d) has no file in "
                       "the migrations directory; refusing to migrate",
                       done[i].file, done[i].version);
            goto out;
        }
        if (strcmp(sums[m - set->items], done[i].sha256) != 0) {
            meter_fail(e,
                       "migration '%s' has changed since it was applied on "
                       "%s; refusing to migrate (write a new migration "
                       "instead of editing an applied one)",
                       m->file, done[i].applied_at);
            goto out;
        }
        *version = done[i].version;
    }
    for (size_t i = 0; i < set->n; i++) {
        const struct meter_migration *m = &set->items[i];
        if (find_applied(done, ndone, m->version))
            continue;
        if (m->version < *version) {
            meter_fail(e,
                       "migration '%s' is older than the schema's version "
                       "%d and was never applied; renumber it",
                       m->file, *version);
            goto out;
        }
        if (apply_one(db, m, sums[i], e) < 0)
            goto out;
        (*applied)++;
        *version = m->version;
        if (cb)
            cb(m, arg);
    }
    rc = 0;
out:
    PQclear(PQexec(db, "SELECT pg_advisory_unlock(" MIGRATE_LOCK_KEY ")"));
    free(sums);
    free(done);
    return rc;
}

int
meter_migrate_status(PGconn *db, const struct meter_migration_set *set,
                     struct meter_migration_status **out, size_t *n,
                     struct meter_err *e)
{
    struct applied *done = NULL;
    size_t ndone = 0, k = 0;
    struct meter_migration_status *s = NULL;
    int rc = -1;
    *out = NULL;
    *n = 0;
    if (read_applied(db, false, &done, &ndone, e) < 0)
        return -1;
    s = calloc(set->n + ndone + 1, sizeof(*s));
    if (!s) {
        meter_fail(e, "out of memory");
        goto out;
    }
    /* Merge the two version-ordered lists. */
    size_t i = 0, j = 0;
    while (i < set->n || j < ndone) {
        const struct meter_migration *m = i < set->n ? &set->items[i] : NULL;
        const struct applied *a = j < ndone ? &done[j] : NULL;
        struct meter_migration_status *o = &s[k++];
        if (a && (!m || a->version < m->version)) {
            o->version = a->version;
            o->state = METER_MIGRATION_MISSING;
            snprintf(o->file, sizeof(o->file), "%s", a->file);
            snprintf(o->applied_at, sizeof(o->applied_at), "%s", a->applied_at);
            j++;
            continue;
        }
        if (!m) /* not reached: a is set and taken above */
            break;
        o->version = m->version;
        snprintf(o->file, sizeof(o->file), "%s", m->file);
        o->state = METER_MIGRATION_PENDING;
        if (a && a->version == m->version) {
            char sum[65];
            if (checksum(db, m, sum, e) < 0)
                goto out;
            o->state = strcmp(sum, a->sha256) == 0 ? METER_MIGRATION_APPLIED
                                                   : METER_MIGRATION_CHANGED;
            snprintf(o->applied_at, sizeof(o->applied_at), "%s", a->applied_at);
            j++;
        }
        i++;
    }
    *out = s;
    *n = k;
    s = NULL;
    rc = 0;
out:
    free(s);
    free(done);
    return rc;
}

enum meter_db_status
meter_db_schema_at(PGconn *db, char *file, size_t n, int *version,
                   struct meter_err *e)
{
    PGresult *r = NULL;
    bool exists = false;
    char name[256];
    *version = 0;
    if (n)
        file[0] = '\0';
    /* A database never migrated has no table to read: it is at no
     * migration, which is an answer, not an error. */
    enum meter_db_status st =
        meter_db_exec(db, "cannot read the schema's migrations",
                      "SELECT to_regclass('schema_migrations') IS NOT NULL", 0,
                      NULL, NULL, NULL, &r, e);
    if (st < 0)
        goto out;
    if (db_get_bool(r, 0, 0, &exists, e) < 0) {
        st = METER_DB_HARD;
        goto out;
    }
    PQclear(r);
    r = NULL;
    if (!exists) {
        st = METER_DB_NONE;
        goto out;
    }
    st = meter_db_exec(db, "cannot read the schema's migrations",
                       "SELECT version, file FROM schema_migrations"
                       " ORDER BY version DESC LIMIT 1",
                       0, NULL, NULL, NULL, &r, e);
    if (st != METER_DB_ROWS)
        goto out;
    if (db_get_int(r, 0, 0, version, e) < 0 ||
        db_get_text(r, 0, 1, name, sizeof(name), e) < 0) {
        st = METER_DB_HARD;
        goto out;
    }
    size_t len = strlen(name);
    if (len > 4 && strcmp(name + len - 4, ".sql") == 0)
        name[len - 4] = '\0';
    if ((size_t)snprintf(file, n, "%s", name) >= n) {
        st = METER_DB_HARD;
        meter_fail(e, "the migration name '%s' is too long", name);
    }
out:
    PQclear(r);
    return st;
}
