/*
 * meterd.c - the HTTP service sandbox hosts push usage to.
 *
 * libmicrohttpd runs a pool of threads (epoll); each thread has its own
 * database connection. A batch is answered 200 only after its
 * transaction commits. Routes: POST /v1/samples, GET /healthz, /readyz,
 * /metrics. SIGTERM or SIGINT: stop accepting, finish the batches in
 * flight, exit 0.
 */
#include "meter.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RETRY_AFTER "2"
/* Samples a batch may hold: bounds a batch's memory (about 500 bytes a
 * sample while it is processed) whatever its body's size. */
#define MAX_BATCH_SAMPLES 500000

static const char usage_text[] =
    "usage: meterd [OPTIONS]\n"
    "\n"
    "The meter service: ingests per-second usage samples over HTTP into\n"
    "PostgreSQL, exactly once.\n"
    "\n"
    "options (each also from the environment):\n"
    "  --listen ADDR:PORT   address to listen on ($METER_LISTEN;\n"
    "                       default 127.0.0.1:8080)\n"
    "  --db CONNINFO        the database, a libpq conninfo or URI\n"
    "                       ($METER_DATABASE_URL; default the embedded\n"
    "                       database of the working directory)\n"
    "  --max-body BYTES     largest request body, after decompression\n"
    "                       ($METER_MAX_BODY; default 67108864)\n"
    "  --max-buffered BYTES request bodies held at once, past which new\n"
    "                       batches get 503 ($METER_MAX_BUFFERED;\n"
    "                       default max-body x threads)\n"
    "  --threads N          request threads, each with a database\n"
    "                       connection ($METER_THREADS; default 4)\n"
    "  --log-level LEVEL    error, warn, info (one line per request) or\n"
    "                       debug ($METER_LOG_LEVEL; default info)\n"
    "  --help               this text\n";

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

static struct {
    char listen[128];
    const char *conninfo; /* resolved: never NULL once started */
    size_t max_body;
    size_t max_buffered; /* bodies held at once, all connections */
    unsigned threads;
    enum log_level log_level;
} cfg;

static struct meter_registry *registry;
static atomic_size_t buffered; /* bytes reserved by bodies in progress */

/* ---- logging ---------------------------------------------------------- */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void logf_(enum log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
logf_(enum log_level lvl, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (lvl > cfg.log_level)
        return;
    char when[32];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&log_lock);
    fprintf(stderr, "%s.%03ldZ %s ", when, ts.tv_nsec / 1000000, names[lvl]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    pthread_mutex_unlock(&log_lock);
    va_end(ap);
}

/* ---- metrics ---------------------------------------------------------- */

enum route { R_SAMPLES, R_HEALTHZ, R_READYZ, R_METRICS, R_OTHER, NROUTES };
static const char *const route_names[NROUTES] = {
    "/v1/samples", "/healthz", "/readyz", "/metrics", "other"};
static const unsigned statuses[] = {200, 400, 401, 403, 404,
                                    405, 413, 415, 500, 503};
#define NSTATUS (sizeof(statuses) / sizeof(statuses[0]))
static const double buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                 0.5,   1,    2.5,   5,    10};
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

static struct {
    atomic_ullong requests[NROUTES][NSTATUS];
    atomic_ullong accepted, duplicates, conflicts, rejected;
    atomic_ullong db_errors;
    atomic_llong in_flight;
    atomic_ullong latency_bucket[NBUCKETS + 1];
    atomic_ullong latency_count;
    atomic_ullong latency_us_sum;
} metrics;

static void
count_request(enum route r, unsigned status)
{
    for (size_t i = 0; i < NSTATUS; i++)
        if (statuses[i] == status)
            atomic_fetch_add(&metrics.requests[r][i], 1);
}

static void
observe_latency(double seconds)
{
    size_t b = 0;
    while (b < NBUCKETS && seconds > buckets[b])
        b++;
    atomic_fetch_add(&metrics.latency_bucket[b], 1);
    atomic_fetch_add(&metrics.latency_count, 1);
    atomic_fetch_add(&metrics.latency_us_sum,
                     (unsigned long long)(seconds * 1e6));
}

static char *
render_metrics(size_t *len)
{
    size_t cap = 16384, n = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
#define EMIT(...)                                                              \
    do {                                                                       \
        int k_ = snprintf(out + n, cap - n, __VA_ARGS__);                      \
        if (k_ > 0 && (size_t)k_ < cap - n)                                    \
            n += (size_t)k_;                                                   \
    } while (0)
    EMIT("# HELP meter_requests_total HTTP requests by route and status.\n"
         "# TYPE meter_requests_total counter\n");
    for (size_t r = 0; r < NROUTES; r++)
        for (size_t s = 0; s < NSTATUS; s++)
            EMIT("meter_requests_total{route=\"%s\",status=\"%u\"} %llu\n",
                 route_names[r], statuses[s],
                 atomic_load(&metrics.requests[r][s]));
    EMIT("# HELP meter_samples_total Samples by outcome.\n"
         "# TYPE meter_samples_total counter\n"
         "meter_samples_total{outcome=\"accepted\"} %llu\n"
         "meter_samples_total{outcome=\"duplicate\"} %llu\n"
         "meter_samples_total{outcome=\"conflict\"} %llu\n"
         "meter_samples_total{outcome=\"rejected\"} %llu\n",
         atomic_load(&metrics.accepted), atomic_load(&metrics.duplicates),
         atomic_load(&metrics.conflicts), atomic_load(&metrics.rejected));
    EMIT("# HELP meter_db_errors_total Database errors.\n"
         "# TYPE meter_db_errors_total counter\n"
         "meter_db_errors_total %llu\n",
         atomic_load(&metrics.db_errors));
    EMIT("# HELP meter_batches_in_flight Batches being processed.\n"
         "# TYPE meter_batches_in_flight gauge\n"
         "meter_batches_in_flight %lld\n",
         atomic_load(&metrics.in_flight));
    EMIT("# HELP meter_buffered_bytes Request bodies held (reserved).\n"
         "# TYPE meter_buffered_bytes gauge\n"
         "meter_buffered_bytes %zu\n",
         atomic_load(&buffered));
    EMIT("# HELP meter_batch_seconds Time from a batch's headers to its "
         "answer.\n# TYPE meter_batch_seconds histogram\n");
    unsigned long long cum = 0;
    for (size_t b = 0; b <= NBUCKETS; b++) {
        cum += atomic_load(&metrics.latency_bucket[b]);
        if (b < NBUCKETS)
            EMIT("meter_batch_seconds_bucket{le=\"%g\"} %llu\n", buckets[b],
                 cum);
        else
            EMIT("meter_batch_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
    }
    EMIT("meter_batch_seconds_sum %.6f\nmeter_batch_seconds_count %llu\n",
         (double)atomic_load(&metrics.latency_us_sum) / 1e6,
         atomic_load(&metrics.latency_count));
#undef EMIT
    *len = n;
    return out;
}

/* ---- database connections: one per thread ------------------------------ */

/* Each pool thread keeps its connection in slot tl_slot of conns, so
 * that the main thread can close them all at the end. */
static PGconn *conns[256];
static atomic_int nconns;
static _Thread_local int tl_slot = -1;

/* The thread's connection, (re)connected if needed; NULL if the database
 * cannot be reached. */
static PGconn *
thread_db(void)
{
    if (tl_slot < 0) {
        tl_slot = atomic_fetch_add(&nconns, 1);
        if (tl_slot >= (int)(sizeof(conns) / sizeof(conns[0])))
            abort(); /* more threads than --threads allows */
    }
    PGconn **db = &conns[tl_slot];
    if (*db && PQstatus(*db) == CONNECTION_OK)
        return *db;
    PQfinish(*db);
    struct meter_err e = {{0}};
    *db = meter_db_connect(cfg.conninfo, &e);
    if (!*db) {
        atomic_fetch_add(&metrics.db_errors, 1);
        logf_(LOG_WARN, "database unreachable: %s", e.msg);
    }
    return *db;
}

/* After the daemon has stopped: no thread uses the connections. */
static void
close_connections(void)
{
    int n = atomic_load(&nconns);
    for (int i = 0; i < n && i < (int)(sizeof(conns) / sizeof(conns[0])); i++) {
        PQfinish(conns[i]);
        conns[i] = NULL;
    }
}

/* ---- authentication --------------------------------------------------- */

struct principal {
    char role[16];
    char account_id[PRICING_ID_MAX + 1];
};

/* Looks the bearer token up: 1 found, 0 not, -1 database unreachable. */
static int
authenticate(PGconn *db, const char *token, struct principal *who)
{
    uint8_t hash[32];
    meter_token_hash(token, hash);
    const char *values[] = {(const char *)hash};
    int lengths[] = {32}, formats[] = {1};
    PGresult *r = PQexecParams(db,
                               "SELECT role, coalesce(account_id, '')"
                               " FROM api_keys WHERE token_hash = $1"
                               " AND revoked_at IS NULL",
                               1, NULL, values, lengths, formats, 0);
    int rc = -1;
    if (PQresultStatus(r) == PGRES_TUPLES_OK) {
        rc = PQntuples(r) == 1;
        if (rc) {
            snprintf(who->role, sizeof(who->role), "%s", PQgetvalue(r, 0, 0));
            snprintf(who->account_id, sizeof(who->account_id), "%s",
                     PQgetvalue(r, 0, 1));
        }
    } else {
        atomic_fetch_add(&metrics.db_errors, 1);
    }
    PQclear(r);
    return rc;
}

/* ---- responses -------------------------------------------------------- */

struct request {
    enum route route;
    char *body;
    size_t len, cap;
    bool too_big;
    size_t reserved; /* bytes counted against --max-buffered */
    struct timespec start;
    unsigned status;
    char note[160]; /* for the log line */
};

static enum MHD_Result
send_text(struct MHD_Connection *c, struct request *rq, unsigned status,
          const char *type, char *text, size_t len, bool retry)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (retry)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, RETRY_AFTER);
    if (status == 401)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Bearer");
    rq->status = status;
    enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result
send_json(struct MHD_Connection *c, struct request *rq, unsigned status,
          json_t *body, const char *type, bool retry)
{
    char *text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(body);
    if (!text)
        return MHD_NO;
    size_t len = strlen(text);
    /* A newline ends the body, for people reading it with curl. */
    char *t = realloc(text, len + 2);
    if (t) {
        text = t;
        text[len++] = '\n';
        text[len] = '\0';
    }
    return send_text(c, rq, status, type, text, len, retry);
}

/* An RFC 9457 problem: a stable type, a title, and what went wrong. */
static enum MHD_Result
send_problem(struct MHD_Connection *c, struct request *rq, unsigned status,
             const char *code, const char *title, const char *detail,
             json_t *errors)
{
    json_t *p = json_object();
    char type[96];
    snprintf(type, sizeof(type), "urn:meter:problem:%s", code);
    json_object_set_new(p, "type", json_string(type));
    json_object_set_new(p, "title", json_string(title));
    json_object_set_new(p, "status", json_integer(status));
    json_object_set_new(p, "detail", json_string(detail));
    if (errors)
        json_object_set_new(p, "errors", errors);
    snprintf(rq->note, sizeof(rq->note), "%s", code);
    return send_json(c, rq, status, p, "application/problem+json",
                     status == 503);
}

static json_t *
problems_json(const struct meter_problems *p)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < p->n; i++) {
        const struct meter_problem *x = &p->items[i];
        json_t *o = json_object();
        json_object_set_new(o, "index", json_integer((json_int_t)x->index));
        json_object_set_new(o, "field", json_string(x->err.field));
        json_object_set_new(o, "value", json_string(x->err.value));
        json_object_set_new(o, "reason", json_string(x->err.reason));
        json_array_append_new(arr, o);
    }
    return arr;
}

/* ---- POST /v1/samples ------------------------------------------------- */

static bool
header_is(struct MHD_Connection *c, const char *name, const char *want)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    if (!v)
        return false;
    size_t n = strlen(want);
    /* "application/json; charset=utf-8" is application/json */
    return strncasecmp(v, want, n) == 0 &&
           (v[n] == '\0' || v[n] == ';' || v[n] == ' ');
}

/* Checks what can be checked before the body arrives: the token, its
 * role, the content type and the declared length. Queues an answer and
 * returns false if the request is refused. */
static bool
admit_samples(struct MHD_Connection *c, struct request *rq,
              enum MHD_Result *ret)
{
    const char *auth =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!auth || strncasecmp(auth, "Bearer ", 7) != 0 || !auth[7]) {
        *ret = send_problem(c, rq, 401, "unauthenticated",
                            "Authentication required",
                            "send 'Authorization: Bearer TOKEN' with a key "
                            "of role host",
                            NULL);
        return false;
    }
    PGconn *db = thread_db();
    struct principal who;
    int found = db ? authenticate(db, auth + 7, &who) : -1;
    if (found < 0) {
        *ret =
            send_problem(c, rq, 503, "unavailable", "Database unavailable",
                         "the database cannot be reached; retry later", NULL);
        return false;
    }
    if (!found) {
        *ret = send_problem(c, rq, 401, "unauthenticated", "Invalid token",
                            "the bearer token is unknown or revoked", NULL);
        return false;
    }
    if (strcmp(who.role, "host") != 0) {
        char detail[96];
        snprintf(detail, sizeof(detail),
                 "a key of role '%s' cannot send samples; use role host",
                 who.role);
        *ret =
            send_problem(c, rq, 403, "forbidden", "Wrong role", detail, NULL);
        return false;
    }
    if (!header_is(c, "Content-Type", "application/json") &&
        !header_is(c, "Content-Type", "application/x-ndjson")) {
        const char *ct =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        char detail[200];
        snprintf(detail, sizeof(detail),
                 "content type '%s' is not application/json or "
                 "application/x-ndjson",
                 ct ? ct : "(none)");
        *ret = send_problem(c, rq, 415, "unsupported-media-type",
                            "Unsupported content type", detail, NULL);
        return false;
    }
    const char *enc =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
    if (enc && strcasecmp(enc, "gzip") != 0 && strcasecmp(enc, "identity")) {
        char detail[160];
        snprintf(detail, sizeof(detail),
                 "content encoding '%s' is not gzip or identity", enc);
        *ret = send_problem(c, rq, 415, "unsupported-media-type",
                            "Unsupported content encoding", detail, NULL);
        return false;
    }
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > cfg.max_body) {
        char detail[128];
        snprintf(detail, sizeof(detail), "the body is larger than %zu bytes",
                 cfg.max_body);
        *ret = send_problem(c, rq, 413, "too-large", "Body too large", detail,
                            NULL);
        return false;
    }
    return true;
}

static int64_t
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static enum MHD_Result
ingest_samples(struct MHD_Connection *c, struct request *rq)
{
    char detail[256];
    if (rq->too_big) {
        snprintf(detail, sizeof(detail), "the body is larger than %zu bytes",
                 cfg.max_body);
        return send_problem(c, rq, 413, "too-large", "Body too large", detail,
                            NULL);
    }
    char *body = rq->body, *plain = NULL;
    size_t len = rq->len;
    const char *enc =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Encoding");
    if (enc && strcasecmp(enc, "gzip") == 0) {
        int rc = meter_gunzip(rq->body, rq->len, cfg.max_body, &plain, &len);
        if (rc == -2) {
            snprintf(detail, sizeof(detail),
                     "the body inflates to more than %zu bytes", cfg.max_body);
            return send_problem(c, rq, 413, "too-large", "Body too large",
                                detail, NULL);
        }
        if (rc < 0)
            return send_problem(c, rq, 400, "invalid-gzip", "Invalid body",
                                "the body is not a valid gzip stream", NULL);
        body = plain;
        /* The inflated body counts against --max-buffered too. */
        size_t more = len > rq->len ? len - rq->len : 0;
        size_t held = atomic_fetch_add(&buffered, more);
        rq->reserved += more;
        if (held + more > cfg.max_buffered) {
            free(plain);
            return send_problem(c, rq, 503, "saturated", "Service saturated",
                                "too many batches are arriving at once; "
                                "retry later",
                                NULL);
        }
    }
    bool ndjson = header_is(c, "Content-Type", "application/x-ndjson");
    struct meter_sample *s = NULL;
    size_t n = 0;
    struct meter_problems probs = {0};
    struct meter_ingest_result res = {0};
    struct meter_err e = {{0}};
    enum MHD_Result ret;

    atomic_fetch_add(&metrics.in_flight, 1);
    if (meter_body_parse(body, len, ndjson, MAX_BATCH_SAMPLES, &s, &n, &probs) <
        0) {
        ret =
            send_problem(c, rq, 503, "saturated", "Out of memory",
                         "the service cannot hold this batch now; retry", NULL);
        goto out;
    }
    enum meter_ingest_status st = METER_INGEST_INVALID;
    if (probs.total == 0) {
        PGconn *db = thread_db();
        st = db ? meter_ingest(db, registry, s, n, now_us(), &res, &probs, &e)
                : METER_INGEST_UNAVAILABLE;
    }
    switch (st) {
    case METER_INGEST_OK: {
        atomic_fetch_add(&metrics.accepted, res.accepted);
        atomic_fetch_add(&metrics.duplicates, res.duplicates);
        atomic_fetch_add(&metrics.conflicts, res.conflicts);
        if (res.conflicts)
            logf_(LOG_WARN,
                  "batch of %zu samples: %llu conflicting seconds "
                  "ignored (the first value stands)",
                  n, (unsigned long long)res.conflicts);
        json_t *o = json_object();
        json_object_set_new(o, "accepted",
                            json_integer((json_int_t)res.accepted));
        json_object_set_new(o, "duplicates",
                            json_integer((json_int_t)res.duplicates));
        json_object_set_new(o, "conflicts",
                            json_integer((json_int_t)res.conflicts));
        snprintf(rq->note, sizeof(rq->note),
                 "accepted=%llu duplicates=%llu conflicts=%llu",
                 (unsigned long long)res.accepted,
                 (unsigned long long)res.duplicates,
                 (unsigned long long)res.conflicts);
        ret = send_json(c, rq, 200, o, "application/json", false);
        break;
    }
    case METER_INGEST_INVALID:
        atomic_fetch_add(&metrics.rejected, n);
        snprintf(detail, sizeof(detail),
                 "%zu problem%s in the batch; nothing was stored (the first "
                 "%zu are listed)",
                 probs.total, probs.total == 1 ? "" : "s", probs.n);
        ret = send_problem(c, rq, 400, "invalid-samples", "Invalid samples",
                           detail, problems_json(&probs));
        break;
    case METER_INGEST_UNAVAILABLE:
        atomic_fetch_add(&metrics.db_errors, 1);
        logf_(LOG_WARN, "batch not stored: %s",
              e.msg[0] ? e.msg : "no database");
        ret = send_problem(c, rq, 503, "unavailable", "Database unavailable",
                           "the database cannot be reached; nothing was "
                           "stored; retry later",
                           NULL);
        break;
    default:
        atomic_fetch_add(&metrics.db_errors, 1);
        logf_(LOG_ERROR, "batch not stored: %s", e.msg);
        ret = send_problem(c, rq, 500, "internal", "Batch not stored",
                           "a database error stopped the batch; nothing was "
                           "stored",
                           NULL);
    }
out:
    atomic_fetch_sub(&metrics.in_flight, 1);
    free(s);
    free(plain);
    return ret;
}

/* ---- the handler ------------------------------------------------------ */

static enum route
route_of(const char *url)
{
    for (int r = 0; r < R_OTHER; r++)
        if (strcmp(url, route_names[r]) == 0)
            return (enum route)r;
    return R_OTHER;
}

static enum MHD_Result
handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
       const char *version, const char *upload_data, size_t *upload_size,
       void **con_cls)
{
    (void)cls;
    (void)version;
    struct request *rq = *con_cls;
    enum MHD_Result ret;
    if (!rq) {
        rq = calloc(1, sizeof(*rq));
        if (!rq)
            return MHD_NO;
        rq->route = route_of(url);
        clock_gettime(CLOCK_MONOTONIC, &rq->start);
        *con_cls = rq;
        bool post = strcmp(method, "POST") == 0;
        bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
        if (rq->route == R_OTHER)
            return send_problem(c, rq, 404, "not-found", "Not found",
                                "no such route", NULL);
        if (rq->route == R_SAMPLES ? !post : !get)
            return send_problem(
                c, rq, 405, "method-not-allowed", "Method not allowed",
                rq->route == R_SAMPLES ? "use POST" : "use GET", NULL);
        if (rq->route == R_SAMPLES && !admit_samples(c, rq, &ret))
            return ret;
        if (rq->route == R_SAMPLES) {
            /* Reserve the body's size: past --max-buffered the service is
             * saturated, and says so rather than run out of memory. */
            const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                         "Content-Length");
            size_t want = cl ? (size_t)strtoull(cl, NULL, 10) : cfg.max_body;
            size_t held = atomic_fetch_add(&buffered, want);
            rq->reserved = want;
            if (held + want > cfg.max_buffered)
                return send_problem(c, rq, 503, "saturated",
                                    "Service saturated",
                                    "too many batches are arriving at once; "
                                    "retry later",
                                    NULL);
            return MHD_YES; /* the body follows */
        }
    }
    if (*upload_size && rq->status) {
        *upload_size = 0; /* answered already (refused): drop the body */
        return MHD_YES;
    }
    if (*upload_size) {
        if (!rq->too_big) {
            if (rq->len + *upload_size > cfg.max_body) {
                rq->too_big = true; /* keep reading, store nothing */
                free(rq->body);
                rq->body = NULL;
                rq->len = 0;
            } else {
                if (rq->len + *upload_size > rq->cap) {
                    size_t nc = rq->cap ? rq->cap : 65536;
                    while (nc < rq->len + *upload_size)
                        nc *= 2;
                    char *p = realloc(rq->body, nc);
                    if (!p)
                        return MHD_NO;
                    rq->body = p;
                    rq->cap = nc;
                }
                memcpy(rq->body + rq->len, upload_data, *upload_size);
                rq->len += *upload_size;
            }
        }
        *upload_size = 0;
        return MHD_YES;
    }
    switch (rq->route) {
    case R_SAMPLES:
        return ingest_samples(c, rq);
    case R_HEALTHZ:
        return send_text(c, rq, 200, "text/plain", strdup("ok\n"), 3, false);
    case R_READYZ: {
        PGconn *db = thread_db();
        PGresult *r = db ? PQexec(db, "SELECT 1") : NULL;
        bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
        PQclear(r);
        if (!ok)
            return send_problem(c, rq, 503, "unavailable",
                                "Database unavailable",
                                "the database cannot be reached", NULL);
        return send_text(c, rq, 200, "text/plain", strdup("ready\n"), 6, false);
    }
    case R_METRICS: {
        size_t len;
        char *text = render_metrics(&len);
        if (!text)
            return MHD_NO;
        return send_text(c, rq, 200, "text/plain; version=0.0.4", text, len,
                         false);
    }
    default:
        return MHD_NO;
    }
}

/* Called when a request ends, answered or not: log, count, free. */
static void
completed(void *cls, struct MHD_Connection *c, void **con_cls,
          enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    struct request *rq = *con_cls;
    if (!rq)
        return;
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    double secs = (double)(end.tv_sec - rq->start.tv_sec) +
                  (double)(end.tv_nsec - rq->start.tv_nsec) / 1e9;
    if (rq->route == R_SAMPLES && rq->status)
        observe_latency(secs);
    if (rq->status)
        count_request(rq->route, rq->status);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char peer[64] = "?";
    if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
        inet_ntop(AF_INET,
                  &((const struct sockaddr_in *)(const void *)ci->client_addr)
                       ->sin_addr,
                  peer, sizeof(peer));
    logf_(LOG_INFO, "%s %s %u %.1fms %zuB%s%s%s", peer, route_names[rq->route],
          rq->status, secs * 1e3, rq->len, rq->note[0] ? " " : "", rq->note,
          toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
    atomic_fetch_sub(&buffered, rq->reserved);
    free(rq->body);
    free(rq);
    *con_cls = NULL;
}

/* ---- configuration and main ------------------------------------------- */

static int
parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v == 0 || s[0] == '-')
        return -1;
    *out = (size_t)v;
    return 0;
}

static int
config(int argc, char **argv)
{
    static const struct option opts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"db", required_argument, NULL, 'd'},
        {"max-body", required_argument, NULL, 'b'},
        {"threads", required_argument, NULL, 't'},
        {"max-buffered", required_argument, NULL, 'B'},
        {"log-level", required_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *listen = getenv("METER_LISTEN");
    const char *max_body = getenv("METER_MAX_BODY");
    const char *threads = getenv("METER_THREADS");
    const char *max_buffered = getenv("METER_MAX_BUFFERED");
    const char *level = getenv("METER_LOG_LEVEL");
    cfg.conninfo = getenv("METER_DATABASE_URL");
    if (cfg.conninfo && !*cfg.conninfo)
        cfg.conninfo = NULL;
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case 'l':
            listen = optarg;
            break;
        case 'd':
            cfg.conninfo = optarg;
            break;
        case 'b':
            max_body = optarg;
            break;
        case 't':
            threads = optarg;
            break;
        case 'B':
            max_buffered = optarg;
            break;
        case 'v':
            level = optarg;
            break;
        case 'h':
            fputs(usage_text, stdout);
            exit(0);
        default:
            fprintf(stderr, "meterd: unknown or incomplete option '%s'\n%s",
                    argv[optind - 1], usage_text);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "meterd: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    snprintf(cfg.listen, sizeof(cfg.listen), "%s",
             listen && *listen ? listen : "127.0.0.1:8080");
    cfg.max_body = 64 << 20;
    if (max_body && *max_body && parse_size(max_body, &cfg.max_body) < 0) {
        fprintf(stderr, "meterd: --max-body '%s' is not a number of bytes\n",
                max_body);
        return 2;
    }
    size_t nthreads = 4;
    if (threads && *threads &&
        (parse_size(threads, &nthreads) < 0 || nthreads > 250)) {
        fprintf(stderr,
                "meterd: --threads '%s' is not a number from 1 to "
                "250\n",
                threads);
        return 2;
    }
    cfg.threads = (unsigned)nthreads;
    cfg.max_buffered = cfg.max_body * nthreads;
    if (max_buffered && *max_buffered &&
        parse_size(max_buffered, &cfg.max_buffered) < 0) {
        fprintf(stderr,
                "meterd: --max-buffered '%s' is not a number of "
                "bytes\n",
                max_buffered);
        return 2;
    }
    cfg.log_level = LOG_INFO;
    if (level && *level) {
        static const char *const names[] = {"error", "warn", "info", "debug"};
        bool ok = false;
        for (int i = 0; i < 4; i++)
            if (strcmp(level, names[i]) == 0) {
                cfg.log_level = (enum log_level)i;
                ok = true;
            }
        if (!ok) {
            fprintf(stderr,
                    "meterd: --log-level '%s' is not error, warn, "
                    "info or debug\n",
                    level);
            return 2;
        }
    }
    return 0;
}

static int
parse_listen(const char *s, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    char *end;
    if (!colon || (size_t)(colon - s) >= sizeof(host))
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535 || colon[1] == '\0')
        return -1;
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof(host), "127.0.0.1");
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

/* Creates the partitions of this month and the next two, ahead of need. */
static int
prepare_database(struct meter_err *e)
{
    PGconn *db = meter_db_connect(cfg.conninfo, e);
    if (!db)
        return -1;
    PGresult *r = PQexec(db, "SELECT usage_blocks_partition("
                             "(current_date + make_interval(months => m))"
                             "::date) FROM generate_series(0, 2) m");
    int rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        rc = meter_fail(e,
                        "cannot prepare the usage tables (run 'meterctl "
                        "migrate'?): %s",
                        PQerrorMessage(db));
    PQclear(r);
    PQfinish(db);
    return rc;
}

int
main(int argc, char **argv)
{
    int rc = config(argc, argv);
    if (rc)
        return rc;
    struct sockaddr_in sa;
    if (parse_listen(cfg.listen, &sa) < 0) {
        fprintf(stderr, "meterd: --listen '%s' is not IPV4:PORT\n", cfg.listen);
        return 2;
    }
    struct meter_err e = {{0}};
    static char embedded[4096];
    if (!cfg.conninfo) {
        /* The embedded database: started once here, then every thread
         * connects to it by its conninfo. */
        struct meter_cluster *cl = meter_cluster_open(NULL, &e);
        if (!cl || meter_cluster_start(cl, &e) < 0) {
            fprintf(stderr, "meterd: %s\n", e.msg);
            meter_cluster_free(cl);
            return 1;
        }
        snprintf(embedded, sizeof(embedded), "%s", meter_cluster_conninfo(cl));
        meter_cluster_free(cl);
        cfg.conninfo = embedded;
    } else if (meter_db_check_conninfo(cfg.conninfo, &e) < 0) {
        fprintf(stderr, "meterd: %s\n", e.msg);
        return 2;
    }
    if (prepare_database(&e) < 0) {
        fprintf(stderr, "meterd: %s\n", e.msg);
        return 1;
    }
    registry = meter_registry_new();
    if (!registry) {
        fprintf(stderr, "meterd: out of memory\n");
        return 1;
    }

    /* Signals are taken by sigwait in this thread only. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
            MHD_USE_ERROR_LOG,
        0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, &sa,
        MHD_OPTION_THREAD_POOL_SIZE, cfg.threads, MHD_OPTION_NOTIFY_COMPLETED,
        completed, NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
        MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "meterd: cannot listen on %s: %s\n", cfg.listen,
                strerror(errno));
        meter_registry_free(registry);
        return 1;
    }
    logf_(LOG_INFO,
          "meterd listening on http://%s (%u threads, max body %zu "
          "bytes)",
          cfg.listen, cfg.threads, cfg.max_body);

    int sig;
    sigwait(&stop, &sig);
    logf_(LOG_INFO,
          "signal %d: no new connections; finishing batches in "
          "flight",
          sig);
    MHD_quiesce_daemon(d);
    while (atomic_load(&metrics.in_flight) > 0)
        usleep(10000);
    MHD_stop_daemon(d);
    close_connections();
    meter_registry_free(registry);
    logf_(LOG_INFO, "meterd stopped");
    return 0;
}
