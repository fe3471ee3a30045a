/*
 * keys.c - API keys: tokens random, shown once, stored only as SHA-256;
 * creating, listing, revoking (which ends the key's browser sessions),
 * and looking a bearer token up.
 */
#include "db_int.h"

#include <inttypes.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

static const struct {
    enum meter_role role;
    const char *name;
} roles[] = {
    {METER_ROLE_HOST, "host"},
    {METER_ROLE_ACCOUNT, "account"},
    {METER_ROLE_FINANCE, "finance"},
    {METER_ROLE_ADMIN, "admin"},
};

const char *
meter_role_name(enum meter_role role)
{
    for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
        if (roles[i].role == role)
            return roles[i].name;
    return "?";
}

enum meter_role
meter_role_parse(const char *s)
{
    for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
        if (strcmp(roles[i].name, s) == 0)
            return roles[i].role;
    return 0;
}

int
meter_random_hex(char *out, size_t nbytes)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t raw[64];
    if (nbytes > sizeof(raw))
        return -1;
    size_t got = 0;
    while (got < nbytes) {
        ssize_t n = getrandom(raw + got, nbytes - got, 0);
        if (n < 0)
            return -1;
        got += (size_t)n;
    }
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * nbytes] = '\0';
    explicit_bzero(raw, sizeof(raw));
    return 0;
}

int
meter_token_new(char *out)
{
    memcpy(out, "mtr_", 4);
    return meter_random_hex(out + 4, 32);
}

void
meter_token_hash(const char *token, uint8_t out[32])
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, strlen(token), (const uint8_t *)token);
    sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

enum meter_db_status
meter_db_key_lookup(PGconn *db, const char *token, struct meter_principal *who,
                    struct meter_err *e)
{
    uint8_t hash[32];
    meter_token_hash(token, hash);
    struct db_params p = {0};
    db_param_bytes(&p, hash, sizeof(hash));
    PGresult *r;
    enum meter_db_status st = db_exec_prepared(
        db, "cannot look the key up", "meter_key_lookup",
        "SELECT key_id, role, coalesce(account_id, ''), EXISTS (SELECT 1"
        "  FROM host_key_accounts h WHERE h.key_id = api_keys.key_id)"
        " FROM api_keys WHERE token_hash = $1 AND revoked_at IS NULL",
        p.n, p.v, p.len, p.fmt, &r, e);
    if (st == METER_DB_ROWS && db_principal_of(r, 0, who, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    return st;
}

int
db_principal_of(const PGresult *r, int row, struct meter_principal *who,
                struct meter_err *e)
{
    size_t cap = sizeof(who->account_id);
    if (db_get_int64(r, row, 0, &who->key_id, e) < 0 ||
        db_get_text(r, row, 2, who->account_id, cap, e) < 0 ||
        db_get_bool(r, row, 3, &who->scoped, e) < 0)
        return -1;
    who->role = meter_role_parse(PQgetvalue(r, row, 1));
    return 0;
}

enum meter_db_status
meter_db_key_create(PGconn *db, enum meter_role role, const char *account,
                    const char *name, const char *scope,
                    char token[METER_TOKEN_LEN + 1], int64_t *key_id,
                    struct meter_err *e)
{
    uint8_t hash[32];
    if (meter_token_new(token) < 0) {
        meter_fail(e, "no random bytes for a token");
        return METER_DB_HARD;
    }
    meter_token_hash(token, hash);
    struct db_params p = {0};
    db_param_text(&p, meter_role_name(role));
    db_param_text(&p, account);
    db_param_text(&p, name);
    db_param_bytes(&p, hash, sizeof(hash));
    db_param_text(&p, scope);
    PGresult *r;
    enum meter_db_status st = meter_db_exec(
        db, "cannot create the key",
        "WITH acct AS (INSERT INTO accounts (account_id) SELECT $2::text"
        "  WHERE $2::text IS NOT NULL ON CONFLICT DO NOTHING),"
        " k AS (INSERT INTO api_keys (role, account_id, name, token_hash)"
        "  VALUES ($1, $2, $3, $4) RETURNING key_id),"
        " s AS (INSERT INTO host_key_accounts (key_id, account_id)"
        "  SELECT DISTINCT k.key_id, x FROM k,"
        "  unnest(string_to_array($5::text, ',')) x)"
        " SELECT key_id FROM k",
        p.n, p.v, p.len, p.fmt, &r, e);
    if (st == METER_DB_ROWS && db_get_int64(r, 0, 0, key_id, e) < 0)
        st = METER_DB_HARD;
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_key_list(PGconn *db, meter_key_cb *cb, void *arg, struct meter_err *e)
{
    PGresult *r;
    enum meter_db_status st =
        meter_db_exec(db, "cannot list keys",
                      "SELECT key_id, role, coalesce(account_id, ''), name,"
                      " to_char(created_at AT TIME ZONE 'UTC',"
                      "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
                      " coalesce(to_char(revoked_at AT TIME ZONE 'UTC',"
                      "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), ''),"
                      " coalesce((SELECT string_agg(h.account_id, ','"
                      "  ORDER BY h.account_id) FROM host_key_accounts h"
                      "  WHERE h.key_id = api_keys.key_id), '')"
                      " FROM api_keys ORDER BY key_id",
                      0, NULL, NULL, NULL, &r, e);
    for (int i = 0; st == METER_DB_ROWS && i < PQntuples(r); i++) {
        struct meter_key k = {
            .role = PQgetvalue(r, i, 1),
            .account_id = PQgetvalue(r, i, 2),
            .name = PQgetvalue(r, i, 3),
            .created_at = PQgetvalue(r, i, 4),
            .revoked_at = PQgetvalue(r, i, 5),
            .scope = PQgetvalue(r, i, 6),
        };
        if (db_get_int64(r, i, 0, &k.key_id, e) < 0) {
            st = METER_DB_HARD;
            break;
        }
        cb(&k, arg);
    }
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_key_revoke(PGconn *db, int64_t key_id, struct meter_err *e)
{
    char what[64];
    snprintf(what, sizeof(what), "cannot revoke key %" PRId64, key_id);
    struct db_params p = {0};
    db_param_int64(&p, key_id);
    /* Its browser sessions go with it: they authenticate nothing once
     * the key is revoked (meter_db_session_lookup), and are no use
     * kept. */
    return meter_db_exec(db, what,
                         "WITH k AS (UPDATE api_keys SET revoked_at = now()"
                         "  WHERE key_id = $1 AND revoked_at IS NULL"
                         "  RETURNING key_id),"
                         " s AS (DELETE FROM web_sessions"
                         "  WHERE key_id IN (SELECT key_id FROM k))"
                         " SELECT key_id FROM k",
                         p.n, p.v, NULL, NULL, NULL, e);
}
