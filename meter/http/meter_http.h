/*
 * meter_http.h - the HTTP layer every service of the project shares
 * (libmicrohttpd underneath; Taler's mhd/ is the model).
 *
 * A service is a table of routes: method, path pattern, the roles whose
 * keys may call it, whether it takes a body, a handler, and whether it
 * is a page for people. The layer does the rest the same way for every
 * route: routing (404, 405), authentication of a bearer key or a
 * browser session to a principal (401, 403; on a page, a redirect to
 * the sign-in page), CSRF protection of the session's requests that
 * change something (403), body buffering with a cap and gzip inflation
 * (413, 415, 400), the server-wide bound on bodies held at once (503
 * saturated), a per-thread database connection, metrics and an
 * access-log line per request by route, and a graceful stop.
 *
 * Browser sessions: a browser signs in once with its key (the service's
 * own sign-in route, meter_db_session_create) and then sends the
 * session cookie METER_HTTP_SESSION_COOKIE instead of the key. Every
 * route with roles takes either; an Authorization header, when there is
 * one, is used and the cookie ignored. A request authenticated by the
 * cookie whose method is not GET or HEAD must carry the session's CSRF
 * token, as the form field "csrf" (an application/x-www-form-urlencoded
 * body) or the X-CSRF-Token header, and if it has an Origin header,
 * that must be this server's own origin; else 403. Bearer requests need
 * neither: a browser never adds that header on its own.
 *
 * A handler receives a struct meter_http_request, valid until the
 * handler returns, and answers it with exactly one meter_http_reply_*
 * call; a handler that does not is answered 500. Handlers run on the
 * server's threads, several at once: what they share must be
 * thread-safe. Errors for people are RFC 9457 problem+json with a
 * stable code (type "urn:meter:problem:CODE") and a detail that names
 * the field and the value.
 */
#ifndef METER_HTTP_H
#define METER_HTTP_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "meter_db.h"
#include "meter_util.h"

struct meter_http;
struct meter_http_request;

/* Answers the request (with one meter_http_reply_* call). */
typedef void meter_http_handler(struct meter_http_request *rq);
/* Checks a route's own headers before its body arrives: true to go on;
 * false after replying with a refusal. */
typedef bool meter_http_admit(struct meter_http_request *rq);
/* Appends a route's own metrics (Prometheus text) to out. */
typedef void meter_http_metrics_fn(struct meter_buf *out);

struct meter_http_route {
    const char *method;      /* "GET" (answers HEAD too) or "POST" */
    const char *path;        /* "/v1/samples"; "{name}" matches one segment */
    unsigned roles;          /* enum meter_role bits whose keys may call it;
                                0: no key needed */
    bool body;               /* takes a body, up to the server's max_body */
    meter_http_admit *admit; /* may be NULL */
    meter_http_handler *handle;
    meter_http_metrics_fn *metrics; /* may be NULL */
    bool page; /* an HTML page for people: without credentials (or with a
                  session that ended) 303 to /sign-in?next=PATH; a
                  problem (a wrong role's 403, a 400, a 404) is a small
                  HTML page, not problem+json */
};

/* The cookie of a browser session, and of the CSRF token a sign-in form
 * carries before there is a session. */
#define METER_HTTP_SESSION_COOKIE "meter_session"
#define METER_HTTP_SIGNIN_CSRF_COOKIE "meter_csrf"

enum meter_log_level {
    METER_LOG_ERROR,
    METER_LOG_WARN,
    METER_LOG_INFO,
    METER_LOG_DEBUG
};

/* A log line: "TIME LEVEL MESSAGE", or a JSON object {"time", "level",
 * "msg", ...}. */
enum meter_log_format { METER_LOG_TEXT, METER_LOG_JSON };

/* A request id's length at most: the server's own are 16 hex digits; a
 * client's X-Request-Id is taken if it is 1 to 64 of [A-Za-z0-9._-]. */
#define METER_HTTP_REQUEST_ID_MAX 64

/* The certificate (chain) and private key HTTPS is served with, read
 * and checked by meter_http_tls_load. */
struct meter_http_tls {
    const char *cert_file, *key_file; /* kept, not copied: for messages */
    char *cert, *key;                 /* PEM text, NUL-terminated */
    size_t cert_len, key_len;
};

struct meter_http_config {
    struct sockaddr_storage listen; /* AF_INET or AF_INET6 */
    const char *conninfo;           /* resolved (meter_db_conninfo); copied */
    size_t max_body;                /* largest body, after inflation */
    size_t max_buffered; /* body bytes held at once, all requests: counted
                            as they arrive, a gzip body's also as it
                            inflates */
    unsigned threads;    /* request threads, each with a connection */
    /* Each 0 for its default (4096, 256, 30 s, 120 s): */
    unsigned max_connections;    /* open at once (clipped to what the
                                    open-file limit leaves) */
    unsigned max_per_ip;         /* open at once from one address */
    unsigned idle_timeout_s;     /* a silent connection is closed after it */
    unsigned body_timeout_s;     /* a request must have arrived within it */
    unsigned header_timeout_s;   /* 0 for 30 s: a connection whose next
                                    request's headers have not all arrived
                                    this long after it opened (or after its
                                    last answer) is closed */
    unsigned db_timeout_s;       /* 0 for 30 s: a request whose database
                                    answers nothing for longer gets 503, its
                                    connection broken (each statement
                                    answered restarts it) */
    unsigned rate_limit;         /* requests a second a key may make, in
                                    bursts of twice that, and unknown keys
                                    an address may send; 0: no limit */
    unsigned signin_per_key;     /* sign-ins a minute one key may make, in
                                    bursts of as many; 0: no limit */
    unsigned signin_per_address; /* sign-ins a minute from one address,
                                    all keys, bursts of as many; 0: no
                                    limit */
    const struct meter_http_route *routes; /* kept, not copied */
    size_t nroutes;
    /* NULL: plain HTTP; else HTTPS only, with these (kept, not copied:
     * release them after meter_http_stop). */
    const struct meter_http_tls *tls;
};

/* Reads cert_file and key_file (PEM) into tls and checks them as the
 * server will use them: libmicrohttpd built with TLS, each file
 * readable, a certificate chain, an unencrypted private key, the key
 * that of the first certificate; and that GnuTLS takes the server's
 * TLS priorities. A key file open to group or others is logged as a
 * warning. 0, or -1 with e naming the file at fault (tls then holds
 * nothing). Release with meter_http_tls_release. */
int meter_http_tls_load(struct meter_http_tls *tls, const char *cert_file,
                        const char *key_file, struct meter_err *e);
/* Frees what tls holds, wiping the key's bytes first. NULL is fine. */
void meter_http_tls_release(struct meter_http_tls *tls);

/* Starts serving; NULL with e set if it cannot listen. One server a
 * process (its threads' database connections are thread-local). */
struct meter_http *meter_http_start(const struct meter_http_config *cfg,
                                    struct meter_err *e);
/* The port h listens on (the one chosen, when configured with 0). */
unsigned meter_http_port(const struct meter_http *h);
/* Stops accepting connections, lets the requests being handled finish,
 * stops, closes the database connections and frees h. NULL is fine. */
void meter_http_stop(struct meter_http *h);

/* ---- paths ------------------------------------------------------------ */

/* A "{name}" segment of a route's path pattern, as matched in a path. */
struct meter_http_segment {
    const char *name; /* in the pattern, after the '{'; name_len bytes */
    size_t name_len;
    const char *value; /* in the path; len bytes, never 0 */
    size_t len;
};

/* Whether path matches pattern, segment by segment, "{name}" matching one
 * non-empty segment (no '/'); its at most max segments go to params (they
 * point into pattern and path) and their number to *n. The server routes
 * with it; public for its fuzz target. */
bool meter_http_path_match(const char *pattern, const char *path,
                           struct meter_http_segment *params, size_t max,
                           size_t *n);

/* ---- the request ------------------------------------------------------ */

/* A request header, or NULL. */
const char *meter_http_header(struct meter_http_request *rq, const char *name);
/* Whether header name is media type want, parameters aside
 * ("application/json; charset=utf-8" is application/json). */
bool meter_http_header_is(struct meter_http_request *rq, const char *name,
                          const char *want);
/* The value of {name} in the route's path, or NULL. Text: valid UTF-8
 * without control characters (meter_text_check), or the request was
 * answered 400 before its handler. */
const char *meter_http_param(struct meter_http_request *rq, const char *name);
/* The request's path, without its query. */
const char *meter_http_path(struct meter_http_request *rq);
/* A query-string argument, or NULL. Its name and value are text, as
 * path segments are. */
const char *meter_http_query(struct meter_http_request *rq, const char *name);
/* The body, inflated, NUL-terminated (len excludes the NUL); NULL and 0
 * for a route without a body. */
const char *meter_http_body(struct meter_http_request *rq, size_t *len);
/* The value of cookie name, or NULL. */
const char *meter_http_cookie(struct meter_http_request *rq, const char *name);
/* Who sent it; NULL on a route with no roles. */
const struct meter_principal *
meter_http_principal(struct meter_http_request *rq);
/* The CSRF token of the session that authenticated rq, for the forms of
 * the page it answers (hidden field "csrf"); NULL when a bearer key
 * did, or none. */
const char *meter_http_csrf(struct meter_http_request *rq);
/* Whether the server serves HTTPS (cookies are then Secure). */
bool meter_http_tls(struct meter_http_request *rq);
/* Whether rq comes from this server's own origin: true without an Origin
 * header, else whether it is the scheme (https with TLS, else http)
 * and the Host header. Checked for every cookie's request that changes
 * something; a route with no roles that trusts a cookie checks it
 * itself. */
bool meter_http_same_origin(struct meter_http_request *rq);

/* The body as a form (application/x-www-form-urlencoded), parsed on
 * the first call: true; false after answering 415 (another content
 * type), 400 (a malformed %-escape, a NUL, more than 64 fields) or 503
 * (no memory). */
bool meter_http_form_or_reply(struct meter_http_request *rq);
/* Field name of the form, decoded ('+' a space, %XX a byte), the first
 * if repeated; NULL if there is none or the body is not a valid form.
 * Valid until the request completes. */
const char *meter_http_form(struct meter_http_request *rq, const char *name);

/* Whether s has the shape of a token with prefix ("mtr_" for a key,
 * "mts_" for a session) and 64 lowercase hex digits: anything else is
 * refused without asking the database. */
bool meter_http_token_shaped(const char *s, const char *prefix);

/* Credentials a handler checked and found unknown (a sign-in form's
 * key) count against the client's address as unknown bearer keys do:
 * counts one failure; false, after answering 429, when the address has
 * failed more than cfg.rate_limit a second (bursts of twice that), else
 * true and the handler answers its own refusal. Known keys never meet
 * this limit: it is checked after the lookup, so that a neighbour's
 * guesses behind the same address (a NAT) lock no one out. */
bool meter_http_attempt_failed(struct meter_http_request *rq);
/* A sign-in of key key_id from rq's address: true if both may sign in
 * now; false, after answering 429 with Retry-After, when the key has
 * signed in cfg.signin_per_key times or the address
 * cfg.signin_per_address times in the last minute (token buckets of
 * this process, refilled evenly; the key's is checked first, so that a
 * key refused takes nothing of its address's). */
bool meter_http_signin_admit(struct meter_http_request *rq, int64_t key_id);
/* The server the request came to. */
struct meter_http *meter_http_server(struct meter_http_request *rq);

/* The calling thread's database connection, reconnected if needed; NULL
 * if the database cannot be reached (logged and counted). */
PGconn *meter_http_db(struct meter_http_request *rq);
/*
 * The one answer to a database failure st (< 0) of an operation on db,
 * the connection meter_http_db gave (NULL if it gave none). what, a
 * printf format, says what could not be done ("invoices cannot be
 * read"); the detail adds why. When the database is away or busy
 * (meter_db_unavailable: no connection, a lost one, a timeout, too many
 * connections, SOFT after the retries; SHARD_AWAY, whose shard the
 * detail names): 503 "unavailable" with Retry-After. When the server
 * refused a statement on a live connection (a privilege, a constraint,
 * a bug: a retry will not fix it): 500
 * "internal", titled "Database error". Either way counted in
 * meter_db_errors_total (a NULL db was counted by meter_http_db) and
 * e's message (may be NULL) logged, one line, as a warning or an error:
 * never sent to the client, since it may quote SQL, names and values.
 */
void meter_http_reply_db_error(struct meter_http_request *rq, PGconn *db,
                               enum meter_db_status st,
                               const struct meter_err *e, const char *what, ...)
    __attribute__((format(printf, 5, 6)));

/* Adds text to the request's access-log line. */
void meter_http_note(struct meter_http_request *rq, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- replies --------------------------------------------------------------
 */

/* Adds a header to the reply rq is about to get, whichever it is (at
 * most 8; copied): Set-Cookie, say. A name or value that cannot be a
 * header (a newline in it), or no memory, makes the reply a 500. */
void meter_http_reply_header(struct meter_http_request *rq, const char *name,
                             const char *value);
/* A redirect (303 See Other after a form, say) to location, a path or
 * URL already encoded; not cached. */
void meter_http_reply_redirect(struct meter_http_request *rq, unsigned status,
                               const char *location);
/* An HTML page of len bytes (copied), UTF-8, with the headers every page
 * has: a Content-Security-Policy that allows only this server's
 * stylesheets and images, no scripts, forms posted only here and no
 * framing; nosniff; Referrer-Policy same-origin; Cache-Control
 * no-store. */
void meter_http_reply_html(struct meter_http_request *rq, unsigned status,
                           const char *html, size_t len);
/* The same, its policy also allowing the stylesheets of source style
 * (a CSP source such as "'sha256-...'", the hash of a document's inline
 * stylesheet; NULL for none): a document that must stand alone, such
 * as an invoice, served with the pages' headers. */
void meter_http_reply_html_style(struct meter_http_request *rq, unsigned status,
                                 const char *html, size_t len,
                                 const char *style);
/* body is taken (decref'd); written compact with a final newline. */
void meter_http_reply_json(struct meter_http_request *rq, unsigned status,
                           json_t *body);
void meter_http_reply_text(struct meter_http_request *rq, unsigned status,
                           const char *type, const char *text, size_t len);
/* A problem: code is the stable part of its type, title a short
 * summary, detail a printf format. errors (taken, may be NULL) lists
 * the offending items. A 503 and a 429 carry Retry-After, a 401
 * WWW-Authenticate. On a page route, title and detail as a small HTML
 * page for a person instead. */
void meter_http_reply_problem(struct meter_http_request *rq, unsigned status,
                              const char *code, const char *title,
                              json_t *errors, const char *detail, ...)
    __attribute__((format(printf, 6, 7)));

/* ---- metrics and logs -------------------------------------------------------
 */

/* The server's metrics, then each route's, as Prometheus text. */
void meter_http_metrics(struct meter_http *h, struct meter_buf *out);

/* Lines below level are dropped; default METER_LOG_INFO. */
void meter_log_set_level(enum meter_log_level level);
/* The level named s ("error", "warn", "info", "debug"); -1 if none. */
int meter_log_parse_level(const char *s);
/* Text (the default) or JSON lines from now on. */
void meter_log_set_format(enum meter_log_format format);
/* The format named s ("text", "json"); -1 if none. */
int meter_log_parse_format(const char *s);
/* Lines go to file path (appended to, created mode 0640) instead of
 * stderr from now on. Call once, before other threads log. 0, or -1
 * with e naming the file. */
int meter_log_open(const char *path, struct meter_err *e);
/* Opens meter_log_open's path again, lines from now on going to the file
 * there now (logrotate renamed the old one, then sent SIGHUP); no line
 * is lost or split between them. Safe while other threads log; nothing
 * to do when the log is stderr. 0, or -1 with e (lines then keep going
 * to the old file). */
int meter_log_reopen(struct meter_err *e);
/*
 * A line: the time (UTC, milliseconds), the level and the message, and
 * the id of the request the calling thread serves, if it serves one.
 * Never spans lines: control characters of the message are escaped.
 * One write(2) a line, no lock.
 */
void meter_log(enum meter_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
