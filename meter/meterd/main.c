/*
 * main.c - meterd, the service sandbox hosts push usage to: its options,
 * its route table, and its life (start, wait for SIGTERM or SIGINT, stop
 * gracefully: no new connections, requests in flight finished, exit 0).
 */
#include "meterd_int.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct meterd meterd;

/* The service: one row an endpoint. */
/* Who reads invoices and usage: an account its own, finance and admin
 * every account's. */
#define READERS (METER_ROLE_ACCOUNT | METER_ROLE_FINANCE | METER_ROLE_ADMIN)

static const struct meter_http_route routes[] = {
    {"POST", "/v1/samples", METER_ROLE_HOST, true, meterd_samples_admit,
     meterd_samples, meterd_samples_metrics},
    {"GET", "/v1/invoices", READERS, false, NULL, meterd_invoices_list, NULL},
    {"GET", "/v1/invoices/{ref}", READERS, false, NULL, meterd_invoices_get,
     NULL},
    {"POST", "/v1/invoices/run", METER_ROLE_FINANCE | METER_ROLE_ADMIN, true,
     NULL, meterd_invoices_run, NULL},
    {"GET", "/v1/usage", READERS, false, NULL, meterd_usage, NULL},
    {"GET", "/v1/accounts/{id}/credits", READERS, false, NULL, meterd_credits,
     NULL},
    {"GET", "/healthz", 0, false, NULL, meterd_healthz, NULL},
    {"GET", "/readyz", 0, false, NULL, meterd_readyz, NULL},
    {"GET", "/metrics", 0, false, NULL, meterd_metrics, NULL},
};

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
    "                       database of the working directory, which must\n"
    "                       be running: meterctl db start)\n"
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

struct options {
    const char *listen, *db, *max_body, *max_buffered, *threads, *log_level;
};

/* The options, each from its flag, else its environment variable. */
static int
read_options(int argc, char **argv, struct options *o)
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
    const char *env_db = getenv("METER_DATABASE_URL");
    *o = (struct options){
        .listen = getenv("METER_LISTEN"),
        .db = env_db && *env_db ? env_db : NULL,
        .max_body = getenv("METER_MAX_BODY"),
        .max_buffered = getenv("METER_MAX_BUFFERED"),
        .threads = getenv("METER_THREADS"),
        .log_level = getenv("METER_LOG_LEVEL"),
    };
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case 'l':
            o->listen = optarg;
            break;
        case 'd':
            o->db = optarg;
            break;
        case 'b':
            o->max_body = optarg;
            break;
        case 't':
            o->threads = optarg;
            break;
        case 'B':
            o->max_buffered = optarg;
            break;
        case 'v':
            o->log_level = optarg;
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
    return 0;
}

static int
parse_listen(const char *s, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    uint64_t port;
    if (!colon || (size_t)(colon - s) >= sizeof(host))
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    if (meter_parse_uint(colon + 1, 0, 65535, &port) < 0)
        return -1;
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof(host), "127.0.0.1");
    return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

/* The count of option name, value (unset or empty: def): 0, or -1 with
 * a message saying it is not `what`. */
static int
count_option(const char *name, const char *value, uint64_t max,
             const char *what, uint64_t def, uint64_t *out)
{
    *out = def;
    if (!value || !*value || meter_parse_uint(value, 1, max, out) == 0)
        return 0;
    fprintf(stderr, "meterd: --%s '%s' is not %s\n", name, value, what);
    return -1;
}

/* The server's configuration from the options; 2 on a bad value. */
static int
configure(const struct options *o, struct meter_http_config *cfg)
{
    uint64_t body, threads, buffered;
    const char *listen = o->listen && *o->listen ? o->listen : "127.0.0.1:8080";
    if (parse_listen(listen, &cfg->listen) < 0) {
        fprintf(stderr, "meterd: --listen '%s' is not IPV4:PORT\n", listen);
        return 2;
    }
    if (count_option("max-body", o->max_body, SIZE_MAX, "a number of bytes",
                     64 << 20, &body) < 0 ||
        count_option("threads", o->threads, 250, "a number from 1 to 250", 4,
                     &threads) < 0 ||
        count_option("max-buffered", o->max_buffered, SIZE_MAX,
                     "a number of bytes", body * threads, &buffered) < 0)
        return 2;
    cfg->max_body = (size_t)body;
    cfg->threads = (unsigned)threads;
    cfg->max_buffered = (size_t)buffered;
    if (o->log_level && *o->log_level) {
        int level = meter_log_parse_level(o->log_level);
        if (level < 0) {
            fprintf(stderr,
                    "meterd: --log-level '%s' is not error, warn, "
                    "info or debug\n",
                    o->log_level);
            return 2;
        }
        meter_log_set_level((enum meter_log_level)level);
    }
    cfg->routes = routes;
    cfg->nroutes = sizeof(routes) / sizeof(routes[0]);
    return 0;
}

/* Creates the usage partitions of this month and the next two. */
static int
prepare_database(const char *conninfo, struct meter_err *e)
{
    PGconn *db = meter_db_connect(conninfo, e);
    if (!db)
        return -1;
    int rc = meter_db_prepare_partitions(db, 3, e);
    PQfinish(db);
    return rc;
}

int
main(int argc, char **argv)
{
    struct options o;
    struct meter_http_config cfg = {0};
    struct meter_err e = {{0}};
    char *conninfo = NULL;
    struct meter_http *server = NULL;
    int rc = read_options(argc, argv, &o);
    if (rc || (rc = configure(&o, &cfg)))
        return rc;
    rc = 1;
    if (o.db && meter_db_check_conninfo(o.db, &e) < 0) {
        fprintf(stderr, "meterd: %s\n", e.msg);
        return 2;
    }
    if (meter_db_conninfo(o.db, &conninfo, &e) < 0 ||
        prepare_database(conninfo, &e) < 0)
        goto out;
    if (!(meterd.registry = meter_registry_new())) {
        meter_fail(&e, "out of memory");
        goto out;
    }
    cfg.conninfo = conninfo;

    /* Signals are taken by sigwait in this thread only. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (!(server = meter_http_start(&cfg, &e)))
        goto out;
    meter_log(METER_LOG_INFO,
              "meterd listening on http://%s (%u threads, max body %zu "
              "bytes)",
              o.listen && *o.listen ? o.listen : "127.0.0.1:8080", cfg.threads,
              cfg.max_body);
    int sig;
    sigwait(&stop, &sig);
    meter_log(METER_LOG_INFO,
              "signal %d: no new connections; finishing requests in flight",
              sig);
    meter_http_stop(server);
    meter_log(METER_LOG_INFO, "meterd stopped");
    rc = 0;
out:
    if (rc)
        fprintf(stderr, "meterd: %s\n", e.msg);
    meter_registry_free(meterd.registry);
    free(conninfo);
    return rc;
}
