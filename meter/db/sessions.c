/*
 * sessions.c - browser sessions: created at sign-in (a key holding at
 * most a cap of live ones, its oldest ended past it), looked up on each
 * request that carries the cookie, deleted at sign-out.
 *
 * They live in the database, not in meterd's memory, so that any
 * number of meterd behind a balancer share them and a sign-out or a
 * revoked key ends a session everywhere on its next request. The
 * lookup joins the key: a revoked key's sessions end at once, whether
 * or not its rows were deleted yet.
 */
#include "db_int.h"

#include <string.h>

/* The token of a new session: "mts_" (not the keys' "mtr_", so that a
 * token found in a log or a paste says what it is) and 64 hex digits. */
static int
session_token_new(char token[METER_TOKEN_LEN + 1])
{
    memcpy(token, "mts_", 4);
    return meter_random_hex(token + 4, 32);
}

/* A session to start: the parameters of its statement, and what it
 * ended. */
struct session_new {
    struct db_params p; /* hash, key, csrf, lifetime, cap */
    int64_t ended;
};

/* One attempt of a sign-in's transaction (meter_db_transaction). */
static enum meter_db_status
session_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct session_new *s = arg;
    /* The key's row locked first: two sign-ins of one key, here or on
     * another meterd, take turns, and the second's count of live
     * sessions (a statement of its own, so a snapshot taken after the
     * first committed) includes the first's. NONE: the key is unknown
     * or was revoked since it was looked up. */
    enum meter_db_status st =
        meter_db_exec(db, "cannot start a session",
                      "SELECT 1 FROM api_keys WHERE key_id = $1"
                      " AND revoked_at IS NULL FOR NO KEY UPDATE",
                      1, s->p.v + 1, NULL, NULL, NULL, e);
    if (st != METER_DB_ROWS)
        return st;
    /* Expired sessions are deleted here, a bounded batch at a time and
     * skipping rows another sign-in is deleting, so that no sign-in
     * waits on another and none does unbounded work. Past the cap the
     * key's oldest live sessions end (all but the newest cap - 1, the
     * new one making cap). */
    PGresult *r;
    st = meter_db_exec(
        db, "cannot start a session",
        "WITH swept AS (DELETE FROM web_sessions WHERE session_hash IN"
        "  (SELECT session_hash FROM web_sessions WHERE expires_at <= now()"
        "   ORDER BY expires_at LIMIT 100 FOR UPDATE SKIP LOCKED)),"
        " ended AS (DELETE FROM web_sessions WHERE session_hash IN"
        "  (SELECT session_hash FROM web_sessions"
        "   WHERE key_id = $2 AND expires_at > now()"
        "   ORDER BY created_at DESC, session_hash DESC"
        "   OFFSET $5::integer - 1)"
        "  RETURNING 1),"
        " started AS (INSERT INTO web_sessions"
        "  (session_hash, key_id, csrf, expires_at)"
        "  VALUES ($1, $2, $3, now() + $4::bigint * interval '1 second'))"
        " SELECT count(*) FROM ended",
        s->p.n, s->p.v, s->p.len, s->p.fmt, &r, e);
    if (st == METER_DB_ROWS && db_get_int64(r, 0, 0, &s->ended, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_session_create(PGconn *db, int64_t key_id, unsigned ttl_s,
                        unsigned max_live, char token[METER_TOKEN_LEN + 1],
                        char csrf[METER_CSRF_LEN + 1], int64_t *ended,
                        struct meter_err *e)
{
    *ended = 0;
    if (ttl_s == 0)
        return db_hard(e, "cannot start a session: a lifetime of 0 seconds");
    if (max_live == 0)
        return db_hard(e, "cannot start a session: a cap of 0 sessions");
    if (session_token_new(token) < 0 || meter_random_hex(csrf, 32) < 0)
        return db_hard(e, "cannot start a session: no random bytes");
    uint8_t hash[32];
    meter_token_hash(token, hash);
    struct session_new s = {.ended = 0};
    db_param_bytes(&s.p, hash, sizeof(hash));
    db_param_int64(&s.p, key_id);
    db_param_text(&s.p, csrf);
    db_param_uint64(&s.p, ttl_s);
    db_param_uint64(&s.p, max_live);
    enum meter_db_status st =
        meter_db_transaction(db, "BEGIN", 5, session_attempt, &s, e);
    if (st != METER_DB_ROWS) {
        explicit_bzero(token, METER_TOKEN_LEN + 1);
        explicit_bzero(csrf, METER_CSRF_LEN + 1);
    } else {
        *ended = s.ended;
    }
    return st;
}

enum meter_db_status
meter_db_session_lookup(PGconn *db, const char *token,
                        struct meter_principal *who,
                        char csrf[METER_CSRF_LEN + 1], struct meter_err *e)
{
    uint8_t hash[32];
    meter_token_hash(token, hash);
    struct db_params p = {0};
    db_param_bytes(&p, hash, sizeof(hash));
    PGresult *r;
    /* The columns of meter_db_key_lookup first (db_principal_of). */
    enum meter_db_status st = db_exec_prepared(
        db, "cannot look the session up", "meter_session_lookup",
        "SELECT k.key_id, k.role, coalesce(k.account_id, ''), EXISTS"
        "  (SELECT 1 FROM host_key_accounts h WHERE h.key_id = k.key_id),"
        " s.csrf"
        " FROM web_sessions s JOIN api_keys k ON k.key_id = s.key_id"
        " WHERE s.session_hash = $1 AND s.expires_at > now()"
        "  AND k.revoked_at IS NULL",
        p.n, p.v, p.len, p.fmt, &r, e);
    if (st == METER_DB_ROWS &&
        (db_principal_of(r, 0, who, e) < 0 ||
         db_get_text(r, 0, 4, csrf, METER_CSRF_LEN + 1, e) < 0))
        st = METER_DB_HARD;
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_session_delete(PGconn *db, const char *token, struct meter_err *e)
{
    uint8_t hash[32];
    meter_token_hash(token, hash);
    struct db_params p = {0};
    db_param_bytes(&p, hash, sizeof(hash));
    return meter_db_exec(db, "cannot end the session",
                         "DELETE FROM web_sessions WHERE session_hash = $1"
                         " RETURNING 1",
                         p.n, p.v, p.len, p.fmt, NULL, e);
}
