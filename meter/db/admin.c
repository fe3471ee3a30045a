/*
 * admin.c - what the management API (meterd's /v1/admin/..., and
 * meterctl's accounts list|show|end and books list) reads and writes
 * beyond meterctl's own: accounts with their metadata and external id,
 * assignments that end, the stored books, and the answers of
 * idempotent creations (migration 0021). Each answer is JSON built by
 * the database (account_json), so that the API and meterctl show one
 * shape.
 */
#include "db_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

/* The one JSON value of r's first row and column into *out: ROWS, or
 * NONE if it is NULL or there is no row. */
static enum meter_db_status
json_of(PGresult *r, const char *what, json_t **out, struct meter_err *e)
{
    *out = NULL;
    if (PQntuples(r) == 0 || PQgetisnull(r, 0, 0))
        return METER_DB_NONE;
    json_error_t je;
    *out = json_loads(PQgetvalue(r, 0, 0), JSON_DECODE_ANY, &je);
    if (!*out)
        return db_hard(e, "%s: the database's JSON does not parse: %s", what,
                       je.text);
    return METER_DB_ROWS;
}

/* Runs sql, whose first row's first column is JSON (or NULL), into
 * *out. */
static enum meter_db_status
exec_json(PGconn *db, const char *what, const char *sql, int n,
          const char *const *v, json_t **out, struct meter_err *e)
{
    PGresult *r = NULL;
    *out = NULL;
    enum meter_db_status st =
        meter_db_exec(db, what, sql, n, v, NULL, NULL, &r, e);
    if (st >= 0)
        st = json_of(r, what, out, e);
    PQclear(r);
    return st;
}

enum meter_db_status
meter_db_admin_account_create(PGconn *db, const struct meter_admin_account *a,
                              json_t **out, struct meter_err *e)
{
    const char *v[] = {a->id, a->name, a->external_id,
                       a->metadata ? a->metadata : "{}"};
    /* Neither the id nor the external id may be taken: ON CONFLICT
     * without a target covers both; the answer then says which. */
    enum meter_db_status st = exec_json(
        db, "cannot create the account",
        "WITH ins AS (INSERT INTO accounts (account_id, name, external_id,"
        "  metadata) VALUES ($1, $2, $3, $4::jsonb) ON CONFLICT DO NOTHING"
        "  RETURNING account_id)"
        " SELECT CASE WHEN EXISTS (SELECT 1 FROM ins) THEN"
        "  json_build_object('created', true)"
        " ELSE json_build_object('created', false, 'taken_by',"
        "  (SELECT account_id FROM accounts WHERE external_id = $3),"
        "  'exists', EXISTS (SELECT 1 FROM accounts WHERE account_id = $1))"
        " END",
        4, v, out, e);
    if (st < 0)
        return st;
    bool created = json_is_true(json_object_get(*out, "created"));
    const char *taken = json_string_value(json_object_get(*out, "taken_by"));
    if (!created) {
        /* Neither seen: taken by a creation that committed meanwhile. */
        if (json_is_true(json_object_get(*out, "exists")))
            meter_fail(e, "account '%s' exists", a->id);
        else if (taken)
            meter_fail(e, "external_id '%s' is account '%s''s",
                       a->external_id ? a->external_id : "", taken);
        else
            meter_fail(e, "account '%s' or its external_id was just taken",
                       a->id);
        json_decref(*out);
        *out = NULL;
        return METER_DB_NONE;
    }
    json_decref(*out);
    return meter_db_admin_account_get(db, a->id, out, e);
}

enum meter_db_status
meter_db_admin_account_get(PGconn *db, const char *id, json_t **out,
                           struct meter_err *e)
{
    const char *v[] = {id};
    return exec_json(db, "cannot read the account", "SELECT account_json($1)",
                     1, v, out, e);
}

enum meter_db_status
meter_db_admin_accounts_list(PGconn *db, const char *after, int limit,
                             json_t **out, struct meter_err *e)
{
    struct db_params p = {0};
    db_param_text(&p, after ? after : "");
    db_param_int32(&p, limit);
    /* One more than asked: whether there is a next page. */
    return exec_json(
        db, "cannot list the accounts",
        "WITH page AS (SELECT account_id FROM accounts WHERE account_id > $1"
        "  ORDER BY account_id LIMIT $2::int + 1)"
        " SELECT json_build_object('items', coalesce((SELECT"
        "  json_agg(account_json(account_id) ORDER BY account_id) FROM"
        "  (SELECT account_id FROM page ORDER BY account_id LIMIT $2::int) x),"
        "  '[]'), 'next_after', CASE WHEN (SELECT count(*) FROM page) > $2::int"
        "  THEN (SELECT max(account_id) FROM (SELECT account_id FROM page"
        "  ORDER BY account_id LIMIT $2::int) y) END)",
        p.n, p.v, out, e);
}

enum meter_db_status
meter_db_admin_account_update(PGconn *db, const struct meter_admin_account *a,
                              json_t **out, struct meter_err *e)
{
    const char *v[] = {a->id, a->name, a->external_id, a->metadata};
    /* NULL keeps a field; an external id another account has is named. */
    enum meter_db_status st = exec_json(
        db, "cannot update the account",
        "WITH taken AS (SELECT account_id FROM accounts WHERE external_id = $3"
        "  AND account_id <> $1),"
        " up AS (UPDATE accounts SET name = coalesce($2, name),"
        "  external_id = coalesce($3, external_id),"
        "  metadata = coalesce($4::jsonb, metadata)"
        "  WHERE account_id = $1 AND NOT EXISTS (SELECT 1 FROM taken)"
        "  RETURNING account_id)"
        " SELECT json_build_object('updated', EXISTS (SELECT 1 FROM up),"
        "  'taken_by', (SELECT account_id FROM taken))",
        4, v, out, e);
    if (st < 0)
        return st;
    const char *taken = json_string_value(json_object_get(*out, "taken_by"));
    bool updated = json_is_true(json_object_get(*out, "updated"));
    if (taken)
        meter_fail(e, "external_id '%s' is account '%s''s", a->external_id,
                   taken);
    json_decref(*out);
    *out = NULL;
    if (taken)
        return METER_DB_HARD;
    if (!updated)
        return METER_DB_NONE;
    return meter_db_admin_account_get(db, a->id, out, e);
}

enum meter_db_status
meter_db_account_end(PGconn *db, const char *id, const char *from,
                     struct meter_err *e)
{
    const char *v[] = {id, from};
    return meter_db_exec(
        db, "cannot end the account's price book",
        "INSERT INTO account_price_books (account_id, valid_from,"
        " price_book_id, version) SELECT account_id, $2::date, NULL, NULL"
        " FROM accounts WHERE account_id = $1"
        " ON CONFLICT (account_id, valid_from) DO UPDATE"
        " SET price_book_id = NULL, version = NULL RETURNING 1",
        2, v, NULL, NULL, NULL, e);
}

enum meter_db_status
meter_db_books_list(PGconn *db, json_t **out, struct meter_err *e)
{
    return exec_json(
        db, "cannot list the price books",
        "SELECT coalesce(json_agg(json_build_object('id', price_book_id,"
        " 'version', version, 'name', book->>'name',"
        " 'provider', book->>'provider', 'currency', currency,"
        " 'effective_from', to_char(effective_from, 'YYYY-MM-DD'),"
        " 'stored_at', to_char(created_at AT TIME ZONE 'UTC',"
        " 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'))"
        " ORDER BY price_book_id, version), '[]') FROM price_books",
        0, NULL, out, e);
}

enum meter_db_status
meter_db_book_get(PGconn *db, const char *id, int version, json_t **out,
                  struct meter_err *e)
{
    struct db_params p = {0};
    db_param_text(&p, id);
    db_param_int32(&p, version);
    /* version 0: the latest */
    return exec_json(db, "cannot read the price book",
                     "SELECT book FROM price_books WHERE price_book_id = $1"
                     " AND ($2::int = 0 OR version = $2::int)"
                     " ORDER BY version DESC LIMIT 1",
                     p.n, p.v, out, e);
}

/* ---- idempotent creations ------------------------------------------------ */

void
meter_idem_request_hash(const char *method, const char *path, const char *body,
                        size_t len, uint8_t out[32])
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    /* NUL-separated: "POST" "/a" and "POST/" "a" differ. */
    sha256_update(&ctx, strlen(method) + 1, (const uint8_t *)method);
    sha256_update(&ctx, strlen(path) + 1, (const uint8_t *)path);
    sha256_update(&ctx, len, (const uint8_t *)body);
    sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
}

/* The lease of a key's first request: a session lock, which its
 * connection's end gives up, in a class of its own (two int4 keys). */
#define IDEM_LOCK                                                              \
    "pg_try_advisory_lock(7243617, hashtext($1::text || ':' || $2))"
#define IDEM_UNLOCK                                                            \
    "pg_advisory_unlock(7243617, hashtext($1::text || ':' || $2))"

static void
idem_unlock(PGconn *db, int64_t key_id, const char *idem_key)
{
    struct db_params p = {0};
    struct meter_err e = {{0}};
    db_param_int64(&p, key_id);
    db_param_text(&p, idem_key);
    meter_db_exec(db, "cannot release the idempotency key",
                  "SELECT " IDEM_UNLOCK, p.n, p.v, NULL, NULL, NULL, &e);
}

enum meter_db_status
meter_db_idem_claim(PGconn *db, int64_t key_id, const char *idem_key,
                    const uint8_t request[32], struct meter_idem *out,
                    struct meter_err *e)
{
    memset(out, 0, sizeof(*out));
    struct db_params p = {0};
    db_param_int64(&p, key_id);
    db_param_text(&p, idem_key);
    db_param_bytes(&p, request, 32);
    PGresult *r = NULL;
    /* Whoever holds the lease runs the request; the others wait for its
     * answer (409 under way). */
    enum meter_db_status st =
        meter_db_exec(db, "cannot claim the idempotency key",
                      "SELECT " IDEM_LOCK, 2, p.v, NULL, NULL, &r, e);
    bool mine = st > 0 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    r = NULL;
    if (st < 0)
        return st;
    if (!mine) {
        out->outcome = METER_IDEM_UNDER_WAY;
        return METER_DB_ROWS;
    }
    /* A day's answers are kept. A claim without an answer whose lease is
     * free was cut off (its meterd or connection gone): the same request
     * takes it over. */
    st = meter_db_exec(db, "cannot forget old idempotency keys",
                       "DELETE FROM idempotency_keys WHERE key_id = $1"
                       " AND created_at < now() - interval '1 day'",
                       1, p.v, NULL, NULL, NULL, e);
    if (st >= 0)
        st = meter_db_exec(
            db, "cannot claim the idempotency key",
            "INSERT INTO idempotency_keys (key_id, idem_key, request)"
            " VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1",
            p.n, p.v, p.len, p.fmt, NULL, e);
    if (st == METER_DB_ROWS) {
        out->outcome = METER_IDEM_NEW;
        return st; /* the lease held until meter_db_idem_release */
    }
    if (st >= 0)
        st = meter_db_exec(db, "cannot read the idempotency key",
                           "SELECT request = $3, status, response"
                           " FROM idempotency_keys WHERE key_id = $1"
                           " AND idem_key = $2",
                           p.n, p.v, p.len, p.fmt, &r, e);
    if (st == METER_DB_NONE)
        st = db_hard(e, "the idempotency key vanished");
    if (st >= 0) {
        if (strcmp(PQgetvalue(r, 0, 0), "t") != 0) {
            out->outcome = METER_IDEM_OTHER_REQUEST;
        } else if (PQgetisnull(r, 0, 1)) {
            PQclear(r);
            out->outcome = METER_IDEM_NEW; /* taken over */
            return METER_DB_ROWS;
        } else {
            out->outcome = METER_IDEM_DONE;
            if (db_get_int(r, 0, 1, &out->status, e) < 0 ||
                !(out->response = strdup(PQgetvalue(r, 0, 2))))
                st = db_hard(e, "cannot read the idempotent answer");
        }
    }
    PQclear(r);
    idem_unlock(db, key_id, idem_key);
    return st < 0 ? st : METER_DB_ROWS;
}

enum meter_db_status
meter_db_idem_answer(PGconn *db, int64_t key_id, const char *idem_key,
                     int status, const char *response, struct meter_err *e)
{
    struct db_params p = {0};
    db_param_int64(&p, key_id);
    db_param_text(&p, idem_key);
    db_param_int32(&p, status);
    db_param_text(&p, response);
    return meter_db_exec(db, "cannot store the idempotent answer",
                         "UPDATE idempotency_keys SET status = $3::int,"
                         " response = $4 WHERE key_id = $1 AND idem_key = $2",
                         p.n, p.v, NULL, NULL, NULL, e);
}

enum meter_db_status
meter_db_idem_release(PGconn *db, int64_t key_id, const char *idem_key,
                      bool answered, struct meter_err *e)
{
    struct db_params p = {0};
    db_param_int64(&p, key_id);
    db_param_text(&p, idem_key);
    enum meter_db_status st =
        answered ? METER_DB_NONE
                 : meter_db_exec(db, "cannot release the idempotency key",
                                 "DELETE FROM idempotency_keys"
                                 " WHERE key_id = $1 AND idem_key = $2"
                                 " AND status IS NULL",
                                 p.n, p.v, NULL, NULL, NULL, e);
    idem_unlock(db, key_id, idem_key);
    return st;
}
