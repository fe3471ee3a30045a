/*
 * test_sessions.c - browser sessions in the database layer, against a
 * real PostgreSQL: a session authenticates as its key with its role,
 * account and CSRF token; only the token's hash is stored; an expired,
 * deleted or revoked key's session authenticates nothing; a revoked key
 * gets no new session; sign-ins sweep expired rows; a key holds at most
 * its cap of live sessions, its oldest ended, also when another
 * connection (another meterd) signs the key in at the same time; the
 * schema refuses malformed rows.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "meter_db.h"
#include "testdb.h"

/* Creates a key of role (and account, for role account): its id. */
static int64_t
key(PGconn *db, enum meter_role role, const char *account, const char *name)
{
    char token[METER_TOKEN_LEN + 1];
    int64_t id = 0;
    struct meter_err e = {{0}};
    if (meter_db_key_create(db, role, account, name, NULL, token, &id, &e) !=
        METER_DB_ROWS) {
        fprintf(stderr, "cannot create key %s: %s\n", name, e.msg);
        exit(1);
    }
    return id;
}

static bool
is_hex(const char *s, size_t n)
{
    return strlen(s) == n && strspn(s, "0123456789abcdef") == n;
}

static void
test_lifecycle(PGconn *db)
{
    struct meter_err e = {{0}};
    char token[METER_TOKEN_LEN + 1], csrf[METER_CSRF_LEN + 1];
    char seen[METER_CSRF_LEN + 1];
    struct meter_principal who;
    int64_t ended = 0;
    int64_t fin = key(db, METER_ROLE_FINANCE, NULL, "fin");
    int64_t acct = key(db, METER_ROLE_ACCOUNT, "acme", "acme-reader");

    CHECK(meter_db_session_create(db, fin, 600, 20, token, csrf, &ended, &e) ==
          METER_DB_ROWS);
    CHECK(strncmp(token, "mts_", 4) == 0 && is_hex(token + 4, 64));
    CHECK(is_hex(csrf, 64));
    memset(&who, 0, sizeof(who));
    CHECK(meter_db_session_lookup(db, token, &who, seen, &e) == METER_DB_ROWS);
    CHECK(who.key_id == fin && who.role == METER_ROLE_FINANCE &&
          who.account_id[0] == '\0' && !who.scoped);
    CHECK_STR(seen, csrf);
    /* Only the hash is stored: not the token, anywhere in the row. */
    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM web_sessions"
             " WHERE session_hash = sha256('%s'::bytea)",
             token);
    CHECK(testdb_count(db, sql) == 1);
    PGresult *r = PQexec(db, "SELECT encode(session_hash, 'hex') || csrf"
                             " FROM web_sessions");
    CHECK(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
          !strstr(PQgetvalue(r, 0, 0), token + 4));
    PQclear(r);

    /* Another token, a bearer key's token, a truncated one: nothing. */
    char other[METER_TOKEN_LEN + 1];
    memcpy(other, token, sizeof(other));
    other[10] = other[10] == 'a' ? 'b' : 'a';
    CHECK(meter_db_session_lookup(db, other, &who, seen, &e) == METER_DB_NONE);
    CHECK(meter_db_session_lookup(db, "mts_", &who, seen, &e) == METER_DB_NONE);

    /* An account key's session is its account's. */
    char t2[METER_TOKEN_LEN + 1], c2[METER_CSRF_LEN + 1];
    CHECK(meter_db_session_create(db, acct, 600, 20, t2, c2, &ended, &e) ==
          METER_DB_ROWS);
    CHECK(strcmp(t2, token) != 0 && strcmp(c2, csrf) != 0);
    CHECK(meter_db_session_lookup(db, t2, &who, seen, &e) == METER_DB_ROWS);
    CHECK(who.key_id == acct && who.role == METER_ROLE_ACCOUNT);
    CHECK_STR(who.account_id, "acme");

    /* Expired: authenticates nothing. */
    CHECK(testdb_count(db, "WITH u AS (UPDATE web_sessions SET"
                           " created_at = now() - interval '2 hours',"
                           " expires_at = now() - interval '1 second'"
                           " WHERE key_id = (SELECT key_id FROM api_keys"
                           " WHERE name = 'acme-reader') RETURNING 1)"
                           " SELECT count(*) FROM u") == 1);
    CHECK(meter_db_session_lookup(db, t2, &who, seen, &e) == METER_DB_NONE);
    /* ... and the next sign-in deletes it. */
    char t3[METER_TOKEN_LEN + 1], c3[METER_CSRF_LEN + 1];
    CHECK(meter_db_session_create(db, fin, 600, 20, t3, c3, &ended, &e) ==
          METER_DB_ROWS);
    CHECK(testdb_count(db, "SELECT count(*) FROM web_sessions") == 2);
    CHECK(testdb_count(db, "SELECT count(*) FROM web_sessions"
                           " WHERE expires_at <= now()") == 0);

    /* Signed out: gone, and a second sign-out finds nothing. */
    CHECK(meter_db_session_delete(db, t3, &e) == METER_DB_ROWS);
    CHECK(meter_db_session_lookup(db, t3, &who, seen, &e) == METER_DB_NONE);
    CHECK(meter_db_session_delete(db, t3, &e) == METER_DB_NONE);
    CHECK(meter_db_session_lookup(db, token, &who, seen, &e) == METER_DB_ROWS);

    /* Revoked by hand (not by meterctl): its sessions end at once, by
     * the join; revoked as meterctl does, their rows go too. */
    CHECK(testdb_count(db, "WITH u AS (UPDATE api_keys SET revoked_at = now()"
                           " WHERE name = 'fin' RETURNING 1)"
                           " SELECT count(*) FROM u") == 1);
    CHECK(meter_db_session_lookup(db, token, &who, seen, &e) == METER_DB_NONE);
    CHECK(meter_db_session_create(db, fin, 600, 20, t3, c3, &ended, &e) ==
          METER_DB_NONE);
    int64_t adm = key(db, METER_ROLE_ADMIN, NULL, "adm");
    CHECK(meter_db_session_create(db, adm, 600, 20, t3, c3, &ended, &e) ==
          METER_DB_ROWS);
    CHECK(meter_db_key_revoke(db, adm, &e) == METER_DB_ROWS);
    CHECK(meter_db_session_lookup(db, t3, &who, seen, &e) == METER_DB_NONE);
    CHECK(testdb_count(db, "SELECT count(*) FROM web_sessions"
                           " WHERE key_id = (SELECT key_id FROM api_keys"
                           " WHERE name = 'adm')") == 0);

    CHECK(meter_db_session_create(db, 999999, 600, 20, t3, c3, &ended, &e) ==
          METER_DB_NONE);
    CHECK(meter_db_session_create(db, adm, 0, 20, t3, c3, &ended, &e) ==
          METER_DB_HARD);
    CHECK(strstr(e.msg, "0 seconds") != NULL);
}

/* Whether token still signs in. */
static bool
live(PGconn *db, const char *token)
{
    struct meter_principal who;
    char seen[METER_CSRF_LEN + 1];
    struct meter_err e = {{0}};
    return meter_db_session_lookup(db, token, &who, seen, &e) == METER_DB_ROWS;
}

/* A cap of 3: the fourth sign-in ends the first (the oldest), the fifth
 * the second; a cap of 1 keeps only the newest. Expired sessions do not
 * count. */
static void
test_cap(PGconn *db)
{
    struct meter_err e = {{0}};
    char t[5][METER_TOKEN_LEN + 1], c[METER_CSRF_LEN + 1];
    int64_t ended = -1;
    int64_t k = key(db, METER_ROLE_ADMIN, NULL, "capped");
    /* An expired session of the key is not one of its live ones. */
    char sql[256];
    snprintf(sql, sizeof(sql),
             "INSERT INTO web_sessions (session_hash, key_id, csrf, created_at,"
             " expires_at) VALUES (decode(repeat('7a', 32), 'hex'), %lld,"
             " repeat('a', 64), now() - interval '2 days',"
             " now() - interval '1 day')",
             (long long)k);
    PQclear(PQexec(db, sql));
    for (int i = 0; i < 3; i++) {
        CHECK(meter_db_session_create(db, k, 600, 3, t[i], c, &ended, &e) ==
              METER_DB_ROWS);
        CHECK(ended == 0);
        /* created_at is the transaction's time: apart, so that "oldest"
         * is not decided by the tie-break. */
        usleep(2000);
    }
    for (int i = 0; i < 3; i++)
        CHECK(live(db, t[i]));
    CHECK(meter_db_session_create(db, k, 600, 3, t[3], c, &ended, &e) ==
          METER_DB_ROWS);
    CHECK(ended == 1);
    CHECK(!live(db, t[0]) && live(db, t[1]) && live(db, t[2]) &&
          live(db, t[3]));
    usleep(2000);
    CHECK(meter_db_session_create(db, k, 600, 3, t[4], c, &ended, &e) ==
          METER_DB_ROWS);
    CHECK(ended == 1);
    CHECK(!live(db, t[1]) && live(db, t[2]) && live(db, t[3]) &&
          live(db, t[4]));
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM web_sessions WHERE key_id = %lld"
             " AND expires_at > now()",
             (long long)k);
    CHECK(testdb_count(db, sql) == 3);
    /* A cap of 1: the newest only (two ended). */
    CHECK(meter_db_session_create(db, k, 600, 1, t[0], c, &ended, &e) ==
          METER_DB_ROWS);
    CHECK(ended == 3);
    CHECK(live(db, t[0]) && !live(db, t[4]));
    CHECK(testdb_count(db, sql) == 1);
    CHECK(meter_db_session_create(db, k, 600, 0, t[1], c, &ended, &e) ==
          METER_DB_HARD);
    CHECK(strstr(e.msg, "a cap of 0") != NULL);
}

/* A sign-in on another connection. */
struct racer {
    const char *conninfo;
    int64_t key_id;
    enum meter_db_status st;
};

static void *
race(void *arg)
{
    struct racer *r = arg;
    struct meter_err e = {{0}};
    char t[METER_TOKEN_LEN + 1], c[METER_CSRF_LEN + 1];
    int64_t ended;
    PGconn *db = meter_db_connect(r->conninfo, &e);
    r->st =
        db ? meter_db_session_create(db, r->key_id, 600, 2, t, c, &ended, &e)
           : METER_DB_HARD;
    PQfinish(db);
    return NULL;
}

/* Two meterd sign a key in at once: the cap holds in the database. One
 * sign-in is held open half way (its key locked as the layer locks it,
 * its session inserted, not committed) while another connection's
 * starts; once the first commits, the key holds its cap, not one more. */
static void
test_cap_concurrent(PGconn *db, const char *conninfo)
{
    struct meter_err e = {{0}};
    char t[METER_TOKEN_LEN + 1], c[METER_CSRF_LEN + 1];
    int64_t ended;
    int64_t k = key(db, METER_ROLE_ADMIN, NULL, "raced");
    CHECK(meter_db_session_create(db, k, 600, 2, t, c, &ended, &e) ==
          METER_DB_ROWS);
    PGconn *other = meter_db_connect(conninfo, &e);
    CHECK(other != NULL);
    if (!other)
        return;
    char sql[512];
    snprintf(sql, sizeof(sql),
             "BEGIN; SELECT 1 FROM api_keys WHERE key_id = %lld"
             " FOR NO KEY UPDATE;"
             " INSERT INTO web_sessions (session_hash, key_id, csrf,"
             " expires_at) VALUES (decode(repeat('7b', 32), 'hex'), %lld,"
             " repeat('a', 64), now() + interval '1 hour')",
             (long long)k, (long long)k);
    PGresult *r = PQexec(other, sql);
    CHECK(PQresultStatus(r) == PGRES_COMMAND_OK);
    PQclear(r);
    struct racer racer = {conninfo, k, METER_DB_HARD};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, race, &racer) == 0);
    usleep(300000); /* the racer counts the key's sessions, or waits */
    PQclear(PQexec(other, "COMMIT"));
    pthread_join(th, NULL);
    CHECK(racer.st == METER_DB_ROWS);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM web_sessions WHERE key_id = %lld"
             " AND expires_at > now()",
             (long long)k);
    long n = testdb_count(db, sql);
    if (n != 2)
        fprintf(stderr, "key of cap 2 signed in at once twice: %ld live\n", n);
    CHECK(n == 2);
    PQfinish(other);
}

/* The table refuses what the layer never writes. */
static void
test_constraints(PGconn *db)
{
    static const char *const bad[] = {
        /* a hash of another length */
        "INSERT INTO web_sessions (session_hash, key_id, csrf, expires_at)"
        " SELECT '\\x01', key_id, repeat('a', 64), now() + interval '1 hour'"
        " FROM api_keys LIMIT 1",
        /* a CSRF token that is not 64 hex digits */
        "INSERT INTO web_sessions (session_hash, key_id, csrf, expires_at)"
        " SELECT decode(repeat('77', 32), 'hex'), key_id, repeat('A', 64),"
        " now() + interval '1 hour' FROM api_keys LIMIT 1",
        /* ending before it starts */
        "INSERT INTO web_sessions (session_hash, key_id, csrf, expires_at)"
        " SELECT decode(repeat('78', 32), 'hex'), key_id, repeat('a', 64),"
        " now() - interval '1 hour' FROM api_keys LIMIT 1",
        /* no such key */
        "INSERT INTO web_sessions (session_hash, key_id, csrf, expires_at)"
        " VALUES (decode(repeat('79', 32), 'hex'), 999999, repeat('a', 64),"
        " now() + interval '1 hour')",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        PGresult *r = PQexec(db, bad[i]);
        if (PQresultStatus(r) == PGRES_COMMAND_OK) {
            fprintf(stderr, "accepted: %s\n", bad[i]);
            test_failures++;
        }
        PQclear(r);
    }
}

int
main(void)
{
    struct testdb t;
    PGconn *db = testdb_create_migrated(&t);
    test_lifecycle(db);
    test_cap(db);
    test_cap_concurrent(db, t.conninfo);
    test_constraints(db);
    testdb_drop(&t, db);
    return test_result();
}
