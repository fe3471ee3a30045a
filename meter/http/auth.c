/*
 * auth.c - who a request comes from, on a route with roles: a bearer key
 * (Authorization: Bearer TOKEN), else the browser session of the
 * meter_session cookie; then the role, the key's rate and, for a
 * session's request that changes something, where it comes from.
 *
 * Why a session's requests need more than a bearer's: a browser never
 * adds an Authorization header on its own, so a bearer request cannot be
 * forged by another site's page; but it sends our cookie with every
 * request to us, whatever page made it. So a cookie's request that is
 * not GET or HEAD must show the session's CSRF token, which only our own
 * pages hold (a form field or the X-CSRF-Token header), and must not
 * come from another origin when the browser says where it comes from.
 * SameSite=Strict keeps the cookie off cross-site requests in current
 * browsers already; the token does not rely on it.
 *
 * On a page (route->page) the answers are for a person: no credentials
 * or a session that ended is a 303 to the sign-in page, which sends the
 * browser back once signed in; a wrong role or a refused form a small
 * HTML page.
 */
#include "http_int.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* ---- refusals ------------------------------------------------------------ */

/* The roles of mask as "host or admin". */
static void
role_list(unsigned mask, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (unsigned bit = 1; bit <= METER_ROLE_ADMIN; bit <<= 1) {
        if (!(mask & bit))
            continue;
        mask &= ~bit;
        int k = snprintf(out + len, n - len, "%s%s",
                         len == 0 ? ""
                         : mask   ? ", "
                                  : " or ",
                         meter_role_name((enum meter_role)bit));
        if (k < 0 || (size_t)k >= n - len)
            return;
        len += (size_t)k;
    }
}

/* Refuses rq with status: a problem (on a page, a small HTML page
 * saying the same to a person: meter_http_reply_problem). False. */
static bool refuse(struct meter_http_request *rq, unsigned status,
                   const char *code, const char *title, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static bool
refuse(struct meter_http_request *rq, unsigned status, const char *code,
       const char *title, const char *fmt, ...)
{
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    meter_utf8_cut(detail, sizeof(detail) - 1);
    meter_http_reply_problem(rq, status, code, title, NULL, "%s", detail);
    return false;
}

/* Appends path with each segment percent-encoded, '/' kept. */
static void
append_path(struct meter_buf *b, const char *path)
{
    for (; *path; path++) {
        char one[2] = {*path, '\0'};
        if (*path == '/')
            meter_buf_add(b, "/", 1);
        else
            meter_buf_urlencode(b, one);
    }
}

struct query {
    struct meter_buf *b;
    bool first;
};

/* Appends one query argument, encoded again (libmicrohttpd has decoded
 * it). */
static enum MHD_Result
append_arg(void *cls, enum MHD_ValueKind kind, const char *key,
           const char *value)
{
    (void)kind;
    struct query *q = cls;
    meter_buf_add(q->b, q->first ? "?" : "&", 1);
    q->first = false;
    meter_buf_urlencode(q->b, key);
    if (value) {
        meter_buf_add(q->b, "=", 1);
        meter_buf_urlencode(q->b, value);
    }
    return MHD_YES;
}

/* Sends a person to the sign-in page, which sends the browser back here
 * (path and query) once signed in: for GET and HEAD only, since a
 * redirect cannot replay a form's POST, and not for "/", where the
 * sign-in leads anyway. A way back longer than the sign-in page follows
 * (2 KiB) is left out. False. */
static bool
to_sign_in(struct meter_http_request *rq)
{
    struct meter_buf here = {.max = 2048}, loc = {0};
    meter_buf_str(&loc, "/sign-in");
    bool safe =
        strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0;
    int nargs =
        MHD_get_connection_values(rq->c, MHD_GET_ARGUMENT_KIND, NULL, NULL);
    if (safe && (strcmp(rq->url, "/") != 0 || nargs > 0)) {
        append_path(&here, rq->url);
        struct query q = {&here, true};
        MHD_get_connection_values(rq->c, MHD_GET_ARGUMENT_KIND, append_arg, &q);
        if (!here.failed) {
            meter_buf_str(&loc, "?next=");
            meter_buf_urlencode(&loc, here.p);
        }
    }
    meter_http_reply_redirect(rq, 303, loc.failed ? "/sign-in" : loc.p);
    meter_buf_release(&here);
    meter_buf_release(&loc);
    snprintf(rq->note, sizeof(rq->note), "to sign-in");
    return false;
}

/* No credentials, or ones that authenticate no one: 401, or on a page
 * the sign-in page. False. */
static bool
unauthenticated(struct meter_http_request *rq, const char *title,
                const char *detail)
{
    if (rq->route->page)
        return to_sign_in(rq);
    meter_http_reply_problem(rq, 401, "unauthenticated", title, NULL, "%s",
                             detail);
    return false;
}

/* ---- rate limits: failed credentials, sign-ins ------------------------- */

/* Refuses rq with 429 (rq->retry_after set): false. */
static bool
rate_limited(struct meter_http_request *rq, const char *who, unsigned limit,
             const char *per)
{
    meter_http_reply_problem(rq, 429, "rate-limited", "Too many requests", NULL,
                             "%s: more than %u a %s; retry after %u s", who,
                             limit, per, rq->retry_after);
    return false;
}

bool
meter_http_attempt_failed(struct meter_http_request *rq)
{
    if (http_limit_take(rq->h, &rq->h->failures, http_peer_id(rq->c),
                        &rq->retry_after))
        return true;
    return rate_limited(rq,
                        "this address sent too many unknown or revoked keys",
                        rq->h->cfg.rate_limit, "second");
}

bool
meter_http_signin_admit(struct meter_http_request *rq, int64_t key_id)
{
    struct meter_http *h = rq->h;
    char who[64];
    if (!http_limit_take(h, &h->signin_by_key, key_id, &rq->retry_after)) {
        snprintf(who, sizeof(who), "key %lld signs in too often",
                 (long long)key_id);
        return rate_limited(rq, who, h->cfg.signin_per_key, "minute");
    }
    if (!http_limit_take(h, &h->signin_by_addr, http_peer_id(rq->c),
                         &rq->retry_after))
        return rate_limited(rq, "this address signs in too often",
                            h->cfg.signin_per_address, "minute");
    return true;
}

/* ---- who it is ----------------------------------------------------------- */

bool
meter_http_token_shaped(const char *s, const char *prefix)
{
    return strncmp(s, prefix, 4) == 0 && strlen(s) == METER_TOKEN_LEN &&
           strspn(s + 4, "0123456789abcdef") == METER_TOKEN_LEN - 4;
}

/* Looks rq's credentials up: the bearer token if there is one, else the
 * session cookie's token; NONE, without asking the database, for a
 * token that cannot be a key's or a session's. *db: the connection
 * asked, NULL if none. */
static enum meter_db_status
look_up(struct meter_http_request *rq, const char *bearer, const char *session,
        PGconn **db, struct meter_err *e)
{
    *db = NULL;
    if (!meter_http_token_shaped(bearer ? bearer : session,
                                 bearer ? "mtr_" : "mts_"))
        return METER_DB_NONE;
    if (!(*db = meter_http_db(rq)))
        return METER_DB_HARD;
    enum meter_db_status st =
        bearer ? meter_db_key_lookup(*db, bearer, &rq->who, e)
               : meter_db_session_lookup(*db, session, &rq->who, rq->csrf, e);
    rq->by_cookie = !bearer && st == METER_DB_ROWS;
    return st;
}

/* For a session's request that changes something: the origin, then the
 * X-CSRF-Token header, or else the form's field once the body is in
 * (csrf_pending). False after refusing. */
static bool
csrf_admit(struct meter_http_request *rq)
{
    if (!rq->by_cookie || strcmp(rq->method, "GET") == 0 ||
        strcmp(rq->method, "HEAD") == 0)
        return true;
    if (!meter_http_same_origin(rq))
        return refuse(rq, 403, "cross-origin", "Forbidden",
                      "the request comes from another site (Origin '%s'): "
                      "a signed-in browser may change something only from "
                      "this server's own pages",
                      meter_http_header(rq, "Origin"));
    const char *token = meter_http_header(rq, "X-CSRF-Token");
    if (token) {
        if (meter_secret_equal(token, rq->csrf))
            return true;
        return refuse(rq, 403, "csrf", "Forbidden",
                      "the X-CSRF-Token header is not this session's CSRF "
                      "token: reload the page and try again");
    }
    if (rq->route->body) {
        rq->csrf_pending = true;
        return true;
    }
    return refuse(rq, 403, "csrf", "Forbidden",
                  "a signed-in browser's %s needs the session's CSRF token "
                  "in the X-CSRF-Token header",
                  rq->method);
}

bool
http_csrf_form(struct meter_http_request *rq)
{
    if (!rq->csrf_pending)
        return true;
    const char *token = NULL;
    if (meter_http_header_is(rq, "Content-Type",
                             "application/x-www-form-urlencoded")) {
        if (!meter_http_form_or_reply(rq))
            return false;
        token = meter_http_form(rq, "csrf");
    }
    if (!token)
        return refuse(rq, 403, "csrf", "Forbidden",
                      "a signed-in browser's %s needs the session's CSRF "
                      "token: the form field 'csrf' or the X-CSRF-Token "
                      "header",
                      rq->method);
    if (meter_secret_equal(token, rq->csrf))
        return true;
    return refuse(rq, 403, "csrf", "Forbidden",
                  "the form's field 'csrf' is not this session's CSRF token: "
                  "reload the page and try again");
}

bool
http_authenticate(struct meter_http_request *rq)
{
    char roles[64];
    role_list(rq->route->roles, roles, sizeof(roles));
    /* A header wins: a client that sends one means it. */
    const char *auth = meter_http_header(rq, "Authorization");
    const char *session =
        auth ? NULL : meter_http_cookie(rq, METER_HTTP_SESSION_COOKIE);
    bool bearer = auth && strncasecmp(auth, "Bearer ", 7) == 0 && auth[7];
    if (!bearer && !session) {
        char detail[160];
        snprintf(detail, sizeof(detail),
                 "send 'Authorization: Bearer TOKEN' with a key of role %s, "
                 "or sign in at /sign-in",
                 roles);
        return unauthenticated(rq, "Authentication required", detail);
    }
    /* Looked up before the address's limit of unknown keys decides: a
     * known key is let through whatever its neighbours send (issue 26:
     * a flood of guesses behind a NAT locked every host of it out).
     * The price: a guess of the shape of a key costs an indexed lookup
     * even past the limit; one of another shape costs none. */
    struct meter_err e = {{0}};
    PGconn *db;
    enum meter_db_status st =
        look_up(rq, bearer ? auth + 7 : NULL, session, &db, &e);
    if (st < 0) {
        meter_http_reply_db_error(rq, db, st, &e, "the %s cannot be checked",
                                  bearer ? "key" : "session");
        return false;
    }
    if (st == METER_DB_NONE) {
        if (!meter_http_attempt_failed(rq))
            return false;
        return unauthenticated(
            rq, bearer ? "Invalid token" : "Session ended",
            bearer ? "the bearer token is unknown or revoked"
                   : "the session is unknown, expired or signed out, or its "
                     "key revoked: sign in again at /sign-in");
    }
    if (!(rq->who.role & rq->route->roles))
        return refuse(rq, 403, "forbidden", "Wrong role",
                      "a key of role '%s' cannot use %s %s; use role %s",
                      meter_role_name(rq->who.role), rq->route->method,
                      rq->route->path, roles);
    if (!http_limit_take(rq->h, &rq->h->by_key, rq->who.key_id,
                         &rq->retry_after)) {
        char why[64];
        snprintf(why, sizeof(why), "key %lld makes too many requests",
                 (long long)rq->who.key_id);
        return rate_limited(rq, why, rq->h->cfg.rate_limit, "second");
    }
    return csrf_admit(rq);
}

bool
meter_http_same_origin(struct meter_http_request *rq)
{
    const char *origin = meter_http_header(rq, "Origin");
    if (!origin)
        return true;
    const char *host = meter_http_header(rq, "Host");
    bool tls = meter_http_tls(rq);
    const char *scheme = tls ? "https://" : "http://";
    size_t n = strlen(scheme);
    if (!host || !*host || strncasecmp(origin, scheme, n) != 0)
        return false;
    if (strcasecmp(origin + n, host) == 0)
        return true;
    /* A browser leaves the scheme's default port out of Origin; a Host
     * header may carry it. */
    const char *port = tls ? ":443" : ":80";
    size_t h = strlen(host), o = strlen(origin + n), p = strlen(port);
    return h == o + p && strncasecmp(origin + n, host, o) == 0 &&
           strcmp(host + o, port) == 0;
}
