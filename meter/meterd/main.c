/*
 * main.c - meterd, the service sandbox hosts push usage to: its options,
 * its route table, and its life (start on the schema it knows, wait for
 * SIGTERM or SIGINT, reopening the log on each SIGHUP meanwhile, stop
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
/* Who reads the fleet's reports. */
#define FINANCE (METER_ROLE_FINANCE | METER_ROLE_ADMIN)

/* The last field: a page for people (an HTML answer; without a key or
 * session, the sign-in page). */
static const struct meter_http_route routes[] = {
    {"POST", "/v1/samples", METER_ROLE_HOST, true, meterd_samples_admit,
     meterd_samples, meterd_samples_metrics, false},
    {"GET", "/v1/invoices", READERS, false, NULL, meterd_invoices_list, NULL,
     false},
    {"GET", "/v1/invoices/{ref}", READERS, false, NULL, meterd_invoices_get,
     NULL, false},
    {"POST", "/v1/invoices/run", METER_ROLE_FINANCE | METER_ROLE_ADMIN, true,
     NULL, meterd_invoices_run, NULL, false},
    {"GET", "/v1/usage", READERS, false, NULL, meterd_usage, NULL, false},
    {"GET", "/v1/accounts/{id}/credits", READERS, false, NULL, meterd_credits,
     NULL, false},
    {"GET", "/v1/reports/overview", FINANCE, false, NULL,
     meterd_reports_overview, NULL, false},
    {"GET", "/v1/reports/accounts", FINANCE, false, NULL,
     meterd_reports_accounts, NULL, false},
    {"GET", "/v1/reports/accounts/{id}", READERS, false, NULL,
     meterd_reports_account, NULL, false},
    {"GET", "/v1/reports/usage", FINANCE, false, NULL, meterd_reports_usage,
     NULL, false},
    {"GET", "/v1/reports/invoices", READERS, false, NULL,
     meterd_reports_invoices, NULL, false},
    /* the management API (admin.c) */
    {"POST", "/v1/admin/accounts", METER_ROLE_ADMIN, true, NULL,
     meterd_admin_account_create, NULL, false},
    {"GET", "/v1/admin/accounts", METER_ROLE_ADMIN, false, NULL,
     meterd_admin_accounts_list, NULL, false},
    {"GET", "/v1/admin/accounts/{id}", METER_ROLE_ADMIN, false, NULL,
     meterd_admin_account_get, NULL, false},
    {"PATCH", "/v1/admin/accounts/{id}", METER_ROLE_ADMIN, true, NULL,
     meterd_admin_account_update, NULL, false},
    {"POST", "/v1/admin/accounts/{id}/books", METER_ROLE_ADMIN, true, NULL,
     meterd_admin_account_assign, NULL, false},
    {"POST", "/v1/admin/accounts/{id}/grants", METER_ROLE_ADMIN, true, NULL,
     meterd_admin_grant_create, NULL, false},
    {"POST", "/v1/admin/books", METER_ROLE_ADMIN, true, NULL,
     meterd_admin_book_upload, NULL, false},
    {"GET", "/v1/admin/books", METER_ROLE_ADMIN, false, NULL,
     meterd_admin_books_list, NULL, false},
    {"GET", "/v1/admin/books/{id}/versions/{version}", METER_ROLE_ADMIN, false,
     NULL, meterd_admin_book_get, NULL, false},
    {"POST", "/v1/admin/keys", METER_ROLE_ADMIN, true, NULL,
     meterd_admin_key_create, NULL, false},
    {"GET", "/v1/admin/keys", METER_ROLE_ADMIN, false, NULL,
     meterd_admin_keys_list, NULL, false},
    {"DELETE", "/v1/admin/keys/{id}", METER_ROLE_ADMIN, false, NULL,
     meterd_admin_key_revoke, NULL, false},
    /* Webhooks (docs/webhooks.md): endpoints registered by admins. */
    /* Usage alerts and spend limits (alerts.c, docs/alerts.md). */
    {"POST", "/v1/admin/alerts", METER_ROLE_ADMIN, true, NULL,
     meterd_alerts_add, NULL, false},
    {"GET", "/v1/admin/alerts", METER_ROLE_ADMIN, false, NULL,
     meterd_alerts_list, NULL, false},
    {"DELETE", "/v1/admin/alerts/{id}", METER_ROLE_ADMIN, false, NULL,
     meterd_alerts_remove, NULL, false},
    {"GET", "/v1/accounts/{id}/alerts", READERS | METER_ROLE_HOST, false, NULL,
     meterd_account_alerts, NULL, false},
    {"POST", "/v1/admin/webhooks", METER_ROLE_ADMIN, true, NULL,
     meterd_webhooks_add, NULL, false},
    {"GET", "/v1/admin/webhooks", METER_ROLE_ADMIN, false, NULL,
     meterd_webhooks_list, NULL, false},
    {"GET", "/v1/admin/webhooks/deliveries", METER_ROLE_ADMIN, false, NULL,
     meterd_webhooks_deliveries, NULL, false},
    {"DELETE", "/v1/admin/webhooks/{id}", METER_ROLE_ADMIN, false, NULL,
     meterd_webhooks_remove, NULL, false},
    {"GET", "/", READERS, false, NULL, meterd_root, NULL, true},
    {"GET", "/sign-in", 0, false, NULL, meterd_signin_form, NULL, false},
    {"POST", "/sign-in", 0, true, meterd_form_admit, meterd_signin, NULL,
     false},
    {"POST", "/sign-out", READERS, true, meterd_form_admit, meterd_signout,
     NULL, true},
    {"GET", "/static/dash.css", 0, false, NULL, meterd_static_css, NULL, false},
    {"GET", "/favicon.ico", 0, false, NULL, meterd_favicon, NULL, false},
    {"GET", "/overview", FINANCE, false, NULL, meterd_page_overview, NULL,
     true},
    {"GET", "/accounts", FINANCE, false, NULL, meterd_page_accounts, NULL,
     true},
    {"GET", "/accounts/{id}", READERS, false, NULL, meterd_page_account, NULL,
     true},
    {"GET", "/usage", FINANCE, false, NULL, meterd_page_usage, NULL, true},
    {"GET", "/invoices", READERS, false, NULL, meterd_page_invoices, NULL,
     true},
    {"GET", "/healthz", 0, false, NULL, meterd_healthz, NULL, false},
    {"GET", "/readyz", 0, false, NULL, meterd_readyz, NULL, false},
    {"GET", "/metrics", 0, false, NULL, meterd_metrics, NULL, false},
};

/* In two parts: a C string longer than 4095 bytes is not portable. */
static const char usage_text[] =
    "usage: meterd [OPTIONS]\n"
    "\n"
    "The meter service: ingests per-second usage samples over HTTP into\n"
    "PostgreSQL, exactly once.\n"
    "\n"
    "options (each also from the environment):\n"
    "  --listen ADDR:PORT   address to listen on: IPv4, localhost or a\n"
    "                       bracketed IPv6 address, [::1]:8080; [::]\n"
    "                       takes IPv4 clients too ($METER_LISTEN;\n"
    "                       default 127.0.0.1:8080)\n"
    "  --db CONNINFO        the database, a libpq conninfo or URI\n"
    "                       ($METER_DATABASE_URL; default the embedded\n"
    "                       database of the working directory as its\n"
    "                       role meter_worker, which must be running:\n"
    "                       meterctl db start)\n"
    "  --max-body BYTES     largest request body, after decompression\n"
    "                       ($METER_MAX_BODY; default 67108864)\n"
    "  --max-buffered BYTES request bodies held at once, past which new\n"
    "                       batches get 503 ($METER_MAX_BUFFERED;\n"
    "                       default max-body x threads)\n"
    "  --threads N          request threads, each with a database\n"
    "                       connection ($METER_THREADS; default 4)\n"
    "  --max-connections N  connections open at once, past which new ones\n"
    "                       are refused ($METER_MAX_CONNECTIONS; default\n"
    "                       4096, and at most what the open-file limit\n"
    "                       leaves)\n"
    "  --max-per-ip N       connections open at once from one address\n"
    "                       ($METER_MAX_PER_IP; default 256)\n"
    "  --idle-timeout S     a connection that sends nothing for S seconds\n"
    "                       is closed ($METER_IDLE_TIMEOUT; default 30)\n"
    "  --header-timeout S   a connection whose request's headers have not\n"
    "                       all arrived S seconds after it opened (or was\n"
    "                       last answered) is closed ($METER_HEADER_TIMEOUT;\n"
    "                       default 30)\n"
    "  --body-timeout S     a request whose body has not arrived S seconds\n"
    "                       after its headers is closed\n"
    "                       ($METER_BODY_TIMEOUT; default 120)\n"
    "  --db-timeout S       a request that hears nothing from the database\n"
    "                       for S seconds gets 503, its connection broken\n"
    "                       and opened again ($METER_DB_TIMEOUT; default\n"
    "                       30)\n"
    "  --rate-limit N       requests a second one key may make, in bursts\n"
    "                       of twice that, per meterd, and unknown keys\n"
    "                       one address may send; past it 429 with\n"
    "                       Retry-After; 0: no limit ($METER_RATE_LIMIT;\n"
    "                       default 1000)\n";
static const char usage_more[] =
    "  --max-age DAYS       samples older than this are refused (late\n"
    "                       samples within it become late usage)\n"
    "                       ($METER_MAX_AGE; default 400)\n"
    "  --max-batch-sandboxes N\n"
    "                       distinct sandboxes a batch may hold; past it\n"
    "                       413 and nothing stored\n"
    "                       ($METER_MAX_BATCH_SANDBOXES; default 10000)\n"
    "  --session-ttl S      a browser signed in with a key stays signed in\n"
    "                       S seconds, unless it signs out or the key is\n"
    "                       revoked ($METER_SESSION_TTL; default 43200)\n"
    "  --max-sessions N     live browser sessions one key may hold, in the\n"
    "                       database (all meterd together); a sign-in\n"
    "                       past it ends the key's oldest\n"
    "                       ($METER_MAX_SESSIONS; default 20)\n"
    "  --sign-in-limit N    sign-ins a minute one key may make, in bursts\n"
    "                       of N, per meterd; past it 429 with\n"
    "                       Retry-After; 0: no limit ($METER_SIGN_IN_LIMIT;\n"
    "                       default 10)\n"
    "  --sign-in-limit-ip N sign-ins a minute from one address, all keys,\n"
    "                       in bursts of N, per meterd; 0: no limit\n"
    "                       ($METER_SIGN_IN_LIMIT_IP; default 60)\n"
    "  --report-ttl S       a dashboard report is kept S seconds and served\n"
    "                       again within them; 0: computed for every\n"
    "                       request ($METER_REPORT_TTL; default 5)\n"
    "  --merge-every S      the hourly rollups stored since are merged\n"
    "                       every S seconds, in the background, so that\n"
    "                       reports sum one row an account-hour; 0: never\n"
    "                       ($METER_MERGE_EVERY; default 5)\n"
    "  --pack-after S       an hour's blocks of each sandbox are packed\n"
    "                       into one row S seconds after the hour ends,\n"
    "                       by the merging thread; 0: never\n"
    "                       ($METER_PACK_AFTER; default 600)\n"
    "  --alert-every S      usage alerts are evaluated every S seconds\n"
    "                       by the merging thread; 0: never\n"
    "                       ($METER_ALERT_EVERY; default 30)\n"
    "  --webhook-every S    due webhook deliveries are sent every S\n"
    "                       seconds, in the background; 0: never\n"
    "                       ($METER_WEBHOOK_EVERY; default 1)\n"
    "  --webhook-timeout S  a webhook POST may take S seconds\n"
    "                       ($METER_WEBHOOK_TIMEOUT; default 10)\n"
    "  --webhook-backoff-divisor N\n"
    "                       for tests only: waits between a webhook's\n"
    "                       attempts, and the day it is tried for, are\n"
    "                       divided by N ($METER_WEBHOOK_BACKOFF_DIVISOR;\n"
    "                       default 1)\n"
    "  --tls-cert FILE      serve HTTPS (only) with this PEM certificate,\n"
    "                       or chain, server's first ($METER_TLS_CERT);\n"
    "                       needs --tls-key\n"
    "  --tls-key FILE       the certificate's PEM private key, unencrypted\n"
    "                       ($METER_TLS_KEY); needs --tls-cert\n"
    "  --log-level LEVEL    error, warn, info (one line per request) or\n"
    "                       debug ($METER_LOG_LEVEL; default info)\n"
    "  --log-format FORMAT  text, or json: one object a line, a request's\n"
    "                       with its id, route, status, duration and key\n"
    "                       ($METER_LOG_FORMAT; default text)\n"
    "  --log-file FILE      append the log to FILE, opened again on\n"
    "                       SIGHUP (after logrotate renamed it)\n"
    "                       ($METER_LOG_FILE; default stderr)\n"
    "  --help               this text\n"
    "  --version            print the version\n";

/* The options: each a flag, else its environment variable. */
enum {
    OPT_LISTEN,
    OPT_DB,
    OPT_MAX_BODY,
    OPT_MAX_BUFFERED,
    OPT_THREADS,
    OPT_MAX_CONNECTIONS,
    OPT_MAX_PER_IP,
    OPT_IDLE_TIMEOUT,
    OPT_HEADER_TIMEOUT,
    OPT_BODY_TIMEOUT,
    OPT_DB_TIMEOUT,
    OPT_RATE_LIMIT,
    OPT_MAX_AGE,
    OPT_MAX_BATCH_SANDBOXES,
    OPT_SESSION_TTL,
    OPT_MAX_SESSIONS,
    OPT_SIGN_IN_LIMIT,
    OPT_SIGN_IN_LIMIT_IP,
    OPT_REPORT_TTL,
    OPT_MERGE_EVERY,
    OPT_PACK_AFTER,
    OPT_ALERT_EVERY,
    OPT_WEBHOOK_EVERY,
    OPT_WEBHOOK_TIMEOUT,
    OPT_WEBHOOK_DIVISOR,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_LOG_LEVEL,
    OPT_LOG_FORMAT,
    OPT_LOG_FILE,
    NOPTS
};
static const struct {
    const char *flag, *env;
} option_names[NOPTS] = {
    {"listen", "METER_LISTEN"},
    {"db", "METER_DATABASE_URL"},
    {"max-body", "METER_MAX_BODY"},
    {"max-buffered", "METER_MAX_BUFFERED"},
    {"threads", "METER_THREADS"},
    {"max-connections", "METER_MAX_CONNECTIONS"},
    {"max-per-ip", "METER_MAX_PER_IP"},
    {"idle-timeout", "METER_IDLE_TIMEOUT"},
    {"header-timeout", "METER_HEADER_TIMEOUT"},
    {"body-timeout", "METER_BODY_TIMEOUT"},
    {"db-timeout", "METER_DB_TIMEOUT"},
    {"rate-limit", "METER_RATE_LIMIT"},
    {"max-age", "METER_MAX_AGE"},
    {"max-batch-sandboxes", "METER_MAX_BATCH_SANDBOXES"},
    {"session-ttl", "METER_SESSION_TTL"},
    {"max-sessions", "METER_MAX_SESSIONS"},
    {"sign-in-limit", "METER_SIGN_IN_LIMIT"},
    {"sign-in-limit-ip", "METER_SIGN_IN_LIMIT_IP"},
    {"report-ttl", "METER_REPORT_TTL"},
    {"merge-every", "METER_MERGE_EVERY"},
    {"pack-after", "METER_PACK_AFTER"},
    {"alert-every", "METER_ALERT_EVERY"},
    {"webhook-every", "METER_WEBHOOK_EVERY"},
    {"webhook-timeout", "METER_WEBHOOK_TIMEOUT"},
    {"webhook-backoff-divisor", "METER_WEBHOOK_BACKOFF_DIVISOR"},
    {"tls-cert", "METER_TLS_CERT"},
    {"tls-key", "METER_TLS_KEY"},
    {"log-level", "METER_LOG_LEVEL"},
    {"log-format", "METER_LOG_FORMAT"},
    {"log-file", "METER_LOG_FILE"},
};

struct options {
    const char *v[NOPTS]; /* NULL: unset */
};

/* The options, each from its flag, else its environment variable. */
static int
read_options(int argc, char **argv, struct options *o)
{
    struct option opts[NOPTS + 3];
    for (int i = 0; i < NOPTS; i++) {
        opts[i] = (struct option){option_names[i].flag, required_argument, NULL,
                                  256 + i};
        const char *env = getenv(option_names[i].env);
        o->v[i] = env && *env ? env : NULL;
    }
    opts[NOPTS] = (struct option){"help", no_argument, NULL, 'h'};
    opts[NOPTS + 1] = (struct option){"version", no_argument, NULL, 'V'};
    opts[NOPTS + 2] = (struct option){NULL, 0, NULL, 0};
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (opt >= 256 && opt < 256 + NOPTS) {
            o->v[opt - 256] = optarg;
        } else if (opt == 'h') {
            fputs(usage_text, stdout);
            fputs(usage_more, stdout);
            exit(0);
        } else if (opt == 'V') {
            printf("meterd %s\n", METER_VERSION);
            exit(0);
        } else {
            fprintf(stderr, "meterd: unknown or incomplete option '%s'\n%s%s",
                    argv[optind - 1], usage_text, usage_more);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "meterd: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    return 0;
}

/* ADDR:PORT: an IPv4 address, "localhost" (127.0.0.1) or a bracketed
 * IPv6 address ("[::1]", "[::]"), then the port. */
static int
parse_listen(const char *s, struct sockaddr_storage *ss)
{
    char host[64];
    const char *colon = strrchr(s, ':'), *start = s, *end = colon;
    uint64_t port;
    bool v6 = s[0] == '[';
    if (v6) {
        start = s + 1;
        end = strchr(s, ']');
        if (!end || end[1] != ':')
            return -1;
        colon = end + 1;
    }
    if (!colon || !end || (size_t)(end - start) >= sizeof(host))
        return -1;
    memcpy(host, start, (size_t)(end - start));
    host[end - start] = '\0';
    if (meter_parse_uint(colon + 1, 0, 65535, &port) < 0)
        return -1;
    memset(ss, 0, sizeof(*ss));
    if (v6) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)(void *)ss;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        return inet_pton(AF_INET6, host, &in6->sin6_addr) == 1 ? 0 : -1;
    }
    struct sockaddr_in *in4 = (struct sockaddr_in *)(void *)ss;
    in4->sin_family = AF_INET;
    in4->sin_port = htons((uint16_t)port);
    if (strcmp(host, "localhost") == 0)
        snprintf(host, sizeof(host), "127.0.0.1");
    return inet_pton(AF_INET, host, &in4->sin_addr) == 1 ? 0 : -1;
}

/* The count of option name, value (unset or empty: def): 0, or -1 with
 * a message saying it is not `what`. */
static int
count_option(const char *name, const char *value, uint64_t min, uint64_t max,
             const char *what, uint64_t def, uint64_t *out)
{
    *out = def;
    if (!value || !*value || meter_parse_uint(value, min, max, out) == 0)
        return 0;
    fprintf(stderr, "meterd: --%s '%s' is not %s\n", name, value, what);
    return -1;
}

/* The server's configuration from the options; 2 on a bad value. */
static int
configure(const struct options *o, struct meter_http_config *cfg)
{
    uint64_t body, threads, buffered, conns, per_ip, idle, header_s, body_s,
        db_s, rate, age, ttl, max_sessions, sandboxes;
    const char *listen = o->v[OPT_LISTEN] ? o->v[OPT_LISTEN] : "127.0.0.1:8080";
    if (parse_listen(listen, &cfg->listen) < 0) {
        fprintf(stderr,
                "meterd: --listen '%s' is not IPV4:PORT, [IPV6]:PORT or "
                "localhost:PORT\n",
                listen);
        return 2;
    }
    if (count_option("max-body", o->v[OPT_MAX_BODY], 1, SIZE_MAX,
                     "a number of bytes", 64 << 20, &body) < 0 ||
        count_option("threads", o->v[OPT_THREADS], 1, 250,
                     "a number from 1 to 250", 4, &threads) < 0 ||
        count_option("max-buffered", o->v[OPT_MAX_BUFFERED], 1, SIZE_MAX,
                     "a number of bytes", body * threads, &buffered) < 0 ||
        count_option("max-connections", o->v[OPT_MAX_CONNECTIONS], 1, 1000000,
                     "a number from 1 to 1000000", 4096, &conns) < 0 ||
        count_option("max-per-ip", o->v[OPT_MAX_PER_IP], 1, 1000000,
                     "a number from 1 to 1000000", 256, &per_ip) < 0 ||
        count_option("idle-timeout", o->v[OPT_IDLE_TIMEOUT], 1, 3600,
                     "a number of seconds from 1 to 3600", 30, &idle) < 0 ||
        count_option("header-timeout", o->v[OPT_HEADER_TIMEOUT], 1, 3600,
                     "a number of seconds from 1 to 3600", 30, &header_s) < 0 ||
        count_option("body-timeout", o->v[OPT_BODY_TIMEOUT], 1, 3600,
                     "a number of seconds from 1 to 3600", 120, &body_s) < 0 ||
        count_option("db-timeout", o->v[OPT_DB_TIMEOUT], 1, 3600,
                     "a number of seconds from 1 to 3600", 30, &db_s) < 0 ||
        count_option("max-age", o->v[OPT_MAX_AGE], 1, 36500,
                     "a number of days from 1 to 36500", 400, &age) < 0 ||
        /* A host runs a few hundred to a few thousand sandboxes at once
         * (some more in a batch's window as they come and go); a batch's
         * registrations, locks and memory grow with its sandboxes. At
         * most the samples a batch may hold. */
        count_option("max-batch-sandboxes", o->v[OPT_MAX_BATCH_SANDBOXES], 1,
                     500000, "a number from 1 to 500000", 10000,
                     &sandboxes) < 0 ||
        count_option("session-ttl", o->v[OPT_SESSION_TTL], 1, 31536000,
                     "a number of seconds from 1 to 31536000", 43200,
                     &ttl) < 0 ||
        count_option("max-sessions", o->v[OPT_MAX_SESSIONS], 1, 100000,
                     "a number from 1 to 100000", 20, &max_sessions) < 0)
        return 2;
    /* The counts that may be 0: no limit, nothing kept, never merged,
     * never packed. */
    uint64_t report_ttl, merge_every, pack_after, signin_key, signin_ip,
        hook_every, hook_timeout, hook_divisor, alert_every;
    if (count_option("rate-limit", o->v[OPT_RATE_LIMIT], 0, 1000000,
                     "a number from 0 to 1000000", 1000, &rate) < 0 ||
        count_option("sign-in-limit", o->v[OPT_SIGN_IN_LIMIT], 0, 1000000,
                     "a number from 0 to 1000000", 10, &signin_key) < 0 ||
        count_option("sign-in-limit-ip", o->v[OPT_SIGN_IN_LIMIT_IP], 0, 1000000,
                     "a number from 0 to 1000000", 60, &signin_ip) < 0 ||
        count_option("report-ttl", o->v[OPT_REPORT_TTL], 0, 3600,
                     "a number of seconds from 0 to 3600", 5,
                     &report_ttl) < 0 ||
        count_option("merge-every", o->v[OPT_MERGE_EVERY], 0, 3600,
                     "a number of seconds from 0 to 3600", 5,
                     &merge_every) < 0 ||
        count_option("pack-after", o->v[OPT_PACK_AFTER], 0, 2678400,
                     "a number of seconds from 0 to 2678400", 600,
                     &pack_after) < 0 ||
        count_option("alert-every", o->v[OPT_ALERT_EVERY], 0, 3600,
                     "a number of seconds from 0 to 3600", 30,
                     &alert_every) < 0 ||
        count_option("webhook-every", o->v[OPT_WEBHOOK_EVERY], 0, 3600,
                     "a number of seconds from 0 to 3600", 1,
                     &hook_every) < 0 ||
        count_option("webhook-timeout", o->v[OPT_WEBHOOK_TIMEOUT], 1, 300,
                     "a number of seconds from 1 to 300", 10,
                     &hook_timeout) < 0 ||
        count_option("webhook-backoff-divisor", o->v[OPT_WEBHOOK_DIVISOR], 1,
                     100000, "a number from 1 to 100000", 1, &hook_divisor) < 0)
        return 2;
    meterd.alert_every = (unsigned)alert_every;
    meterd.webhook_every = (unsigned)hook_every;
    meterd.webhook_timeout = (unsigned)hook_timeout;
    meterd.webhook_divisor = (unsigned)hook_divisor;
    meterd_cache_init((unsigned)report_ttl);
    meterd.merge_every = (unsigned)merge_every;
    meterd.pack_after = (unsigned)pack_after;
    meterd.max_age = (int64_t)age * 86400;
    meterd.max_batch_sandboxes = (size_t)sandboxes;
    meterd.session_ttl = (unsigned)ttl;
    meterd.max_sessions = (unsigned)max_sessions;
    cfg->db_timeout_s = (unsigned)db_s;
    cfg->rate_limit = (unsigned)rate;
    cfg->signin_per_key = (unsigned)signin_key;
    cfg->signin_per_address = (unsigned)signin_ip;
    cfg->max_body = (size_t)body;
    cfg->threads = (unsigned)threads;
    cfg->max_buffered = (size_t)buffered;
    cfg->max_connections = (unsigned)conns;
    cfg->max_per_ip = (unsigned)per_ip;
    cfg->idle_timeout_s = (unsigned)idle;
    cfg->body_timeout_s = (unsigned)body_s;
    cfg->header_timeout_s = (unsigned)header_s;
    const char *level_s = o->v[OPT_LOG_LEVEL];
    if (level_s) {
        int level = meter_log_parse_level(level_s);
        if (level < 0) {
            fprintf(stderr,
                    "meterd: --log-level '%s' is not error, warn, "
                    "info or debug\n",
                    level_s);
            return 2;
        }
        meter_log_set_level((enum meter_log_level)level);
    }
    const char *format_s = o->v[OPT_LOG_FORMAT];
    if (format_s) {
        int format = meter_log_parse_format(format_s);
        if (format < 0) {
            fprintf(stderr, "meterd: --log-format '%s' is not json or text\n",
                    format_s);
            return 2;
        }
        meter_log_set_format((enum meter_log_format)format);
    }
    /* One without the other is a mistake, never plain HTTP. */
    if (!o->v[OPT_TLS_CERT] != !o->v[OPT_TLS_KEY]) {
        fprintf(stderr, "meterd: --%s needs --%s\n",
                o->v[OPT_TLS_CERT] ? "tls-cert" : "tls-key",
                o->v[OPT_TLS_CERT] ? "tls-key" : "tls-cert");
        return 2;
    }
    cfg->routes = routes;
    cfg->nroutes = sizeof(routes) / sizeof(routes[0]);
    return 0;
}

/* Checks that the schema is the one this meterd knows (on another,
 * every statement could fail, or worse, mean something else), then
 * creates the usage partitions of this month and the next two. */
static int
prepare_database(const char *conninfo, struct meter_err *e)
{
    PGconn *db = meter_db_connect(conninfo, e);
    if (!db)
        return -1;
    int rc = meterd_schema_check(db, e) == METER_DB_ROWS
                 ? meter_db_prepare_partitions(db, 3, e)
                 : -1;
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
    struct meter_http_tls tls = {0};
    /* Signals are taken by sigwait in this thread only, blocked before
     * any thread starts: a SIGHUP early on must not kill meterd. */
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    signal(SIGPIPE, SIG_IGN);
    int rc = read_options(argc, argv, &o);
    if (rc || (rc = configure(&o, &cfg)))
        return rc;
    rc = 1;
    if (o.v[OPT_LOG_FILE] && meter_log_open(o.v[OPT_LOG_FILE], &e) < 0)
        goto out;
    if (o.v[OPT_DB] && meter_db_check_conninfo(o.v[OPT_DB], &e) < 0) {
        fprintf(stderr, "meterd: %s\n", e.msg);
        return 2;
    }
    /* Read before the database is touched: a bad file stops meterd at
     * once, naming it. */
    if (o.v[OPT_TLS_CERT]) {
        cfg.tls = &tls;
        if (meter_http_tls_load(&tls, o.v[OPT_TLS_CERT], o.v[OPT_TLS_KEY], &e))
            goto out;
    }
    if (meter_db_conninfo(o.v[OPT_DB], &conninfo, &e) < 0 ||
        prepare_database(conninfo, &e) < 0)
        goto out;
    if (!(meterd.shards = meter_shards_new())) {
        meter_fail(&e, "out of memory");
        goto out;
    }
    meterd.db_timeout_ms = (int)(cfg.db_timeout_s + 1) * 1000;
    cfg.conninfo = conninfo;

    if (!(server = meter_http_start(&cfg, &e)) ||
        meterd_merge_start(conninfo, meterd.merge_every, meterd.pack_after,
                           cfg.db_timeout_s, &e) < 0 ||
        meterd_webhooks_start(conninfo, meterd.webhook_every,
                              meterd.webhook_timeout, meterd.webhook_divisor,
                              cfg.db_timeout_s, &e) < 0)
        goto out;
    meter_log(METER_LOG_INFO,
              "meterd listening on %s://%s (%u threads, max body %zu "
              "bytes)",
              cfg.tls ? "https" : "http",
              o.v[OPT_LISTEN] ? o.v[OPT_LISTEN] : "127.0.0.1:8080", cfg.threads,
              cfg.max_body);
    /* SIGHUP: logrotate renamed the log; the next lines go to a new
     * file of its name. */
    int sig;
    while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
        if (meter_log_reopen(&e) < 0)
            meter_log(METER_LOG_ERROR, "SIGHUP: %s", e.msg);
        else
            meter_log(METER_LOG_INFO, "SIGHUP: the log reopened");
    }
    meter_log(METER_LOG_INFO,
              "signal %d: no new connections; finishing requests in flight",
              sig);
    rc = 0;
out:
    if (server)
        meter_http_stop(server);
    meterd_merge_stop();
    meterd_webhooks_stop();
    meterd_samples_stop();
    if (server)
        meter_log(METER_LOG_INFO, "meterd stopped");
    if (rc)
        fprintf(stderr, "meterd: %s\n", e.msg);
    meter_shards_free(meterd.shards);
    meterd_cache_clear();
    meter_http_tls_release(&tls);
    free(conninfo);
    return rc;
}
