/*
 * sessions.c - browser sessions: created at sign-in, looked up on each
 * request that carries the cookie, deleted at sign-out.
 *
 * They live in the database, not in meterd's memory, so that any
 * number of meterd behind a balancer share them and a sign-out or a
 * revoked key ends a session everywhere on its next request. The
 * lookup joins the key: a revoked key's sessions end at once, whether
 * or not its rows were deleted yet.
 */
#include "db_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The token of a new session: "mts_" (not the keys' "mtr_", so that a
 * token found in a log or a paste says what it is) and 64 hex digits. */
static int
session_token_new(char token[METER_TOKEN_LEN + 1])
{
    memcpy(token, "mts_", 4);
    return meter_random_hex(token + 4, 32);
}

enum meter_db_status
meter_db_session_create(PGconn *db, int64_t key_id, unsigned ttl_s,
                        char token[METER_TOKEN_LEN + 1],
                        char csrf[METER_CSRF_LEN + 1], struct meter_err *e)
{
    if (ttl_s == 0)
        return db_hard(e, "cannot start a session: a lifetime of 0 seconds");
    if (session_token_new(token) < 0 || meter_random_hex(csrf, 32) < 0)
        return db_hard(e, "cannot start a session: no random bytes");
    uint8_t hash[32];
    meter_token_hash(token, hash);
    char id[24], ttl[16];
    snprintf(id, sizeof(id), "%" PRId64, key_id);
    snprintf(ttl, sizeof(ttl), "%u", ttl_s);
    const char *values[] = {(const char *)hash, id, csrf, ttl};
    int lengths[] = {32, 0, 0, 0}, formats[] = {1, 0, 0, 0};
    /* Expired sessions are deleted here, a bounded batch at a time and
     * skipping rows another sign-in is deleting, so that no sign-in
     * waits on another and none does unbounded work. The key is
     * checked once more: one revoked since it was looked up gets no
     * session (NONE). */
    enum meter_db_status st = meter_db_exec(
        db, "cannot start a session",
        "WITH swept AS (DELETE FROM web_sessions WHERE session_hash IN"
        "  (SELECT session_hash FROM web_sessions WHERE expires_at <= now()"
        "   ORDER BY expires_at LIMIT 100 FOR UPDATE SKIP LOCKED))"
        " INSERT INTO web_sessions (session_hash, key_id, csrf, expires_at)"
        " SELECT $1, key_id, $3, now() + $4::bigint * interval '1 second'"
        "  FROM api_keys WHERE key_id = $2 AND revoked_at IS NULL"
        " RETURNING 1",
        4, values, lengths, formats, NULL, e);
    if (st != METER_DB_ROWS) {
        explicit_bzero(token, METER_TOKEN_LEN + 1);
        explicit_bzero(csrf, METER_CSRF_LEN + 1);
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
    const char *values[] = {(const char *)hash};
    int lengths[] = {32}, formats[] = {1};
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
        1, values, lengths, formats, &r, e);
    if (st == METER_DB_ROWS) {
        db_principal_of(r, 0, who);
        snprintf(csrf, METER_CSRF_LEN + 1, "%s", PQgetvalue(r, 0, 4));
    }
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_session_delete(PGconn *db, const char *token, struct meter_err *e)
{
    uint8_t hash[32];
    meter_token_hash(token, hash);
    const char *values[] = {(const char *)hash};
    int lengths[] = {32}, formats[] = {1};
    return meter_db_exec(db, "cannot end the session",
                         "DELETE FROM web_sessions WHERE session_hash = $1"
                         " RETURNING 1",
                         1, values, lengths, formats, NULL, e);
}
