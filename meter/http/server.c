/*
 * server.c - the HTTP server: libmicrohttpd's thread pool (epoll), the
 * route table, and each request's life from headers to answer.
 *
 * A request goes: framing (400; a body with its Content-Length, never
 * chunked), route (404/405), key or session (401/403/503, a page's 303
 * to the sign-in page, and 429 past the key's or the address's rate:
 * auth.c, guard.c), a session's origin and CSRF header (403), its path
 * segments and query arguments as text (400), the route's own admission
 * (admit), then for a route with a body the encoding and the declared length
 * (415/413) and a reservation against max_buffered (503 saturated); the body is
 * buffered up to max_body (413 past it) and inflated if gzip; a
 * session's form then shows its CSRF token (403); then the handler,
 * under the database watchdog (guard.c). The request's memory is freed
 * in one place, when libmicrohttpd says it is complete. What a handler
 * reads of its request is request.c; its database connection, db.c.
 */
#include "http_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- routes ------------------------------------------------------------- */

static bool
method_is(const char *method, const char *route_method)
{
    if (strcmp(method, route_method) == 0)
        return true;
    return strcmp(method, "HEAD") == 0 && strcmp(route_method, "GET") == 0;
}

/* Finds rq's route; answers 404 or 405 (false) if there is none. */
static bool
route(struct meter_http_request *rq)
{
    const struct meter_http_config *cfg = &rq->h->cfg;
    for (size_t i = 0; i < cfg->nroutes; i++) {
        const struct meter_http_route *r = &cfg->routes[i];
        struct meter_http_segment seg[HTTP_MAX_PARAMS];
        size_t nseg;
        if (!meter_http_path_match(r->path, rq->url, seg, HTTP_MAX_PARAMS,
                                   &nseg))
            continue;
        if (!method_is(rq->method, r->method)) {
            /* Counted, as 404s are, under "other". */
            size_t len = strlen(rq->allow);
            snprintf(rq->allow + len, sizeof(rq->allow) - len, "%s%s",
                     len ? ", " : "", r->method);
            continue;
        }
        rq->route = r;
        rq->route_index = i;
        for (size_t k = 0; k < nseg; k++) {
            rq->param_name[k] = seg[k].name;
            rq->param_value[k] = strndup(seg[k].value, seg[k].len);
        }
        rq->nparams = nseg;
        for (size_t k = 0; k < rq->nparams; k++)
            if (!rq->param_value[k]) {
                meter_http_reply_problem(rq, 503, "saturated", "Out of memory",
                                         NULL, "retry later");
                return false;
            }
        return true;
    }
    if (rq->allow[0])
        meter_http_reply_problem(rq, 405, "method-not-allowed",
                                 "Method not allowed", NULL, "use %s",
                                 rq->allow);
    else
        meter_http_reply_problem(rq, 404, "not-found", "Not found", NULL,
                                 "no such route");
    return false;
}

/* ---- parameters ---------------------------------------------------------- */

/* Appends s[0..len) percent-encoded, its first 100 bytes and "..." after
 * them if there are more: the bytes may be any, and a message has room
 * for some. */
static void
shown(struct meter_buf *b, const char *s, size_t len)
{
    meter_buf_urlencode_n(b, s, len < 100 ? len : 100);
    if (len > 100)
        meter_buf_str(b, "...");
}

/* Refuses a path segment or query argument that is not text: 400 naming
 * it and its value as sent. Returns false. */
static bool
not_text(struct meter_http_request *rq, bool path, const char *name,
         size_t name_len, const char *value, size_t len, bool bad_name)
{
    struct meter_buf n = {0}, v = {0};
    shown(&n, name, name_len);
    shown(&v, value ? value : "", value ? len : 0);
    const char *what = path ? "path segment" : "query parameter";
    const char *why = bad_name ? "its name is not UTF-8 text"
                               : "not UTF-8 text (an invalid byte "
                                 "or a control character)";
    const char *ns = n.p && !n.failed ? n.p : "";
    const char *vs = v.p && !v.failed ? v.p : "";
    json_t *errors =
        json_pack("[{s:s, s:s, s:s}]", "field", ns, "value", vs, "reason", why);
    meter_http_reply_problem(rq, 400, path ? "invalid-path" : "invalid-query",
                             path ? "Invalid path" : "Invalid query", errors,
                             "%s '%s' value '%s': %s", what, ns, vs, why);
    meter_buf_release(&n);
    meter_buf_release(&v);
    return false;
}

/* The first query argument whose name or value is not text. */
struct bad_arg {
    const char *name, *value;
    size_t name_len, len;
    bool found, bad_name;
};

static enum MHD_Result
find_bad_arg(void *cls, enum MHD_ValueKind kind, const char *key,
             size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    struct bad_arg *b = cls;
    bool name_ok = meter_text_check(key, key_size) == key_size;
    if (name_ok &&
        (!value || meter_text_check(value, value_size) == value_size))
        return MHD_YES;
    *b = (struct bad_arg){key, value, key_size, value_size, true, !name_ok};
    return MHD_NO;
}

/* Every path segment and query argument is text before a handler sees
 * it: PostgreSQL refuses a parameter that is not UTF-8, and that error
 * read as the database failing (a 503 a client retries for ever).
 * False after refusing. */
static bool
params_text(struct meter_http_request *rq)
{
    for (size_t k = 0; k < rq->nparams; k++) {
        const char *v = rq->param_value[k];
        size_t len = strlen(v);
        if (meter_text_check(v, len) != len)
            return not_text(rq, true, rq->param_name[k],
                            strcspn(rq->param_name[k], "}"), v, len, false);
    }
    struct bad_arg b = {0};
    MHD_get_connection_values_n(rq->c, MHD_GET_ARGUMENT_KIND, find_bad_arg, &b);
    return !b.found ||
           not_text(rq, false, b.name, b.name_len, b.value, b.len, b.bad_name);
}

/* ---- admission ----------------------------------------------------------- */

/* Refuses rq: the bodies held reach max_buffered. Returns false. */
static bool
saturated(struct meter_http_request *rq)
{
    meter_http_reply_problem(rq, 503, "saturated", "Service saturated", NULL,
                             "too many batches are arriving at once; retry "
                             "later");
    return false;
}

/* Reserves n more bytes of max_buffered for rq's body, as they arrive;
 * false if that passes the bound (the bytes stay counted until rq
 * completes). */
static bool
reserve(struct meter_http_request *rq, size_t n)
{
    size_t held = atomic_fetch_add(&rq->h->buffered, n);
    rq->reserved += n;
    return held + n <= rq->h->cfg.max_buffered;
}

/* For a route with a body: the encoding, the declared length, and the
 * reservation against max_buffered. False after refusing. */
static bool
admit_body(struct meter_http_request *rq)
{
    struct meter_http *h = rq->h;
    const char *enc = meter_http_header(rq, "Content-Encoding");
    if (enc && strcasecmp(enc, "gzip") != 0 && strcasecmp(enc, "identity")) {
        meter_http_reply_problem(rq, 415, "unsupported-media-type",
                                 "Unsupported content encoding", NULL,
                                 "content encoding '%s' is not gzip or "
                                 "identity",
                                 enc);
        return false;
    }
    const char *cl = meter_http_header(rq, "Content-Length");
    uint64_t declared = 0;
    bool has_length = cl && meter_parse_uint(cl, 0, UINT64_MAX, &declared) == 0;
    if (has_length && declared > h->cfg.max_body) {
        meter_http_reply_problem(rq, 413, "too-large", "Body too large", NULL,
                                 "the body is larger than %zu bytes",
                                 h->cfg.max_body);
        return false;
    }
    /* Nothing is reserved for what is only declared: bytes count against
     * max_buffered as they arrive (take_body). */
    return true;
}

/* Reserves n bytes of an inflating body (http_gunzip's grow). */
static bool
reserve_inflated(void *cls, size_t n)
{
    return reserve(cls, n);
}

/* The whole body has arrived: the size cap, then gzip, its output
 * reserved against max_buffered as it grows (a small body inflating to
 * a large one is refused before it is held whole). False after
 * refusing. */
static bool
finish_body(struct meter_http_request *rq)
{
    struct meter_http *h = rq->h;
    if (rq->no_room) /* memory, or max_buffered: retry later */
        return saturated(rq);
    if (rq->too_big) {
        meter_http_reply_problem(rq, 413, "too-large", "Body too large", NULL,
                                 "the body is larger than %zu bytes",
                                 h->cfg.max_body);
        return false;
    }
    const char *enc = meter_http_header(rq, "Content-Encoding");
    if (!enc || strcasecmp(enc, "gzip") != 0)
        return true;
    char *plain;
    size_t len;
    int rc = http_gunzip(rq->body.p ? rq->body.p : "", rq->body.len,
                         h->cfg.max_body, reserve_inflated, rq, &plain, &len);
    if (rc == -3 && rq->reserved > h->cfg.max_buffered) {
        /* Alone past the budget: no retry would ever fit. */
        meter_http_reply_problem(rq, 413, "too-large", "Body too large", NULL,
                                 "the body and what it inflates to need "
                                 "more than the %zu bytes of --max-buffered",
                                 h->cfg.max_buffered);
        return false;
    }
    if (rc == -3)
        return saturated(rq);
    if (rc == -2) {
        meter_http_reply_problem(rq, 413, "too-large", "Body too large", NULL,
                                 "the body inflates to more than %zu bytes",
                                 h->cfg.max_body);
        return false;
    }
    if (rc < 0) {
        meter_http_reply_problem(rq, 400, "invalid-gzip", "Invalid body", NULL,
                                 "the body is not a valid gzip stream");
        return false;
    }
    /* Both stay counted until the request completes. */
    meter_buf_release(&rq->body);
    rq->body = (struct meter_buf){.p = plain, .len = len, .cap = len + 1};
    return true;
}

/* ---- the request's life ------------------------------------------------ */

/* The first call, with the headers: every check before the body. False
 * when the request was refused (answered). */
/* Counts the Content-Length headers of a request, and whether they
 * differ. */
struct lengths {
    int n;
    bool differ;
    const char *first;
};

static enum MHD_Result
count_length(void *cls, enum MHD_ValueKind kind, const char *key,
             const char *value)
{
    (void)kind;
    struct lengths *l = cls;
    if (strcasecmp(key, "Content-Length") != 0)
        return MHD_YES;
    if (l->n++ && strcmp(l->first, value ? value : "") != 0)
        l->differ = true;
    if (l->n == 1)
        l->first = value ? value : "";
    return MHD_YES;
}

/* Refuses framing that a proxy in front could read otherwise than this
 * server: two different Content-Length headers, or one beside chunked
 * Transfer-Encoding (request smuggling); and any Transfer-Encoding, since
 * libmicrohttpd 0.9.75 answers a chunk line longer than its connection's
 * buffer (a 40 KB chunk extension) with its own 500 page, which no
 * handler sees: a body comes with its Content-Length (the project's
 * clients all send one), refused here before a byte of it is read. False
 * after refusing. */
static bool
framing(struct meter_http_request *rq)
{
    struct lengths l = {0};
    MHD_get_connection_values(rq->c, MHD_HEADER_KIND, count_length, &l);
    const char *te = meter_http_header(rq, "Transfer-Encoding");
    if (!l.differ && !te)
        return true;
    if (l.differ || l.n)
        meter_http_reply_problem(rq, 400, "invalid-framing", "Invalid framing",
                                 NULL,
                                 l.differ ? "two different Content-Length "
                                            "headers"
                                          : "Content-Length beside "
                                            "Transfer-Encoding");
    else
        meter_http_reply_problem(
            rq, 400, "invalid-framing", "Invalid framing", NULL,
            "Transfer-Encoding '%s' is not accepted: send the body with a "
            "Content-Length",
            meter_text_check(te, strlen(te)) == strlen(te) ? te : "(not text)");
    return false;
}

static bool
admit(struct meter_http_request *rq)
{
    if (!framing(rq))
        return false;
    if (!route(rq))
        return false;
    if (rq->route->roles && !http_authenticate(rq))
        return false;
    if (!params_text(rq))
        return false;
    if (rq->route->admit && !rq->route->admit(rq)) {
        if (!rq->status) /* a refusal must answer; this one did not */
            meter_http_reply_problem(rq, 500, "internal", "Internal error",
                                     NULL,
                                     "the request was refused unanswered");
        return false;
    }
    if (rq->route->body && !admit_body(rq))
        return false;
    return true;
}

/* Seconds since rq's headers began. */
static double
age(const struct meter_http_request *rq)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - rq->start.tv_sec) +
           (double)(now.tv_nsec - rq->start.tv_nsec) / 1e9;
}

/* Keeps upload data, up to max_body and while max_buffered holds it;
 * past either it keeps reading, storing nothing, so that the 413 or 503
 * goes out once the client has sent it all. False when the body is
 * later than body_timeout: the connection is then closed. */
static bool
take_body(struct meter_http_request *rq, const char *data, size_t n)
{
    rq->received += n;
    if (age(rq) > rq->h->cfg.body_timeout_s) {
        snprintf(rq->note, sizeof(rq->note), "body timeout after %zu bytes",
                 rq->received);
        return false;
    }
    /* A route without a body takes none: dropped, never held. */
    if (rq->too_big || !rq->route || !rq->route->body)
        return true;
    if (rq->received > rq->h->cfg.max_body) {
        rq->too_big = true;
        meter_buf_release(&rq->body);
        return true;
    }
    if (!reserve(rq, n)) {
        /* Saturated: say so once the body is in (retry later). */
        rq->no_room = true;
        rq->too_big = true;
        meter_buf_release(&rq->body);
        return true;
    }
    meter_buf_add(&rq->body, data, n);
    if (rq->body.failed) {
        /* Out of memory: keep reading, storing nothing, and say
         * saturated (retry later) rather than too large (give up). */
        rq->no_room = true;
        rq->too_big = true;
        meter_buf_release(&rq->body);
    }
    return true;
}

/* The connection's entry of the header deadline (notify_connection). */
static struct http_conn *
conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void
notify_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                  enum MHD_ConnectionNotificationCode toe)
{
    struct meter_http *h = cls;
    struct http_conn *conn = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn = calloc(1, sizeof(*conn));
        if (!conn || !ci)
            return; /* not watched: the idle timeout still applies */
        conn->fd = ci->connect_fd;
        http_conn_started(h, conn);
        *socket_context = conn;
    } else if (conn) {
        http_conn_closed(h, conn);
        free(conn);
        *socket_context = NULL;
    }
}

/* Each call of libmicrohttpd's for rq (dispatch's). */
static enum MHD_Result
step(struct meter_http_request *rq, bool first, const char *upload_data,
     size_t *upload_size)
{
    struct meter_http *h = rq->h;
    struct MHD_Connection *c = rq->c;
    if (first) {
        struct http_conn *conn = conn_of(c);
        if (conn)
            http_conn_request(h, conn, true);
        /* Answered in the next call, once MHD has the whole request: a
         * reply queued with the headers alone makes MHD close the
         * connection, dropping requests pipelined after it. */
        admit(rq);
        http_watch_disarm(h, http_db_slot());
        return rq->status ? rq->result : MHD_YES;
    } else if (*upload_size) {
        /* Refused already: drop the body, within the same deadline. */
        bool in_time = rq->status ? age(rq) <= h->cfg.body_timeout_s
                                  : take_body(rq, upload_data, *upload_size);
        *upload_size = 0;
        return in_time ? MHD_YES : MHD_NO;
    }
    if (rq->status)
        return rq->result;
    if (rq->route->body && !finish_body(rq))
        return rq->result;
    if (!http_csrf_form(rq))
        return rq->result;
    atomic_fetch_add(&h->in_flight, 1);
    rq->route->handle(rq);
    http_watch_disarm(h, http_db_slot());
    atomic_fetch_sub(&h->in_flight, 1);
    if (!rq->status) {
        meter_log(METER_LOG_ERROR, "%s %s: the handler did not answer",
                  rq->method, rq->route->path);
        meter_http_reply_problem(rq, 500, "internal", "Internal error", NULL,
                                 "the request was not answered");
    }
    return rq->result;
}

static enum MHD_Result
dispatch(void *cls, struct MHD_Connection *c, const char *url,
         const char *method, const char *version, const char *upload_data,
         size_t *upload_size, void **con_cls)
{
    (void)version;
    struct meter_http *h = cls;
    struct meter_http_request *rq = *con_cls;
    bool first = !rq;
    if (first) {
        rq = calloc(1, sizeof(*rq));
        if (!rq)
            return MHD_NO;
        rq->h = h;
        rq->c = c;
        rq->method = method;
        rq->url = url;
        rq->route_index = h->cfg.nroutes;
        clock_gettime(CLOCK_MONOTONIC, &rq->start);
        *con_cls = rq;
        http_request_id(rq);
    }
    /* What this thread logs meanwhile names the request. */
    http_log_request_id(rq->request_id);
    enum MHD_Result result = step(rq, first, upload_data, upload_size);
    http_log_request_id(NULL);
    return result;
}

/* Called when a request ends, answered or not: count, log, free. */
static void
completed(void *cls, struct MHD_Connection *c, void **con_cls,
          enum MHD_RequestTerminationCode toe)
{
    struct meter_http *h = cls;
    struct meter_http_request *rq = *con_cls;
    if (!rq)
        return;
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    double secs = (double)(end.tv_sec - rq->start.tv_sec) +
                  (double)(end.tv_nsec - rq->start.tv_nsec) / 1e9;
    if (rq->status)
        http_observe(rq, secs);
    char peer[INET6_ADDRSTRLEN];
    http_peer_text(c, peer, sizeof(peer));
    http_log_access(&(struct http_access){
        .request_id = rq->request_id,
        .remote = peer,
        .method = rq->method,
        .route = rq->route_index < h->cfg.nroutes
                     ? h->cfg.routes[rq->route_index].path
                     : "other",
        .note = rq->note,
        .status = rq->status,
        .seconds = secs,
        .bytes = rq->received,
        .key_id = rq->who.key_id,
        .aborted = toe != MHD_REQUEST_TERMINATED_COMPLETED_OK,
    });
    atomic_fetch_sub(&h->buffered, rq->reserved);
    struct http_conn *conn = conn_of(c);
    if (conn)
        http_conn_request(h, conn, false);
    for (size_t i = 0; i < rq->nparams; i++)
        free(rq->param_value[i]);
    http_form_free(rq);
    http_reply_headers_clear(rq);
    meter_buf_release(&rq->body);
    explicit_bzero(rq->csrf, sizeof(rq->csrf));
    free(rq);
    *con_cls = NULL;
}

/* ---- start and stop ---------------------------------------------------- */

/* cfg's connection limit, within what the open-file limit leaves once
 * raised to its hard limit: a socket each, a database connection per
 * thread, and a margin for the process's own files. */
static unsigned
connection_limit(const struct meter_http_config *cfg)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return cfg->max_connections;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    rlim_t spare = 64 + 2 * (rlim_t)cfg->threads;
    rlim_t room = rl.rlim_cur > spare ? rl.rlim_cur - spare : 1;
    if ((rlim_t)cfg->max_connections <= room)
        return cfg->max_connections;
    meter_log(METER_LOG_WARN,
              "max connections %u lowered to %u: the open-file limit is %llu",
              cfg->max_connections, (unsigned)room,
              (unsigned long long)rl.rlim_cur);
    return (unsigned)room;
}

struct meter_http *
meter_http_start(const struct meter_http_config *cfg, struct meter_err *e)
{
    if (cfg->threads < 1 || cfg->threads > HTTP_MAX_THREADS - 1) {
        meter_fail(e, "threads '%u' is not from 1 to %d", cfg->threads,
                   HTTP_MAX_THREADS - 1);
        return NULL;
    }
    if (!cfg->conninfo) {
        meter_fail(e, "no database configured");
        return NULL;
    }
    struct meter_http *h = calloc(1, sizeof(*h));
    if (!h || !(h->conninfo = strdup(cfg->conninfo)) ||
        !(h->metrics = calloc(cfg->nroutes + 1, sizeof(*h->metrics)))) {
        meter_fail(e, "out of memory");
        goto fail;
    }
    h->cfg = *cfg;
    h->cfg.conninfo = h->conninfo;
    /* Zero: the defaults (meterd's usage text). */
    if (!h->cfg.max_connections)
        h->cfg.max_connections = 4096;
    if (!h->cfg.max_per_ip)
        h->cfg.max_per_ip = 256;
    if (!h->cfg.idle_timeout_s)
        h->cfg.idle_timeout_s = 30;
    if (!h->cfg.body_timeout_s)
        h->cfg.body_timeout_s = 120;
    if (!h->cfg.db_timeout_s)
        h->cfg.db_timeout_s = 30;
    if (!h->cfg.header_timeout_s)
        h->cfg.header_timeout_s = 30;
    /* A bucket's rate is a second's, a sign-in's a minute's. */
    http_limit_init(&h->by_key, h->cfg.rate_limit, 2.0 * h->cfg.rate_limit);
    http_limit_init(&h->failures, h->cfg.rate_limit, 2.0 * h->cfg.rate_limit);
    http_limit_init(&h->signin_by_key, h->cfg.signin_per_key / 60.0,
                    h->cfg.signin_per_key);
    http_limit_init(&h->signin_by_addr, h->cfg.signin_per_address / 60.0,
                    h->cfg.signin_per_address);
    if (http_watch_start(h) < 0) {
        meter_fail(e, "cannot start the database watchdog");
        goto fail;
    }
    h->watching = true;
    http_db_start(h);
    h->cfg.max_connections = connection_limit(&h->cfg);
    /* HTTPS changes nothing above the connection: the same limits,
     * timeouts (the handshake counts as activity, silence as idle) and
     * routes. TLS 1.0 and 1.1 are refused (RFC 8996). */
    const struct meter_http_tls *tls = cfg->tls;
    struct MHD_OptionItem tls_options[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, tls ? tls->cert : NULL},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, tls ? tls->key : NULL},
        {MHD_OPTION_HTTPS_PRIORITIES, 0,
         (void *)(uintptr_t)HTTP_TLS_PRIORITIES},
        {MHD_OPTION_END, 0, NULL},
    };
    if (!tls)
        tls_options[0].option = MHD_OPTION_END;
    /* IPv6 dual-stack: [::] takes IPv4 clients too, as mapped addresses
     * (peer.c unmaps them for the logs and the limits). */
    bool v6 = cfg->listen.ss_family == AF_INET6;
    h->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
            MHD_USE_ERROR_LOG | (tls ? MHD_USE_TLS : 0) |
            (v6 ? MHD_USE_DUAL_STACK : 0),
        0, NULL, NULL, dispatch, h, MHD_OPTION_EXTERNAL_LOGGER, http_mhd_log,
        NULL, MHD_OPTION_ARRAY, tls_options, MHD_OPTION_SOCK_ADDR,
        &h->cfg.listen, MHD_OPTION_THREAD_POOL_SIZE, cfg->threads,
        MHD_OPTION_NOTIFY_COMPLETED, completed, h, MHD_OPTION_NOTIFY_CONNECTION,
        notify_connection, h, MHD_OPTION_CONNECTION_TIMEOUT,
        h->cfg.idle_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
        h->cfg.max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        h->cfg.max_per_ip, MHD_OPTION_END);
    if (!h->daemon) {
        char addr[INET6_ADDRSTRLEN] = "?";
        const struct sockaddr_in *in4 = (const void *)&cfg->listen;
        const struct sockaddr_in6 *in6 = (const void *)&cfg->listen;
        inet_ntop(cfg->listen.ss_family,
                  v6 ? (const void *)&in6->sin6_addr
                     : (const void *)&in4->sin_addr,
                  addr, sizeof(addr));
        meter_fail(e, "cannot listen on %s%s%s:%u: %s", v6 ? "[" : "", addr,
                   v6 ? "]" : "", ntohs(v6 ? in6->sin6_port : in4->sin_port),
                   strerror(errno));
        goto fail;
    }
    return h;
fail:
    if (h) {
        if (h->watching)
            http_watch_stop(h);
        free(h->conninfo);
        free(h->metrics);
        free(h);
    }
    return NULL;
}

unsigned
meter_http_port(const struct meter_http *h)
{
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

void
meter_http_stop(struct meter_http *h)
{
    if (!h)
        return;
    /* The listening socket is ours once quiesced: closed after the stop. */
    MHD_socket listener = MHD_quiesce_daemon(h->daemon);
    while (atomic_load(&h->in_flight) > 0)
        usleep(10000);
    MHD_stop_daemon(h->daemon);
    if (listener != MHD_INVALID_SOCKET)
        close(listener);
    http_watch_stop(h);
    http_db_stop();
    /* The pool's threads are gone: no one uses the connections. */
    int n = atomic_load(&h->nconns);
    for (int i = 0; i < n && i < HTTP_MAX_THREADS; i++)
        PQfinish(h->conns[i]);
    free(h->metrics);
    free(h->conninfo);
    free(h);
}
