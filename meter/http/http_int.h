/*
 * http_int.h - the server and request structures shared by the files of
 * meter/http/; private.
 */
#ifndef HTTP_INT_H
#define HTTP_INT_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <time.h>

#include "meter_http.h"

/* Statuses counted by route; others count as "other". */
#define HTTP_NSTATUS 16
extern const unsigned http_statuses[HTTP_NSTATUS];
/* Latency buckets, seconds. */
#define HTTP_NBUCKETS 11
extern const double http_buckets[HTTP_NBUCKETS];

/* The counters of one route (the last: requests no route matched). */
struct http_route_metrics {
    atomic_ullong requests[HTTP_NSTATUS + 1];
    atomic_ullong latency_bucket[HTTP_NBUCKETS + 1];
    atomic_ullong latency_count;
    atomic_ullong latency_us_sum;
};

/* What HTTPS offers (GnuTLS's syntax): TLS 1.3, and TLS 1.2 with
 * forward secrecy (ECDHE or DHE key exchange, no static RSA) and AEAD
 * ciphers only (GCM, CCM, ChaCha20-Poly1305: no CBC with its SHA-1 or
 * SHA-2 MACs). TLS 1.0 and 1.1 are refused (RFC 8996). Checked by
 * meter_http_tls_load, used by meter_http_start. */
#define HTTP_TLS_PRIORITIES                                                    \
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:-RSA:-SHA1:-AES-128-CBC:"      \
    "-AES-256-CBC:-CAMELLIA-128-CBC:-CAMELLIA-256-CBC:-3DES-CBC"

/* Threads at most (each holds a database connection slot). */
#define HTTP_MAX_THREADS 256
/* Ids (keys, addresses) whose rate a limit follows at once (guard.c). */
#define HTTP_BUCKETS 4096

/* An id's token bucket: tokens at monotonic time at. */
struct http_bucket {
    bool used;
    int64_t id;
    double tokens, at;
};

/* A token bucket an id: rate tokens a second (0: no limit), holding at
 * most burst; the HTTP_BUCKETS ids seen last are followed, one unseen
 * longest giving way. Under the server's rate_lock. */
struct http_limit {
    double rate, burst;
    struct http_bucket buckets[HTTP_BUCKETS];
};

/* A thread's database wait: past deadline (monotonic) the watchdog
 * shuts fd, a copy of its connection's socket, down, and marks it
 * broken. fd -1: none. */
/* An open connection, for the header deadline: since when it has been
 * waiting for a whole request (opened, or last answered). */
struct http_conn {
    int fd;
    bool in_request, shut;
    struct timespec since;
    struct http_conn *prev, *next;
};

struct http_watch {
    int fd;
    bool armed, broken;
    struct timespec deadline;
};
/* {name} segments a route may have. */
#define HTTP_MAX_PARAMS 4
/* Headers a handler may add to its reply (meter_http_reply_header). */
#define HTTP_MAX_REPLY_HEADERS 8
/* Fields a form may have. */
#define HTTP_MAX_FORM_FIELDS 64

/* A body parsed as a form (form.c): the fields point into text, a
 * decoded copy of the body. */
struct http_form {
    char *text;
    size_t len; /* of the body */
    const char *name[HTTP_MAX_FORM_FIELDS], *value[HTTP_MAX_FORM_FIELDS];
    size_t n;
};

struct meter_http {
    struct MHD_Daemon *daemon;
    struct meter_http_config cfg;
    char *conninfo;
    struct http_route_metrics *metrics; /* nroutes + 1 */
    atomic_size_t buffered;             /* bytes reserved by bodies */
    atomic_llong in_flight;             /* handlers running */
    atomic_ullong db_errors;
    PGconn *conns[HTTP_MAX_THREADS]; /* by thread slot */
    atomic_int nconns;
    pthread_mutex_t rate_lock;        /* the limits' buckets */
    struct http_limit by_key;         /* requests of a key */
    struct http_limit failures;       /* unknown keys, by address */
    struct http_limit signin_by_key;  /* sign-ins of a key */
    struct http_limit signin_by_addr; /* sign-ins from an address */
    pthread_mutex_t watch_lock;
    pthread_cond_t watch_cond;
    bool watching, watch_stop;
    pthread_t watchdog;
    struct http_watch watch[HTTP_MAX_THREADS]; /* by thread slot */
    struct http_conn *conns_open;              /* under watch_lock */
};

struct meter_http_request {
    struct meter_http *h;
    struct MHD_Connection *c;
    const struct meter_http_route *route; /* NULL: none matched */
    size_t route_index;                   /* nroutes: none */
    const char *method, *url;
    struct meter_principal who;
    const char *param_name[HTTP_MAX_PARAMS];
    char *param_value[HTTP_MAX_PARAMS];
    size_t nparams;
    struct meter_buf body;
    bool too_big;    /* past max_body (or out of memory): dropped */
    bool no_room;    /* the body could not be held: no memory, or past
                              max_buffered */
    size_t received; /* body bytes received, kept or not */
    size_t reserved; /* bytes counted against max_buffered */
    struct timespec start;
    char allow[32];    /* for a 405: the methods of the path */
    bool by_cookie;    /* authenticated by the session cookie (auth.c) */
    bool csrf_pending; /* ... changing something: its form's "csrf" field
                          is to be checked once the body is in */
    char csrf[METER_CSRF_LEN + 1]; /* the session's CSRF token */
    struct http_form *form;        /* NULL until parsed */
    unsigned form_status;          /* 0, or the status it was refused with */
    char form_error[128];          /* why */
    char *reply_name[HTTP_MAX_REPLY_HEADERS];
    char *reply_value[HTTP_MAX_REPLY_HEADERS];
    size_t nreply;
    bool reply_failed;      /* a header could not be kept: the reply is a 500 */
    unsigned status;        /* 0 until answered */
    unsigned retry_after;   /* a 429's Retry-After, seconds */
    enum MHD_Result result; /* of queueing the answer */
    char note[160];         /* for the access log */
    char request_id[METER_HTTP_REQUEST_ID_MAX + 1]; /* X-Request-Id */
};

/* A request's access-log line (log.c). */
struct http_access {
    const char *request_id, *remote, *method, *route, *note;
    unsigned status;
    double seconds;
    size_t bytes;   /* of the body received */
    int64_t key_id; /* 0: no key authenticated */
    bool aborted;
};
void http_log_access(const struct http_access *a);
/* The id of the request the calling thread serves from now on (NULL:
 * none), for meter_log's lines; kept, not copied. */
void http_log_request_id(const char *id);

/* The client's address as text ("192.0.2.1", "2001:db8::1"; an
 * IPv4-mapped IPv6 address as its IPv4), or "?" (peer.c). */
void http_peer_text(struct MHD_Connection *c, char *out, size_t n);
/* The client's address as a limit's id: an IPv4 address (or mapped)
 * its 32 bits, an IPv6 address its /64 (one host's usual share, so
 * that walking the addresses of one's /64 earns nothing), 0 if
 * unknown. The two never meet. */
int64_t http_peer_id(struct MHD_Connection *c);
/* rq's request id: the client's X-Request-Id if well formed, else 16
 * random hex digits (a per-thread generator: no lock, no system call
 * after the first). */
void http_request_id(struct meter_http_request *rq);

/* Queues resp (destroyed here) as the answer with status, with the
 * headers the handler added. */
void http_queue(struct meter_http_request *rq, unsigned status,
                struct MHD_Response *resp);
/* Frees the headers a handler added, and forgets them. */
void http_reply_headers_clear(struct meter_http_request *rq);

/* Who sent rq, on a route with roles: its bearer key or its session,
 * the role, the key's rate, and for a session's request that changes
 * something the origin and the CSRF header (auth.c). False after
 * refusing. */
bool http_authenticate(struct meter_http_request *rq);
/* Once the body is in: the form's CSRF token of a session's request
 * that changes something and sent no X-CSRF-Token. False after
 * refusing. */
bool http_csrf_form(struct meter_http_request *rq);
/* Frees rq's parsed form. */
void http_form_free(struct meter_http_request *rq);

/* Sets limit l up: rate tokens a second (0: no limit), bursts of burst. */
void http_limit_init(struct http_limit *l, double rate, double burst);
/* Takes a token of id's bucket of l: false when it is empty, with the
 * seconds until it is not in *retry_after. */
bool http_limit_take(struct meter_http *h, struct http_limit *l, int64_t id,
                     unsigned *retry_after);

/* The per-thread database connections (db.c): their progress calls
 * reach h from http_db_start to http_db_stop; the calling thread's slot
 * in h->conns (-1 before its first connection). */
void http_db_start(struct meter_http *h);
void http_db_stop(void);
int http_db_slot(void);

/* The watchdog thread, started with the server and stopped with it. */
int http_watch_start(struct meter_http *h);
void http_watch_stop(struct meter_http *h);
/* Thread slot's request waits on the database through socket fd from
 * now on, for cfg.db_timeout_s at most; again from now on a second call. */
void http_watch_arm(struct meter_http *h, int slot, int fd);
/* The database answered: if armed, its deadline starts again. */
void http_watch_progress(struct meter_http *h, int slot);
/* It no longer does (slot -1: a thread that never had a connection). */
void http_watch_disarm(struct meter_http *h, int slot);
/* Whether the watchdog broke slot's connection since the last call. */
bool http_watch_broken(struct meter_http *h, int slot);

/* The header deadline's list: a connection opened, closed, and between
 * the headers of a request and its answer (in_request) or not. */
void http_conn_started(struct meter_http *h, struct http_conn *c);
void http_conn_closed(struct meter_http *h, struct http_conn *c);
void http_conn_request(struct meter_http *h, struct http_conn *c,
                       bool in_request);
/* Under watch_lock: shuts down the connections past the deadline;
 * returns how many. */
int http_conn_sweep(struct meter_http *h, const struct timespec *now);

/* Counts a finished request in its route's metrics. */
void http_observe(struct meter_http_request *rq, double seconds);

/* libmicrohttpd's messages (a TLS handshake that failed, a socket it
 * could not accept), as warnings of the one log. */
void http_mhd_log(void *cls, const char *fmt, va_list ap);

/* Asks for n more bytes of memory for an inflating body: false to stop. */
typedef bool http_gunzip_grow(void *cls, size_t n);
/* Inflates a gzip stream of len bytes into a malloc'd, NUL-terminated
 * *out of at most max bytes (*out_len excludes the NUL), calling grow
 * with cls before each allocation of the output, for the bytes it adds:
 * 0, -1 if corrupt, truncated or out of memory, -2 if larger than max,
 * -3 if grow said no. What grow granted is not given back here. */
int http_gunzip(const char *in, size_t len, size_t max, http_gunzip_grow *grow,
                void *cls, char **out, size_t *out_len);

#endif
