/*
 * admin.c - the management API, role admin (docs/openapi.yaml, tag
 * admin): what a provider's signup flow and back office do over HTTP
 * that meterctl does with database access. Accounts (create, list, get,
 * update), their price books from a date and the end of them, credit
 * grants, price books (upload a version, list, get a version) and API
 * keys (create, list, revoke). Every change is audited as done by the
 * request's key (the database's triggers, as for meterctl). A POST that
 * creates takes an Idempotency-Key header: the same key and request
 * again get the first answer, another request with it a 409.
 */
#include "meterd_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE_DEFAULT 100
#define PAGE_MAX 1000

/* A creation: its answer (status in *status) or NULL after answering an
 * error itself. */
typedef json_t *admin_fn(struct meter_http_request *rq, PGconn *db,
                         unsigned *status);

/* The body as a JSON object, or NULL after answering 400 with why
 * (naming a key given twice). want describes the expected shape. */
static json_t *
body_object(struct meter_http_request *rq, const char *want)
{
    size_t len;
    const char *body = meter_http_body(rq, &len);
    json_error_t jerr;
    json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (json_is_object(o))
        return o;
    char why[160];
    meter_http_reply_problem(
        rq, 400, "invalid-body", "Invalid body", NULL, "expected %s: %s", want,
        o ? "not an object"
          : pricing_json_reason(
                jerr.text, json_error_code(&jerr) == json_error_duplicate_key,
                body, (size_t)jerr.position, why, sizeof(why)));
    json_decref(o);
    return NULL;
}

json_t *
meterd_bad_field(struct meter_http_request *rq, const char *field,
                 json_t *value, const char *why)
{
    char *text =
        value ? json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    json_t *errors = json_pack("[{s:s, s:s?, s:s}]", "field", field, "value",
                               text, "reason", why);
    meter_http_reply_problem(rq, 400, "invalid-body", "Invalid body", errors,
                             "%s %s%s%s", field, text ? text : "",
                             text ? ": " : "", why);
    free(text);
    return NULL;
}

/* Member key of o as a string: true with *out set (NULL if absent or
 * null and optional), false after answering 400. */
static bool
str_member(struct meter_http_request *rq, json_t *o, const char *key,
           bool required, size_t max, const char **out)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v)) {
        if (!required)
            return true;
        meterd_bad_field(rq, key, NULL, "is required");
        return false;
    }
    if (!json_is_string(v) || json_string_length(v) == 0 ||
        json_string_length(v) > max ||
        strlen(json_string_value(v)) != json_string_length(v)) {
        char why[64];
        snprintf(why, sizeof(why), "not a string of 1 to %zu characters", max);
        meterd_bad_field(rq, key, v, why);
        return false;
    }
    *out = json_string_value(v);
    return true;
}

/* Refuses members of o other than those of allowed (NULL-ended). */
static bool
only_members(struct meter_http_request *rq, json_t *o,
             const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        bool ok = false;
        for (size_t i = 0; allowed[i] && !ok; i++)
            ok = strcmp(key, allowed[i]) == 0;
        if (!ok) {
            meterd_bad_field(rq, key, v, "is not a field of this request");
            return false;
        }
    }
    return true;
}

/* "YYYY-MM-DD", a real day. */
static bool
is_date(const char *s)
{
    int y, m, d, n = 0;
    for (size_t i = 0; i < 10; i++)
        if (i == 4 || i == 7 ? s[i] != '-' : (s[i] < '0' || s[i] > '9'))
            return false;
    if (s[10] || sscanf(s, "%4d-%2d-%2d%n", &y, &m, &d, &n) != 3 || n != 10 ||
        y < 1 || m < 1 || m > 12 || d < 1)
        return false;
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return d <= days[m - 1] + (m == 2 && leap);
}

/* The database failure st as the answer: NULL. */
static json_t *
db_failed(struct meter_http_request *rq, PGconn *db, enum meter_db_status st,
          const struct meter_err *e, const char *what)
{
    meter_http_reply_db_error(rq, db, st, e, "%s", what);
    return NULL;
}

static json_t *
not_found(struct meter_http_request *rq, const char *what, const char *id)
{
    meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                             "no %s '%s'", what, id);
    return NULL;
}

static json_t *
conflict(struct meter_http_request *rq, const char *detail)
{
    meter_http_reply_problem(rq, 409, "conflict", "Conflict", NULL, "%s",
                             detail);
    return NULL;
}

enum meter_db_status
meterd_act_as_key(struct meter_http_request *rq, PGconn *db,
                  struct meter_err *e)
{
    const struct meter_principal *who = meter_http_principal(rq);
    char actor[64];
    snprintf(actor, sizeof(actor), "meterd:key %" PRId64 " (%s)", who->key_id,
             meter_role_name(who->role));
    return meter_db_set_actor(db, actor, e);
}

void
meterd_act_reset(PGconn *db)
{
    struct meter_err e = {{0}};
    if (db && !meter_db_lost(db))
        meter_db_set_actor(db, NULL, &e);
}

/* This request's connection, its acts audited as done by its key; NULL
 * after answering 503. */
static PGconn *
admin_db(struct meter_http_request *rq)
{
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    enum meter_db_status st =
        db ? meterd_act_as_key(rq, db, &e) : METER_DB_HARD;
    if (st < 0) {
        meter_http_reply_db_error(rq, db, st, &e, "the request cannot start");
        return NULL;
    }
    return db;
}

/* Sends text, a JSON answer of status, as it was (or will be) stored. */
static void
reply_stored(struct meter_http_request *rq, int status, const char *text)
{
    meter_http_reply_text(rq, (unsigned)status, "application/json", text,
                          strlen(text));
}

/* A visible ASCII Idempotency-Key of 1 to 255 characters. */
static bool
idem_key_valid(const char *k)
{
    size_t n = strlen(k);
    for (size_t i = 0; i < n; i++)
        if (k[i] < 0x21 || k[i] > 0x7e)
            return false;
    return n >= 1 && n <= 255;
}

/* A creation run for an Idempotency-Key: its work and its answer kept,
 * in one transaction. */
struct idem_run {
    struct meter_http_request *rq;
    admin_fn *fn;
    const char *secret;
    int64_t key_id;
    const char *key;
    unsigned status;
    bool ran;       /* fn ran: the transaction began */
    json_t *answer; /* NULL: fn answered (refused) */
    char *text;     /* the answer kept: without the secret */
};

static enum meter_db_status
idem_attempt(PGconn *db, void *arg, struct meter_err *e)
{
    struct idem_run *x = arg;
    x->ran = true;
    if (!(x->answer = x->fn(x->rq, db, &x->status)))
        return METER_DB_HARD; /* refused, and answered: rolled back */
    json_t *kept = json_deep_copy(x->answer);
    if (kept && x->secret)
        json_object_set_new(kept, x->secret, json_null());
    x->text = kept ? json_dumps(kept, JSON_COMPACT) : NULL;
    json_decref(kept);
    if (!x->text)
        return METER_DB_HARD; /* e says nothing: answered below */
    return meter_db_idem_answer(db, x->key_id, x->key, (int)x->status, x->text,
                                e);
}

/* Runs creation fn, by the Idempotency-Key header if there is one.
 * secret names a member of the answer that is shown once and never kept
 * (a key's token): a replay answers without it. */
static void
idempotent(struct meter_http_request *rq, admin_fn *fn, const char *secret)
{
    PGconn *db = admin_db(rq);
    if (!db)
        return;
    const char *key = meter_http_header(rq, "Idempotency-Key");
    unsigned status = 200;
    json_t *answer = NULL;
    char *text = NULL;
    struct meter_err e = {{0}};
    if (!key) {
        if ((answer = fn(rq, db, &status)))
            meter_http_reply_json(rq, status, json_incref(answer));
        goto out;
    }
    if (!idem_key_valid(key)) {
        json_t *errors =
            json_pack("[{s:s, s:s, s:s}]", "field", "Idempotency-Key", "value",
                      key, "reason", "not 1 to 255 visible ASCII characters");
        meter_http_reply_problem(rq, 400, "invalid-header", "Invalid header",
                                 errors,
                                 "Idempotency-Key: not 1 to 255 visible "
                                 "ASCII characters");
        goto out;
    }
    size_t len;
    const char *body = meter_http_body(rq, &len);
    uint8_t request[32];
    meter_idem_request_hash("POST", meter_http_path(rq), body, len, request);
    struct meter_idem idem;
    int64_t key_id = meter_http_principal(rq)->key_id;
    enum meter_db_status st =
        meter_db_idem_claim(db, key_id, key, request, &idem, &e);
    if (st < 0) {
        meter_http_reply_db_error(rq, db, st, &e,
                                  "the Idempotency-Key cannot be claimed");
        goto out;
    }
    switch (idem.outcome) {
    case METER_IDEM_DONE:
        meter_http_reply_header(rq, "Idempotent-Replayed", "true");
        reply_stored(rq, idem.status, idem.response);
        free(idem.response);
        goto out;
    case METER_IDEM_UNDER_WAY:
        conflict(rq, "a request with this Idempotency-Key is under way: "
                     "retry once it is answered");
        goto out;
    case METER_IDEM_OTHER_REQUEST:
        conflict(rq, "this Idempotency-Key was used with another request "
                     "(method, path or body): use a new key for a new "
                     "request");
        goto out;
    case METER_IDEM_NEW:
        break;
    }
    /* The work and its answer commit together: a meterd cut off before
     * the commit did nothing, and a retry runs the request again. A
     * refusal (fn answered), or an answer that cannot be kept, rolls
     * back and releases the key too. */
    struct idem_run x = {rq, fn, secret, key_id, key, 200, false, NULL, NULL};
    st = meter_db_transaction(db, "BEGIN", 1, idem_attempt, &x, &e);
    answer = x.answer;
    text = x.text;
    struct meter_err re = {{0}};
    meter_db_idem_release(db, key_id, key, st >= 0, &re);
    status = x.status;
    if (!x.ran)
        meter_http_reply_db_error(rq, db, st, &e,
                                  "the request's transaction cannot begin");
    else if (!answer)
        ; /* fn answered */
    else if (!text)
        meter_http_reply_problem(rq, 500, "internal", "Out of memory", NULL,
                                 "the answer cannot be written");
    else if (st < 0)
        meter_http_reply_db_error(rq, db, st, &e,
                                  "it and its answer for the "
                                  "Idempotency-Key may not be committed: "
                                  "send it again with the same key");
    else if (secret)
        meter_http_reply_json(rq, status, json_incref(answer));
    else
        reply_stored(rq, (int)status, text);
out:
    json_decref(answer);
    free(text);
    meterd_act_reset(db);
}

/* ---- accounts ------------------------------------------------------------ */

/* The account fields of body o into a; false after answering 400.
 * metadata_text receives metadata's text (free it). */
static bool
account_fields(struct meter_http_request *rq, json_t *o,
               struct meter_admin_account *a, char **metadata_text)
{
    json_t *md = json_object_get(o, "metadata");
    *metadata_text = NULL;
    if (!str_member(rq, o, "name", false, 200, &a->name) ||
        !str_member(rq, o, "external_id", false, 200, &a->external_id))
        return false;
    if (md && !json_is_null(md)) {
        if (!json_is_object(md)) {
            meterd_bad_field(rq, "metadata", md, "not a JSON object");
            return false;
        }
        *metadata_text = json_dumps(md, JSON_COMPACT | JSON_SORT_KEYS);
        if (!*metadata_text || strlen(*metadata_text) > 8192) {
            free(*metadata_text);
            *metadata_text = NULL;
            meterd_bad_field(rq, "metadata", NULL,
                             "more than 8192 bytes of JSON");
            return false;
        }
        a->metadata = *metadata_text;
    }
    return true;
}

static json_t *
account_create(struct meter_http_request *rq, PGconn *db, unsigned *status)
{
    static const char *const fields[] = {"id", "name", "external_id",
                                         "metadata", NULL};
    json_t *o = body_object(rq, "{\"id\": ID, \"name\"?: text, "
                                "\"external_id\"?: text, \"metadata\"?: {}}");
    if (!o)
        return NULL;
    struct meter_admin_account a = {0};
    char *md = NULL;
    json_t *out = NULL;
    struct meter_err e = {{0}};
    if (!only_members(rq, o, fields) ||
        !str_member(rq, o, "id", true, PRICING_ID_MAX, &a.id) ||
        !account_fields(rq, o, &a, &md))
        goto done;
    if (!pricing_id_valid(a.id)) {
        meterd_bad_field(rq, "id", json_object_get(o, "id"),
                         "not an account id (letters, digits, '.', '_', '-')");
        goto done;
    }
    enum meter_db_status st = meter_db_admin_account_create(db, &a, &out, &e);
    if (st < 0)
        db_failed(rq, db, st, &e, "the account cannot be created");
    else if (st == METER_DB_NONE)
        conflict(rq, e.msg);
    else
        *status = 201;
done:
    free(md);
    json_decref(o);
    return out;
}

void
meterd_admin_account_create(struct meter_http_request *rq)
{
    idempotent(rq, account_create, NULL);
}

void
meterd_admin_accounts_list(struct meter_http_request *rq)
{
    const char *after = meter_http_query(rq, "after"),
               *limit_s = meter_http_query(rq, "limit");
    uint64_t limit = PAGE_DEFAULT;
    if (limit_s && meter_parse_uint(limit_s, 1, PAGE_MAX, &limit) < 0) {
        meterd_bad_query(rq, "limit", limit_s, "not a number from 1 to 1000");
        return;
    }
    if (after && !pricing_id_valid(after)) {
        meterd_bad_query(rq, "after", after, "not an account id");
        return;
    }
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *out = NULL;
    enum meter_db_status st =
        db ? meter_db_admin_accounts_list(db, after, (int)limit, &out, &e)
           : METER_DB_HARD;
    if (st < 0)
        db_failed(rq, db, st, &e, "the accounts cannot be listed");
    else
        meter_http_reply_json(rq, 200, out);
}

void
meterd_admin_account_get(struct meter_http_request *rq)
{
    const char *id = meter_http_param(rq, "id");
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *out = NULL;
    enum meter_db_status st = !pricing_id_valid(id) ? METER_DB_NONE
                              : db
                                  ? meter_db_admin_account_get(db, id, &out, &e)
                                  : METER_DB_HARD;
    if (st < 0)
        db_failed(rq, db, st, &e, "the account cannot be read");
    else if (st == METER_DB_NONE)
        not_found(rq, "account", id);
    else
        meter_http_reply_json(rq, 200, out);
}

void
meterd_admin_account_update(struct meter_http_request *rq)
{
    static const char *const fields[] = {"name", "external_id", "metadata",
                                         NULL};
    const char *id = meter_http_param(rq, "id");
    if (!pricing_id_valid(id)) {
        not_found(rq, "account", id);
        return;
    }
    json_t *o = body_object(rq, "{\"name\"?: text, \"external_id\"?: text, "
                                "\"metadata\"?: {}}");
    if (!o)
        return;
    struct meter_admin_account a = {.id = id};
    char *md = NULL;
    PGconn *db = NULL;
    if (only_members(rq, o, fields) && account_fields(rq, o, &a, &md) &&
        (db = admin_db(rq))) {
        struct meter_err e = {{0}};
        json_t *out = NULL;
        enum meter_db_status st =
            meter_db_admin_account_update(db, &a, &out, &e);
        if (st < 0 && strstr(e.msg, "external_id"))
            conflict(rq, e.msg);
        else if (st < 0)
            db_failed(rq, db, st, &e, "the account cannot be updated");
        else if (st == METER_DB_NONE)
            not_found(rq, "account", id);
        else
            meter_http_reply_json(rq, 200, out);
        meterd_act_reset(db);
    }
    free(md);
    json_decref(o);
}

/* POST /v1/admin/accounts/{id}/books {"price_book_id": ID or null,
 * "from": DATE}: on the book's latest version from that day, or (null)
 * on none, until the account's next assignment. */
static json_t *
account_assign(struct meter_http_request *rq, PGconn *db, unsigned *status)
{
    static const char *const fields[] = {"price_book_id", "from", NULL};
    const char *id = meter_http_param(rq, "id");
    if (!pricing_id_valid(id))
        return not_found(rq, "account", id);
    json_t *o = body_object(rq, "{\"price_book_id\": ID or null, "
                                "\"from\": \"YYYY-MM-DD\"}");
    if (!o)
        return NULL;
    const char *book = NULL, *from = NULL;
    json_t *out = NULL;
    struct meter_err e = {{0}};
    if (!only_members(rq, o, fields) ||
        !str_member(rq, o, "from", true, 10, &from) ||
        !str_member(rq, o, "price_book_id", false, PRICING_ID_MAX, &book))
        goto done;
    if (!json_object_get(o, "price_book_id")) {
        meterd_bad_field(rq, "price_book_id", NULL,
                         "is required (null ends the account's book)");
        goto done;
    }
    if (!is_date(from)) {
        meterd_bad_field(rq, "from", json_object_get(o, "from"),
                         "not YYYY-MM-DD");
        goto done;
    }
    /* Only an existing account: a typo never creates one. */
    enum meter_db_status st = meter_db_admin_account_get(db, id, &out, &e);
    json_decref(out);
    out = NULL;
    if (st == METER_DB_NONE) {
        not_found(rq, "account", id);
        goto done;
    }
    if (st >= 0)
        st = book ? meter_db_account_add(db, id, NULL, book, from, &e)
                  : meter_db_account_end(db, id, from, &e);
    if (st < 0 && book && strstr(e.msg, "no price book"))
        meterd_bad_field(rq, "price_book_id",
                         json_object_get(o, "price_book_id"),
                         "no such price book (POST /v1/admin/books)");
    else if (st < 0 && !meter_db_unavailable(db, st) &&
             (strstr(e.msg, "are settled") || strstr(e.msg, "effective from")))
        /* a final invoice's period, or a day before the book holds */
        conflict(rq, e.msg);
    else if (st < 0)
        db_failed(rq, db, st, &e, "the account's book cannot be set");
    else if ((st = meter_db_admin_account_get(db, id, &out, &e)) < 0)
        db_failed(rq, db, st, &e, "the account cannot be read");
    *status = 200;
done:
    json_decref(o);
    return out;
}

void
meterd_admin_account_assign(struct meter_http_request *rq)
{
    idempotent(rq, account_assign, NULL);
}

/* POST /v1/admin/accounts/{id}/grants {"amount": DECIMAL,
 * "expires_after_periods"?: N, "id"?: ID}. */
static json_t *
grant_create(struct meter_http_request *rq, PGconn *db, unsigned *status)
{
    static const char *const fields[] = {"amount", "expires_after_periods",
                                         "id", NULL};
    const char *account = meter_http_param(rq, "id");
    if (!pricing_id_valid(account))
        return not_found(rq, "account", account);
    json_t *o = body_object(rq, "{\"amount\": DECIMAL, "
                                "\"expires_after_periods\"?: N, \"id\"?: ID}");
    if (!o)
        return NULL;
    const char *amount = NULL, *gid = NULL;
    json_t *out = NULL, *exp = json_object_get(o, "expires_after_periods");
    struct meter_err e = {{0}};
    if (!only_members(rq, o, fields) ||
        !str_member(rq, o, "amount", true, 40, &amount) ||
        !str_member(rq, o, "id", false, PRICING_ID_MAX, &gid))
        goto done;
    if (exp && !json_is_null(exp) &&
        (!json_is_integer(exp) || json_integer_value(exp) < 0 ||
         json_integer_value(exp) > 1200)) {
        meterd_bad_field(rq, "expires_after_periods", exp,
                         "not a number of periods from 0 (never) to 1200");
        goto done;
    }
    if (gid && !pricing_id_valid(gid)) {
        meterd_bad_field(rq, "id", json_object_get(o, "id"), "not a grant id");
        goto done;
    }
    int expires = exp ? (int)json_integer_value(exp) : 0;
    char out_id[PRICING_ID_MAX + 1];
    enum meter_db_status st = meter_db_grant_add(
        db, account, amount, expires, gid, (int64_t)time(NULL), out_id, &e);
    if (st == METER_DB_NONE || (st < 0 && strstr(e.msg, "no account '")))
        not_found(rq, "account", account);
    else if (st < 0 && meter_db_unavailable(db, st))
        db_failed(rq, db, st, &e, "the grant cannot be given");
    else if (st < 0)
        /* refused: not a decimal, no book that day, the id taken */
        meter_http_reply_problem(rq, 409, "refused", "Refused", NULL, "%s",
                                 e.msg);
    else {
        out = json_pack("{s:s, s:s, s:s, s:i}", "account_id", account, "id",
                        out_id, "amount", amount, "expires_after_periods",
                        expires);
        *status = 201;
    }
done:
    json_decref(o);
    return out;
}

void
meterd_admin_grant_create(struct meter_http_request *rq)
{
    idempotent(rq, grant_create, NULL);
}

/* ---- price books --------------------------------------------------------- */

static json_t *
book_upload(struct meter_http_request *rq, PGconn *db, unsigned *status)
{
    size_t len;
    const char *text = meter_http_body(rq, &len);
    struct pricing_err pe = {{0}};
    struct pricing_book *book = pricing_book_parse(text, len, "body", &pe);
    if (!book) {
        meter_http_reply_problem(rq, 400, "invalid-book", "Invalid price book",
                                 NULL, "%s", pe.msg);
        return NULL;
    }
    /* Stored as text: the book's own bytes, as meterctl books add. */
    char *copy = strndup(text, len);
    int version = 0;
    struct meter_err e = {{0}};
    json_t *out = NULL;
    enum meter_db_status st =
        copy ? meter_db_book_add(db, book, copy, &version, &e)
             : (meter_fail(&e, "out of memory"), METER_DB_HARD);
    if (st < 0) {
        db_failed(rq, db, st, &e, "the price book cannot be stored");
    } else {
        json_t *stored = NULL;
        st = meter_db_book_get(db, pricing_book_id(book), 0, &stored, &e);
        json_decref(stored);
        json_t *list = NULL;
        if (st >= 0)
            st = meter_db_books_list(db, &list, &e);
        /* The version as listed: the latest, the one just stored or the
         * same text as before. */
        size_t i;
        json_t *v;
        /* The version stored, else (the same as the latest) the latest. */
        json_array_foreach(list, i, v)
        {
            if (strcmp(json_string_value(json_object_get(v, "id")),
                       pricing_book_id(book)) == 0 &&
                (version == 0 || json_integer_value(json_object_get(
                                     v, "version")) == version)) {
                json_decref(out);
                out = json_incref(v);
            }
        }
        json_decref(list);
        if (st < 0 || !out) {
            json_decref(out);
            out = db_failed(rq, db, st < 0 ? st : METER_DB_HARD, &e,
                            "the price book cannot be read back");
        } else {
            json_object_set_new(out, "created",
                                json_boolean(st >= 0 && version > 0));
            *status = version > 0 ? 201 : 200;
        }
    }
    free(copy);
    pricing_book_free(book);
    return out;
}

void
meterd_admin_book_upload(struct meter_http_request *rq)
{
    idempotent(rq, book_upload, NULL);
}

void
meterd_admin_books_list(struct meter_http_request *rq)
{
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *out = NULL;
    enum meter_db_status st =
        db ? meter_db_books_list(db, &out, &e) : METER_DB_HARD;
    if (st < 0)
        db_failed(rq, db, st, &e, "the price books cannot be listed");
    else
        meter_http_reply_json(rq, 200, json_pack("{s:o}", "items", out));
}

void
meterd_admin_book_get(struct meter_http_request *rq)
{
    const char *id = meter_http_param(rq, "id"),
               *v = meter_http_param(rq, "version");
    uint64_t version;
    if (!pricing_id_valid(id) ||
        meter_parse_uint(v, 1, 1000000000, &version) < 0) {
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no price book '%s' version '%s'", id, v);
        return;
    }
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *out = NULL;
    enum meter_db_status st =
        db ? meter_db_book_get(db, id, (int)version, &out, &e) : METER_DB_HARD;
    if (st < 0)
        db_failed(rq, db, st, &e, "the price book cannot be read");
    else if (st == METER_DB_NONE)
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no price book '%s' version %s", id, v);
    else
        meter_http_reply_json(rq, 200, out);
}

/* ---- API keys ------------------------------------------------------------ */

static json_t *
key_create(struct meter_http_request *rq, PGconn *db, unsigned *status)
{
    static const char *const fields[] = {"role", "name", "account_id", "scope",
                                         NULL};
    json_t *o = body_object(rq, "{\"role\": host|account|finance|admin, "
                                "\"name\": text, \"account_id\"?: ID, "
                                "\"scope\"?: [ID]}");
    if (!o)
        return NULL;
    const char *role_s = NULL, *name = NULL, *account = NULL;
    json_t *out = NULL, *scope = json_object_get(o, "scope");
    struct meter_buf sc = {0};
    struct meter_err e = {{0}};
    if (!only_members(rq, o, fields) ||
        !str_member(rq, o, "role", true, 16, &role_s) ||
        !str_member(rq, o, "name", true, 200, &name) ||
        !str_member(rq, o, "account_id", false, PRICING_ID_MAX, &account))
        goto done;
    enum meter_role role = meter_role_parse(role_s);
    if (!role) {
        meterd_bad_field(rq, "role", json_object_get(o, "role"),
                         "not host, account, finance or admin");
        goto done;
    }
    if ((role == METER_ROLE_ACCOUNT) != (account != NULL)) {
        meterd_bad_field(rq, "account_id", json_object_get(o, "account_id"),
                         "required with role account, and only with it");
        goto done;
    }
    if (account && !pricing_id_valid(account)) {
        meterd_bad_field(rq, "account_id", json_object_get(o, "account_id"),
                         "not an account id");
        goto done;
    }
    if (scope && !json_is_null(scope)) {
        size_t i;
        json_t *x;
        if (role != METER_ROLE_HOST || !json_is_array(scope) ||
            json_array_size(scope) == 0) {
            meterd_bad_field(rq, "scope", scope,
                             "a host key's accounts: a list of account ids");
            goto done;
        }
        json_array_foreach(scope, i, x)
        {
            if (!json_is_string(x) || !pricing_id_valid(json_string_value(x))) {
                meterd_bad_field(rq, "scope", x, "not an account id");
                goto done;
            }
            if (i)
                meter_buf_str(&sc, ",");
            meter_buf_str(&sc, json_string_value(x));
        }
    }
    char token[METER_TOKEN_LEN + 1];
    int64_t key_id;
    enum meter_db_status st = meter_db_key_create(
        db, role, account, name, sc.len ? sc.p : NULL, token, &key_id, &e);
    if (st < 0 && !meter_db_unavailable(db, st))
        /* refused: no such account, say */
        meter_http_reply_problem(rq, 409, "refused", "Refused", NULL, "%s",
                                 e.msg);
    else if (st < 0)
        db_failed(rq, db, st, &e, "the key cannot be created");
    else {
        out = json_pack("{s:I, s:s, s:s, s:s?, s:s}", "key_id",
                        (json_int_t)key_id, "role", role_s, "name", name,
                        "account_id", account, "token", token);
        *status = 201;
    }
    explicit_bzero(token, sizeof(token));
done:
    meter_buf_release(&sc);
    json_decref(o);
    return out;
}

void
meterd_admin_key_create(struct meter_http_request *rq)
{
    idempotent(rq, key_create, "token");
}

static void
add_key(const struct meter_key *k, void *arg)
{
    json_array_append_new(
        arg, json_pack("{s:I, s:s, s:s, s:s?, s:s, s:s?, s:s?}", "key_id",
                       (json_int_t)k->key_id, "role", k->role, "name", k->name,
                       "account_id", *k->account_id ? k->account_id : NULL,
                       "created_at", k->created_at, "revoked_at",
                       *k->revoked_at ? k->revoked_at : NULL, "scope",
                       *k->scope ? k->scope : NULL));
}

void
meterd_admin_keys_list(struct meter_http_request *rq)
{
    PGconn *db = meter_http_db(rq);
    struct meter_err e = {{0}};
    json_t *items = json_array();
    enum meter_db_status st =
        db ? meter_db_key_list(db, add_key, items, &e) : METER_DB_HARD;
    if (st < 0) {
        json_decref(items);
        db_failed(rq, db, st, &e, "the keys cannot be listed");
    } else {
        meter_http_reply_json(rq, 200, json_pack("{s:o}", "items", items));
    }
}

void
meterd_admin_key_revoke(struct meter_http_request *rq)
{
    const char *id = meter_http_param(rq, "id");
    uint64_t key_id;
    if (meter_parse_uint(id, 1, INT64_MAX, &key_id) < 0) {
        not_found(rq, "active key", id);
        return;
    }
    PGconn *db = admin_db(rq);
    if (!db)
        return;
    struct meter_err e = {{0}};
    enum meter_db_status st = meter_db_key_revoke(db, (int64_t)key_id, &e);
    if (st < 0)
        db_failed(rq, db, st, &e, "the key cannot be revoked");
    else if (st == METER_DB_NONE)
        not_found(rq, "active key", id);
    else
        meter_http_reply_json(rq, 200,
                              json_pack("{s:I, s:b}", "key_id",
                                        (json_int_t)key_id, "revoked", 1));
    meterd_act_reset(db);
}
