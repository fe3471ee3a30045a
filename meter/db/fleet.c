/*
 * fleet.c - the catalog's relations over every shard's usage, what the
 * reports read (docs/scale.md, "Reads"): fleet_hourly_totals and
 * fleet_hourly, built for the shard map by meter_fleet_sync (migration
 * 0018) with the options of each shard's foreign server.
 *
 * PostgreSQL cannot parse a libpq conninfo, so the options are parsed
 * here, as meterd's libpq reads them (PQconninfoParse), and handed to
 * the function as JSON: the server's options, and the user mapping's
 * (user, password). A shard's conninfo names no user: the catalog
 * connection's user, as which meterd would have reached it. The
 * catalog's own shard, when it holds buckets beside other shards, is
 * reached back through the catalog connection's own host, port and
 * database (a loopback server), since a partition cannot be a view.
 */
#include "db_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

/* What postgres_fdw takes from the user mapping, or sets itself. */
static bool
mapping_option(const char *k)
{
    return strcmp(k, "user") == 0 || strcmp(k, "password") == 0 ||
           strcmp(k, "sslpassword") == 0;
}

static bool
refused_option(const char *k)
{
    return strcmp(k, "client_encoding") == 0 ||
           strcmp(k, "fallback_application_name") == 0 ||
           strcmp(k, "replication") == 0 || strcmp(k, "service") == 0 ||
           strcmp(k, "passfile") == 0;
}

/* The shard's options ({"server": {...}, "user": {...}}) from its
 * conninfo, into servers under its number; with TCP keepalives as
 * meterd's own connections have them (db_shard_connect), its own
 * settings winning. */
static int
shard_options(json_t *servers, int32_t id, const char *conninfo,
              const char *user, struct meter_err *e)
{
    char *why = NULL;
    PQconninfoOption *opts = PQconninfoParse(conninfo, &why);
    if (!opts) {
        /* Named by number: a conninfo may hold a password. */
        int rc = meter_fail(
            e, "the conninfo of shard %" PRId32 " does not parse: %s", id,
            why ? why : "out of memory");
        PQfreemem(why);
        return rc;
    }
    /* Each made into o at once: o owns them, and jansson frees a value
     * it cannot set. */
    json_t *o = json_object();
    int rc = 0;
    if (json_object_set_new(o, "server", json_object()) < 0 ||
        json_object_set_new(o, "user", json_object()) < 0) {
        rc = meter_fail(e, "out of memory");
        goto out;
    }
    json_t *server = json_object_get(o, "server"),
           *mapping = json_object_get(o, "user");
    static const char *const keepalives[][2] = {{"keepalives", "1"},
                                                {"keepalives_idle", "10"},
                                                {"keepalives_interval", "5"},
                                                {"keepalives_count", "3"}};
    for (size_t k = 0; k < sizeof(keepalives) / sizeof(*keepalives); k++)
        json_object_set_new(server, keepalives[k][0],
                            json_string(keepalives[k][1]));
    for (PQconninfoOption *p = opts; p->keyword; p++) {
        if (!p->val || !*p->val || refused_option(p->keyword))
            continue;
        json_t *into = mapping_option(p->keyword) ? mapping : server;
        if (json_object_set_new(into, p->keyword, json_string(p->val)) < 0) {
            rc = meter_fail(e, "out of memory");
            goto out;
        }
    }
    if (!json_object_get(mapping, "user") && user &&
        json_object_set_new(mapping, "user", json_string(user)) < 0) {
        rc = meter_fail(e, "out of memory");
        goto out;
    }
    char key[16];
    snprintf(key, sizeof(key), "%" PRId32, id);
    if (json_object_set(servers, key, o) < 0)
        rc = meter_fail(e, "out of memory");
out:
    json_decref(o);
    PQconninfoFree(opts);
    return rc;
}

/* The catalog's own database as a libpq conninfo, from its connection:
 * host (or socket directory), port, database, user, and the password
 * if it took one. */
static char *
loopback_conninfo(PGconn *catalog)
{
    struct meter_buf b = {0};
    const char *k[] = {"host", "port", "dbname", "user", "password"};
    const char *v[] = {PQhost(catalog), PQport(catalog), PQdb(catalog),
                       PQuser(catalog), PQpass(catalog)};
    for (size_t i = 0; i < sizeof(k) / sizeof(*k); i++) {
        if (!v[i] || !*v[i])
            continue;
        meter_buf_printf(&b, "%s%s='", b.len ? " " : "", k[i]);
        for (const char *s = v[i]; *s; s++)
            meter_buf_printf(&b, "%s%c", *s == '\'' || *s == '\\' ? "\\" : "",
                             *s);
        meter_buf_str(&b, "'");
    }
    if (b.failed) {
        meter_buf_release(&b);
        return NULL;
    }
    return b.p ? b.p : strdup("");
}

/* Builds the fleet relations for the map, always (force) or only if the
 * map changed since they were built; *built says whether it did. */
static enum meter_db_status
fleet_sync(PGconn *catalog, bool force, bool *built, struct meter_err *e)
{
    PGresult *r = NULL;
    json_t *servers = json_object();
    char *text = NULL;
    *built = false;
    enum meter_db_status st =
        servers ? meter_db_exec(catalog, "cannot read the shards",
                                /* The shards holding buckets. */
                                "SELECT s.shard_id, s.conninfo FROM shards s"
                                " WHERE EXISTS (SELECT 1 FROM shard_buckets b"
                                " WHERE b.shard_id = s.shard_id)"
                                " ORDER BY s.shard_id",
                                0, NULL, NULL, NULL, &r, e)
                : db_hard(e, "out of memory");
    for (int i = 0; st >= 0 && i < PQntuples(r); i++) {
        int32_t id;
        char *own = NULL;
        if (db_get_int32(r, i, 0, &id, e) < 0) {
            st = METER_DB_HARD;
            break;
        }
        if (PQgetisnull(r, i, 1) && !(own = loopback_conninfo(catalog))) {
            st = db_hard(e, "out of memory");
            break;
        }
        if (shard_options(servers, id, own ? own : PQgetvalue(r, i, 1),
                          PQuser(catalog), e) < 0)
            st = METER_DB_HARD;
        free(own);
    }
    PQclear(r);
    r = NULL;
    if (st >= 0 && !(text = json_dumps(servers, JSON_COMPACT)))
        st = db_hard(e, "out of memory");
    if (st >= 0) {
        const char *v[] = {text, force ? "true" : "false"};
        st = meter_db_exec(catalog, "cannot build the reads over shards",
                           "SELECT meter_fleet_sync($1::jsonb, $2::bool)", 2, v,
                           NULL, NULL, &r, e);
    }
    if (st >= 0 && db_get_bool(r, 0, 0, built, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    free(text);
    json_decref(servers);
    return st;
}

int
meter_db_fleet_sync(PGconn *catalog, struct meter_err *e)
{
    bool built;
    return fleet_sync(catalog, true, &built, e) < 0 ? -1 : 0;
}

enum meter_db_status
db_fleet_ready(PGconn *db, struct meter_err *e)
{
    PGresult *r;
    bool stale = false;
    enum meter_db_status st =
        meter_db_exec(db, "cannot read the shard map", "SELECT fleet_stale()",
                      0, NULL, NULL, NULL, &r, e);
    if (st >= 0 && db_get_bool(r, 0, 0, &stale, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    if (st < 0 || !stale)
        return st;
    bool built;
    return fleet_sync(db, false, &built, e);
}
