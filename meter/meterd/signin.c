/*
 * signin.c - signing a browser in and out: GET /sign-in (the form), POST
 * /sign-in (a key in, a session cookie out), POST /sign-out, and GET /
 * (where a signed-in browser lands).
 *
 * The session itself is a row of the database (meter_db_session_*), so
 * any meterd serves it and sign-out or revocation ends it everywhere;
 * the browser holds only its token, in an HttpOnly, SameSite=Strict
 * cookie (Secure under TLS), and never the key.
 *
 * The sign-in form has no session yet to carry a CSRF token, so it
 * carries its own (double submit): a random value both in a cookie
 * scoped to /sign-in and in the form. Another site can make a browser
 * post to /sign-in but can neither read nor set that cookie, so it
 * cannot sign a victim's browser in with the attacker's key (login
 * CSRF); where the browser names the page's origin, that is checked too.
 */
#include "meterd_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* A sign-in form is a key and two tokens: a body larger than this is
 * not one, and a client that has not signed in must not make meterd
 * hold a large one. */
#define FORM_MAX 16384
/* A way back after sign-in longer than this is not followed. */
#define NEXT_MAX 2048

bool
meterd_form_admit(struct meter_http_request *rq)
{
    const char *cl = meter_http_header(rq, "Content-Length");
    uint64_t n;
    if (!cl) {
        /* No length and no chunks: no body. Chunks could be any size. */
        if (!meter_http_header(rq, "Transfer-Encoding"))
            return true;
        meter_http_reply_problem(rq, 411, "length-required", "Length required",
                                 NULL, "a form needs a Content-Length");
        return false;
    }
    if (meter_parse_uint(cl, 0, UINT64_MAX, &n) < 0) {
        meter_http_reply_problem(rq, 400, "invalid-framing", "Invalid framing",
                                 NULL, "Content-Length '%s' is not a number",
                                 cl);
        return false;
    }
    if (n > FORM_MAX) {
        meter_http_reply_problem(rq, 413, "too-large", "Body too large", NULL,
                                 "a form of %" PRIu64 " bytes: at most %d", n,
                                 FORM_MAX);
        return false;
    }
    return true;
}

/* ---- cookies ------------------------------------------------------------- */

/* Adds Set-Cookie name=value with the attributes every cookie of ours
 * has: HttpOnly (no script reads it), SameSite=Strict (no other site's
 * request carries it), Secure under TLS; path, and max_age unless
 * negative (a cookie for this browser session). */
static void
set_cookie(struct meter_http_request *rq, const char *name, const char *value,
           const char *path, long max_age)
{
    char age[32] = "";
    if (max_age >= 0)
        snprintf(age, sizeof(age), "; Max-Age=%ld", max_age);
    /* Room for our names and paths and a token (68): never cut. */
    char c[256];
    int n =
        snprintf(c, sizeof(c), "%s=%s; Path=%s; HttpOnly; SameSite=Strict%s%s",
                 name, value, path, age, meter_http_tls(rq) ? "; Secure" : "");
    if (n < 0 || (size_t)n >= sizeof(c)) {
        meter_log(METER_LOG_ERROR, "cookie %s is too long", name);
        return;
    }
    meter_http_reply_header(rq, "Set-Cookie", c);
    explicit_bzero(c, sizeof(c));
}

/* Whether s has the shape of a CSRF token: 64 lowercase hex digits. */
static bool
csrf_shaped(const char *s)
{
    return s && strlen(s) == METER_CSRF_LEN &&
           strspn(s, "0123456789abcdef") == METER_CSRF_LEN;
}

/* ---- where to go after --------------------------------------------------- */

/* Whether next is a path of this server to send a browser to: "/" then
 * no second "/" or "\" (browsers read "//host" and "/\host" as another
 * host), and only the characters of an encoded path and query, so that
 * nothing in it can end the Location header or start a fragment. */
static bool
local_path(const char *next)
{
    static const char allowed[] = "abcdefghijklmnopqrstuvwxyz"
                                  "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                  "-._~!$&'()*+,;=:@%/?";
    size_t n = next ? strlen(next) : 0;
    return n >= 1 && n <= NEXT_MAX && next[0] == '/' && next[1] != '/' &&
           next[1] != '\\' && strspn(next, allowed) == n;
}

/* ---- the form ------------------------------------------------------------ */

/* Answers the sign-in page with status: error (NULL: none) above the
 * form, next carried through it, with a new CSRF token in the form and
 * its cookie (a form of another tab is then stale: signing in from it
 * shows the form again). */
static void
show_form(struct meter_http_request *rq, unsigned status, const char *error,
          const char *next)
{
    /* Always a new token: one that a cookie set by someone else
     * planted would let them sign this browser in with their key. */
    char csrf[METER_CSRF_LEN + 1];
    if (meter_random_hex(csrf, METER_CSRF_LEN / 2) < 0) {
        meter_http_reply_problem(rq, 503, "unavailable", "No random bytes",
                                 NULL, "the sign-in form cannot be made now");
        return;
    }
    set_cookie(rq, METER_HTTP_SIGNIN_CSRF_COOKIE, csrf, "/sign-in", -1);
    struct meter_buf out = {0};
    meterd_page_begin(&out, rq, "Sign in", NULL);
    meter_buf_str(&out, "<div class=\"sign-in\">\n<h1>Sign in</h1>\n");
    if (error) {
        meter_buf_str(&out, "<p class=\"error\" role=\"alert\" "
                            "id=\"key-error\">");
        meter_buf_html(&out, error);
        meter_buf_str(&out, "</p>\n");
    }
    meter_buf_str(&out, "<form method=\"post\" action=\"/sign-in\">\n"
                        "<input type=\"hidden\" name=\"csrf\" value=\"");
    meter_buf_html(&out, csrf);
    meter_buf_str(&out, "\">\n");
    if (next && local_path(next)) {
        meter_buf_str(&out, "<input type=\"hidden\" name=\"next\" value=\"");
        meter_buf_html(&out, next);
        meter_buf_str(&out, "\">\n");
    }
    meter_buf_str(&out, "<label for=\"key\">API key</label>\n"
                        "<input id=\"key\" name=\"key\" type=\"password\" "
                        "required autocomplete=\"current-password\" "
                        "autocapitalize=\"off\" spellcheck=\"false\" "
                        "aria-describedby=\"key-help");
    meter_buf_str(&out,
                  error ? " key-error\" aria-invalid=\"true\">\n" : "\">\n");
    meter_buf_str(
        &out, "<p class=\"help\" id=\"key-help\">A finance, admin or "
              "account key (<code>meterctl keys create</code>). The "
              "browser keeps a session that ends when you sign out, "
              "not the key.</p>\n"
              "<button type=\"submit\">Sign in</button>\n</form>\n</div>\n");
    meterd_page_end(&out);
    meterd_page_reply(rq, status, &out);
}

void
meterd_signin_form(struct meter_http_request *rq)
{
    show_form(rq, 200, NULL, meter_http_query(rq, "next"));
}

/* ---- signing in ---------------------------------------------------------- */

/* The form's key into out[n], spaces and line ends around it cut (a
 * key pasted from a terminal often has them): 1; 0 if there is none;
 * -1 if it is longer than any key. */
static int
typed_key(struct meter_http_request *rq, char *out, size_t n)
{
    const char *key = meter_http_form(rq, "key");
    if (!key)
        return 0;
    key += strspn(key, " \t\r\n");
    size_t len = strlen(key);
    while (len > 0 && strchr(" \t\r\n", key[len - 1]))
        len--;
    if (len >= n)
        return -1;
    memcpy(out, key, len);
    out[len] = '\0';
    return len > 0;
}

/* The session of who: the cookie, and a 303 to next or who's home. */
static void
start_session(struct meter_http_request *rq, PGconn *db,
              const struct meter_principal *who, const char *next)
{
    char token[METER_TOKEN_LEN + 1], csrf[METER_CSRF_LEN + 1];
    struct meter_err e = {{0}};
    int64_t ended = 0;
    enum meter_db_status st =
        meter_db_session_create(db, who->key_id, meterd.session_ttl,
                                meterd.max_sessions, token, csrf, &ended, &e);
    if (st < 0) {
        meter_http_reply_db_error(
            rq, db, st, &e, "the session of key %" PRId64 " cannot be started",
            who->key_id);
        return;
    }
    if (st == METER_DB_NONE) { /* revoked since it was looked up */
        if (!meter_http_attempt_failed(rq))
            return;
        show_form(rq, 401, "That key was not accepted. Check it and try again.",
                  next);
        return;
    }
    /* The browser's previous session, if any, ends: it would otherwise
     * linger unused until it expires. */
    const char *old = meter_http_cookie(rq, METER_HTTP_SESSION_COOKIE);
    if (old && meter_db_session_delete(db, old, &e) < 0)
        meter_log(METER_LOG_WARN, "sign-in: the previous session was kept: %s",
                  e.msg);
    set_cookie(rq, METER_HTTP_SESSION_COOKIE, token, "/",
               (long)meterd.session_ttl);
    set_cookie(rq, METER_HTTP_SIGNIN_CSRF_COOKIE, "", "/sign-in", 0);
    explicit_bzero(token, sizeof(token));
    explicit_bzero(csrf, sizeof(csrf));
    struct meter_buf home = {0};
    if (!local_path(next)) {
        meterd_home(who, &home);
        next = home.failed ? "/" : home.p;
    }
    meter_http_reply_redirect(rq, 303, next);
    meter_buf_release(&home);
    meter_http_note(rq, "signed in key %" PRId64 " (%s)%s", who->key_id,
                    meter_role_name(who->role),
                    ended ? ", its oldest session ended" : "");
}

void
meterd_signin(struct meter_http_request *rq)
{
    /* Checked before the form is read: a post from elsewhere, or one
     * without the form's own cookie, is not a sign-in of this browser's
     * user. */
    const char *cookie = meter_http_cookie(rq, METER_HTTP_SIGNIN_CSRF_COOKIE);
    if (!meter_http_same_origin(rq) || !csrf_shaped(cookie)) {
        show_form(rq, 403,
                  "This sign-in form has expired or did not come from this "
                  "site. Please sign in again.",
                  NULL);
        return;
    }
    if (!meter_http_form_or_reply(rq))
        return;
    const char *next = meter_http_form(rq, "next");
    const char *field = meter_http_form(rq, "csrf");
    if (!field || !meter_secret_equal(field, cookie)) {
        show_form(rq, 403,
                  "This sign-in form has expired or did not come from this "
                  "site. Please sign in again.",
                  next);
        return;
    }
    char key[METER_TOKEN_LEN + 1];
    int typed = typed_key(rq, key, sizeof(key));
    if (typed == 0) {
        show_form(rq, 400, "Enter an API key.", next);
        return;
    }
    /* Not a key's shape: not one, and not worth a lookup. */
    if (typed > 0 && !meter_http_token_shaped(key, "mtr_"))
        typed = -1;
    PGconn *db = typed < 0 ? NULL : meter_http_db(rq);
    struct meter_err e = {{0}};
    struct meter_principal who = {0};
    enum meter_db_status st = typed < 0 ? METER_DB_NONE
                              : db      ? meter_db_key_lookup(db, key, &who, &e)
                                        : METER_DB_HARD;
    explicit_bzero(key, sizeof(key));
    if (st < 0) {
        meter_http_reply_db_error(rq, db, st, &e, "the key cannot be checked");
        return;
    }
    /* Whether the key exists is not told: one message for both. */
    if (st == METER_DB_NONE) {
        if (!meter_http_attempt_failed(rq))
            return;
        meter_http_note(rq, "sign-in refused: unknown or revoked key");
        show_form(rq, 401, "That key was not accepted. Check it and try again.",
                  next);
        return;
    }
    if (who.role == METER_ROLE_HOST) {
        meter_http_note(rq, "sign-in refused: host key %" PRId64, who.key_id);
        show_form(rq, 403,
                  "Host keys send usage; they cannot sign in. Use a finance, "
                  "admin or account key.",
                  next);
        return;
    }
    if (!meter_http_signin_admit(rq, who.key_id))
        return;
    start_session(rq, db, &who, next);
}

/* ---- signing out, and the way in ----------------------------------------- */

void
meterd_signout(struct meter_http_request *rq)
{
    /* A browser's session (the layer checked its CSRF token) ends in
     * the database before its cookie is cleared: a sign-out that failed
     * must not look done. A bearer key has no session to end. */
    const char *token = meter_http_csrf(rq)
                            ? meter_http_cookie(rq, METER_HTTP_SESSION_COOKIE)
                            : NULL;
    if (token) {
        PGconn *db = meter_http_db(rq);
        struct meter_err e = {{0}};
        enum meter_db_status st =
            db ? meter_db_session_delete(db, token, &e) : METER_DB_HARD;
        if (st < 0) {
            meter_http_reply_db_error(rq, db, st, &e,
                                      "the session cannot be ended");
            return;
        }
    }
    set_cookie(rq, METER_HTTP_SESSION_COOKIE, "", "/", 0);
    meter_http_reply_redirect(rq, 303, "/sign-in");
    meter_http_note(rq, "signed out key %" PRId64,
                    meter_http_principal(rq)->key_id);
}

void
meterd_root(struct meter_http_request *rq)
{
    struct meter_buf home = {0};
    meterd_home(meter_http_principal(rq), &home);
    meter_http_reply_redirect(rq, 303, home.failed ? "/sign-in" : home.p);
    meter_buf_release(&home);
}
